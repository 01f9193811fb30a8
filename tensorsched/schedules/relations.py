"""The relations a stage's primitives record between its iteration variables (``Split``,
``Fuse``), and the two propagations over them: extents down (``pass_down``), values up
(``pass_up``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.dtype import INT32_MAX, INT64_MAX
from ..ir.tensor import IterVar

if TYPE_CHECKING:  # only for the annotations: schedule.py imports this module
    from .schedule import Stage


@dataclass(frozen=True, eq=False)
class Split:
    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int | None
    nparts: int | None


@dataclass(frozen=True, eq=False)
class Fuse:
    outer: IterVar
    inner: IterVar
    fused: IterVar


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def pass_down(stage: Stage, root_extents: Mapping[IterVar, int]) -> dict[IterVar, int]:
    """Extents of every iter var of ``stage`` from the extents of its root axes.

    A split's factor (or nparts) larger than its parent's extent keeps TVM's meaning: the
    inner (outer) loop has that many iterations and the split's guard skips the extra ones, a
    shape that templates rely on (fixed work-group sizes, vector widths). Beyond ``INT32_MAX``
    it is the parent's extent instead: such a loop would only spin through guarded iterations.
    """
    ext = dict(root_extents)
    for rel in stage.relations:
        if isinstance(rel, Split):
            e = ext[rel.parent]
            if rel.factor is not None:
                inner = _clamped(rel.factor, e)
                ext[rel.inner], ext[rel.outer] = inner, ceil_div(e, inner)
            else:
                assert rel.nparts is not None
                outer = _clamped(rel.nparts, e)
                ext[rel.outer], ext[rel.inner] = outer, ceil_div(e, outer)
        elif isinstance(rel, Fuse):
            ext[rel.fused] = ext[rel.outer] * ext[rel.inner]
            if ext[rel.fused] > INT64_MAX:
                raise ScheduleError(
                    "fuse",
                    stage,
                    f"the fused loop would have {ext[rel.fused]} iterations, more than int64 "
                    "(the widest index type) can count; fuse fewer or shorter loops",
                    rel.fused,
                )
    return ext


def _clamped(n: int, extent: int) -> int:
    """A split's factor or nparts ``n`` over a parent of ``extent`` (see ``pass_down``)."""
    return min(n, extent) if n > INT32_MAX else n


def pass_up(
    stage: Stage,
    ext: Mapping[IterVar, int],
    leaf_value: Callable[[IterVar], E.Expr] | None = None,
) -> tuple[dict[IterVar, E.Expr], list[tuple[IterVar, E.Expr]]]:
    """Values of all iter vars in terms of the leaf vars, and the guards uneven splits need.

    Returns ``(values, guards)``: ``values[iv]`` is an expression of leaf variables in
    ``[0, ext[iv])`` when the guards hold; each guard is ``(parent, value < extent)``.
    """
    values: dict[IterVar, E.Expr] = {
        iv: (leaf_value(iv) if leaf_value else iv.var) for iv in stage.leaf_iter_vars
    }
    guards: list[tuple[IterVar, E.Expr]] = []
    for rel in reversed(stage.relations):
        if isinstance(rel, Split):
            values[rel.parent] = values[rel.outer] * ext[rel.inner] + values[rel.inner]
            if ext[rel.outer] * ext[rel.inner] != ext[rel.parent]:
                guards.append((rel.parent, values[rel.parent] < ext[rel.parent]))
        elif isinstance(rel, Fuse):
            values[rel.outer] = values[rel.fused] // ext[rel.inner]
            values[rel.inner] = values[rel.fused] % ext[rel.inner]
    return values, guards[::-1]
