"""Write out ``unrolled`` loops, unless a pragma asks the OpenCL compiler to do it.

``s[T].pragma(ax, "unroll_explicit", 0)`` keeps the loop and lets code generation print
``#pragma unroll`` above it; by default an unrolled loop is written out iteration by iteration
(as TVM does for GPUs), which also lets the simplifier fold each copy's indices.
"""

import dataclasses

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.visitor import Mutator, substitute

MAX_EXPLICIT = 64  # longer loops keep a #pragma unroll instead of 64+ copies


class _Unroll(Mutator):
    def visit_For(self, f):
        body = self.visit(f.body)
        explicit = dict(f.pragmas).get("unroll_explicit", 1)
        n = f.extent.value if isinstance(f.extent, E.IntImm) else None
        if f.kind == "unrolled" and explicit and n is not None and n <= MAX_EXPLICIT:
            return S.seq(
                *[
                    _FreshAllocations().visit(substitute(body, {f.var: f.min + k}))
                    if k
                    else substitute(body, {f.var: f.min + k})
                    for k in range(n)
                ]
            )
        return f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)


class _FreshAllocations(Mutator):
    """Give each buffer allocated in a written-out copy of a loop body its own identity (same
    name), so the copies, now side by side, declare distinct buffers."""

    def __init__(self):
        self.fresh = {}

    def visit_Allocate(self, a):
        self.fresh[a.buffer] = dataclasses.replace(a.buffer)
        return S.Allocate(self.fresh[a.buffer], self.visit(a.body))

    def visit_Load(self, ld):
        return dataclasses.replace(
            ld, buffer=self.fresh.get(ld.buffer, ld.buffer), index=self.visit(ld.index)
        )

    def visit_Store(self, st):
        return S.Store(
            self.fresh.get(st.buffer, st.buffer), self.visit(st.index), self.visit(st.value)
        )


def unroll_loops(stmt):
    """Guarantees: every remaining ``unrolled`` loop is one the target should unroll itself."""
    return _Unroll().visit(stmt)
