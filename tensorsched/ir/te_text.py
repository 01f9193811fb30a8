"""Tensor expressions as text: ``ts.parse_expr("C[i, j] += A[i, k] * B[k, j]", "i=64,j=64,k=64")``.

One statement per stage, in the spirit of Tensor Comprehensions::

    C[i, j] += A[i, k] * B[k, j]            # sum over k: it appears only on the right
    D[i, j] = max(C[i, j], 0.0)             # elementwise; reads the stage above
    M[i] max= A[i, k]                       # max reduction (min= for the minimum)
    P[i, j] = pad(A[i - 1, j - 1], 0.0)     # A's element, or 0.0 where the index leaves A

* ``=`` is elementwise; ``+=``, ``max=`` and ``min=`` reduce over the index variables that
  appear only on the right (each starts from the reduction's identity, as ``ts.sum`` does).
* Index extents come from ``shapes`` (``i=64``; a stage's own shape ``P=3x9x11`` gives the
  extents of its left-hand side), or from a tensor of known shape that the variable indexes
  directly (``D[i] = exp(C[i])`` takes ``i``'s extent from ``C``). Names are per statement:
  each statement has its own ``i``.
* A tensor that no statement defines is an input (a placeholder, float32 unless ``dtype``
  says otherwise); its shape is ``shapes["A"]`` (``A=34x34``, ``A=34`` if 1-d) if given,
  else the smallest that covers every index it is read at (``pad()`` reads do not count).
* Calls: ``exp log sqrt tanh sigmoid fabs abs floor ceil round trunc cos sin`` and TVM's other
  float intrinsics (``exp2 log2 erf atanh ...``: ``intrin.MORE_UNARY``), ``pow(a, b)``,
  ``max(a, b)``, ``min(a, b)``, ``select(cond, a, b)`` (``if_then_else``), casts
  ``float16(x)``, and ``pad(A[...], value)``.
  Operators are the IR's (``+ - * / // % < <= > >= == != && || !``) with its precedence;
  ``/`` needs floats, ``//`` and ``%`` integers, as in ``ts.compute``.

The result is what ``ts.compute`` builds: a dict name -> ``Tensor``, inputs first (in the order
they are first read), then the stages in statement order.

An expression nesting more than ``parser.MAX_EXPR_DEPTH`` (128) operators deep is refused with
a ``ParseError``: a sum of 1000 terms is 1000 deep, and lowering and code generation recurse on
it. Sum fewer terms per statement, or reduce over an axis (``C[i] += A[i, k]``).
"""

from __future__ import annotations

import functools
import inspect
import math
import os

from lark import Lark, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput

from ..errors import ComputeError, ParseError
from . import dtype as dt
from . import expr as E
from . import intrin as I
from .index_check import bounds
from .parser import AST_LOCK, _error_at, _expected, binary_rules, check_depth, is_dtype
from .precedence import BINARY
from .tensor import compute, placeholder, reduce_axis

GRAMMAR_FILE = os.path.join(os.path.dirname(__file__), "te_grammar.lark")
REDUCTIONS = {"+=": I.sum, "max=": I.max, "min=": I.min}
UNARY_CALLS = {
    "exp": I.exp,
    "log": I.log,
    "sqrt": I.sqrt,
    "tanh": I.tanh,
    "sigmoid": I.sigmoid,
    "fabs": I.fabs,
    "abs": I.fabs,
    "floor": I.floor,
    "ceil": I.ceil,
    "round": I.round,
    "trunc": I.trunc,
    "cos": I.cos,
    "sin": I.sin,
    **{name: getattr(I, name) for name in I.MORE_UNARY},
}


@functools.cache
def te_parser():
    with open(GRAMMAR_FILE) as f:
        grammar = f.read()
    with AST_LOCK:  # Lark's grammar loader uses ``ast`` (parser.AST_LOCK)
        return Lark(
            grammar + binary_rules(),
            parser="lalr",
            propagate_positions=True,
            maybe_placeholders=True,
        )


def parse_shapes(text):
    """``"i=64,j=32,A=34x34"`` -> ``{"i": 64, "j": 32, "A": (34, 34)}``."""
    if isinstance(text, dict):
        return dict(text)
    out = {}
    for item in filter(None, (x.strip() for x in (text or "").split(","))):
        name, eq, value = item.partition("=")
        try:
            dims = tuple(int(d) for d in value.split("x"))
        except ValueError:
            dims = ()
        if not eq or not name.strip().isidentifier() or not dims or min(dims) <= 0:
            raise ParseError(f"shapes: '{item}' is not name=extent (i=64) or tensor=dims (A=34x34)")
        if name.strip() in out:
            raise ParseError(f"shapes: '{name.strip()}' is given twice; give each name once")
        out[name.strip()] = dims[0] if len(dims) == 1 and "x" not in value else dims
    return out


def _find(tree, data):
    """The subtrees of ``tree`` for rule ``data``, in source order."""
    return [t for t in tree.iter_subtrees_topdown() if t.data == data]


class _Program:
    """Builds the tensors of one text, statement by statement."""

    def __init__(self, text, shapes, dtype, filename):
        self.text, self.filename, self.dtype = text, filename, dtype
        self.shapes = parse_shapes(shapes)
        self.tensors = {}  # name -> Tensor, defined so far (inputs and stages)
        self.defined = {}  # stage name -> its statement tree
        self.extents_of = {}  # stage name -> {index variable: extent}
        self.reduce_vars_of = {}  # stage name -> its reduction variables, in order
        self.input_shape = {}  # input name -> list of dims (a growing bound)
        self.input_order = []

    def error(self, message, node):
        m = node.meta if isinstance(node, Tree) else node
        if getattr(m, "empty", False):
            return ParseError(message, filename=self.filename)
        width = m.end_column - m.column if m.line == m.end_line else 1
        return _error_at(self.text, message, m.line, m.column, width, self.filename)

    # ---- planning: extents and input shapes, before anything is built

    def plan(self, stmts):
        for s in stmts:
            name = s.children[0].value
            if name in self.defined:
                raise self.error(f"tensor '{name}' is defined twice", s)
            self.defined[name] = s
        later = set(self.defined)
        for s in stmts:
            later.discard(s.children[0].value)
            for acc in _find(s, "access"):
                if acc.children[0].value in later:
                    raise self.error(
                        f"'{acc.children[0].value}' is read before the statement that defines it",
                        acc,
                    )
        pending = list(stmts)  # a statement waits until its extents are known
        while pending:
            ready = [s for s in pending if self.extents(s, strict=False) is not None]
            if not ready:
                self.extents(pending[0], strict=True)  # raises what is missing
            for s in ready:
                self.extents_of[s.children[0].value] = self.extents(s, strict=True)
                self.grow_input_shapes(s)
                pending.remove(s)

    def shape_of(self, name):
        if name in self.defined:
            ext = self.extents_of.get(name)
            return (
                None
                if ext is None
                else tuple(ext[v.value] for v in self.lhs(self.defined[name])[1])
            )
        given = self.shapes.get(name)
        if given is not None:  # A=34x34, or A=34 for a 1-d tensor
            return given if isinstance(given, tuple) else (given,)
        if name in self.input_shape and None not in self.input_shape[name]:
            return tuple(self.input_shape[name])
        return None

    def lhs(self, s):
        name, *rest = s.children
        idx = [t for t in rest[:-2] if t is not None]
        return name, idx, rest[-2].value, rest[-1]

    def extents(self, s, strict):
        """The extent of each index variable of ``s``; when one is unknown, None or (strict)
        the error."""
        name, idx, op, body = self.lhs(s)
        names = [t.value for t in idx]
        if len(set(names)) != len(names):
            raise self.error(f"'{name.value}': an index variable is repeated on the left", s)
        used = []
        tensors = set(self.defined) | {a.children[0].value for a in _find(body, "access")}
        for n in _find(body, "index"):
            v = n.children[0].value
            if v not in names and v not in used and v not in tensors:
                used.append(v)
        if used and op == "=":
            raise self.error(
                f"index variable '{used[0]}' appears only on the right; reduce "
                "over it with += (sum), max= or min=",
                s,
            )
        if op != "=" and not used:
            raise self.error(
                f"'{op}' reduces over the index variables that appear only on "
                "the right, and there is none; write '='",
                s,
            )
        self.reduce_vars_of[name.value] = used
        given = self.shapes.get(name.value)
        if isinstance(given, tuple) and len(given) != len(names):
            raise self.error(
                f"shapes give '{name.value}' {len(given)} dimensions, the statement {len(names)}", s
            )
        ext = {}
        for k, v in enumerate(names):
            ext[v] = given[k] if isinstance(given, tuple) else None
        for v in used:
            ext[v] = None
        for v in ext:
            if ext[v] is None and isinstance(self.shapes.get(v), int):
                ext[v] = self.shapes[v]
        for acc in _find(body, "access"):  # a bare index into a known shape
            shape = self.shape_of(acc.children[0].value)
            for d, ix in enumerate(acc.children[1:]):
                if (
                    shape
                    and d < len(shape)
                    and ix.data == "index"
                    and ext.get(ix.children[0].value, 0) is None
                ):
                    ext[ix.children[0].value] = shape[d]
        for v, n in ext.items():
            if n is None:
                if not strict:
                    return None
                raise self.error(
                    f"no extent for index variable '{v}': give it in the shapes ({v}=64)", s
                )
        return ext

    def grow_input_shapes(self, s):
        extents = self.extents_of[s.children[0].value]
        vars_ = {v: E.Var(v) for v in extents}
        ranges = {vars_[v]: (0, n - 1) for v, n in extents.items()}
        for acc in _find(s, "access"):
            name = acc.children[0].value
            if name in self.defined or name in self.shapes:
                if name not in self.defined and name not in self.input_order:
                    self.input_order.append(name)
                continue
            if name not in self.input_order:
                self.input_order.append(name)
            if self._under_pad(s, acc):
                continue
            dims = self.input_shape.setdefault(name, [None] * (len(acc.children) - 1))
            if len(dims) != len(acc.children) - 1:
                raise self.error(
                    f"input '{name}' is read with {len(acc.children) - 1} indices "
                    f"here and {len(dims)} elsewhere",
                    acc,
                )
            for d, ix in enumerate(acc.children[1:]):
                try:
                    index = E.as_expr(_Eval(self, vars_, ranges).visit(ix))
                except ComputeError as exc:
                    raise self.error(str(exc), ix) from None
                lo, hi = bounds(index, ranges)
                if lo is None or hi is None or lo < 0:
                    raise self.error(
                        f"cannot size input '{name}' from this index (it may be "
                        f"negative or unbounded); give its shape ({name}=...)",
                        ix,
                    )
                dims[d] = max(dims[d] or 0, hi + 1)

    def _under_pad(self, s, acc):
        for call in _find(s, "call"):
            if call.children[0].value == "pad" and call.children[1] is acc:
                return True
        return False

    # ---- building

    def build(self, stmts):
        for name in self.input_order:
            shape = self.shape_of(name)
            if shape is None:
                acc = next(
                    a for s in stmts for a in _find(s, "access") if a.children[0].value == name
                )
                raise self.error(
                    f"input '{name}' is only read through pad(), so its shape is "
                    f"unknown; give it in the shapes ({name}=...)",
                    acc,
                )
            self.tensors[name] = placeholder(shape, self.dtype, name=name)
        for s in stmts:
            name, idx, op, body = self.lhs(s)
            names = [t.value for t in idx]
            extents = self.extents_of[name.value]
            shape = tuple(extents[v] for v in names)
            raxes = [reduce_axis((0, extents[v]), name=v) for v in self.reduce_vars_of[name.value]]

            def fcompute(*axes, _ext=extents, _names=names, _raxes=raxes, _op=op, _body=body):
                env = dict(zip(_names, axes))
                env.update((ax.var.name, ax) for ax in _raxes)
                ranges = {E.as_expr(env[v]): (0, _ext[v] - 1) for v in env}
                value = _Eval(self, env, ranges).visit(_body)
                if _op == "=":
                    return value
                return REDUCTIONS[_op](value, axis=_raxes)

            fcompute.__signature__ = inspect.Signature(
                [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
            )
            try:
                self.tensors[name.value] = compute(shape, fcompute, name=name.value)
            except ComputeError as exc:
                raise self.error(str(exc), s) from None
        return self.tensors


class _Eval:
    """Evaluates an expression tree to a tensor expression, with ``env`` the index variables."""

    def __init__(self, prog, env, ranges):
        self.prog, self.env, self.ranges = prog, env, ranges  # ranges: Var -> (lo, hi)

    def visit(self, node):
        try:
            return getattr(self, node.data)(node, *node.children)
        except ComputeError as exc:
            raise self.prog.error(str(exc), node) from None

    def number(self, node, tok):
        text = tok.value
        try:
            value = float(text) if any(c in text for c in ".eE") else int(text)
        except ValueError:  # more digits than Python converts (4300)
            value = math.inf
        if value == math.inf:  # 1e400: a literal beyond float64 (the dtype checks the rest)
            shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
            raise self.prog.error(
                f"the number {shown} is beyond every type (int64, float64); use a smaller value",
                node,
            )
        return value

    def index(self, node, tok):
        if tok.value in self.env:
            return self.env[tok.value]
        raise self.prog.error(f"'{tok.value}' is a tensor: index it ({tok.value}[...])", node)

    def access(self, node, tok, *indices):
        t = self.prog.tensors.get(tok.value)
        if t is None:  # planning: no tensor is built yet
            return _Indexed(tok.value, [self.visit(i) for i in indices])
        if len(indices) != t.ndim:
            raise self.prog.error(
                f"'{t.name}' has {t.ndim} dimensions, indexed with {len(indices)}", node
            )
        return t[tuple(self.visit(i) for i in indices)]

    def binary(self, node, a, op, b):
        a, b = self.visit(a), self.visit(b)
        op = next(k for k, (_, spelling) in BINARY.items() if spelling == op.value)
        if op in ("&&", "||"):
            return (I.all if op == "&&" else I.any)(a, b)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return E.cmp(op, a, b)
        return E.binop(op, a, b)

    def neg(self, node, a):
        a = self.visit(a)
        return -a

    def not_(self, node, a):
        return ~E.as_expr(self.visit(a))

    def call(self, node, tok, *args):
        fn = tok.value
        if fn == "pad":
            return self.pad(node, *args)
        args = [self.visit(a) for a in args if a is not None]

        def arity(n):
            if len(args) != n:
                raise self.prog.error(
                    f"{fn}() takes {n} argument{'s' * (n > 1)}, got {len(args)}", node
                )

        if fn in UNARY_CALLS:
            arity(1)
            return UNARY_CALLS[fn](args[0])
        if fn in ("max", "min"):
            arity(2)
            return (I.max if fn == "max" else I.min)(args[0], args[1])
        if fn in ("pow", "power"):
            arity(2)
            return I.power(args[0], args[1])
        if fn in ("select", "if_then_else"):
            arity(3)
            return I.if_then_else(*args)
        if is_dtype(fn):
            arity(1)
            return E.as_expr(args[0]).astype(fn)
        raise self.prog.error(
            f"unknown function '{fn}'; use {', '.join(UNARY_CALLS)}, pow, max, min, select, "
            "pad or a cast (float16(x))",
            node,
        )

    def pad(self, node, acc, value=None, *rest):
        if acc is None or acc.data != "access" or value is None or rest:
            raise self.prog.error(
                "pad takes a tensor element and the padding value: pad(A[i - 1, j - 1], 0.0)", node
            )
        name = acc.children[0].value
        t = self.prog.tensors.get(name)
        if t is None:  # planning
            return _Indexed(name, [])
        indices = [E.as_expr(self.visit(i)) for i in acc.children[1:]]
        loaded = self.access(acc, acc.children[0], *acc.children[1:])
        conds = []
        for ix, dim in zip(indices, t.shape):
            lo, hi = bounds(ix, self.ranges)
            if lo is None or lo < 0:
                conds.append(ix >= 0)
            if hi is None or hi >= dim:
                conds.append(ix < dim)
        if not conds:
            return loaded
        return I.if_then_else(I.all(*conds), loaded, E.const(self.visit(value), t.dtype))


class _Indexed(E.ExprOps):
    """A tensor element during planning, before the tensor exists (never built into IR)."""

    def __init__(self, name, indices):
        self.name, self.indices = name, indices

    def as_expr(self):
        raise ComputeError(
            f"an index reads tensor '{self.name}'; indices are arithmetic on "
            "index variables (indirect indexing is not supported)"
        )


def parse_expr(text, shapes=None, dtype="float32", filename="<expr>"):
    """Tensors from tensor-expression text (see the module docstring): a dict name ->
    ``Tensor``, inputs (placeholders) first, then one compute stage per statement."""
    if not isinstance(text, str):
        raise ParseError(f"parse_expr: expected the statements as a str, got {type(text).__name__}")
    if shapes is not None and not isinstance(shapes, (str, dict)):
        raise ParseError(
            "parse_expr: shapes must be a str like 'i=64,j=64' or a dict name -> "
            f"extent, got {type(shapes).__name__}"
        )
    dt.check_dtype(dtype, "parse_expr")
    try:
        tree = te_parser().parse(text)
    except UnexpectedInput as exc:
        if isinstance(exc, UnexpectedCharacters):
            ch = text[exc.pos_in_stream : exc.pos_in_stream + 1]
            msg = f"unexpected character {ch!r}"
        else:
            tok = exc.token
            what = "the end of the text" if tok.type == "$END" else repr(tok.value)
            msg = f"unexpected {what}; expected {_expected(te_parser(), exc.expected)}"
        raise _error_at(
            text,
            msg,
            exc.line if exc.line > 0 else 1,
            exc.column if exc.column > 0 else 1,
            1,
            filename,
        ) from None
    check_depth(tree, text, filename, statements={"start", "stmt"})
    stmts = list(tree.children)
    if not stmts:
        raise ParseError("the text has no statement (C[i] = A[i] + 1.0)", filename=filename)
    prog = _Program(text, shapes, dtype, filename)
    prog.plan(stmts)
    tensors = prog.build(stmts)
    order = prog.input_order + [s.children[0].value for s in stmts]
    return {n: tensors[n] for n in order}
