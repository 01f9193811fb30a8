"""The functions of the compute language: reductions, conditions and math intrinsics."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from ..errors import ComputeError, LoweringError
from . import dtype as dt
from . import expr as E
from .tensor import IterVar
from .visitor import free_vars

Axes = IterVar | list[IterVar] | tuple[IterVar, ...]  # reduce axes, as ts.sum takes them

REDUCE_IDENTITY = {"sum": 0, "max": "lowest", "min": "highest"}


def identity_value(combiner: str, dtype: str) -> E.Expr:
    """The identity of a combiner in ``dtype`` (0 for sum, the lowest value for max ...)."""
    if combiner == "sum":
        return E.const(0, dtype)
    info = np.finfo(dt.NUMPY[dtype]) if dt.is_float(dtype) else np.iinfo(dt.NUMPY[dtype])
    v = info.min if combiner == "max" else info.max
    return E.const(float(v) if dt.is_float(dtype) else int(v), dtype)


def _axes(axis, what):
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not axes or not builtins.all(isinstance(a, IterVar) and a.kind == "reduce" for a in axes):
        raise ComputeError(f"{what}: axis must be a reduce_axis or a list of them, got {axis!r}")
    if len({id(a) for a in axes}) != len(axes):
        raise ComputeError(f"{what}: the same reduce axis is listed twice")
    return tuple(axes)


def _init_of(init: E.ExprLike | None, src: E.Expr, axes: tuple[IterVar, ...], what: str):
    """``init=`` of a reduction as an expression of the source's dtype that does not use the
    reduce axes (it is the value before the first step), or None."""
    if init is None:
        return None
    e = E.as_expr(init, src.dtype)
    if e.dtype != src.dtype:
        raise ComputeError(
            f"{what}: init is {e.dtype} but the reduction is {src.dtype}; give an init of the "
            f"same dtype (.astype('{src.dtype}'))"
        )
    reduced = {a.var for a in axes}
    used = [v.name for v in free_vars(e) if v in reduced]
    if used:
        raise ComputeError(
            f"{what}: init uses the reduce axis '{used[0]}'; the initial value may only use "
            "the compute's own indices (init=B[i, j]) or constants"
        )
    return e


def _reduction(combiner, expr, axis, where, init=None):
    src = E.as_expr(expr)
    cond = None if where is None else E.as_expr(where)
    what = f"ts.{combiner}"
    axes = _axes(axis, what)
    first = _init_of(init, src, axes, what)
    return E.Reduce(combiner, src, axes, cond, src.dtype, init=first)


def _is_axis_arg(x):
    return isinstance(x, IterVar) or (
        isinstance(x, (list, tuple)) and x and builtins.all(isinstance(a, IterVar) for a in x)
    )


def _reduce_directly(what: str, combine: Callable[[Any, Any], Any], args: tuple) -> Any:
    """TVM's reducer called on expressions instead of an axis (``ts.max(a, b, c)``,
    ``mysum(a, b)``): their combination, left to right; trailing Nones (an unused ``where``
    or ``init``) are dropped, as in TVM."""
    vals = list(args)
    while vals and vals[-1] is None:
        vals.pop()
    if len(vals) < 2 or builtins.any(v is None for v in vals):
        raise ComputeError(
            f"{what}: give a reduce axis (axis=k) to reduce, or two or more expressions to "
            f"combine ({what}(a, b)); got {len(vals)} value(s)"
        )
    out = vals[0]
    for v in vals[1:]:
        out = combine(out, v)
    return out


def _reducer_call(
    what: str,
    reduce: Callable[..., Any],
    combine: Callable[[Any, Any], Any],
    expr: Any,
    args: tuple,
    axis: Any,
    where: Any,
    init: Any,
) -> Any:
    """TVM's two calling conventions of a reducer: ``(expr, axis, where=None, init=None)``
    reduces (``axis`` a reduce axis or a list of them, given by position or by keyword);
    ``(a, b, ...)`` of expressions combines them (``_reduce_directly``)."""
    if axis is None and args and _is_axis_arg(args[0]):
        axis, args = args[0], args[1:]
        if len(args) > 2:
            raise ComputeError(f"{what}: too many arguments for a reduction")
        if args:
            where = args[0] if where is None else where
        if len(args) > 1:
            init = args[1] if init is None else init
        args = ()
    if axis is not None:
        if args:
            raise ComputeError(f"{what}: too many arguments for a reduction")
        return reduce(expr, axis, where, init)
    if where is not None or init is not None:
        raise ComputeError(f"{what}: give the reduce axis, axis=k")
    return _reduce_directly(what, combine, (expr, *args))


def _builtin(combiner: str, op: str) -> Callable[..., E.Expr]:
    def reducer(
        expr: E.ExprLike,
        *args: Any,
        axis: Axes | None = None,
        where: E.ExprLike | None = None,
        init: E.ExprLike | None = None,
    ) -> E.Expr:
        return _reducer_call(
            f"ts.{combiner}",
            lambda x, ax, w, i: _reduction(combiner, x, ax, w, i),
            lambda a, b: E.binop(op, a, b),
            expr,
            args,
            axis,
            where,
            init,
        )

    reducer.__name__ = reducer.__qualname__ = combiner
    return reducer


_sum, _max, _min = _builtin("sum", "+"), _builtin("max", "max"), _builtin("min", "min")


def sum(  # noqa: A001
    expr: E.ExprLike,
    *args: Any,
    axis: Axes | None = None,
    where: E.ExprLike | None = None,
    init: E.ExprLike | None = None,
) -> E.Expr:
    """``ts.sum(expr, axis, where=None, init=None)``: the sum of ``expr`` over the reduce axes
    ``axis`` (where ``where`` holds), starting from ``init`` (an expression of the compute's
    indices, or a constant) instead of 0. Called on expressions, as TVM's reducers can be,
    ``ts.sum(a, b, ...)`` is ``a + b + ...``."""
    return _sum(expr, *args, axis=axis, where=where, init=init)


def max(  # noqa: A001
    expr: E.ExprLike,
    *args: Any,
    axis: Axes | None = None,
    where: E.ExprLike | None = None,
    init: E.ExprLike | None = None,
) -> E.Expr:
    """``ts.max(expr, axis=k)`` reduces (from ``init=`` if given); ``ts.max(a, b, ...)`` is
    the elementwise maximum of the expressions."""
    return _max(expr, *args, axis=axis, where=where, init=init)


def min(  # noqa: A001
    expr: E.ExprLike,
    *args: Any,
    axis: Axes | None = None,
    where: E.ExprLike | None = None,
    init: E.ExprLike | None = None,
) -> E.Expr:
    """``ts.min(expr, axis=k)`` reduces (from ``init=`` if given); ``ts.min(a, b, ...)`` is
    the elementwise minimum of the expressions."""
    return _min(expr, *args, axis=axis, where=where, init=init)


def if_then_else(cond: E.ExprLike, t: E.ExprLike, f: E.ExprLike) -> E.Select:
    c = E.as_expr(cond)
    if not dt.is_bool(c.dtype):
        raise ComputeError(f"if_then_else: the condition must be a comparison, got {c.dtype}")
    a, b = E.unify(t, f)
    return E.Select(c, a, b)


def all(*conds: E.ExprLike) -> E.Expr:  # noqa: A001
    """True when every condition holds (``ts.all(i >= 1, i < n)``)."""
    if not conds:
        return E.TRUE
    out: E.Expr = E.as_expr(conds[0])
    for c in conds[1:]:
        out = E.And(out, E.as_expr(c))
    return out


def any(*conds: E.ExprLike) -> E.Expr:  # noqa: A001
    if not conds:
        return E.FALSE
    out: E.Expr = E.as_expr(conds[0])
    for c in conds[1:]:
        out = E.Or(out, E.as_expr(c))
    return out


def _float_call(name, x):
    x = E.as_expr(x, "float32")
    if not dt.is_float(x.dtype):
        raise ComputeError(
            f"ts.{name} needs a float argument, got {x.dtype}; use .astype('float32')"
        )
    return E.Call(name, (x,), x.dtype)


def exp(x: E.ExprLike) -> E.Call:
    return _float_call("exp", x)


def log(x: E.ExprLike) -> E.Call:
    return _float_call("log", x)


def sqrt(x: E.ExprLike) -> E.Call:
    return _float_call("sqrt", x)


def tanh(x: E.ExprLike) -> E.Call:
    return _float_call("tanh", x)


def sigmoid(x: E.ExprLike) -> E.Call:
    return _float_call("sigmoid", x)


def fabs(x: E.ExprLike) -> E.Call:
    return _float_call("fabs", x)


def _rounding(name: str, x: E.ExprLike) -> E.Expr:
    """A rounding function: an integer or a condition is its own value (TVM returns it
    unchanged), a float the call."""
    if isinstance(x, E.ExprOps) and not dt.is_float(E.as_expr(x).dtype):
        return E.as_expr(x)
    return _float_call(name, x)


def floor(x: E.ExprLike) -> E.Expr:
    return _rounding("floor", x)


def ceil(x: E.ExprLike) -> E.Expr:
    return _rounding("ceil", x)


def round(x: E.ExprLike) -> E.Expr:  # noqa: A001
    """To the nearest integer value, halves away from zero (C's and OpenCL's ``round``)."""
    return _rounding("round", x)


def trunc(x: E.ExprLike) -> E.Expr:
    return _rounding("trunc", x)


def nearbyint(x: E.ExprLike) -> E.Expr:
    """To the nearest integer value, halves to even (TVM's ``nearbyint``, numpy's ``rint``:
    OpenCL C's ``rint``)."""
    return _rounding("rint", x)


def cos(x: E.ExprLike) -> E.Call:
    return _float_call("cos", x)


def sin(x: E.ExprLike) -> E.Call:
    return _float_call("sin", x)


def _unary(name: str, what: str) -> Callable[[E.ExprLike], E.Call]:
    def fn(x: E.ExprLike) -> E.Call:
        return _float_call(name, x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{what} of a float expression (OpenCL C's ``{name}``)."
    return fn


# TVM's other float intrinsics (tvm.te / tvm.tir), each an OpenCL C 1.2 built-in
exp2 = _unary("exp2", "2 to the power")
exp10 = _unary("exp10", "10 to the power")
log2 = _unary("log2", "The base-2 logarithm")
log10 = _unary("log10", "The base-10 logarithm")
log1p = _unary("log1p", "``log(1 + x)``")
rsqrt = _unary("rsqrt", "``1 / sqrt(x)``")
tan = _unary("tan", "The tangent")
sinh = _unary("sinh", "The hyperbolic sine")
cosh = _unary("cosh", "The hyperbolic cosine")
asin = _unary("asin", "The arc sine")
acos = _unary("acos", "The arc cosine")
atan = _unary("atan", "The arc tangent")
asinh = _unary("asinh", "The inverse hyperbolic sine")
acosh = _unary("acosh", "The inverse hyperbolic cosine")
atanh = _unary("atanh", "The inverse hyperbolic tangent")
erf = _unary("erf", "The error function")
MORE_UNARY = (
    "exp2", "exp10", "log2", "log10", "log1p", "rsqrt", "tan", "sinh", "cosh", "asin", "acos",
    "atan", "asinh", "acosh", "atanh", "erf",
)  # fmt: skip


def abs(x: E.ExprLike) -> E.Expr:  # noqa: A001
    """``|x|``: ``fabs`` for floats, ``x < 0 ? -x : x`` for integers (as TVM's ``abs``)."""
    e = E.as_expr(x)
    if dt.is_float(e.dtype):
        return E.Call("fabs", (e,), e.dtype)
    return E.Select(E.Cmp("<", e, E.IntImm(0, e.dtype)), E.IntImm(0, e.dtype) - e, e)


def power(x: E.ExprLike, y: E.ExprLike) -> E.Call:
    a, b = E.unify(x, y)
    if not dt.is_float(a.dtype):
        raise ComputeError(f"ts.power needs float arguments, got {a.dtype}")
    return E.Call("pow", (a, b), a.dtype)


def _binary_float(name: str, what: str) -> Callable[[E.ExprLike, E.ExprLike], E.Call]:
    def fn(x: E.ExprLike, y: E.ExprLike) -> E.Call:
        a, b = E.unify(x, y)
        if not dt.is_float(a.dtype):
            raise ComputeError(f"ts.{name} needs float arguments, got {a.dtype}")
        return E.Call(name, (a, b), a.dtype)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{what} (OpenCL C's ``{name}``; floats only, as TVM's)."
    return fn


fmod = _binary_float("fmod", "``x - y * trunc(x / y)``, the remainder with the sign of ``x``")
atan2 = _binary_float("atan2", "The arc tangent of ``y / x`` in the quadrant of ``(x, y)``")
hypot = _binary_float("hypot", "``sqrt(x*x + y*y)`` without overflow in the squares")
copysign = _binary_float("copysign", "``|x|`` with the sign of ``y``")
nextafter = _binary_float("nextafter", "The next value of the dtype after ``x`` towards ``y``")


def ldexp(x: E.ExprLike, exp: E.ExprLike) -> E.Call:
    """``x * 2**exp`` for a float ``x`` and an integer ``exp`` (OpenCL C's ``ldexp``)."""
    a, e = E.as_expr(x, "float32"), E.as_expr(exp, "int32")
    if not dt.is_float(a.dtype) or not dt.is_int(e.dtype):
        raise ComputeError(
            f"ts.ldexp(x, exp) needs a float x and an integer exp, got {a.dtype} and {e.dtype}"
        )
    return E.Call("ldexp", (a, e.astype("int32")), a.dtype)


# ---------------------------------------------------------------- integers and float classes


def _int_call(name: str, x: E.ExprLike) -> E.Call:
    e = E.as_expr(x)
    if not dt.is_int(e.dtype):
        raise ComputeError(
            f"ts.tir.{name} needs an integer argument, got {e.dtype}; use .astype('int32')"
        )
    return E.Call(name, (e,), e.dtype)


def popcount(x: E.ExprLike) -> E.Call:
    """The number of bits set in an integer (in its two's complement, so -1 of int32 has 32;
    OpenCL C's ``popcount``)."""
    return _int_call("popcount", x)


def clz(x: E.ExprLike) -> E.Call:
    """The number of leading zero bits of an integer (its width for 0; OpenCL C's ``clz``)."""
    return _int_call("clz", x)


def bitwise_and(x: E.ExprLike, y: E.ExprLike) -> E.Expr:
    """``x & y`` of integers (of conditions, their logical and)."""
    return E.bitwise("bitwise_and", x, y)


def bitwise_or(x: E.ExprLike, y: E.ExprLike) -> E.Expr:
    """``x | y`` of integers (of conditions, their logical or)."""
    return E.bitwise("bitwise_or", x, y)


def bitwise_xor(x: E.ExprLike, y: E.ExprLike) -> E.Expr:
    """``x ^ y`` of integers (of conditions, whether they differ)."""
    return E.bitwise("bitwise_xor", x, y)


def bitwise_not(x: E.ExprLike) -> E.Expr:
    """``~x`` of an integer (of a condition, its negation)."""
    return E.bitwise_not(x)


def shift_left(x: E.ExprLike, y: E.ExprLike) -> E.Expr:
    """``x << y`` of integers."""
    return E.bitwise("shift_left", x, y)


def shift_right(x: E.ExprLike, y: E.ExprLike) -> E.Expr:
    """``x >> y`` of integers (arithmetic: the sign bit is kept)."""
    return E.bitwise("shift_right", x, y)


def _float_class(name: str, of_int: bool) -> Callable[[E.ExprLike], E.Expr]:
    def fn(x: E.ExprLike) -> E.Expr:
        e = E.as_expr(x, "float32")
        if not dt.is_float(e.dtype):  # an integer is never NaN nor infinite
            return E.TRUE if of_int else E.FALSE
        return E.Call(name, (e,), "bool")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"TVM's ``{name}``: a condition on a float (OpenCL C's ``{name}``); of an integer "
        f"the constant {of_int}."
    )
    return fn


isnan = _float_class("isnan", False)
isinf = _float_class("isinf", False)
isfinite = _float_class("isfinite", True)


def Cast(dtype: str, value: E.ExprLike) -> E.Expr:  # noqa: N802 (TVM's constructor name)
    """TVM's ``tir.Cast(dtype, value)``: ``value.astype(dtype)``."""
    return E.as_expr(value).astype(dtype)


def const(value: object, dtype: str | None = None) -> E.Expr:
    """A constant of ``dtype``: by default int32 for an integer (Python's or numpy's; int64
    when it does not fit in int32) and float32 for a float."""
    if dtype is not None:
        dt.check_dtype(dtype, "const")
    return E.const(value, dtype)


def min_value(dtype: str) -> E.Expr:
    """The lowest value of ``dtype`` as a constant (for floats the most negative finite one)."""
    dt.check_dtype(dtype, "min_value")
    return identity_value("max", dtype)


def max_value(dtype: str) -> E.Expr:
    """The highest value of ``dtype`` as a constant (for floats the largest finite one)."""
    dt.check_dtype(dtype, "max_value")
    return identity_value("min", dtype)


def _int_operands(a: E.ExprLike, b: E.ExprLike, what: str) -> tuple[E.Expr, E.Expr]:
    x, y = E.unify(a, b)  # one integer dtype for both
    if not dt.is_int(x.dtype):
        raise ComputeError(f"ts.{what} needs integer operands, got {x.dtype}")
    return x, y


def indexdiv(a: E.ExprLike, b: E.ExprLike) -> E.Expr:
    """``a // b`` rounded toward minus infinity (tensorsched's ``//``; TVM's indexdiv)."""
    x, y = _int_operands(a, b, "indexdiv")
    return E.BinOp("//", x, y)


def indexmod(a: E.ExprLike, b: E.ExprLike) -> E.Expr:
    """``a % b`` with the sign of ``b`` (tensorsched's ``%``; TVM's indexmod)."""
    x, y = _int_operands(a, b, "indexmod")
    return E.BinOp("%", x, y)


floordiv = indexdiv  # TVM's floordiv / floormod on integers: the same rounding
floormod = indexmod


def truncdiv(a: E.ExprLike, b: E.ExprLike) -> E.Expr:
    """``a / b`` rounded toward zero, as C's integer ``/``: the floor quotient, plus one where
    the division is inexact and the operands' signs differ (for non-negative ``a`` and
    positive ``b``, as index arithmetic has, the simplifier reduces it to ``a // b``)."""
    x, y = _int_operands(a, b, "truncdiv")
    q = E.BinOp("//", x, y)
    inexact = E.Cmp("!=", E.BinOp("%", x, y), E.IntImm(0, x.dtype))
    return E.Select(E.And(inexact, _signs_differ(x, y)), q + 1, q)


def truncmod(a: E.ExprLike, b: E.ExprLike) -> E.Expr:
    """The remainder of ``truncdiv``, with the sign of ``a`` (C's integer ``%``)."""
    x, y = _int_operands(a, b, "truncmod")
    r = E.BinOp("%", x, y)
    inexact = E.Cmp("!=", r, E.IntImm(0, x.dtype))
    return E.Select(E.And(inexact, _signs_differ(x, y)), r - y, r)


def _signs_differ(x: E.Expr, y: E.Expr) -> E.Expr:
    """``x`` and ``y`` of opposite signs (both non-zero)."""
    zero = E.IntImm(0, x.dtype)
    lt, gt = (lambda e: E.Cmp("<", e, zero)), (lambda e: E.Cmp(">", e, zero))
    return E.Or(E.And(lt(x), gt(y)), E.And(gt(x), lt(y)))


def comm_reducer(
    fcombine: Callable[[E.Expr, E.Expr], E.ExprLike],
    fidentity: Callable[[str], E.ExprLike],
    name: str = "reduce",
) -> Callable[..., Any]:
    """A commutative reduction of your own (TVM's ``te.comm_reducer``): ``fcombine(x, y)``
    combines two values, ``fidentity(dtype)`` is its identity element. The result is used as
    ``ts.sum`` is: ``product(A[i, k], axis=k)`` (``where=`` and ``init=`` too); called on
    expressions, ``product(a, b, c)`` combines them (TVM's two conventions). Over a tuple of
    values (argmax over ``(index, value)``), ``fcombine(x, y)`` takes and returns tuples,
    ``fidentity(*dtypes)`` returns one (``init=`` is a tuple too), and the call gives one
    reduction per value, to return together from a multi-output ``ts.compute``."""
    if not callable(fcombine) or not callable(fidentity):
        raise ComputeError("comm_reducer: give two functions, fcombine(x, y) and fidentity(dtype)")
    reducer = E.CommReducer(fcombine, fidentity, name)

    def reduce(
        expr: E.ExprLike | tuple[E.ExprLike, ...],
        *args: Any,
        axis: Axes | None = None,
        where: E.ExprLike | None = None,
        init: E.ExprLike | tuple[E.ExprLike, ...] | None = None,
    ) -> Any:
        what = f"comm_reducer '{name}'"
        return _reducer_call(what, _make_reduce, _combine_directly, expr, args, axis, where, init)

    def _make_reduce(expr: Any, axis: Axes, where: Any, init: Any) -> Any:
        what = f"comm_reducer '{name}'"
        cond = None if where is None else E.as_expr(where)
        axes = _axes(axis, what)
        if isinstance(expr, (tuple, list)):  # a tuple reduction: one Reduce per value
            srcs = tuple(E.as_expr(x) for x in expr)
            dtypes = tuple(x.dtype for x in srcs)
            xs = tuple(E.Var(f"x{k}", d) for k, d in enumerate(dtypes))
            ys = tuple(E.Var(f"y{k}", d) for k, d in enumerate(dtypes))
            reducer.combine_tuple(xs, ys)  # fcombine and fidentity must work on these types
            reducer.identity_tuple(dtypes)
            if init is not None and (not isinstance(init, (tuple, list)) or len(init) != len(srcs)):
                raise ComputeError(
                    f"{what}: init of a reduction over a {len(srcs)}-tuple must be a "
                    f"{len(srcs)}-tuple of initial values, got {init!r}"
                )
            inits = (
                tuple(_init_of(v, x, axes, what) for v, x in zip(init, srcs))
                if init is not None
                else (None,) * len(srcs)
            )
            return tuple(
                E.Reduce(name, x, axes, cond, x.dtype, reducer, k, srcs, inits[k])
                for k, x in enumerate(srcs)
            )
        src = E.as_expr(expr)
        x, y = E.Var("x", src.dtype), E.Var("y", src.dtype)
        reducer.combine(x, y)  # fcombine and fidentity must work on this type
        reducer.identity(src.dtype)
        first = _init_of(init, src, axes, what)
        return E.Reduce(name, src, axes, cond, src.dtype, reducer, init=first)

    def _combine_directly(a: Any, b: Any) -> Any:
        if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
            pairs = [E.unify(x, y) for x, y in zip(a, b)]
            return reducer.combine_tuple(tuple(p[0] for p in pairs), tuple(p[1] for p in pairs))
        x, y = E.unify(a, b)
        return reducer.combine(x, y)

    return reduce


# ---------------------------------------------------------------- TVM's calls by name

# TVM's intrinsics by name (tir.exp ...): those tensorsched has, each an OpenCL C built-in
_INTRINSICS: dict[str, Callable[..., E.Expr]] = {
    "exp": exp, "log": log, "sqrt": sqrt, "tanh": tanh, "sigmoid": sigmoid, "fabs": fabs,
    "floor": floor, "ceil": ceil, "round": round, "trunc": trunc, "cos": cos, "sin": sin,
    "pow": power, "fmod": fmod, "atan2": atan2,
    **{name: globals()[name] for name in MORE_UNARY},
}  # fmt: skip
# the device functions call_pure_extern may name: OpenCL C's built-ins and C's float
# spellings of them (expf, logf, powf ...; OpenCL C's built-ins are overloaded instead)
_EXTERNS = {n: f for n, f in _INTRINSICS.items() if n != "sigmoid"}
_EXTERNS.update({f"{n}f": f for n, f in list(_EXTERNS.items())})


def _call_by_name(what: str, dtype: str, name: str, args: tuple, known: dict, shown: str) -> E.Expr:
    fn = known.get(name)
    if fn is None:
        names = ", ".join(n for n in known if n in _INTRINSICS)
        raise ComputeError(
            f"{what}({dtype!r}, {shown!r}, ...): tensorsched has no function '{shown}': a kernel "
            f"is OpenCL C 1.2 and calls only the built-ins it knows ({names}"
            + ("; C's float spellings such as expf too" if known is _EXTERNS else "")
            + "). Write the expression with ts.exp, ts.log ... instead (ts.exp for CUDA's "
            "'__expf'); custom intrinsics and lowering rules are not supported, see "
            "docs/tvm_compat.md"
        )
    n_args = 2 if fn in (power, fmod, atan2) else 1
    if len(args) != n_args:
        raise ComputeError(f"{what}: '{name}' takes {n_args} argument(s), got {len(args)}")
    dt.check_dtype(dtype, what)
    if not dt.is_float(dtype):
        raise ComputeError(f"{what}({dtype!r}, {name!r}, ...): '{name}' gives a float dtype")
    return fn(*(E.as_expr(a, dtype).astype(dtype) for a in args))


def call_pure_extern(dtype: str, func_name: str, *args: E.ExprLike) -> E.Expr:
    """TVM's ``tir.call_pure_extern``: a device function called by name, here one of the
    OpenCL C built-ins tensorsched knows (``exp``, ``log`` ... or C's ``expf``, ``logf``),
    computed in ``dtype`` (the arguments cast to it) as that intrinsic; another name is a
    ComputeError."""
    return _call_by_name("call_pure_extern", dtype, func_name, args, _EXTERNS, func_name)


def call_intrin(dtype: str, op_name: str, *args: E.ExprLike) -> E.Expr:
    """TVM's ``tir.call_intrin``: an intrinsic by its TVM name (``"tir.exp"``) in ``dtype``;
    a name tensorsched has no intrinsic for (a TVM user's own, registered with
    ``register_op_attr``) is a ComputeError."""
    name = op_name.removeprefix("tir.")
    return _call_by_name("call_intrin", dtype, name, args, _INTRINSICS, op_name)


class CallEffectKind:
    """TVM's ``tir.CallEffectKind`` values (an argument of ``register_op_attr``)."""

    ExprAnnotator = 0
    Pure = 1
    ReadState = 2
    UpdateState = 3
    Opaque = 4
    Embedded = 5
    SpecialCallArg = 6
    ControlJump = 7


# ---------------------------------------------------------------- refused te functions


def decl_tensor_intrin(
    op: Any, fcompute: Callable[..., Any], *args: Any, **kwargs: Any
) -> NoReturn:
    """TVM's ``te.decl_tensor_intrin``: refused, with what to do instead (``tensorize``'s
    intrinsic; an OpenCL C 1.2 kernel has no tensor instructions to declare)."""
    name = getattr(op, "name", repr(op))
    raise ComputeError(
        f"te.decl_tensor_intrin of compute '{name}': tensor intrinsics (and Stage.tensorize) "
        "are not supported: a kernel is OpenCL C 1.2, which has no tensor instructions to map "
        "a loop nest onto; keep the computation as a ts.compute and schedule its loops "
        "(unroll / vectorize emit OpenCL vector code)"
    )


def extern(
    shape: Any, inputs: Any, fcompute: Callable[..., Any], name: str = "extern", **kwargs: Any
) -> NoReturn:
    """TVM's ``te.extern``: refused (there are no packed functions to call from a kernel)."""
    raise ComputeError(
        f"te.extern '{name}': external functions are not supported: a kernel is one "
        "self-contained OpenCL C program with no packed-function runtime to call into; write "
        "the computation with ts.compute, or run it on the host between module calls"
    )


def gradient(output: Any, inputs: Any, head: Any = None) -> NoReturn:
    """TVM's ``te.gradient``: refused (tensorsched has no automatic differentiation)."""
    name = getattr(getattr(output, "op", output), "name", repr(output))
    raise ComputeError(
        f"te.gradient of '{name}': automatic differentiation is not supported: tensorsched "
        "compiles the computations it is given and derives none; write each derivative as a "
        "ts.compute of its own (the adjoint of a sum of products is another sum of products)"
    )


def hybrid_script(func: Any = None, **kwargs: Any) -> NoReturn:
    """TVM's ``te.hybrid.script`` decorator: refused (no hybrid script front end)."""
    name = getattr(func, "__name__", repr(func))
    raise ComputeError(
        f"te.hybrid.script of '{name}': hybrid script is not supported: tensorsched has the "
        "classic te front end only; write the loops' body as ts.compute expressions (a "
        "sequential dependence as ts.scan) and the loops themselves with a schedule"
    )


def create_prim_func(ops: Any, **kwargs: Any) -> NoReturn:
    """TVM's ``te.create_prim_func``: refused (there is no TensorIR)."""
    raise ComputeError(
        "te.create_prim_func: TensorIR (PrimFunc, tir.Schedule, TVMScript) is not supported: "
        "tensorsched is the classic te pipeline; schedule the tensors with "
        "ts.create_schedule and lower them with ts.lower"
    )


def custom_pass(name: str) -> Callable[..., NoReturn]:
    """TVM's names for writing a lowering pass of one's own (``tir.stmt_functor.
    post_order_visit`` / ``ir_transform``, ``tir.transform.prim_func_pass``,
    ``transform.PassContext`` with ``"tir.add_lower_pass"``): refused, each naming itself."""

    def refused(*args: Any, **kwargs: Any) -> NoReturn:
        raise LoweringError(
            f"{name}: custom lowering passes are not supported: the pass list is fixed "
            "(tensorsched.passes.pipeline). To inspect or change the loop IR, take "
            "ts.lower(s, args), walk or rewrite its body with tensorsched.ir.visitor's "
            "Visitor / StmtMutator (or edit its printed text and ts.parse_ir it), and give "
            "the result to ts.build"
        )

    refused.__name__ = name.rsplit(".", 1)[-1]
    return refused
