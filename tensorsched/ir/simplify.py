"""Arithmetic simplifier that knows the ranges of loop variables.

Integer expressions are put in a canonical linear form ``sum(coeff * atom) + const`` where an atom
is a variable or an expression the form cannot open (``x // 4``, ``min(a, b)``, a load ...). The
rules that need ranges work on that form:

- ``(4*x + y) // 4  ->  x + y // 4`` always, and ``y // 4 -> 0`` when ``0 <= y < 4``;
- ``(4*x + y) % 4   ->  y % 4``      always, and ``y % 4 -> y`` when ``0 <= y < 4``;
- ``(x // a) // b -> x // (a*b)``; ``(x % a) % b -> x % b`` when ``b`` divides ``a``;
- ``(g*x + y) // (g*m) -> x // m`` and ``(g*x + y) % (g*m) -> (x % m)*g + y`` when ``0 <= y < g``;
- ``(x // c)*c + x % c -> x`` and ``(x // c % m)*c + x % c -> x % (c*m)``;
- ``min``/``max``/comparisons are decided when the ranges (or a constant difference) decide them.

Ranges are inclusive ``(lo, hi)`` pairs of ints per variable; ``None`` means unknown.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from . import dtype as dt
from . import expr as E
from . import stmt as S
from .visitor import Mutator, NodeT, substitute

T = TypeVar("T")
Bound = tuple[int | None, int | None]  # inclusive (lo, hi); None: unknown
Ranges = Mapping[E.Var, Bound]
_UNKNOWN: Bound = (None, None)
_NONNEG: Bound = (0, None)  # a size variable's range when nothing narrows it

# ---------------------------------------------------------------- canonical linear form


class Lin:
    """``sum(terms[atom] * atom) + const``; atoms keep their first-seen order."""

    __slots__ = ("terms", "const")

    def __init__(self, terms: dict[Any, int] | None = None, const: int = 0) -> None:
        self.terms, self.const = terms or {}, const

    def is_const(self) -> bool:
        return not self.terms

    def scaled(self, k: int) -> Lin:
        if k == 0:
            return Lin()
        return Lin({a: c * k for a, c in self.terms.items()}, self.const * k)

    def plus(self, other: Lin, sign: int = 1) -> Lin:
        terms = dict(self.terms)
        for a, c in other.terms.items():
            n = terms.get(a, 0) + sign * c
            if n:
                terms[a] = n
            else:
                terms.pop(a, None)
        return Lin(terms, self.const + sign * other.const)


_FLOAT_FOLD: dict[str, Callable[[float, float], float | None]] = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "/": lambda x, y: x / y if y else None,
    "min": min,
    "max": max,
}


class Simplifier(Mutator):
    """Simplifies expressions and statements; ``ranges`` maps Vars to inclusive (lo, hi).

    The linear form of each node is remembered while the ranges stay the same (``with_range``
    starts a fresh memory for the body and restores the outer one after it): the written-out
    copies of an unrolled loop share most of their index arithmetic."""

    def __init__(self, ranges: Ranges | None = None) -> None:
        self.ranges: dict[E.Var, Bound] = dict(ranges or {})
        # loop variable -> its loop's end (min + extent) where that is symbolic: v < end
        self.ends: dict[E.Var, E.Expr] = {}
        self._memo: dict[
            int, tuple[E.Expr, Lin]
        ] = {}  # id(node) -> (node, Lin) under the current ranges

    # ---- bounds

    def bound(self, e: E.Expr | Lin) -> Bound:
        """Inclusive integer bounds of ``e`` as (lo, hi); either may be None (unknown)."""
        lo: int | None
        hi: int | None
        if isinstance(e, Lin):
            lo = hi = e.const
            for atom, k in e.terms.items():
                alo, ahi = self.bound(atom)
                if k > 0:
                    lo = None if lo is None or alo is None else lo + k * alo
                    hi = None if hi is None or ahi is None else hi + k * ahi
                else:
                    lo = None if lo is None or ahi is None else lo + k * ahi
                    hi = None if hi is None or alo is None else hi + k * alo
            return lo, hi
        if isinstance(e, E.IntImm):
            return e.value, e.value
        if isinstance(e, E.Var):
            return self.ranges.get(e, _NONNEG if e.nonneg else _UNKNOWN)
        if isinstance(e, E.BinOp):
            if e.op in ("+", "-"):
                return self.bound(self.lin(e))
            (alo, ahi), (blo, bhi) = self.bound(e.a), self.bound(e.b)
            if e.op == "*":
                if alo is None or ahi is None or blo is None or bhi is None:
                    if alo is not None and blo is not None and alo >= 0 and blo >= 0:
                        return alo * blo, None  # of non-negative factors, one unbounded
                    return None, None
                p = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
                return min(p), max(p)
            if e.op in ("//", "%") and blo is not None and blo == bhi and blo > 0:
                c = blo
                if e.op == "//":
                    return (None if alo is None else alo // c), (None if ahi is None else ahi // c)
                if alo is not None and ahi is not None and alo // c == ahi // c:
                    return alo % c, ahi % c
                return 0, c - 1
            if e.op == "min":
                lo = None if alo is None or blo is None else min(alo, blo)
                hi = ahi if bhi is None else (bhi if ahi is None else min(ahi, bhi))
                return lo, hi
            if e.op == "max":
                lo = alo if blo is None else (blo if alo is None else max(alo, blo))
                hi = None if ahi is None or bhi is None else max(ahi, bhi)
                return lo, hi
            return None, None
        if isinstance(e, E.Select):
            (alo, ahi), (blo, bhi) = self.bound(e.t), self.bound(e.f)
            return (
                None if alo is None or blo is None else min(alo, blo),
                None if ahi is None or bhi is None else max(ahi, bhi),
            )
        return None, None

    # ---- linear form

    def lin(self, e: E.Expr) -> Lin:
        """The canonical linear form of the integer expression ``e``."""
        hit = self._memo.get(id(e))
        if hit is not None and hit[0] is e:
            return hit[1]
        out = self._lin(e)
        self._memo[id(e)] = (e, out)
        return out

    def _lin(self, e):
        if isinstance(e, E.IntImm):
            return Lin(const=e.value)
        if isinstance(e, E.BinOp) and not dt.is_float(e.dtype) and dt.lanes(e.dtype) == 1:
            if e.op in ("+", "-"):
                return self.lin(e.a).plus(self.lin(e.b), 1 if e.op == "+" else -1)
            if e.op == "*":
                la, lb = self.lin(e.a), self.lin(e.b)
                if la.is_const():
                    return lb.scaled(la.const)
                if lb.is_const():
                    return la.scaled(lb.const)
                return self._atom(
                    E.BinOp("*", self.to_expr(la, e.dtype), self.to_expr(lb, e.dtype))
                )
            if e.op in ("//", "%"):
                lb = self.lin(e.b)
                if lb.is_const() and lb.const > 0:
                    div_or_mod = self._div if e.op == "//" else self._mod
                    return div_or_mod(self.lin(e.a), lb.const, e.dtype)
                return self._atom(E.BinOp(e.op, self.visit(e.a), self.visit(e.b)))
            if e.op in ("min", "max"):
                return self._minmax(e.op, self.lin(e.a), self.lin(e.b), e.dtype)
        if isinstance(e, E.Var):
            lo, hi = self.ranges.get(e, (None, None))
            return Lin(const=lo) if lo is not None and lo == hi else Lin({e: 1})
        if isinstance(e, E.Select):
            out = self.visit_Select(e)
            return self._atom(out) if isinstance(out, E.Select) else self.lin(out)
        if isinstance(e, E.Cast) and isinstance(e.value, E.IntImm):  # int64(7) of a size
            out = self.visit_Cast(e)
            return Lin(const=out.value) if isinstance(out, E.IntImm) else self._atom(out)
        return self._atom(
            self.generic_visit(e)
            if not isinstance(e, E.BinOp)
            else E.BinOp(e.op, self.visit(e.a), self.visit(e.b))
        )

    def _atom(self, e):
        if isinstance(e, E.IntImm):
            return Lin(const=e.value)
        return Lin({e: 1})

    def _div(self, la, c, dtype):
        if c == 1:
            return la
        q, r = Lin(), Lin(const=la.const % c)
        q.const = la.const // c
        for atom, k in la.terms.items():
            if k % c == 0:
                q.terms[atom] = k // c
            else:
                r.terms[atom] = k
        lo, hi = self.bound(r)
        if lo is not None and hi is not None and lo // c == hi // c:
            return q.plus(Lin(const=lo // c))
        # (x // a) // c  ->  x // (a*c)
        if r.const == 0 and len(r.terms) == 1:
            ((atom, k),) = r.terms.items()
            if (
                k == 1
                and isinstance(atom, E.BinOp)
                and atom.op == "//"
                and isinstance(atom.b, E.IntImm)
                and atom.b.value > 0
            ):
                return q.plus(self._atom(E.BinOp("//", atom.a, E.IntImm(atom.b.value * c, dtype))))
        # common factor g of the rest and c: (g*x) // (g*m) -> x // m
        g = math.gcd(c, r.const, *r.terms.values())
        if g > 1:
            return q.plus(
                self._div(Lin({a: k // g for a, k in r.terms.items()}, r.const // g), c // g, dtype)
            )
        split = self._coarse_fine(r, c)
        if split is not None:  # (g*x + y) // (g*m) -> x // m when 0 <= y < g
            g, coarse, _ = split
            return q.plus(self._div(coarse, c // g, dtype))
        return q.plus(self._atom(E.BinOp("//", self.to_expr(r, dtype), E.IntImm(c, dtype))))

    def _coarse_fine(self, r, c):
        """``(g, coarse/g, fine)`` with ``r = coarse + fine``, ``g`` dividing ``c`` and every
        coefficient of ``coarse``, and ``0 <= fine < g``; or None."""
        for g in sorted({math.gcd(c, k) for k in r.terms.values()}, reverse=True):
            if g <= 1 or g == c:
                continue
            coarse = Lin({a: k // g for a, k in r.terms.items() if k % g == 0})
            fine = Lin({a: k for a, k in r.terms.items() if k % g}, r.const)
            if not coarse.terms:
                continue
            lo, hi = self.bound(fine)
            if lo is not None and hi is not None and 0 <= lo and hi < g:
                return g, coarse, fine
        return None

    def _mod(self, la, c, dtype):
        if c == 1:
            return Lin()
        r = Lin({a: k for a, k in la.terms.items() if k % c}, la.const % c)
        lo, hi = self.bound(r)
        if lo is not None and hi is not None and lo // c == hi // c:
            return r.plus(Lin(const=-(lo // c) * c))
        if r.const == 0 and len(r.terms) == 1:
            ((atom, k),) = r.terms.items()
            if (
                k == 1
                and isinstance(atom, E.BinOp)
                and atom.op == "%"
                and isinstance(atom.b, E.IntImm)
                and atom.b.value % c == 0
            ):
                return self._mod(self.lin(atom.a), c, dtype)
        g = math.gcd(c, r.const, *r.terms.values())
        if g > 1:
            inner = self._mod(
                Lin({a: k // g for a, k in r.terms.items()}, r.const // g), c // g, dtype
            )
            return inner.scaled(g)
        split = self._coarse_fine(r, c)
        if split is not None:  # (g*x + y) % (g*m) -> (x % m)*g + y when 0 <= y < g
            g, coarse, fine = split
            return self._mod(coarse, c // g, dtype).scaled(g).plus(fine)
        return self._atom(E.BinOp("%", self.to_expr(r, dtype), E.IntImm(c, dtype)))

    def _mod_atom(self, a: E.Expr, c: int) -> E.Expr:
        """The atom that ``a % c`` simplifies to (``(x % (c*m)) % c`` is ``x % c``), else
        ``a % c`` itself."""
        r = self._mod(self.lin(a), c, a.dtype)
        if r.const == 0 and len(r.terms) == 1:
            ((atom, k),) = r.terms.items()
            if k == 1:
                return atom
        return E.BinOp("%", a, E.IntImm(c, a.dtype))

    def _minmax(self, op, la, lb, dtype):
        d = la.plus(lb, -1)
        lo, hi = self.bound(d)
        if op == "min":
            if hi is not None and hi <= 0:
                return la
            if lo is not None and lo >= 0:
                return lb
        else:
            if lo is not None and lo >= 0:
                return la
            if hi is not None and hi <= 0:
                return lb
        return self._atom(E.BinOp(op, self.to_expr(la, dtype), self.to_expr(lb, dtype)))

    def to_expr(self, lin: Lin, dtype: str = "int32") -> E.Expr:
        """``lin`` as an expression of the integer type ``dtype``. The linear form has no
        type of its own, so every node rebuilt from one (here and in ``_div``, ``_mod`` and
        ``_minmax``) takes the type of the expression it came from: an int32 constant beside
        an int64 operand would make the node int32 (a ``BinOp`` has its first operand's type)
        and print as an ``int`` that OpenCL's overloaded ``min``/``max`` cannot match with a
        ``long``."""
        terms = dict(lin.terms)
        # (x // c)*k*c + (x % c)*k  ->  x*k
        changed = True
        while changed:
            changed = False
            for atom, k in list(terms.items()):
                if (
                    isinstance(atom, E.BinOp)
                    and atom.op == "//"
                    and isinstance(atom.b, E.IntImm)
                    and atom.b.value > 0
                ):
                    c = atom.b.value
                    mod = self._mod_atom(atom.a, c)
                    if k % c == 0 and terms.get(mod) == k // c:
                        del terms[atom], terms[mod]
                        rest = Lin(terms, lin.const).plus(self.lin(atom.a).scaled(k // c))
                        terms, lin = rest.terms, rest
                        changed = True
                        break
                # q*k*c + (x % c)*k  ->  x*k, where q is what x // c simplified to
                if (
                    isinstance(atom, E.BinOp)
                    and atom.op == "%"
                    and isinstance(atom.b, E.IntImm)
                    and atom.b.value > 0
                ):
                    c = atom.b.value
                    q = self._div(self.lin(atom.a), c, atom.a.dtype)
                    if q.terms and all(terms.get(t) == kq * k * c for t, kq in q.terms.items()):
                        for t in q.terms:
                            del terms[t]
                        del terms[atom]
                        rest = Lin(terms, lin.const - q.const * k * c)
                        rest = rest.plus(self.lin(atom.a).scaled(k))
                        terms, lin = rest.terms, rest
                        changed = True
                        break
                # (x // c % m)*k*c + (x % c)*k  ->  (x % (c*m))*k
                if (
                    isinstance(atom, E.BinOp)
                    and atom.op == "%"
                    and isinstance(atom.b, E.IntImm)
                    and isinstance(atom.a, E.BinOp)
                    and atom.a.op == "//"
                    and isinstance(atom.a.b, E.IntImm)
                    and atom.a.b.value > 0
                ):
                    x, c, m = atom.a.a, atom.a.b.value, atom.b.value
                    low = E.BinOp("%", x, atom.a.b)
                    if k % c == 0 and terms.get(low) == k // c:
                        del terms[atom], terms[low]
                        wide = E.BinOp("%", x, E.IntImm(c * m, x.dtype))
                        terms[wide] = terms.get(wide, 0) + k // c
                        lin = Lin(terms, lin.const)
                        changed = True
                        break
        out = None
        for atom, k in terms.items():
            if out is None:
                out = atom if k == 1 else E.BinOp("*", atom, E.IntImm(k, dtype))
            elif k > 0:
                out = E.BinOp("+", out, atom if k == 1 else E.BinOp("*", atom, E.IntImm(k, dtype)))
            else:
                out = E.BinOp(
                    "-", out, atom if k == -1 else E.BinOp("*", atom, E.IntImm(-k, dtype))
                )
        c = lin.const
        if out is None:
            return E.IntImm(c, dtype)
        if c > 0:
            out = E.BinOp("+", out, E.IntImm(c, dtype))
        elif c < 0:
            out = E.BinOp("-", out, E.IntImm(-c, dtype))
        return out

    # ---- expressions

    def visit(self, node: Any) -> Any:
        if (
            isinstance(node, E.Expr)
            and dt.is_int(node.dtype)
            and dt.lanes(node.dtype) == 1
            and not isinstance(node, (E.IntImm, E.Var))
            and (isinstance(node, E.BinOp) or isinstance(node, E.Select))
        ):
            out = self.to_expr(self.lin(node), node.dtype)
            return node if out == node else out  # an unchanged node keeps its identity
        return super().visit(node)

    def visit_BinOp(self, e: E.BinOp) -> E.Expr:
        a, b = self.visit(e.a), self.visit(e.b)
        if isinstance(a, E.FloatImm) and isinstance(b, E.FloatImm):
            fold = _FLOAT_FOLD.get(e.op)
            v = fold(a.value, b.value) if fold else None
            if v is not None:
                return E.FloatImm(v, e.dtype)
        return e if a is e.a and b is e.b else E.BinOp(e.op, a, b)

    def visit_Cmp(self, e: E.Cmp) -> E.Expr:
        a, b = self.visit(e.a), self.visit(e.b)
        if dt.is_int(a.dtype) and dt.lanes(a.dtype) == 1:
            lo, hi = self.bound(self.lin(a).plus(self.lin(b), -1))
            decided = _decide(e.op, lo, hi)
            if decided is None and e.op == "<" and self.ends:
                decided = self._below_end(a, b)
            if decided is not None:
                return E.TRUE if decided else E.FALSE
            if e.op == "<" and isinstance(b, E.IntImm):
                dropped = self._drop_remainder(a, b.value)
                if dropped is not None:
                    return E.Cmp("<", dropped, b)
        if isinstance(a, E.FloatImm) and isinstance(b, E.FloatImm):
            return E.TRUE if _compare(e.op, a.value, b.value) else E.FALSE
        return e if a is e.a and b is e.b else E.Cmp(e.op, a, b)

    def _below_end(self, a: E.Expr, b: E.Expr) -> bool | None:
        """True when ``a < b`` follows from a loop variable of ``a`` staying below its loop's
        symbolic end (``i < m`` inside ``for (i, 0, m)``), else None."""
        d = self.lin(a).plus(self.lin(b), -1)
        for v, k in d.terms.items():
            if k == 1 and isinstance(v, E.Var) and v in self.ends:
                # v <= end - 1, so d <= d - v + end - 1
                rest = d.plus(Lin({v: 1}), -1).plus(self.lin(self.ends[v])).plus(Lin(const=-1))
                hi = self.bound(rest)[1]
                if hi is not None and hi < 0:
                    return True
        return None

    def _drop_remainder(self, a, c):
        """``q + r < c`` is ``q < c`` when ``q`` and ``c`` are multiples of some ``m`` and
        ``0 <= r < m``: the lane of a vector (or the element of a tile) drops out of a bounds
        guard whose tile size divides the bound. Returns the simpler left side, or None."""
        la = self.lin(a)
        for m in sorted({math.gcd(c, k) for k in la.terms.values()}, reverse=True):
            if m <= 1:
                break
            q = Lin({t: k for t, k in la.terms.items() if k % m == 0}, la.const - la.const % m)
            r = Lin({t: k for t, k in la.terms.items() if k % m}, la.const % m)
            if not r.terms or c % m:
                continue
            lo, hi = self.bound(r)
            if lo is not None and hi is not None and 0 <= lo and hi < m:
                return self.to_expr(q, a.dtype)
        return None

    def visit_And(self, e: E.And) -> E.Expr:
        # flatten the chain of conjuncts, drop true and repeated ones (a guard of an uneven
        # split and the domain guard of an attached stage are often the same condition)
        terms: list[E.Expr] = []
        stack: list[E.Expr] = [e]
        while stack:
            x = stack.pop()
            if isinstance(x, E.And):
                stack += [x.b, x.a]
            else:
                terms.append(x)
        out = []
        for t in terms:
            t = self.visit(t)
            if t == E.FALSE:
                return E.FALSE
            if t == E.TRUE or t in out:
                continue
            out.append(t)
        if not out:
            return E.TRUE
        c = out[0]
        for t in out[1:]:
            c = E.And(c, t)
        return e if c == e else c

    def visit_Or(self, e: E.Or) -> E.Expr:
        a, b = self.visit(e.a), self.visit(e.b)
        if a == E.TRUE or b == E.TRUE:
            return E.TRUE
        if a == E.FALSE:
            return b
        if b == E.FALSE:
            return a
        return e if a is e.a and b is e.b else E.Or(a, b)

    def visit_Not(self, e: E.Not) -> E.Expr:
        a = self.visit(e.a)
        if a == E.TRUE:
            return E.FALSE
        if a == E.FALSE:
            return E.TRUE
        return e if a is e.a else E.Not(a)

    def visit_Select(self, e: E.Select) -> E.Expr:
        c = self.visit(e.cond)
        if c == E.TRUE:
            return self.visit(e.t)
        if c == E.FALSE:
            return self.visit(e.f)
        t, f = self.visit(e.t), self.visit(e.f)
        return e if c is e.cond and t is e.t and f is e.f else E.Select(c, t, f)

    def visit_Cast(self, e: E.Cast) -> E.Expr:
        v = self.visit(e.value)
        if v.dtype == e.dtype:
            return v
        if (
            isinstance(v, (E.IntImm, E.FloatImm))
            and dt.lanes(e.dtype) == 1
            and (not dt.is_int(e.dtype) or dt.fits(int(v.value), e.dtype))
        ):  # a narrowing cast that would wrap stays for the target to do
            return E.const(v.value if dt.is_float(e.dtype) else int(v.value), e.dtype)
        return e if v is e.value else E.Cast(e.dtype, v)

    # ---- statements

    def with_range(self, var: E.Var, lo: int | None, hi: int | None, fn: Callable[[], T]) -> T:
        """``fn()`` with ``var`` known to lie in ``[lo, hi]``."""
        old, memo = self.ranges.get(var), self._memo
        self.ranges[var] = (lo, hi)
        self._memo = {}
        try:
            return fn()
        finally:
            self._memo = memo
            if old is None:
                del self.ranges[var]
            else:
                self.ranges[var] = old

    def visit_For(self, f: S.For) -> S.Stmt:
        mn, ext = self.visit(f.min), self.visit(f.extent)
        if isinstance(ext, E.IntImm) and ext.value <= 0:
            return S.Seq(())
        lo, _ = self.bound(mn)
        elo, ehi = self.bound(ext)
        mlo, mhi = self.bound(mn)
        hi = None if mhi is None or ehi is None else mhi + ehi - 1
        if hi is None and not isinstance(ext, E.IntImm):  # a symbolic end: v < min + extent
            self.ends[f.var] = ext if getattr(mn, "value", None) == 0 else mn + ext
        body = self.with_range(f.var, lo, hi, lambda: self.visit(f.body))
        if mn is f.min and ext is f.extent and body is f.body:
            return f
        return dataclasses.replace(f, min=mn, extent=ext, body=body)

    def visit_ThreadExtent(self, t: S.ThreadExtent) -> S.Stmt:
        hi = extent_upper(t.extent)
        body = self.with_range(t.var, 0, None if hi is None else hi - 1, lambda: self.visit(t.body))
        return t if body is t.body else dataclasses.replace(t, body=body)

    def visit_IfThenElse(self, s: S.IfThenElse) -> S.Stmt:
        c = self.visit(s.cond)
        if c == E.TRUE:
            return self.visit(s.then)
        if c == E.FALSE:
            return self.visit(s.orelse) if s.orelse is not None else S.Seq(())
        then = self.visit(s.then)
        orelse = self.visit(s.orelse) if s.orelse is not None else None
        if c is s.cond and then is s.then and orelse is s.orelse:
            return s
        return S.IfThenElse(c, then, orelse)


def _compare(op, x, y):
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "==": x == y, "!=": x != y}[op]


def _decide(op, lo, hi):
    """Decide ``d op 0`` from bounds of d, or None."""
    if op == "<":
        return (
            True if hi is not None and hi < 0 else (False if lo is not None and lo >= 0 else None)
        )
    if op == "<=":
        return (
            True if hi is not None and hi <= 0 else (False if lo is not None and lo > 0 else None)
        )
    if op == ">":
        return (
            True if lo is not None and lo > 0 else (False if hi is not None and hi <= 0 else None)
        )
    if op == ">=":
        return (
            True if lo is not None and lo >= 0 else (False if hi is not None and hi < 0 else None)
        )
    if op == "==":
        if lo is not None and lo == hi:
            return lo == 0
        return False if (lo is not None and lo > 0) or (hi is not None and hi < 0) else None
    if op == "!=":
        d = _decide("==", lo, hi)
        return None if d is None else not d
    return None


def simplify(node: NodeT, ranges: Ranges | None = None) -> NodeT:
    """Simplify an expression or statement; ``ranges`` maps Vars to inclusive (lo, hi)."""
    return Simplifier(ranges).visit(node)


def const_bound(e: E.Expr, ranges: Ranges) -> Bound:
    """Inclusive integer bounds (lo, hi) of ``e`` under ``ranges``; None where unknown."""
    s = Simplifier(ranges)
    return s.bound(s.lin(e))


# ---------------------------------------------------------------- extents

Extent = int | E.Expr
"""The length of a loop or a dimension: an int, or an integer expression of size variables
(``ts.var`` / ``ts.size_var``). Constant extents stay Python ints, so that the integer path
computes exactly what it did before symbolic sizes existed."""


def extent_of(e: Extent) -> Extent:
    """``e`` simplified: an int where it is constant, else the simplified expression."""
    if isinstance(e, int):
        return e
    out = simplify(e)
    return out.value if isinstance(out, E.IntImm) else out


def extent_expr(e: Extent) -> E.Expr:
    """An extent as an expression (an int becomes an ``IntImm``)."""
    return E.IntImm(e) if isinstance(e, int) else e


def _pair(a: Extent, b: Extent) -> tuple[E.Expr, E.Expr]:
    """Two extents as expressions of one integer type (an int takes the other's type)."""
    return E.unify(a, b)


def ext_mul(a: Extent, b: Extent) -> Extent:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    x, y = _pair(a, b)
    return extent_of(x * y)


def ext_ceil_div(a: Extent, b: Extent) -> Extent:
    """``ceil(a / b)`` for ``a >= 0`` and ``b > 0``."""
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    x, y = _pair(a, b)
    return extent_of((x + (y - 1)) // y)


def ext_min(a: Extent, b: Extent) -> Extent:
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    return extent_of(E.BinOp("min", *_pair(a, b)))


def ext_equal(a: Extent, b: Extent) -> bool:
    """Whether ``a == b`` holds for every value of the size variables (provably)."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    x, y = _pair(a, b)
    return extent_of(x - y) == 0


def extent_upper(e: Extent) -> int | None:
    """The largest value ``e`` can take, or None where it is not bounded by a constant."""
    if isinstance(e, int):
        return e
    if isinstance(e, E.IntImm):
        return e.value
    return const_bound(e, {})[1]


def func_size_vars(args: Sequence[S.Buffer], size_args: Sequence[tuple[int, E.Var]]) -> list[E.Var]:
    """The sizes a function with arguments ``args`` and ``size_args`` (``LoweredFunc``) takes:
    those of the arguments' shapes, then the listed ones that no shape has (a size used only
    as a split factor), in that order."""
    out = size_vars(tuple(b.shape for b in args))
    return out + [v for _, v in size_args if v not in out]


def size_vars(node: object) -> list[E.Var]:
    """The variables in the extent (or tuple of extents) ``node``, in first-use order."""
    found: dict[E.Var, None] = {}

    def walk(x: object) -> None:
        if isinstance(x, E.Var):
            found[x] = None
        elif isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
        elif isinstance(x, E.Expr):
            for name in ("a", "b", "value", "cond", "t", "f"):
                child = getattr(x, name, None)
                if child is not None:
                    walk(child)
            if isinstance(x, E.Call):
                walk(x.args)

    walk(node)
    return list(found)


def evaluate_extent(e: Extent, values: Mapping[E.Var, int]) -> int:
    """The value of the extent ``e`` with its size variables set to ``values``; ``KeyError``
    names a variable that ``values`` lacks."""
    if isinstance(e, int):
        return e
    if isinstance(e, E.IntImm):
        return e.value
    missing = [v for v in size_vars(e) if v not in values]
    if missing:
        raise KeyError(missing[0].name)
    out = simplify(substitute(e, {v: E.IntImm(values[v], v.dtype) for v in size_vars(e)}))
    if not isinstance(out, E.IntImm):
        raise ValueError(f"{e} does not evaluate to an integer")
    return out.value
