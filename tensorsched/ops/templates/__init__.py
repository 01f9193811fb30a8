"""Schedule templates: functions ``template(cfg, *shape, dtype=..., epilogue=...)`` returning
``(schedule, args)``, written with the public schedule API only. Copy one to start your own.

GEMM templates take ``(cfg, M, N, K)``; conv2d templates take ``(cfg, ConvShape)``; templates of
text expressions (kind ``expr``) take ``(cfg, expr_text, shapes)``. The network operators' take
one shape object: ``depthwise_conv2d`` and ``group_conv2d`` a ``GroupConvShape``, ``dense`` a
``DenseShape``, ``pool`` a ``PoolShape``, ``softmax`` a ``SoftmaxShape``, ``conv3d`` a
``Conv3dShape`` (``SHAPES[kind]``).
``args`` is ``[A, B, *epilogue inputs, C]`` (``gemm_vec_dot`` takes B transposed, N x K),
``[data, kernel, *epilogue inputs, output]`` (``[data, weight, ...]`` for dense, ``[data,
*epilogue inputs, output]`` for pooling and softmax).

Epilogues: every template takes ``epilogue=(...)``, names from
``ops.nn.EPILOGUE_KINDS`` applied in order to the operator's output and inlined into the stage
that writes it: ``"bias"`` (a 1-d input along the channels / dense outputs), ``"relu"``,
``"relu6"``, ``"sigmoid"``, ``"add"`` (an input of the output's shape, a residual). Their
inputs come in ``args`` in the chain's order, between the operator's inputs and its output.
``injective.schedule_injective(cfg, s, out)`` schedules any elementwise or injective stage.

Templates are found by name only: ``TEMPLATES[kind][name]`` (``EXPR_TEMPLATES[name]`` for kind
``expr``). A tuning log names a template, never a module, so reading a log imports nothing.
Register your own with ``register_template``, in a module that your program imports::

    @register_template("gemm", "my_gemm")
    def my_gemm(cfg, M, N, K, dtype="float32", epilogue=()): ...

The tuner's worker processes import the module that defines a registered template (its
``__module__``, as this process registered it) before they build or measure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

from ...errors import TensorschedError
from ..conv2d import ConvShape
from ..conv3d import Conv3dShape
from ..dense import DenseShape
from ..depthwise import GroupConvShape
from ..nn import SoftmaxShape
from ..pool import PoolShape
from ..space import Config
from .conv2d import conv2d_gemm_cpu, conv2d_im2col, conv2d_implicit_gemm, conv2d_spatial_pack
from .conv3d import conv3d_direct, conv3d_gemm_cpu, conv3d_implicit_gemm, gemm_extents
from .dense import dense_cpu, dense_gemm_cpu, dense_gemm_gpu, dense_gpu
from .depthwise import conv_direct, conv_direct_cpu
from .gemm_cpu import gemm_cpu
from .gemm_gpu import gemm_gpu_tiled
from .gemm_mobile import gemm_adreno, gemm_block2x2, gemm_vec_dot
from .generic import generic
from .injective import schedule_injective
from .nhwc import conv2d_gemm_nhwc, conv2d_gemm_to_nhwc, depthwise_nhwc
from .pool import pool_cpu, pool_direct, softmax_rows, softmax_rows_gpu

Template = Callable[..., Any]

TEMPLATES: dict[str, dict[str, Template]] = {
    "gemm": {
        "gpu_tiled": gemm_gpu_tiled,  # desktop GPU: __local tiles + register tiles
        "cpu": gemm_cpu,  # CPU OpenCL device: big register tiles, wide vectors
        "vec_dot": gemm_vec_dot,  # seed 000 "just vectorize" (B transposed)
        "block2x2": gemm_block2x2,  # seed 000/002 2x2 blocking; layout knob: Morton packing
        "adreno": gemm_adreno,  # seed 004: B as image2d_t, 8x4 float4 micro-tiles
    },
    "conv2d": {
        "spatial_pack": conv2d_spatial_pack,  # seed 003 (+ register accumulation knob)
        "im2col": conv2d_im2col,  # the GEMM method, GEMM by the CPU template
        "im2col_gpu": partial(conv2d_im2col, gemm="gpu"),  # ... by the GPU template
        "implicit_gemm": conv2d_implicit_gemm,  # desktop GPU: one kernel, tiles from the image
        "gemm_cpu": conv2d_gemm_cpu,  # CPU: the CPU GEMM over (CO, pixels), NCHW out
        "gemm_nhwc": conv2d_gemm_nhwc,  # CPU, channels-last: the CPU GEMM over (pixels, CO)
        "gemm_to_nhwc": conv2d_gemm_to_nhwc,  # the same from NCHW data (a first conv)
    },
    "conv3d": {
        "implicit_gemm": conv3d_implicit_gemm,  # desktop GPU: gpu_tiled, tiles from the volume
        "gemm_cpu": conv3d_gemm_cpu,  # CPU: the CPU GEMM over (CO, positions), NCDHW out
        "direct": conv3d_direct,  # register tiles of outputs; any groups (depthwise too)
    },
    "depthwise_conv2d": {
        "direct": conv_direct,  # register patches, work-groups over (h, w); GPU defaults
        "cpu": conv_direct_cpu,  # the same, CPU defaults: padded input first, vector rows
        "nhwc": depthwise_nhwc,  # CPU, channels-last: channel vectors, padding read inline
    },
    "group_conv2d": {"direct": conv_direct, "cpu": conv_direct_cpu},
    "dense": {
        "cpu": dense_cpu,  # vectors of partial sums along K
        "gpu": dense_gpu,  # split-K: coalesced partial sums, then their total
        "gemm_gpu": dense_gemm_gpu,  # many rows: gemm_gpu's schedule, the weight transposed
        "gemm_cpu": dense_gemm_cpu,  # ... gemm_cpu's
    },
    "pool": {
        "direct": pool_direct,  # max / average / global average; consecutive outputs per group
        "cpu": pool_cpu,  # the same, a row of outputs per work-item by default
    },
    "softmax": {
        "rows": softmax_rows,  # one work-item per row, or a work-group, or three kernels
        "rows_gpu": softmax_rows_gpu,  # the same, a work-group per row by default
    },
}
EXPR_TEMPLATES: dict[str, Template] = {"generic": generic}  # kind "expr": text expressions
# kind "autotvm": TVM AutoTVM templates (``ts.autotvm.template``), ``template(cfg, *args)``
AUTOTVM_TEMPLATES: dict[str, Template] = {}
KINDS = (
    "gemm", "conv2d", "expr", "depthwise_conv2d", "group_conv2d", "dense", "pool", "softmax",
    "conv3d", "autotvm",
)  # fmt: skip
SHAPES: dict[str, type] = {  # the shape object a network operator's templates take
    "depthwise_conv2d": GroupConvShape,
    "group_conv2d": GroupConvShape,
    "dense": DenseShape,
    "pool": PoolShape,
    "softmax": SoftmaxShape,
    "conv3d": Conv3dShape,  # its 22 fields: never confused with conv2d's 9 or 10 ints
}


def _conv_gemm(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(output channels, output pixels, CI*KH*KW) of a conv2d task's shape."""
    c = ConvShape(*shape)
    return c.CO, c.N * c.OH * c.OW, c.CI * c.KH * c.KW


def _conv3d_gemm(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(output channels, output positions, CI*KD*KH*KW) of a conv3d task's shape."""
    return gemm_extents(Conv3dShape(*shape))


def _dense_gemm(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """(rows, outputs, inputs) of a dense task's shape: its GEMM's M, N, K."""
    return shape[0], shape[1], shape[2]


def _im2col_gemm(shape: tuple[int, ...]) -> tuple[int, int, int]:
    co, pixels, k = _conv_gemm(shape)
    return pixels, co, k


# templates that schedule a GEMM with a GEMM template's knobs: (kind, name) -> the GEMM
# template and the (M, N, K) of a task's shape. Their trials teach each other (the tuner's
# model and its predictions treat them as one family, at the GEMM's extents).
GEMM_VIEWS: dict[tuple[str, str], tuple[str, Callable[[tuple[int, ...]], tuple[int, int, int]]]] = {
    ("conv2d", "gemm_cpu"): ("cpu", _conv_gemm),
    ("conv2d", "implicit_gemm"): ("gpu_tiled", _conv_gemm),
    ("conv2d", "im2col"): ("cpu", _im2col_gemm),
    ("conv2d", "im2col_gpu"): ("gpu_tiled", _im2col_gemm),
    ("conv2d", "gemm_nhwc"): ("cpu", _im2col_gemm),
    ("conv2d", "gemm_to_nhwc"): ("cpu", _im2col_gemm),
    ("conv3d", "implicit_gemm"): ("gpu_tiled", _conv3d_gemm),
    ("dense", "gemm_gpu"): ("gpu_tiled", _dense_gemm),
    ("dense", "gemm_cpu"): ("cpu", _dense_gemm),
    ("conv3d", "gemm_cpu"): ("cpu", _conv3d_gemm),
}


# a template whose kernel is another template's: a conv3d's GEMM is the conv2d one's at a
# longer patch (the same operands' loads, from the image, inlined or as a patch matrix, the
# same knobs, the same output stage), and a dense layer's GEMM template runs the GEMM
# template on the weight transposed once (the same loads exactly). The tuner's untuned
# predictions take the other's records as the template's own, at any shape (another
# template's of the family only within ``model.NEAR_VIEW``): without them, 8 of r3d_18's 10
# conv3d layers were nearer no logged H200 shape than that and fell back to the defaults, as
# did the 128-row dense layers of the text transformers (34 us at the defaults' 128 x 128
# tiles, 8 work-groups, where 16 and 32 rows took 14-16 us with a predicted config).
TWINS: dict[tuple[str, str], tuple[str, str]] = {
    ("conv3d", "implicit_gemm"): ("conv2d", "implicit_gemm"),
    ("conv3d", "gemm_cpu"): ("conv2d", "gemm_cpu"),
    ("dense", "gemm_gpu"): ("gemm", "gpu_tiled"),
    ("dense", "gemm_cpu"): ("gemm", "cpu"),
}


def layouts_of(kind: str, name: str) -> tuple[str, str]:
    """``(data layout, output layout)`` of template ``name`` of ``kind``: ``"NHWC"`` where a
    channels-last template says so (its ``layout`` attribute: one layout for both, or a
    pair), else ``"NCHW"`` (a GEMM's operands are matrices; this names an image
    operator's)."""
    layout = getattr(templates_of(kind).get(name), "layout", "NCHW")
    return (layout, layout) if isinstance(layout, str) else (layout[0], layout[1])


def gemm_view(kind: str, name: str, shape: tuple[int, ...]) -> tuple[str, tuple[int, ...]] | None:
    """``(gemm template, (M, N, K))`` when template ``name`` of ``kind`` is a GEMM scheduled
    with that GEMM template's knobs, else ``None``."""
    if kind == "gemm":
        return name, tuple(shape)
    view = GEMM_VIEWS.get((kind, name))
    return None if view is None else (view[0], view[1](tuple(shape)))


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
_AUTOTVM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{0,127}")  # TVM's "tutorial/matmul"
_BUILTIN = {(k, n) for k in TEMPLATES for n in TEMPLATES[k]} | {("expr", "generic")}
_USER: dict[tuple[str, str], str] = {}  # (kind, name) of a user's template -> its module
# (kind, name) of a template that workers get by value -> what makes its pickled registration
_BY_VALUE: dict[tuple[str, str], Callable[[], bytes]] = {}


class TemplateError(TensorschedError):
    """A template registered under a bad kind or name, or under a name already taken."""


def templates_of(kind: str) -> dict[str, Template]:
    """The registered templates of ``kind`` (one of ``KINDS``), by name."""
    if kind == "expr":
        return EXPR_TEMPLATES
    if kind == "autotvm":
        return AUTOTVM_TEMPLATES
    if kind not in TEMPLATES:
        raise TemplateError(f"unknown operator '{kind}'; use one of {', '.join(KINDS)}")
    return TEMPLATES[kind]


def _module_of(fn: Template) -> str:
    while isinstance(fn, partial):
        fn = fn.func
    return getattr(fn, "__module__", None) or "__main__"


def _same(a: Template, b: Template) -> bool:
    """The same function, perhaps from a second import of its module (``__main__`` run again
    as ``__mp_main__`` in a spawned worker)."""
    if a is b:
        return True
    main = ("__main__", "__mp_main__")
    ma, mb = _module_of(a), _module_of(b)
    return (ma == mb or (ma in main and mb in main)) and getattr(a, "__qualname__", a) == getattr(
        b, "__qualname__", b
    )


def register_template(
    kind: str,
    name: str,
    fn: Template | None = None,
    by_value: Callable[[], bytes] | None = None,
) -> Any:
    """Register ``fn`` as template ``name`` of ``kind`` (``gemm``, ``conv2d`` or ``expr``);
    without ``fn``, a decorator. A task, a log record and ``tensorsched tune --template`` name
    it by ``name``. Registering another function under a name already taken (a built-in
    template's included) raises ``TemplateError``. Returns ``fn``.

    ``by_value``: for a template defined in the main script that the tuner's workers must not
    run again (``ts.autotvm``), a function giving its registration pickled, which the workers
    unpickle and call instead of importing a module (``template_payload``)."""
    if fn is None:
        return partial(register_template, kind, name, by_value=by_value)
    table = templates_of(kind)
    pattern = _AUTOTVM_NAME if kind == "autotvm" else _NAME
    if not isinstance(name, str) or not pattern.fullmatch(name):
        slash = ", '/'" if kind == "autotvm" else ""
        raise TemplateError(
            f"template name {name!r}: use 1 to {64 if not slash else 128} letters, digits, "
            f"'_', '.'{slash} or '-', starting with a letter or '_' (a name, not a module path)"
        )
    if not callable(fn):
        raise TemplateError(f"template '{name}': {fn!r} is not a function")
    if name in table and ((kind, name) in _BUILTIN or not _same(table[name], fn)):
        raise TemplateError(
            f"a {kind} template named '{name}' is already registered "
            f"({_module_of(table[name])}); choose another name"
        )
    table[name] = fn
    _USER[(kind, name)] = _module_of(fn)
    if by_value is not None:
        _BY_VALUE[(kind, name)] = by_value
    return fn


def template_payload(kind: str, name: str) -> bytes | None:
    """The pickled registration of template ``name`` of ``kind`` for the tuner's workers,
    where it was registered ``by_value``, else ``None``. Made now, so that it holds what the
    template's globals are by now."""
    make = _BY_VALUE.get((kind, name))
    return make() if make is not None else None


def template_module(kind: str, name: str) -> str | None:
    """The module a worker process imports to find template ``name`` of ``kind``: the module
    of the function this process registered, or ``None`` for a built-in template (and for one
    defined in the main script, which a spawned worker runs again by itself)."""
    module = _USER.get((kind, name))
    if module is None or module in ("__main__", "__mp_main__"):
        return None
    return module


def space(template: Template, *args: Any, **kwargs: Any) -> Config:
    """The knob space of ``template`` for these shape arguments (a ``Config`` with no values)."""
    cfg = Config()
    template(cfg, *args, **kwargs)
    return cfg


__all__ = [
    "TEMPLATES",
    "EXPR_TEMPLATES",
    "KINDS",
    "TemplateError",
    "register_template",
    "templates_of",
    "template_module",
    "space",
    "GEMM_VIEWS",
    "TWINS",
    "gemm_view",
    "gemm_gpu_tiled",
    "gemm_cpu",
    "gemm_vec_dot",
    "gemm_block2x2",
    "gemm_adreno",
    "conv2d_spatial_pack",
    "conv2d_im2col",
    "conv2d_implicit_gemm",
    "conv2d_gemm_cpu",
    "conv2d_gemm_nhwc",
    "conv2d_gemm_to_nhwc",
    "conv3d_implicit_gemm",
    "conv3d_gemm_cpu",
    "conv3d_direct",
    "depthwise_nhwc",
    "layouts_of",
    "generic",
    "SHAPES",
    "conv_direct",
    "conv_direct_cpu",
    "dense_cpu",
    "dense_gpu",
    "pool_direct",
    "pool_cpu",
    "softmax_rows",
    "softmax_rows_gpu",
    "schedule_injective",
]
