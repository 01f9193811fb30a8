"""2-d convolution (NCHW data, OIHW kernel, one stride, pad and dilation for both axes) in these
declarations, each reading the padded input at ``h * stride + kh * dilation``:

- ``conv2d_nchw``: direct, a reduction over (ci, kh, kw) of the padded input;
- ``conv2d_nchw_spatial_pack``: seed 003's spatial packing (``data_vec``, ``kernel_vec``,
  ``conv`` on tiles VH x VW x VC, then ``output_unpack``);
- ``conv2d_nchw_im2col``: the GEMM method (``data_col`` of shape (N*OH*OW, CI*KH*KW) times the
  reshaped kernel);
- ``conv2d_nchw_implicit_gemm``: the same product turned around (kernel times patches), its
  operands meant to be inlined into the GEMM's tile loads.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ComputeError
from ..ir import intrin as I
from ..ir.expr import const
from ..ir.tensor import Tensor, compute, placeholder, reduce_axis
from ..schedules.relations import ceil_div
from .pad import pad


@dataclass(frozen=True)
class ConvShape:
    N: int
    CI: int
    IH: int
    IW: int
    CO: int
    KH: int
    KW: int
    stride: int = 1
    pad: int = 0
    dilation: int = 1  # the distance between kernel taps (1: adjacent), both axes

    @property
    def OH(self) -> int:
        return conv_output_size(self.IH, self.KH, self.stride, self.pad, self.dilation)

    @property
    def OW(self) -> int:
        return conv_output_size(self.IW, self.KW, self.stride, self.pad, self.dilation)

    @property
    def flop(self) -> int:
        """Twice the multiply-adds: the taps actually multiplied (a dilated kernel's gaps
        cost nothing)."""
        return 2 * self.N * self.CO * self.OH * self.OW * self.CI * self.KH * self.KW

    def astuple(self) -> tuple[int, ...]:
        """The fields as a task's shape: 9 ints, a 10th (the dilation) only where it is not 1,
        so that an undilated conv's shape (and the logs that hold it) stays as it was."""
        fields = astuple(self)
        return fields if self.dilation != 1 else fields[:-1]


def conv_output_size(size: int, kernel: int, stride: int, pad: int, dilation: int = 1) -> int:
    """Output positions along one dimension of ``size`` inputs, padded by ``pad`` on each side,
    for a ``kernel``-tap window whose taps are ``dilation`` apart."""
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


def _inputs(shape: ConvShape, dtype: str) -> tuple[Tensor, Tensor]:
    if shape.dilation < 1 or shape.stride < 1:
        raise ComputeError(
            f"conv2d: stride {shape.stride} and dilation {shape.dilation} must be at least 1"
        )
    if shape.OH <= 0 or shape.OW <= 0:
        dilated = f" (dilation {shape.dilation})" if shape.dilation > 1 else ""
        raise ComputeError(
            f"conv2d: the kernel {shape.KH}x{shape.KW}{dilated} does not fit "
            f"the padded input {shape.IH}x{shape.IW} (pad {shape.pad})"
        )
    data = placeholder((shape.N, shape.CI, shape.IH, shape.IW), dtype, name="data")
    kernel = placeholder((shape.CO, shape.CI, shape.KH, shape.KW), dtype, name="kernel")
    return data, kernel


def conv2d_nchw(
    shape: ConvShape, dtype: str = "float32", out_dtype: str | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """Direct convolution; returns ``(data, kernel, output)``."""
    out_dtype = out_dtype or dtype
    data, kernel = _inputs(shape, dtype)
    p, s, d = shape.pad, shape.stride, shape.dilation
    data_pad = pad(data, [0, 0, p, p], name="data_pad")
    ci = reduce_axis((0, shape.CI), name="ci")
    kh = reduce_axis((0, shape.KH), name="kh")
    kw = reduce_axis((0, shape.KW), name="kw")
    out = compute(
        (shape.N, shape.CO, shape.OH, shape.OW),
        lambda n, co, h, w: I.sum(
            data_pad[n, ci, h * s + kh * d, w * s + kw * d].astype(out_dtype)
            * kernel[co, ci, kh, kw].astype(out_dtype),
            axis=[ci, kh, kw],
        ),
        name="conv2d",
        tag="conv2d_nchw",
    )
    return data, kernel, out


def conv2d_nchw_spatial_pack(
    shape: ConvShape,
    VH: int = 1,
    VW: int = 4,
    VC: int = 4,
    dtype: str = "float32",
    out_dtype: str | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Seed 003's declaration. Returns ``(data, kernel, output)``; the intermediate stages are
    reachable as ``output.op.input_tensors`` and by name (``data_vec``, ``kernel_vec``, ``conv``).

    Output sizes that VH, VW or VC do not divide are covered by rounding the tiles up: the
    packed input is padded further and the packed kernel is zero beyond CO.
    """
    out_dtype = out_dtype or dtype
    data, kernel = _inputs(shape, dtype)
    N, CI, CO, KH, KW = shape.N, shape.CI, shape.CO, shape.KH, shape.KW
    HS = WS = shape.stride
    D = shape.dilation
    OH, OW = shape.OH, shape.OW
    OHB, OWB, COB = ceil_div(OH, VH), ceil_div(OW, VW), ceil_div(CO, VC)
    # the input window of one tile
    rows, cols = (VH - 1) * HS + (KH - 1) * D + 1, (VW - 1) * WS + (KW - 1) * D + 1
    need_h, need_w = (OHB - 1) * VH * HS + rows, (OWB - 1) * VW * WS + cols
    p = shape.pad
    data_pad = pad(
        data,
        [0, 0, p, p],
        [0, 0, max(p, need_h - shape.IH - p), max(p, need_w - shape.IW - p)],
        name="data_pad",
    )
    dvshape = (N, OHB, OWB, CI, rows, cols)
    kvshape = (COB, CI, KH, KW, VC)
    ovshape = (N, COB, OHB, OWB, VH, VW, VC)
    oshape = (N, CO, OH, OW)
    data_vec = compute(
        dvshape,
        lambda n, h, w, ci, vh, vw: data_pad[n, ci, h * VH * HS + vh, w * VW * WS + vw],
        name="data_vec",
    )
    if CO % VC:
        kernel_vec = compute(
            kvshape,
            lambda co, ci, kh, kw, vc: I.if_then_else(
                co * VC + vc < CO, kernel[I.min(co * VC + vc, CO - 1), ci, kh, kw], const(0, dtype)
            ),
            name="kernel_vec",
        )
    else:
        kernel_vec = compute(
            kvshape, lambda co, ci, kh, kw, vc: kernel[co * VC + vc, ci, kh, kw], name="kernel_vec"
        )
    ci = reduce_axis((0, CI), name="ci")
    kh = reduce_axis((0, KH), name="kh")
    kw = reduce_axis((0, KW), name="kw")
    conv = compute(
        ovshape,
        lambda n, co, h, w, vh, vw, vc: I.sum(
            data_vec[n, h, w, ci, vh * HS + kh * D, vw * WS + kw * D].astype(out_dtype)
            * kernel_vec[co, ci, kh, kw, vc].astype(out_dtype),
            axis=[ci, kh, kw],
        ),
        name="conv",
    )
    output = compute(
        oshape,
        lambda n, co, h, w: conv[n, co // VC, h // VH, w // VW, h % VH, w % VW, co % VC],
        name="output_unpack",
        tag="direct_conv_output",
    )
    return data, kernel, output


def conv2d_nchw_im2col(
    shape: ConvShape, dtype: str = "float32", out_dtype: str | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """The GEMM method: ``data_col`` (N*OH*OW x CI*KH*KW) times ``kernel_mat`` (CI*KH*KW x CO),
    then ``output`` back in NCHW. Returns ``(data, kernel, output)``; the GEMM stage is named
    ``conv_gemm``."""
    out_dtype = out_dtype or dtype
    data, kernel = _inputs(shape, dtype)
    N, CI, CO, KH, KW, OH, OW = shape.N, shape.CI, shape.CO, shape.KH, shape.KW, shape.OH, shape.OW
    s, p, d = shape.stride, shape.pad, shape.dilation
    M, K = N * OH * OW, CI * KH * KW
    data_pad = pad(data, [0, 0, p, p], name="data_pad")
    data_col = compute(
        (M, K),
        lambda m, k: data_pad[
            m // (OH * OW),
            k // (KH * KW),
            (m // OW) % OH * s + k // KW % KH * d,
            m % OW * s + k % KW * d,
        ],
        name="data_col",
    )
    kernel_mat = compute(
        (K, CO), lambda k, co: kernel[co, k // (KH * KW), k // KW % KH, k % KW], name="kernel_mat"
    )
    kk = reduce_axis((0, K), name="k")
    gemm = compute(
        (M, CO),
        lambda m, co: I.sum(
            data_col[m, kk].astype(out_dtype) * kernel_mat[kk, co].astype(out_dtype), axis=kk
        ),
        name="conv_gemm",
        tag="gemm_NN",
    )
    output = compute(
        (N, CO, OH, OW), lambda n, co, h, w: gemm[(n * OH + h) * OW + w, co], name="output"
    )
    return data, kernel, output


def conv2d_nchw_implicit_gemm(
    shape: ConvShape, dtype: str = "float32", out_dtype: str | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """The convolution as a GEMM that never materialises its operands: ``conv_gemm`` (CO x
    N*OH*OW) = ``kernel_mat`` (CO x CI*KH*KW, the kernel's own memory order) times ``data_col``
    (CI*KH*KW x N*OH*OW, the image patches as columns), both meant to be inlined into the
    GEMM's tile loads; ``output`` is ``conv_gemm`` in NCHW (for N = 1, the same memory order).
    Returns ``(data, kernel, output)``."""
    out_dtype = out_dtype or dtype
    data, kernel = _inputs(shape, dtype)
    N, CI, CO, KH, KW, OH, OW = shape.N, shape.CI, shape.CO, shape.KH, shape.KW, shape.OH, shape.OW
    s, p, d = shape.stride, shape.pad, shape.dilation
    P, K = N * OH * OW, CI * KH * KW
    data_pad = pad(data, [0, 0, p, p], name="data_pad")
    kernel_mat = compute(
        (CO, K), lambda co, k: kernel[co, k // (KH * KW), k // KW % KH, k % KW], name="kernel_mat"
    )
    if N == 1:  # q < OH*OW: no batch index, and q // OW is the row
        data_col = compute(
            (K, P),
            lambda k, q: data_pad[
                0, k // (KH * KW), q // OW * s + k // KW % KH * d, q % OW * s + k % KW * d
            ],
            name="data_col",
        )
    else:
        data_col = compute(
            (K, P),
            lambda k, q: data_pad[
                q // (OH * OW),
                k // (KH * KW),
                q // OW % OH * s + k // KW % KH * d,
                q % OW * s + k % KW * d,
            ],
            name="data_col",
        )
    kk = reduce_axis((0, K), name="k")
    gemm = compute(
        (CO, P),
        lambda co, q: I.sum(
            kernel_mat[co, kk].astype(out_dtype) * data_col[kk, q].astype(out_dtype), axis=kk
        ),
        name="conv_gemm",
        tag="gemm_NN",
    )
    output = compute(
        (N, CO, OH, OW), lambda n, co, h, w: gemm[co, (n * OH + h) * OW + w], name="output"
    )
    return data, kernel, output


def conv2d_nchw_row_gemm(
    shape: ConvShape, dtype: str = "float32", out_dtype: str | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """The convolution of batch 1 as a GEMM (CO x OH*OW) over three reduction axes (input
    channel, kernel row, kernel column) whose right operand is ``data_rows``: for each input
    channel, kernel column ``kw`` and row phase ``ph`` (row mod stride), the padded image's
    rows of that phase, sampled at the output's columns, one after another. The patch of
    ``(c, kh, kw)`` is then ``OH * OW`` consecutive elements of it, starting at row
    ``kh // stride``: the GEMM reads its operand as contiguous vectors at offsets linear in its
    loops, and the image is copied ``KW * min(stride, KH)`` times instead of the patch
    matrix's ``KH * KW``. With dilation ``d``, tap ``kh`` is row ``kh * d`` of the window: its
    phase is ``kh * d % stride`` and its patch starts at row ``kh * d // stride``, column
    ``kw * d``. Returns ``(data, kernel, output)``."""
    if shape.N != 1:
        raise ComputeError(f"conv2d_nchw_row_gemm: batch 1 only, got {shape.N}")
    out_dtype = out_dtype or dtype
    data, kernel = _inputs(shape, dtype)
    CI, CO, KH, KW, OH, OW = shape.CI, shape.CO, shape.KH, shape.KW, shape.OH, shape.OW
    s, p, d = shape.stride, shape.pad, shape.dilation
    phases = max(kh * d % s for kh in range(KH)) + 1  # the row phases the taps read
    rows = OH + (KH - 1) * d // s
    below = max(p, (rows - 1) * s + phases - shape.IH - p)  # rows past the image read as 0
    data_pad = pad(data, [0, 0, p, p], [0, 0, below, p], name="data_pad")
    data_rows = compute(
        (CI, KW, phases, rows * OW),
        lambda c, kw, ph, r: data_pad[0, c, r // OW * s + ph, r % OW * s + kw * d],
        name="data_rows",
    )
    rc = reduce_axis((0, CI), name="rc")
    rh = reduce_axis((0, KH), name="rh")
    rw = reduce_axis((0, KW), name="rw")
    gemm = compute(
        (CO, OH * OW),
        lambda co, q: I.sum(
            kernel[co, rc, rh, rw].astype(out_dtype)
            * data_rows[rc, rw, rh * d % s, rh * d // s * OW + q].astype(out_dtype),
            axis=[rc, rh, rw],
        ),
        name="conv_gemm",
        tag="gemm_NN",
    )
    output = compute((1, CO, OH, OW), lambda n, co, h, w: gemm[co, h * OW + w], name="output")
    return data, kernel, output


def stages_by_name(output: Tensor) -> dict[str, Tensor]:
    """``{name: tensor}`` of every compute stage feeding ``output`` (and ``output`` itself)."""
    found: dict[str, Tensor] = {}
    todo = [output]
    while todo:
        t = todo.pop()
        if not isinstance(t, Tensor) or t.name in found:
            continue
        found[t.name] = t
        todo += list(t.op.input_tensors)
    return found


IntOrPair = int | tuple[int, int] | list[int]


def conv2d_ref(
    d: NDArray[Any],
    k: NDArray[Any],
    stride: IntOrPair = 1,
    pad: IntOrPair = 0,
    dilation: IntOrPair = 1,
) -> NDArray[np.float64]:
    """NCHW data, OIHW kernel, in float64; ``stride``, ``pad`` and ``dilation`` are ints or
    (h, w) pairs."""
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride), _pair(pad), _pair(dilation)
    _, _, H, W = d.shape
    CO, _, KH, KW = k.shape
    dp = np.pad(np.asarray(d, np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    OH, OW = conv_output_size(H, KH, sh, ph, dh), conv_output_size(W, KW, sw, pw, dw)
    out = np.zeros((d.shape[0], CO, OH, OW))
    for kh in range(KH):
        for kw in range(KW):
            y, x = kh * dh, kw * dw
            window = dp[:, :, y : y + sh * (OH - 1) + 1 : sh, x : x + sw * (OW - 1) + 1 : sw]
            out += np.einsum("nchw,oc->nohw", window, np.asarray(k[:, :, kh, kw], np.float64))
    return out


def _pair(v: IntOrPair) -> tuple[int, ...]:
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)
