"""Depthwise and grouped 2-d convolution, NCHW data, with their numpy reference.

- ``depthwise_conv2d_nchw(data, kernel, stride, padding, dilation)``: ``kernel`` is
  ``[C * m, 1, KH, KW]`` (``m`` the channel multiplier, ONNX's ``group = C``); output channel
  ``c`` reads input channel ``c // m``.
- ``group_conv2d_nchw(data, kernel, stride, padding, groups, dilation)``: ``kernel`` is
  ``[CO, CI / groups, KH, KW]``; output channel ``co`` reads the input channels of group
  ``co // (CO / groups)``.

``stride`` and ``dilation`` are an int or an (h, w) pair; ``padding`` an int, (ph, pw) or ONNX's
``(top, left, bottom, right)``. Both return the output tensor (its padded input, a stage named
``data_pad``, is meant to be inlined). ``GroupConvShape`` holds one such workload as plain ints
(a tuning task's shape); ``declare(shape)`` makes its placeholders and output.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ComputeError
from ..ir import intrin as I
from ..ir.tensor import Tensor, compute, placeholder, reduce_axis
from .pad import pad
from .window import IntOrSeq, WindowFields, check_fits, paddings, pair


@dataclass(frozen=True)
class GroupConvShape(WindowFields):
    """A grouped convolution of an ``N x CI x IH x IW`` input by a ``CO x CI/groups x KH x KW``
    kernel; depthwise when ``groups == CI``."""

    N: int
    CI: int
    IH: int
    IW: int
    CO: int
    KH: int
    KW: int
    groups: int
    stride_h: int = 1
    stride_w: int = 1
    pad_top: int = 0
    pad_left: int = 0
    pad_bottom: int = 0
    pad_right: int = 0
    dilation_h: int = 1
    dilation_w: int = 1

    @property
    def dilation(self) -> tuple[int, int]:
        return (self.dilation_h, self.dilation_w)

    @property
    def depthwise(self) -> bool:
        return self.groups == self.CI

    @property
    def OH(self) -> int:
        return self.out_hw[0]

    @property
    def OW(self) -> int:
        return self.out_hw[1]

    @property
    def out_hw(self) -> tuple[int, int]:
        return check_fits(
            "group_conv2d", (self.IH, self.IW), (self.KH, self.KW), self.stride, self.pads,
            self.dilation,
        )  # fmt: skip

    @property
    def flop(self) -> int:
        return (
            2 * self.N * self.CO * self.OH * self.OW * (self.CI // self.groups) * self.KH * self.KW
        )

    def astuple(self) -> tuple[int, ...]:
        return astuple(self)

    @classmethod
    def make(
        cls,
        data_shape: tuple[int, ...],
        kernel_shape: tuple[int, ...],
        stride: IntOrSeq = 1,
        padding: IntOrSeq = 0,
        groups: int = 1,
        dilation: IntOrSeq = 1,
    ) -> GroupConvShape:
        """The shape of a convolution of ``data_shape`` by ``kernel_shape`` (checked)."""
        where = "depthwise_conv2d" if groups == data_shape[1] else "group_conv2d"
        N, CI, IH, IW = data_shape
        CO, _, KH, KW = kernel_shape
        (s_h, s_w), (d_h, d_w) = pair(stride, where, "stride"), pair(dilation, where, "dilation")
        t, left, b, r = paddings(padding, where)
        sh = cls(N, CI, IH, IW, CO, KH, KW, groups, s_h, s_w, t, left, b, r, d_h, d_w)
        sh.check(kernel_shape, where)
        return sh

    def check(
        self, kernel_shape: tuple[int, ...] | None = None, where: str = "group_conv2d"
    ) -> None:
        """``ComputeError`` unless the groups divide both channel counts, the kernel has
        ``CI / groups`` input channels and the window fits the padded input."""
        g = self.groups
        if not isinstance(g, int) or g < 1 or self.CI % g or self.CO % g:
            raise ComputeError(
                f"{where}: groups={g} must divide both the {self.CI} input and the {self.CO} "
                "output channels"
            )
        want = (self.CO, self.CI // g, self.KH, self.KW)
        if kernel_shape is not None and tuple(kernel_shape) != want:
            raise ComputeError(
                f"{where}: kernel shape {tuple(kernel_shape)} should be {want} "
                f"(CO, CI/groups, KH, KW) for {self.CI} input channels in {g} groups"
            )
        self.out_hw  # noqa: B018  (raises when the window does not fit)


def _check_nchw(data: Any, kernel: Any, where: str) -> None:
    for name, t in (("data", data), ("kernel", kernel)):
        if not isinstance(t, Tensor) or t.ndim != 4:
            raise ComputeError(f"{where}: {name} must be a 4-d NCHW / OIHW tensor, got {t!r}")


def _padded(data: Tensor, sh: GroupConvShape) -> Tensor:
    t, left, b, r = sh.pads
    if not any(sh.pads):
        return data
    return pad(data, [0, 0, t, left], [0, 0, b, r], name="data_pad")


def group_conv2d_nchw(
    data: Tensor,
    kernel: Tensor,
    stride: IntOrSeq = 1,
    padding: IntOrSeq = 0,
    groups: int = 1,
    dilation: IntOrSeq = 1,
    out_dtype: str | None = None,
    name: str = "group_conv2d",
) -> Tensor:
    """Grouped convolution (``groups`` 1 is a plain conv2d, ``groups == CI`` depthwise)."""
    _check_nchw(data, kernel, "group_conv2d")
    sh = GroupConvShape.make(data.shape, kernel.shape, stride, padding, groups, dilation)
    out_dtype = out_dtype or data.dtype
    dp = _padded(data, sh)
    cig, cog = sh.CI // groups, sh.CO // groups
    (s_h, s_w), (d_h, d_w) = sh.stride, sh.dilation
    ci = reduce_axis((0, cig), name="ci")
    kh = reduce_axis((0, sh.KH), name="kh")
    kw = reduce_axis((0, sh.KW), name="kw")
    return compute(
        (sh.N, sh.CO, sh.OH, sh.OW),
        lambda n, co, h, w: I.sum(
            dp[n, co // cog * cig + ci, h * s_h + kh * d_h, w * s_w + kw * d_w].astype(out_dtype)
            * kernel[co, ci, kh, kw].astype(out_dtype),
            axis=[ci, kh, kw],
        ),
        name=name,
        tag="group_conv2d_nchw",
    )


def depthwise_conv2d_nchw(
    data: Tensor,
    kernel: Tensor,
    stride: IntOrSeq = 1,
    padding: IntOrSeq = 0,
    dilation: IntOrSeq = 1,
    out_dtype: str | None = None,
    name: str = "depthwise_conv2d",
) -> Tensor:
    """Depthwise convolution: ``kernel`` ``[C * m, 1, KH, KW]``, one window per channel."""
    _check_nchw(data, kernel, "depthwise_conv2d")
    C = data.shape[1]
    if kernel.shape[1] != 1 or kernel.shape[0] % C:
        raise ComputeError(
            f"depthwise_conv2d: kernel shape {kernel.shape} should be (C*m, 1, KH, KW) for "
            f"the {C} channels of '{data.name}' (m the channel multiplier)"
        )
    sh = GroupConvShape.make(data.shape, kernel.shape, stride, padding, C, dilation)
    out_dtype = out_dtype or data.dtype
    dp = _padded(data, sh)
    m = sh.CO // C
    (s_h, s_w), (d_h, d_w) = sh.stride, sh.dilation
    kh = reduce_axis((0, sh.KH), name="kh")
    kw = reduce_axis((0, sh.KW), name="kw")
    return compute(
        (sh.N, sh.CO, sh.OH, sh.OW),
        lambda n, c, h, w: I.sum(
            dp[n, c // m if m > 1 else c, h * s_h + kh * d_h, w * s_w + kw * d_w].astype(out_dtype)
            * kernel[c, 0, kh, kw].astype(out_dtype),
            axis=[kh, kw],
        ),
        name=name,
        tag="depthwise_conv2d_nchw",
    )


def declare(shape: GroupConvShape, dtype: str = "float32") -> tuple[Tensor, Tensor, Tensor]:
    """``(data, kernel, output)`` of ``shape``: depthwise when ``groups == CI``."""
    shape.check()
    data = placeholder((shape.N, shape.CI, shape.IH, shape.IW), dtype, name="data")
    kernel = placeholder(
        (shape.CO, shape.CI // shape.groups, shape.KH, shape.KW), dtype, name="kernel"
    )
    args = (shape.stride, shape.pads)
    if shape.depthwise:
        return data, kernel, depthwise_conv2d_nchw(data, kernel, *args, shape.dilation)
    return data, kernel, group_conv2d_nchw(data, kernel, *args, shape.groups, shape.dilation)


def group_conv2d_ref(
    d: NDArray[Any],
    k: NDArray[Any],
    stride: IntOrSeq = 1,
    padding: IntOrSeq = 0,
    groups: int = 1,
    dilation: IntOrSeq = 1,
) -> NDArray[np.float64]:
    """NCHW data, ``[CO, CI/groups, KH, KW]`` kernel, in float64 (depthwise: ``groups = CI``)."""
    sh = GroupConvShape.make(d.shape, k.shape, stride, padding, groups, dilation)
    t, left, b, r = sh.pads
    dp = np.pad(np.asarray(d, np.float64), ((0, 0), (0, 0), (t, b), (left, r)))
    kk = np.asarray(k, np.float64)
    cig, cog = sh.CI // groups, sh.CO // groups
    (s_h, s_w), (d_h, d_w), OH, OW = sh.stride, sh.dilation, sh.OH, sh.OW
    out = np.zeros((sh.N, sh.CO, OH, OW))
    for g in range(groups):
        x = dp[:, g * cig : (g + 1) * cig]
        w = kk[g * cog : (g + 1) * cog]
        for i in range(sh.KH):
            for j in range(sh.KW):
                h0, w0 = i * d_h, j * d_w
                win = x[
                    :, :, h0 : h0 + s_h * (OH - 1) + 1 : s_h, w0 : w0 + s_w * (OW - 1) + 1 : s_w
                ]
                out[:, g * cog : (g + 1) * cog] += np.einsum("nchw,oc->nohw", win, w[:, :, i, j])
    return out
