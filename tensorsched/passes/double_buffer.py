"""Double-buffer work-group tiles: fill the next iteration's tiles while computing on these.

For the loop around the fill of tiles marked by ``s[T].double_buffer()`` (``schedule_ops``
puts an ``AttrStmt`` ``double_buffer_scope`` around their allocation; after
``insert_barriers``, the loop body is ``fills; barrier; rest; barrier``):

    for (ko, 0, n) { fill T(ko); barrier; use T; barrier }

becomes, with each tile allocated twice (halves ``ko % 2``):

    fill T[0](0); barrier
    for (ko, 0, n) { if (ko + 1 < n) { fill T[(ko+1) % 2](ko + 1) }  use T[ko % 2]; barrier }

One barrier per iteration is enough: the fill of iteration ko + 1 writes the half that
iteration ko - 1 read, and every work-item has passed the barrier that ended iteration ko - 1.

With the second copy in registers (``double_buffer("local")``), each fill is split into its
global loads, into a private array, and its stores into the tile:

    load(0); store; barrier
    for (ko, 0, n) { if (ko + 1 < n) { load(ko + 1) }  use T; barrier; store; barrier }

so the next tile's global loads are in flight while the work-items compute (a work-item
stalls on a load only where its value is stored). ``double_buffer("both")`` does both: the
loads staged in registers are stored into the other of two tile copies after this iteration's
computation, with one barrier per iteration.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.visitor import RebaseBuffers, StmtMutator, substitute
from .simplify_stmt import simplify_stmt


def _halves(doubled, half):
    """Accesses of the doubled buffers shifted into half ``half``."""
    return RebaseBuffers(
        {b: (new, E.BinOp("*", half, E.IntImm(size))) for b, (new, size) in doubled.items()}
    )


def _doubled(allocs):
    return {b: (S.Buffer(b.name, b.dtype, (2,) + tuple(b.shape), b.scope), b.size) for b in allocs}


def _peel_allocs(body):
    """``{buffer: mode}`` of the tiles marked ``double_buffer_scope`` allocated around the
    body (each mark directly around its allocation), the other allocations among them (the
    private arrays of a register cache computed at the same loop: they go around the new
    loop body), and the body inside them all."""
    allocs, private = {}, []
    while True:
        if (
            isinstance(body, S.AttrStmt)
            and body.key == S.DOUBLE_BUFFER_SCOPE
            and isinstance(body.body, S.Allocate)
            and body.body.buffer is body.buffer
        ):
            allocs[body.buffer] = body.value
            body = body.body.body
        elif isinstance(body, S.Allocate) and body.buffer.scope == "local":
            private.append(body.buffer)
            body = body.body
        else:
            return allocs, private, body


def _allocated(buffers, body):
    """``body`` inside allocations of ``buffers``, the first outermost."""
    for b in reversed(buffers):
        body = S.Allocate(b, body)
    return body


class _DoubleBuffer(StmtMutator):
    def visit_For(self, f):
        body = self.visit(f.body)
        items = body.stmts if isinstance(body, S.Seq) else (body,)
        if not items or f.kind != "serial":
            return f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)
        marks, private, inner = _peel_allocs(items[0])
        allocs = list(marks)
        if not allocs:
            return f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)
        parts = list(inner.stmts if isinstance(inner, S.Seq) else (inner,))
        k = 0
        while k < len(parts) and isinstance(parts[k], S.Produce):
            k += 1
        fills, rest = parts[:k], parts[k + 1 :]
        trailing = list(items[1:])
        if (
            not fills
            or k >= len(parts)
            or not isinstance(parts[k], S.Barrier)
            or trailing != [S.Barrier("shared")]
        ):
            return f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)
        v, last = f.var, f.min + f.extent - 1
        modes = set(marks.values())
        if modes & {"local", "both"}:
            staged = _stage_in_registers(fills)
            if staged is None:
                return (
                    f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)
                )
            loads, stores, regs = staged
            nxt = {v: v + 1}
            ahead_loads = S.IfThenElse(E.Cmp("<", v, last), substitute(loads, nxt))
            if "both" in modes:  # two tile copies: the stores need no barrier before them
                doubled = _doubled(allocs)
                first = S.seq(
                    substitute(loads, {v: f.min}),
                    _halves(doubled, E.IntImm(0)).visit(substitute(stores, {v: f.min})),
                )
                stores_next = _halves(doubled, (v - f.min + 1) % 2).visit(substitute(stores, nxt))
                now = _halves(doubled, (v - f.min) % 2).visit(S.seq(*rest))
                loop_body = S.seq(
                    ahead_loads,
                    now,
                    S.IfThenElse(E.Cmp("<", v, last), stores_next),
                    S.Barrier("shared"),
                )
                allocs_out = [doubled[b][0] for b in allocs]
            else:
                first = substitute(S.seq(loads, stores), {v: f.min})
                # the stores are not skipped in the last iteration: they write the registers
                # of the step before again (a tile's guards, upper bounds growing with the
                # step, only drop elements), and PoCL 3.1 miscompiled the loop with a test of
                # the step between its two barriers (the fuzzer's case: a test says so)
                loop_body = S.seq(
                    ahead_loads,
                    *rest,
                    S.Barrier("shared"),
                    substitute(stores, nxt),
                    S.Barrier("shared"),
                )
                allocs_out = list(allocs)
            loop = S.For(v, f.min, f.extent, f.kind, _allocated(private, loop_body), f.pragmas)
            out = S.seq(first, S.Barrier("shared"), loop)
            return _allocated([*reversed(regs), *allocs_out], out)
        doubled = _doubled(allocs)
        first = _halves(doubled, E.IntImm(0)).visit(substitute(S.seq(*fills), {v: f.min}))
        ahead = _halves(doubled, (v - f.min + 1) % 2).visit(substitute(S.seq(*fills), {v: v + 1}))
        now = _halves(doubled, (v - f.min) % 2).visit(S.seq(*rest))
        loop = S.For(
            v,
            f.min,
            f.extent,
            f.kind,
            _allocated(
                private, S.seq(S.IfThenElse(E.Cmp("<", v, last), ahead), now, S.Barrier("shared"))
            ),
            f.pragmas,
        )
        return _allocated([doubled[b][0] for b in allocs], S.seq(first, S.Barrier("shared"), loop))


def _stage_in_registers(fills):
    """``(loads, stores, register buffers)``: each fill split into its global loads, kept in a
    private array (one element per store a work-item executes), and the stores of that array
    into the tile; None when a fill is not loops, guards and stores of constant trip count."""
    regs, loads, stores = [], [], []
    for fill in fills:
        size = _count(fill.body)
        if size is None:
            return None
        dtype = _store_dtype(fill.body)
        reg = S.Buffer(fill.name + ".reg", dtype, (size,), "local")
        offset = [0]

        def split(s, loops):
            if isinstance(s, S.Store):
                slot, ext = E.IntImm(offset[0]), 1
                for var, n in reversed(loops):
                    slot, ext = slot + var * ext, ext * n
                offset[0] += ext
                return S.Store(reg, slot, s.value), S.Store(s.buffer, s.index, E.Load(reg, slot))
            if isinstance(s, S.For):
                ld, st = split(s.body, loops + [(s.var, s.extent.value)])
                fresh = E.Var(s.var.name)
                return (
                    S.For(s.var, s.min, s.extent, s.kind, ld, s.pragmas),
                    S.For(
                        fresh, s.min, s.extent, s.kind, substitute(st, {s.var: fresh}), s.pragmas
                    ),
                )
            if isinstance(s, S.IfThenElse):
                ld, st = split(s.then, loops)
                return S.IfThenElse(s.cond, ld), S.IfThenElse(s.cond, st)
            parts = [split(x, loops) for x in s.stmts]
            return S.seq(*(a for a, _ in parts)), S.seq(*(b for _, b in parts))

        ld, st = split(fill.body, [])
        regs.append(reg)
        loads.append(S.Produce(reg.name, ld))
        stores.append(S.Produce(fill.name, st))
    return S.seq(*loads), S.seq(*stores), regs


def _count(s):
    """How many stores a work-item executes in ``s`` (loops of constant extent, guards,
    sequences and stores only), or None."""
    if isinstance(s, S.Store):
        return 1
    if isinstance(s, S.For):
        inner = _count(s.body)
        n = getattr(s.extent, "value", None)
        return None if inner is None or n is None else inner * n
    if isinstance(s, S.IfThenElse):
        return None if s.orelse is not None else _count(s.then)
    if isinstance(s, S.Seq):
        counts = [_count(x) for x in s.stmts]
        return None if None in counts else sum(counts)
    return None


def _store_dtype(s):
    while not isinstance(s, S.Store):
        s = (
            s.stmts[0]
            if isinstance(s, S.Seq)
            else s.then
            if isinstance(s, S.IfThenElse)
            else s.body
        )
    return s.buffer.dtype


class _StripMarks(StmtMutator):
    def visit_AttrStmt(self, a):
        body = self.visit(a.body)
        if a.key != S.DOUBLE_BUFFER_SCOPE:
            return a if body is a.body else S.AttrStmt(a.key, a.buffer, a.value, body)
        return body


def double_buffer(stmt: S.Stmt) -> S.Stmt:
    """Requires: barriers inserted; the tiles to double marked ``double_buffer_scope`` (an
    ``AttrStmt`` directly around their allocation). Guarantees: every marked tile that is
    filled at the top of a serial loop of more than one iteration is doubled and filled one
    iteration ahead, the others (their loop had one iteration and is gone) are left as they
    are; no mark remains; where marks were, the halves' index arithmetic is simplified."""
    out = _StripMarks().visit(_DoubleBuffer().visit(stmt))
    return stmt if out is stmt else simplify_stmt(out)
