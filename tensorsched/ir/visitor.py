"""Visitors and mutators: ``visit`` dispatches to ``visit_<ClassName>``.

A mutator's default rebuilds a node from its visited children and returns the very same object
when no child changed, so unchanged subtrees are shared and cheap to compare.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from . import expr as E
from . import stmt as S

NodeT = TypeVar("NodeT", E.Expr, S.Stmt)

# The child fields of each node class, in order: only these are visited.
_CHILDREN = {
    E.BinOp: ("a", "b"),
    E.Cmp: ("a", "b"),
    E.And: ("a", "b"),
    E.Or: ("a", "b"),
    E.Not: ("a",),
    E.Select: ("cond", "t", "f"),
    E.Cast: ("value",),
    E.Call: ("args",),
    E.TensorLoad: ("indices",),
    E.Load: ("index",),
    E.Ramp: ("base", "stride"),
    E.Broadcast: ("value",),
    E.Reduce: ("source", "condition", "sources", "init"),
    S.Store: ("index", "value"),
    S.For: ("min", "extent", "body"),
    S.ThreadExtent: ("body",),
    S.Allocate: ("body",),
    S.Produce: ("body",),
    S.AttrStmt: ("body",),
    S.Seq: ("stmts",),
    S.IfThenElse: ("cond", "then", "orelse"),
    S.Barrier: (),
    S.LastGroup: ("index", "body"),
    E.IntImm: (),
    E.FloatImm: (),
    E.Var: (),
}


# The statement-valued child fields of each statement class: what a ``StmtMutator`` walks.
_STMT_CHILDREN = {
    cls: tuple(f for f in fields if f in ("body", "stmts", "then", "orelse"))
    for cls, fields in _CHILDREN.items()
}

# The fields a node class is rebuilt from (its constructor's arguments, in order).
_INIT = {cls: tuple(f.name for f in dataclasses.fields(cls) if f.init) for cls in _CHILDREN}


class _Dispatch:
    """``visit`` calls ``visit_<ClassName>`` or ``generic_visit``; the choice is looked up once
    per visitor class and node class, then kept in the class's table."""

    _methods: dict[type, Callable[[Any, Any], Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._methods = {}

    def visit(self, node: Any) -> Any:
        fn = self._methods.get(type(node))
        if fn is None:
            t = type(node)
            fn = getattr(type(self), "visit_" + t.__name__, None) or type(self).generic_visit
            self._methods[t] = fn
        return fn(self, node)

    def generic_visit(self, node: Any) -> Any:
        raise NotImplementedError


class Visitor(_Dispatch):
    """Walks every node; override ``visit_<Class>`` and call ``generic_visit`` to go on."""

    def generic_visit(self, node: Any) -> None:
        visit = self.visit
        for f in _CHILDREN[type(node)]:
            v = getattr(node, f)
            if v.__class__ is tuple:
                for x in v:
                    visit(x)
            elif v is not None:
                visit(v)


class Mutator(_Dispatch):
    """Rebuilds trees; the default keeps a node when none of its children changed."""

    _children = _CHILDREN  # the fields the default walks, per node class

    def generic_visit(self, node: Any) -> Any:
        cls = type(node)
        changes = None
        visit = self.visit
        for f in self._children[cls]:
            v = getattr(node, f)
            if v.__class__ is tuple:
                nv = tuple([visit(x) for x in v])
                for a, b in zip(nv, v):
                    if a is not b:
                        if changes is None:
                            changes = {}
                        changes[f] = nv
                        break
            elif v is not None:
                nv = visit(v)
                if nv is not v:
                    if changes is None:
                        changes = {}
                    changes[f] = nv
        if changes is None:
            return node
        if cls is S.Seq:
            return S.seq(*changes["stmts"])
        return cls(*[changes[f] if f in changes else getattr(node, f) for f in _INIT[cls]])


class StmtMutator(Mutator):
    """A mutator of statements only: its default walks the statements inside a statement and
    never enters an expression (a pass that moves, copies or drops statements)."""

    _children = _STMT_CHILDREN


class Substitute(Mutator):
    """Replaces variables by expressions (``{Var: Expr}``)."""

    def __init__(self, vmap: Mapping[E.Var, E.Expr]) -> None:
        self.vmap = vmap
        self.reducers: dict[E.CommReducer, E.CommReducer] = {}
        self.axes: dict[Any, Any] = {}  # reduce IterVar -> the one with its range substituted

    def visit_Var(self, v: E.Var) -> E.Expr:
        return self.vmap.get(v, v)

    def _reduce_axis(self, iv: Any) -> Any:
        """A reduce axis whose range mentions a replaced variable (a triangular loop) becomes
        a new axis over the substituted range, as TVM's ``VarReplacer`` rewrites it."""
        d = iv.dom
        ends = [x for x in (d.min, d.extent) if isinstance(x, E.Expr)] if d is not None else []
        if not any(v in self.vmap for x in ends for v in free_vars(x)):
            return iv
        sub = [self.visit(x) if isinstance(x, E.Expr) else x for x in (d.min, d.extent)]
        dom = dataclasses.replace(d, min=sub[0], extent=sub[1])
        new = dataclasses.replace(iv, var=E.Var(iv.var.name, iv.var.dtype), dom=dom)
        self.vmap = {**self.vmap, iv.var: new.var}
        return new

    def visit_Reduce(self, r: E.Reduce) -> E.Expr:
        for iv in r.axis:
            if iv not in self.axes:
                self.axes[iv] = self._reduce_axis(iv)
        axis = tuple(self.axes[iv] for iv in r.axis)
        new = self.generic_visit(r)
        if any(a is not b for a, b in zip(axis, r.axis)):
            new = dataclasses.replace(new, axis=axis)
        if r.reducer is None:
            return new
        if r.reducer not in self.reducers:
            self.reducers[r.reducer] = _reducer_substituted(r, self.vmap)
        red = self.reducers[r.reducer]
        return new if red is r.reducer else dataclasses.replace(new, reducer=red)

    def visit_For(self, node: S.For) -> S.Stmt:
        if node.var in self.vmap:
            # a bound variable is renamed only when the map says so with a Var
            new = cast(E.Var, self.vmap[node.var])
            body = self.visit(node.body)
            return dataclasses.replace(
                node, var=new, min=self.visit(node.min), extent=self.visit(node.extent), body=body
            )
        return self.generic_visit(node)


def _reducer_substituted(r: E.Reduce, vmap: Mapping[E.Var, E.Expr]) -> E.CommReducer:
    """``r``'s ``comm_reducer`` with ``vmap`` applied to what its functions return, where they
    mention its variables (a combiner of the compute's index, TVM's
    ``test_loop_dep_reduce_cache_write``: TVM's ``VarReplacer`` rewrites a combiner too)."""
    red = r.reducer
    assert red is not None
    dts = tuple(x.dtype for x in r.sources) or (r.dtype,)
    xs, ys = tuple(E.Var("x", d) for d in dts), tuple(E.Var("y", d) for d in dts)
    if r.sources:
        probe = (*red.combine_tuple(xs, ys), *red.identity_tuple(dts))
    else:
        probe = (red.combine(xs[0], ys[0]), red.identity(r.dtype))
    if not any(v in vmap for p in probe for v in free_vars(p)):
        return red

    def sub(out: Any) -> Any:
        if isinstance(out, (tuple, list)):
            return tuple(sub(o) for o in out)
        return substitute(out, vmap) if isinstance(out, E.Expr) else out

    return E.CommReducer(
        lambda x, y: sub(red.fcombine(x, y)), lambda *d: sub(red.fidentity(*d)), red.name
    )


class RebaseBuffers(Mutator):
    """Moves buffers into larger ones: ``{old: (new, offset)}`` turns every ``old[i]`` (load,
    store, and the allocation itself) into ``new[offset + i]``. Used where a pass gives a
    buffer several copies (one per virtual thread, two for double buffering)."""

    def __init__(self, moves: Mapping[S.Buffer, tuple[S.Buffer, E.Expr]]) -> None:
        self.moves = moves

    def _index(self, buf: S.Buffer, index: E.Expr) -> tuple[S.Buffer, E.Expr]:
        new, offset = self.moves[buf]
        return new, E.BinOp("+", offset, index)

    def visit_Load(self, ld: E.Load) -> E.Expr:
        index = self.visit(ld.index)
        if ld.buffer in self.moves:
            new, moved = self._index(ld.buffer, index)
            return E.Load(new, moved)
        return ld if index is ld.index else E.Load(ld.buffer, index)

    def visit_Store(self, st: S.Store) -> S.Stmt:
        index, value = self.visit(st.index), self.visit(st.value)
        if st.buffer in self.moves:
            new, moved = self._index(st.buffer, index)
            return S.Store(new, moved, value)
        return st if index is st.index and value is st.value else S.Store(st.buffer, index, value)

    def visit_Allocate(self, a: S.Allocate) -> S.Stmt:
        body = self.visit(a.body)
        if a.buffer in self.moves:
            return S.Allocate(self.moves[a.buffer][0], body)
        return a if body is a.body else S.Allocate(a.buffer, body)


def substitute(node: NodeT, vmap: Mapping[E.Var, E.Expr]) -> NodeT:
    """``node`` with the variables of ``vmap`` replaced."""
    return Substitute(vmap).visit(node) if vmap else node


def free_vars(node: E.Expr | S.Stmt) -> list[E.Var]:
    """The Vars a tree mentions (loop variables included)."""
    found: dict[E.Var, None] = {}

    class _V(Visitor):
        def visit_Var(self, v):
            found[v] = None

        def visit_For(self, f):
            found[f.var] = None
            self.generic_visit(f)

        def visit_ThreadExtent(self, t):
            found[t.var] = None
            self.generic_visit(t)

    _V().visit(node)
    return list(found)
