"""conv2d templates: seed 003's spatially packed schedule, and the GEMM method.

``conv2d_spatial_pack`` knobs: ``VH``, ``VW``, ``VC`` (the packing tiles), ``num_thread``,
``unroll`` and ``vectorize`` (the tutorial's kernel 1 / 2 / 3 choices), and ``accumulate``:
``"global"`` is the tutorial's schedule, accumulating in the packed ``conv`` buffer;
``"local"`` accumulates each work-item's VH x VW x VC tile in registers
(``cache_write(conv, "local")``) and writes it once.

``conv2d_im2col`` is the GEMM method: ``data_col`` and ``kernel_mat`` kernels, then a GEMM
scheduled by the CPU or GPU GEMM template (``gemm="cpu"`` or ``"gpu"``), then the NCHW output.

``conv2d_gemm_cpu`` (CPU devices) is the same product scheduled by the CPU GEMM template (its
knobs) over (output channel, output pixel), written straight to the NCHW output: a 1x1 stride-1
conv reads the image itself as the GEMM's right operand (its pixels are its columns); any other
conv first writes a kernel of its own so that the GEMM's vector loads stay contiguous: for one
image, its rows as ``conv2d_nchw_row_gemm`` declares them (KW x min(stride, KH) shifted copies,
the kernel row an offset into them); for a batch, the patch matrix (``data_col``, CI*KH*KW x
N*OH*OW).

``conv2d_implicit_gemm`` (desktop GPU) is one kernel: the GEMM of the GPU GEMM template (its
knobs) over (output channel, output pixel), whose ``__local`` tiles are filled straight from
the kernel and the padded image, and whose work-items write the NCHW output.

Every one of them takes a dilated ``ConvShape`` (``dilation`` > 1): only the declarations' index
arithmetic changes (``ops.conv2d``), never a knob.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...ir.tensor import IterVar, Tensor, thread_axis
from ...schedules.schedule import Schedule, create_schedule
from ..conv2d import (
    ConvShape,
    conv2d_nchw_im2col,
    conv2d_nchw_implicit_gemm,
    conv2d_nchw_row_gemm,
    conv2d_nchw_spatial_pack,
    stages_by_name,
)
from ..nn import epilogue as make_epilogue
from ..space import Config
from .common import bind_1d, bind_2d, inline_epilogue
from .gemm_cpu import schedule_gemm_cpu
from .gemm_gpu import schedule_gemm_gpu


def _tile_and_bind3d(
    s: Schedule,
    t: Tensor,
    z: IterVar,
    y: IterVar,
    x: IterVar,
    z_factor: int,
    y_factor: int = 1,
    x_factor: int = 1,
) -> IterVar:
    zo, zi = s[t].split(z, z_factor)
    yo, yi = s[t].split(y, y_factor)
    xo, xi = s[t].split(x, x_factor)
    s[t].bind(zo, thread_axis("blockIdx.z"))
    s[t].bind(zi, thread_axis("threadIdx.z"))
    s[t].bind(yo, thread_axis("blockIdx.y"))
    s[t].bind(yi, thread_axis("threadIdx.y"))
    s[t].bind(xo, thread_axis("blockIdx.x"))
    s[t].bind(xi, thread_axis("threadIdx.x"))
    return xi


def declare_conv(
    declaration: Callable[..., tuple[Tensor, Tensor, Tensor]], epilogue: Sequence[str], *args: Any
) -> tuple[Schedule, dict[str, Tensor], Tensor, list[Tensor]]:
    """``(schedule, stages by name, output stage O, [data, kernel, *epilogue inputs, O])`` of a
    conv declaration (2-d or 3-d) with its epilogue: the padding is inlined, and so is the
    NCHW (NCDHW) output stage when an epilogue follows it."""
    data, kernel, output = declaration(*args)
    O, extra = make_epilogue(output, epilogue, bias_axis=1)
    s = create_schedule(O.op)
    st = stages_by_name(output)
    s[st["data_pad"]].compute_inline()
    if O is not output:
        s[output].compute_inline()
    return s, st, O, [data, kernel] + extra + [O]


def _pixels(s: Schedule, O: Tensor, shape: ConvShape) -> tuple[IterVar, IterVar]:
    """``(pixels, co)`` of the NCHW output stage ``O``: the GEMM's columns (n, oh, ow) fused,
    and its rows. For batch 1 the batch loop (of one) stays outside, so that no batch index
    enters the pixels' bounds: with it, a residual input read at ``[n, co, oh, ow]`` made bound
    inference cover whole images (a 418 KB ``__local`` tile at 56x56x64)."""
    n, co, oh, ow = s[O].op.axis
    if shape.N == 1:
        return s[O].fuse(oh, ow), co
    s[O].reorder(co, n, oh, ow)
    return s[O].fuse(s[O].fuse(n, oh), ow), co


def conv2d_spatial_pack(
    cfg: Config, shape: ConvShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    VH = cfg.define_knob("VH", (1, 2))
    VW = cfg.define_knob("VW", (4, 2, 8))
    VC = cfg.define_knob("VC", (4, 8, 2))
    num_thread = cfg.define_knob("num_thread", (8, 4, 16))
    unroll = cfg.define_knob("unroll", (1, 0))
    vectorize = cfg.define_knob("vectorize", (1, 0))
    accumulate = cfg.define_knob("accumulate", ("local", "global"))
    s, st, O, args = declare_conv(conv2d_nchw_spatial_pack, epilogue, shape, VH, VW, VC, dtype)
    data_vec, kernel_vec, conv = st["data_vec"], st["kernel_vec"], st["conv"]
    if epilogue:
        inline_epilogue(s, O)

    # the batch axis joins the outermost bound axis of each stage (the seed has batch 1)
    n, h, w, ci, vh, vw = s[data_vec].op.axis
    _tile_and_bind3d(s, data_vec, s[data_vec].fuse(n, h), w, ci, 1)
    if unroll:
        s[data_vec].unroll(vw)
    co, ci, kh, kw, vc = s[kernel_vec].op.axis
    bind_2d(s, kernel_vec, *s[kernel_vec].tile(co, ci, 1, 1))
    if unroll:
        s[kernel_vec].unroll(kh)
        s[kernel_vec].unroll(kw)
    if vectorize:
        s[kernel_vec].vectorize(vc)
    elif unroll:
        s[kernel_vec].unroll(vc)

    acc = s.cache_write(conv, "local") if accumulate == "local" else conv
    n, c, h, w, vh, vw, vc = s[conv].op.axis
    if acc is conv:
        kc, kh, kw = s[conv].op.reduce_axis
        s[conv].reorder(n, c, h, w, vh, kc, kh, kw, vw, vc)
    if shape.N > 1:
        s[conv].reorder(c, n, h)
        h = s[conv].fuse(n, h)
    tx = _tile_and_bind3d(s, conv, c, h, w, num_thread, 1, 1)
    if acc is not conv:
        if vectorize:
            s[conv].vectorize(vc)
        s[acc].compute_at(s[conv], tx)
        _, c, h, w, vh, vw, vc = s[acc].op.axis
        kc, kh, kw = s[acc].op.reduce_axis
        s[acc].reorder(kc, kh, kw, vh, vw, vc)
        vh_loop = vh
    else:
        vh_loop = None
    target = acc
    if unroll:
        s[target].unroll(kh)
        s[target].unroll(kw)
        s[target].unroll(vw)
        if vh_loop is not None:
            s[target].unroll(vh_loop)
    if vectorize:
        s[target].vectorize(vc)
    elif unroll:
        s[target].unroll(vc)

    n, co, oh, ow = s[O].op.axis
    if shape.N > 1:
        s[O].reorder(co, n, oh)
        oh = s[O].fuse(n, oh)
    _tile_and_bind3d(s, O, co, oh, ow, num_thread, 1, 1)
    return s, args


def conv2d_im2col(
    cfg: Config,
    shape: ConvShape,
    dtype: str = "float32",
    epilogue: Sequence[str] = (),
    gemm: str = "cpu",
) -> tuple[Schedule, list[Tensor]]:
    """The GEMM method; ``gemm`` picks the GEMM template ("cpu" or "gpu") whose knobs it has."""
    s, st, O, args = declare_conv(conv2d_nchw_im2col, epilogue, shape, dtype)
    if epilogue:
        inline_epilogue(s, O)
    for name in ("data_col", "kernel_mat"):
        t = st[name]
        bind_1d(s, t, s[t].fuse(*s[t].op.axis), 64)
    M, K = st["data_col"].shape
    N = st["kernel_mat"].shape[1]
    gemm_out = st["conv_gemm"]
    if gemm == "gpu":
        schedule_gemm_gpu(cfg, s, gemm_out, st["data_col"], st["kernel_mat"], M, N, K)
    else:
        schedule_gemm_cpu(cfg, s, gemm_out, M, N, K)
    n, co, oh, ow = s[O].op.axis
    f = s[O].fuse(n, co, oh)
    s[O].bind(f, thread_axis("blockIdx.x"))
    wo, wi = s[O].split(ow, 64)
    s[O].reorder(wi, wo)
    s[O].bind(wi, thread_axis("threadIdx.x"))
    return s, args


def conv2d_gemm_cpu(
    cfg: Config, shape: ConvShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    """The CPU GEMM schedule on ``conv_gemm`` (CO x N*OH*OW), the kernel read in its own
    memory order. A 1x1 stride-1 conv of batch 1 reads the image itself; any other conv of
    batch 1 reads the image rows of ``conv2d_nchw_row_gemm`` (a kernel of their own); a batch
    of several images reads the materialised patch matrix."""
    P = shape.N * shape.OH * shape.OW
    direct = shape.KH == shape.KW == 1 and shape.stride == 1 and shape.pad == 0
    if shape.N == 1 and not direct:
        s, st, O, args = declare_conv(conv2d_nchw_row_gemm, epilogue, shape, dtype)
        pixels, co = _pixels(s, O, shape)
        schedule_gemm_cpu(cfg, s, O, shape.CO, P, shape.CI, (co, pixels), k_unroll=shape.KW)
        # a work-group per (channel, kernel column, row phase), a work-item per image row
        # (PoCL: ResNet-18's patches 2.9 -> 1.3 ms in the network, the GEMMs no slower)
        t = st["data_rows"]
        c, kw, ph, r = s[t].op.axis
        bind_image_rows(s, t, s[t].fuse(c, kw, ph), r, shape.OW)
        return s, args
    s, st, O, args = declare_conv(conv2d_nchw_implicit_gemm, epilogue, shape, dtype)
    pixels, co = _pixels(s, O, shape)
    schedule_gemm_cpu(cfg, s, O, shape.CO, P, shape.CI * shape.KH * shape.KW, (co, pixels))
    s[st["kernel_mat"]].compute_inline()
    col = st["data_col"]
    if direct and shape.N == 1:
        s[col].compute_inline()
        return s, args
    # a work-group per row of the matrix, a work-item per image row of it (PoCL: 0.25
    # against 0.65 ms for 64 consecutive elements per work-group, 56x56x64 3x3)
    k, q = s[col].op.axis
    bind_image_rows(s, col, k, q, shape.OW)
    return s, args


def bind_image_rows(s: Schedule, t: Tensor, outer: IterVar, r: IterVar, width: int) -> None:
    """``t``'s ``outer`` axis bound to work-groups and its last axis ``r`` (image rows of
    ``width`` one after another) to a work-item per row (at most 256 a work-group), each a
    loop along its row, in vectors of 16, 8 or 4 where one divides ``width``."""
    rows, along = s[t].split(r, width)
    lanes = next((v for v in (16, 8, 4) if width % v == 0), 0)
    if lanes:  # the row as vectors (a stride-2 conv's row through ts_vloadN_s2)
        _, lane = s[t].split(along, lanes)
        s[t].vectorize(lane)
    s[t].bind(outer, thread_axis("blockIdx.x"))
    ro, ri = s[t].split(rows, min(int(t.shape[-1]) // width, 256))
    s[t].bind(ro, thread_axis("blockIdx.y"))
    s[t].bind(ri, thread_axis("threadIdx.x"))


def conv2d_implicit_gemm(
    cfg: Config, shape: ConvShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    """Implicit GEMM: the GPU GEMM schedule on ``conv_gemm`` (CO x N*OH*OW) with both operands
    inlined into its tile loads and the output stage's (n, oh, ow) fused as the GEMM's N."""
    s, st, O, args = declare_conv(conv2d_nchw_implicit_gemm, epilogue, shape, dtype)
    pixels, co = _pixels(s, O, shape)
    K = shape.CI * shape.KH * shape.KW
    schedule_gemm_gpu(
        cfg,
        s,
        O,
        st["kernel_mat"],
        st["data_col"],
        shape.CO,
        shape.N * shape.OH * shape.OW,
        K,
        axes=(co, pixels),
    )
    s[st["kernel_mat"]].compute_inline()
    s[st["data_col"]].compute_inline()
    return s, args
