"""Write out ``unrolled`` loops, unless a pragma asks the OpenCL compiler to do it.

``s[T].pragma(ax, "unroll_explicit", 0)`` keeps the loop and lets code generation print
``#pragma unroll`` above it; by default an unrolled loop is written out iteration by iteration
(as TVM does for GPUs), which also lets the simplifier fold each copy's indices.
"""
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.visitor import Mutator, substitute

MAX_EXPLICIT = 64           # longer loops keep a #pragma unroll instead of 64+ copies


class _Unroll(Mutator):
    def visit_For(self, f):
        body = self.visit(f.body)
        explicit = dict(f.pragmas).get("unroll_explicit", 1)
        n = f.extent.value if isinstance(f.extent, E.IntImm) else None
        if f.kind == "unrolled" and explicit and n is not None and n <= MAX_EXPLICIT:
            return S.seq(*[substitute(body, {f.var: f.min + k}) for k in range(n)])
        return f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)


def unroll_loops(stmt):
    """Guarantees: every remaining ``unrolled`` loop is one the target should unroll itself."""
    return _Unroll().visit(stmt)
