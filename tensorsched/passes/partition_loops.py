"""Loop partitioning (TVM's ``partition_const_loop``): an innermost serial loop of constant
range whose body compares its index with constants (``i >= 1``, ``i < 15``) is split at those
constants into loops over each of which every such comparison has one value; the simplifier
then folds them. A padded copy's row, ``out[i] = (i >= 1 && i < 15 ? in[i - 1] : 0)``, becomes
a store of zero, a test-free copy (which the OpenCL compiler can vectorize) and a store of
zero."""

from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.visitor import StmtMutator, Visitor, substitute

MAX_PIECES = 4  # more cuts than this: the body would be copied too often; the loop stays


def _cuts(body: S.Stmt, var: E.Var) -> set[int]:
    """Where the truth of a comparison ``var <op> constant`` inside ``body`` changes (the
    first index at which it differs from the index before)."""
    cuts: set[int] = set()

    class _V(Visitor):
        def visit_Cmp(self, c: E.Cmp) -> None:
            op, a, b = c.op, c.a, c.b
            if b == var and isinstance(a, E.IntImm):  # 3 < i  is  i > 3
                op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
                a, b = b, a
            if a == var and isinstance(b, E.IntImm):
                n = int(b.value)
                if op in ("<", ">="):
                    cuts.add(n)
                elif op in ("<=", ">"):
                    cuts.add(n + 1)
                elif op in ("==", "!="):
                    cuts.update((n, n + 1))
            self.generic_visit(c)

        def visit_For(self, f: S.For) -> None:
            raise _Skip

        visit_Allocate = visit_ThreadExtent = visit_Barrier = visit_For

    _V().visit(body)
    return cuts


class _Skip(Exception):
    """The body holds a loop, an allocation, a barrier or a launch: not partitioned."""


class _Partition(StmtMutator):
    def visit_For(self, f: S.For) -> S.Stmt:
        body = self.visit(f.body)
        loop = f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)
        lo, n = getattr(f.min, "value", None), getattr(f.extent, "value", None)
        if f.kind != "serial" or lo is None or n is None:
            return loop
        try:
            cuts = sorted(c for c in _cuts(body, f.var) if lo < c < lo + n)
        except _Skip:
            return loop
        if not cuts or len(cuts) + 1 > MAX_PIECES:
            return loop
        bounds = [lo, *cuts, lo + n]
        pieces = []
        for a, b in zip(bounds, bounds[1:]):
            piece = substitute(body, {f.var: f.var + E.IntImm(a)}) if a else body
            pieces.append(S.For(f.var, E.IntImm(0), E.IntImm(b - a), f.kind, piece, f.pragmas))
        return S.seq(*pieces)


def partition_loops(stmt: S.Stmt) -> S.Stmt:
    """Requires: loops start at constants. Guarantees: an innermost serial loop of constant
    range whose body compares its index with constants (at most ``MAX_PIECES - 1`` distinct
    cuts) is replaced by consecutive loops from 0, over each of which those comparisons are
    constant (folded by the next ``simplify``)."""
    return _Partition().visit(stmt)
