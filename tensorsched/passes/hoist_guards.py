"""Move the parts of a guard that do not depend on a loop out of that loop.

``for (v) { if (a && b(v)) S }`` becomes ``if (a) { for (v) { if (b(v)) S } }``: the same
statements run, the test of ``a`` runs once, and an innermost loop whose guard was only about
outer indices becomes guard-free, so it can be vectorized.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.visitor import StmtMutator, free_vars


class _Hoist(StmtMutator):
    def visit_For(self, f):
        body = self.visit(f.body)
        if isinstance(body, S.IfThenElse) and body.orelse is None:
            parts = E.conjuncts(body.cond)
            inv = [c for c in parts if f.var not in free_vars(c)]
            rest = [c for c in parts if f.var in free_vars(c)]
            if inv:
                inner = body.then if not rest else S.IfThenElse(E.all_of(rest), body.then)
                return S.IfThenElse(
                    E.all_of(inv), S.For(f.var, f.min, f.extent, f.kind, inner, f.pragmas)
                )
        return f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)


def hoist_guards(stmt: S.Stmt) -> S.Stmt:
    """Guarantees: no guard conjunct inside a loop is independent of that loop's variable,
    when the guard is the loop's whole body."""
    return _Hoist().visit(stmt)
