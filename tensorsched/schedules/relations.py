"""The relations a stage's primitives record between its iteration variables (``Split``,
``Fuse``), and the two propagations over them: extents down (``pass_down``), values up
(``pass_up``)."""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.dtype import INT32_MAX, INT64_MAX
from ..ir.simplify import Extent, ext_ceil_div, ext_equal, ext_mul
from ..ir.tensor import IterVar

if TYPE_CHECKING:  # only for the annotations: schedule.py imports this module
    from .schedule import Stage


# What a split does with the iterations past its parent's extent when the factor does not
# divide it (Halide's tail strategies): "guard" skips them with an if; "shift" moves the last
# tile inwards so that it ends at the extent (its first elements are computed twice, so the
# tile is guard-free); "peel" runs the last outer iteration as its own copy of the body, so the
# others are guard-free (the ``peel_tail`` pass does it; the split only marks the outer loop).
TAILS = ("guard", "shift", "peel")


@dataclass(frozen=True, eq=False)
class Split:
    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: Extent | None  # an int, or an expression of size variables
    nparts: Extent | None
    tail: str = "guard"


@dataclass(frozen=True, eq=False)
class Singleton:
    """A loop of one iteration (``fuse()`` of no axes), outside the others."""

    iv: IterVar


@dataclass(frozen=True, eq=False)
class Fuse:
    outer: IterVar
    inner: IterVar
    fused: IterVar


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _ceil_div(a: Extent, b: Extent) -> Extent:
    """``ceil(a / b)`` of extents: ``ceil_div`` on ints, else the simplified expression."""
    if isinstance(a, int) and isinstance(b, int):
        return ceil_div(a, b)
    return ext_ceil_div(a, b)


def pass_down(
    stage: Stage,
    root_extents: Mapping[IterVar, Extent],
    tighten: bool = True,
    private: Container[IterVar] = (),
) -> dict[IterVar, Extent]:
    """Extents of every iter var of ``stage`` from the extents of its root axes.

    As TVM's bound inference does, a split's factor (or nparts) larger than its parent's
    extent gives the inner (outer) loop the parent's extent, unless that loop (or a loop split
    or fused from it) is bound to a thread: a work-group keeps the size it was split for (the
    split's guard skips the extra work-items). A bound factor beyond ``INT32_MAX`` is the
    parent's extent too: such a loop would only spin through guarded iterations. Extents may
    be symbolic (expressions of size variables); a symbolic extent is never tightened.
    ``tighten=False`` keeps every factor as given (for a primitive that runs before the
    stage's bindings are known: ``rfactor``). ``private``: bound loops that run as loops (a
    private stage's bindings, ``bound.private_binding``), tightened as unbound ones are.
    """
    ext = dict(root_extents)
    for rel in stage.relations:
        if isinstance(rel, Split):
            e = ext[rel.parent]
            if rel.factor is not None:
                inner = _clamped(
                    rel.factor, e, not tighten or _bound_to_thread(stage, rel.inner, private)
                )
                ext[rel.inner], ext[rel.outer] = inner, _ceil_div(e, inner)
            else:
                assert rel.nparts is not None
                outer = _clamped(
                    rel.nparts, e, not tighten or _bound_to_thread(stage, rel.outer, private)
                )
                ext[rel.outer], ext[rel.inner] = outer, _ceil_div(e, outer)
        elif isinstance(rel, Singleton):
            ext[rel.iv] = 1
        elif isinstance(rel, Fuse):
            fused = ext[rel.fused] = ext_mul(ext[rel.outer], ext[rel.inner])
            if isinstance(fused, int) and fused > INT64_MAX:
                raise ScheduleError(
                    "fuse",
                    stage,
                    f"the fused loop would have {ext[rel.fused]} iterations, more than int64 "
                    "(the widest index type) can count; fuse fewer or shorter loops",
                    rel.fused,
                )
    return ext


def _clamped(n: Extent, extent: Extent, bound: bool) -> Extent:
    """A split's factor or nparts ``n`` over a parent of ``extent`` (see ``pass_down``)."""
    if isinstance(n, int) and isinstance(extent, int) and (n > INT32_MAX or not bound):
        return min(n, extent)
    return n


def _bound_to_thread(stage: Stage, iv: IterVar, private: Container[IterVar] = ()) -> bool:
    """Whether ``iv``, or a loop split or fused from it, is bound to a thread axis."""
    todo, seen = [iv], set()
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        a = stage.attrs.get(x)
        if a is not None and a.bind is not None and x not in private:
            return True
        for rel in stage.relations:
            if isinstance(rel, Split) and rel.parent is x:
                todo += [rel.outer, rel.inner]
            elif isinstance(rel, Fuse) and x in (rel.outer, rel.inner):
                todo.append(rel.fused)
    return False


def pass_up(
    stage: Stage,
    ext: Mapping[IterVar, Extent],
    leaf_value: Callable[[IterVar], E.Expr] | None = None,
) -> tuple[dict[IterVar, E.Expr], list[tuple[IterVar, E.Expr]]]:
    """Values of all iter vars in terms of the leaf vars, and the guards uneven splits need.

    Returns ``(values, guards)``: ``values[iv]`` is an expression of leaf variables in
    ``[0, ext[iv])`` when the guards hold; each guard is ``(parent, value < extent)``. A split
    with ``tail="shift"`` over a parent at least as long as its inner loop needs no guard: its
    last tile starts at ``extent - inner`` instead (``shift_is_safe`` says when that is legal).
    """
    values: dict[IterVar, E.Expr] = {
        iv: (leaf_value(iv) if leaf_value else iv.var) for iv in stage.leaf_iter_vars
    }
    guards: list[tuple[IterVar, E.Expr]] = []
    for rel in reversed(stage.relations):
        if isinstance(rel, Split):
            f, n = ext[rel.inner], ext[rel.parent]
            uneven = not ext_equal(ext_mul(ext[rel.outer], f), n)
            start = values[rel.outer] * f
            if uneven and rel.tail == "shift" and _fits(f, n):
                assert isinstance(n, int) and isinstance(f, int)  # _fits says so
                shift_is_safe(stage, rel)
                start = E.BinOp("min", start, E.IntImm(n - f))
                uneven = False
            values[rel.parent] = start + values[rel.inner]
            if uneven:
                guards.append((rel.parent, values[rel.parent] < n))
        elif isinstance(rel, Fuse):
            values[rel.outer] = values[rel.fused] // ext[rel.inner]
            values[rel.inner] = values[rel.fused] % ext[rel.inner]
    return values, guards[::-1]


def _fits(f: Extent, n: Extent) -> bool:
    """Whether a tile of ``f`` fits in an extent ``n`` (both constant)."""
    return isinstance(n, int) and isinstance(f, int) and n >= f


def shift_is_safe(stage: Stage, rel: Split) -> None:
    """Raise unless shifting ``rel``'s last tile inwards recomputes whole output points: the
    overlap is computed twice, which is harmless only when each computation starts from the
    reduction's init, i.e. no reduction loop runs outside the split's outer loop."""
    leaves = stage.leaf_iter_vars
    outer = _outermost_leaf(stage, rel.outer)
    attrs = stage.attrs.get(outer)
    if attrs is not None and attrs.bind is not None:
        return  # a work-item index: outside every loop of the kernel
    before = leaves[: leaves.index(outer)]
    red = [iv for iv in before if iv.kind == "reduce"]
    if red:
        raise ScheduleError(
            "split",
            stage,
            f"tail='shift' on '{rel.parent.var.name}' needs its outer loop outside every "
            f"reduction loop, but '{red[0].var.name}' runs outside it, so the shifted tile's "
            "overlap would be accumulated twice; reorder the reduction inside, or use "
            "tail='peel' or 'guard'",
            rel.outer,
        )


def _outermost_leaf(stage: Stage, iv: IterVar) -> IterVar:
    """The leaf that ``iv``'s loop became (itself, or the outermost part of its splits and
    fuses)."""
    while iv not in stage.leaf_iter_vars:
        for rel in stage.relations:
            if isinstance(rel, Split) and rel.parent is iv:
                iv = rel.outer
                break
            if isinstance(rel, Fuse) and iv in (rel.outer, rel.inner):
                iv = rel.fused
                break
        else:  # pragma: no cover - every iter var reaches a leaf
            raise AssertionError(iv)
    return iv
