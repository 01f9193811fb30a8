"""Statement nodes of the loop IR, the buffers they touch, and the lowered function."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import InternalError
from .expr import Expr, Var

LOOP_KINDS = ("serial", "unrolled", "vectorized", "parallel")  # in lowered IR
VTHREAD = "vthread"  # a virtual-thread loop, before the inject_virtual_threads pass
SCOPES = ("global", "shared", "local")


@dataclass(frozen=True, slots=True, eq=False)
class Buffer:
    """A flat memory region. ``shape`` is the logical shape (ints, or expressions of size
    variables for an argument of symbolic shape); ``scope`` is global/shared/local."""

    name: str
    dtype: str
    shape: tuple
    scope: str = "global"
    image: bool = False  # read through an image2d_t (codegen picks read_imagef)

    @property
    def size(self) -> Any:
        """The element count: an int, or the product expression of a symbolic shape (typed
        ``Any``, as ``tensor.Shape`` is, for the many integer-only callers)."""
        n, symbolic = 1, None
        for d in self.shape:
            if isinstance(d, int):
                n *= d
            else:
                symbolic = d if symbolic is None else symbolic * d
        if symbolic is None:
            return n
        return symbolic if n == 1 else symbolic * n

    @property
    def const_size(self) -> int:
        """The element count of a buffer of constant shape (``InternalError`` otherwise)."""
        n = self.size
        if not isinstance(n, int):
            raise InternalError(f"buffer '{self.name}' has the symbolic size {n}")
        return n

    def __repr__(self) -> str:
        return f"Buffer({self.name})"


class Stmt:
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Store(Stmt):
    buffer: Buffer
    index: Expr
    value: Expr


@dataclass(frozen=True, slots=True)
class For(Stmt):
    """``for (var, min, extent)``; ``kind`` is serial/unrolled/vectorized/parallel, or vthread
    (a virtual-thread loop, gone after the ``inject_virtual_threads`` pass)."""

    var: Var
    min: Expr
    extent: Expr
    kind: str
    body: Stmt
    pragmas: tuple = ()  # (key, value) pairs from Stage.pragma


@dataclass(frozen=True, slots=True)
class ThreadExtent(Stmt):
    """The body runs once per work-item index ``var`` (bound to ``tag``) in ``[0, extent)``;
    ``extent`` is an int, or an expression of size variables (typed ``Any``: most passes see
    ints only)."""

    var: Var
    tag: str
    extent: Any
    body: Stmt


@dataclass(frozen=True, slots=True)
class Allocate(Stmt):
    """``buffer`` exists (uninitialised) while ``body`` runs."""

    buffer: Buffer
    body: Stmt


@dataclass(frozen=True, slots=True)
class AttrStmt(Stmt):
    """An annotation ``key = value`` of ``buffer`` that a later pass consumes, around ``body``
    (TVM's ``AttrStmt``). ``double_buffer_scope``: the allocation of ``buffer`` in ``body`` is a
    tile that ``s[T].double_buffer(value)`` asked to double (read by the ``double_buffer``
    pass, which removes every such mark)."""

    key: str
    buffer: Buffer
    value: str
    body: Stmt


DOUBLE_BUFFER_SCOPE = "double_buffer_scope"


@dataclass(frozen=True, slots=True)
class Produce(Stmt):
    """Marks the statements that compute stage ``name`` (printed ``produce name { ... }``)."""

    name: str
    body: Stmt


@dataclass(frozen=True, slots=True)
class Seq(Stmt):
    stmts: tuple


@dataclass(frozen=True, slots=True)
class IfThenElse(Stmt):
    cond: Expr
    then: Stmt
    orelse: Stmt | None = None


@dataclass(frozen=True, slots=True)
class Barrier(Stmt):
    """All work-items of a work-group wait here; ``scope`` says which memory is fenced."""

    scope: str = "shared"


@dataclass(frozen=True, slots=True)
class LastGroup(Stmt):
    """The work-groups that differ only in their index along block ``tag`` (``count`` of
    them: an int, or an expression of size variables) each arrive here once, when all their
    work-items are done with what is above; the last of them to arrive runs ``body`` (which
    may read what all of them wrote to global memory), the others skip it. ``counter`` (a
    global ``int32`` buffer) counts the arrivals of each set of such groups at ``index``: it
    must be zero before the first launch, and the last group sets it back to zero.

    This is how one kernel reduces across work-groups (a K split among them, added by the
    last of each tile's groups): the arrival is an atomic increment after a global memory
    fence, the ordering that CUDA's ``__threadfence()`` reductions rely on. OpenCL 1.2 does
    not promise it across work-groups, so a template offers it only where
    ``DeviceLimits.group_ordering`` says the device gives it."""

    counter: Buffer
    index: Expr
    tag: str
    count: Any
    body: Stmt


def seq(*stmts: Stmt | None) -> Stmt:
    """A sequence with nested sequences flattened and ``None`` dropped; one item stays itself."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, Seq):
            flat.extend(s.stmts)
        else:
            flat.append(s)
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


@dataclass(frozen=True, eq=False)
class LoweredFunc:
    """The result of ``ts.lower``: a name, the argument buffers in call order, and a body.

    ``outputs`` names the argument buffers the function writes; ``size_args`` holds
    ``(position, size variable)`` for each size listed among ``lower``'s arguments (TVM's
    ``lower(s, [A, B, n])``): a call may give its value there (``f(a, b, 8)``), and must
    where no argument's shape has it (a size used only as a split factor). The function
    form of the text declares them at their positions (``n: int32``).
    """

    name: str
    args: tuple
    body: Stmt
    outputs: tuple = field(default=())
    size_args: tuple = field(default=())

    # ``str(func)`` prints the body in TVM's style and ``func.script()`` the full text form,
    # with the signature line: both are set by ``printer.py``, which imports this module
    script: ClassVar[Callable[[LoweredFunc], str]]
