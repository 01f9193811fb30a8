"""Direct schedules of depthwise and grouped convolutions (``ops.depthwise``), for the CPU
device and desktop GPUs; MobileNet's 3x3 stride 1 and 2 are the case they are shaped for.

``conv_direct(cfg, shape, dtype="float32", epilogue=())`` takes a ``GroupConvShape`` (depthwise
when ``groups == CI``) and returns ``(schedule, [data, kernel, *epilogue inputs, output])``.
Each work-item computes a ``tile_h x tile_w`` patch of one output channel, accumulated in
registers (the kernel window unrolled, the reduction outside the patch); work-groups are
``threads_h x threads_w`` work-items over (h, w); (n, c) is ``blockIdx.z``. ``vectorize`` turns
the patch's row into a vector (at stride 2, and through the padding test, its loads stay
scalar).
``pad_inline=0`` writes the padded input first (a kernel of its own), so that the convolution's
loads need no bounds test and its rows load as vectors; ``1`` reads the input through the test.

Knobs: ``pad_inline``, ``tile_h``, ``tile_w``, ``threads_h``, ``threads_w``, ``vectorize``,
``tail`` (where the patches do not divide the image: ``"guard"``, the default, tests the
bounds of the last ones; ``"shift"`` moves them inwards, so none needs a test).
``conv_direct_cpu`` is the same schedule with defaults for a CPU device (few work-items, wide
patches, the padded input written first, rows as vectors).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.tensor import Tensor, thread_axis
from ...schedules.schedule import Schedule
from ..depthwise import GroupConvShape, declare
from ..space import Config, split_axis
from .common import bind_2d, reduction_and_epilogue
from .injective import with_epilogue

GPU_DEFAULTS = {
    "pad_inline": 1, "tile_h": 1, "tile_w": 4, "threads_h": 4, "threads_w": 16, "vectorize": 0
}  # fmt: skip
CPU_DEFAULTS = {
    "pad_inline": 0, "tile_h": 2, "tile_w": 8, "threads_h": 1, "threads_w": 4, "vectorize": 1
}  # fmt: skip


def conv_direct(
    cfg: Config,
    shape: GroupConvShape,
    dtype: str = "float32",
    epilogue: Sequence[str] = (),
    defaults: dict[str, int] | None = None,
) -> tuple[Schedule, list[Tensor]]:
    defaults = defaults or GPU_DEFAULTS
    pad_inline = cfg.define_knob("pad_inline", (1, 0), defaults["pad_inline"])
    data, kernel, out = declare(shape, dtype)
    s, O, args = with_epilogue(out, epilogue, [data, kernel], inline_pad=bool(pad_inline))
    schedule_conv_direct(cfg, s, O, defaults)
    return s, args


def conv_direct_cpu(
    cfg: Config, shape: GroupConvShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    # narrow images: a patch of 8 columns would mostly be the guarded tail
    defaults = {**CPU_DEFAULTS, "tile_w": 8 if shape.OW >= 32 else 4}
    return conv_direct(cfg, shape, dtype, epilogue, defaults)


def schedule_conv_direct(cfg: Config, s: Schedule, O: Tensor, defaults: dict[str, int]) -> None:
    """Schedule the convolution (plus elementwise epilogue) producing ``O``."""
    th = cfg.define_knob("tile_h", (1, 2, 4), defaults["tile_h"])
    tw = cfg.define_knob("tile_w", (1, 2, 4, 8), defaults["tile_w"])
    ty = cfg.define_knob("threads_h", (1, 2, 4, 8, 16), defaults["threads_h"])
    tx = cfg.define_knob("threads_w", (1, 2, 4, 8, 16, 32), defaults["threads_w"])
    vec = cfg.define_knob("vectorize", (0, 1), defaults["vectorize"])
    limit = cfg.limits.max_work_group_size
    cfg.constrain(ty * tx <= limit, f"work-group over the device's {limit} work-items")
    cfg.constrain(not vec or tw > 1, "vectorize needs tile_w > 1")
    vec = vec and tw > 1
    # a patch grid that does not divide the image guards its last patches, or shifts them
    # inwards (every patch whole: no per-element test, rows still vectors). Guard stays the
    # default: at the default patches on PoCL the two were even over MobileNet-v1's depthwise
    # layers (1.48 against 1.53 ms), shift won with the narrower work-groups tuning picks
    H, W = (int(x) for x in O.shape[2:])
    ragged = H % (ty * th) != 0 or W % (tx * tw) != 0
    tail = cfg.define_knob("tail", ("guard", "shift"), "guard")
    cfg.constrain(
        tail == "guard" or ragged,
        "the patches divide the image: tail='shift' is the same kernel as 'guard'",
    )

    comp, out = reduction_and_epilogue(s, O)
    n, c, h, w = s[out].op.axis
    z = s[out].fuse(n, c)
    by, tyy, hi = split_axis(s[out], h, (ty, th), tail)
    bx, txx, wi = split_axis(s[out], w, (tx, tw), tail)
    s[out].reorder(z, by, bx, tyy, txx, hi, wi)
    s[out].bind(z, thread_axis("blockIdx.z"))
    bind_2d(s, out, by, bx, tyy, txx)
    s[out].unroll(hi)
    (s[out].vectorize if vec else s[out].unroll)(wi)

    s[comp].compute_at(s[out], txx)
    _, _, ch, cw = s[comp].op.axis
    raxes = list(s[comp].op.reduce_axis)  # (ci,) kh, kw
    s[comp].reorder(*raxes, ch, cw)
    for r in raxes[-2:]:
        s[comp].unroll(r)
    s[comp].unroll(ch)
    (s[comp].vectorize if vec else s[comp].unroll)(cw)
