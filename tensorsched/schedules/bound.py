"""Bound inference: how many iterations each loop has, and which region each stage computes.

- ``pass_down``: extents flow from root axes down the split/fuse relations to the leaves.
- ``pass_up``: the value of every root axis, as an expression of the leaf loop variables.
- ``infer_region``: the region of a producer that a ``compute_at`` stage must compute per
  iteration of the consumer loop it is attached to: the consumer's accesses are evaluated with
  the loops inside the attach point relaxed over their whole range (and, depending on the
  producer's storage scope, the work-item indices too, so that a ``"shared"`` tile covers the
  whole work-group).
"""

from __future__ import annotations

from ..errors import LoweringError
from ..ir import expr as E
from ..ir.simplify import Simplifier, const_bound, simplify
from .schedule import Fuse, Split

SCOPE_RANK = {"global": 0, "shared": 1, "local": 2}


def tag_rank(tag):
    return 0 if tag.startswith("blockIdx") else 1


def ceil_div(a, b):
    return -(-a // b)


def pass_down(stage, root_extents):
    """Extents of every iter var of ``stage`` from the extents of its root axes."""
    ext = dict(root_extents)
    for rel in stage.relations:
        if isinstance(rel, Split):
            e = ext[rel.parent]
            if rel.factor is not None:
                ext[rel.inner], ext[rel.outer] = rel.factor, ceil_div(e, rel.factor)
            else:
                ext[rel.outer], ext[rel.inner] = rel.nparts, ceil_div(e, rel.nparts)
        elif isinstance(rel, Fuse):
            ext[rel.fused] = ext[rel.outer] * ext[rel.inner]
    return ext


def pass_up(stage, ext, leaf_value=None):
    """Values of all iter vars in terms of the leaf vars, and the guards uneven splits need.

    Returns ``(values, guards)``: ``values[iv]`` is an expression of leaf variables in
    ``[0, ext[iv])`` when the guards hold; each guard is a condition ``value < extent``.
    """
    values = {iv: (leaf_value(iv) if leaf_value else iv.var) for iv in stage.leaf_iter_vars}
    guards = []
    for rel in reversed(stage.relations):
        if isinstance(rel, Split):
            values[rel.parent] = values[rel.outer] * ext[rel.inner] + values[rel.inner]
            if ext[rel.outer] * ext[rel.inner] != ext[rel.parent]:
                guards.append((rel.parent, values[rel.parent] < ext[rel.parent]))
        elif isinstance(rel, Fuse):
            values[rel.outer] = values[rel.fused] // ext[rel.inner]
            values[rel.inner] = values[rel.fused] % ext[rel.inner]
    return values, guards[::-1]


class Interval:
    """Evaluate symbolic bounds ``(lo, hi)`` of integer expressions where some variables are
    relaxed over ``[0, extent)`` and the others stay as themselves."""

    def __init__(self, relaxed):
        self.relaxed = relaxed  # Var -> extent
        self.simp = Simplifier()

    def _has_relaxed(self, e):
        from ..ir.visitor import free_vars

        return any(v in self.relaxed for v in free_vars(e))

    def bounds(self, e):
        lin = self.simp.lin(e)
        lo, hi = E.IntImm(lin.const), E.IntImm(lin.const)
        for atom, k in lin.terms.items():
            ab = self._atom(atom)
            if ab is None:
                return None
            alo, ahi = ab
            if k < 0:
                alo, ahi = ahi, alo
            lo, hi = lo + alo * k, hi + ahi * k
        return simplify(lo), simplify(hi)

    def _atom(self, a):
        if isinstance(a, E.Var):
            if a in self.relaxed:
                return E.IntImm(0), E.IntImm(self.relaxed[a] - 1)
            return a, a
        if not self._has_relaxed(a):
            return a, a
        if isinstance(a, E.BinOp) and isinstance(a.b, E.IntImm) and a.b.value > 0:
            c = a.b.value
            inner = self.bounds(a.a)
            if inner is None:
                return None
            if a.op == "//":
                return simplify(inner[0] // c), simplify(inner[1] // c)
            if a.op == "%":
                return E.IntImm(0), E.IntImm(c - 1)
        if isinstance(a, E.BinOp) and a.op in ("min", "max"):
            ba, bb = self.bounds(a.a), self.bounds(a.b)
            if ba is None or bb is None:
                return None
            return (simplify(E.BinOp(a.op, ba[0], bb[0])), simplify(E.BinOp(a.op, ba[1], bb[1])))
        return None


def union_bound(a, b, op):
    """min (op='min') or max of two symbolic bounds, folded when their difference is constant."""
    d = simplify(a - b)
    if isinstance(d, E.IntImm):
        return a if (d.value <= 0) == (op == "min") else b
    return E.BinOp(op, a, b)


def infer_region(producer_shape, accesses, relaxed, var_ranges, name):
    """The region ``[(min_expr, extent)]`` of a producer covering all ``accesses`` (lists of
    index expressions) with ``relaxed`` variables spanning their ranges.

    A dimension whose bounds cannot be derived, or whose extent is not bounded by a constant,
    falls back to the whole dimension (correct, just less local).
    """
    iv = Interval(relaxed)
    region = []
    for d, dim in enumerate(producer_shape):
        lo = hi = None
        for idx in accesses:
            b = iv.bounds(idx[d])
            if b is None:
                lo = None
                break
            lo = b[0] if lo is None else union_bound(lo, b[0], "min")
            hi = b[1] if hi is None else union_bound(hi, b[1], "max")
        if lo is None:
            region.append((E.IntImm(0), dim))
            continue
        ext = simplify(hi - lo + 1, var_ranges)
        if not isinstance(ext, E.IntImm):
            ub = const_bound(ext, var_ranges)[1]
            if ub is None:
                region.append((E.IntImm(0), dim))
                continue
            ext = E.IntImm(ub)
        if ext.value >= dim:
            region.append((E.IntImm(0), dim))
        elif ext.value <= 0:
            raise LoweringError(
                f"bound inference: stage '{name}' would compute an empty region in dimension {d}"
            )
        else:
            region.append((simplify(lo, var_ranges), ext.value))
    return region
