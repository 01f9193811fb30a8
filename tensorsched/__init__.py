"""tensorsched: a TVM-style tensor compiler that writes OpenCL.

Declare a computation with ``placeholder`` / ``compute``, schedule it with ``create_schedule``
and the stage primitives, read ``lower(...)``, and ``build`` it.
"""

import sys as _sys
import types as _types

from . import (  # ts.graph.build, ts.frontend.from_onnx, ts.nets.resnet18
    frontend,
    graph,
    nets,
    tune,  # noqa: E402  (ts.tune.apply_best, ts.tune.Task ...)
)
from .errors import (
    BuildError,
    CodegenError,
    ComputeError,
    InternalError,
    LoweringError,
    ParseError,
    RuntimeCallError,
    ScheduleError,
    TensorschedError,
)
from .ir.expr import Call as _Call  # ts.tir.Call
from .ir.expr import FloatImm as _FloatImm  # ts.tir.FloatImm ... for isinstance checks
from .ir.expr import IntImm as _IntImm
from .ir.expr import Var as _Var
from .ir.intrin import MORE_UNARY as _MORE_UNARY  # the te / tir namespaces' too
from .ir.intrin import CallEffectKind as _CallEffectKind
from .ir.intrin import (
    Cast,
    abs,
    acos,
    acosh,
    all,
    any,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    call_intrin,
    call_pure_extern,
    ceil,
    clz,
    comm_reducer,
    const,
    copysign,
    cos,
    cosh,
    decl_tensor_intrin,
    erf,
    exp,
    exp2,
    exp10,
    extern,
    fabs,
    floor,
    floordiv,
    floormod,
    fmod,
    hypot,
    if_then_else,
    indexdiv,
    indexmod,
    isfinite,
    isinf,
    isnan,
    ldexp,
    log,
    log1p,
    log2,
    log10,
    max,
    max_value,
    min,
    min_value,
    nearbyint,
    nextafter,
    popcount,
    power,
    round,
    rsqrt,
    shift_left,
    shift_right,
    sigmoid,
    sin,
    sinh,
    sqrt,
    sum,
    tan,
    tanh,
    trunc,
    truncdiv,
    truncmod,
)
from .ir.intrin import create_prim_func as _create_prim_func  # refused, as extern
from .ir.intrin import custom_pass as _custom_pass  # TVM's pass-writing names: refused
from .ir.intrin import gradient as _gradient
from .ir.intrin import hybrid_script as _hybrid_script
from .ir.parser import parse_ir
from .ir.te_text import parse_expr
from .ir.tensor import ComputeOp as _ComputeOp  # ts.te.ComputeOp ... for isinstance checks
from .ir.tensor import IterVar as _IterVar
from .ir.tensor import PlaceholderOp as _PlaceholderOp
from .ir.tensor import ScanOp as _ScanOp
from .ir.tensor import Tensor as _Tensor
from .ir.tensor import (
    compute,
    placeholder,
    reduce_axis,
    scan,
    size_var,
    tag_scope,
    thread_axis,
    var,
)
from .ops.pad import pad
from .runtime import nd, target, testing  # ts.nd.array, ts.target.Target
from .runtime.build import build
from .runtime.tvm_api import cl, cpu, cuda, device, metal, opencl, rocm, vulkan
from .schedules import tvm_schedule as schedule  # ts.schedule.AutoInlineInjective
from .schedules.lower import lower
from .schedules.schedule import create_schedule
from .tune import autotvm  # ts.autotvm: TVM's AutoTVM names over the tuner

__version__ = "0.1.0"

__all__ = [
    "placeholder",
    "compute",
    "reduce_axis",
    "thread_axis",
    "var",
    "size_var",
    "sum",
    "max",
    "min",
    "const",
    "if_then_else",
    "all",
    "any",
    "exp",
    "log",
    "sqrt",
    "tanh",
    "sigmoid",
    "fabs",
    "power",
    "fmod",
    "atan2",
    "indexdiv",
    "indexmod",
    "truncdiv",
    "truncmod",
    "floordiv",
    "floormod",
    "abs",
    "floor",
    "ceil",
    "round",
    "trunc",
    "cos",
    "sin",
    "exp2",
    "exp10",
    "log2",
    "log10",
    "log1p",
    "rsqrt",
    "tan",
    "sinh",
    "cosh",
    "asin",
    "acos",
    "atan",
    "asinh",
    "acosh",
    "atanh",
    "erf",
    "nearbyint",
    "popcount",
    "clz",
    "isnan",
    "isinf",
    "isfinite",
    "hypot",
    "copysign",
    "nextafter",
    "ldexp",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "shift_left",
    "shift_right",
    "Cast",
    "decl_tensor_intrin",
    "extern",
    "te",
    "tir",
    "min_value",
    "max_value",
    "comm_reducer",
    "scan",
    "tag_scope",
    "pad",
    "create_schedule",
    "schedule",
    "lower",
    "build",
    "nd",
    "target",
    "testing",
    "device",
    "cpu",
    "opencl",
    "cl",
    "cuda",
    "rocm",
    "metal",
    "vulkan",
    "parse_ir",
    "parse_expr",
    "tune",
    "autotvm",
    "graph",
    "frontend",
    "nets",
    "TensorschedError",
    "ComputeError",
    "ScheduleError",
    "LoweringError",
    "CodegenError",
    "BuildError",
    "RuntimeCallError",
    "ParseError",
    "InternalError",
]


_MATH = (
    "exp", "log", "sqrt", "tanh", "sigmoid", "fabs", "power", "fmod", "atan2", "abs", "floor",
    "ceil", "round", "trunc", "cos", "sin", "if_then_else", "const", "all", "any", "min_value",
    "max_value", "indexdiv", "indexmod", "truncdiv", "truncmod", "floordiv", "floormod",
    "max", "min",
    *_MORE_UNARY,
)  # fmt: skip
# tvm.te has these too (decl_tensor_intrin and extern refuse with a ComputeError)
_TE_MORE = ("nearbyint", "popcount", "isnan", "isinf", "isfinite")
_TIR_MORE = (
    *_TE_MORE, "hypot", "copysign", "nextafter", "ldexp", "clz", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_not", "shift_left", "shift_right", "Cast",
)  # fmt: skip


def _namespace(name: str, doc: str, names: tuple[str, ...]) -> _types.ModuleType:
    """A module ``tensorsched.<name>`` holding ``names`` of the package: TVM's programs reach
    the same functions through ``tvm.te`` and ``tvm.tir``, so ``ts.te.compute`` and
    ``ts.tir.indexmod`` work after replacing ``tvm.`` by ``ts.``."""
    mod = _types.ModuleType(f"{__name__}.{name}", doc)
    for n in names:
        setattr(mod, n, globals()[n])
    mod.__all__ = list(names)  # type: ignore[attr-defined]
    _sys.modules[mod.__name__] = mod
    return mod


te = _namespace(
    "te",
    "TVM's tensor-expression names (tvm.te), as tensorsched has them.",
    (
        "placeholder", "compute", "var", "size_var", "reduce_axis", "thread_axis", "sum",
        "comm_reducer", "scan", "tag_scope", "create_schedule", "lower", "build", *_MATH,
        *_TE_MORE, "decl_tensor_intrin", "extern",
    ),
)  # fmt: skip
tir = _namespace(
    "tir",
    "TVM's scalar-expression names (tvm.tir), as tensorsched has them; Select is if_then_else.",
    ("var", "size_var", *_MATH, *_TIR_MORE),
)
tir.Select = if_then_else  # type: ignore[attr-defined]
tir.sum = sum  # type: ignore[attr-defined]
tir.comm_reducer = comm_reducer  # type: ignore[attr-defined]
tir.IntImm = _IntImm  # type: ignore[attr-defined]
tir.FloatImm = _FloatImm  # type: ignore[attr-defined]
tir.Var = _Var  # type: ignore[attr-defined]
tir.IterVar = _IterVar  # type: ignore[attr-defined]
te.Tensor = _Tensor  # type: ignore[attr-defined]
te.ComputeOp = _ComputeOp  # type: ignore[attr-defined]
te.PlaceholderOp = _PlaceholderOp  # type: ignore[attr-defined]
te.ScanOp = _ScanOp  # type: ignore[attr-defined]
te.schedule = schedule  # type: ignore[attr-defined]  # tvm.te.schedule.InferBound ...
te.gradient = _gradient  # type: ignore[attr-defined]  # refused: a ComputeError
te.create_prim_func = _create_prim_func  # type: ignore[attr-defined]  # refused
_hybrid = _types.ModuleType(f"{__name__}.te.hybrid", "TVM's te.hybrid: its script is refused.")
_hybrid.script = _hybrid_script  # type: ignore[attr-defined]
te.hybrid = _hybrid  # type: ignore[attr-defined]
tir.call_pure_extern = call_pure_extern  # type: ignore[attr-defined]
tir.call_intrin = call_intrin  # type: ignore[attr-defined]
tir.Call = _Call  # type: ignore[attr-defined]
tir.CallEffectKind = _CallEffectKind  # type: ignore[attr-defined]
_sys.modules[f"{__name__}.autotvm"] = autotvm  # import tensorsched.autotvm, as tvm.autotvm
# low_level_custom_pass.py's names, each refused with what to do instead (a LoweringError)
_stmt_functor = _types.ModuleType(f"{__name__}.tir.stmt_functor", "Refused: custom passes.")
for _n in ("post_order_visit", "ir_transform", "substitute"):
    setattr(_stmt_functor, _n, _custom_pass(f"tir.stmt_functor.{_n}"))
tir.stmt_functor = _stmt_functor  # type: ignore[attr-defined]
_tir_transform = _types.ModuleType(f"{__name__}.tir.transform", "Refused: custom passes.")
_tir_transform.prim_func_pass = _custom_pass("tir.transform.prim_func_pass")  # type: ignore[attr-defined]
tir.transform = _tir_transform  # type: ignore[attr-defined]
transform = _types.ModuleType(f"{__name__}.transform", "Refused: custom passes.")
transform.PassContext = _custom_pass("transform.PassContext")  # type: ignore[attr-defined]
tir.op = _namespace(  # type: ignore[attr-defined]
    "tir.op", "TVM's tvm.tir.op: the scalar functions.", ("var", "size_var", *_MATH, *_TIR_MORE)
)
