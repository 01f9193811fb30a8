"""Work-group barriers around the filling of ``__local`` ("shared") tiles.

A tile is filled cooperatively by the work-items of a group, so every work-item must wait
after the fill before reading it, and, when the fill sits inside a loop, before the next
iteration overwrites what this one may still be reading: that barrier closes the body of the
innermost loop around the fill (rather than opening the next fill, which is equivalent, and a
shape PoCL's work-group compiler handles: a conditional just before the back edge of a loop
with barriers otherwise trips its region formation). Fills that follow each other share the
barrier after them, with one more between two of them when the later fill reads a tile that
the earlier one writes.
"""

from __future__ import annotations

from ..ir import stmt as S
from ..ir.visitor import StmtMutator, Visitor


def _is_tile_fill(stmt):
    """A Produce whose own stores (not those of a nested Produce) go to shared memory that
    outlives it (a work-group reduction's ``__local`` array, allocated inside the Produce and
    fenced by its own barriers, does not count)."""
    if not isinstance(stmt, S.Produce):
        return False
    found = []
    inside = set()

    class _V(Visitor):
        def visit_Store(self, s):
            found.append(s.buffer.scope == "shared" and s.buffer not in inside)

        def visit_Allocate(self, a):
            inside.add(a.buffer)
            self.generic_visit(a)

        def visit_Produce(self, p):
            pass  # a nested stage is judged on its own

    _V().generic_visit(stmt)
    return any(found)


def _shared_accesses(stmt):
    """The shared buffers ``stmt`` reads and those it writes, as two sets."""
    reads, writes = set(), set()

    class _V(Visitor):
        def visit_Load(self, ld):
            if ld.buffer.scope == "shared":
                reads.add(ld.buffer)
            self.generic_visit(ld)

        def visit_Store(self, st):
            if st.buffer.scope == "shared":
                writes.add(st.buffer)
            self.generic_visit(st)

    _V().visit(stmt)
    return reads, writes


class _Insert(StmtMutator):
    def __init__(self):
        self.fills_in_loop = [False]  # per enclosing loop: does its body fill a tile?

    def visit_For(self, f):
        self.fills_in_loop.append(False)
        try:
            body = self.visit(f.body)
            if self.fills_in_loop[-1]:
                body = S.seq(body, S.Barrier("shared"))
        finally:
            self.fills_in_loop.pop()
        return f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)

    def visit_Produce(self, p):
        body = self.visit(p.body)
        p = p if body is p.body else S.Produce(p.name, body)
        return self._group([p]) if _is_tile_fill(p) else p

    def visit_Seq(self, s):
        out, run = [], []
        since = []  # the statements of this sequence since its last barrier
        for x in s.stmts:
            if _is_tile_fill(x):
                body = self.visit(x.body)
                run.append(x if body is x.body else S.Produce(x.name, body))
                continue
            if run:
                out.extend(self._after(since, run))
                run, since = [], []
            x = self.visit(x)
            out.append(x)
            since = [] if _ends_with_barrier(x) else [*since, x]
        if run:
            out.extend(self._after(since, run))
        if len(out) == len(s.stmts) and all(a is b for a, b in zip(out, s.stmts)):
            return s  # nothing changed: keep the node
        return S.seq(*out)

    def _after(self, since, fills):
        """A run of fills after statements that accessed tiles since the last barrier: one
        barrier first where the run overwrites such a tile (straight-line code of a loop's
        steps, such as a peeled last step after a one-step loop the simplifier removed)."""
        group = self._group(fills)
        if not since:
            return [group]
        writes = set().union(*(_shared_accesses(f)[1] for f in fills))
        accessed = set().union(*(set().union(*_shared_accesses(x)) for x in since))
        return [S.Barrier("shared"), group] if writes & accessed else [group]

    def _group(self, fills):
        """Barriers around a run of fills, and between two fills of the run when the later one
        reads (or overwrites) a tile that an earlier one of the same segment writes (or reads):
        another work-item may not have finished the earlier fill yet."""
        self.fills_in_loop[-1] = True
        out = []
        written, read = set(), set()
        for f in fills:
            f_reads, f_writes = _shared_accesses(f)
            if (f_reads & written) or (f_writes & read):
                out.append(S.Barrier("shared"))
                written, read = set(), set()
            out.append(f)
            written |= f_writes
            read |= f_reads
        out.append(S.Barrier("shared"))
        return S.seq(*out)


def _ends_with_barrier(stmt):
    """Whether every path through ``stmt`` ends at a work-group barrier."""
    if isinstance(stmt, S.Barrier):
        return True
    if isinstance(stmt, S.Seq):
        return bool(stmt.stmts) and _ends_with_barrier(stmt.stmts[-1])
    if isinstance(stmt, S.For):
        return getattr(stmt.extent, "value", 0) >= 1 and _ends_with_barrier(stmt.body)
    if isinstance(stmt, (S.Allocate, S.AttrStmt, S.Produce)):
        return _ends_with_barrier(stmt.body)
    return False


def insert_barriers(stmt: S.Stmt) -> S.Stmt:
    """Requires: shared buffers written only inside the Produce of their stage.
    Guarantees: a barrier after each run of tile fills, one at the end of the body of the
    innermost loop around it, and one before a fill that overwrites a tile read since the
    last barrier in straight-line code."""
    return _Insert().visit(stmt)
