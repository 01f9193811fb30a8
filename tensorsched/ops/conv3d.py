"""3-d convolution of NCDHW data by an OIDHW kernel (torchvision's video models, 3-d U-Nets),
with its numpy reference.

``conv3d_ncdhw(data, kernel, strides, pads, dilations, groups)``: ``kernel`` is ``[CO, CI /
groups, KD, KH, KW]``; output channel ``co`` reads the input channels of group ``co // (CO /
groups)`` (depthwise when ``groups == CI``). ``strides`` and ``dilations`` are an int or a
(d, h, w) triple; ``pads`` an int, (pd, ph, pw) or ONNX's six ``(front, top, left, back,
bottom, right)`` (the begins, then the ends). The output reads the padded input (a stage
named ``data_pad``, meant to be inlined) at ``d * stride_d + kd * dilation_d`` along each
axis, a reduction over (ci, kd, kh, kw). ``Conv3dShape`` holds one workload as plain ints;
``declare(shape)`` makes its placeholders and output.

``conv3d_ncdhw_implicit_gemm(shape)`` (``groups == 1``) is the same convolution as a GEMM
whose operands are meant to be inlined into the GEMM's tile loads, as
``conv2d.conv2d_nchw_implicit_gemm`` is for 2-d: ``conv_gemm`` (CO x N*OD*OH*OW) =
``kernel_mat`` (CO x CI*KD*KH*KW, the kernel's own memory order) times ``data_col``
(CI*KD*KH*KW x N*OD*OH*OW, the padded input's patches as columns); ``output`` is
``conv_gemm`` in NCDHW (for N = 1, the same memory order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ComputeError
from ..ir import intrin as I
from ..ir.dtype import to_int
from ..ir.tensor import Tensor, compute, placeholder, reduce_axis
from .pad import pad
from .window import IntOrSeq, output_size


def triple(value: IntOrSeq, where: str, what: str, minimum: int = 1) -> tuple[int, int, int]:
    """``value`` (an int or a (d, h, w) triple) as ``(d, h, w)``, each at least ``minimum``."""
    seq = list(value) if isinstance(value, (tuple, list)) else [value]
    ints = [to_int(v) for v in seq]
    if len(ints) not in (1, 3) or any(v is None or v < minimum for v in ints):
        raise ComputeError(
            f"{where}: {what} must be an int or a (d, h, w) triple of ints >= {minimum}, "
            f"got {value!r}"
        )
    d, h, w = (ints * 3)[:3] if len(ints) == 1 else ints
    assert d is not None and h is not None and w is not None
    return d, h, w


def paddings3d(padding: IntOrSeq, where: str) -> tuple[int, ...]:
    """``padding`` as ONNX's six ``(front, top, left, back, bottom, right)``: an int pads
    every side, ``(pd, ph, pw)`` both sides of each axis."""
    seq = list(padding) if isinstance(padding, (tuple, list)) else [padding]
    p = [to_int(v) for v in seq]
    if len(p) not in (1, 3, 6) or any(v is None or v < 0 for v in p):
        raise ComputeError(
            f"{where}: padding must be an int, (pd, ph, pw) or (front, top, left, back, bottom, "
            f"right) of non-negative ints, got {padding!r}"
        )
    ints = [int(v) for v in p if v is not None]
    if len(ints) == 1:
        return tuple(ints * 6)
    if len(ints) == 3:
        return tuple(ints + ints)
    return tuple(ints)


@dataclass(frozen=True)
class Conv3dShape:
    """A grouped 3-d convolution of an ``N x CI x ID x IH x IW`` input by a ``CO x CI/groups x
    KD x KH x KW`` kernel (plain ints; pads in ONNX's order)."""

    N: int
    CI: int
    ID: int
    IH: int
    IW: int
    CO: int
    KD: int
    KH: int
    KW: int
    groups: int = 1
    stride_d: int = 1
    stride_h: int = 1
    stride_w: int = 1
    pad_front: int = 0
    pad_top: int = 0
    pad_left: int = 0
    pad_back: int = 0
    pad_bottom: int = 0
    pad_right: int = 0
    dilation_d: int = 1
    dilation_h: int = 1
    dilation_w: int = 1

    @property
    def strides(self) -> tuple[int, int, int]:
        return (self.stride_d, self.stride_h, self.stride_w)

    @property
    def pads(self) -> tuple[int, ...]:
        return (self.pad_front, self.pad_top, self.pad_left,
                self.pad_back, self.pad_bottom, self.pad_right)  # fmt: skip

    @property
    def dilations(self) -> tuple[int, int, int]:
        return (self.dilation_d, self.dilation_h, self.dilation_w)

    @property
    def kernel(self) -> tuple[int, int, int]:
        return (self.KD, self.KH, self.KW)

    @property
    def out_dhw(self) -> tuple[int, int, int]:
        """``(OD, OH, OW)``; a ``ComputeError`` when the window does not fit."""
        sizes, p = (self.ID, self.IH, self.IW), self.pads
        out = tuple(
            output_size(sizes[i], self.kernel[i], self.strides[i], p[i], p[3 + i],
                        self.dilations[i])
            for i in range(3)
        )  # fmt: skip
        if min(out) <= 0:
            raise ComputeError(
                f"conv3d: the {'x'.join(map(str, self.kernel))} kernel (dilations "
                f"{self.dilations}) does not fit the {self.ID}x{self.IH}x{self.IW} input padded "
                f"by {p} (front, top, left, back, bottom, right)"
            )
        return out[0], out[1], out[2]

    @property
    def flop(self) -> int:
        """Twice the multiply-adds."""
        od, oh, ow = self.out_dhw
        taps = (self.CI // self.groups) * self.KD * self.KH * self.KW
        return 2 * self.N * self.CO * od * oh * ow * taps

    def astuple(self) -> tuple[int, ...]:
        return astuple(self)

    @classmethod
    def make(
        cls, data_shape: Sequence[int], kernel_shape: Sequence[int], strides: IntOrSeq = 1,
        pads: IntOrSeq = 0, dilations: IntOrSeq = 1, groups: int = 1,
    ) -> Conv3dShape:  # fmt: skip
        """The shape of a convolution of ``data_shape`` by ``kernel_shape`` (checked)."""
        if len(data_shape) != 5 or len(kernel_shape) != 5:
            raise ComputeError(
                f"conv3d: data {tuple(data_shape)} and kernel {tuple(kernel_shape)} must be "
                "5-d (NCDHW, OIDHW)"
            )
        N, CI, ID, IH, IW = (int(x) for x in data_shape)
        CO, _, KD, KH, KW = (int(x) for x in kernel_shape)
        s = triple(strides, "conv3d", "strides")
        d = triple(dilations, "conv3d", "dilations")
        p = paddings3d(pads, "conv3d")
        shape = cls(N, CI, ID, IH, IW, CO, KD, KH, KW, int(groups), s[0], s[1], s[2],
                    p[0], p[1], p[2], p[3], p[4], p[5], d[0], d[1], d[2])  # fmt: skip
        shape.check(tuple(int(x) for x in kernel_shape))
        return shape

    def check(self, kernel_shape: tuple[int, ...] | None = None) -> None:
        """``ComputeError`` unless the groups divide both channel counts, the kernel has
        ``CI / groups`` input channels and the window fits the padded input."""
        g = self.groups
        if g < 1 or self.CI % g or self.CO % g:
            raise ComputeError(
                f"conv3d: groups={g} must divide both the {self.CI} input and the {self.CO} "
                "output channels"
            )
        want = (self.CO, self.CI // g, self.KD, self.KH, self.KW)
        if kernel_shape is not None and tuple(kernel_shape) != want:
            raise ComputeError(
                f"conv3d: kernel shape {tuple(kernel_shape)} should be {want} (CO, CI/groups, "
                f"KD, KH, KW) for {self.CI} input channels in {g} groups"
            )
        if min(self.strides) < 1 or min(self.dilations) < 1 or min(self.pads) < 0:
            raise ComputeError(
                f"conv3d: strides {self.strides} and dilations {self.dilations} must be "
                f"positive, pads {self.pads} non-negative"
            )
        self.out_dhw  # noqa: B018  (raises when the window does not fit)


def conv3d_ncdhw(
    data: Tensor, kernel: Tensor, strides: IntOrSeq = 1, pads: IntOrSeq = 0,
    dilations: IntOrSeq = 1, groups: int = 1, out_dtype: str | None = None,
    name: str = "conv3d",
) -> Tensor:  # fmt: skip
    """The direct grouped 3-d convolution (see the module docstring)."""
    for what, t in (("data", data), ("kernel", kernel)):
        if not isinstance(t, Tensor) or t.ndim != 5:
            raise ComputeError(f"conv3d: {what} must be a 5-d NCDHW / OIDHW tensor, got {t!r}")
    sh = Conv3dShape.make(data.shape, kernel.shape, strides, pads, dilations, groups)
    out_dtype = out_dtype or data.dtype
    p = sh.pads
    dp = pad(data, [0, 0, *p[:3]], [0, 0, *p[3:]], name="data_pad") if any(p) else data
    cig, cog = sh.CI // groups, sh.CO // groups
    (s_d, s_h, s_w), (d_d, d_h, d_w) = sh.strides, sh.dilations
    ci = reduce_axis((0, cig), name="ci")
    kd = reduce_axis((0, sh.KD), name="kd")
    kh = reduce_axis((0, sh.KH), name="kh")
    kw = reduce_axis((0, sh.KW), name="kw")

    def tap(n: Any, co: Any, d: Any, h: Any, w: Any) -> Any:
        c = ci if groups == 1 else co // cog * cig + ci
        x = dp[n, c, d * s_d + kd * d_d, h * s_h + kh * d_h, w * s_w + kw * d_w]
        return x.astype(out_dtype) * kernel[co, ci, kd, kh, kw].astype(out_dtype)

    return compute(
        (sh.N, sh.CO, *sh.out_dhw),
        lambda n, co, d, h, w: I.sum(tap(n, co, d, h, w), axis=[ci, kd, kh, kw]),
        name=name,
        tag="conv3d_ncdhw",
    )


def declare(shape: Conv3dShape, dtype: str = "float32") -> tuple[Tensor, Tensor, Tensor]:
    """``(data, kernel, output)`` of ``shape``."""
    shape.check()
    data = placeholder((shape.N, shape.CI, shape.ID, shape.IH, shape.IW), dtype, name="data")
    kernel = placeholder(
        (shape.CO, shape.CI // shape.groups, shape.KD, shape.KH, shape.KW), dtype, name="kernel"
    )
    out = conv3d_ncdhw(data, kernel, shape.strides, shape.pads, shape.dilations, shape.groups)
    return data, kernel, out


def conv3d_ncdhw_implicit_gemm(
    shape: Conv3dShape, dtype: str = "float32", out_dtype: str | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """The implicit-GEMM form (see the module docstring) of an ungrouped ``shape``; returns
    ``(data, kernel, output)``, the other stages reachable by name (``data_pad``,
    ``kernel_mat``, ``data_col``, ``conv_gemm``)."""
    if shape.groups != 1:
        raise ComputeError(
            f"conv3d_ncdhw_implicit_gemm: groups == 1 only, got {shape.groups} (a grouped "
            "conv3d is one GEMM per group: use the direct form, conv3d_ncdhw)"
        )
    shape.check()
    out_dtype = out_dtype or dtype
    N, CI, CO, KD, KH, KW = shape.N, shape.CI, shape.CO, shape.KD, shape.KH, shape.KW
    OD, OH, OW = shape.out_dhw
    (s_d, s_h, s_w), (d_d, d_h, d_w), p = shape.strides, shape.dilations, shape.pads
    taps, pixels = KD * KH * KW, OD * OH * OW
    P, K = N * pixels, CI * taps
    data = placeholder((N, CI, shape.ID, shape.IH, shape.IW), dtype, name="data")
    kernel = placeholder((CO, CI, KD, KH, KW), dtype, name="kernel")
    data_pad = pad(data, [0, 0, *p[:3]], [0, 0, *p[3:]], name="data_pad")
    kernel_mat = compute(
        (CO, K),
        lambda co, k: kernel[co, k // taps, k // (KH * KW) % KD, k // KW % KH, k % KW],
        name="kernel_mat",
    )

    def patch(k: Any, n: Any, od: Any, oh: Any, ow: Any) -> Any:
        return data_pad[
            n,
            k // taps,
            od * s_d + k // (KH * KW) % KD * d_d,
            oh * s_h + k // KW % KH * d_h,
            ow * s_w + k % KW * d_w,
        ]

    if N == 1:  # q < OD*OH*OW: no batch index, and q // (OH*OW) is the frame
        data_col = compute(
            (K, P),
            lambda k, q: patch(k, 0, q // (OH * OW), q // OW % OH, q % OW),
            name="data_col",
        )
    else:
        data_col = compute(
            (K, P),
            lambda k, q: patch(k, q // pixels, q // (OH * OW) % OD, q // OW % OH, q % OW),
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
        (N, CO, OD, OH, OW),
        lambda n, co, d, h, w: gemm[co, ((n * OD + d) * OH + h) * OW + w],
        name="output",
    )
    return data, kernel, output


def conv3d_ref(
    d: NDArray[Any], k: NDArray[Any], strides: IntOrSeq = 1, pads: IntOrSeq = 0,
    dilations: IntOrSeq = 1, groups: int = 1,
) -> NDArray[np.float64]:  # fmt: skip
    """NCDHW data, ``[CO, CI/groups, KD, KH, KW]`` kernel, in float64: one strided window of
    the padded input per kernel tap, contracted over each group's input channels."""
    sh = Conv3dShape.make(d.shape, k.shape, strides, pads, dilations, groups)
    p = sh.pads
    dp = np.pad(np.asarray(d, np.float64), ((0, 0), (0, 0), *zip(p[:3], p[3:])))
    kk = np.asarray(k, np.float64)
    cig, cog = sh.CI // groups, sh.CO // groups
    (OD, OH, OW), st, dl = sh.out_dhw, sh.strides, sh.dilations
    x = dp.reshape(sh.N, groups, cig, *dp.shape[2:])
    w = kk.reshape(groups, cog, cig, sh.KD, sh.KH, sh.KW)
    out = np.zeros((sh.N, groups, cog, OD, OH, OW))
    for a in range(sh.KD):
        for b in range(sh.KH):
            for c in range(sh.KW):
                z0, y0, x0 = a * dl[0], b * dl[1], c * dl[2]
                win = x[
                    :, :, :,
                    z0 : z0 + st[0] * (OD - 1) + 1 : st[0],
                    y0 : y0 + st[1] * (OH - 1) + 1 : st[1],
                    x0 : x0 + st[2] * (OW - 1) + 1 : st[2],
                ]  # fmt: skip
                out += np.einsum("ngcdhw,goc->ngodhw", win, w[:, :, :, a, b, c])
    return out.reshape(sh.N, sh.CO, OD, OH, OW)
