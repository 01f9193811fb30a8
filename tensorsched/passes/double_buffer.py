"""Double-buffer work-group tiles: fill the next iteration's tiles while computing on these.

For the loop around the fill of tiles marked by ``s[T].double_buffer()`` (after
``insert_barriers``, the loop body is ``fills; barrier; rest; barrier``):

    for (ko, 0, n) { fill T(ko); barrier; use T; barrier }

becomes, with each tile allocated twice (halves ``ko % 2``):

    fill T[0](0); barrier
    for (ko, 0, n) { if (ko + 1 < n) { fill T[(ko+1) % 2](ko + 1) }  use T[ko % 2]; barrier }

One barrier per iteration is enough: the fill of iteration ko + 1 writes the half that
iteration ko - 1 read, and every work-item has passed the barrier that ended iteration ko - 1.
The fills' global loads are then in flight while the work-items compute.
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.visitor import Mutator, substitute


class _Halves(Mutator):
    """Accesses of the doubled buffers shifted into half ``half``."""

    def __init__(self, doubled, half):
        self.doubled, self.half = doubled, half

    def _index(self, buf, index):
        new, size = self.doubled[buf]
        return new, E.BinOp("+", E.BinOp("*", self.half, E.IntImm(size)), index)

    def visit_Load(self, ld):
        index = self.visit(ld.index)
        if ld.buffer in self.doubled:
            return E.Load(*self._index(ld.buffer, index))
        return ld if index is ld.index else E.Load(ld.buffer, index)

    def visit_Store(self, st):
        index, value = self.visit(st.index), self.visit(st.value)
        if st.buffer in self.doubled:
            return S.Store(*self._index(st.buffer, index), value)
        return st if index is st.index and value is st.value else S.Store(st.buffer, index, value)


def _peel_allocs(body, marked):
    """``(allocations of marked buffers around the body, the body inside them)``."""
    allocs = []
    while isinstance(body, S.Allocate) and body.buffer in marked:
        allocs.append(body.buffer)
        body = body.body
    return allocs, body


class _DoubleBuffer(Mutator):
    def __init__(self, marked):
        self.marked = marked

    def visit_For(self, f):
        body = self.visit(f.body)
        items = body.stmts if isinstance(body, S.Seq) else (body,)
        if not items or f.kind != "serial":
            return f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)
        allocs, inner = _peel_allocs(items[0], self.marked)
        if not allocs:
            return f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)
        parts = list(inner.stmts if isinstance(inner, S.Seq) else (inner,))
        k = 0
        while k < len(parts) and isinstance(parts[k], S.Produce):
            k += 1
        fills, rest = parts[:k], parts[k + 1:]
        trailing = list(items[1:])
        if not fills or k >= len(parts) or not isinstance(parts[k], S.Barrier) or \
                trailing != [S.Barrier("shared")]:
            return f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)
        doubled = {b: (S.Buffer(b.name, b.dtype, (2,) + tuple(b.shape), b.scope), b.size)
                   for b in allocs}
        v, last = f.var, f.min + f.extent - 1
        first = _Halves(doubled, E.IntImm(0)).visit(substitute(S.seq(*fills), {v: f.min}))
        ahead = _Halves(doubled, (v - f.min + 1) % 2).visit(
            substitute(S.seq(*fills), {v: v + 1}))
        now = _Halves(doubled, (v - f.min) % 2).visit(S.seq(*rest))
        loop = S.For(v, f.min, f.extent, f.kind,
                     S.seq(S.IfThenElse(E.Cmp("<", v, last), ahead), now, S.Barrier("shared")),
                     f.pragmas)
        out = S.seq(first, S.Barrier("shared"), loop)
        for b in reversed(allocs):
            out = S.Allocate(doubled[b][0], out)
        return out


def double_buffer(stmt, marked):
    """Requires: barriers inserted. Guarantees: every buffer in ``marked`` that is filled at
    the top of a serial loop of more than one iteration is doubled and filled one iteration
    ahead; the others (their loop had one iteration and is gone) are left as they are."""
    return _DoubleBuffer(set(marked)).visit(stmt) if marked else stmt
