"""``resize``: ONNX's ``Resize`` in modes ``nearest`` and ``linear`` over any axes and
``cubic`` over up to two, with its numpy reference ``resize_ref``.

Each resized axis maps output index ``o`` to the input coordinate ``x(o) = (num * o + off) /
den``, an exact fraction (``axis_map``) built from the axis's scale (a ``Fraction``: ``n_out
/ n_in`` for a Resize given sizes, else the simplest fraction that is the given float32 scale,
``scale_fraction``) by the coordinate transformation mode. The kernel does integer
arithmetic on it, so every target picks the same elements:

- ``nearest``: index ``clamp(round(x), 0, n_in - 1)``, the rounding (``nearest_mode``) written
  as one floor division ``(a * o + b) // c`` (``nearest_form``);
- ``linear``: ``x`` clamped to ``0 .. n_in - 1``, then the two neighbours ``floor(x)`` and
  ``min(floor(x) + 1, n_in - 1)`` weighted by ``1 - frac(x)`` and ``frac(x)``; several linear
  axes multiply their weights (bilinear over two axes: four loads per output);
- ``cubic``: ``x`` as is, the four neighbours ``floor(x) - 1 .. floor(x) + 2`` weighted by
  the cubic convolution kernel of coefficient ``cubic_a`` at their distances from ``x``
  (``cubic_weights``). A neighbour outside the axis reads the edge element, or, with
  ``exclude_outside``, gets weight 0 and the others are divided by their sum; two cubic axes
  multiply their weights (bicubic: sixteen loads per output).

At an exact tie (``x`` an integer for floor / ceil, a half for the rounding modes) the
exact fraction decides, as ONNX's formulas say; onnxruntime computes ``x`` in float32 and
its rounding error can put a tie on the other side (103 of 14,952 nearest maps of 1-13
elements to 1-24 under every coordinate and rounding mode differ from it in some element,
none under asymmetric / floor, torch's nearest, or align_corners). An axis whose map is the
identity (a scale of 1 keeps its axis, in every mode, as onnxruntime does) reads its index as
is. ``tf_crop_and_resize`` and antialiasing are not declared here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ComputeError
from ..ir import intrin as I
from ..ir.expr import const
from ..ir.tensor import Tensor, compute

MODES = ("nearest", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                    "align_corners", "asymmetric", "tf_half_pixel_for_nn")  # fmt: skip
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
MAX_LINEAR_AXES = 3  # 2 ** 3 loads per output
MAX_CUBIC_AXES = 2  # 4 ** 2 loads per output
CUBIC_TAPS = (-1, 0, 1, 2)  # the neighbours of x, from floor(x)
INT32_MAX = 2**31 - 1


def scale_fraction(value: float) -> Fraction:
    """The simplest fraction (smallest denominator among the continued fraction's
    convergents) whose float32 rounding is ``value``'s: 0.6 is 3/5, 2.5 is 5/2."""
    f32 = np.float32(value)
    exact = Fraction(float(f32))
    den = 1
    while den < exact.denominator:
        f = exact.limit_denominator(den)
        if np.float32(f.numerator / f.denominator) == f32:
            return f
        den *= 2
    return exact


@dataclass(frozen=True)
class AxisMap:
    """Output index ``o`` of an axis reads input coordinate ``(num * o + off) / den``."""

    n_in: int
    n_out: int
    num: int
    off: int
    den: int

    @property
    def identity(self) -> bool:
        if self.n_in == self.n_out == 1:
            return True
        return self.n_in == self.n_out and self.num == self.den and self.off == 0

    def coordinates(self) -> list[Fraction]:
        return [Fraction(self.num * o + self.off, self.den) for o in range(self.n_out)]


def axis_map(n_in: int, n_out: int, scale: Fraction, coord: str) -> AxisMap:
    """ONNX's coordinate transformation ``coord`` of one axis, as an exact fraction of ``o``:
    ``x = alpha * o + beta``."""
    half = Fraction(1, 2)
    if scale == 1 and n_in == n_out and coord in COORDINATE_MODES:
        return AxisMap(n_in, n_out, 1, 0, 1)  # kept as is (tf_half_pixel_for_nn too, as ORT)
    if coord in ("half_pixel", "pytorch_half_pixel"):
        alpha, beta = 1 / scale, half / scale - half
        if coord == "pytorch_half_pixel" and n_out == 1:
            alpha, beta = Fraction(0), Fraction(0)
    elif coord == "half_pixel_symmetric":
        adjustment = Fraction(n_out) / (scale * n_in)
        offset = Fraction(n_in, 2) * (1 - adjustment)
        alpha, beta = 1 / scale, offset + half / scale - half
    elif coord == "align_corners":
        alpha = Fraction(n_in - 1, n_out - 1) if n_out > 1 else Fraction(0)
        beta = Fraction(0)
    elif coord == "asymmetric":
        alpha, beta = 1 / scale, Fraction(0)
    elif coord == "tf_half_pixel_for_nn":
        alpha, beta = 1 / scale, half / scale
    else:
        raise ComputeError(
            f"resize: coordinate_transformation_mode {coord!r} must be one of "
            f"{', '.join(COORDINATE_MODES)}"
        )
    den = math.lcm(alpha.denominator, beta.denominator)
    return AxisMap(n_in, n_out, int(alpha * den), int(beta * den), den)


def _exact_form(m: AxisMap, rounding: str) -> tuple[int, int, int]:
    if rounding == "floor":
        return m.num, m.off, m.den
    if rounding == "ceil":
        return m.num, m.off + m.den - 1, m.den
    if rounding == "round_prefer_floor":  # ceil(x - 1/2)
        return 2 * m.num, 2 * m.off + m.den - 1, 2 * m.den
    if rounding == "round_prefer_ceil":  # floor(x + 1/2)
        return 2 * m.num, 2 * m.off + m.den, 2 * m.den
    raise ComputeError(f"resize: nearest_mode {rounding!r} must be one of {NEAREST_MODES}")


def nearest_form(m: AxisMap, rounding: str) -> tuple[int, int, int]:
    """``(a, b, c)`` with the input index of output ``o`` ``(a * o + b) // c`` (floor
    division; then clamped to the axis): the exact rounding of ``x(o)`` under ``rounding``."""
    return _exact_form(m, rounding)


def cubic_weights(t: Any, a: float, lift: Any = float) -> list[Any]:
    """The weights of the neighbours ``floor(x) - 1 .. floor(x) + 2`` of ``x`` whose
    fraction ``x - floor(x)`` is ``t`` (a float, an array or an expression; ``lift`` makes
    its constants): the cubic convolution kernel ``W`` of coefficient ``a`` at their
    distances ``1 + t``, ``t``, ``1 - t`` and ``2 - t``, where ``W(d)`` is ``(a + 2) d^3 -
    (a + 3) d^2 + 1`` for ``d <= 1`` and ``a d^3 - 5a d^2 + 8a d - 4a`` for ``1 < d < 2``.
    The four sum to 1."""
    one = lift(1.0)

    def near(d: Any) -> Any:
        return (lift(a + 2) * d - lift(a + 3)) * d * d + one

    def far(d: Any) -> Any:
        return ((lift(a) * d - lift(5 * a)) * d + lift(8 * a)) * d - lift(4 * a)

    return [far(one + t), near(t), near(one - t), far(lift(2.0) - t)]


def check_resize(
    shape: Sequence[int], out_shape: Sequence[int], scales: Sequence[Fraction], mode: str,
    coord: str, rounding: str, where: str = "resize",
) -> list[AxisMap]:  # fmt: skip
    """The axis maps of a resize, after checking its arguments (a ``ComputeError`` saying
    what is wrong)."""
    if mode not in MODES:
        raise ComputeError(f"{where}: mode {mode!r} must be one of {', '.join(MODES)}")
    if coord not in COORDINATE_MODES:
        raise ComputeError(
            f"{where}: coordinate_transformation_mode {coord!r} must be one of "
            f"{', '.join(COORDINATE_MODES)}"
        )
    if rounding not in NEAREST_MODES:
        raise ComputeError(f"{where}: nearest_mode {rounding!r} must be one of {NEAREST_MODES}")
    if not len(shape) == len(out_shape) == len(scales) or any(
        not isinstance(d, int) or d < 1 for d in out_shape
    ):
        raise ComputeError(
            f"{where}: output shape {tuple(out_shape)} and scales must give one positive "
            f"size and scale per axis of the input {tuple(shape)}"
        )
    if any(not isinstance(s, Fraction) or s <= 0 for s in scales):
        raise ComputeError(f"{where}: scales {tuple(scales)} must be positive fractions")
    maps = [axis_map(i, o, s, coord) for i, o, s in zip(shape, out_shape, scales)]
    moving = [m for m in maps if not m.identity and m.n_in > 1]
    if mode == "linear" and len(moving) > MAX_LINEAR_AXES:
        raise ComputeError(
            f"{where}: linear resize of {len(moving)} axes; at most {MAX_LINEAR_AXES} "
            "(each doubles the loads per output)"
        )
    if mode == "cubic" and len(moving) > MAX_CUBIC_AXES:
        raise ComputeError(
            f"{where}: cubic resize of {len(moving)} axes; at most {MAX_CUBIC_AXES} "
            "(each multiplies the loads per output by 4)"
        )
    for d, m in enumerate(maps):
        a, b, c = _exact_form(m, "round_prefer_ceil")  # the largest terms of any form
        top = max(abs(a) * (m.n_out - 1) + abs(b) + 1, (m.n_in - 1) * 2 * m.den, c)
        if not m.identity and top > INT32_MAX:
            raise ComputeError(
                f"{where}: axis {d} ({m.n_in} -> {m.n_out}, scale {scales[d]}) needs index "
                f"arithmetic up to {top}, beyond 32-bit ints; give a scale of a smaller "
                "denominator"
            )
    return maps


def resize(
    data: Tensor, out_shape: Sequence[int], scales: Sequence[Fraction], mode: str = "nearest",
    coord: str = "half_pixel", rounding: str = "round_prefer_floor", name: str = "resize",
    cubic_a: float = -0.75, exclude_outside: bool = False,
) -> Tensor:  # fmt: skip
    """``data`` resized to ``out_shape``: one compute stage, each output element reading one
    input element (``nearest``), the ``2 ** k`` corners around its coordinate over the ``k``
    resized axes (``linear``) or the ``4 ** k`` neighbours (``cubic``, kernel coefficient
    ``cubic_a``, ``exclude_outside`` as ONNX's). ``scales``: one ``Fraction`` per axis (see
    the module)."""
    if not isinstance(data, Tensor):
        raise ComputeError(f"{name}: expected a tensor, got {data!r}")
    maps = check_resize(data.shape, out_shape, scales, mode, coord, rounding, name)
    dtype = data.dtype

    def nearest(i: Sequence[Any]) -> Any:
        idx = []
        for o, m in zip(i, maps):
            if m.identity:
                idx.append(o)
                continue
            a, b, c = nearest_form(m, rounding)
            idx.append(I.max(I.min((o * a + b) // c, m.n_in - 1), 0) if m.n_in > 1 else 0)
        return data[tuple(idx)]

    def linear(i: Sequence[Any]) -> Any:
        # per axis: [(index, weight or None)] of its one or two neighbours
        taps: list[list[tuple[Any, Any]]] = []
        for o, m in zip(i, maps):
            if m.identity:
                taps.append([(o, None)])
                continue
            if m.n_in == 1:
                taps.append([(0, None)])
                continue
            pos = I.max(I.min(o * m.num + m.off, (m.n_in - 1) * m.den), 0)
            lo = pos // m.den
            frac = (pos - lo * m.den).astype(dtype) * const(1.0 / m.den, dtype)
            hi = I.min(lo + 1, m.n_in - 1)
            taps.append([(lo, const(1.0, dtype) - frac), (hi, frac)])
        return _weighted_sum(data, taps)

    def cubic(i: Sequence[Any]) -> Any:
        taps: list[list[tuple[Any, Any]]] = []
        norm: Any = None  # with exclude_outside: the product of the axes' weight sums
        for o, m in zip(i, maps):
            if m.identity or m.n_in == 1:
                taps.append([(o if m.identity else 0, None)])
                continue
            pos = o * m.num + m.off
            lo = pos // m.den  # floor division: x may be below 0
            frac = (pos - lo * m.den).astype(dtype) * const(1.0 / m.den, dtype)
            weights = cubic_weights(frac, cubic_a, lambda v: const(v, dtype))
            ks = [lo + j for j in CUBIC_TAPS]
            if exclude_outside:
                zero = const(0.0, dtype)
                weights = [I.if_then_else(I.all(k >= 0, k < m.n_in), w, zero)
                           for k, w in zip(ks, weights)]  # fmt: skip
                axis_sum = weights[0] + weights[1] + weights[2] + weights[3]
                norm = axis_sum if norm is None else norm * axis_sum
            taps.append([(I.max(I.min(k, m.n_in - 1), 0), w) for k, w in zip(ks, weights)])
        total = _weighted_sum(data, taps)
        return total if norm is None else total / norm

    body = {"nearest": nearest, "linear": linear, "cubic": cubic}[mode]
    return compute(tuple(out_shape), lambda *i: body(i), name=name, tag="injective")


def _weighted_sum(data: Tensor, taps: list[list[tuple[Any, Any]]]) -> Any:
    """The sum over every corner (one tap of each axis) of its load times its weights."""
    total: Any = None
    for corner in _corners(taps):
        value = data[tuple(t[0] for t in corner)]
        for _, w in corner:
            if w is not None:
                value = value * w
        total = value if total is None else total + value
    return total


def _corners(taps: list[list[tuple[Any, Any]]]) -> list[list[tuple[Any, Any]]]:
    out: list[list[tuple[Any, Any]]] = [[]]
    for axis in taps:
        out = [c + [t] for c in out for t in axis]
    return out


def resize_ref(
    x: NDArray[Any], out_shape: Sequence[int], scales: Sequence[Fraction], mode: str = "nearest",
    coord: str = "half_pixel", rounding: str = "round_prefer_floor", cubic_a: float = -0.75,
    exclude_outside: bool = False,
) -> NDArray[np.float64]:  # fmt: skip
    """``resize`` in numpy (float64), one axis at a time, from the exact coordinates."""
    v = np.asarray(x, np.float64)
    maps = check_resize(v.shape, out_shape, scales, mode, coord, rounding, "resize_ref")
    for d, m in enumerate(maps):
        if m.identity:
            continue
        xs = m.coordinates()
        if mode == "nearest":
            a, b, c = nearest_form(m, rounding)
            src = [min(max((a * o + b) // c, 0), m.n_in - 1) for o in range(m.n_out)]
            v = np.take(v, src, axis=d)
            continue
        if mode == "cubic":
            # each output a weighted sum of the input along the axis: one matrix
            mat = np.zeros((m.n_out, m.n_in))
            for o, p in enumerate(xs):
                base = math.floor(p)
                ws = np.array(cubic_weights(float(p - base), cubic_a))
                ks = [base + j for j in CUBIC_TAPS]
                if exclude_outside:
                    ws = np.where([0 <= k < m.n_in for k in ks], ws, 0.0)
                    ws = ws / ws.sum()
                for k, w in zip(ks, ws):
                    mat[o, min(max(k, 0), m.n_in - 1)] += w
            v = np.moveaxis(np.tensordot(mat, v, axes=(1, d)), 0, d)
            continue
        pos = [min(max(p, Fraction(0)), Fraction(m.n_in - 1)) for p in xs]
        lo = [math.floor(p) for p in pos]
        hi = [min(k + 1, m.n_in - 1) for k in lo]
        w = np.array([float(p - k) for p, k in zip(pos, lo)])
        shape = [1] * v.ndim
        shape[d] = m.n_out
        w = w.reshape(shape)
        v = np.take(v, lo, axis=d) * (1 - w) + np.take(v, hi, axis=d) * w
    return v
