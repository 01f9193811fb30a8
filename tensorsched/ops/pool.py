"""2-d pooling of NCHW data, with its numpy reference.

- ``max_pool2d(data, kernel, stride, padding)``: padded positions never win (ONNX's MaxPool);
- ``avg_pool2d(data, kernel, stride, padding, count_include_pad=False)``: the window's sum
  divided by its count of input elements (ONNX's default), or by ``KH * KW`` with
  ``count_include_pad=True``;
- ``global_avg_pool2d(data)``: the mean over H and W, shape ``(N, C, 1, 1)``.

``kernel`` and ``stride`` are an int or an (h, w) pair (``stride`` defaults to ``kernel``);
``padding`` an int, (ph, pw) or ONNX's ``(top, left, bottom, right)``. ``ceil_mode=True`` is
ONNX's and PyTorch's ``ceil_mode=1``: the output size rounds up (``pooled_size``), so the last
window of a row or column may reach past the padded input (unless it would start in the
bottom/right padding: then it is dropped). What it reaches past the padded input,
its *overhang* (``PoolShape.overhang``), is padding that never wins a max and is never counted
by an average, even one counting the padding (onnxruntime's behaviour and PyTorch's).

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

# PoolShape.mode indexes this: the three poolings, then the same three in ceil mode
MODES = ("max", "avg", "avg_include_pad", "max_ceil", "avg_ceil", "avg_include_pad_ceil")
CEIL = 3  # a mode plus CEIL: the same pooling with ceil_mode


def pool_mode(max_pool: bool, count_include_pad: bool = False, ceil_mode: bool = False) -> int:
    """The ``PoolShape.mode`` (an index into ``MODES``) of a max or average pooling."""
    return (0 if max_pool else 2 if count_include_pad else 1) + (CEIL if ceil_mode else 0)


def pooled_size(size: int, k: int, s: int, before: int, after: int, ceil: bool = False) -> int:
    """Window positions along one axis of ``size`` inputs padded by ``before`` and ``after``,
    for a ``k``-wide window moved by ``s`` (ONNX's MaxPool / AveragePool). With ``ceil`` the
    count rounds up, less a last window that would start in the ``after`` padding (the ONNX
    spec's rule, onnxruntime's and PyTorch's): ``size=5, k=2, s=2`` padded by 1 and 1 gives
    3 windows, not 4. Below 1 when the window does not fit."""
    span = size + before + after - k
    if not ceil:
        return span // s + 1
    n = -(-span // s) + 1
    return n - 1 if (n - 1) * s >= size + before else n


@dataclass(frozen=True)
class PoolShape(WindowFields):
    """Pooling of an ``N x C x IH x IW`` input by ``KH x KW`` windows; ``mode`` is an index
    into ``MODES`` (0 max, 1 average without the padding, 2 average counting the padding; 3, 4
    and 5 the same with ``ceil_mode``: the shape stays 13 ints, as tuning logs hold it)."""

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
    def ceil_mode(self) -> bool:
        return self.mode >= CEIL

    @property
    def kind(self) -> str:
        """``"max"``, ``"avg"`` or ``"avg_include_pad"``, in ceil mode or not."""
        return MODES[self.mode % CEIL]

    @property
    def out_hw(self) -> tuple[int, int]:
        """``(OH, OW)``; a ``ComputeError`` when the window does not fit the padded input."""
        if not self.ceil_mode:
            return check_fits(
                "pool2d", (self.IH, self.IW), (self.KH, self.KW), self.stride, self.pads
            )
        top, left, bottom, right = self.pads
        oh = pooled_size(self.IH, self.KH, self.stride_h, top, bottom, True)
        ow = pooled_size(self.IW, self.KW, self.stride_w, left, right, True)
        if oh <= 0 or ow <= 0:
            raise ComputeError(
                f"pool2d: the {self.KH}x{self.KW} window does not fit the {self.IH}x{self.IW} "
                f"input padded by {self.pads} (top, left, bottom, right) in ceil mode"
            )
        return oh, ow

    @property
    def overhang(self) -> tuple[int, int]:
        """Rows and columns the last windows reach past the padded input (ceil mode only):
        padded as ``pads`` are for a max, never counted by an average."""
        if not self.ceil_mode:
            return (0, 0)
        (oh, ow), (top, left, bottom, right) = self.out_hw, self.pads
        return (
            max((oh - 1) * self.stride_h + self.KH - (self.IH + top + bottom), 0),
            max((ow - 1) * self.stride_w + self.KW - (self.IW + left + right), 0),
        )

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
            raise ComputeError(
                f"pool2d: mode {self.mode!r} must be 0 (max), 1 (avg), 2 (avg counting the "
                "padding) or one of them plus 3 (ceil mode)"
            )
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
    where = "max_pool2d" if mode % CEIL == 0 else "avg_pool2d"
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
    """``data`` padded by ``value`` (a stage named ``pool_pad``), the overhang included, or
    itself without padding."""
    (top, left, bottom, right), (over_h, over_w) = p.pads, p.overhang
    if not any(p.pads) and not any(p.overhang):
        return data
    return pad(data, [0, 0, top, left], [0, 0, bottom + over_h, right + over_w], value, "pool_pad")


def _pool(data: Tensor, p: PoolShape, name: str | None) -> Tensor:
    OH, OW = p.out_hw
    (sh, sw), (top, left, bottom, right) = p.stride, p.pads
    kh = reduce_axis((0, p.KH), name="kh")
    kw = reduce_axis((0, p.KW), name="kw")
    if p.kind == "max":
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
    if p.kind == "avg_include_pad" and not any(p.overhang):
        return compute(
            total.shape,
            lambda n, c, h, w: total[n, c, h, w] / const(p.KH * p.KW, data.dtype),
            name=name or "avg_pool2d",
            tag="elemwise",
        )
    include, (over_h, over_w) = p.kind == "avg_include_pad", p.overhang

    def count(o, stride, before, after, size, k, over):  # elements counted by the window at o
        start = o * stride - before
        if include:  # the padding counts, the overhang past it does not
            return I.min(start + k, size + after) - start if over else const(k)
        return I.min(start + k, size) - I.max(start, 0)  # the input's elements only

    return compute(
        total.shape,
        lambda n, c, h, w: (
            total[n, c, h, w]
            / (
                count(h, sh, top, bottom, p.IH, p.KH, over_h)
                * count(w, sw, left, right, p.IW, p.KW, over_w)
            ).astype(data.dtype)
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
    ceil_mode: bool = False,
) -> Tensor:
    """The largest element of each window; padding never wins. ``ceil_mode``: the output
    size rounds up (the module docstring)."""
    return _pool(
        data, _shape(data, kernel, stride, padding, pool_mode(True, False, ceil_mode)), name
    )


def avg_pool2d(
    data: Tensor,
    kernel: IntOrSeq,
    stride: IntOrSeq | None = None,
    padding: IntOrSeq = 0,
    count_include_pad: bool = False,
    name: str | None = None,
    ceil_mode: bool = False,
) -> Tensor:
    """The mean of each window (over its input elements only, unless ``count_include_pad``).
    ``ceil_mode``: the output size rounds up, the overhang never counted (module docstring)."""
    mode = pool_mode(False, count_include_pad, ceil_mode)
    return _pool(data, _shape(data, kernel, stride, padding, mode), name)


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
    """Pooling in float64; ``mode`` is one of ``MODES`` (those ending ``_ceil``: ceil mode)."""
    if mode not in MODES:
        raise ComputeError(f"pool2d_ref: mode {mode!r} must be one of {', '.join(MODES)}")
    kind = mode.removesuffix("_ceil")
    kh, kw = pair(kernel, "pool2d_ref", "kernel")
    sh, sw = pair(kernel if stride is None else stride, "pool2d_ref", "stride")
    t, left, b, r = paddings(padding, "pool2d_ref")
    x = np.asarray(d, np.float64)
    N, C, H, W = x.shape
    p = PoolShape(N, C, H, W, kh, kw, sh, sw, t, left, b, r, MODES.index(mode))
    (OH, OW), (over_h, over_w) = p.out_hw, p.overhang
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (t, b + over_h), (left, r + over_w)), constant_values=fill)
    if kind == "avg_include_pad":  # the padding counts, the overhang does not
        counted = np.pad(np.ones((H + t + b, W + left + r)), ((0, over_h), (0, over_w)))
    else:
        counted = np.pad(np.ones((H, W)), ((t, b + over_h), (left, r + over_w)))
    out = np.full(x.shape[:2] + (OH, OW), fill)
    count = np.zeros((OH, OW))
    for i in range(kh):
        for j in range(kw):
            rows, cols = slice(i, i + sh * (OH - 1) + 1, sh), slice(j, j + sw * (OW - 1) + 1, sw)
            win = xp[:, :, rows, cols]
            out = np.maximum(out, win) if kind == "max" else out + win
            count += counted[rows, cols]
    return out if kind == "max" else out / count
