"""``ts.parse_ir``: the printed loop IR, read back into the same IR.

Reads both forms the printer writes: the bare body (``print(ts.lower(...))``) and the function
form (``LoweredFunc.script()``, ``func name(A: float32[64, 32], ...) { ... }``). The grammar is
``grammar.lark`` plus the binary-operator rules generated from ``precedence.BINARY`` (the
printer's table), parsed with Lark's LALR parser.

Parsing has three steps:

1. Lark builds the parse tree; ``IRBuilder`` turns it into IR, one rule to one node. Names
   are not resolved yet: every variable use is a fresh placeholder ``Var`` and every buffer
   use a placeholder ``Buffer``, remembered with their source positions.
2. ``_Resolve`` walks the IR top-down with scopes: a loop or ``thread_extent`` binds a new
   ``Var`` for its body, an ``allocate`` line binds its buffer for the rest of its block, the
   signature binds the arguments.
3. In the bare form, buffers that are used but never declared become 1-d global buffers of
   dtype float32 (or the type of what is stored into them), sized by a conservative bound of
   their indices over the loop ranges. The function form must declare every buffer.

Errors raise ``ParseError`` with the line, the column and a caret.
"""

from __future__ import annotations

import ast
import functools
import json
import os

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, VisitError
from lark.lexer import PatternStr

from ..errors import ParseError
from . import dtype as dt
from . import expr as E
from . import stmt as S
from .precedence import BINARY, FUNCTION_STYLE
from .simplify import const_bound
from .visitor import Mutator, Visitor

GRAMMAR_FILE = os.path.join(os.path.dirname(__file__), "grammar.lark")
THREAD_TAGS = (
    "blockIdx.x",
    "blockIdx.y",
    "blockIdx.z",
    "threadIdx.x",
    "threadIdx.y",
    "threadIdx.z",
)


# ---------------------------------------------------------------- the grammar


def binary_rules(table=BINARY, operand="unary"):
    """Lark rules for the binary operators of ``table`` (op -> (precedence, spelling)): one
    left-associative level ``?bin_<p>`` per precedence, ``?expr`` at the loosest level.

    Both text grammars (the IR's and the tensor expressions') append these rules, so the
    printer and the parsers agree on precedence by construction.
    """
    levels = sorted({p for p, _ in table.values()})
    lines = [f"?expr: bin_{levels[0]}"]
    for k, p in enumerate(levels):
        tighter = f"bin_{levels[k + 1]}" if k + 1 < len(levels) else operand
        spellings = sorted((s for q, s in table.values() if q == p), key=len, reverse=True)
        lines.append(f"?bin_{p}: {tighter} | bin_{p} OP_{p} {tighter} -> binary")
        lines.append(f"OP_{p}: " + " | ".join(json.dumps(s) for s in spellings))
    return "\n".join(lines) + "\n"


@functools.cache
def ir_parser():
    """The LALR parser of the IR text (built once)."""
    with open(GRAMMAR_FILE) as f:
        grammar = f.read()
    return Lark(
        grammar + binary_rules(),
        parser="lalr",
        propagate_positions=True,
        maybe_placeholders=True,
        lexer_callbacks={"NAME": _unquote},
        start=["start", "expr"],
    )


def _unquote(tok):
    """``"for"`` (a name the printer quoted) is the name ``for``."""
    return tok.update(value=json.loads(tok.value)) if tok.value.startswith('"') else tok


# ---------------------------------------------------------------- errors


def _error_at(text, message, line, column, width=1, filename="<ir>"):
    lines = text.split("\n")
    src = lines[line - 1] if 0 < line <= len(lines) else ""
    return ParseError(message, line, column, src, filename, width)


def _describe(parser, name):
    """A readable name of terminal ``name`` for 'expected ...' lists."""
    special = {
        "NAME": "a name",
        "INT": "an integer",
        "FLOAT": "a float32 constant (1.5f)",
        "TYPED_CONST": "a typed constant (int64(5))",
        "ATTR": "'// attr'",
        "PRAGMA": "'// pragma'",
        "$END": "the end of the text",
    }
    if name in special:
        return special[name]
    try:
        pattern = parser.get_terminal(name).pattern
    except KeyError:
        return name
    if isinstance(pattern, PatternStr):
        return repr(pattern.value)
    if name.startswith("OP_"):
        return "an operator"
    return name


_STATEMENT_START = {
    "NAME",
    "FOR",
    "UNROLLED",
    "VECTORIZED",
    "PARALLEL",
    "IF",
    "PRODUCE",
    "BARRIER",
    "LBRACE",
    "ALLOCATE",
    "ATTR",
    "PRAGMA",
}


def _expected(parser, names):
    """'x, y or z' for the terminals ``names``; long lists are summarised by kind."""
    names = set(names)
    if len(names) > 6:
        groups = [
            ("an operator", any(n.startswith("OP_") for n in names)),
            ("a statement", names & _STATEMENT_START == _STATEMENT_START),
            ("'}'", "RBRACE" in names),
            ("the end of the text", "$END" in names),
        ]
        descr = [g for g, present in groups if present] or ["an expression"]
    else:
        descr = sorted({_describe(parser, n) for n in names})
    return descr[0] if len(descr) == 1 else ", ".join(descr[:-1]) + " or " + descr[-1]


# Known mistakes with their own message, recognised by Lark's match_examples (the parser
# state and the unexpected token of each example).
_EXAMPLES = {
    "a loop header is (variable, min, extent): for (i, 0, 64)": [
        "for (i, 4) {}",
        "for (i) {}",
        "unrolled (i, 4) {}",
        "for (i, 0, 4, 1) {}",
        "for i in range(4) {}",
        "for (i in 0..4) {}",
    ],
    "a store writes one element: name[index] = value": [
        "A[0] == 1f",
        "A[0] 1f",
        "A = 1f",
        "A[0] += 1f",
    ],
}
_LOOP_KEYWORDS = {"FOR", "UNROLLED", "VECTORIZED", "PARALLEL", "PRAGMA"}


def _syntax_error(text, exc, filename):
    """A ``ParseError`` for Lark's ``exc``, with a tailored message where one is known."""
    parser = ir_parser()
    if isinstance(exc, UnexpectedCharacters):
        ch = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
        before = text[: exc.pos_in_stream]
        if ch == "." and before[-1:].isdigit():
            msg = (
                "a float32 constant needs the suffix 'f' (1.5f); another type is spelled "
                "float64(1.5)"
            )
        else:
            msg = f"unexpected character {ch!r}; expected {_expected(parser, exc.allowed or ())}"
        return _error_at(text, msg, exc.line, exc.column, 1, filename)
    token = getattr(exc, "token", None)
    expected = set(getattr(exc, "expected", ()) or ())
    at_end = isinstance(exc, UnexpectedEOF) or (token is not None and token.type == "$END")
    if at_end:
        lines = text.rstrip().split("\n")
        line, col = len(lines), len(lines[-1]) + 1
        msg = (
            "the text ends inside a block: a '{' is missing its '}'"
            if "RBRACE" in expected
            else f"the text ends too early; expected {_expected(parser, expected)}"
        )
        return _error_at(text, msg, line, col, 1, filename)
    label = exc.match_examples(
        lambda t: parser.parse(t, start="start"), _EXAMPLES, use_accepts=True
    )
    if expected and expected <= _LOOP_KEYWORDS:
        msg = "a '// pragma' line must come right before the loop it annotates"
    elif label is not None:
        msg = f"{label}; found {token.value!r}"
    else:
        msg = f"unexpected {token.value!r}; expected {_expected(parser, expected)}"
    return _error_at(text, msg, token.line, token.column, len(token.value) or 1, filename)


# ---------------------------------------------------------------- parse tree -> IR

_OP_OF_SPELLING = {spelling: op for op, (_, spelling) in BINARY.items()}
_LOGIC = {"&&": E.And, "||": E.Or}
_COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")


def is_dtype(name):
    """Whether ``name`` is a dtype: a scalar type, or one with lanes (``float32x4``)."""
    base, _, lanes = name.partition("x")
    return base in dt.SCALAR_TYPES and (lanes == "" or (lanes.isdigit() and int(lanes) > 1))


@v_args(meta=True)
class IRBuilder(Transformer):
    """Parse tree -> IR, one method per grammar rule; names stay unresolved (placeholders)."""

    def __init__(self, text, filename):
        super().__init__()
        self.text, self.filename = text, filename
        self.where = {}  # placeholder Var / Buffer -> (line, col, width)

    def error(self, message, meta_or_token):
        m = meta_or_token
        if isinstance(m, Token):
            return _error_at(self.text, message, m.line, m.column, len(m.value), self.filename)
        width = m.end_column - m.column if m.line == m.end_line else 1
        return _error_at(self.text, message, m.line, m.column, width, self.filename)

    def _pos(self, tok):
        return (tok.line, tok.column, len(tok.value))

    def _dtype(self, tok):
        if not is_dtype(tok.value):
            raise self.error(
                f"unknown dtype '{tok.value}'; use one of "
                f"{', '.join(dt.SCALAR_TYPES)} (vectors: float32x4)",
                tok,
            )
        return tok.value

    def _placeholder_var(self, tok):
        v = E.Var(tok.value)
        self.where[v] = self._pos(tok)
        return v

    def _placeholder_buffer(self, tok, nindices, meta):
        if nindices != 1:
            raise self.error(
                f"buffer '{tok.value}' has {nindices} indices; lowered IR indexes "
                f"a flat buffer with one ({tok.value}[i*n + j])",
                meta,
            )
        b = S.Buffer(tok.value, "float32", ())
        self.where[b] = self._pos(tok)
        return b

    # ---- top level

    def start(self, meta, children):
        return children[0]

    def func(self, meta, children):
        name, *params, body = children
        return S.LoweredFunc(name.value, tuple(p for p in params if p is not None), body)

    def param(self, meta, children):
        name, dtype, *rest = children
        flag = rest.pop()
        dims = tuple(int(d) for d in rest if d is not None)
        if flag is not None and flag.value != "image":
            raise self.error(f"unknown argument flag '{flag.value}'; the only one is 'image'", flag)
        return S.Buffer(name.value, self._dtype(dtype), dims, "global", flag is not None)

    # ---- statements

    def stmts(self, meta, children):
        return S.seq(*[c for c in children if c is not None])

    def store(self, meta, children):
        name, *indices, value = children
        return S.Store(self._placeholder_buffer(name, len(indices), meta), indices[0], value)

    def loop(self, meta, children):
        *pragmas, kind, name, lo, extent, body = children
        kind = "serial" if kind == "for" else kind
        return S.For(
            self._placeholder_var(name),
            lo,
            extent,
            kind,
            body,
            tuple(self._pragma(p) for p in pragmas),
        )

    def loop_kind(self, meta, children):
        return children[0].value

    def _pragma(self, tok):
        text = tok.value.split("pragma", 1)[1]
        key, eq, value = text.partition("=")
        key = key.strip()
        try:
            if not eq or not key.isidentifier():
                raise ValueError
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise self.error(
                "a pragma line is '// pragma key = value' with a Python literal "
                "value (1, 0, 'text')",
                tok,
            ) from None
        return (key, value)

    def if_stmt(self, meta, children):
        cond, then, orelse = children
        return S.IfThenElse(cond, then, orelse)

    def produce(self, meta, children):
        name, body = children
        return S.Produce(name.value, body)

    def barrier(self, meta, children):
        (scope,) = children
        if scope.value not in S.SCOPES:
            raise self.error(
                f"unknown memory scope '{scope.value}' of a barrier; use shared or global", scope
            )
        return S.Barrier(scope.value)

    def block(self, meta, children):
        return children[0]

    def allocate(self, meta, children):
        name, dtype, *dims, scope, body = children
        scope_name = "global" if scope is None else scope.value
        if scope_name not in S.SCOPES:
            raise self.error(
                f"unknown memory scope '{scope_name}'; use one of {', '.join(S.SCOPES)}", scope
            )
        buf = S.Buffer(name.value, self._dtype(dtype), tuple(int(d) for d in dims), scope_name)
        return S.Allocate(buf, body)

    def thread_extent(self, meta, children):
        _, name, tag, extent, body = children
        tag_name = name.value if tag is None else tag.value
        if tag_name not in THREAD_TAGS:
            raise self.error(
                f"unknown thread tag '{tag_name}'; use one of "
                f"{', '.join(THREAD_TAGS)} (or [name: tag])",
                tag or name,
            )
        return S.ThreadExtent(self._placeholder_var(name), tag_name, int(extent), body)

    # ---- expressions

    def binary(self, meta, children):
        a, spelling, b = children
        op = _OP_OF_SPELLING[spelling.value]
        if op in _LOGIC:
            return _LOGIC[op](a, b)
        return E.Cmp(op, a, b) if op in _COMPARISONS else E.BinOp(op, a, b)

    def not_(self, meta, children):
        return E.Not(children[0])

    def int_const(self, meta, children):
        return E.IntImm(int(children[0]))

    def float_const(self, meta, children):
        return E.FloatImm(float(children[0][:-1]))

    def neg_const(self, meta, children):
        c = (
            self.int_const(meta, children)
            if children[0].type == "INT"
            else self.float_const(meta, children)
        )
        return type(c)(-c.value, c.dtype)

    def typed_const(self, meta, children):
        tok = children[0]
        dtype, _, value = tok.value.rstrip(")").partition("(")
        dtype = self._dtype(Token("NAME", dtype, line=tok.line, column=tok.column))
        value = value.strip().strip('"')
        if dt.is_float(dtype):
            return E.FloatImm(float(value), dtype)
        try:
            return E.IntImm(int(value), dtype)
        except ValueError:
            raise self.error(
                f"{dtype} is an integer type; {value} is not an integer", tok
            ) from None

    def true(self, meta, children):
        return E.TRUE

    def false(self, meta, children):
        return E.FALSE

    def var(self, meta, children):
        return self._placeholder_var(children[0])

    def load(self, meta, children):
        name, *indices = children
        return E.Load(self._placeholder_buffer(name, len(indices), meta), indices[0])

    def keyword(self, meta, children):
        name, value = children
        return ("keyword", name, value)

    def call(self, meta, children):
        name, *args = children
        args = [a for a in args if a is not None]
        kwargs = {a[1].value: a for a in args if isinstance(a, tuple)}
        args = [a for a in args if not isinstance(a, tuple)]
        fn = name.value
        extra = set(kwargs) - ({"dtype"} if not is_dtype(fn) and fn not in _SPECIAL else set())
        if extra:
            raise self.error(f"{fn}() takes no keyword '{sorted(extra)[0]}'", meta)

        def arity(n, what):
            if len(args) != n:
                raise self.error(f"{fn}() takes {n} arguments ({what}), got {len(args)}", meta)

        if is_dtype(fn):
            arity(1, "the value to cast")
            return E.Cast(fn, args[0])
        if fn in FUNCTION_STYLE:
            arity(2, "a, b")
            return E.BinOp(fn, args[0], args[1])
        if fn == "select":
            arity(3, "condition, value if true, value if false")
            return E.Select(*args)
        if fn in ("ramp", "broadcast"):
            arity(
                3 if fn == "ramp" else 2, "base, stride, lanes" if fn == "ramp" else "value, lanes"
            )
            lanes = args[-1]
            if not (isinstance(lanes, E.IntImm) and lanes.dtype == "int32" and lanes.value > 1):
                raise self.error(f"the lanes of {fn}() must be an integer constant above 1", meta)
            return (
                E.Ramp(args[0], args[1], lanes.value)
                if fn == "ramp"
                else E.Broadcast(args[0], lanes.value)
            )
        if "dtype" in kwargs:
            _, key, value = kwargs["dtype"]
            if not isinstance(value, E.Var) or not is_dtype(value.name):
                raise self.error(f"dtype= of {fn}() must name a dtype", key)
            del self.where[value]
            return E.Call(fn, tuple(args), value.name)
        if not args:
            raise self.error(f"{fn}() has no argument to take its dtype from; add dtype=...", meta)
        return E.Call(fn, tuple(args), _ARG_DTYPE)  # the first argument's, once resolved


_SPECIAL = FUNCTION_STYLE + ("select", "ramp", "broadcast")
_ARG_DTYPE = ""  # a Call's dtype before the buffers of its arguments are known


def _finish_call(mutator, e):
    args = tuple(mutator.visit(a) for a in e.args)
    return E.Call(e.name, args, args[0].dtype if e.dtype == _ARG_DTYPE else e.dtype)


# ---------------------------------------------------------------- names -> objects


def bounds(e, ranges):
    """Inclusive integer bounds of ``e`` (``const_bound``); ``(None, None)`` where the
    simplifier cannot tell, a division by a constant zero included."""
    try:
        return const_bound(e, ranges)
    except ZeroDivisionError:
        return None, None


class _Resolve(Mutator):
    """Binds placeholder names to loop variables and buffers, scope by scope."""

    def __init__(self, builder, args, declared_only, free_vars=False):
        self.b, self.declared_only = builder, declared_only  # declared_only: function form
        self.free_vars = free_vars or not declared_only
        self.vars = {}  # name -> stack of Vars
        self.bufs = {b.name: [b] for b in args}
        self.ranges = {}  # Var -> inclusive (lo, hi), for buffer sizes
        self.free = {}  # name -> Var, free variables (bare form)
        self.undeclared = {}  # name -> [provisional Buffer, size, stored]

    def error(self, message, placeholder):
        line, col, width = self.b.where[placeholder]
        return _error_at(self.b.text, message, line, col, width, self.b.filename)

    def _bind(self, var, rng, fn):
        new = E.Var(var.name, var.dtype)
        self.vars.setdefault(var.name, []).append(new)
        if rng is not None:
            self.ranges[new] = rng
        try:
            return new, fn()
        finally:
            self.vars[var.name].pop()

    def visit_For(self, f):
        lo, ext = self.visit(f.min), self.visit(f.extent)
        rng = None
        if isinstance(lo, E.IntImm) and isinstance(ext, E.IntImm):
            rng = (lo.value, lo.value + ext.value - 1)
        var, body = self._bind(f.var, rng, lambda: self.visit(f.body))
        return S.For(var, lo, ext, f.kind, body, f.pragmas)

    def visit_ThreadExtent(self, t):
        var, body = self._bind(t.var, (0, t.extent - 1), lambda: self.visit(t.body))
        return S.ThreadExtent(var, t.tag, t.extent, body)

    def visit_Allocate(self, a):
        self.bufs.setdefault(a.buffer.name, []).append(a.buffer)
        try:
            return S.Allocate(a.buffer, self.visit(a.body))
        finally:
            self.bufs[a.buffer.name].pop()

    def visit_Var(self, v):
        stack = self.vars.get(v.name)
        if stack:
            return stack[-1]
        if not self.free_vars:
            raise self.error(
                f"variable '{v.name}' is not defined by an enclosing loop or "
                "'// attr [..] thread_extent' line",
                v,
            )
        return self.free.setdefault(v.name, E.Var(v.name))

    def _buffer(self, placeholder, index, stored):
        stack = self.bufs.get(placeholder.name)
        if stack:
            return stack[-1]
        if self.declared_only:
            raise self.error(
                f"buffer '{placeholder.name}' is neither an argument of the "
                "function nor allocated here",
                placeholder,
            )
        entry = self.undeclared.setdefault(placeholder.name, [placeholder, 0, False])
        entry[1] = max(entry[1], self._extent(placeholder, index))
        entry[2] = entry[2] or stored
        return entry[0]

    def _extent(self, placeholder, index):
        if isinstance(index, E.Ramp):
            (_, base), (_, shi) = (
                bounds(index.base, self.ranges),
                bounds(index.stride, self.ranges),
            )
            hi = None if base is None or shi is None else base + max(shi, 0) * (index.lanes - 1)
        else:
            hi = bounds(index, self.ranges)[1]
        if hi is None:
            raise self.error(
                f"cannot bound the index of buffer '{placeholder.name}' over the "
                "loop ranges, so its size is unknown; parse the function form "
                "(func.script()), which declares every buffer",
                placeholder,
            )
        return hi + 1

    def visit_Load(self, ld):
        index = self.visit(ld.index)
        return E.Load(self._buffer(ld.buffer, index, False), index)

    def visit_Call(self, e):
        # in the function form every buffer is final here; the bare form types calls later
        return _finish_call(self, e) if self.declared_only else self.generic_visit(e)

    def visit_Store(self, st):
        index, value = self.visit(st.index), self.visit(st.value)
        return S.Store(self._buffer(st.buffer, index, True), index, value)


class _SwapBuffers(Mutator):
    def __init__(self, bmap):
        self.bmap = bmap

    def visit_Load(self, ld):
        return E.Load(self.bmap.get(ld.buffer, ld.buffer), self.visit(ld.index))

    def visit_Store(self, st):
        return S.Store(
            self.bmap.get(st.buffer, st.buffer), self.visit(st.index), self.visit(st.value)
        )

    def visit_Call(self, e):
        return _finish_call(self, e)


def _dtype_hints(stmt, names):
    """Element dtypes that the text implies for the undeclared buffers ``names``: what is
    stored into them, and the type of a typed operand next to one of their loads."""
    hints = {}

    def loaded(e):
        return e.buffer.name if isinstance(e, E.Load) and e.buffer.name in names else None

    class _V(Visitor):
        def visit_Store(self, st):
            if st.buffer.name in names:
                hints[st.buffer.name] = dt.element(st.value.dtype)
            self.generic_visit(st)

        def _pair(self, a, b):
            for x, y in ((a, b), (b, a)):
                if loaded(x) and not loaded(y) and dt.element(y.dtype) != "bool":
                    hints.setdefault(loaded(x), dt.element(y.dtype))

        def visit_BinOp(self, e):
            self._pair(e.a, e.b)
            self.generic_visit(e)

        def visit_Cmp(self, e):
            self._pair(e.a, e.b)
            self.generic_visit(e)

        def visit_Select(self, e):
            self._pair(e.t, e.f)
            self.generic_visit(e)

    _V().visit(stmt)
    return hints


def _infer_buffers(stmt, undeclared):
    """Final buffers for the bare form's undeclared names: 1-d, dtype by a fixed point of the
    hints (float32 where nothing says otherwise)."""
    dtypes = {name: "float32" for name in undeclared}
    for _ in range(4):
        final = {
            name: S.Buffer(name, dtypes[name], (size,)) for name, (_, size, _) in undeclared.items()
        }
        body = _SwapBuffers({undeclared[n][0]: b for n, b in final.items()}).visit(stmt)
        new = {**dtypes, **_dtype_hints(body, set(undeclared))}
        if new == dtypes:
            break
        dtypes = new
    return body, final


# ---------------------------------------------------------------- entry points


def _parse_tree(text, filename):
    try:
        return ir_parser().parse(text, start="start")
    except UnexpectedInput as exc:
        raise _syntax_error(text, exc, filename) from None


def parse_ir(text, filename="<ir>"):
    """Parse the IR text that ``print(ts.lower(...))`` or ``LoweredFunc.script()`` shows.

    Returns a ``LoweredFunc``. In the function form the arguments are the signature's and
    the outputs are the arguments stored to; ``ts.build`` accepts the result. In the bare
    form the buffers that no ``allocate`` line declares become 1-d float32 arguments (typed
    by what is stored into them), sized to cover every index; free variables are allowed.
    """
    if not isinstance(text, str):
        raise ParseError(f"parse_ir: expected the IR as a str, got {type(text).__name__}")
    tree = _parse_tree(text, filename)
    builder = IRBuilder(text, filename)
    try:
        built = builder.transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, ParseError):
            raise exc.orig_exc from None
        raise
    if isinstance(built, S.LoweredFunc):  # the function form
        args = built.args
        names = [b.name for b in args]
        twice = next((n for k, n in enumerate(names) if n in names[:k]), None)
        if twice is not None:
            raise _error_at(text, f"argument '{twice}' is declared twice", 1, 1, filename=filename)
        body = _Resolve(builder, args, declared_only=True).visit(built.body)
        return S.LoweredFunc(built.name, args, body, _stored(body, args))
    resolver = _Resolve(builder, (), declared_only=False)
    body = resolver.visit(built)
    body, final = _infer_buffers(body, resolver.undeclared)
    args = tuple(final.values())
    return S.LoweredFunc("default_function", args, body, _stored(body, args))


def parse_ir_expr(text, variables=None):
    """Parse one IR expression (``i*4 + j < 10``, ``A[i] + 1f``).

    ``variables`` maps names to the ``Var`` and ``Buffer`` objects to use; other variable
    names become fresh int32 variables, and every buffer that is read must be given.
    """
    try:
        tree = ir_parser().parse(text, start="expr")
    except UnexpectedInput as exc:
        raise _syntax_error(text, exc, "<expr>") from None
    builder = IRBuilder(text, "<expr>")
    try:
        built = builder.transform(tree)
    except VisitError as exc:
        raise exc.orig_exc from None
    env = dict(variables or {})
    resolver = _Resolve(
        builder,
        [b for b in env.values() if isinstance(b, S.Buffer)],
        declared_only=True,
        free_vars=True,
    )
    for name, v in env.items():
        if isinstance(v, E.Var):
            resolver.vars[name] = [v]
    return resolver.visit(built)


def _stored(body, args):
    names = set()

    class _V(Visitor):
        def visit_Store(self, st):
            names.add(st.buffer)
            self.generic_visit(st)

    _V().visit(body)
    return tuple(b for b in args if b in names)


# ---------------------------------------------------------------- round trip


def roundtrip_problem(func):
    """``None`` if ``func`` prints and parses back to itself (both forms), else a message."""
    from .printer import print_stmt
    from .structural import structural_equal

    text = func.script()
    try:
        back = parse_ir(text)
    except ParseError as exc:
        return f"the printed IR does not parse:\n{exc}\n{text}"
    if not structural_equal(back, func):
        again = back.script()
        if again != text:
            return (
                f"parse(print(f)) prints differently:\n--- printed\n{text}\n--- reparsed\n{again}"
            )
        return f"parse(print(f)) prints the same but differs in structure:\n{text}"
    bare = print_stmt(func.body)
    try:
        again = print_stmt(parse_ir(bare).body)
    except ParseError as exc:
        return f"the printed body does not parse:\n{exc}"
    if again != bare:
        return f"the bare body reprints differently:\n--- printed\n{bare}\n--- reparsed\n{again}"
    return None


def check_roundtrip(func):
    """Raise ``InternalError`` unless ``func`` round-trips through its text forms."""
    from ..errors import InternalError

    problem = roundtrip_problem(func)
    if problem:
        raise InternalError(f"IR text round trip failed for '{func.name}': {problem}")
    return func
