"""Loop peeling for ``split(..., tail="peel")``: the last iteration of the split's outer loop is
written out after the loop, so the iterations before it, whose tiles are whole, lose the
guards that an uneven split put around every element (the simplifier proves them true from
the shorter loop's range), and the peeled copy's guards fold to constants once its inner loops
are unrolled.

Allocations at the top of the loop's body (tiles computed at that loop) move out around both
copies. A loop whose tiles are to be double-buffered is peeled only after the
``double_buffer`` pass has restructured it (``peel_tail_late``): peeling first would hide the
pattern that pass rewrites; after it, the peeled iteration is the pipeline's last step, with
no load ahead and its reduction guarded, and the steps before it are guard-free.
"""

from __future__ import annotations

import dataclasses

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.visitor import RebaseBuffers, StmtMutator, Visitor, free_vars, substitute
from .simplify_stmt import simplify_stmt

PEEL_PRAGMA = "peel_tail"  # set on the outer loop by Stage.split(..., tail="peel")


class _Peel(StmtMutator):
    def __init__(self, late: bool) -> None:
        self.late = late  # after double_buffer: peel what was deferred
        self.peeled = 0

    def visit_For(self, f: S.For) -> S.Stmt:
        body = self.visit(f.body)
        pragmas = tuple(p for p in f.pragmas if p[0] != PEEL_PRAGMA)
        loop = S.For(f.var, f.min, f.extent, f.kind, body, pragmas)
        if len(pragmas) == len(f.pragmas):
            return f if body is f.body else loop
        n = getattr(f.extent, "value", None)
        wrappers, inner = _top_allocations(body)
        if not self.late and any(isinstance(w, S.AttrStmt) for w in wrappers):
            # tiles to double-buffer: peel after the double_buffer pass (keep the mark)
            return f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)
        if f.kind != "serial" or n is None or n < 2 or not _guarded_by(inner, f.var):
            return loop  # nothing to gain: no guard on this loop's index
        main = S.For(f.var, f.min, E.IntImm(n - 1), f.kind, inner, pragmas)
        last = _renewed(substitute(inner, {f.var: f.min + E.IntImm(n - 1)}))
        out = S.seq(main, last)
        for w in reversed(wrappers):
            out = dataclasses.replace(w, body=out)
        self.peeled += 1
        return out


def _renewed(stmt: S.Stmt) -> S.Stmt:
    """``stmt`` with the private arrays allocated inside it replaced by new ones of the same
    name (declared side by side with the loop's own where that loop of one step goes away,
    the code generator names them apart, as for the copies of an unrolled loop)."""
    found: list[S.Buffer] = []

    class _V(Visitor):
        def visit_Allocate(self, a: S.Allocate) -> None:
            found.append(a.buffer)
            self.generic_visit(a)

    _V().visit(stmt)
    moves = {b: (dataclasses.replace(b), E.IntImm(0)) for b in found}
    return RebaseBuffers(moves).visit(stmt) if moves else stmt


class _OneBarrier(StmtMutator):
    """A barrier right after the same barrier goes (the peeled step's stores folded away
    leave two in a row)."""

    def visit_Seq(self, q: S.Seq) -> S.Stmt:
        out: list[S.Stmt] = []
        for item in (self.visit(x) for x in q.stmts):
            if not (isinstance(item, S.Barrier) and out and out[-1] == item):
                out.append(item)
        return S.seq(*out)


def _top_allocations(body: S.Stmt) -> tuple[list[S.Allocate | S.AttrStmt], S.Stmt]:
    """The allocations (and their ``double_buffer_scope`` marks) wrapped around the rest of
    ``body``, outermost first, and that rest."""
    wrappers: list[S.Allocate | S.AttrStmt] = []
    while isinstance(body, S.Allocate) or (
        isinstance(body, S.AttrStmt) and body.key == S.DOUBLE_BUFFER_SCOPE
    ):
        wrappers.append(body)
        body = body.body
    return wrappers, body


def _guarded_by(stmt: S.Stmt, var: E.Var) -> bool:
    """Whether a branch condition inside ``stmt`` mentions ``var``, with no work-group tile
    allocated inside (declared once a kernel, a second copy would declare it twice; private
    arrays are declared where they are allocated, in each copy's own scope)."""
    found: list[str] = []

    class _V(Visitor):
        def visit_IfThenElse(self, s: S.IfThenElse) -> None:
            if var in free_vars(s.cond):
                found.append("guard")
            self.generic_visit(s)

        def visit_Allocate(self, s: S.Allocate) -> None:
            if s.buffer.scope != "local":
                found.append("allocation")
            self.generic_visit(s)

    _V().visit(stmt)
    return "guard" in found and "allocation" not in found


def peel_tail(stmt: S.Stmt) -> S.Stmt:
    """Requires: loops start at constants. Guarantees: a marked serial loop whose body
    branches on its index runs one iteration fewer and is followed by its last iteration,
    unless its tiles are to be double-buffered (it keeps its mark for ``peel_tail_late``); no
    other loop carries the ``peel_tail`` pragma."""
    return _Peel(late=False).visit(stmt)


def peel_tail_late(stmt: S.Stmt) -> S.Stmt:
    """Requires: the ``double_buffer`` pass has run. Guarantees: no loop carries the
    ``peel_tail`` pragma; the loops ``peel_tail`` deferred are peeled, and what the shorter
    loops' ranges prove is simplified."""
    p = _Peel(late=True)
    out = p.visit(stmt)
    return _OneBarrier().visit(simplify_stmt(out)) if p.peeled else out
