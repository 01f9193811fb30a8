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
3. Every index of a buffer is checked over the loop ranges and under the guards around it:
   the simplifier's interval bounds prove most at once (``index_bounds``); where they
   cannot (they lose the link between ``w//3`` and ``w%3``, or between a guard and the
   index), the index is evaluated at every point of the loops it depends on, with numpy
   (``index_reach``: parts that share no loop variable apart, each of at most
   ``ENUMERATE_LIMIT`` points). An index that leaves its buffer is an ``IndexBoundsError``
   naming the loop values that take it there; one the check cannot decide (a part of more
   than ``ENUMERATE_LIMIT`` points, an index read from a buffer) is refused with advice to
   guard it. The bare form takes its arguments from ``args``; it never guesses them.

Text that nests deeper than ``MAX_NESTING`` blocks or ``MAX_EXPR_DEPTH`` operators is refused
before step 1 builds anything (the passes and code generators recurse on the IR).

Errors raise ``ParseError`` with the line, the column and a caret.
"""

from __future__ import annotations

import ast
import functools
import json
import math
import operator
import os
import threading

import numpy as np
from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, VisitError
from lark.lexer import PatternStr

from ..errors import InternalError, ParseError
from . import dtype as dt
from . import expr as E
from . import stmt as S
from .index_check import (
    IndexBoundsError,
    Lanes,
    bounds,
    guard_facts,
    index_bounds,
    index_reach,
)
from .precedence import BINARY, FUNCTION_STYLE
from .printer import print_stmt
from .simplify import size_vars
from .structural import structural_equal
from .tensor import Tensor
from .visitor import Mutator, Visitor
from .visitor import free_vars as vars_in

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


# Lark reads a grammar's string literals with ``ast.literal_eval``, and CPython 3.11's ``ast``
# is not safe to call from two threads at once ("SystemError: AST constructor recursion depth
# mismatch"): a Dask worker that built two tuning candidates at once, each parser's first
# use, failed so. Every use of ``ast`` here holds this lock.
AST_LOCK = threading.Lock()


@functools.cache
def ir_parser():
    """The LALR parser of the IR text (built once)."""
    with open(GRAMMAR_FILE) as f:
        grammar = f.read()
    with AST_LOCK:
        return Lark(
            grammar + binary_rules(),
            parser="lalr",
            propagate_positions=True,
            maybe_placeholders=True,
            lexer_callbacks={"NAME": _unquote},
            start=["start", "expr"],
        )


class _BadQuotedName(Exception):
    """A quoted name that is not a JSON string (raised by the lexer, reported by
    ``_parse_tree`` as a ``ParseError`` at the token)."""

    def __init__(self, token, why):
        super().__init__(why)
        self.token, self.why = token, why


def _unquote(tok):
    """``"for"`` (a name the printer quoted, as a JSON string) is the name ``for``."""
    if not tok.value.startswith('"'):
        return tok
    try:
        return tok.update(value=json.loads(tok.value))
    except ValueError:
        raw = any(ord(c) < 0x20 for c in tok.value)
        why = "it holds a control character" if raw else "a backslash starts no JSON escape"
        raise _BadQuotedName(tok, why) from None


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

    # ---- numbers: each within what its type holds

    def _int(self, tok, text=None, sign=1):
        """The integer ``tok`` spells (``text``: its digits where ``tok`` holds more), times
        ``sign``; a ``ParseError`` at ``tok`` where it is beyond int64."""
        text = tok.value if text is None else text
        try:
            n = sign * int(text)
        except ValueError:  # more digits than Python converts (4300)
            n = None
        if n is None or not dt.fits(n, "int64"):
            shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} digits)"
            raise self.error(
                f"the integer {'-' if sign < 0 else ''}{shown} is beyond int64, the widest "
                f"integer type (up to {dt.INT64_MAX}); use a smaller value",
                tok,
            )
        return n

    def _size(self, toks, what):
        """The dims ``toks`` of buffer ``what`` (integers, or expressions of size variables),
        the product of the integers within int64."""
        dims = tuple(self._dim(d) for d in toks)
        ints = [d for d in dims if isinstance(d, int)]
        if math.prod(ints) > dt.INT64_MAX:
            raise self.error(
                f"{what} has {math.prod(ints)} elements, more than int64 (the widest index "
                f"type) can count ({dt.INT64_MAX}); use a smaller shape",
                next(t for t in toks if isinstance(t, Token)),
            )
        return dims

    def _dim(self, tok):
        """A dimension or an extent: an INT token or constant, or an expression of size
        variables."""
        if isinstance(tok, Token):
            return self._int(tok)
        if isinstance(tok, E.IntImm) and dt.is_int(tok.dtype):
            return tok.value
        return tok

    def dim_var(self, meta, children):
        return self._placeholder_var(children[0])

    def typed_dim_var(self, meta, children):
        dtype, name = children
        if dtype.value not in ("int32", "int64"):
            raise self.error(f"a size is int32 or int64, got '{dtype.value}'", dtype)
        v = E.Var(name.value, dtype.value)
        self.where[v] = self._pos(name)
        return v

    def _int_imm(self, n, dtype, tok):
        if not dt.fits(n, dtype):
            hint = f"; write int64({n})" if dtype == "int32" else ""
            raise self.error(f"{n} does not fit in {dtype}{hint}", tok)
        return E.IntImm(n, dtype)

    def _float_imm(self, text, dtype, tok):
        value = float(text)  # the grammar's digits: always a float (1e400: inf)
        numpy_type = dt.NUMPY[dt.element(dtype)]
        with np.errstate(over="ignore"):
            held = float(np.asarray(value, dtype=numpy_type))
        if not math.isfinite(held):
            shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
            raise self.error(
                f"{shown} is beyond {dt.element(dtype)} (largest "
                f"{float(np.finfo(numpy_type).max):.6g}), which would round it to infinity; "
                f'use a smaller value (infinity is {dt.element(dtype)}("inf"))',
                tok,
            )
        return E.FloatImm(value, dtype)

    # ---- top level

    def start(self, meta, children):
        return children[0]

    def func(self, meta, children):
        name, *params, body = children
        params = [p for p in params if p is not None]
        bufs = tuple(p for p in params if isinstance(p, S.Buffer))
        sizes = tuple((k, p) for k, p in enumerate(params) if isinstance(p, E.Var))
        return S.LoweredFunc(name.value, bufs, body, size_args=sizes)

    def size_param(self, meta, children):
        """A size the call gives at this position (``n: int32``; TVM's ``lower(s, [A, n])``)."""
        name, dtype = children
        if dtype.value not in ("int32", "int64"):
            raise self.error(f"a size is int32 or int64, got '{dtype.value}'", dtype)
        v = E.Var(name.value, dtype.value, size=True)
        self.where[v] = self._pos(name)
        return v

    def param(self, meta, children):
        name, dtype, *rest = children
        flag = rest.pop()
        dims = self._size([d for d in rest if d is not None], f"argument '{name.value}'")
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
            with AST_LOCK:
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

    def last_group(self, meta, children):
        counter, index, tag, count, body = children
        if not tag.value.startswith("blockIdx") or tag.value not in THREAD_TAGS:
            raise self.error(
                f"last_group counts work-groups along a block tag (blockIdx.x/y/z), not "
                f"'{tag.value}'",
                tag,
            )
        buf = self._placeholder_buffer(counter, 1, meta)
        return S.LastGroup(buf, index, tag.value, self._dim(count), body)

    def block(self, meta, children):
        return children[0]

    def allocate(self, meta, children):
        name, dtype, *dims, scope, body = children
        scope_name = "global" if scope is None else scope.value
        if scope_name not in S.SCOPES:
            raise self.error(
                f"unknown memory scope '{scope_name}'; use one of {', '.join(S.SCOPES)}", scope
            )
        buf = S.Buffer(
            name.value, self._dtype(dtype), self._size(dims, f"'{name.value}'"), scope_name
        )
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
        n = self._dim(extent)
        return S.ThreadExtent(self._placeholder_var(name), tag_name, n, body)

    # ---- expressions

    def binary(self, meta, children):
        a, spelling, b = children
        op = _OP_OF_SPELLING[spelling.value]
        if op in _LOGIC:
            return _LOGIC[op](a, b)
        return E.Cmp(op, a, b) if op in _COMPARISONS else E.BinOp(op, a, b)

    def not_(self, meta, children):
        return E.Not(children[0])

    def int_const(self, meta, children, sign=1):
        # a bare integer is of the index type: int32, which code generation widens to long
        # where a loop or buffer passes it (the printer writes an extent of 2^33 bare)
        (tok,) = children
        return E.IntImm(self._int(tok, sign=sign))

    def float_const(self, meta, children, sign=""):
        (tok,) = children
        return self._float_imm(sign + tok.value[:-1], "float32", tok)

    def neg_const(self, meta, children):
        if children[0].type == "INT":
            return self.int_const(meta, children, sign=-1)
        return self.float_const(meta, children, sign="-")

    def typed_const(self, meta, children):
        tok = children[0]
        dtype, _, value = tok.value.rstrip(")").partition("(")
        dtype = self._dtype(Token("NAME", dtype, line=tok.line, column=tok.column))
        value = value.strip()
        if dt.is_float(dtype):
            if value.startswith('"'):  # float32("inf"), float32("nan")
                return E.FloatImm(float(value.strip('"')), dtype)
            return self._float_imm(value, dtype, tok)
        if not value.lstrip("-").isdigit():
            raise self.error(f"{dtype} is an integer type; {value} is not an integer", tok)
        sign = -1 if value.startswith("-") else 1
        return self._int_imm(self._int(tok, value.lstrip("-"), sign), dtype, tok)

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


class _Resolve(Mutator):
    """Binds placeholder names to loop variables and buffers, scope by scope, and checks
    that every index of a declared buffer stays inside it (``check``)."""

    def __init__(self, builder, args, declared_only, free_vars=False, check=True):
        self.b, self.declared_only = builder, declared_only  # declared_only: args are known
        self.free_vars, self.check = free_vars, check
        self.vars = {}  # name -> stack of Vars
        self.bufs = {b.name: [b] for b in args}
        self.ranges = {}  # Var -> inclusive (lo, hi), as far as constants tell
        self.facts = []  # what the enclosing guards say (guard_facts)
        self.guards = []  # the enclosing guards themselves: (condition, negated)
        self.dead = 0  # > 0 inside a loop that never runs
        self.free = {}  # name -> Var, free variables
        self.undeclared = {}  # name -> the first placeholder of an undeclared buffer
        self.loops = 0  # loops around the statement being resolved
        self.thread_tags = {}  # work-item and work-group index Var -> its tag
        # name -> Var: the size variables of the arguments' shapes, defined everywhere
        self.sizes = {v.name: v for v in size_vars(tuple(b.shape for b in args))}

    def error(self, message, placeholder):
        line, col, width = self.b.where[placeholder]
        return _error_at(self.b.text, message, line, col, width, self.b.filename)

    def _bind(self, var, rng, fn, within=None, tag=None):
        """Bind ``var`` over the inclusive range ``rng`` for ``fn``; ``within``: the loop's
        ``(min, extent)`` where they are not constants (they then guard the body); ``tag``:
        the thread tag of a work-item or work-group index."""
        new = E.Var(var.name, var.dtype)
        if tag is not None:
            self.thread_tags[new] = tag
        self.vars.setdefault(var.name, []).append(new)
        empty = rng[0] is not None and rng[1] is not None and rng[1] < rng[0]
        self.ranges[new] = rng
        self.dead += empty
        inside = []
        if within is not None:
            lo, ext = within
            inside = [
                (E.Cmp("<=", lo, new), False),
                (E.Cmp("<", new, E.BinOp("+", lo, ext)), False),
            ]
        self.guards += inside
        try:
            return new, fn()
        finally:
            self.vars[var.name].pop()
            self.dead -= empty
            del self.guards[len(self.guards) - len(inside) :]

    def _guarded(self, cond, negated, fn):
        facts = guard_facts(cond, negated)
        self.facts += facts
        self.guards.append((cond, negated))
        try:
            return fn()
        finally:
            del self.facts[len(self.facts) - len(facts) :]
            self.guards.pop()

    def visit_For(self, f):
        lo, ext = self.visit(f.min), self.visit(f.extent)
        (llo, lhi), (_, ehi) = bounds(lo, self.ranges), bounds(ext, self.ranges)
        rng = (llo, None if lhi is None or ehi is None else lhi + ehi - 1)
        if rng[1] is not None and (ehi or 0) > 0 and not dt.fits(rng[1], "int64"):
            raise self.error(
                f"loop '{f.var.name}' may run up to {rng[1]}, past int64 (the widest index "
                "type); use a smaller min or extent",
                f.var,
            )
        constant = isinstance(lo, E.IntImm) and isinstance(ext, E.IntImm)
        self.loops += 1
        try:
            var, body = self._bind(
                f.var, rng, lambda: self.visit(f.body), None if constant else (lo, ext)
            )
        finally:
            self.loops -= 1
        return S.For(var, lo, ext, f.kind, body, f.pragmas)

    def visit_ThreadExtent(self, t):
        extent = t.extent if isinstance(t.extent, int) else self.visit(t.extent)
        hi = extent - 1 if isinstance(extent, int) else bounds(extent, self.ranges)[1]
        var, body = self._bind(t.var, (0, hi), lambda: self.visit(t.body), tag=t.tag)
        return S.ThreadExtent(var, t.tag, extent, body)

    def visit_IfThenElse(self, s):
        cond = self.visit(s.cond)
        then = self._guarded(cond, False, lambda: self.visit(s.then))
        orelse = s.orelse and self._guarded(cond, True, lambda: self.visit(s.orelse))
        return S.IfThenElse(cond, then, orelse)

    def visit_Select(self, e):
        cond = self.visit(e.cond)
        t = self._guarded(cond, False, lambda: self.visit(e.t))
        return E.Select(cond, t, self._guarded(cond, True, lambda: self.visit(e.f)))

    def visit_And(self, e):  # && evaluates its right side only where the left holds
        a = self.visit(e.a)
        return E.And(a, self._guarded(a, False, lambda: self.visit(e.b)))

    def visit_Or(self, e):
        a = self.visit(e.a)
        return E.Or(a, self._guarded(a, True, lambda: self.visit(e.b)))

    def visit_Allocate(self, a):
        buf = a.buffer
        if not all(isinstance(d, int) for d in buf.shape):
            shape = tuple(d if isinstance(d, int) else self.visit(d) for d in buf.shape)
            buf = S.Buffer(buf.name, buf.dtype, shape, buf.scope, buf.image)
        self.bufs.setdefault(buf.name, []).append(buf)
        try:
            return S.Allocate(buf, self.visit(a.body))
        finally:
            self.bufs[buf.name].pop()

    def visit_Var(self, v):
        stack = self.vars.get(v.name)
        if stack:
            return stack[-1]
        if v.name in self.sizes:
            return self.sizes[v.name]
        if not self.free_vars:
            raise self.error(
                f"variable '{v.name}' is not defined by an enclosing loop or "
                "'// attr [..] thread_extent' line",
                v,
            )
        return self.free.setdefault(v.name, E.Var(v.name))

    def _buffer(self, placeholder, index):
        stack = self.bufs.get(placeholder.name)
        if stack:
            buf = stack[-1]
            if self.check and not self.dead:
                self._check_index(placeholder, buf, index)
            return buf
        if self.declared_only:
            raise self.error(
                f"buffer '{placeholder.name}' is neither an argument of the "
                "function nor allocated here",
                placeholder,
            )
        first = self.undeclared.setdefault(placeholder.name, placeholder)
        if self.b.where[placeholder] < self.b.where[first]:  # the first in the text
            self.undeclared[placeholder.name] = placeholder
        return placeholder

    def _check_index(self, placeholder, buf, index):
        """An ``IndexBoundsError`` unless ``index`` stays in ``buf`` at every point of the
        loops around it where its guards hold: the interval bounds (``index_bounds``) prove
        most indices at once; the others are decided point by point (``index_reach``)."""
        if not isinstance(buf.size, int):
            return  # a buffer of symbolic size: its indices are checked when the code runs
        ranges = dict(self.ranges)
        scalar = Lanes(ranges).visit(index)
        lo, hi = index_bounds(scalar, ranges, self.facts)
        if lo is not None and hi is not None and 0 <= lo and hi < buf.size:
            return
        reach = index_reach(scalar, ranges, self.guards, self.facts)
        lo, hi = reach.lo, reach.hi
        if reach.dead or (lo is not None and hi is not None and 0 <= lo and hi < buf.size):
            return
        access = f"{buf.name}[{index}]"
        where = f"'{buf.name}' ({buf.dtype}[{', '.join(map(str, buf.shape))}], {buf.size} elements)"
        guard = f"(if (0 <= index && index < {buf.size}) {{ ... }})"
        point = None
        if reach.exact:
            past = hi is not None and hi >= buf.size
            value, point = (hi, reach.hi_at) if past else (lo, reach.lo_at)
            side = f"past the end of {where}" if past else f"before the start of {where}"
            at = ", ".join(f"{v.name} = {point[v]}" for v in ranges if v in point)
            message = (
                f"{access} reaches index {value}, {side}{' when ' + at if at else ''}; "
                f"bound the loops or guard the access {guard}"
            )
            point = {v.name: point[v] for v in ranges if v in point}
        else:
            if hi is not None and hi >= buf.size:
                bound = f"let it reach {hi}"
            elif lo is not None and lo < 0:
                bound = f"let it reach {lo}"
            else:
                bound = f"leave it unbounded {'below' if lo is None else 'above'}"
            message = (
                f"{access} cannot be proven inside {where}: {reach.why}, and the bounds over "
                f"the loop ranges and guards {bound}; guard the access {guard} to make it "
                "provable"
            )
        line, col, width = self.b.where[placeholder]
        raise IndexBoundsError(
            message,
            line,
            col,
            self.b.text.split("\n")[line - 1],
            self.b.filename,
            width,
            counterexample=point,
        )

    def visit_Load(self, ld):
        index = self.visit(ld.index)
        return E.Load(self._buffer(ld.buffer, index), index)

    def visit_LastGroup(self, g):
        index = self.visit(g.index)
        count = g.count if isinstance(g.count, int) else self.visit(g.count)
        # each work-group arrives once: not in a loop, nor under a test of a work-item index
        # or of the index it counts along
        tested = {
            self.thread_tags.get(v)
            for cond, _ in self.guards
            for v in vars_in(cond)
            if v in self.thread_tags
        }
        if self.loops or any(t.startswith("threadIdx") or t == g.tag for t in tested):
            raise self.error(
                "last_group must be outside every loop and every if that tests a work-item "
                f"index or {g.tag}: each work-group arrives there exactly once",
                g.counter,
            )
        counter = self._buffer(g.counter, index)
        if counter.dtype != "int32" or counter.scope != "global":
            raise self.error(
                f"last_group counts arrivals in a global int32 buffer; '{counter.name}' is "
                f"{counter.scope} {counter.dtype}",
                g.counter,
            )
        return S.LastGroup(counter, index, g.tag, count, self.visit(g.body))

    def visit_Call(self, e):
        # every buffer is final here once the arguments are known
        return _finish_call(self, e) if self.declared_only else self.generic_visit(e)

    def visit_Store(self, st):
        index, value = self.visit(st.index), self.visit(st.value)
        return S.Store(self._buffer(st.buffer, index), index, value)


# ---------------------------------------------------------------- limits

MAX_NESTING = 64  # loops, ifs, blocks, allocations and thread extents inside each other
MAX_EXPR_DEPTH = 128  # operators and operands inside each other: a sum of n terms is n deep

_NESTING_RULES = {"loop", "if_stmt", "produce", "block", "allocate", "thread_extent", "last_group"}
_STATEMENT_RULES = _NESTING_RULES | {"start", "func", "param", "stmts", "store", "barrier"}


def check_depth(tree: Tree, text: str, filename: str, statements=_STATEMENT_RULES) -> None:
    """A ``ParseError`` where ``tree`` nests deeper than ``MAX_NESTING`` statements or
    ``MAX_EXPR_DEPTH`` operators (the passes and code generators recurse on the IR), walked
    without recursion."""
    stack = [(tree, 0, 0, tree)]  # node, blocks around it, expression depth, where
    while stack:
        node, nest, depth, where = stack.pop()
        if node.data in statements:
            nest, depth, where = nest + (node.data in _NESTING_RULES), 0, node
        else:
            depth, where = depth + 1, where if depth else node  # the outermost expression
        if nest > MAX_NESTING or depth > MAX_EXPR_DEPTH:
            what = (
                f"blocks nest more than {MAX_NESTING} deep (loops, ifs, allocations)"
                if nest > MAX_NESTING
                else f"the expression nests more than {MAX_EXPR_DEPTH} operators deep "
                f"(a sum of n terms is n deep)"
            )
            m = where.meta
            line, col = (m.line, m.column) if not m.empty else (1, 1)
            raise _error_at(
                text, f"{what}; split it into several statements or stages", line, col, 1, filename
            )
        stack.extend((c, nest, depth, where) for c in node.children if isinstance(c, Tree))


# ---------------------------------------------------------------- entry points


def _parse_tree(text, filename, start="start"):
    try:
        tree = ir_parser().parse(text, start=start)
    except UnexpectedInput as exc:
        raise _syntax_error(text, exc, filename) from None
    except _BadQuotedName as exc:
        tok = exc.token
        shown = tok.value if len(tok.value) <= 40 else tok.value[:37] + '..."'
        raise _error_at(
            text,
            f"the quoted name {ascii(shown)} is not a JSON string ({exc.why}); a quoted name "
            "writes a control character or a backslash as an escape (\\u0001, \\\\)",
            tok.line,
            tok.column,
            len(tok.value),
            filename,
        ) from None
    check_depth(tree, text, filename)
    return tree


def _build(text, filename, start="start"):
    tree = _parse_tree(text, filename, start)
    builder = IRBuilder(text, filename)
    try:
        return builder, builder.transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, ParseError):
            raise exc.orig_exc from None
        raise


def _arg_buffer(k: int, arg) -> S.Buffer:
    """``args[k]`` of ``parse_ir`` as a buffer."""
    if isinstance(arg, S.Buffer):
        return arg
    if isinstance(arg, Tensor):
        name, shape, dtype = arg.name, arg.shape, arg.dtype
    elif isinstance(arg, (tuple, list)) and len(arg) == 3:
        name, shape, dtype = arg
        shape = (shape,) if isinstance(shape, int) else shape
    else:
        raise ParseError(
            f"parse_ir: args[{k}] is {arg!r}; give a tensor (as passed to ts.lower) or a "
            "(name, shape, dtype) triple such as ('A', (64, 32), 'float32')"
        )
    ok = isinstance(name, str) and isinstance(dtype, str) and is_dtype(dtype)
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        ok = False
    if not ok or not all(d > 0 for d in dims):
        raise ParseError(
            f"parse_ir: args[{k}] = {arg!r} is not (name, shape, dtype) with a str name, "
            "positive integer dims and a dtype such as 'float32'"
        )
    if math.prod(dims) > dt.INT64_MAX:
        raise ParseError(
            f"parse_ir: args[{k}] '{name}' has {math.prod(dims)} elements, more than int64 (the "
            f"widest index type) can count ({dt.INT64_MAX}); use a smaller shape"
        )
    return S.Buffer(name, dtype, dims)


def _parse(text, filename, args, check):
    if not isinstance(text, str):
        raise ParseError(f"parse_ir: expected the IR as a str, got {type(text).__name__}")
    builder, built = _build(text, filename)
    if isinstance(built, S.LoweredFunc):  # the function form
        if args is not None:
            raise ParseError(
                "parse_ir: the function form declares its arguments in its signature; "
                "pass args= only with a bare body"
            )
        name, params, sizes = built.name, built.args, built.size_args
        body = built.body
    else:
        name, body, sizes = "default_function", built, ()
        if args is None:
            _missing_args(builder, body)
            args = ()
        sizes = tuple((k, a) for k, a in enumerate(args) if isinstance(a, E.Var))
        args = [a for a in args if not isinstance(a, E.Var)]
        params = tuple(_arg_buffer(k, a) for k, a in enumerate(args))
    by_name = _SizesByName()
    for _, v in sizes:  # a size named in the signature is the one of that name in the shapes
        by_name.sizes[v.name] = v
    params = _shared_sizes(params, by_name)
    names = [b.name for b in params] + [v.name for _, v in sizes]
    twice = next((n for k, n in enumerate(names) if n in names[:k]), None)
    if twice is not None:
        raise _error_at(text, f"argument '{twice}' is declared twice", 1, 1, filename=filename)
    resolver = _Resolve(builder, params, declared_only=True, check=check)
    resolver.sizes.update({v.name: v for _, v in sizes})
    resolver.ranges.update({v: (0, None) for _, v in sizes})  # a call gives sizes >= 0
    body = resolver.visit(body)
    return S.LoweredFunc(name, params, body, _stored(body, params), sizes)


class _SizesByName(Mutator):
    """The size variables of a signature, one ``Var`` per name."""

    def __init__(self):
        self.sizes = {}

    def visit_Var(self, v):
        return self.sizes.setdefault(v.name, E.Var(v.name, v.dtype))


def _shared_sizes(params, by_name):
    """``params`` with each size variable of their shapes one object per name (the parser
    makes a placeholder per use; ``by_name`` may hold some already)."""
    if all(isinstance(d, int) for b in params for d in b.shape):
        return params
    return tuple(
        S.Buffer(
            b.name,
            b.dtype,
            tuple(d if isinstance(d, int) else by_name.visit(d) for d in b.shape),
            b.scope,
            b.image,
        )
        for b in params
    )


def _missing_args(builder, body):
    """A ``ParseError`` if the bare ``body`` uses buffers that no line declares."""
    resolver = _Resolve(builder, (), declared_only=False, free_vars=True, check=False)
    resolver.visit(body)
    if resolver.undeclared:
        names = sorted(resolver.undeclared, key=lambda n: builder.where[resolver.undeclared[n]])
        listed = ", ".join(names)
        raise resolver.error(
            f"the body uses buffer{'s' * (len(names) > 1)} {listed} without declaring "
            "them, and a bare body does not say their order, shapes or dtypes: pass them, "
            "ts.parse_ir(text, args=[A, B, C]) with the tensors given to ts.lower (in call "
            "order) or (name, shape, dtype) triples such as ('A', (64, 32), 'float32'); "
            "or parse the function form (func.script()), which declares them",
            resolver.undeclared[names[0]],
        )


def parse_ir(text: str, filename: str = "<ir>", args=None) -> S.LoweredFunc:
    """Parse the IR text that ``print(ts.lower(...))`` or ``LoweredFunc.script()`` shows.

    Returns a ``LoweredFunc`` whose outputs are the arguments stored to; ``ts.build``
    accepts it. The function form declares its arguments. A bare body does not: give them
    with ``args``, in call order, each a tensor (as passed to ``ts.lower``), a ``Buffer``,
    or a ``(name, shape, dtype)`` triple (``("A", (64, 32), "float32")``); the body indexes
    them flat. A bare body that uses a buffer neither in ``args`` nor allocated is refused.

    Every index is checked against its buffer: it must stay inside at every point of the
    loops around it where the ``if``/``select``/``&&`` guards hold, or an
    ``IndexBoundsError`` (a ``ParseError``) names the line, the buffer, the index reached
    and the loop values that reach it. The check is exact for an index whose loops take at
    most ``ENUMERATE_LIMIT`` points together (after splitting it into terms over disjoint
    loops); beyond that, and for an index read from a buffer, it is refused unless the
    simplifier's bounds prove it, with advice to guard it. Text nesting more than ``MAX_NESTING``
    blocks or ``MAX_EXPR_DEPTH`` operators deep is refused with a ``ParseError``.
    """
    return _parse(text, filename, args, check=True)


def parse_ir_unchecked(text: str, filename: str = "<ir>", args=None) -> S.LoweredFunc:
    """``parse_ir`` without the index check. For what is out of bounds on purpose: random
    statements in the tests of the text syntax, a kernel that shows the python target's
    out-of-bounds error, and the round trip of a lowering that really indexes past a buffer
    (``roundtrip_problem``). What it returns may read and write outside its buffers."""
    return _parse(text, filename, args, check=False)


def parse_ir_expr(text, variables=None):
    """Parse one IR expression (``i*4 + j < 10``, ``A[i] + 1f``).

    ``variables`` maps names to the ``Var`` and ``Buffer`` objects to use; other variable
    names become fresh int32 variables, and every buffer that is read must be given. Indices
    are not checked (an expression has no loops to bound them).
    """
    builder, built = _build(text, "<expr>", start="expr")
    env = dict(variables or {})
    resolver = _Resolve(
        builder,
        [b for b in env.values() if isinstance(b, S.Buffer)],
        declared_only=True,
        free_vars=True,
        check=False,
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


def roundtrip_problem(func: S.LoweredFunc) -> str | None:
    """``None`` if ``func`` prints and parses back to itself (both forms), else a message.

    ``parse_ir`` must accept the printed text of every lowering that stays inside its
    buffers: refusing one is a round-trip problem. A lowering that really indexes past a
    buffer (the check names the loop values that do: ``IndexBoundsError.counterexample``; the
    seed conv with a width that ``VW`` does not divide reads past ``conv``) is a bug of its
    schedule, which the targets report when it runs, not of the text: its text is compared
    without the index check."""
    text = func.script()
    checked = True
    try:
        back = parse_ir(text)
    except IndexBoundsError as exc:
        if exc.counterexample is None:
            return f"parse_ir refuses the printed IR:\n{exc}\n{text}"
        checked, back = False, parse_ir_unchecked(text)
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
    args: list = list(func.args)
    for k, v in sorted(func.size_args, key=lambda kv: kv[0]):
        args.insert(k, v)
    try:
        again = print_stmt(_parse(bare, "<ir>", args, checked).body)
    except ParseError as exc:
        return f"the printed body does not parse:\n{exc}"
    if again != bare:
        return f"the bare body reprints differently:\n--- printed\n{bare}\n--- reparsed\n{again}"
    return None


def check_roundtrip(func: S.LoweredFunc) -> S.LoweredFunc:
    """Raise ``InternalError`` unless ``func`` round-trips through its text forms."""
    problem = roundtrip_problem(func)
    if problem:
        raise InternalError(f"IR text round trip failed for '{func.name}': {problem}")
    return func
