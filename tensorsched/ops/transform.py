"""Injective operators that move elements without arithmetic: ``flatten``, ``reshape``,
``transpose``, ``strided_slice`` and ``concat``, with row-major (C order) semantics as numpy
and ONNX have them. Each is one compute stage; a consumer may inline it, or
``templates.injective`` schedules it as its own kernel."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..errors import ComputeError
from ..ir import intrin as I
from ..ir.tensor import Tensor, compute


def _check(data: Any, where: str) -> Tensor:
    if not isinstance(data, Tensor):
        raise ComputeError(f"{where}: expected a tensor, got {data!r}")
    return data


def _unravel(flat: Any, shape: Sequence[int]) -> list[Any]:
    """The index into ``shape`` of the row-major position ``flat``."""
    idx, stride = [], math.prod(shape)
    for d in shape:
        stride //= d
        idx.append(flat // stride % d if stride > 1 else flat % d)
    idx[0] = flat // math.prod(shape[1:]) if len(shape) > 1 else idx[0]
    return idx


def reshape(data: Tensor, shape: Sequence[int], name: str = "reshape") -> Tensor:
    """``data`` viewed with ``shape`` (one entry may be -1, inferred); same element order."""
    data = _check(data, name)
    dims = list(shape)
    if sum(d == -1 for d in dims) > 1 or any(
        not isinstance(d, int) or d == 0 or d < -1 for d in dims
    ):
        raise ComputeError(
            f"{name}: shape {tuple(shape)} must be positive ints with at most one -1 "
            "(resolve ONNX's 0 entries to the input's dims first)"
        )
    size = math.prod(data.shape)
    known = math.prod(d for d in dims if d != -1)
    if -1 in dims:
        if size % known:
            raise ComputeError(
                f"{name}: {size} elements of '{data.name}' do not fill {tuple(shape)}"
            )
        dims[dims.index(-1)] = size // known
    if math.prod(dims) != size:
        raise ComputeError(
            f"{name}: '{data.name}' {data.shape} has {size} elements, shape {tuple(dims)} "
            f"has {math.prod(dims)}"
        )
    out_strides = [math.prod(dims[i + 1 :]) for i in range(len(dims))]

    def body(*i: Any) -> Any:
        flat = sum((x * s if s > 1 else x for x, s in zip(i, out_strides)), start=0)
        return data[tuple(_unravel(flat, data.shape))]

    return compute(tuple(dims), body, name=name, tag="injective")


def transpose(data: Tensor, axes: Sequence[int], name: str = "transpose") -> Tensor:
    """``data`` with its axes permuted: output axis ``i`` is input axis ``axes[i]`` (numpy's
    ``transpose``; a channels-last layout, a repacked kernel)."""
    data = _check(data, name)
    order = list(axes)
    if sorted(order) != list(range(data.ndim)):
        raise ComputeError(
            f"{name}: axes {tuple(axes)} are not a permutation of the {data.ndim} axes of "
            f"'{data.name}'"
        )

    def body(*i: Any) -> Any:
        src: list[Any] = [0] * data.ndim
        for out_axis, a in enumerate(order):
            src[a] = i[out_axis]
        return data[tuple(src)]

    return compute(tuple(data.shape[a] for a in order), body, name=name, tag="injective")


def strided_slice(
    data: Tensor, begin: Sequence[int], strides: Sequence[int], shape: Sequence[int],
    name: str = "slice",
) -> Tensor:  # fmt: skip
    """Output element ``i`` along axis ``d`` is input element ``begin[d] + i * strides[d]``
    (a stride may be negative: the axis read backwards); ``shape`` is the output's, each
    index it reaches inside the input (ONNX's ``Slice`` once its starts and ends are
    resolved: ``graph.slice_plan``)."""
    data = _check(data, name)
    b, st, sh = list(begin), list(strides), list(shape)
    if not len(b) == len(st) == len(sh) == data.ndim or not all(
        isinstance(v, int) for v in b + st + sh
    ):
        raise ComputeError(
            f"{name}: begin {tuple(b)}, strides {tuple(st)} and shape {tuple(sh)} must be "
            f"{data.ndim} ints each, one per axis of '{data.name}'"
        )
    for d, (first, step, n, dim) in enumerate(zip(b, st, sh, data.shape)):
        last = first + (n - 1) * step
        if step == 0 or n < 1 or not (0 <= first < dim and 0 <= last < dim):
            raise ComputeError(
                f"{name}: axis {d} of '{data.name}' {data.shape}: {n} elements from {first} "
                f"by {step} leave the axis"
            )

    def body(*i: Any) -> Any:
        return data[tuple(x * s + f if n > 1 else f for x, s, f, n in zip(i, st, b, sh))]

    return compute(tuple(sh), body, name=name, tag="injective")


def flatten(data: Tensor, axis: int = 1, name: str = "flatten") -> Tensor:
    """``data`` as 2-d: the dims before ``axis`` form the rows (ONNX's ``Flatten``)."""
    data = _check(data, name)
    if not isinstance(axis, int) or not -data.ndim <= axis <= data.ndim:
        raise ComputeError(f"{name}: axis {axis!r} is not in -{data.ndim}..{data.ndim}")
    axis %= data.ndim + 1 if axis < 0 else data.ndim + 1
    rows = math.prod(data.shape[:axis])
    return reshape(data, (rows, math.prod(data.shape) // rows), name=name)


def concat(tensors: Sequence[Tensor], axis: int = 0, name: str = "concat") -> Tensor:
    """The tensors joined along ``axis``; every other dim must agree."""
    ts = [_check(t, name) for t in tensors] if isinstance(tensors, (list, tuple)) else []
    if not ts:
        raise ComputeError(f"{name}: give a non-empty list of tensors, got {tensors!r}")
    nd = ts[0].ndim
    if not isinstance(axis, int) or not -nd <= axis < nd:
        raise ComputeError(f"{name}: axis {axis!r} is not an axis of {nd}-d tensors")
    axis %= nd
    for t in ts[1:]:
        if (
            t.ndim != nd
            or t.shape[:axis] + t.shape[axis + 1 :] != ts[0].shape[:axis] + ts[0].shape[axis + 1 :]
        ):
            raise ComputeError(
                f"{name}: '{t.name}' {t.shape} does not match '{ts[0].name}' {ts[0].shape} "
                f"outside axis {axis}"
            )
    offsets = [0]
    for t in ts:
        offsets.append(offsets[-1] + t.shape[axis])
    shape = ts[0].shape[:axis] + (offsets[-1],) + ts[0].shape[axis + 1 :]

    def body(*i: Any) -> Any:
        def load(k: int) -> Any:
            # clamped, so an index meant for another input stays in bounds when evaluated
            j = I.max(I.min(i[axis] - offsets[k], ts[k].shape[axis] - 1), 0)
            return ts[k][(*i[:axis], j, *i[axis + 1 :])]

        value = load(len(ts) - 1)
        for k in range(len(ts) - 2, -1, -1):
            value = I.if_then_else(i[axis] < offsets[k + 1], load(k), value)
        return value

    return compute(shape, body, name=name, tag="injective")
