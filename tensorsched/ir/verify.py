"""Well-formedness of loop IR, checked between passes when ``TS_VERIFY=1`` (the test suite
always sets it): every variable is defined where it is used, every buffer is an argument or
allocated around its use, and stores agree with their buffers in type and vector width."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import InternalError
from . import dtype as dt
from . import expr as E
from . import stmt as S
from .printer import print_stmt
from .simplify import size_vars
from .visitor import Visitor


class VerifyError(InternalError):
    """A pass produced ill-formed IR: a bug in tensorsched."""


class _Verify(Visitor):
    def __init__(self, args):
        args = tuple(args)
        # the size variables of the arguments' shapes, and sizes given apart, are defined
        # everywhere
        bufs = tuple(a for a in args if isinstance(a, S.Buffer))
        self.vars = set(size_vars(tuple(b.shape for b in bufs)))
        self.vars.update(a for a in args if isinstance(a, E.Var))
        self.bufs, self.errors = set(bufs), []

    def _scoped(self, var, body):
        self.vars.add(var)
        self.visit(body)
        self.vars.discard(var)

    def visit_For(self, f):
        self.visit(f.min)
        self.visit(f.extent)
        if f.kind == "vectorized" and not hasattr(f.extent, "value"):
            self.errors.append(f"vectorized loop '{f.var.name}' has a non-constant extent")
        self._scoped(f.var, f.body)

    def visit_ThreadExtent(self, t):
        self._scoped(t.var, t.body)

    def visit_Allocate(self, a):
        self.bufs.add(a.buffer)
        self.visit(a.body)

    def visit_Var(self, v):
        if v not in self.vars:
            self.errors.append(f"variable '{v.name}' is used outside the loop that defines it")

    def visit_Load(self, ld):
        if ld.buffer not in self.bufs:
            self.errors.append(
                f"buffer '{ld.buffer.name}' is read but neither an argument nor allocated here"
            )
        self.generic_visit(ld)

    def visit_Store(self, st):
        if st.buffer not in self.bufs:
            self.errors.append(
                f"buffer '{st.buffer.name}' is written but neither an argument nor allocated here"
            )
        if dt.lanes(st.value.dtype) != dt.lanes(st.index.dtype):
            self.errors.append(
                f"store to '{st.buffer.name}': {dt.lanes(st.value.dtype)} values "
                f"for {dt.lanes(st.index.dtype)} addresses"
            )
        if dt.element(st.value.dtype) != dt.element(st.buffer.dtype):
            self.errors.append(
                f"store to '{st.buffer.name}' ({st.buffer.dtype}) of a {st.value.dtype} value"
            )
        self.generic_visit(st)


def verify(stmt: S.Stmt, args: Iterable[S.Buffer | E.Var] = (), after: str = "") -> None:
    """Raise ``VerifyError`` listing every problem, with the IR, if ``stmt`` is ill-formed;
    ``args`` are the function's buffers and the sizes it is given apart from them."""
    v = _Verify(args)
    v.visit(stmt)
    if v.errors:
        where = f" after pass '{after}'" if after else ""
        raise VerifyError(
            f"ill-formed IR{where}:\n  "
            + "\n  ".join(dict.fromkeys(v.errors))
            + "\n"
            + print_stmt(stmt)
        )
