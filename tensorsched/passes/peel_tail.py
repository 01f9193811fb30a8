"""Loop peeling for ``split(..., tail="peel")``: the last iteration of the split's outer loop is
written out after the loop, so the iterations before it, whose tiles are whole, lose the
guards that an uneven split put around every element (the simplifier proves them true from
the shorter loop's range), and the peeled copy's guards fold to constants once its inner loops
are unrolled."""

from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.visitor import StmtMutator, Visitor, free_vars, substitute

PEEL_PRAGMA = "peel_tail"  # set on the outer loop by Stage.split(..., tail="peel")


class _Peel(StmtMutator):
    def visit_For(self, f: S.For) -> S.Stmt:
        body = self.visit(f.body)
        pragmas = tuple(p for p in f.pragmas if p[0] != PEEL_PRAGMA)
        loop = S.For(f.var, f.min, f.extent, f.kind, body, pragmas)
        if len(pragmas) == len(f.pragmas):
            return f if body is f.body else loop
        n = getattr(f.extent, "value", None)
        if f.kind != "serial" or n is None or n < 2 or not _guarded_by(body, f.var):
            return loop  # nothing to gain: no guard on this loop's index
        main = S.For(f.var, f.min, E.IntImm(n - 1), f.kind, body, pragmas)
        last = substitute(body, {f.var: f.min + E.IntImm(n - 1)})
        return S.seq(main, last)


def _guarded_by(stmt: S.Stmt, var: E.Var) -> bool:
    """Whether a branch condition inside ``stmt`` mentions ``var`` (with no allocation inside,
    which a second copy of the body would declare twice)."""
    found: list[str] = []

    class _V(Visitor):
        def visit_IfThenElse(self, s: S.IfThenElse) -> None:
            if var in free_vars(s.cond):
                found.append("guard")
            self.generic_visit(s)

        def visit_Allocate(self, s: S.Allocate) -> None:
            found.append("allocation")

    _V().visit(stmt)
    return "guard" in found and "allocation" not in found


def peel_tail(stmt: S.Stmt) -> S.Stmt:
    """Requires: loops start at constants. Guarantees: no loop carries the ``peel_tail``
    pragma; a marked serial loop whose body branches on its index runs one iteration fewer and
    is followed by its last iteration."""
    return _Peel().visit(stmt)
