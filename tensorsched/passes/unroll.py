"""Write out ``unrolled`` loops, unless a pragma asks the OpenCL compiler to do it.

``s[T].pragma(ax, "unroll_explicit", 0)`` keeps the loop and lets code generation print
``#pragma unroll`` above it; by default an unrolled loop is written out iteration by iteration
(as TVM does for GPUs), which also lets the simplifier fold each copy's indices.

Nested unrolled loops are written out in one walk: each copy of the innermost body is made
once, with every enclosing unrolled variable replaced by its value in that copy.
"""

from __future__ import annotations

import dataclasses

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.visitor import Mutator

MAX_EXPLICIT = 64  # longer loops keep a #pragma unroll instead of 64+ copies


def _written_out(f: S.For) -> int | None:
    """The number of copies ``f`` is written out as, or None when it stays a loop."""
    if f.kind != "unrolled" or not dict(f.pragmas).get("unroll_explicit", 1):
        return None
    n = f.extent.value if isinstance(f.extent, E.IntImm) else None
    return n if n is not None and n <= MAX_EXPLICIT else None


class _Unroll(Mutator):
    def __init__(self) -> None:
        self.env: dict[E.Var, E.Expr] = {}  # unrolled variable -> its value in this copy
        self.fresh: dict[S.Buffer, S.Buffer] = {}  # buffers renewed in this copy
        self.renew = 0  # > 0 inside a copy that is not the first of its loop
        self.memo: dict[int, tuple[E.Expr, E.Expr]] = {}  # id(expr) -> (expr, its copy)

    def visit(self, node):
        # an expression used twice in the body (a store's index, read back in its value) is
        # one expression in the copy too, so the simplifier's memory serves both
        if not isinstance(node, E.Expr):
            return super().visit(node)
        hit = self.memo.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        out = super().visit(node)
        self.memo[id(node)] = (node, out)
        return out

    def visit_Var(self, v: E.Var) -> E.Expr:
        return self.env.get(v, v)

    def visit_For(self, f: S.For) -> S.Stmt:
        n = _written_out(f)
        if n is None:
            return self.generic_visit(f)
        start = self.visit(f.min)
        copies = []
        for k in range(n):
            self.env[f.var] = start + k
            self.memo = {}
            self.renew += k > 0
            copies.append(self.visit(f.body))
            self.renew -= k > 0
        del self.env[f.var]
        self.memo = {}
        return S.seq(*copies)

    def visit_Allocate(self, a: S.Allocate) -> S.Stmt:
        # each written-out copy of a loop body declares its own buffers (same name): the
        # copies now sit side by side
        if not self.renew:
            return self.generic_visit(a)
        old = self.fresh.get(a.buffer)
        new = self.fresh[a.buffer] = dataclasses.replace(a.buffer)
        body = self.visit(a.body)
        if old is None:
            del self.fresh[a.buffer]
        else:
            self.fresh[a.buffer] = old
        return S.Allocate(new, body)

    def visit_Load(self, ld: E.Load) -> E.Expr:
        index = self.visit(ld.index)
        buf = self.fresh.get(ld.buffer, ld.buffer)
        return ld if index is ld.index and buf is ld.buffer else E.Load(buf, index)

    def visit_Store(self, st: S.Store) -> S.Stmt:
        index, value = self.visit(st.index), self.visit(st.value)
        buf = self.fresh.get(st.buffer, st.buffer)
        if index is st.index and value is st.value and buf is st.buffer:
            return st
        return S.Store(buf, index, value)


def unroll_loops(stmt: S.Stmt) -> S.Stmt:
    """Guarantees: every remaining ``unrolled`` loop is one the target should unroll itself."""
    return _Unroll().visit(stmt)
