"""Boundary specialization: a work-item whose bounds tests (loads of a padded input, guards
of a tile that overhangs its tensor) provably all hold runs a copy of its body without them.

A padded input read through its padding (``pad_inline``) loads ``select(h + kh >= 1 && w + kw
>= 1, data[...], 0)`` for every element and tap, which keeps the loads scalar and the tests in
the innermost code. Most work-items of a convolution are interior: for them every such test
holds whatever the values of the loops inside the work-item. This pass derives, for each
tested bound that is linear in those loops, the condition on the work-item's indices
(``blockIdx`` / ``threadIdx``) under which it holds over the loops' whole range (the loop
variables at the end of their range that minimises the bound), and emits

    if (those conditions) { the body, those tests gone } else { the body }

so that interior work-items run test-free code, which the vectorizer turns into vector loads.
Tests of the work-item's indices alone (a row of the padded copy that is padding) join the
outer test when there is a bound inside a loop to drop.
Bodies with a work-group barrier are left alone (work-items of a group could take different
branches around it; a ``last_group`` counts: its arrival is one), as are bounds that are not
linear in the loops inside the work-item.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.simplify import Lin, Simplifier, simplify
from ..ir.visitor import Mutator, Visitor, free_vars

Ranges = dict[E.Var, int]  # the loops inside the work-item: variable -> constant extent


def _holds_throughout(c: E.Expr, loops: Ranges) -> E.Expr | None:
    """The condition on the work-item's indices under which the bound ``c`` holds for every
    value of ``loops`` (``c`` with each loop at the end of its range that is worst for it),
    or ``None`` when ``c`` is not a bound linear in those loops."""
    if not isinstance(c, E.Cmp) or c.op not in ("<", "<=", ">", ">="):
        return None
    if not (dt.is_int(c.a.dtype) and dt.is_int(c.b.dtype) and dt.lanes(c.a.dtype) == 1):
        return None  # a test of values, not of indices
    if not any(v in loops for v in free_vars(c)):
        return c  # a test of the work-item's indices alone: it moves to the outer test
    simp = Simplifier()
    lin = simp.lin(c.a - c.b)
    lowest = c.op in (">", ">=")
    const, rest = lin.const, {}
    for atom, k in lin.terms.items():
        n = loops.get(atom) if isinstance(atom, E.Var) else None
        if n is not None:
            const += k * (0 if (k > 0) == lowest else n - 1)
        elif any(v in loops for v in free_vars(atom)):
            return None  # a loop inside a non-linear term: min(), //, % ...
        else:
            rest[atom] = k
    # written as "terms op constant": blockIdx_x * 8 >= 1
    cond = simplify(E.Cmp(c.op, simp.to_expr(Lin(rest)), E.IntImm(-const)))
    return None if cond == E.FALSE else cond


class _Bounds(Visitor):
    """The bounds tested by the ``select`` conditions and guards of a statement, each with
    the condition under which it holds (from the loops around it)."""

    def __init__(self) -> None:
        self.loops: Ranges = {}
        self.inner: set[E.Var] = set()  # every variable defined inside the statement
        self.found: dict[E.Expr, E.Expr] = {}  # bound -> the condition it holds under
        self.barrier = False

    def visit_For(self, f: S.For) -> None:
        n = getattr(f.extent, "value", None)
        self.visit(f.min)
        self.inner.add(f.var)
        if n is not None and getattr(f.min, "value", None) == 0:
            self.loops[f.var] = int(n)
        self.visit(f.body)
        self.loops.pop(f.var, None)

    def visit_ThreadExtent(self, t: S.ThreadExtent) -> None:
        self.inner.add(t.var)
        self.generic_visit(t)

    def visit_Barrier(self, b: S.Barrier) -> None:
        self.barrier = True

    def visit_LastGroup(self, g: S.LastGroup) -> None:
        self.barrier = True  # its arrival is a barrier in the generated code
        self.generic_visit(g)

    def _bounds(self, cond: E.Expr) -> None:
        for c in E.conjuncts(cond):
            if c not in self.found:
                holds = _holds_throughout(c, self.loops)
                if holds is not None:
                    self.found[c] = holds

    def visit_Select(self, e: E.Select) -> None:
        self._bounds(e.cond)
        self.generic_visit(e)

    def visit_IfThenElse(self, s: S.IfThenElse) -> None:
        self._bounds(s.cond)
        self.generic_visit(s)


class _DropBounds(Mutator):
    """The statement with the given bounds of its ``select`` conditions and guards taken as
    true."""

    def __init__(self, bounds: set[E.Expr]) -> None:
        self.bounds = bounds

    def visit_Select(self, e: E.Select) -> E.Expr:
        t, f = self.visit(e.t), self.visit(e.f)
        rest = [c for c in E.conjuncts(e.cond) if c not in self.bounds]
        if not rest:
            return t
        return E.Select(E.all_of(rest), t, f)

    def visit_IfThenElse(self, s: S.IfThenElse) -> S.Stmt:
        then = self.visit(s.then)
        orelse = self.visit(s.orelse) if s.orelse is not None else None
        rest = [c for c in E.conjuncts(s.cond) if c not in self.bounds]
        if not rest:
            return then
        return S.IfThenElse(E.all_of(rest), then, orelse)


def _specialize(stmt: S.Stmt) -> S.Stmt:
    col = _Bounds()
    col.visit(stmt)
    found = {c: p for c, p in col.found.items() if not set(free_vars(p)) & col.inner}
    if col.barrier or all(c is p for c, p in found.items()):
        return stmt  # no bound inside a loop to drop: a copy would gain nothing
    conds = [p for p in dict.fromkeys(found.values()) if p != E.TRUE]
    fast = _DropBounds(set(found)).visit(stmt)
    # the copy's private tiles are buffers of their own: vector registers where every access
    # of the copy is a vector, whatever the tested body does with its own
    fast = _Rename().visit(fast)
    return S.IfThenElse(E.all_of(conds), fast, stmt) if conds else fast


class _Rename(Mutator):
    """Every private allocation replaced by a new buffer of the same name and shape."""

    def __init__(self) -> None:
        self.new: dict[S.Buffer, S.Buffer] = {}

    def visit_Allocate(self, a: S.Allocate) -> S.Stmt:
        if a.buffer.scope == "local":
            self.new[a.buffer] = replace(a.buffer)
        body = self.visit(a.body)
        return S.Allocate(self.new.get(a.buffer, a.buffer), body)

    def visit_Load(self, ld: E.Load) -> E.Expr:
        return E.Load(self.new.get(ld.buffer, ld.buffer), self.visit(ld.index))

    def visit_Store(self, st: S.Store) -> S.Stmt:
        buf = self.new.get(st.buffer, st.buffer)
        return S.Store(buf, self.visit(st.index), self.visit(st.value))


def specialize_interior(stmt: S.Stmt) -> S.Stmt:
    """Requires: one kernel's statement (launch extents outermost). Guarantees: where the
    body under the launch extents has bounds tests linear in its loops,
    it is ``if (interior) {body without those bounds} else {body}``; without a barrier in it."""
    return _descend(stmt, launched=False)


def _descend(stmt: S.Stmt, launched: bool) -> S.Stmt:
    wrapper = (S.ThreadExtent, S.AttrStmt, S.Produce)
    if isinstance(stmt, wrapper) or (isinstance(stmt, S.Allocate) and stmt.buffer.scope != "local"):
        body = _descend(stmt.body, launched or isinstance(stmt, S.ThreadExtent))
        return stmt if body is stmt.body else replace(stmt, body=body)
    return _specialize(stmt) if launched else stmt
