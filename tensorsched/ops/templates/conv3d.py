"""Schedules of 3-d convolution (``ops.conv3d``) and 3-d pooling (``ops.pool.pool3d``)
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

``conv3d_implicit_gemm`` (desktop GPU) and ``conv3d_gemm_cpu`` (CPU devices) schedule the
ungrouped convolution as a GEMM (``ops.conv3d.conv3d_ncdhw_implicit_gemm``: CO x
N*OD*OH*OW over CI*KD*KH*KW) with the GEMM templates' schedules and knobs, as
``templates.conv2d``'s ``conv2d_implicit_gemm`` and ``conv2d_gemm_cpu`` do for 2-d: on the
GPU, one kernel whose ``__local`` tiles are filled straight from the kernel and the padded
input; on a CPU device, the kernel read in its own memory order and the patch matrix
(``data_col``) written by a kernel of its own first (the image itself where a 1x1x1 stride-1
conv of one image reads it as the matrix), so that the GEMM's vector loads stay contiguous.
Both write the NCDHW output (with the epilogue) from the GEMM's work-items. A grouped 3-d
convolution (depthwise included) stays on the direct form, which handles groups in one loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.tensor import IterVar, Tensor
from ...schedules.schedule import Schedule
from ..conv3d import Conv3dShape, conv3d_ncdhw_implicit_gemm, declare
from ..pool import Pool3dShape, declare3d
from ..space import Config
from .common import bind_1d, reduction_and_epilogue
from .conv2d import bind_image_rows, declare_conv
from .gemm_cpu import schedule_gemm_cpu
from .gemm_gpu import schedule_gemm_gpu
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


def gemm_extents(shape: Conv3dShape) -> tuple[int, int, int]:
    """The GEMM of the implicit-GEMM form: (output channels, output positions of the batch,
    CI*KD*KH*KW)."""
    od, oh, ow = shape.out_dhw
    return shape.CO, shape.N * od * oh * ow, shape.CI * shape.KD * shape.KH * shape.KW


def _positions(s: Schedule, O: Tensor, shape: Conv3dShape) -> tuple[IterVar, IterVar]:
    """``(positions, co)`` of the NCDHW output stage ``O``: the GEMM's columns (n, od, oh,
    ow) fused, and its rows. For one image the batch loop (of one) stays outside, so that no
    batch index enters the positions' bounds (as ``conv2d._pixels``)."""
    n, co, od, oh, ow = s[O].op.axis
    if shape.N == 1:
        return s[O].fuse(od, oh, ow), co
    s[O].reorder(co, n, od, oh, ow)
    return s[O].fuse(n, od, oh, ow), co


def conv3d_implicit_gemm(
    cfg: Config, shape: Conv3dShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    """Implicit GEMM: the GPU GEMM schedule (``gemm_gpu``'s knobs) on ``conv_gemm``, both
    operands inlined into its tile loads, the output's (n, od, oh, ow) fused as its N."""
    s, st, O, args = declare_conv(conv3d_ncdhw_implicit_gemm, epilogue, shape, dtype)
    positions, co = _positions(s, O, shape)
    M, N, K = gemm_extents(shape)
    schedule_gemm_gpu(cfg, s, O, st["kernel_mat"], st["data_col"], M, N, K, axes=(co, positions))
    s[st["kernel_mat"]].compute_inline()
    s[st["data_col"]].compute_inline()
    return s, args


def conv3d_gemm_cpu(
    cfg: Config, shape: Conv3dShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    """The CPU GEMM schedule (``gemm_cpu``'s knobs) on ``conv_gemm``, the kernel read in its
    own memory order; the patch matrix a kernel of its own (a work-group per row of it, a
    work-item per output row), or the image itself for a 1x1x1 stride-1 unpadded conv of one
    image."""
    s, st, O, args = declare_conv(conv3d_ncdhw_implicit_gemm, epilogue, shape, dtype)
    positions, co = _positions(s, O, shape)
    M, N, K = gemm_extents(shape)
    schedule_gemm_cpu(cfg, s, O, M, N, K, (co, positions))
    s[st["kernel_mat"]].compute_inline()
    col = st["data_col"]
    direct = shape.kernel == (1, 1, 1) and shape.strides == (1, 1, 1) and not any(shape.pads)
    if direct and shape.N == 1:
        s[col].compute_inline()
        return s, args
    k, q = s[col].op.axis
    bind_image_rows(s, col, k, q, shape.out_dhw[2])
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
