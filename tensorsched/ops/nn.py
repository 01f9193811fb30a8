"""Elementwise operators and epilogues, and softmax, with their numpy references.

Elementwise: ``bias_add``, ``relu``, ``relu6`` (clip to 0..6), ``clip(lo, hi)``, ``sigmoid``,
``tanh``, ``leaky_relu(alpha)``, ``hard_sigmoid(alpha, beta)``, ``hard_swish``, and ``add``,
``subtract``, ``multiply``, ``divide`` and ``power`` of two tensors (numpy broadcasting); the
math of transformer blocks, one input each: ``erf``, ``sqrt``, ``exp``, ``log``, ``negative``,
``absolute``, ``reciprocal``, ``floor``, ``ceil`` and ``power_scalar`` (by a constant exponent:
a product for the small integer ones, as layer norms written with ``Pow(x, 2)`` need),
``trunc`` and ``sign``. Masks (a boolean as a float 1 or 0; a condition read is any nonzero):
``compare``, ``logical`` (and, or, xor), ``logical_not``, ``to_bool``, ``isnan``, ``isinf``,
``where`` and ``mod`` (C's ``fmod`` or numpy's ``mod``).
``softmax(data, axis=-1)`` is numerically stable: stages ``softmax_max`` (the max along
``axis``), ``softmax_exp`` (``exp(x - max)``, meant to be inlined), ``softmax_sum`` and the
output ``softmax`` (``exp / sum``).

Epilogues (seed 002): ``epilogue(out, kinds, bias_axis)`` applies a chain of elementwise
stages named by ``EPILOGUE_KINDS`` to the output of a GEMM, conv, depthwise conv or dense and
returns ``(last stage, [extra inputs in chain order])``: ``"bias"`` adds a 1-d placeholder
``bias`` along ``bias_axis`` (1 for NCHW and for dense), ``"relu"`` / ``"relu6"`` /
``"sigmoid"`` apply the function, ``"add"`` adds a placeholder ``residual`` of the output's own
shape (ResNet's shortcut). Each is its own compute stage; a schedule template inlines the chain
into the stage that writes the output. ``epilogue_ref`` applies the same chain in numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ComputeError
from ..ir import expr as E
from ..ir import intrin as I
from ..ir.expr import const
from ..ir.tensor import Tensor, broadcast_shape, compute, placeholder, reduce_axis
from ..ir.tensor import broadcast_load as _broadcast_load


def bias_add(
    data: Tensor, bias: Tensor | None = None, axis: int = -1, name: str = "bias_add"
) -> tuple[Tensor, Tensor]:
    """``data + bias`` with the 1-d ``bias`` along ``axis``; returns ``(out, bias)``."""
    axis = axis % data.ndim
    if bias is None:
        bias = placeholder((data.shape[axis],), data.dtype, name="bias")
    if not isinstance(bias, Tensor) or bias.shape != (data.shape[axis],):
        raise ComputeError(
            f"bias_add: bias must have shape ({data.shape[axis]},), the size of "
            f"axis {axis} of '{data.name}'"
        )
    out = compute(data.shape, lambda *i: data[i] + bias[i[axis]], name=name, tag="elemwise")
    return out, bias


def relu(data: Tensor, name: str = "relu") -> Tensor:
    return compute(
        data.shape, lambda *i: I.max(data[i], const(0, data.dtype)), name=name, tag="elemwise"
    )


def sigmoid(data: Tensor, name: str = "sigmoid") -> Tensor:
    return compute(data.shape, lambda *i: I.sigmoid(data[i]), name=name, tag="elemwise")


def clip(data: Tensor, lo: float, hi: float, name: str = "clip") -> Tensor:
    """``data`` clamped to ``[lo, hi]`` (ONNX's ``Clip``)."""
    if not isinstance(data, Tensor):
        raise ComputeError(f"{name}: expected a tensor, got {data!r}")
    if not lo <= hi:
        raise ComputeError(f"{name}: the lower bound {lo} is above the upper bound {hi}")
    low, high = const(lo, data.dtype), const(hi, data.dtype)
    return compute(
        data.shape, lambda *i: I.min(I.max(data[i], low), high), name=name, tag="elemwise"
    )


def relu6(data: Tensor, name: str = "relu6") -> Tensor:
    """``min(max(data, 0), 6)`` (MobileNet's activation)."""
    return clip(data, 0.0, 6.0, name=name)


def _binary(a: Tensor, b: Tensor, name: str, fn: Callable[[Any, Any], Any]) -> Tensor:
    for t in (a, b):
        if not isinstance(t, Tensor):
            raise ComputeError(f"{name}: both operands must be tensors, got {t!r}")
    shape = broadcast_shape(a.shape, b.shape, name)

    def body(*i: Any) -> Any:
        return fn(_broadcast_load(a, i), _broadcast_load(b, i))

    return compute(shape, body, name=name, tag="elemwise")


def add(a: Tensor, b: Tensor, name: str = "add") -> Tensor:
    """``a + b`` with numpy broadcasting."""
    return _binary(a, b, name, lambda x, y: x + y)


def subtract(a: Tensor, b: Tensor, name: str = "subtract") -> Tensor:
    """``a - b`` with numpy broadcasting."""
    return _binary(a, b, name, lambda x, y: x - y)


def multiply(a: Tensor, b: Tensor, name: str = "multiply") -> Tensor:
    """``a * b`` with numpy broadcasting."""
    return _binary(a, b, name, lambda x, y: x * y)


def divide(a: Tensor, b: Tensor, name: str = "divide") -> Tensor:
    """``a / b`` with numpy broadcasting (floats: IEEE division, as numpy's)."""
    return _binary(a, b, name, lambda x, y: x / y)


def power(a: Tensor, b: Tensor, name: str = "power") -> Tensor:
    """``a ** b`` with numpy broadcasting (C's ``pow``: NaN for a negative base and a
    non-integer exponent)."""
    return _binary(a, b, name, I.power)


def _map(data: Tensor, fn: Callable[[Any], Any], name: str) -> Tensor:
    if not isinstance(data, Tensor):
        raise ComputeError(f"{name}: expected a tensor, got {data!r}")
    return compute(data.shape, lambda *i: fn(data[i]), name=name, tag="elemwise")


def erf(data: Tensor, name: str = "erf") -> Tensor:
    return _map(data, I.erf, name)


def sqrt(data: Tensor, name: str = "sqrt") -> Tensor:
    return _map(data, I.sqrt, name)


def exp(data: Tensor, name: str = "exp") -> Tensor:
    return _map(data, I.exp, name)


def log(data: Tensor, name: str = "log") -> Tensor:
    return _map(data, I.log, name)


def negative(data: Tensor, name: str = "negative") -> Tensor:
    return _map(data, lambda x: const(0, data.dtype) - x, name)


def absolute(data: Tensor, name: str = "abs") -> Tensor:
    return _map(data, I.abs, name)


def reciprocal(data: Tensor, name: str = "reciprocal") -> Tensor:
    return _map(data, lambda x: const(1, data.dtype) / x, name)


def floor(data: Tensor, name: str = "floor") -> Tensor:
    return _map(data, I.floor, name)


def ceil(data: Tensor, name: str = "ceil") -> Tensor:
    return _map(data, I.ceil, name)


def power_scalar(data: Tensor, exponent: float, name: str = "power") -> Tensor:
    """``data ** exponent`` for a constant exponent: products for 1, 2, 3 and 4, their
    reciprocal for -1 and -2, ``sqrt`` for 0.5, else ``pow``."""
    e, one = float(exponent), const(1, data.dtype)

    def fn(x: Any) -> Any:
        if e == 0.5:
            return I.sqrt(x)
        if abs(e) in (1.0, 2.0, 3.0, 4.0) and not (e < 0 and abs(e) > 2):
            n = int(abs(e))
            y = x * x if n >= 2 else x
            y = y * x if n == 3 else (y * y if n == 4 else y)
            return one / y if e < 0 else y
        return I.power(x, const(e, data.dtype))

    return _map(data, fn, name)


def trunc(data: Tensor, name: str = "trunc") -> Tensor:
    """``data`` rounded toward zero (ONNX's Cast of a float to an integer type, as a float)."""
    return _map(data, I.trunc, name)


def sign(data: Tensor, name: str = "sign") -> Tensor:
    """1 for a positive ``x``, -1 for a negative one, ``x`` itself for 0 and NaN (numpy's)."""
    one, zero = const(1, data.dtype), const(0, data.dtype)

    def fn(x: Any) -> Any:
        neg = I.if_then_else(E.Cmp("<", x, zero), zero - one, x)
        return I.if_then_else(E.Cmp(">", x, zero), one, neg)

    return _map(data, fn, name)


# ---- masks: a boolean is a float 1 (true) or 0 (false); a condition read is any nonzero


def _mask(cond: Any, dtype: str) -> Any:
    return I.if_then_else(cond, const(1, dtype), const(0, dtype))


def _true(x: Any) -> Any:
    """The condition of a mask (or of any float): nonzero, NaN included."""
    return E.Cmp("!=", x, const(0, x.dtype))


COMPARISONS = {"equal": "==", "less": "<", "less_equal": "<=", "greater": ">",
               "greater_equal": ">="}  # fmt: skip


def compare(a: Tensor, b: Tensor, op: str, name: str = "compare") -> Tensor:
    """The mask of ``a op b`` (``op`` one of ``COMPARISONS``' values), numpy broadcasting."""
    return _binary(a, b, name, lambda x, y: _mask(E.Cmp(op, x, y), a.dtype))


LOGIC: dict[str, Callable[[Any, Any], Any]] = {
    "logical_and": lambda p, q: E.And(p, q),
    "logical_or": lambda p, q: E.Or(p, q),
    "logical_xor": lambda p, q: E.Or(E.And(p, E.Not(q)), E.And(E.Not(p), q)),
}


def logical(a: Tensor, b: Tensor, kind: str, name: str = "logical") -> Tensor:
    """The mask of ``LOGIC[kind]`` of two conditions (each nonzero is true), broadcast."""
    return _binary(a, b, name, lambda x, y: _mask(LOGIC[kind](_true(x), _true(y)), a.dtype))


def logical_not(data: Tensor, name: str = "logical_not") -> Tensor:
    """The mask of ``x == 0``."""
    return _map(data, lambda x: _mask(E.Cmp("==", x, const(0, x.dtype)), data.dtype), name)


def to_bool(data: Tensor, name: str = "to_bool") -> Tensor:
    """The mask of ``x != 0`` (NaN is true: ONNX's Cast to bool)."""
    return _map(data, lambda x: _mask(_true(x), data.dtype), name)


def isnan(data: Tensor, name: str = "isnan") -> Tensor:
    return _map(data, lambda x: _mask(E.Cmp("!=", x, x), data.dtype), name)


def isinf(
    data: Tensor, positive: bool = True, negative: bool = True, name: str = "isinf"
) -> Tensor:
    """The mask of ``x`` infinite: +inf where ``positive``, -inf where ``negative``."""
    inf = const(float("inf"), data.dtype)

    def fn(x: Any) -> Any:
        if positive and negative:
            return _mask(E.Cmp("==", I.abs(x), inf), data.dtype)
        return _mask(E.Cmp("==", x, inf if positive else const(float("-inf"), x.dtype)), data.dtype)

    return _map(data, fn, name)


def where(cond: Tensor, a: Tensor, b: Tensor, name: str = "where") -> Tensor:
    """``a`` where ``cond`` is nonzero, else ``b``; the three broadcast (numpy's rule)."""
    for t in (cond, a, b):
        if not isinstance(t, Tensor):
            raise ComputeError(f"{name}: the operands must be tensors, got {t!r}")
    shape = broadcast_shape(broadcast_shape(cond.shape, a.shape, name), b.shape, name)

    def body(*i: Any) -> Any:
        c = _broadcast_load(cond, i)
        return I.if_then_else(_true(c), _broadcast_load(a, i), _broadcast_load(b, i))

    return compute(shape, body, name=name, tag="elemwise")


def layer_norm(
    data: Tensor,
    scale: Tensor,
    bias: Tensor | None = None,
    axis: int = -1,
    epsilon: float = 1e-5,
    name: str = "layer_norm",
) -> Tensor:
    """``(x - mean) / sqrt(var + epsilon) * scale (+ bias)``, the mean and the (biased) variance
    over the axes from ``axis`` to the last (ONNX's ``LayerNormalization``); ``scale`` and
    ``bias`` broadcast to those axes. Three stages: the sum and the sum of squared deviations
    from the mean (reductions, one value a row: stages ``{name}_sum`` and ``{name}_squares``),
    then each element."""
    for t in (data, scale, *([bias] if bias is not None else [])):
        if not isinstance(t, Tensor):
            raise ComputeError(f"{name}: the operands must be tensors, got {t!r}")
    if not isinstance(axis, int) or not -data.ndim <= axis < data.ndim:
        raise ComputeError(f"{name}: axis {axis!r} is not an axis of '{data.name}' {data.shape}")
    axis %= data.ndim
    rows, inner = data.shape[:axis] or (1,), data.shape[axis:]
    for t in (scale, *([bias] if bias is not None else [])):
        if t.ndim > len(inner) or broadcast_shape(inner, t.shape, name) != tuple(inner):
            raise ComputeError(f"{name}: '{t.name}' {t.shape} does not broadcast to {inner}")
    count = const(float(math.prod(inner)), data.dtype)

    def at(row: Sequence[Any], ks: Sequence[Any]) -> tuple[Any, ...]:
        return (*row, *ks) if axis else tuple(ks)

    def key(i: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(i[:axis]) if axis else (0,)

    def total(value: Callable[[Sequence[Any], Sequence[Any]], Any], what: str) -> Tensor:
        ks = [reduce_axis((0, n), name=f"k{d}") for d, n in enumerate(inner)]
        return compute(rows, lambda *r: I.sum(value(r, ks), axis=ks), name=f"{name}_{what}")

    def mean(i: Sequence[Any]) -> Any:
        return sums[key(i)] / count

    sums = total(lambda r, ks: data[at(r, ks)], "sum")
    squares = total(lambda r, ks: _square(data[at(r, ks)] - mean(r)), "squares")
    eps = const(float(epsilon), data.dtype)

    def body(*i: Any) -> Any:
        std = I.sqrt(squares[key(i)] / count + eps)
        y = (data[i] - mean(i)) / std * _broadcast_load(scale, i)
        return y + _broadcast_load(bias, i) if bias is not None else y

    return compute(data.shape, body, name=name, tag="injective")


def _square(x: Any) -> Any:
    return x * x


def take(data: Tensor, indices: Tensor, axis: int = 0, name: str = "take") -> Tensor:
    """``data`` gathered along ``axis`` at ``indices`` (numpy's ``take``, ONNX's ``Gather``):
    the output's shape is ``data``'s with that axis replaced by ``indices``' shape. The indices
    hold integers (float32 where a network's tensors are: ``graph.Graph.feed``); a negative
    one counts from the end, one still out of range reads nothing and gives 0 (onnxruntime
    raises an error there)."""
    for t in (data, indices):
        if not isinstance(t, Tensor):
            raise ComputeError(f"{name}: the operands must be tensors, got {t!r}")
    if not 0 <= axis < data.ndim:
        raise ComputeError(f"{name}: axis {axis} is not an axis of {data.shape}")
    size, q = data.shape[axis], indices.ndim
    shape = (*data.shape[:axis], *indices.shape, *data.shape[axis + 1 :])

    def body(*i: Any) -> Any:
        at = indices[i[axis : axis + q]].astype("int32")
        at = I.if_then_else(E.Cmp("<", at, const(0, "int32")), at + size, at)
        inside = E.And(E.Cmp(">=", at, const(0, "int32")), E.Cmp("<", at, const(size, "int32")))
        row = I.max(I.min(at, const(size - 1, "int32")), const(0, "int32"))  # never outside
        value = data[(*i[:axis], row, *i[axis + q :])]
        return I.if_then_else(inside, value, const(0, data.dtype))

    return compute(shape, body, name=name, tag="injective")


def mod(a: Tensor, b: Tensor, fmod: bool = True, name: str = "mod") -> Tensor:
    """``fmod(a, b)`` (the sign of ``a``: C's, ONNX's ``fmod=1``), else the remainder with the
    sign of ``b`` (numpy's ``mod``, ONNX's ``fmod=0``): ``fmod`` plus ``b`` where it is
    nonzero and its sign differs from ``b``'s."""
    zero = const(0, a.dtype)

    def fn(x: Any, y: Any) -> Any:
        r = I.fmod(x, y)
        if fmod:
            return r
        below, above = E.Cmp("<", r, zero), E.Cmp(">", r, zero)
        differ = E.Or(E.And(below, E.Cmp(">", y, zero)), E.And(above, E.Cmp("<", y, zero)))
        return I.if_then_else(differ, r + y, r)

    return _binary(a, b, name, fn)


def tanh(data: Tensor, name: str = "tanh") -> Tensor:
    return compute(data.shape, lambda *i: I.tanh(data[i]), name=name, tag="elemwise")


def _hard_gate(x: Any, alpha: float, beta: float, dtype: str) -> Any:
    """``max(0, min(1, alpha * x + beta))``."""
    lo, hi = const(0, dtype), const(1, dtype)
    return I.min(I.max(x * const(float(alpha), dtype) + const(float(beta), dtype), lo), hi)


def hard_sigmoid(
    data: Tensor, alpha: float = 0.2, beta: float = 0.5, name: str = "hard_sigmoid"
) -> Tensor:
    """``max(0, min(1, alpha * x + beta))`` (ONNX's ``HardSigmoid``)."""
    return compute(
        data.shape,
        lambda *i: _hard_gate(data[i], alpha, beta, data.dtype),
        name=name,
        tag="elemwise",
    )


def hard_swish(data: Tensor, name: str = "hard_swish") -> Tensor:
    """``x * hard_sigmoid(x, 1/6, 1/2)`` (ONNX's ``HardSwish``, MobileNet-v3's)."""
    return compute(
        data.shape,
        lambda *i: data[i] * _hard_gate(data[i], 1.0 / 6.0, 0.5, data.dtype),
        name=name,
        tag="elemwise",
    )


def leaky_relu(data: Tensor, alpha: float = 0.01, name: str = "leaky_relu") -> Tensor:
    """``x`` where ``x >= 0``, else ``alpha * x`` (ONNX's ``LeakyRelu``)."""
    a = const(float(alpha), data.dtype)
    zero = const(0, data.dtype)
    return compute(
        data.shape,
        lambda *i: I.if_then_else(data[i] >= zero, data[i], data[i] * a),
        name=name,
        tag="elemwise",
    )


def softmax(data: Tensor, axis: int = -1, name: str = "softmax", parts: int = 1) -> Tensor:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``.

    With ``parts > 1`` the max and the sum are each two reductions: ``parts`` partial ones
    (stages ``softmax_max_part`` and ``softmax_sum_part``, the part index their last axis; part
    ``j`` takes elements ``j, j + parts, ...``), then over the parts, so that a schedule can
    give each part its own work-item."""
    if not isinstance(data, Tensor):
        raise ComputeError(f"{name}: expected a tensor, got {data!r}")
    if not isinstance(axis, int) or not -data.ndim <= axis < data.ndim:
        raise ComputeError(f"{name}: axis {axis!r} is not an axis of '{data.name}' {data.shape}")
    if not isinstance(parts, int) or parts < 1:
        raise ComputeError(f"{name}: parts must be a positive int, got {parts!r}")
    axis %= data.ndim
    rest = data.shape[:axis] + data.shape[axis + 1 :] or (1,)
    n = data.shape[axis]

    def at(idx: Sequence[Any], k: Any) -> tuple[Any, ...]:
        return (*idx[:axis], k, *idx[axis:]) if data.ndim > 1 else (k,)

    def row(idx: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(idx[:axis]) + tuple(idx[axis + 1 :]) if data.ndim > 1 else (0,)

    def reduce(what: str, value: Any) -> Tensor:
        """``what`` (max or sum) of ``value(index along axis)`` per row, in one or two steps."""
        if parts == 1:
            k = reduce_axis((0, n), name="k")
            fn = I.max if what == "max" else I.sum
            return compute(rest, lambda *i: fn(value(i, k), axis=k), name=f"{name}_{what}")
        steps = -(-n // parts)
        k = reduce_axis((0, steps), name="k")

        def part(*i: Any) -> Any:
            j, idx = i[-1], i[:-1]
            at_k = I.min(k * parts + j, n - 1)  # a repeated last element leaves a max alone
            if what == "max":
                return I.max(value(idx, at_k), axis=k)
            inside = k * parts + j < n
            return I.sum(I.if_then_else(inside, value(idx, at_k), const(0, data.dtype)), axis=k)

        p = compute((*rest, parts), part, name=f"{name}_{what}_part")
        j = reduce_axis((0, parts), name="j")
        fn = I.max if what == "max" else I.sum
        return compute(rest, lambda *i: fn(p[(*i, j)], axis=j), name=f"{name}_{what}")

    mx = reduce("max", lambda i, k: data[at(i, k)])
    ex = compute(data.shape, lambda *i: I.exp(data[i] - mx[row(i)]), name=f"{name}_exp")
    total = reduce("sum", lambda i, k: ex[at(i, k)])
    return compute(data.shape, lambda *i: ex[i] / total[row(i)], name=name, tag="softmax")


@dataclass(frozen=True)
class SoftmaxShape:
    """A softmax along the last axis of a ``rows x cols`` tensor (a tuning task's shape)."""

    rows: int
    cols: int

    @property
    def flop(self) -> int:
        return 4 * self.rows * self.cols

    def astuple(self) -> tuple[int, ...]:
        return (self.rows, self.cols)


def softmax_ref(x: NDArray[Any], axis: int = -1) -> NDArray[np.float64]:
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


EPILOGUES = {"relu": relu, "sigmoid": sigmoid, "relu6": relu6}
EPILOGUE_KINDS = ("bias", "relu", "sigmoid", "relu6", "add")


def epilogue(
    data: Tensor, kinds: Sequence[str], bias_axis: int = -1
) -> tuple[Tensor, list[Tensor]]:
    """Apply a chain like ``("bias", "relu")`` to ``data``; returns ``(out, extra_inputs)``:
    a placeholder ``bias`` for ``"bias"``, ``residual`` (``data``'s shape) for ``"add"``."""
    out, extra = data, list[Tensor]()
    for kind in kinds:
        if kind == "bias":
            out, b = bias_add(out, axis=bias_axis)
            extra.append(b)
        elif kind == "add":
            r = placeholder(data.shape, data.dtype, name="residual")
            out = add(out, r, name="residual_add")
            extra.append(r)
        elif kind in EPILOGUES:
            out = EPILOGUES[kind](out)
        else:
            raise ComputeError(f"unknown epilogue '{kind}'; use {', '.join(EPILOGUE_KINDS)}")
    return out, extra


def epilogue_ref(
    ref: NDArray[Any], kinds: Sequence[str], extra: Sequence[NDArray[Any]], bias_axis: int = -1
) -> NDArray[np.float64]:
    """``epilogue``'s chain in numpy: ``extra`` holds its inputs in chain order."""
    out, it = np.asarray(ref, np.float64), iter(extra)
    for kind in kinds:
        if kind == "bias":
            shape = [1] * out.ndim
            shape[bias_axis] = -1
            out = out + np.asarray(next(it), np.float64).reshape(shape)
        elif kind == "add":
            out = out + np.asarray(next(it), np.float64)
        elif kind == "relu":
            out = np.maximum(out, 0)
        elif kind == "relu6":
            out = np.clip(out, 0, 6)
        elif kind == "sigmoid":
            out = 1 / (1 + np.exp(-out))
        else:
            raise ComputeError(f"unknown epilogue '{kind}'; use {', '.join(EPILOGUE_KINDS)}")
    return out
