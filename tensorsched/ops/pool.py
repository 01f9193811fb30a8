"""2-d pooling of NCHW data, with its numpy reference.

- ``max_pool2d(data, kernel, stride, padding)``: padded positions never win (ONNX's MaxPool);
- ``avg_pool2d(data, kernel, stride, padding, count_include_pad=False)``: the window's sum
  divided by its count of input elements (ONNX's default), or by ``KH * KW`` with
  ``count_include_pad=True``;
- ``global_avg_pool2d(data)``: the mean over H and W, shape ``(N, C, 1, 1)``.

``kernel`` and ``stride`` are an int or an (h, w) pair (``stride`` defaults to ``kernel``);
``padding`` an int, (ph, pw) or ONNX's ``(top, left, bottom, right)``. ONNX's ``ceil_mode=1``
is the same pooling with the bottom/right padding grown by ``stride - 1`` (extra rows no window
starts in are never counted, so max and average-excluding-padding agree with ONNX).

The max pool is one reduction stage (``max_pool2d``) over an inlined ``pool_pad``; the average
pools are a sum (``pool_sum``) and a division stage (the output), which a template treats as
an epilogue of the sum. ``PoolShape`` holds one workload as plain ints; ``declare(shape)``.
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
from .pad import pad
from .window import IntOrSeq, WindowFields, check_fits, paddings, pair

MODES = ("max", "avg", "avg_include_pad")  # PoolShape.mode indexes this


@dataclass(frozen=True)
class PoolShape(WindowFields):
    """Pooling of an ``N x C x IH x IW`` input by ``KH x KW`` windows; ``mode`` is an index
    into ``MODES`` (0 max, 1 average without the padding, 2 average counting the padding)."""

    N: int
    C: int
    IH: int
    IW: int
    KH: int
    KW: int
    stride_h: int = 1
    stride_w: int = 1
    pad_top: int = 0
    pad_left: int = 0
    pad_bottom: int = 0
    pad_right: int = 0
    mode: int = 0

    @property
    def out_hw(self) -> tuple[int, int]:
        return check_fits("pool2d", (self.IH, self.IW), (self.KH, self.KW), self.stride, self.pads)

    @property
    def flop(self) -> int:
        oh, ow = self.out_hw
        return self.N * self.C * oh * ow * self.KH * self.KW

    def astuple(self) -> tuple[int, ...]:
        return astuple(self)

    def check(self) -> None:
        """``ComputeError`` unless the mode is known and the window fits the padded input
        with every window holding at least one input element."""
        if self.mode not in range(len(MODES)):
            raise ComputeError(f"pool2d: mode {self.mode!r} must be 0 (max), 1 (avg) or 2")
        self.out_hw  # noqa: B018  (raises when the window does not fit)
        if (
            max(self.pad_top, self.pad_bottom) >= self.KH
            or max(self.pad_left, self.pad_right) >= self.KW
        ):
            raise ComputeError(
                f"pool2d: padding {self.pads} (top, left, bottom, right) must be smaller than "
                f"the {self.KH}x{self.KW} window, or a window may hold only padding"
            )


def _shape(
    data: Any, kernel: IntOrSeq, stride: IntOrSeq | None, padding: IntOrSeq, mode: int
) -> PoolShape:
    where = ("max_pool2d", "avg_pool2d", "avg_pool2d")[mode]
    if not isinstance(data, Tensor) or data.ndim != 4:
        raise ComputeError(f"{where}: data must be a 4-d NCHW tensor, got {data!r}")
    kh, kw = pair(kernel, where, "kernel")
    sh, sw = pair(kernel if stride is None else stride, where, "stride")
    N, C, H, W = data.shape
    t, left, b, r = paddings(padding, where)
    shape = PoolShape(N, C, H, W, kh, kw, sh, sw, t, left, b, r, mode)
    shape.check()
    return shape


def _padded(data: Tensor, p: PoolShape, value: float) -> Tensor:
    """``data`` padded by ``value`` (a stage named ``pool_pad``), or itself without padding."""
    if not any(p.pads):
        return data
    top, left, bottom, right = p.pads
    return pad(data, [0, 0, top, left], [0, 0, bottom, right], value, "pool_pad")


def _pool(data: Tensor, p: PoolShape, name: str | None) -> Tensor:
    OH, OW = p.out_hw
    (sh, sw), (top, left, _, _) = p.stride, p.pads
    kh = reduce_axis((0, p.KH), name="kh")
    kw = reduce_axis((0, p.KW), name="kw")
    if p.mode == 0:
        low = float(np.finfo(data.dtype).min)  # padding never wins a max
        dp = _padded(data, p, low)
        return compute(
            (p.N, p.C, OH, OW),
            lambda n, c, h, w: I.max(dp[n, c, h * sh + kh, w * sw + kw], axis=[kh, kw]),
            name=name or "max_pool2d",
            tag="pool_max",
        )
    dp = _padded(data, p, 0.0)
    total = compute(
        (p.N, p.C, OH, OW),
        lambda n, c, h, w: I.sum(dp[n, c, h * sh + kh, w * sw + kw], axis=[kh, kw]),
        name="pool_sum",
        tag="pool_sum",
    )
    if p.mode == 2:
        return compute(
            total.shape,
            lambda n, c, h, w: total[n, c, h, w] / const(p.KH * p.KW, data.dtype),
            name=name or "avg_pool2d",
            tag="elemwise",
        )

    def count(o, stride, before, size, k):  # input elements of the window at output o
        start = o * stride - before
        return I.min(start + k, size) - I.max(start, 0)

    return compute(
        total.shape,
        lambda n, c, h, w: (
            total[n, c, h, w]
            / (count(h, sh, top, p.IH, p.KH) * count(w, sw, left, p.IW, p.KW)).astype(data.dtype)
        ),
        name=name or "avg_pool2d",
        tag="elemwise",
    )


def max_pool2d(
    data: Tensor,
    kernel: IntOrSeq,
    stride: IntOrSeq | None = None,
    padding: IntOrSeq = 0,
    name: str | None = None,
) -> Tensor:
    """The largest element of each window; padding never wins."""
    return _pool(data, _shape(data, kernel, stride, padding, 0), name)


def avg_pool2d(
    data: Tensor,
    kernel: IntOrSeq,
    stride: IntOrSeq | None = None,
    padding: IntOrSeq = 0,
    count_include_pad: bool = False,
    name: str | None = None,
) -> Tensor:
    """The mean of each window (over its input elements only, unless ``count_include_pad``)."""
    return _pool(data, _shape(data, kernel, stride, padding, 2 if count_include_pad else 1), name)


def global_avg_pool2d(data: Tensor, name: str | None = None) -> Tensor:
    """The mean over H and W of each (n, c): shape ``(N, C, 1, 1)``."""
    if not isinstance(data, Tensor) or data.ndim != 4:
        raise ComputeError(f"global_avg_pool2d: data must be a 4-d NCHW tensor, got {data!r}")
    return avg_pool2d(data, data.shape[2:], 1, 0, True, name or "global_avg_pool2d")


def declare(shape: PoolShape, dtype: str = "float32") -> tuple[Tensor, Tensor]:
    """``(data, output)`` of ``shape``."""
    shape.check()
    data = placeholder((shape.N, shape.C, shape.IH, shape.IW), dtype, name="data")
    return data, _pool(data, shape, None)


def pool2d_ref(
    d: NDArray[Any],
    kernel: IntOrSeq,
    stride: IntOrSeq | None = None,
    padding: IntOrSeq = 0,
    mode: str = "max",
) -> NDArray[np.float64]:
    """Pooling in float64; ``mode`` is one of ``MODES``."""
    kh, kw = pair(kernel, "pool2d_ref", "kernel")
    sh, sw = pair(kernel if stride is None else stride, "pool2d_ref", "stride")
    t, left, b, r = paddings(padding, "pool2d_ref")
    x = np.asarray(d, np.float64)
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (left, r)), constant_values=fill)
    ones = np.pad(np.ones(x.shape[2:]), ((t, b), (left, r)))
    OH, OW = (xp.shape[2] - kh) // sh + 1, (xp.shape[3] - kw) // sw + 1
    out = np.empty(x.shape[:2] + (OH, OW))
    for i in range(OH):
        for j in range(OW):
            win = xp[:, :, i * sh : i * sh + kh, j * sw : j * sw + kw]
            if mode == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            elif mode == "avg":
                cnt = ones[i * sh : i * sh + kh, j * sw : j * sw + kw].sum()
                out[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
            else:
                out[:, :, i, j] = win.sum(axis=(2, 3)) / (kh * kw)
    return out
