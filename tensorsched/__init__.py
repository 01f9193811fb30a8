"""tensorsched: a TVM-style tensor compiler that writes OpenCL.

Declare a computation with ``placeholder`` / ``compute``, schedule it with ``create_schedule``
and the stage primitives, read ``lower(...)``, and ``build`` it.
"""

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
from .ir.intrin import (
    all,
    any,
    comm_reducer,
    const,
    exp,
    fabs,
    if_then_else,
    indexdiv,
    indexmod,
    log,
    max,
    max_value,
    min,
    min_value,
    power,
    sigmoid,
    sqrt,
    sum,
    tanh,
    truncdiv,
    truncmod,
)
from .ir.parser import parse_ir
from .ir.te_text import parse_expr
from .ir.tensor import compute, placeholder, reduce_axis, scan, size_var, thread_axis, var
from .ops.pad import pad
from .runtime import nd, target, testing  # ts.nd.array, ts.target.Target
from .runtime.build import build
from .runtime.tvm_api import cl, cpu, cuda, device, metal, opencl, rocm, vulkan
from .schedules import tvm_schedule as schedule  # ts.schedule.AutoInlineInjective
from .schedules.lower import lower
from .schedules.schedule import create_schedule

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
    "indexdiv",
    "indexmod",
    "truncdiv",
    "truncmod",
    "min_value",
    "max_value",
    "comm_reducer",
    "scan",
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
