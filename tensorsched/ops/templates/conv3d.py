"""Direct schedules of 3-d convolution (``ops.conv3d``) and 3-d pooling (``ops.pool.pool3d``)
on the OpenCL targets.

``conv3d_direct(cfg, shape, dtype, epilogue)`` takes a ``Conv3dShape`` and returns
``(schedule, [data, kernel, *epilogue inputs, output])``. Each work-item computes a register
tile of ``tile_co`` output channels by ``tile_w`` consecutive output columns of one (n, d, h)
row: the reduction over (ci, kd, kh, kw) runs around the tile, so each input element loaded is
used ``tile_co`` times and each weight ``tile_w`` times (the kernel row ``kw`` unrolled when it
is short). The tiles are fused into one axis spread over work-groups of ``threads``
work-items, consecutive work-items on consecutive tiles of a row. The padded input is read
inline (bounds tests, no extra kernel); the epilogue (bias, ReLU, ...) is applied in the
kernel. Tiles the output does not divide are guarded. Knobs: ``tile_co`` (1, 2, 4),
``tile_w`` (1, 2, 4, 8), ``threads``.

``pool3d_direct(cfg, shape, dtype, epilogue)`` takes a ``Pool3dShape``: consecutive outputs on
consecutive work-items (``per_item`` each), the window in registers (unrolled up to 27
elements). Knobs: ``threads``, ``per_item``.

Why direct and not a GEMM view: a 3-d convolution's patch matrix is ``KD`` times larger than a
2-d one's, and the GEMM templates' operands are 2-d views that would need a 5-d index
decomposition per element; the direct form needs no extra buffer, handles groups (depthwise
included) and dilations with the same loop, and keeps the reduction in registers.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.tensor import Tensor
from ...schedules.schedule import Schedule
from ..conv3d import Conv3dShape, declare
from ..pool import Pool3dShape, declare3d
from ..space import Config
from .common import bind_1d, reduction_and_epilogue
from .injective import THREADS, with_epilogue

CONV3D_DEFAULTS = {"tile_co": 4, "tile_w": 4, "threads": 64}
POOL3D_DEFAULTS = {"threads": 64, "per_item": 1}
MAX_UNROLL = 27  # window elements written out


def conv3d_direct(
    cfg: Config, shape: Conv3dShape, dtype: str = "float32", epilogue: Sequence[str] = (),
    defaults: dict[str, int] | None = None,
) -> tuple[Schedule, list[Tensor]]:  # fmt: skip
    defaults = dict(defaults or CONV3D_DEFAULTS)
    OW = shape.out_dhw[2]
    cog = shape.CO // shape.groups
    # a tile of channels within a group (its input channels shared), of columns within a row
    defaults["tile_co"] = max(t for t in (1, 2, 4) if t <= defaults["tile_co"] and cog % t == 0)
    defaults["tile_w"] = max(t for t in (1, 2, 4, 8) if t <= max(1, min(defaults["tile_w"], OW)))
    tile_co = cfg.define_knob("tile_co", (1, 2, 4), defaults["tile_co"])
    tile_w = cfg.define_knob("tile_w", (1, 2, 4, 8), defaults["tile_w"])
    threads = cfg.define_knob("threads", THREADS, defaults["threads"])
    limit = cfg.limits.max_work_group_size
    cfg.constrain(threads <= limit, f"work-group over the device's {limit} work-items")
    data, kernel, out = declare(shape, dtype)
    s, O, args = with_epilogue(out, epilogue, [data, kernel])
    comp, o = reduction_and_epilogue(s, O)
    n, co, d, h, w = s[o].op.axis
    coo, coi = s[o].split(co, tile_co)
    wo, wi = s[o].split(w, tile_w)
    s[o].reorder(n, coo, d, h, wo, coi, wi)
    f = s[o].fuse(n, coo, d, h, wo)
    _, tx = bind_1d(s, o, f, threads)
    s[o].unroll(coi)
    s[o].unroll(wi)
    s[comp].compute_at(s[o], tx)
    _, cco, _, _, cw = s[comp].op.axis
    raxes = list(s[comp].op.reduce_axis)  # ci, kd, kh, kw
    s[comp].reorder(*raxes, cco, cw)
    if shape.KW <= 7:
        s[comp].unroll(raxes[-1])
    s[comp].unroll(cco)
    s[comp].unroll(cw)
    return s, args


def pool3d_direct(
    cfg: Config, shape: Pool3dShape, dtype: str = "float32", epilogue: Sequence[str] = (),
) -> tuple[Schedule, list[Tensor]]:  # fmt: skip
    threads = cfg.define_knob("threads", THREADS, POOL3D_DEFAULTS["threads"])
    per_item = cfg.define_knob("per_item", (1, 2, 4), POOL3D_DEFAULTS["per_item"])
    limit = cfg.limits.max_work_group_size
    cfg.constrain(threads <= limit, f"work-group over the device's {limit} work-items")
    data, out = declare3d(shape, dtype)
    s, O, args = with_epilogue(out, epilogue, [data])
    comp, o = reduction_and_epilogue(s, O)
    f = s[o].fuse(*s[o].op.axis)
    fo, inner = s[o].split(f, per_item)
    bind_1d(s, o, fo, threads)
    s[o].unroll(inner)
    s[comp].compute_at(s[o], inner)
    if shape.KD * shape.KH * shape.KW <= MAX_UNROLL:
        for r in s[comp].op.reduce_axis:
            s[comp].unroll(r)
    return s, args
