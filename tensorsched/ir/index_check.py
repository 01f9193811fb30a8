"""The index check of parsed IR: whether every index of a buffer stays inside it.

``index_bounds`` proves it with interval bounds from the simplifier; where intervals cannot,
``index_reach`` decides exactly by evaluating the index and the guards in force (numpy, the IR's
floor ``//`` and ``%``) at every point of the loops they depend on, part by part, and names the
loop values of a counterexample. ``parse_ir`` (``parser.py``) runs it on every access.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ParseError
from . import dtype as dt
from . import expr as E
from .simplify import Lin, Simplifier, const_bound
from .visitor import Mutator, Visitor, free_vars


class IndexBoundsError(ParseError):
    """An index of the parsed IR may leave its buffer (``parse_ir`` checks every one).

    ``counterexample`` holds the loop values (by name) at which the index leaves its buffer
    when the check found them (the access really goes out of bounds), and is ``None`` when
    the index could only not be proven inside (``index_reach`` was not exact)."""

    def __init__(self, *args, counterexample: dict[str, int] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.counterexample = counterexample


def bounds(e, ranges):
    """Inclusive integer bounds of ``e`` (``const_bound``); ``(None, None)`` where the
    simplifier cannot tell, a division by a constant zero included."""
    try:
        return const_bound(e, ranges)
    except ZeroDivisionError:
        return None, None


_FLIP = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def guard_facts(cond: E.Expr, negated: bool = False) -> list[E.Expr]:
    """What ``cond`` (or its negation) says about integers, as expressions ``f`` with
    ``f <= 0``: ``i*4 + j < 10`` gives ``i*4 + j - 9``. Conditions it cannot use give none."""
    if isinstance(cond, E.Not):
        return guard_facts(cond.a, not negated)
    if isinstance(cond, (E.And, E.Or)) and isinstance(cond, E.And) != negated:
        return guard_facts(cond.a, negated) + guard_facts(cond.b, negated)
    if isinstance(cond, E.Call) and cond.name == "likely" and len(cond.args) == 1:
        return guard_facts(cond.args[0], negated)
    if not isinstance(cond, E.Cmp):
        return []
    dtype = getattr(cond.a, "dtype", "")  # every expression node has one
    if not dt.is_int(dtype) or dt.lanes(dtype) != 1:
        return []
    op = _FLIP[cond.op] if negated else cond.op
    a, b = cond.a, cond.b
    diff = {
        "<": (a - b) + 1,
        "<=": a - b,
        ">": (b - a) + 1,
        ">=": b - a,
    }
    if op == "==":
        return [a - b, b - a]
    return [diff[op]] if op in diff else []


class _Group:
    """Bounds ``lo <= sum(terms) <= hi`` that guards put on one linear combination."""

    def __init__(self, terms: dict, lo: int | None, hi: int | None):
        self.terms, self.lo, self.hi = terms, lo, hi

    def narrow(self, lo: int | None, hi: int | None) -> None:
        self.lo = lo if self.lo is None else (self.lo if lo is None else max(self.lo, lo))
        self.hi = hi if self.hi is None else (self.hi if hi is None else min(self.hi, hi))


def _guard_groups(facts: list[E.Expr], ranges: dict) -> list[_Group]:
    """The guards as bounds on linear combinations; a guard on one variable narrows its
    entry of ``ranges`` instead, and one on ``x // c`` bounds ``x``."""
    s = Simplifier(ranges)
    groups: list[_Group] = []
    work = list(facts)
    while work:
        lf = s.lin(work.pop())
        if lf.is_const():
            continue
        g = math.gcd(*lf.terms.values())
        terms = {a: k // g for a, k in lf.terms.items()}
        hi = (-lf.const) // g  # sum(terms) * g + const <= 0
        if len(terms) == 1:
            ((atom, k),) = terms.items()
            if isinstance(atom, E.Var) and k in (1, -1):
                var = _Group({atom: 1}, *ranges.get(atom, (None, None)))
                var.narrow(*((None, hi) if k == 1 else (-hi, None)))
                ranges[atom] = (var.lo, var.hi)
                continue
            c = _const_divisor(atom, "//")
            if c and k in (1, -1):  # x // c <= hi: x <= hi*c + c - 1; x // c >= lo: x >= lo*c
                x = atom.a
                work.append(x - (hi * c + c - 1) if k == 1 else E.IntImm(-hi * c) - x)
        negated = {a: -k for a, k in terms.items()}
        for group in groups:
            if group.terms == terms:
                group.narrow(None, hi)
                break
            if group.terms == negated:
                group.narrow(-hi, None)
                break
        else:
            groups.append(_Group(terms, None, hi))
    return groups


def _const_divisor(e: E.Expr, op: str) -> int | None:
    """``c`` if ``e`` is ``x op c`` with a positive constant ``c``."""
    if isinstance(e, E.BinOp) and e.op == op and isinstance(e.b, E.IntImm) and e.b.value > 0:
        return e.b.value
    return None


def _add(a: tuple, b: tuple, k: int = 1) -> tuple:
    """``a + k*b`` of inclusive bounds, ``None`` where unknown."""
    lo, hi = (b[0], b[1]) if k > 0 else (b[1], b[0])
    return (
        None if a[0] is None or lo is None else a[0] + k * lo,
        None if a[1] is None or hi is None else a[1] + k * hi,
    )


class _Bounds:
    """Bounds of integer expressions over loop ranges under guards (``index_bounds``)."""

    def __init__(self, ranges: dict, facts: list[E.Expr]):
        ranges = dict(ranges)
        for _ in range(3):  # narrowing one variable may turn another guard into a single one
            before = dict(ranges)
            groups = _guard_groups(facts, ranges)
            if ranges == before:
                break
        self.empty = any(
            lo is not None and hi is not None and hi < lo for lo, hi in ranges.values()
        )
        self.s = Simplifier(ranges)
        # bounds already found, by expression object: each ``of`` tries every group plan, and
        # each plan bounds the atoms (``x // c``, ``x % c``) through ``of`` again, so without
        # it nested divisions (a fused chain of reshapes) cost exponential time
        self._memo: dict[int, tuple[E.Expr, tuple]] = {}
        self.groups = sorted(groups, key=lambda g: -len(g.terms))
        for group in self.groups:
            group.narrow(*self.lin_bound(Lin(dict(group.terms))))
        self._memo.clear()  # found with the groups' bounds before they narrowed

    def atom(self, e: E.Expr) -> tuple:
        """Bounds of an atom of the linear form: ``x // c`` and ``x % c`` from ``x``'s."""
        c = _const_divisor(e, "//") or _const_divisor(e, "%")
        if not c or not isinstance(e, E.BinOp):
            return self.s.bound(e)
        lo, hi = self.of(e.a)
        if e.op == "//":
            return (None if lo is None else lo // c), (None if hi is None else hi // c)
        if lo is not None and hi is not None and lo // c == hi // c:
            return lo % c, hi % c
        return 0, c - 1

    def lin_bound(self, lin: Lin) -> tuple:
        out = (lin.const, lin.const)
        for atom, k in lin.terms.items():
            out = _add(out, self.atom(atom), k)
        return out

    def of(self, e: E.Expr) -> tuple:
        """Inclusive bounds ``(lo, hi)`` of ``e``, ``None`` where unknown."""
        hit = self._memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        out = self._of(e)
        self._memo[id(e)] = (e, out)
        return out

    def _of(self, e: E.Expr) -> tuple:
        lin = self.s.lin(e)
        candidates = [self.lin_bound(lin)]
        for plan in [self.groups] + [[g] for g in self.groups]:
            rest, acc = Lin(dict(lin.terms), lin.const), (0, 0)
            for group in plan:
                atom, k0 = next(iter(group.terms.items()))
                k, r = divmod(rest.terms.get(atom, 0), k0)
                if k == 0 or r or any(rest.terms.get(a) != k * c for a, c in group.terms.items()):
                    continue
                rest = rest.plus(Lin(dict(group.terms)), -k)
                acc = _add(acc, (group.lo, group.hi), k)
            candidates.append(_add(acc, self.lin_bound(rest)))
        los = [lo for lo, _ in candidates if lo is not None]
        his = [hi for _, hi in candidates if hi is not None]
        return (max(los) if los else None), (min(his) if his else None)


def index_bounds(index: E.Expr, ranges: dict, facts: list[E.Expr]) -> tuple:
    """Inclusive bounds ``(lo, hi)`` of the integer ``index`` over the loop ``ranges`` under
    the guard ``facts`` (``guard_facts``); ``None`` where unknown; ``(0, -1)`` where the
    guards never hold together.

    The simplifier's linear form does the work: a guard on a single variable narrows its
    range; a guard on a combination (``i.outer*4 + i.inner < 10``) bounds every multiple of
    that combination found in the index (``i.outer*24 + i.inner*6 + j`` holds 6 of it), and
    the bounds of ``x // c`` and ``x % c`` come from those of ``x``."""
    b = _Bounds(ranges, facts)
    return (0, -1) if b.empty else b.of(index)


class Lanes(Mutator):
    """A vector index as one scalar: ``ramp(b, s, n)`` is ``b + s*t`` with ``t`` in
    ``[0, n-1]``, ``broadcast(x, n)`` is ``x``."""

    def __init__(self, ranges: dict):
        self.ranges = ranges

    def visit_Ramp(self, e: E.Ramp) -> E.Expr:
        lane = E.Var("lane")
        self.ranges[lane] = (0, e.lanes - 1)
        return self.visit(e.base) + self.visit(e.stride) * lane

    def visit_Broadcast(self, e: E.Broadcast) -> E.Expr:
        return self.visit(e.value)


# ---------------------------------------------------------------- the exact index check

ENUMERATE_LIMIT = 1 << 22  # points of one part of a loop domain that the check runs through
_CHUNK = 1 << 16  # points evaluated at once
_HUGE = 1 << 62  # past this an int64 product or sum might wrap: not evaluated


class _NotEvaluable(Exception):
    """The exact check cannot evaluate this expression at these points (a division by zero,
    a value past 2^62)."""


def _evaluable(e: E.Expr) -> bool:
    """Whether ``_evaluate`` takes ``e``: integer and boolean scalars of the loop variables,
    not loads (their values are run-time data), floats or vectors."""
    if isinstance(e, E.IntImm | E.Var):
        return dt.lanes(e.dtype) == 1 and not dt.is_float(e.dtype)
    if isinstance(e, E.BinOp):
        ok = e.op in _INT_OPS and not dt.is_float(e.dtype) and dt.lanes(e.dtype) == 1
        return ok and _evaluable(e.a) and _evaluable(e.b)
    if isinstance(e, E.Cmp):
        return dt.lanes(e.dtype) == 1 and _evaluable(e.a) and _evaluable(e.b)
    if isinstance(e, E.And | E.Or):
        return _evaluable(e.a) and _evaluable(e.b)
    if isinstance(e, E.Not):
        return _evaluable(e.a)
    if isinstance(e, E.Select):
        return _evaluable(e.cond) and _evaluable(e.t) and _evaluable(e.f)
    if isinstance(e, E.Cast):
        return dt.lanes(e.dtype) == 1 and not dt.is_float(e.dtype) and _evaluable(e.value)
    if isinstance(e, E.Call):
        if e.name in _BIT_OPS or e.name == "bitwise_not":  # TVM's bitwise intrinsics
            return dt.lanes(e.dtype) == 1 and all(_evaluable(a) for a in e.args)
        return e.name == "likely" and len(e.args) == 1 and _evaluable(e.args[0])
    return False


def _checked(x: Any) -> Any:  # an int64 array or scalar
    if np.abs(x).max(initial=0) >= _HUGE:
        raise _NotEvaluable
    return x


def _floor_op(op):
    def apply(a, b):
        if not np.all(b != 0):
            raise _NotEvaluable
        return op(a, b)

    return apply


_INT_OPS = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "//": _floor_op(np.floor_divide),  # numpy's, as Python's and the IR's: toward -infinity
    "%": _floor_op(np.remainder),  # the sign of the divisor
    "min": np.minimum,
    "max": np.maximum,
}


def _shift_left(a, b):
    if np.any(b < 0) or np.any(b >= 62):
        raise _NotEvaluable
    return _checked(np.left_shift(_checked(a), b))


def _shift_right(a, b):
    if np.any(b < 0) or np.any(b >= 64):
        raise _NotEvaluable
    return np.right_shift(a, b)  # arithmetic, as the device's on signed integers


_BIT_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "shift_left": _shift_left,
    "shift_right": _shift_right,
}
_CMP_OPS = {
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
}


def _evaluate(e: E.Expr, env: dict) -> Any:  # an array or scalar of int64 or bool
    """The value of the ``_evaluable`` expression ``e`` at the points ``env`` (Var -> int64
    array, one entry per point), with the IR's semantics: Python's integers, ``//`` and
    ``%`` rounding toward minus infinity, as the python target runs them."""
    if isinstance(e, E.IntImm):
        if dt.is_bool(e.dtype):
            return np.bool_(e.value)
        if abs(e.value) >= _HUGE:
            raise _NotEvaluable
        return np.int64(e.value)
    if isinstance(e, E.Var):
        return env[e]
    if isinstance(e, E.BinOp):
        a, b = _evaluate(e.a, env), _evaluate(e.b, env)
        if e.op in ("+", "-", "*"):
            _checked(a), _checked(b)
            if e.op == "*" and np.abs(a).max(initial=0) * np.abs(b).max(initial=0) >= _HUGE:
                raise _NotEvaluable
        return _INT_OPS[e.op](a, b)
    if isinstance(e, E.Cmp):
        return _CMP_OPS[e.op](_evaluate(e.a, env), _evaluate(e.b, env))
    if isinstance(e, E.And):
        return np.logical_and(_evaluate(e.a, env), _evaluate(e.b, env))
    if isinstance(e, E.Or):
        return np.logical_or(_evaluate(e.a, env), _evaluate(e.b, env))
    if isinstance(e, E.Not):
        return np.logical_not(_evaluate(e.a, env))
    if isinstance(e, E.Select):
        return np.where(_evaluate(e.cond, env), _evaluate(e.t, env), _evaluate(e.f, env))
    if isinstance(e, E.Cast):
        v = _evaluate(e.value, env)
        return v != 0 if dt.is_bool(e.dtype) else np.asarray(v, dtype=np.int64)
    if isinstance(e, E.Call):  # likely(x) and the bitwise intrinsics
        args = [_evaluate(a, env) for a in e.args]
        if e.name == "bitwise_not":
            return np.invert(args[0])
        return _BIT_OPS[e.name](*args) if e.name in _BIT_OPS else args[0]
    raise _NotEvaluable


def evaluate_at(e: E.Expr, env: dict[E.Var, np.ndarray]) -> np.ndarray | None:
    """The values of ``e`` (integer and boolean scalars of ``env``'s variables) at the points
    ``env`` gives (Var -> int64 array, one entry per point), with the IR's semantics; None
    where ``e`` holds anything else (a load, a float, a vector, a variable ``env`` lacks) or a
    value might overflow int64."""
    if not _evaluable(e) or not all(v in env for v in free_vars(e)):
        return None
    try:
        with np.errstate(divide="ignore"):
            return np.asarray(_evaluate(e, env))
    except (_NotEvaluable, ZeroDivisionError):
        return None


def _conjuncts(cond: E.Expr, negated: bool) -> list[E.Expr]:
    """``cond`` (or its negation) as conditions that all hold: ``a && b`` gives ``a`` and
    ``b``, so one side the check cannot evaluate does not hide the other."""
    if isinstance(cond, E.Not):
        return _conjuncts(cond.a, not negated)
    if isinstance(cond, E.And | E.Or) and isinstance(cond, E.And) != negated:
        return _conjuncts(cond.a, negated) + _conjuncts(cond.b, negated)
    if isinstance(cond, E.Call) and cond.name == "likely" and len(cond.args) == 1:
        return _conjuncts(cond.args[0], negated)
    return [E.Not(cond) if negated else cond]


def _connected(terms: list, guards: list[E.Expr]) -> list[_Part]:
    """``terms`` (``(k, expr)``) and ``guards`` in parts that share no loop variable: the
    sum over the product of independent parts takes its extremes at their own extremes."""
    parts: list[_Part] = []
    owner: dict[E.Var, _Part] = {}
    for item, is_term in [(t, True) for t in terms] + [(g, False) for g in guards]:
        found = free_vars(item[1] if is_term else item)
        joined = list({id(owner[v]): owner[v] for v in found if v in owner}.values())
        if not found and parts and not parts[0].vars:
            joined = [parts[0]]  # constant items share one part
        part = joined[0] if joined else _Part()
        if not joined:
            parts.insert(0 if not found else len(parts), part)
        for other in joined[1:]:
            part.vars.update(other.vars)
            part.terms += other.terms
            part.guards += other.guards
            parts.remove(other)
        part.vars.update(dict.fromkeys(found))
        for v in part.vars:
            owner[v] = part
        (part.terms if is_term else part.guards).append(item)
    return parts


class _Part:
    """Terms of an index (``sum(k * expr)``) and guards over one connected set of loop
    variables."""

    def __init__(self) -> None:
        self.vars: dict[E.Var, None] = {}
        self.terms: list[tuple[int, E.Expr]] = []
        self.guards: list[E.Expr] = []

    def size(self, ranges: dict) -> int | None:
        """The points of its loop variables' ranges; ``None`` where one is unbounded."""
        n = 1
        for v in self.vars:
            lo, hi = ranges.get(v, (None, None))
            if lo is None or hi is None:
                return None
            n *= max(hi - lo + 1, 0)
        return n

    def run(self, ranges: dict) -> tuple[bool, tuple | None, tuple | None]:
        """Every point, ``_CHUNK`` at a time: whether the guards hold at some point, then the
        least and the greatest sum of the terms there, each as ``(value, point)`` (``point``:
        Var -> value); ``None`` without terms or points."""
        vars_ = list(self.vars)
        lows = [ranges[v][0] for v in vars_]
        sizes = [ranges[v][1] - ranges[v][0] + 1 for v in vars_]
        total = math.prod(sizes)
        alive, least, most = False, None, None
        for start in range(0, total, _CHUNK):
            flat = np.arange(start, min(total, start + _CHUNK), dtype=np.int64)
            coords = np.unravel_index(flat, sizes) if vars_ else ()
            env = {v: c + lo for v, c, lo in zip(vars_, coords, lows)}
            mask = np.ones(len(flat), dtype=bool)
            for g in self.guards:
                mask &= np.broadcast_to(_evaluate(g, env), mask.shape).astype(bool)
            at = np.flatnonzero(mask)
            if not len(at):
                continue
            alive = True
            if not self.terms:
                break
            value = np.zeros(len(flat), dtype=np.int64)
            for k, e in self.terms:
                value = _checked(value + _checked(k * _checked(_evaluate(e, env))))
            value = value[at]
            lo_j, hi_j = int(value.argmin()), int(value.argmax())
            if least is None or value[lo_j] < least[0]:
                least = (int(value[lo_j]), {v: int(env[v][at[lo_j]]) for v in vars_})
            if most is None or value[hi_j] > most[0]:
                most = (int(value[hi_j]), {v: int(env[v][at[hi_j]]) for v in vars_})
        return alive, least, most


class Reach:
    """What the exact check found of an index: ``dead`` (no point of the loops satisfies its
    guards: the access never runs), else its least and greatest values ``lo`` and ``hi``
    (``None``: unbounded), each with the loop values that reach it where ``exact``; ``why``
    says what kept it from being exact."""

    def __init__(self, dead: bool, lo: tuple, hi: tuple, exact: bool, why: str) -> None:
        (self.lo, self.lo_at), (self.hi, self.hi_at) = lo, hi
        self.dead, self.exact, self.why = dead, exact, why


def index_reach(
    index: E.Expr, ranges: dict, guards: list[tuple[E.Expr, bool]], facts: list[E.Expr]
) -> Reach:
    """The values the scalar integer ``index`` takes over the loop ``ranges`` (inclusive,
    Var -> (lo, hi)) at the points where every guard ``(cond, negated)`` holds, found by
    running through the points (numpy, ``_CHUNK`` at a time).

    The index and the guards are split into parts that share no loop variable (a guard joins
    the variables it mentions); each part of at most ``ENUMERATE_LIMIT`` points is run through
    exactly, the whole index at once where every part is that small, else each term of its
    linear form (``Simplifier.lin``) on its own. A larger part, a term that reads a buffer
    and a guard the check cannot evaluate (one that reads a buffer, a float or a vector) fall
    back to the interval bounds (``index_bounds``) and make the answer inexact; ``facts`` are
    the guards as ``guard_facts`` gives them, for those bounds."""
    conds = [c for cond, negated in guards for c in _conjuncts(cond, negated)]
    usable = [c for c in conds if _evaluable(c)]
    why = (
        "" if len(usable) == len(conds) else "a guard around it reads a buffer, a float or a vector"
    )
    if _evaluable(index):
        parts = _connected([(1, index)], usable)
        sizes = [p.size(ranges) for p in parts]
        if all(n is not None and n <= ENUMERATE_LIMIT for n in sizes):
            return _sum(parts, [], ranges, facts, why)
    lin = Simplifier(ranges).lin(index)
    terms = [(k, a) for a, k in lin.terms.items()]
    parts = _connected([t for t in terms if _evaluable(t[1])], usable)
    rest = [t for t in terms if not _evaluable(t[1])]
    if rest:
        why = why or _not_evaluable_why([a for _, a in rest])
    return _sum(parts, rest, ranges, facts, why, lin.const)


def _not_evaluable_why(terms: list[E.Expr]) -> str:
    """Why the exact check cannot run through ``terms``: a load (run-time data) or a float
    (an index computed as ``int32(floor(y * 0.5f))``, which it does not evaluate)."""
    found: set[str] = set()

    class _Kinds(Visitor):
        def visit(self, e: Any) -> Any:
            if isinstance(e, E.TensorLoad | E.Load):
                found.add("load")
            elif isinstance(e, E.Expr) and dt.is_float(e.dtype):
                found.add("float")
            return super().visit(e)

    for t in terms:
        _Kinds().visit(t)
    if "load" in found or not found:
        return "it depends on values read from a buffer at run time"
    return (
        "it is computed from a float (a cast of floor or round of a float expression), "
        "which the check does not evaluate; clamp it into the buffer with min and max"
    )


def _sum(parts, rest, ranges, facts, why, const=0) -> Reach:
    """``Reach`` of ``const`` + the parts + the ``rest`` terms (bounded by intervals)."""
    lo, hi, lo_at, hi_at = const, const, {}, {}
    interval = list(rest)
    for p in parts:
        n = p.size(ranges)
        if n is None or n > ENUMERATE_LIMIT:
            interval += p.terms
            why = why or (
                f"the loops it depends on run more than {ENUMERATE_LIMIT} times together, "
                "too many to check one by one"
                if n is not None
                else "a loop around it has no constant bounds"
            )
            continue
        try:
            alive, least, most = p.run(ranges)
        except _NotEvaluable:
            interval += p.terms
            why = why or "it divides by zero or passes 2^62 at some point"
            continue
        if not alive:
            return Reach(True, (None, None), (None, None), True, "")
        if least is not None:
            lo, hi = lo + least[0], hi + most[0]
            lo_at.update(least[1])
            hi_at.update(most[1])
    if interval:
        b = _Bounds(ranges, facts)
        if b.empty:  # the guards never hold together
            return Reach(True, (None, None), (None, None), True, "")
        ilo, ihi = b.of(b.s.to_expr(Lin({e: k for k, e in interval})))
        lo = None if ilo is None else lo + ilo
        hi = None if ihi is None else hi + ihi
    exact = not why
    return Reach(False, (lo, lo_at if exact else None), (hi, hi_at if exact else None), exact, why)
