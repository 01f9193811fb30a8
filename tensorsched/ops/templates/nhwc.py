"""Channels-last (NHWC) templates for CPU devices: the data and the output are ``N x H x W x C``
in memory, so a vector runs along the channels. A depthwise conv then loads one channel
vector per tap and its padding is a test per pixel that all lanes share (``cond ?
vload16(...) : 0``), so it reads its input with no padded copy; a pointwise conv is a GEMM
of pixels (rows) by output channels (vector columns). ``graph.passes.channels_last``
chooses where a network runs channels-last; each template's ``layout`` attribute says what
it reads and writes (``templates.layouts_of``). The kernel stays OIHW: a weight-only kernel
repacks it, which a network runs once at build time and the tuner does not time.

``depthwise_nhwc(cfg, GroupConvShape)``: each work-item computes ``tile_h x tile_w`` pixels of
``vec`` channels in registers; work-groups are ``threads_h x threads_w`` work-items over (h,
w); the channel blocks are the fastest work-group dimension, so neighbouring work-groups
share cache lines. Knobs: ``vec``, ``tile_h``, ``tile_w``, ``threads_h``, ``threads_w``,
``tail`` (as ``depthwise.conv_direct``'s).

``conv2d_gemm_nhwc(cfg, ConvShape)``: ``gemm_cpu``'s schedule (its knobs) on the product of
pixels (M) by output channels (N) over (input channel, kernel row, kernel column); the
padding is read inline (a test per pixel row and column, on scalar loads that every lane
shares). Both read dilated windows (``GroupConvShape.dilation``, ``ConvShape.dilation``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import ComputeError
from ...ir import intrin as I
from ...ir.tensor import Tensor, compute, placeholder, reduce_axis, thread_axis
from ...schedules.schedule import Schedule, create_schedule
from ..conv2d import ConvShape
from ..depthwise import GroupConvShape
from ..nn import epilogue as make_epilogue
from ..pad import pad
from ..space import Config, split_axis
from ..transform import transpose
from .common import bind_2d, reduction_and_epilogue
from .gemm_cpu import schedule_gemm_cpu
from .injective import bind_flat, padding_stage

LAYOUT = "NHWC"


def declare_depthwise_nhwc(shape: GroupConvShape, dtype: str = "float32") -> tuple[Tensor, ...]:
    """``(data, kernel, kernel_hwc, output)``: NHWC data and output, the OIHW ``kernel``
    (``C*m x 1 x KH x KW``) and its ``KH x KW x C*m x 1`` copy that the convolution reads."""
    shape.check()
    if not shape.depthwise:
        raise ComputeError(
            f"depthwise_nhwc: groups ({shape.groups}) must equal the input channels "
            f"({shape.CI}); use group_conv2d's templates for a grouped conv"
        )
    data = placeholder((shape.N, shape.IH, shape.IW, shape.CI), dtype, name="data")
    kernel = placeholder((shape.CO, 1, shape.KH, shape.KW), dtype, name="kernel")
    packed = transpose(kernel, (2, 3, 0, 1), "kernel_hwc")  # [kh, kw, c, 0]
    t, left, b, r = shape.pads
    dp = pad(data, [0, t, left, 0], [0, b, r, 0], name="data_pad")
    m = shape.CO // shape.CI
    (s_h, s_w), (d_h, d_w) = shape.stride, shape.dilation
    kh = reduce_axis((0, shape.KH), name="kh")
    kw = reduce_axis((0, shape.KW), name="kw")
    out = compute(
        (shape.N, shape.OH, shape.OW, shape.CO),
        lambda n, h, w, c: I.sum(
            dp[n, h * s_h + kh * d_h, w * s_w + kw * d_w, c // m if m > 1 else c]
            * packed[kh, kw, c, 0],
            axis=[kh, kw],
        ),
        name="depthwise_conv2d",
        tag="depthwise_conv2d_nhwc",
    )
    return data, kernel, packed, out


def depthwise_nhwc(
    cfg: Config, shape: GroupConvShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    data, kernel, packed, out = declare_depthwise_nhwc(shape, dtype)
    O, extra = make_epilogue(out, epilogue, bias_axis=3)
    s = create_schedule(O.op)
    _inline_padding(s, O)
    bind_flat(s, packed, 64)

    vec = cfg.define_knob("vec", (16, 8, 4), 16)
    th = cfg.define_knob("tile_h", (1, 2, 4), 2)
    tw = cfg.define_knob("tile_w", (1, 2, 4, 8), 4 if shape.OW >= 8 else 2)
    ty = cfg.define_knob("threads_h", (1, 2, 4), 1)
    tx = cfg.define_knob("threads_w", (1, 2, 4), 1)
    H, W = shape.OH, shape.OW
    ragged = H % (ty * th) != 0 or W % (tx * tw) != 0
    tail = cfg.define_knob("tail", ("guard", "shift"), "shift" if ragged else "guard")
    cfg.constrain(
        tail == "guard" or ragged,
        "the patches divide the image: tail='shift' is the same kernel as 'guard'",
    )

    comp, o = reduction_and_epilogue(s, O)
    n, h, w, c = s[o].op.axis
    co, ci = s[o].split(c, vec)
    by, tyy, hi = split_axis(s[o], h, (ty, th), tail)
    bx, txx, wi = split_axis(s[o], w, (tx, tw), tail)
    s[o].reorder(n, by, bx, co, tyy, txx, hi, wi, ci)
    z = s[o].fuse(n, by)
    s[o].bind(z, thread_axis("blockIdx.z"))
    bind_2d(s, o, bx, co, tyy, txx)  # channel blocks fastest: blockIdx.x
    s[o].unroll(hi)
    s[o].unroll(wi)
    s[o].vectorize(ci)

    s[comp].compute_at(s[o], txx)
    _, ch, cw, cc = s[comp].op.axis
    rh, rw = s[comp].op.reduce_axis
    s[comp].reorder(rh, rw, ch, cw, cc)
    for a in (rh, rw, ch, cw):
        s[comp].unroll(a)
    s[comp].vectorize(cc)
    return s, [data, kernel, *extra, O]


def _inline_padding(s: Schedule, out: Tensor) -> None:
    padded = padding_stage(out)
    assert padded is not None  # both declarations pad (by zero where the shape says so)
    s[padded].compute_inline()


def declare_conv_nhwc(
    shape: ConvShape, dtype: str = "float32", data_layout: str = "NHWC"
) -> tuple[Tensor, ...]:
    """``(data, kernel, kernel_ihwo, output)``: the data in ``data_layout`` (``"NHWC"`` or
    ``"NCHW"``), an NHWC output, the OIHW ``kernel`` and its ``CI x KH x KW x CO`` copy that
    ``conv_gemm`` (pixels x output channels) reads."""
    N, CI, CO, KH, KW, OH, OW = shape.N, shape.CI, shape.CO, shape.KH, shape.KW, shape.OH, shape.OW
    if OH <= 0 or OW <= 0:
        raise ComputeError(
            f"conv2d: the kernel {KH}x{KW} (dilation {shape.dilation}) does not fit the padded "
            f"input {shape.IH}x{shape.IW} (pad {shape.pad})"
        )
    st, p, d = shape.stride, shape.pad, shape.dilation
    nchw = data_layout == "NCHW"
    dims = (N, CI, shape.IH, shape.IW) if nchw else (N, shape.IH, shape.IW, CI)
    data = placeholder(dims, dtype, name="data")
    kernel = placeholder((CO, CI, KH, KW), dtype, name="kernel")
    packed = transpose(kernel, (1, 2, 3, 0), "kernel_ihwo")  # [ci, kh, kw, co]
    dp = pad(data, [0, 0, p, p] if nchw else [0, p, p, 0], name="data_pad")
    rc = reduce_axis((0, CI), name="rc")
    rh = reduce_axis((0, KH), name="rh")
    rw = reduce_axis((0, KW), name="rw")

    def pixel(q: Any) -> tuple[Any, Any, Any]:  # (n, row, column) of output pixel q
        if N == 1:
            return 0, q // OW, q % OW
        return q // (OH * OW), q // OW % OH, q % OW

    def product(q: Any, co: Any) -> Any:
        n, h, w = pixel(q)
        y, x = h * st + rh * d, w * st + rw * d
        value = dp[n, rc, y, x] if nchw else dp[n, y, x, rc]
        return I.sum(value * packed[rc, rh, rw, co], axis=[rc, rh, rw])

    gemm = compute((N * OH * OW, CO), product, name="conv_gemm", tag="gemm_NN")
    output = compute(
        (N, OH, OW, CO), lambda n, h, w, co: gemm[(n * OH + h) * OW + w, co], name="output"
    )
    return data, kernel, packed, output


def conv2d_gemm_nhwc(
    cfg: Config,
    shape: ConvShape,
    dtype: str = "float32",
    epilogue: Sequence[str] = (),
    data_layout: str = "NHWC",
) -> tuple[Schedule, list[Tensor]]:
    data, kernel, packed, output = declare_conv_nhwc(shape, dtype, data_layout)
    O, extra = make_epilogue(output, epilogue, bias_axis=3)
    s = create_schedule(O.op)
    _inline_padding(s, O)
    if O is not output:
        s[output].compute_inline()
    bind_flat(s, packed, 64)
    n, oh, ow, co = s[O].op.axis
    if shape.N == 1:  # the batch loop (of one) stays outside, as conv2d_gemm_cpu's
        pixels = s[O].fuse(oh, ow)
    else:
        pixels = s[O].fuse(s[O].fuse(n, oh), ow)
    P = shape.N * shape.OH * shape.OW
    # the pixels' work-groups fastest: the weights' column slice stays in cache
    schedule_gemm_cpu(
        cfg, s, O, P, shape.CO, shape.CI, (pixels, co), k_unroll=shape.KW, rows_fastest=True,
        padded=packed,
    )  # fmt: skip
    return s, [data, kernel, *extra, O]


def conv2d_gemm_to_nhwc(
    cfg: Config, shape: ConvShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    """``conv2d_gemm_nhwc`` reading NCHW data: a network's first conv writes the
    channels-last layers' input itself (no layout_transform after it)."""
    return conv2d_gemm_nhwc(cfg, shape, dtype, epilogue, data_layout="NCHW")


depthwise_nhwc.layout = LAYOUT  # type: ignore[attr-defined]
conv2d_gemm_nhwc.layout = LAYOUT  # type: ignore[attr-defined]
conv2d_gemm_to_nhwc.layout = ("NCHW", LAYOUT)  # type: ignore[attr-defined]
