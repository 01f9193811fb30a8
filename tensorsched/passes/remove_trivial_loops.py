"""Loops of one iteration disappear: their variable becomes the loop's start."""

from __future__ import annotations

from ..ir import stmt as S
from ..ir.visitor import StmtMutator, substitute


class _Remove(StmtMutator):
    def visit_For(self, f):
        body = self.visit(f.body)
        if getattr(f.extent, "value", None) == 1:
            return substitute(body, {f.var: f.min})
        if isinstance(body, S.Seq) and not body.stmts:
            return body
        return f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)

    def visit_IfThenElse(self, s):
        then = self.visit(s.then)
        orelse = self.visit(s.orelse) if s.orelse is not None else None
        if isinstance(then, S.Seq) and not then.stmts and orelse is None:
            return then
        if then is s.then and orelse is s.orelse:
            return s
        return S.IfThenElse(s.cond, then, orelse)


def remove_trivial_loops(stmt: S.Stmt) -> S.Stmt:
    """Guarantees: no For of extent 1 and no loop or branch with an empty body remain."""
    return _Remove().visit(stmt)
