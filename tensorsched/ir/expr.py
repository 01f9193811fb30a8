"""Expression nodes: immutable trees with value equality, except ``Var`` which is an identity.

Arithmetic on expressions builds nodes (``i * 4 + j``); Python numbers are turned into constants
of the other operand's type. ``//`` and ``%`` are floor division and floor modulo, as in Python.
``a == b`` of two expressions that are not the same (structurally; a ``Var`` is only itself)
is a ``Condition``, as TVM's ``EqualOp`` is: the comparison where an expression is wanted
(``where=(i == k)``), false in Python's ``if``; of the same expression it is ``True``, which is
both (the comparison always holds). ``a != b`` likewise.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, SupportsFloat

import numpy as np

from ..errors import ComputeError
from . import dtype as dt

if TYPE_CHECKING:  # stmt.py imports this module
    from .stmt import Buffer
    from .tensor import IterVar, Tensor


class TensorOperand:
    """A tensor as an operand of ``+ - * /`` (``te.Tensor``): an expression on its left gives
    way to the tensor's reflected operator (``n + A`` is a tensor, as with TVM's TOPI)."""

    __slots__ = ()


class ExprOps:
    """Operator sugar shared by expressions and iteration variables."""

    __slots__ = ()

    if TYPE_CHECKING:

        def as_expr(self) -> Expr: ...

    def __add__(self, o: ExprLike) -> BinOp:
        if isinstance(o, TensorOperand):
            return NotImplemented  # the tensor's __radd__: an elementwise stage
        return binop("+", self, o)

    def __radd__(self, o: ExprLike) -> BinOp:
        return binop("+", o, self)

    def __sub__(self, o: ExprLike) -> BinOp:
        if isinstance(o, TensorOperand):
            return NotImplemented  # the tensor's __rsub__: an elementwise stage
        return binop("-", self, o)

    def __rsub__(self, o: ExprLike) -> BinOp:
        return binop("-", o, self)

    def __mul__(self, o: ExprLike) -> BinOp:
        if isinstance(o, TensorOperand):
            return NotImplemented  # the tensor's __rmul__: an elementwise stage
        return binop("*", self, o)

    def __rmul__(self, o: ExprLike) -> BinOp:
        return binop("*", o, self)

    def __truediv__(self, o: ExprLike) -> BinOp:
        if isinstance(o, TensorOperand):
            return NotImplemented  # the tensor's __rtruediv__: an elementwise stage
        return binop("/", self, o)

    def __rtruediv__(self, o: ExprLike) -> BinOp:
        return binop("/", o, self)

    def __floordiv__(self, o: ExprLike) -> BinOp:
        return binop("//", self, o)

    def __rfloordiv__(self, o: ExprLike) -> BinOp:
        return binop("//", o, self)

    def __mod__(self, o: ExprLike) -> BinOp:
        return binop("%", self, o)

    def __rmod__(self, o: ExprLike) -> BinOp:
        return binop("%", o, self)

    def __neg__(self) -> BinOp:
        return binop("-", const(0, self.as_expr().dtype), self)

    def __lt__(self, o: ExprLike) -> Cmp:
        return cmp("<", self, o)

    def __le__(self, o: ExprLike) -> Cmp:
        return cmp("<=", self, o)

    def __gt__(self, o: ExprLike) -> Cmp:
        return cmp(">", self, o)

    def __ge__(self, o: ExprLike) -> Cmp:
        return cmp(">=", self, o)

    def equal(self, o: ExprLike) -> Cmp:
        return cmp("==", self, o)

    def not_equal(self, o: ExprLike) -> Cmp:
        return cmp("!=", self, o)

    # ``& | ^ ~`` are logical on conditions and bitwise on integers, ``<< >>`` shift
    # integers (TVM's ``bitwise_and`` ... ``shift_right``)
    def __and__(self, o: ExprLike) -> Expr:
        return bitwise("bitwise_and", self, o)

    def __rand__(self, o: ExprLike) -> Expr:
        return bitwise("bitwise_and", o, self)

    def __or__(self, o: ExprLike) -> Expr:
        return bitwise("bitwise_or", self, o)

    def __ror__(self, o: ExprLike) -> Expr:
        return bitwise("bitwise_or", o, self)

    def __xor__(self, o: ExprLike) -> Expr:
        return bitwise("bitwise_xor", self, o)

    def __rxor__(self, o: ExprLike) -> Expr:
        return bitwise("bitwise_xor", o, self)

    def __lshift__(self, o: ExprLike) -> Expr:
        return bitwise("shift_left", self, o)

    def __rlshift__(self, o: ExprLike) -> Expr:
        return bitwise("shift_left", o, self)

    def __rshift__(self, o: ExprLike) -> Expr:
        return bitwise("shift_right", self, o)

    def __rrshift__(self, o: ExprLike) -> Expr:
        return bitwise("shift_right", o, self)

    def __invert__(self) -> Expr:
        return bitwise_not(self)

    def astype(self, dtype: str) -> Expr:
        e = as_expr(self)
        dt.check_dtype(dtype, "astype")
        return e if e.dtype == dtype else Cast(dtype, e)

    def __bool__(self) -> bool:
        raise ComputeError(
            "an expression has no truth value in Python; use ts.if_then_else, "
            "ts.all or ts.any to build conditions"
        )

    # ``==`` and ``!=`` of the objects that are only equal to themselves (``Var``,
    # ``IterVar``); the expression nodes compare structurally (``_node_eq``)
    def __eq__(self, o: object) -> Any:
        return True if self is o else _condition("==", self, o)

    def __ne__(self, o: object) -> Any:
        return False if self is o else _condition("!=", self, o)

    __hash__ = object.__hash__


class Condition(ExprOps):
    """``a == b`` or ``a != b`` of expressions that are not the same (TVM's ``EqualOp`` /
    ``NotEqualOp``): as an expression (``where=(i == k)``, ``ts.if_then_else``, a compute's
    body, ``set_store_predicate``) the comparison ``a.equal(b)`` / ``a.not_equal(b)``; as a
    Python truth value (``if a == b``, dict keys, ``in``) what Python's equality of the two
    objects says: ``==`` false, ``!=`` true. (Of the same expression ``==`` gives ``True`` and
    ``!=`` ``False``: the comparison always holds, or never.) So TVM's conditions port
    unchanged, and code comparing expressions keeps its meaning."""

    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a: object, b: object) -> None:
        self.op, self.a, self.b = op, a, b

    def as_expr(self) -> Expr:
        return cmp(self.op, self.a, self.b)

    def __bool__(self) -> bool:
        return self.op == "!="

    def __repr__(self) -> str:
        return f"Condition({self.a!r} {self.op} {self.b!r})"


def _condition(op: str, a: object, b: object) -> Any:
    """``a op b`` of two different objects as a ``Condition`` where ``b`` can be compared
    with an expression (else ``NotImplemented``: Python decides, as for unrelated objects)."""
    if isinstance(b, (ExprOps, numbers.Real, np.bool_)):
        return Condition(op, a, b)
    return NotImplemented


class Expr(ExprOps):
    """An expression node; every node has a ``dtype``."""

    __slots__ = ()

    if TYPE_CHECKING:

        @property
        def dtype(self) -> str: ...

    def as_expr(self) -> Expr:
        return self


ExprLike = ExprOps | int | float  # what the operator sugar and as_expr take


@dataclass(frozen=True, slots=True)
class IntImm(Expr):
    value: int
    dtype: str = "int32"


@dataclass(frozen=True, slots=True)
class FloatImm(Expr):
    value: float
    dtype: str = "float32"


@dataclass(frozen=True, slots=True, eq=False)
class Var(Expr):
    """A variable: two ``Var`` objects are different even when they share a name.

    ``size``: a symbolic size (``ts.var`` / ``ts.size_var``), which a compute's body may read;
    ``nonneg``: the variable is known to be at least 0 (``ts.size_var``)."""

    name: str
    dtype: str = "int32"
    nonneg: bool = field(default=False, repr=False)
    size: bool = field(default=False, repr=False)

    def __repr__(self) -> str:
        return f"Var({self.name})"


@dataclass(frozen=True, slots=True)
class BinOp(Expr):
    """``a op b`` with op in + - * / // % min max; ``//`` and ``%`` round toward minus infinity."""

    op: str
    a: Expr
    b: Expr
    dtype: str = field(default="", init=False, compare=False)

    def __post_init__(self) -> None:
        da, db = self.a.dtype, self.b.dtype
        object.__setattr__(self, "dtype", da if dt.lanes(da) >= dt.lanes(db) else db)


@dataclass(frozen=True, slots=True)
class Cmp(Expr):
    op: str
    a: Expr
    b: Expr

    @property
    def dtype(self) -> str:
        return dt.with_lanes("bool", dt.lanes(self.a.dtype))


@dataclass(frozen=True, slots=True)
class And(Expr):
    a: Expr
    b: Expr
    dtype = "bool"


@dataclass(frozen=True, slots=True)
class Or(Expr):
    a: Expr
    b: Expr
    dtype = "bool"


@dataclass(frozen=True, slots=True)
class Not(Expr):
    a: Expr
    dtype = "bool"


@dataclass(frozen=True, slots=True)
class Select(Expr):
    """``cond ? t : f`` (ts.if_then_else)."""

    cond: Expr
    t: Expr
    f: Expr

    @property
    def dtype(self) -> str:
        return self.t.dtype


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    dtype: str
    value: Expr


@dataclass(frozen=True, slots=True)
class Call(Expr):
    """A pure intrinsic: exp, sqrt, sigmoid, log, tanh, fabs, pow, dot ..."""

    name: str
    args: tuple[Expr, ...]
    dtype: str


@dataclass(frozen=True, slots=True)
class TensorLoad(Expr):
    """``T[i, j]`` before lowering: an element of a tensor named by logical indices."""

    tensor: Tensor
    indices: tuple[Expr, ...]

    @property
    def dtype(self) -> str:
        return self.tensor.dtype


@dataclass(frozen=True, slots=True)
class Load(Expr):
    """``buffer[index]`` after flattening; a vector load when ``index`` is a Ramp."""

    buffer: Buffer
    index: Expr

    @property
    def dtype(self) -> str:
        return dt.with_lanes(self.buffer.dtype, dt.lanes(self.index.dtype))


@dataclass(frozen=True, slots=True)
class Ramp(Expr):
    """The vector ``(base, base + stride, ..., base + (lanes-1)*stride)``."""

    base: Expr
    stride: Expr
    lanes: int

    @property
    def dtype(self) -> str:
        return dt.with_lanes(self.base.dtype, self.lanes)


@dataclass(frozen=True, slots=True)
class Broadcast(Expr):
    value: Expr
    lanes: int

    @property
    def dtype(self) -> str:
        return dt.with_lanes(self.value.dtype, self.lanes)


@dataclass(frozen=True, slots=True)
class Reduce(Expr):
    """A reduction (combiner in sum/max/min, or the name of a ``reducer``) of ``source`` over
    ``axis``, where ``condition``, starting from ``init`` (TVM's ``init=``: an expression of
    the compute's own indices, such as ``B[i, j]``) or, without it, the combiner's identity."""

    combiner: str
    source: Expr
    axis: tuple[IterVar, ...]
    condition: Expr | None = None
    dtype: str = field(default="float32")
    reducer: CommReducer | None = None  # a user's reduction (ts.comm_reducer)
    value_index: int = 0  # of a tuple reduction: which of ``sources`` this value reduces
    sources: tuple[Expr, ...] = ()  # of a tuple reduction: all its sources (else empty)
    init: Expr | None = None  # the initial value (else the identity)


# each expression node's own equality, field by field (what its dataclass generated)
_STRUCTURAL: dict[type, Callable[[object, object], Any]] = {}


def _node_eq(self: Expr, o: object) -> Any:
    """``==`` of an expression node: ``True`` where ``o`` is the same expression, else a
    ``Condition``. The fields are compared by the dataclass's code (a tuple comparison in C,
    which calls this for the nodes below: they allocate nothing while they are equal, and the
    simplifier compares every expression it rewrites with its result)."""
    if type(o) is type(self) and _STRUCTURAL[type(self)](self, o):
        return True
    return _condition("==", self, o)


def _node_ne(self: Expr, o: object) -> Any:
    if type(o) is type(self) and _STRUCTURAL[type(self)](self, o):
        return False
    return _condition("!=", self, o)


for _node in Expr.__subclasses__():
    if "__eq__" in vars(_node):  # the dataclasses (not Var, which is only equal to itself)
        _STRUCTURAL[_node] = vars(_node)["__eq__"]
        _node.__eq__, _node.__ne__ = _node_eq, _node_ne  # type: ignore[method-assign,assignment]


@dataclass(frozen=True, eq=False)
class CommReducer:
    """A commutative reduction of a user's (TVM's ``comm_reducer``): ``fcombine(x, y)`` of two
    expressions and ``fidentity(dtype)``, the identity element as a constant."""

    fcombine: Callable[[Expr, Expr], ExprLike]
    fidentity: Callable[[str], ExprLike]
    name: str = "reduce"

    def combine(self, x: Expr, y: Expr) -> Expr:
        out = as_expr(self.fcombine(x, y))
        if out.dtype != x.dtype:
            raise ComputeError(
                f"comm_reducer '{self.name}': fcombine of two {x.dtype} values gave a "
                f"{out.dtype} value; it must keep the type"
            )
        return out

    def identity(self, dtype: str) -> Expr:
        out = as_expr(self.fidentity(dtype), dtype)
        if out.dtype != dtype:
            out = Cast(dtype, out)
        return out

    def combine_tuple(self, xs: tuple[Expr, ...], ys: tuple[Expr, ...]) -> tuple[Expr, ...]:
        """``fcombine`` of two tuples of values (a tuple reduction, such as argmax)."""
        out = self.fcombine(xs, ys)  # type: ignore[arg-type]  # a tuple reducer's fcombine
        if not isinstance(out, (tuple, list)) or len(out) != len(xs):
            raise ComputeError(
                f"comm_reducer '{self.name}': fcombine of two {len(xs)}-tuples must return a "
                f"{len(xs)}-tuple, got {out!r}"
            )
        values = tuple(as_expr(v, x.dtype) for v, x in zip(out, xs))
        for v, x in zip(values, xs):
            if v.dtype != x.dtype:
                raise ComputeError(
                    f"comm_reducer '{self.name}': fcombine gave a {v.dtype} value where the "
                    f"tuple holds a {x.dtype}; it must keep each type"
                )
        return values

    def identity_tuple(self, dtypes: tuple[str, ...]) -> tuple[Expr, ...]:
        out = self.fidentity(*dtypes)
        if not isinstance(out, (tuple, list)) or len(out) != len(dtypes):
            raise ComputeError(
                f"comm_reducer '{self.name}': fidentity({', '.join(dtypes)}) must return a "
                f"{len(dtypes)}-tuple, got {out!r}"
            )
        values = []
        for v, d in zip(out, dtypes):
            e = as_expr(v, d)
            values.append(e if e.dtype == d else Cast(d, e))
        return tuple(values)


# ---------------------------------------------------------------- construction helpers


def const(value: object, dtype: str | None = None) -> Expr:
    """A constant. ``dtype`` defaults to int32 for an integer (Python's or numpy's; int64 when
    the value does not fit in int32) and float32 for a float. A number that its dtype cannot
    hold is refused: an integer out of its range, a finite value a float type would round to
    infinity (``inf`` itself is a float constant)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, np.bool_)):
        return IntImm(int(value), dtype or "bool")
    n = dt.to_int(value)
    if n is not None:
        if dtype is None:
            dtype = "int32" if dt.fits(n, "int32") else "int64"
        if dt.is_float(dtype):
            return FloatImm(_float_of(n, dtype), dtype)
        _check_fits(n, dtype, "const")
        return IntImm(n, dtype)
    if not isinstance(value, numbers.Real):
        raise ComputeError(f"const: {value!r} is not a number")
    dtype = dtype or "float32"
    number = _float_of(value, dtype if dt.is_float(dtype) else "float64")
    if dt.is_float(dtype):
        return FloatImm(number, dtype)
    if not number.is_integer():
        raise ComputeError(f"const: {value} is not an integer but dtype is {dtype}")
    _check_fits(int(number), dtype, "const")
    return IntImm(int(number), dtype)


def _float_of(value: SupportsFloat, dtype: str) -> float:
    """``value`` as a float, or ``ComputeError`` where the float type ``dtype`` cannot hold it:
    a finite value beyond its largest, which it would round to infinity."""
    try:
        number = float(value)
    except OverflowError:  # an integer (or a Fraction) beyond float64
        number = math.inf
    else:
        if not math.isfinite(number):  # inf or nan as given
            return number
        with np.errstate(over="ignore"):
            if math.isfinite(np.asarray(number, dtype=dt.NUMPY[dt.element(dtype)])):
                return number
    shown = repr(value)
    if len(shown) > 40:
        shown = f"{shown[:20]}... ({len(shown)} characters)"
    largest = float(np.finfo(dt.NUMPY[dt.element(dtype)]).max)
    raise ComputeError(
        f"const: {shown} is beyond {dtype} (largest {largest:.6g}), which would round it to "
        "infinity; use a smaller value"
        + (" or dtype float64" if math.isfinite(number) and dt.element(dtype) != "float64" else "")
    )


def _check_fits(n: int, dtype: str, where: str) -> None:
    if dt.is_int(dtype) and not dt.fits(n, dtype):
        raise ComputeError(
            f"{where}: {n} does not fit in {dtype}; use a smaller value"
            + (" or dtype int64" if dt.element(dtype) == "int32" and dt.fits(n, "int64") else "")
        )


def as_expr(x: object, dtype: str | None = None) -> Expr:
    if isinstance(x, ExprOps):
        return x.as_expr()
    if isinstance(x, (numbers.Real, np.bool_)):  # Python's and numpy's numbers
        return const(x, dtype)
    raise ComputeError(f"cannot use {type(x).__name__} {x!r} in an expression")


def _number(x: object, other: Expr) -> Expr:
    """The number ``x`` as a constant beside the expression ``other``: of ``other``'s scalar
    type, except a float beside an integer (float32). An integer beside an int32 expression
    keeps its value even beyond int32 (index arithmetic is exact; code generation widens it);
    it must fit in int64."""
    target = dt.element(other.dtype)
    n = dt.to_int(x)
    if n is not None and dt.is_int(target):
        _check_fits(n, "int64", "integer constant")
        return IntImm(n, target)
    if isinstance(x, (float, np.floating)) and dt.is_int(target):
        target = "float32"
    return as_expr(x, target)


def unify(x: object, y: object) -> tuple[Expr, Expr]:
    """Turn both operands into expressions of one dtype (numbers take the other's dtype)."""
    x_num, y_num = not isinstance(x, ExprOps), not isinstance(y, ExprOps)
    if x_num and not y_num:
        b = as_expr(y)
        a = _number(x, b)
    elif y_num and not x_num:
        a = as_expr(x)
        b = _number(y, a)
    else:
        a, b = as_expr(x), as_expr(y)
    ea, eb = dt.element(a.dtype), dt.element(b.dtype)
    if ea != eb:
        target = dt.element(dt.promote(ea, eb))
        if ea != target:
            a = Cast(dt.with_lanes(target, dt.lanes(a.dtype)), a)
        if eb != target:
            b = Cast(dt.with_lanes(target, dt.lanes(b.dtype)), b)
    return a, b


# TVM's bitwise intrinsics on integers, each a C operator (a ``Call``, as TVM has them)
BITWISE = {
    "bitwise_and": "&",
    "bitwise_or": "|",
    "bitwise_xor": "^",
    "shift_left": "<<",
    "shift_right": ">>",
}


def bitwise(name: str, x: object, y: object) -> Expr:
    """TVM's ``bitwise_and`` / ``bitwise_or`` / ``bitwise_xor`` / ``shift_left`` /
    ``shift_right`` (``&``, ``|``, ``^``, ``<<``, ``>>`` on expressions): of two integers a
    call of the integer dtype; of two conditions ``&``, ``|`` and ``^`` are the logical and,
    or and inequality, as TVM's bitwise operators are on booleans."""
    a, b = unify(x, y)
    if dt.is_bool(a.dtype) and name != "shift_left" and name != "shift_right":
        if name == "bitwise_and":
            return And(a, b)
        return Or(a, b) if name == "bitwise_or" else Cmp("!=", a, b)
    if not dt.is_int(a.dtype):
        raise ComputeError(
            f"'{BITWISE[name]}' ({name}) of {a.dtype} operands: bitwise operators take integers "
            "(and '&', '|', '^' conditions); combine float conditions with ts.all / ts.any, or "
            "cast with .astype('int32')"
        )
    return Call(name, (a, b), a.dtype)


def bitwise_not(x: object) -> Expr:
    """TVM's ``bitwise_not`` (``~`` on an expression): a call on an integer, the logical not
    of a condition."""
    a = as_expr(x)
    if dt.is_bool(a.dtype):
        return Not(a)
    if not dt.is_int(a.dtype):
        raise ComputeError(
            f"'~' (bitwise_not) of a {a.dtype} expression: it takes an integer or a condition"
        )
    return Call("bitwise_not", (a,), a.dtype)


def binop(op: str, x: object, y: object) -> BinOp:
    a, b = unify(x, y)
    if op == "/" and dt.is_int(a.dtype):
        raise ComputeError(
            "'/' on integer expressions is ambiguous; write '//' for floor "
            "division (TVM's integer '/' becomes '//' in tensorsched)"
        )
    if op in ("//", "%") and dt.is_float(a.dtype):
        raise ComputeError(f"'{op}' needs integer operands, got {a.dtype}")
    return BinOp(op, a, b)


def cmp(op: str, x: object, y: object) -> Cmp:
    a, b = unify(x, y)
    return Cmp(op, a, b)


def is_const(e: Expr, value: float | None = None) -> bool:
    if isinstance(e, (IntImm, FloatImm)):
        return value is None or e.value == value
    return False


TRUE = IntImm(1, "bool")
FALSE = IntImm(0, "bool")


def conjuncts(cond: Expr) -> list[Expr]:
    """The parts of a conjunction ``a && b && ...`` (one part when ``cond`` is no ``And``)."""
    return conjuncts(cond.a) + conjuncts(cond.b) if isinstance(cond, And) else [cond]


def all_of(conds: Sequence[Expr]) -> Expr:
    """``conds[0] && conds[1] && ...`` (at least one condition)."""
    out = conds[0]
    for c in conds[1:]:
        out = And(out, c)
    return out
