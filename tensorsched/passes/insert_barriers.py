"""Work-group barriers around the filling of ``__local`` ("shared") tiles.

A tile is filled cooperatively by the work-items of a group, so every work-item must wait
after the fill before reading it, and, when the fill sits inside a loop, before overwriting
what the previous iteration may still be reading. Fills that follow each other share one
barrier before and one after, with one more between two of them when the later fill reads a
tile that the earlier one writes.
"""
from ..ir import stmt as S
from ..ir.visitor import Mutator, Visitor


def _is_tile_fill(stmt):
    """A Produce whose own stores (not those of a nested Produce) go to shared memory."""
    if not isinstance(stmt, S.Produce):
        return False
    found = []

    class _V(Visitor):
        def visit_Store(self, s):
            found.append(s.buffer.scope == "shared")

        def visit_Produce(self, p):
            pass                                   # a nested stage is judged on its own

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


class _Insert(Mutator):
    def __init__(self):
        self.loop_depth = 0          # serial loops around the current statement

    def visit_For(self, f):
        self.loop_depth += 1
        try:
            return self.generic_visit(f)
        finally:
            self.loop_depth -= 1

    def visit_Produce(self, p):
        body = self.visit(p.body)
        p = p if body is p.body else S.Produce(p.name, body)
        return self._group([p]) if _is_tile_fill(p) else p

    def visit_Seq(self, s):
        out, run = [], []
        for x in s.stmts:
            if _is_tile_fill(x):
                body = self.visit(x.body)
                run.append(x if body is x.body else S.Produce(x.name, body))
                continue
            if run:
                out.append(self._group(run))
                run = []
            out.append(self.visit(x))
        if run:
            out.append(self._group(run))
        return S.seq(*out)

    def _group(self, fills):
        """Barriers around a run of fills, and between two fills of the run when the later one
        reads (or overwrites) a tile that an earlier one of the same segment writes (or reads):
        another work-item may not have finished the earlier fill yet."""
        out = [S.Barrier("shared")] if self.loop_depth else []
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


def insert_barriers(stmt):
    """Requires: shared buffers written only inside the Produce of their stage.
    Guarantees: a barrier after each run of tile fills, and one before it inside loops."""
    return _Insert().visit(stmt)
