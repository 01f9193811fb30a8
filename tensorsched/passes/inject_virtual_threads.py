"""Interleave virtual threads: each ``vthread`` loop disappears into its body.

A loop bound to ``ts.thread_axis("vthread")`` says "these iterations are independent work-items
that one real work-item runs". Its body is rewritten so that

- every private (``"local"``) buffer allocated inside and written differently per virtual
  thread gets one copy per virtual thread (``buf[v*size + i]``);
- what does not depend on the virtual thread runs once: the work-group's ``"shared"`` tiles
  (bound inference made them cover every virtual thread), the loops around the arithmetic;
- the loop over virtual threads is pushed down to the statements that depend on it and
  becomes an unrolled loop there (outside a vectorized loop, never inside one).

So ``vthread (vx, 0, 2) { allocate acc; for (k) { load tile; acc += ... } }`` becomes
``allocate acc[2 * ...]; for (k) { load tile; unrolled (vx, 0, 2) { acc[vx*...] += ... } }``:
the K loop and its tile loads are shared, and a work-item's outputs sit at a stride of the
work-group's width apart, which is what makes its memory accesses coalesce.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.visitor import RebaseBuffers, StmtMutator, Visitor, free_vars, substitute


class _Writes(Visitor):
    """The buffers that some store writes differently per value of ``var``: its index, its
    value, or a condition or loop bound around it depends on ``var``."""

    def __init__(self, var):
        self.var, self.varying, self.depth = var, set(), 0

    def _uses(self, node):
        return self.var in free_vars(node)

    def visit_Store(self, st):
        if self.depth or self._uses(st):
            self.varying.add(st.buffer)

    def visit_IfThenElse(self, s):
        inside = self._uses(s.cond)
        self.depth += inside
        self.visit(s.then)
        if s.orelse is not None:
            self.visit(s.orelse)
        self.depth -= inside

    def visit_For(self, f):
        inside = self._uses(f.min) or self._uses(f.extent)
        self.depth += inside
        self.visit(f.body)
        self.depth -= inside


def _expand(body, var, n, varying):
    """Give each private buffer allocated in ``body`` and written differently per virtual
    thread one copy per virtual thread (a register copy of a work-group tile's slice that does
    not depend on it stays shared)."""
    moves = {}

    class _Allocs(Visitor):
        def visit_Allocate(self, a):
            b = a.buffer
            if b.scope == "local" and b in varying:
                nb = S.Buffer(b.name, b.dtype, (n,) + tuple(b.shape), b.scope, b.image)
                moves[b] = (nb, E.BinOp("*", var, E.IntImm(b.size)))
            self.visit(a.body)

    _Allocs().visit(body)
    return RebaseBuffers(moves).visit(body) if moves else body


class _Push:
    """``push(s)`` is ``s`` run for every value of the virtual thread ``var``, interleaved."""

    def __init__(self, var, n):
        self.var, self.n = var, n

    def uses(self, node):
        return self.var in free_vars(node)

    def wrap(self, s):
        fresh = E.Var(self.var.name)
        return S.For(
            fresh, E.IntImm(0), E.IntImm(self.n), "unrolled", substitute(s, {self.var: fresh})
        )

    def push(self, s):
        if not self.uses(s):
            return s  # the same for every virtual thread: run it once
        if isinstance(s, S.Seq):
            return S.seq(*(self.push(x) for x in s.stmts))
        if isinstance(s, (S.Allocate, S.Produce, S.ThreadExtent, S.AttrStmt)):
            return _replace_body(s, self.push(s.body))
        if (
            isinstance(s, S.For)
            and s.kind in ("serial", "unrolled")
            and not self.uses(s.min)
            and not self.uses(s.extent)
        ):
            return S.For(s.var, s.min, s.extent, s.kind, self.push(s.body), s.pragmas)
        if isinstance(s, S.IfThenElse) and not self.uses(s.cond):
            orelse = self.push(s.orelse) if s.orelse is not None else None
            return S.IfThenElse(s.cond, self.push(s.then), orelse)
        return self.wrap(s)


def _replace_body(s, body):
    if isinstance(s, S.Allocate):
        return S.Allocate(s.buffer, body)
    if isinstance(s, S.Produce):
        return S.Produce(s.name, body)
    if isinstance(s, S.AttrStmt):
        return S.AttrStmt(s.key, s.buffer, s.value, body)
    return S.ThreadExtent(s.var, s.tag, s.extent, body)


class _Inject(StmtMutator):
    def visit_For(self, f):
        body = self.visit(f.body)  # inner virtual threads first
        if f.kind != "vthread":
            return f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)
        n = f.extent.value
        writes = _Writes(f.var)
        writes.visit(body)
        body = _expand(body, f.var, n, writes.varying)
        return _Push(f.var, n).push(body)


def inject_virtual_threads(stmt: S.Stmt) -> S.Stmt:
    """Guarantees: no ``vthread`` loop remains; private buffers allocated inside one and
    written differently per virtual thread are ``extent`` times larger."""
    return _Inject().visit(stmt)
