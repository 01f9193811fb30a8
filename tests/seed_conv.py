"""Seed 003's spatially-packed conv2d, declared and scheduled as the tutorial writes it with
``ts`` in place of ``tvm`` (and ``//`` where it divides integers)."""

import tensorsched as ts
import tensorsched as tvm  # noqa: F401  (the tutorial's lines read as written)


def declare(
    N=1,
    CI=256,
    IH=56,
    IW=56,
    CO=256,
    KH=3,
    KW=3,
    H_PAD=1,
    W_PAD=1,
    H_STR=1,
    W_STR=1,
    VH=1,
    VW=4,
    VC=4,
    out_dtype="float32",
):
    data = ts.placeholder((N, CI, IH, IW), name="data")
    kernel = ts.placeholder((CO, CI, KH, KW), name="kernel")
    data_pad = ts.pad(data, [0, 0, H_PAD, W_PAD], name="data_pad")
    H_STRIDE, W_STRIDE = H_STR, W_STR
    HCAT, WCAT = KH - 1, KW - 1
    TH = IH + 2 * H_PAD
    TW = IW + 2 * W_PAD
    OH = (IH + 2 * H_PAD - KH) // H_STR + 1
    OW = (IW + 2 * W_PAD - KW) // W_STR + 1
    dvshape = (
        N,
        TH // (VH * H_STRIDE),
        TW // (VW * W_STRIDE),
        CI,
        VH * H_STRIDE + HCAT,
        VW * W_STRIDE + WCAT,
    )
    kvshape = (CO // VC, CI, KH, KW, VC)
    ovshape = (N, CO // VC, OH // VH, OW // VW, VH, VW, VC)
    oshape = (N, CO, OH, OW)
    data_vec = tvm.compute(
        dvshape,
        lambda n, h, w, ci, vh, vw: data_pad[n][ci][h * VH * H_STRIDE + vh][w * VW * W_STRIDE + vw],
        name="data_vec",
    )
    kernel_vec = tvm.compute(
        kvshape, lambda co, ci, kh, kw, vc: kernel[co * VC + vc][ci][kh][kw], name="kernel_vec"
    )
    ci = tvm.reduce_axis((0, CI), name="ci")
    kh = tvm.reduce_axis((0, KH), name="kh")
    kw = tvm.reduce_axis((0, KW), name="kw")
    conv = tvm.compute(
        ovshape,
        lambda n, co, h, w, vh, vw, vc: tvm.sum(
            data_vec[n, h, w, ci, vh * H_STRIDE + kh, vw * W_STRIDE + kw].astype(out_dtype)
            * kernel_vec[co, ci, kh, kw, vc].astype(out_dtype),
            axis=[ci, kh, kw],
        ),
        name="conv",
    )
    output = tvm.compute(
        oshape,
        lambda n, co, h, w: conv[n][co // VC][h // VH][w // VW][h % VH][w % VW][co % VC],
        name="output_unpack",
        tag="direct_conv_output",
    )
    return data, kernel, data_pad, data_vec, kernel_vec, conv, output


def tile_and_bind3d(s, tensor, z, y, x, z_factor=2, y_factor=None, x_factor=None):
    """tile and bind 3d"""
    y_factor = y_factor or z_factor
    x_factor = x_factor or y_factor
    zo, zi = s[tensor].split(z, z_factor)
    yo, yi = s[tensor].split(y, y_factor)
    xo, xi = s[tensor].split(x, x_factor)
    s[tensor].bind(zo, tvm.thread_axis("blockIdx.z"))
    s[tensor].bind(zi, tvm.thread_axis("threadIdx.z"))
    s[tensor].bind(yo, tvm.thread_axis("blockIdx.y"))
    s[tensor].bind(yi, tvm.thread_axis("threadIdx.y"))
    s[tensor].bind(xo, tvm.thread_axis("blockIdx.x"))
    s[tensor].bind(xi, tvm.thread_axis("threadIdx.x"))


def tile_and_bind(s, tensor, y, x, y_factor, x_factor=None):
    """tile and bind to 2d"""
    x_factor = x_factor or y_factor
    yo, xo, yi, xi = s[tensor].tile(y, x, y_factor, x_factor)
    s[tensor].bind(xo, tvm.thread_axis("blockIdx.x"))
    s[tensor].bind(xi, tvm.thread_axis("threadIdx.x"))
    s[tensor].bind(yo, tvm.thread_axis("blockIdx.y"))
    s[tensor].bind(yi, tvm.thread_axis("threadIdx.y"))


def schedule(tensors, kernel_no, num_thread=8):
    """The tutorial's kernel 1 (bind), 2 (+ unroll) or 3 (+ vectorize)."""
    data, kernel, data_pad, data_vec, kernel_vec, conv, output = tensors
    s = ts.create_schedule(output.op)
    s[data_pad].compute_inline()
    _, h, w, ci, vh, vw = s[data_vec].op.axis
    tile_and_bind3d(s, data_vec, h, w, ci, 1)
    if kernel_no >= 2:
        s[data_vec].unroll(vw)
    co, ci, kh, kw, vc = s[kernel_vec].op.axis
    tile_and_bind(s, kernel_vec, co, ci, 1)
    if kernel_no >= 2:
        s[kernel_vec].unroll(kh)
        s[kernel_vec].unroll(kw)
        if kernel_no == 2:
            s[kernel_vec].unroll(vc)
        else:
            s[kernel_vec].vectorize(vc)
    _, c, h, w, vh, vw, vc = s[conv].op.axis
    kc, kh, kw = s[conv].op.reduce_axis
    s[conv].reorder(_, c, h, w, vh, kc, kh, kw, vw, vc)
    tile_and_bind3d(s, conv, c, h, w, num_thread, 1, 1)
    if kernel_no >= 2:
        s[conv].unroll(kh)
        s[conv].unroll(kw)
        s[conv].unroll(vw)
        if kernel_no == 2:
            s[conv].unroll(vc)
        else:
            s[conv].vectorize(vc)
    _, co, oh, ow = s[output].op.axis
    tile_and_bind3d(s, output, co, oh, ow, num_thread, 1, 1)
    return s
