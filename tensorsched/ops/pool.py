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

import math
from collections.abc import Sequence
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


def _pool(data: Tensor, p: PoolShape, name: str | None) -> Tensor:
    (top, left, bottom, right), (over_h, over_w) = p.pads, p.overhang
    return window_pool(
        data, p.kind, (p.KH, p.KW), p.stride, (top, left), (bottom, right), (over_h, over_w),
        name or ("max_pool2d" if p.kind == "max" else "avg_pool2d"),
    )  # fmt: skip


def window_pool(
    data: Tensor, kind: str, kernel: Sequence[int], strides: Sequence[int],
    before: Sequence[int], after: Sequence[int], over: Sequence[int], name: str,
) -> Tensor:  # fmt: skip
    """The pooling of ``data`` (N, C, then one axis per entry of ``kernel``) by ``kind``
    (``"max"``, ``"avg"`` or ``"avg_include_pad"``) over windows of ``kernel`` moved by
    ``strides``; ``before`` / ``after`` pad each spatial axis, ``over`` is the ceil mode's
    overhang past the padded input (padding for a max, never counted by an average). The 2-d
    pools and the 3-d ones are this one declaration. The output is named ``name``."""
    rank = len(kernel)
    sizes = [int(x) for x in data.shape[2:]]
    outs = [  # the overhang makes the ceil mode's last window whole
        (n + b + a + o - k) // s + 1
        for n, k, s, b, a, o in zip(sizes, kernel, strides, before, after, over)
    ]
    N, C = data.shape[0], data.shape[1]
    rs = [reduce_axis((0, k), name=nm) for k, nm in zip(kernel, ("kd", "kh", "kw")[-rank:])]

    def padded(value: float) -> Tensor:  # a stage named pool_pad, the overhang included
        if not any(before) and not any(after) and not any(over):
            return data
        ends = [a + o for a, o in zip(after, over)]
        return pad(data, [0, 0, *before], [0, 0, *ends], value, "pool_pad")

    def window(dp: Tensor, n: Any, c: Any, pos: Sequence[Any]) -> Any:
        return dp[(n, c, *(i * s + r for i, s, r in zip(pos, strides, rs)))]

    if kind == "max":
        low = float(np.finfo(data.dtype).min)  # padding never wins a max
        dp = padded(low)
        return compute(
            (N, C, *outs),
            lambda n, c, *pos: I.max(window(dp, n, c, pos), axis=rs),
            name=name,
            tag="pool_max",
        )
    dp = padded(0.0)
    total = compute(
        (N, C, *outs),
        lambda n, c, *pos: I.sum(window(dp, n, c, pos), axis=rs),
        name="pool_sum",
        tag="pool_sum",
    )
    if kind == "avg_include_pad" and not any(over):
        return compute(
            total.shape,
            lambda *i: total[i] / const(math.prod(kernel), data.dtype),
            name=name,
            tag="elemwise",
        )
    include = kind == "avg_include_pad"

    def count(o, stride, b, a, size, k, ov):  # elements counted by the window at o
        start = o * stride - b
        if include:  # the padding counts, the overhang past it does not
            return I.min(start + k, size + a) - start if ov else const(k)
        return I.min(start + k, size) - I.max(start, 0)  # the input's elements only

    def divisor(pos: Sequence[Any]) -> Any:
        terms = [count(*t) for t in zip(pos, strides, before, after, sizes, kernel, over)]
        prod = terms[0]
        for t in terms[1:]:
            prod = prod * t
        return prod.astype(data.dtype)

    return compute(
        total.shape,
        lambda n, c, *pos: total[(n, c, *pos)] / divisor(pos),
        name=name,
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


# ---- 3-d pooling of NCDHW data: the same declaration (``window_pool``) over three axes


@dataclass(frozen=True)
class Pool3dShape:
    """Pooling of an ``N x C x ID x IH x IW`` input by ``KD x KH x KW`` windows; pads in ONNX's
    order (front, top, left, back, bottom, right); ``mode`` as ``PoolShape.mode``."""

    N: int
    C: int
    ID: int
    IH: int
    IW: int
    KD: int
    KH: int
    KW: int
    stride_d: int = 1
    stride_h: int = 1
    stride_w: int = 1
    pad_front: int = 0
    pad_top: int = 0
    pad_left: int = 0
    pad_back: int = 0
    pad_bottom: int = 0
    pad_right: int = 0
    mode: int = 0

    @property
    def kind(self) -> str:
        return MODES[self.mode % CEIL]

    @property
    def ceil_mode(self) -> bool:
        return self.mode >= CEIL

    @property
    def sizes(self) -> tuple[int, int, int]:
        return (self.ID, self.IH, self.IW)

    @property
    def kernel(self) -> tuple[int, int, int]:
        return (self.KD, self.KH, self.KW)

    @property
    def strides(self) -> tuple[int, int, int]:
        return (self.stride_d, self.stride_h, self.stride_w)

    @property
    def pads(self) -> tuple[int, ...]:
        return (self.pad_front, self.pad_top, self.pad_left,
                self.pad_back, self.pad_bottom, self.pad_right)  # fmt: skip

    @property
    def out_dhw(self) -> tuple[int, ...]:
        """``(OD, OH, OW)`` (``pooled_size`` per axis); a ``ComputeError`` when a window
        does not fit."""
        p = self.pads
        out = tuple(
            pooled_size(n, k, s, p[i], p[3 + i], self.ceil_mode)
            for i, (n, k, s) in enumerate(zip(self.sizes, self.kernel, self.strides))
        )
        if min(out) <= 0:
            raise ComputeError(
                f"pool3d: the {self.KD}x{self.KH}x{self.KW} window does not fit the "
                f"{self.ID}x{self.IH}x{self.IW} input padded by {p}"
            )
        return out

    @property
    def overhang(self) -> tuple[int, ...]:
        """What the last windows reach past the padded input per axis (ceil mode only)."""
        p = self.pads
        return tuple(
            max((o - 1) * s + k - (n + p[i] + p[3 + i]), 0)
            for i, (o, n, k, s) in enumerate(
                zip(self.out_dhw, self.sizes, self.kernel, self.strides)
            )
        )

    @property
    def flop(self) -> int:
        return self.N * self.C * math.prod(self.out_dhw) * math.prod(self.kernel)

    def check(self) -> None:
        """``ComputeError`` unless the mode is known, strides and window positive, and every
        window holds at least one input element (pads smaller than the window)."""
        if self.mode not in range(len(MODES)):
            raise ComputeError(f"pool3d: mode {self.mode!r} must index {MODES}")
        if min(self.kernel) < 1 or min(self.strides) < 1 or min(self.pads) < 0:
            raise ComputeError(
                f"pool3d: kernel {self.kernel} and strides {self.strides} must be positive, "
                f"pads {self.pads} non-negative"
            )
        p = self.pads
        if any(max(p[i], p[3 + i]) >= k for i, k in enumerate(self.kernel)):
            raise ComputeError(
                f"pool3d: padding {p} must be smaller than the {self.kernel} window, or a "
                "window may hold only padding"
            )
        self.out_dhw  # noqa: B018  (raises when the window does not fit)

    @classmethod
    def make(
        cls, data_shape: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
        pads: Sequence[int], mode: int,
    ) -> Pool3dShape:  # fmt: skip
        if len(data_shape) != 5 or len(kernel) != 3 or len(strides) != 3 or len(pads) != 6:
            raise ComputeError(
                f"pool3d: a 5-d input, 3 kernel sizes, 3 strides and 6 pads, got "
                f"{tuple(data_shape)}, {tuple(kernel)}, {tuple(strides)}, {tuple(pads)}"
            )
        N, C, D, H, W = (int(x) for x in data_shape)
        (kd, kh, kw), (sd, sh, sw) = (int(x) for x in kernel), (int(x) for x in strides)
        p = [int(x) for x in pads]
        shape = cls(N, C, D, H, W, kd, kh, kw, sd, sh, sw, p[0], p[1], p[2], p[3], p[4], p[5],
                    int(mode))  # fmt: skip
        shape.check()
        return shape


def pool3d(data: Tensor, shape: Pool3dShape, name: str | None = None) -> Tensor:
    """The 3-d max or average pooling of ``shape`` (``window_pool`` over D, H and W)."""
    if not isinstance(data, Tensor) or tuple(data.shape) != (shape.N, shape.C, *shape.sizes):
        raise ComputeError(f"pool3d: data must be a tensor of shape {shape.sizes}, got {data!r}")
    shape.check()
    p = shape.pads
    return window_pool(
        data, shape.kind, shape.kernel, shape.strides, p[:3], p[3:], shape.overhang,
        name or ("max_pool3d" if shape.kind == "max" else "avg_pool3d"),
    )  # fmt: skip


def declare3d(shape: Pool3dShape, dtype: str = "float32") -> tuple[Tensor, Tensor]:
    """``(data, output)`` of ``shape``."""
    data = placeholder((shape.N, shape.C, *shape.sizes), dtype, name="data")
    return data, pool3d(data, shape)


def pool_nd_ref(
    d: NDArray[Any], kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
    mode: str = "max",
) -> NDArray[np.float64]:  # fmt: skip
    """Pooling over every axis after N and C, in float64: ``pads`` in ONNX's order (the
    begins, then the ends), ``mode`` one of ``MODES``; the rules of ``pool2d_ref`` (padding
    never wins a max, the ceil mode's overhang is never counted) on any number of axes."""
    if mode not in MODES:
        raise ComputeError(f"pool_nd_ref: mode {mode!r} must be one of {', '.join(MODES)}")
    kind, ceil = mode.removesuffix("_ceil"), mode.endswith("_ceil")
    x = np.asarray(d, np.float64)
    rank = x.ndim - 2
    before, after = list(pads[:rank]), list(pads[rank:])
    sizes = x.shape[2:]
    outs = [pooled_size(n, k, s, b, a, ceil)
            for n, k, s, b, a in zip(sizes, kernel, strides, before, after)]  # fmt: skip
    over = [max((o - 1) * s + k - (n + b + a), 0)
            for o, n, k, s, b, a in zip(outs, sizes, kernel, strides, before, after)]  # fmt: skip
    fill = -np.inf if kind == "max" else 0.0
    widths = [(b, a + o) for b, a, o in zip(before, after, over)]
    xp = np.pad(x, [(0, 0), (0, 0), *widths], constant_values=fill)
    if kind == "avg_include_pad":  # the padding counts, the overhang does not
        counted = np.pad(np.ones([n + b + a for n, b, a in zip(sizes, before, after)]),
                         [(0, o) for o in over])  # fmt: skip
    else:
        counted = np.pad(np.ones(sizes), widths)
    out = np.full(x.shape[:2] + tuple(outs), fill)
    count = np.zeros(outs)
    for taps in np.ndindex(*kernel):
        win = tuple(slice(t, t + s * (o - 1) + 1, s) for t, s, o in zip(taps, strides, outs))
        part = xp[(slice(None), slice(None), *win)]
        out = np.maximum(out, part) if kind == "max" else out + part
        count += counted[win]
    return out if kind == "max" else out / count
