"""Work-group barriers around the filling of ``__local`` ("shared") tiles.

A tile is filled cooperatively by the work-items of a group, so every work-item must wait
after the fill before reading it, and, when the fill sits inside a loop, before overwriting
what the previous iteration may still be reading.
"""
from ..ir import stmt as S
from ..ir.visitor import Mutator, Visitor


def _writes_shared(stmt):
    found = []

    class _V(Visitor):
        def visit_Store(self, s):
            if s.buffer.scope == "shared":
                found.append(s)

    _V().visit(stmt)
    return bool(found)


class _Insert(Mutator):
    def __init__(self):
        self.loop_depth = 0          # serial loops inside the current kernel

    def visit_ThreadExtent(self, t):
        return S.ThreadExtent(t.var, t.tag, t.extent, self.visit(t.body))

    def visit_For(self, f):
        self.loop_depth += 1
        try:
            return self.generic_visit(f)
        finally:
            self.loop_depth -= 1

    def visit_Produce(self, p):
        body = self.visit(p.body)
        if isinstance(p, S.Produce) and _writes_shared(body) and self._fills_tile(body):
            before = S.Barrier("shared") if self.loop_depth else None
            return S.seq(before, S.Produce(p.name, body), S.Barrier("shared"))
        return p if body is p.body else S.Produce(p.name, body)

    def _fills_tile(self, body):
        # the produce of a shared stage itself (not of an enclosing kernel that holds one)
        return not any(isinstance(x, S.Produce) for x in _walk_produces(body))


def _walk_produces(stmt):
    out = []

    class _V(Visitor):
        def visit_Produce(self, p):
            out.append(p)

    _V().generic_visit(stmt)
    return out


def insert_barriers(stmt):
    """Requires: shared buffers written only inside the Produce of their stage.
    Guarantees: a barrier after each such Produce, and one before it inside loops."""
    return _Insert().visit(stmt)
