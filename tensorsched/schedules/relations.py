"""The relations a stage's primitives record between its iteration variables (``Split``,
``Fuse``), and the two propagations over them: extents down (``pass_down``), values up
(``pass_up``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..ir import expr as E
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
    """Extents of every iter var of ``stage`` from the extents of its root axes."""
    ext = dict(root_extents)
    for rel in stage.relations:
        if isinstance(rel, Split):
            e = ext[rel.parent]
            if rel.factor is not None:
                ext[rel.inner], ext[rel.outer] = rel.factor, ceil_div(e, rel.factor)
            else:
                assert rel.nparts is not None
                ext[rel.outer], ext[rel.inner] = rel.nparts, ceil_div(e, rel.nparts)
        elif isinstance(rel, Fuse):
            ext[rel.fused] = ext[rel.outer] * ext[rel.inner]
    return ext


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
