"""Reductions over any axes of a tensor (ONNX's ``ReduceMean`` / ``ReduceSum`` /
``ReduceMax``), with their numpy reference.

``reduce(data, kind, axes, keepdims)`` is one compute stage whose body is one reduction over
every axis in ``axes``: a mean sums ``x * (1 / n)``, so no second stage divides. A schedule
binds the output's axes and leaves the reduction a loop in each work-item
(``templates.injective.schedule_injective`` does).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ComputeError
from ..ir import intrin as I
from ..ir.expr import const
from ..ir.tensor import Tensor, compute, reduce_axis

KINDS = ("mean", "sum", "max")


def _check_axes(data: Tensor, kind: str, axes: Sequence[int], name: str) -> tuple[int, ...]:
    if not isinstance(data, Tensor):
        raise ComputeError(f"{name}: expected a tensor, got {data!r}")
    if kind not in KINDS:
        raise ComputeError(f"{name}: kind {kind!r} must be one of {', '.join(KINDS)}")
    out = tuple(sorted(a % data.ndim for a in axes if -data.ndim <= a < data.ndim))
    if len(out) != len(axes) or len(set(out)) != len(out) or not out:
        raise ComputeError(
            f"{name}: axes {tuple(axes)} must be distinct axes of '{data.name}' {data.shape}"
        )
    return out


def reduce(
    data: Tensor, kind: str, axes: Sequence[int], keepdims: bool = True, name: str = "reduce"
) -> Tensor:
    """The ``kind`` (``mean``, ``sum`` or ``max``) of ``data`` over ``axes``; reduced axes
    stay as size 1 with ``keepdims``, else they are dropped."""
    red = _check_axes(data, kind, axes, name)
    ks = {a: reduce_axis((0, data.shape[a]), name=f"k{a}") for a in red}
    if keepdims:
        shape = tuple(1 if i in ks else d for i, d in enumerate(data.shape))
    else:
        shape = tuple(d for i, d in enumerate(data.shape) if i not in ks)
    if not shape:
        raise ComputeError(f"{name}: every axis reduced without keepdims; keep the dims")
    scale = const(1.0 / math.prod(data.shape[a] for a in red), data.dtype)
    axes_list = list(ks.values())

    def body(*i: Any) -> Any:
        it = iter(i)
        idx = []
        for d in range(data.ndim):
            if d in ks:
                idx.append(ks[d])
                if keepdims:
                    next(it)  # the kept size-1 axis
            else:
                idx.append(next(it))
        x = data[tuple(idx)]
        if kind == "max":
            return I.max(x, axis=axes_list)
        return I.sum(x * scale if kind == "mean" else x, axis=axes_list)

    return compute(shape, body, name=name, tag="reduce")


def reduce_ref(
    x: NDArray[Any], kind: str, axes: Sequence[int], keepdims: bool = True
) -> NDArray[np.float64]:
    """``reduce`` in numpy (float64)."""
    v, ax = np.asarray(x, np.float64), tuple(axes)
    if kind == "max":
        return np.asarray(v.max(axis=ax, keepdims=keepdims))
    total = v.sum(axis=ax, keepdims=keepdims)
    return np.asarray(total / math.prod(v.shape[a] for a in ax) if kind == "mean" else total)
