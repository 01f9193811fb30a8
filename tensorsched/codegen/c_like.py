"""IR -> C-family text. Dialect facts (qualifiers, work-item functions, vector spellings) are
class attributes and small hooks that ``opencl.py`` fills in."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable

import numpy as np

from ..errors import CodegenError
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.intrin import MORE_UNARY
from ..ir.precedence import ATOM, BINARY, UNARY, needs_parens
from ..ir.simplify import Simplifier

_C_BINARY = {"//": "/", "%": "%"}  # floor ops print as C ops when operands are >= 0

Printer = Callable[["CStyleEmitter", E.Expr], tuple[str, int]]  # an e_<Class> method


class Names:
    """Deterministic C identifiers: dots become underscores, clashes get a counter."""

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self.map: dict[Hashable, str] = {}
        self.used = set(reserved)

    def __call__(self, obj: Hashable, hint: str) -> str:
        if obj not in self.map:
            base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint) or "v"
            if base[0].isdigit():
                base = "v" + base
            name, k = base, 0
            while name in self.used:
                k += 1
                name = f"{base}_{k}"
            self.used.add(name)
            self.map[obj] = name
        return self.map[obj]


class CStyleEmitter:
    """Prints expressions (``e_<Class>`` methods, each returning text and its precedence) and
    statements (``s_<Class>``, appending lines to ``lines``) of the lowered IR as C."""

    types = {
        "float32": "float",
        "float64": "double",
        "float16": "half",
        "int32": "int",
        "int64": "long",
        "bool": "bool",
    }
    float_suffix = "f"
    index_type = "int"  # loop variables and work-item indices; "long" where int32 overflows
    calls = {
        "exp": "exp",
        "log": "log",
        "sqrt": "sqrt",
        "tanh": "tanh",
        "fabs": "fabs",
        "pow": "pow",
        "fmod": "fmod",
        "atan2": "atan2",
        "floor": "floor",
        "ceil": "ceil",
        "round": "round",
        "trunc": "trunc",
        "cos": "cos",
        "sin": "sin",
        **{name: name for name in MORE_UNARY},
        **{n: n for n in ("hypot", "copysign", "nextafter", "ldexp", "rint", "popcount", "clz")},
        **{n: n for n in ("isnan", "isinf", "isfinite")},
    }

    def __init__(self, names: Names) -> None:
        self.names = names
        self.simp = Simplifier()
        self._printers: dict[type, Printer] = {}  # expression class -> its e_<Class> method
        self.lines: list[str] = []
        self.helpers: set[str] = set()  # helper functions the text needs

    # ---- types and names

    def ctype(self, dtype: str) -> str:
        base = self.types[dt.element(dtype)]
        n = dt.lanes(dtype)
        return base if n == 1 else f"{base}{n}"

    def var(self, v: E.Var) -> str:
        return self.names(v, v.name)

    def buf(self, b: S.Buffer) -> str:
        return self.names(b, b.name)

    # ---- expressions: return (text, precedence)

    def expr(self, e: E.Expr) -> str:
        return self._expr(e)[0]

    def _expr(self, e: E.Expr) -> tuple[str, int]:
        m = self._printers.get(type(e))
        if m is None:
            m = getattr(type(self), "e_" + type(e).__name__, None)
            if m is None:
                raise CodegenError(f"cannot generate C for {type(e).__name__}")
            self._printers[type(e)] = m
        return m(self, e)

    def _operand(self, e: E.Expr, prec: int, right: bool) -> str:
        text, p = self._expr(e)
        return f"({text})" if needs_parens(p, prec, right) else text

    def e_IntImm(self, e: E.IntImm) -> tuple[str, int]:
        if e.dtype == "bool":
            return ("true" if e.value else "false"), ATOM
        text = str(e.value) + ("L" if e.dtype == "int64" else "")
        return (text, ATOM) if e.value >= 0 else (f"({text})", ATOM)

    def e_FloatImm(self, e: E.FloatImm) -> tuple[str, int]:
        v = e.value
        if math.isinf(v):
            return ("INFINITY" if v > 0 else "(-INFINITY)"), ATOM
        if math.isnan(v):
            return "NAN", ATOM
        if dt.element(e.dtype) == "float64":
            text = repr(float(v))
        else:
            text = repr(float(np.float32(v)))
            text = (text if ("e" in text or "." in text) else text + ".0") + self.float_suffix
        return (text, ATOM) if v >= 0 else (f"({text})", ATOM)

    def e_Var(self, e: E.Var) -> tuple[str, int]:
        return self.var(e), ATOM

    def nonneg(self, e: E.Expr) -> bool:
        lo, _ = self.simp.bound(self.simp.lin(e))
        return lo is not None and lo >= 0

    def e_BinOp(self, e: E.BinOp) -> tuple[str, int]:
        if e.op in ("min", "max"):
            fn = ("f" + e.op) if dt.is_float(e.dtype) else e.op
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", ATOM
        if e.op in ("//", "%"):
            if dt.lanes(e.dtype) == 1 and self.nonneg(e.a) and self.nonneg(e.b):
                prec = BINARY[e.op][0]
                return (
                    f"{self._operand(e.a, prec, False)} {_C_BINARY[e.op]} "
                    f"{self._operand(e.b, prec, True)}"
                ), prec
            fn = "ts_floordiv" if e.op == "//" else "ts_floormod"
            if self.index_type == "long" or dt.element(e.dtype) == "int64":
                fn += "_long"
            self.helpers.add(fn)
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", ATOM
        prec, spell = BINARY[e.op]
        return f"{self._operand(e.a, prec, False)} {spell} {self._operand(e.b, prec, True)}", prec

    def e_Cmp(self, e: E.Cmp) -> tuple[str, int]:
        prec, spell = BINARY[e.op]
        return f"{self._operand(e.a, prec, False)} {spell} {self._operand(e.b, prec, True)}", prec

    def e_And(self, e: E.And) -> tuple[str, int]:
        p = BINARY["&&"][0]
        return f"{self._operand(e.a, p, False)} && {self._operand(e.b, p, True)}", p

    def e_Or(self, e: E.Or) -> tuple[str, int]:
        p = BINARY["||"][0]
        return f"{self._operand(e.a, p, False)} || {self._operand(e.b, p, True)}", p

    def e_Not(self, e: E.Not) -> tuple[str, int]:
        return f"!{self._operand(e.a, UNARY, True)}", UNARY

    def e_Select(self, e: E.Select) -> tuple[str, int]:
        # the conditional operator evaluates only the chosen side (a padded load stays safe)
        return (f"({self.expr(e.cond)} ? {self.expr(e.t)} : {self.expr(e.f)})"), ATOM

    def e_Cast(self, e: E.Cast) -> tuple[str, int]:
        return f"(({self.ctype(e.dtype)})({self.expr(e.value)}))", ATOM

    def e_Call(self, e: E.Call) -> tuple[str, int]:
        args = [self.expr(a) for a in e.args]
        if e.name == "sigmoid":
            one = self.expr(E.FloatImm(1.0, dt.element(e.dtype)))
            return f"({one} / ({one} + exp(-({args[0]}))))", ATOM
        if e.name in E.BITWISE:  # C's operators; the parentheses keep them apart
            return f"({args[0]} {E.BITWISE[e.name]} {args[1]})", ATOM
        if e.name == "bitwise_not":
            return f"(~{args[0]})", ATOM
        if e.name not in self.calls:
            raise CodegenError(f"no C spelling for intrinsic '{e.name}'")
        return f"{self.calls[e.name]}({', '.join(args)})", ATOM

    def e_Broadcast(self, e: E.Broadcast) -> tuple[str, int]:
        return f"(({self.ctype(e.dtype)})({self.expr(e.value)}))", ATOM

    def e_Ramp(self, e: E.Ramp) -> tuple[str, int]:
        parts = [self.expr(self.simp.visit(e.base + e.stride * k)) for k in range(e.lanes)]
        return f"(({self.ctype(e.dtype)})({', '.join(parts)}))", ATOM

    # ---- statements

    def emit(self, line: str, ind: int) -> None:
        self.lines.append("  " * ind + line)

    def stmt(self, s: S.Stmt, ind: int) -> None:
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise CodegenError(f"cannot generate C for {type(s).__name__}")
        m(s, ind)

    def s_Seq(self, s: S.Seq, ind: int) -> None:
        for x in s.stmts:
            self.stmt(x, ind)

    def s_Produce(self, p: S.Produce, ind: int) -> None:
        self.emit(f"// {p.name}", ind)
        self.stmt(p.body, ind)

    def _ranged(self, var: E.Var, lo: int | None, hi: int | None, fn: Callable[[], object]) -> None:
        self.simp.with_range(var, lo, hi, fn)

    def s_For(self, f: S.For, ind: int) -> None:
        v = self.var(f.var)
        lo, min_hi = self.simp.bound(self.simp.lin(f.min))
        ext = self.simp.bound(self.simp.lin(f.extent))[1]
        hi = None
        if lo is not None and ext is not None and min_hi is not None:
            hi = min_hi + ext - 1
        if f.kind == "unrolled":
            self.emit("#pragma unroll", ind)
        start = self.expr(f.min)
        end = (
            self.expr(f.extent)
            if getattr(f.min, "value", None) == 0
            else self.expr(f.min + f.extent)
        )
        self.emit(f"for ({self.index_type} {v} = {start}; {v} < {end}; ++{v}) {{", ind)
        self._ranged(f.var, lo, hi, lambda: self.stmt(f.body, ind + 1))
        self.emit("}", ind)

    def s_IfThenElse(self, s: S.IfThenElse, ind: int) -> None:
        self.emit(f"if ({self.expr(s.cond)}) {{", ind)
        self.stmt(s.then, ind + 1)
        if s.orelse is not None:
            self.emit("} else {", ind)
            self.stmt(s.orelse, ind + 1)
        self.emit("}", ind)

    def s_Store(self, s: S.Store, ind: int) -> None:
        self.emit(self.store(s) + ";", ind)

    def store(self, s: S.Store) -> str:
        return f"{self.buf(s.buffer)}[{self.expr(s.index)}] = {self.expr(s.value)}"
