"""Turn ``vectorized`` loops into vector expressions (Ramp / Broadcast / vector Load and Store).

A loop ``vectorized (v, 0, n)`` becomes straight-line vector code when ``n`` is an OpenCL
vector width (2, 3, 4, 8, 16), its body is stores (maybe in sequence) whose indices are linear
in ``v``, and nothing in it branches on ``v``. Otherwise it stays a loop (marked ``unrolled``
when short), which is always correct: vectorization is an optimisation, not a meaning.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.simplify import Simplifier, simplify
from ..ir.visitor import Mutator, StmtMutator, Visitor, free_vars

VECTOR_WIDTHS = (2, 3, 4, 8, 16)


class _CannotVectorize(Exception):
    pass


def _stride(index, var):
    """``(base, stride)`` with ``index == base + stride*var`` and constant stride, or None."""
    s = Simplifier()
    lin = s.lin(index)
    stride = lin.terms.pop(var, 0)
    for atom in lin.terms:
        if var in free_vars(atom):
            return None
    return s.to_expr(lin), stride


class _Vec(Mutator):
    """Rewrite an expression for lanes ``n`` of ``var``."""

    def __init__(self, var, n):
        self.var, self.n = var, n

    def vec(self, e):
        """``e`` as a vector of n lanes, or as a scalar when it does not depend on var."""
        if self.var not in free_vars(e):
            return e
        return self.visit(e)

    def visit_Var(self, v):
        return E.Ramp(E.IntImm(0), E.IntImm(1), self.n) if v is self.var else v

    def visit_Load(self, ld):
        st = _stride(ld.index, self.var)
        if st is None:
            raise _CannotVectorize()
        base, stride = st
        if stride == 0:
            return ld
        return E.Load(ld.buffer, E.Ramp(simplify(base), E.IntImm(stride), self.n))

    def visit_BinOp(self, e):
        a, b = self.vec(e.a), self.vec(e.b)
        if dt.is_int(e.dtype) and (dt.lanes(a.dtype) > 1 or dt.lanes(b.dtype) > 1):
            raise _CannotVectorize()  # index arithmetic outside a load: keep scalar
        return E.BinOp(e.op, self._widen(a), self._widen(b))

    def visit_Call(self, e):
        args = [self.vec(a) for a in e.args]
        if not all(dt.is_float(x.dtype) for x in (e, *args)) and any(
            dt.lanes(a.dtype) > 1 for a in args
        ):
            raise _CannotVectorize()  # integer intrinsics and float tests (isnan): keep scalar
        return E.Call(e.name, tuple(self._widen(a) for a in args), dt.with_lanes(e.dtype, self.n))

    def visit_Select(self, e):
        # a test the lanes share (a padded row, read a channel vector at a time) picks whole
        # vectors: ``c ? vload16(...) : (float16)(0)`` loads nothing where it fails
        if self.var in free_vars(e.cond):
            raise _CannotVectorize()  # lane-wise tests: keep the loop
        t, f = self._widen(self.vec(e.t)), self._widen(self.vec(e.f))
        return E.Select(e.cond, t, f)

    def visit_Cast(self, e):
        v = self.vec(e.value)
        return E.Cast(dt.with_lanes(e.dtype, dt.lanes(v.dtype)), v)

    def generic_visit(self, node):
        raise _CannotVectorize()

    def _widen(self, e):
        return e if dt.lanes(e.dtype) == self.n else E.Broadcast(e, self.n)


def _vectorize_body(body, var, n):
    # one store only: lane-wise sequences could read what another lane just wrote
    stores = body.stmts if isinstance(body, S.Seq) else (body,)
    if len(stores) != 1:
        raise _CannotVectorize()
    out = []
    for st in stores:
        if not isinstance(st, S.Store):
            raise _CannotVectorize()
        idx = _stride(st.index, var)
        if idx is None or idx[1] == 0:
            raise _CannotVectorize()
        v = _Vec(var, n)
        value = v._widen(v.vec(st.value))
        if idx[1] != 1 and not _contiguous_load(value):
            raise _CannotVectorize()  # a scatter pays only for a vector load
        out.append(S.Store(st.buffer, E.Ramp(simplify(idx[0]), E.IntImm(idx[1]), n), value))
    return S.seq(*out)


def _contiguous_load(value):
    found = []

    class _V(Visitor):
        def visit_Load(self, ld):
            if isinstance(ld.index, E.Ramp) and getattr(ld.index.stride, "value", None) == 1:
                found.append(ld)

    _V().visit(value)
    return bool(found) and dt.element(value.dtype) == "float32"


class _Vectorize(StmtMutator):
    def visit_For(self, f):
        body = self.visit(f.body)
        if f.kind != "vectorized":
            return f if body is f.body else S.For(f.var, f.min, f.extent, f.kind, body, f.pragmas)
        n = f.extent.value if isinstance(f.extent, E.IntImm) else None
        if n in VECTOR_WIDTHS and getattr(f.min, "value", None) == 0:
            try:
                return _vectorize_body(body, f.var, n)
            except _CannotVectorize:
                pass
        kind = "unrolled" if n is not None and n <= 16 else "serial"
        return S.For(f.var, f.min, f.extent, kind, body, f.pragmas)


def vectorize_loops(stmt: S.Stmt) -> S.Stmt:
    """Requires: simplified indices. Guarantees: no ``vectorized`` loop remains; vector
    widths are OpenCL's; a vector store is contiguous, or strided with a contiguous 32-bit load
    in its value (stored lane by lane)."""
    return _Vectorize().visit(stmt)
