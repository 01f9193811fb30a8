"""The canonical text form of the IR, in TVM's style (``produce C { for (i, 0, 64) { ... } }``).

Operators get parentheses only where the shared precedence table needs them. Variables keep
their names; a variable that shadows another of the same name in scope gets a ``_1`` suffix so
the text stays unambiguous. ``ir/grammar.lark`` (``ts.parse_ir``) reads this text back.

``allocate`` and ``// attr [..] thread_extent`` lines own the rest of their block; one that
does not (it is followed by more statements of the enclosing sequence) is printed inside a
bare ``{ ... }`` block. A typed constant is ``int64(5)`` or ``float16(1.5)``; a cast of a plain
``int32`` constant spells the constant's type too (``float16(int32(5))``) so the two differ.
"""

from __future__ import annotations

import json
import re

from . import expr as E
from . import stmt as S
from .precedence import ATOM, BINARY, FUNCTION_STYLE, UNARY, needs_parens

# Words of the grammar that a name cannot be (tests check this list against grammar.lark).
KEYWORDS = frozenset(
    {
        "func",
        "for",
        "unrolled",
        "vectorized",
        "parallel",
        "if",
        "else",
        "produce",
        "last_group",
        "allocate",
        "barrier",
        "thread_extent",
        "True",
        "False",
    }
)
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*\Z")


def ident(name: str) -> str:
    """``name`` as the grammar reads it: quoted when it is a keyword or has odd characters."""
    return name if _PLAIN_NAME.match(name) and name not in KEYWORDS else json.dumps(name)


class Printer:
    """IR -> the text form ``ts.parse_ir`` reads (TVM's style)."""

    def __init__(self) -> None:
        self.names: dict[E.Var, str] = {}  # Var -> printed name
        self.in_scope: dict[str, list[E.Var]] = {}  # printed name -> its binders, innermost last

    # ---- names

    def bind(self, var: E.Var) -> str:
        """The name ``var``'s binder prints: its own, unless a binder of another variable in
        scope has it (a stage whose loops are printed twice, as double buffering's prologue
        and in the loop, has the same variables each time: inside a consumer's loop of the
        same name, they take a suffix)."""
        name = var.name
        if self.in_scope.get(name) and self.in_scope[name][-1] is not var:
            k = 1
            while self.in_scope.get(f"{name}_{k}"):
                k += 1
            name = f"{name}_{k}"
        self.names[var] = name
        self.in_scope.setdefault(name, []).append(var)
        return name

    def unbind(self, var: E.Var) -> None:
        self.in_scope[self.names[var]].pop()

    def var(self, v: E.Var) -> str:
        return ident(self.names.get(v, v.name))

    # ---- expressions: (text, precedence)

    def expr(self, e: E.Expr) -> str:
        return self._expr(e)[0]

    def extent(self, d: int | E.Expr) -> str:
        """An extent or a dimension: an int, or an expression of size variables."""
        return str(d) if isinstance(d, int) else self.expr(d)

    def dim(self, d: int | E.Expr) -> str:
        """A dimension of a buffer: an int, a size variable, or ``(expression)``."""
        if isinstance(d, int):
            return str(d)
        if isinstance(d, E.Var) and d.dtype != "int32":
            return f"{d.dtype} {self._expr(d)[0]}"  # int64 n: the size's type
        text, prec = self._expr(d)
        return text if prec == ATOM else f"({text})"

    def _expr(self, e):
        m = getattr(self, "e_" + type(e).__name__, None)
        if m is None:
            return f"<{type(e).__name__}>", ATOM
        return m(e)

    def _operand(self, e, prec, right):
        text, p = self._expr(e)
        return f"({text})" if needs_parens(p, prec, right) else text

    def e_IntImm(self, e: E.IntImm) -> tuple[str, int]:
        if e.dtype == "bool":
            return ("True" if e.value else "False"), ATOM
        if e.dtype != "int32":
            return f"{e.dtype}({e.value})", ATOM
        return (str(e.value), ATOM) if e.value >= 0 else (f"({e.value})", ATOM)

    def e_FloatImm(self, e: E.FloatImm) -> tuple[str, int]:
        text = repr(float(e.value))
        if text in ("inf", "-inf", "nan"):
            return f'{e.dtype}("{text}")', ATOM
        text = text[:-2] if text.endswith(".0") else text
        if e.dtype == "float32":
            return (f"{text}f", ATOM) if not text.startswith("-") else (f"({text}f)", ATOM)
        return f"{e.dtype}({text})", ATOM

    def e_Var(self, e: E.Var) -> tuple[str, int]:
        return self.var(e), ATOM

    def e_BinOp(self, e: E.BinOp) -> tuple[str, int]:
        if e.op in FUNCTION_STYLE:
            return f"{e.op}({self.expr(e.a)}, {self.expr(e.b)})", ATOM
        prec, spell = BINARY[e.op]
        return (
            f"{self._operand(e.a, prec, False)} {spell} {self._operand(e.b, prec, True)}"
            if prec < 10
            else f"{self._operand(e.a, prec, False)}{spell}{self._operand(e.b, prec, True)}"
        ), prec

    def e_Cmp(self, e: E.Cmp) -> tuple[str, int]:
        prec, spell = BINARY[e.op]
        return f"{self._operand(e.a, prec, False)} {spell} {self._operand(e.b, prec, True)}", prec

    def e_And(self, e: E.And) -> tuple[str, int]:
        prec = BINARY["&&"][0]
        return f"{self._operand(e.a, prec, False)} && {self._operand(e.b, prec, True)}", prec

    def e_Or(self, e: E.Or) -> tuple[str, int]:
        prec = BINARY["||"][0]
        return f"{self._operand(e.a, prec, False)} || {self._operand(e.b, prec, True)}", prec

    def e_Not(self, e: E.Not) -> tuple[str, int]:
        return f"!{self._operand(e.a, UNARY, True)}", UNARY

    def e_Select(self, e: E.Select) -> tuple[str, int]:
        return f"select({self.expr(e.cond)}, {self.expr(e.t)}, {self.expr(e.f)})", ATOM

    def e_Cast(self, e: E.Cast) -> tuple[str, int]:
        v = e.value
        if isinstance(v, E.IntImm) and v.dtype == "int32":  # not to be read as int64(5)
            return f"{e.dtype}(int32({v.value}))", ATOM
        return f"{e.dtype}({self.expr(v)})", ATOM

    def e_Call(self, e: E.Call) -> tuple[str, int]:
        args = [self.expr(a) for a in e.args]
        if not e.args or e.args[0].dtype != e.dtype:  # the parser's default dtype
            args.append(f"dtype={e.dtype}")
        return f"{ident(e.name)}({', '.join(args)})", ATOM

    def e_TensorLoad(self, e: E.TensorLoad) -> tuple[str, int]:
        return f"{ident(e.tensor.name)}[{', '.join(self.expr(i) for i in e.indices)}]", ATOM

    def e_Load(self, e: E.Load) -> tuple[str, int]:
        return f"{ident(e.buffer.name)}[{self.expr(e.index)}]", ATOM

    def e_Ramp(self, e: E.Ramp) -> tuple[str, int]:
        return f"ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})", ATOM

    def e_Broadcast(self, e: E.Broadcast) -> tuple[str, int]:
        return f"broadcast({self.expr(e.value)}, {e.lanes})", ATOM

    def e_Reduce(self, e: E.Reduce) -> tuple[str, int]:
        axes = ", ".join(self.var(iv.var) for iv in e.axis)
        where = f", where={self.expr(e.condition)}" if e.condition is not None else ""
        init = f", init={self.expr(e.init)}" if e.init is not None else ""
        return f"reduce_{e.combiner}({self.expr(e.source)}, axis=[{axes}]{where}{init})", ATOM

    # ---- statements

    def stmt(self, s: S.Stmt, indent: int = 0) -> str:
        out: list[str] = []
        self._stmt(s, indent, out)
        return "\n".join(out)

    def _stmt(self, s, ind, out):
        pad = "  " * ind
        if isinstance(s, S.Seq):
            for k, x in enumerate(s.stmts):
                if isinstance(x, (S.Allocate, S.ThreadExtent, S.AttrStmt)) and k + 1 < len(s.stmts):
                    out.append(f"{pad}{{")  # its scope ends before the rest
                    self._stmt(x, ind + 1, out)
                    out.append(f"{pad}}}")
                else:
                    self._stmt(x, ind, out)
        elif isinstance(s, S.Store):
            out.append(f"{pad}{ident(s.buffer.name)}[{self.expr(s.index)}] = {self.expr(s.value)}")
        elif isinstance(s, S.For):
            for k, v in s.pragmas:
                out.append(f"{pad}// pragma {k} = {repr(v) if isinstance(v, str) else v}")
            name = ident(self.bind(s.var))
            head = "for" if s.kind == "serial" else s.kind
            out.append(f"{pad}{head} ({name}, {self.expr(s.min)}, {self.expr(s.extent)}) {{")
            self._stmt(s.body, ind + 1, out)
            out.append(f"{pad}}}")
            self.unbind(s.var)
        elif isinstance(s, S.ThreadExtent):
            name = ident(self.bind(s.var))
            tag = "" if name == s.tag else f": {s.tag}"
            out.append(f"{pad}// attr [{name}{tag}] thread_extent = {self.extent(s.extent)}")
            self._stmt(s.body, ind, out)
            self.unbind(s.var)
        elif isinstance(s, S.Allocate):
            b = s.buffer
            dims = "".join(f" * {self.dim(d)}" for d in b.shape)
            out.append(f"{pad}allocate {ident(b.name)}[{b.dtype}{dims}], {b.scope}")
            self._stmt(s.body, ind, out)
        elif isinstance(s, S.AttrStmt):
            out.append(f"{pad}// attr [{ident(s.buffer.name)}] {s.key} = {s.value!r}")
            self._stmt(s.body, ind, out)
        elif isinstance(s, S.Produce):
            out.append(f"{pad}produce {ident(s.name)} {{")
            self._stmt(s.body, ind + 1, out)
            out.append(f"{pad}}}")
        elif isinstance(s, S.IfThenElse):
            out.append(f"{pad}if ({self.expr(s.cond)}) {{")
            self._stmt(s.then, ind + 1, out)
            if s.orelse is not None:
                out.append(f"{pad}}} else {{")
                self._stmt(s.orelse, ind + 1, out)
            out.append(f"{pad}}}")
        elif isinstance(s, S.Barrier):
            out.append(f"{pad}barrier({s.scope})")
        elif isinstance(s, S.LastGroup):
            counter = f"{ident(s.counter.name)}[{self.expr(s.index)}]"
            out.append(f"{pad}last_group ({counter}, {s.tag}, {self.extent(s.count)}) {{")
            self._stmt(s.body, ind + 1, out)
            out.append(f"{pad}}}")
        else:
            out.append(f"{pad}<{type(s).__name__}>")


def print_expr(e: E.Expr) -> str:
    return Printer().expr(e)


def print_stmt(s: S.Stmt) -> str:
    return Printer().stmt(s)


def print_func(f: S.LoweredFunc) -> str:
    p = Printer()
    params = [
        f"{ident(b.name)}: {b.dtype}[{', '.join(map(p.dim, b.shape))}]{' image' if b.image else ''}"
        for b in f.args
    ]
    for k, v in sorted(f.size_args, key=lambda kv: kv[0]):  # the sizes at their positions
        params.insert(k, f"{ident(v.name)}: {v.dtype}")
    args = ", ".join(params)
    return f"func {ident(f.name)}({args}) {{\n{Printer().stmt(f.body, 1)}\n}}"


def _expr_str(self: E.Expr) -> str:
    return print_expr(self)


def _func_str(self: S.LoweredFunc) -> str:
    return print_stmt(self.body)


# expr.py and stmt.py cannot import the printer (it imports them)
E.Expr.__str__ = _expr_str  # type: ignore[method-assign,assignment]
S.LoweredFunc.__str__ = _func_str  # type: ignore[method-assign,assignment]
S.LoweredFunc.script = print_func
