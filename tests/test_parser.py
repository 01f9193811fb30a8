"""The IR text round trip (``ts.parse_ir``): every template's IR, codegen-stage IR with vectors,
hypothesis-generated expression and statement trees, one test per parse error message, and a
hand-edited kernel that builds and runs. (Every other test's lowerings round-trip too: see
``roundtrip_hook.py``.)"""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ts_check import gemm

import tensorsched as ts
from tensorsched.config import config
from tensorsched.errors import InternalError
from tensorsched.ir import dtype as dt
from tensorsched.ir import expr as E
from tensorsched.ir import printer as P
from tensorsched.ir import stmt as S
from tensorsched.ir.parser import (
    THREAD_TAGS,
    check_roundtrip,
    ir_parser,
    parse_ir_expr,
    roundtrip_problem,
)
from tensorsched.ir.precedence import BINARY
from tensorsched.ir.printer import print_expr, print_stmt
from tensorsched.ir.structural import structural_equal
from tensorsched.ops.conv2d import ConvShape
from tensorsched.ops.space import Config
from tensorsched.ops.templates import TEMPLATES


def assert_roundtrip(func):
    problem = roundtrip_problem(func)
    assert problem is None, problem


# ---------------------------------------------------------------- one table, one set of words


def test_grammar_operators_are_the_precedence_table():
    terminals = {t.name: t.pattern for t in ir_parser().terminals}
    levels = {}
    for _op, (prec, spelling) in BINARY.items():
        levels.setdefault(prec, set()).add(spelling)
    for prec, spellings in levels.items():
        pattern = terminals[f"OP_{prec}"].to_regexp()
        for s in spellings:
            assert re.fullmatch(pattern, s), (prec, s)
    assert not any(n.startswith("OP_") and int(n[3:]) not in levels for n in terminals)


def test_printer_keywords_are_the_grammar_keywords():
    words = {
        t.pattern.value
        for t in ir_parser().terminals
        if type(t.pattern).__name__ == "PatternStr" and t.pattern.value.isidentifier()
    }
    assert words == set(P.KEYWORDS)


@pytest.mark.parametrize(
    "text, tree",
    [
        ("a - b - c", "(a - b) - c"),
        ("a - (b - c)", None),
        ("a*b + c", "(a*b) + c"),
        ("a + b*c", "a + (b*c)"),
        ("a//b%c", "(a//b)%c"),
        ("a < b && b < c || !d", None),
        ("a == b < c", "a == (b < c)"),
        ("min(a, b)*2", None),
    ],
)
def test_precedence_parses_as_printed(text, tree):
    e = parse_ir_expr(text)
    assert print_expr(e) == text
    if tree is not None:
        assert structural_equal(parse_ir_expr(tree), e)


# ---------------------------------------------------------------- every template, every stage

GEMM_SHAPE = (37, 28, 19)  # N a multiple of 4 (adreno reads B as float4 texels)
CONV_SHAPE = ConvShape(1, 3, 7, 9, 5, 3, 3, 1, 1)


def _template_cases():
    for kind, templates in TEMPLATES.items():
        for name in templates:
            yield pytest.param(kind, name, id=f"{kind}-{name}")


@pytest.mark.parametrize("kind, name", list(_template_cases()))
def test_template_ir_roundtrips(kind, name):
    from tensorsched.codegen.opencl import prepare, split_kernels

    shape = GEMM_SHAPE if kind == "gemm" else (CONV_SHAPE,)
    s, args = TEMPLATES[kind][name](Config(), *shape)
    func = ts.lower(s, args, name=f"{kind}_{name}")
    assert_roundtrip(func)
    # the codegen stage: unrolled, vectorized (ramps, broadcasts, vector dtypes)
    temps, kernels = split_kernels(func)
    bufs = tuple(func.args) + tuple(temps)
    for stage, stmt in kernels:
        prepared = S.LoweredFunc(stage, bufs, prepare(stmt, bufs), ())
        back = ts.parse_ir(prepared.script())
        assert structural_equal(back.body, prepared.body), stage


@pytest.mark.parametrize("kernel_no", [1, 2, 3])
def test_seed_tutorial_conv_kernels_roundtrip(kernel_no):
    import seed_conv

    t = seed_conv.declare(CI=8, IH=10, IW=10, CO=8)
    assert_roundtrip(ts.lower(seed_conv.schedule(t, kernel_no), [t[0], t[1], t[-1]]))


def test_every_lowering_in_the_suite_roundtrips():
    """The autouse hook is on: lowering a function checks its round trip."""
    assert config.roundtrip


def test_roundtrip_check_catches_a_printer_bug(monkeypatch):
    X = ts.placeholder((8,), name="X")
    Y = ts.compute((4,), lambda i: X[(i + 1) * 2 - 2], name="Y")
    func = ts.lower(ts.create_schedule(Y.op), [X, Y])
    assert "X[(i + 1)*2 - 2]" in str(func) or "X[i*2]" in str(func)
    func = S.LoweredFunc(
        "f",
        func.args,
        S.Store(
            func.args[1],
            E.IntImm(0),
            E.Load(func.args[0], (E.IntImm(1) + E.IntImm(2)) * E.IntImm(2)),
        ),
        func.outputs,
    )
    assert check_roundtrip(func) is func
    monkeypatch.setattr(
        P.Printer, "e_BinOp", lambda self, e: (f"{self.expr(e.a)} {e.op} {self.expr(e.b)}", 13)
    )  # forgets parentheses
    with pytest.raises(InternalError, match="round trip failed"):
        check_roundtrip(func)


def test_printer_quotes_keywords_and_odd_names():
    X = ts.placeholder((4,), name="for")
    Y = ts.compute((4,), lambda i: X[i] * 2.0, name="data pad")
    func = ts.lower(ts.create_schedule(Y.op), [X, Y])
    assert '"data pad"[i] = "for"[i]*2f' in str(func)
    assert_roundtrip(func)


def test_typed_constants_and_casts_differ():
    for e in (
        E.IntImm(5, "int64"),
        E.Cast("int64", E.IntImm(5)),
        E.FloatImm(3.0, "float16"),
        E.Cast("float16", E.IntImm(3)),
        E.Cast("float16", E.FloatImm(3.0)),
        E.FloatImm(float("-inf")),
        E.FloatImm(-1.5, "float64"),
        E.IntImm(-7),
    ):
        back = parse_ir_expr(print_expr(e))
        assert structural_equal(back, e) and back.dtype == e.dtype, print_expr(e)


def test_scoped_statement_in_the_middle_of_a_block_gets_braces():
    T = S.Buffer("T", "float32", (4,), "local")
    C = S.Buffer("C", "float32", (4,))
    i = E.Var("i")
    body = S.seq(
        S.Allocate(T, S.Store(T, E.IntImm(0), E.FloatImm(1.0))),
        S.Store(C, E.IntImm(0), E.FloatImm(2.0)),
    )
    func = S.LoweredFunc("f", (C,), S.For(i, E.IntImm(0), E.IntImm(4), "serial", body), (C,))
    assert "    {\n      allocate T[float32 * 4], local" in func.script()
    assert_roundtrip(func)


def test_bare_form_infers_buffers():
    A, B, C = gemm(5, 3, 4)
    text = str(ts.lower(ts.create_schedule(C.op), [A, B, C]))
    func = ts.parse_ir(text)
    assert [(b.name, b.dtype, b.shape) for b in func.args] == [
        ("C", "float32", (15,)),
        ("A", "float32", (20,)),
        ("B", "float32", (12,)),
    ]
    assert [b.name for b in func.outputs] == ["C"]
    half = ts.parse_ir("for (i, 0, 8) {\n  H[i*2] = float16(X[i] + float16(1))\n}")
    assert {b.name: (b.dtype, b.shape) for b in half.args} == {
        "H": ("float16", (15,)),
        "X": ("float16", (8,)),
    }


def test_pragmas_and_thread_names_roundtrip():
    A, B, C = gemm(8, 8, 8)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    s[C].pragma(j, "unroll_explicit", 0)
    s[C].pragma(j, "note", "text = with spaces")
    s[C].bind(i, ts.thread_axis("threadIdx.x", name="tx"))
    func = ts.lower(s, [A, B, C])
    text = func.script()
    assert "// pragma note = 'text = with spaces'" in text
    back = ts.parse_ir(text)
    assert structural_equal(back, func)
    assert back.body.body.body.pragmas == (("unroll_explicit", 0), ("note", "text = with spaces"))


# ---------------------------------------------------------------- hypothesis trees

A = S.Buffer("A", "float32", (64,))
H = S.Buffer("H", "float16", (8, 8))
C = S.Buffer("C", "float32", (16, 4))
ARGS = (A, H, C)
INT_OPS = ("+", "-", "*", "//", "%", "min", "max")
FLOAT_OPS = ("+", "-", "*", "/", "min", "max")
CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")
finite = st.floats(allow_nan=False, allow_infinity=False, width=32)


def int_exprs(scope):
    leaves = [
        st.integers(-50, 300).map(E.IntImm),
        st.integers(-9, 9).map(lambda v: E.IntImm(v, "int64")),
    ]
    if scope:
        leaves.append(st.sampled_from(scope))
    return st.recursive(
        st.one_of(*leaves),
        lambda ch: st.one_of(
            st.builds(E.BinOp, st.sampled_from(INT_OPS), ch, ch),
            st.builds(lambda c, a, b: E.Select(c, a, b), bool_exprs_of(ch), ch, ch),
            st.builds(lambda a: E.Cast("int32", a), ch),
        ),
        max_leaves=4,
    )


def bool_exprs_of(ints):
    base = st.one_of(
        st.builds(E.Cmp, st.sampled_from(CMP_OPS), ints, ints), st.sampled_from([E.TRUE, E.FALSE])
    )
    return st.recursive(
        base,
        lambda ch: st.one_of(
            st.builds(E.And, ch, ch), st.builds(E.Or, ch, ch), st.builds(E.Not, ch)
        ),
        max_leaves=3,
    )


def float_exprs(scope, bufs):
    ints = int_exprs(scope)
    leaves = [
        finite.map(E.FloatImm),
        finite.map(lambda v: E.FloatImm(v, "float16")),
        st.floats(allow_nan=False, width=64).map(lambda v: E.FloatImm(v, "float64")),
        st.builds(lambda a: E.Cast("float32", a), ints),
        st.builds(E.Load, st.sampled_from(bufs), ints),
    ]
    return st.recursive(
        st.one_of(*leaves),
        lambda ch: st.one_of(
            st.builds(E.BinOp, st.sampled_from(FLOAT_OPS), ch, ch),
            st.builds(lambda a: E.Call("exp", (a,), a.dtype), ch),
            st.builds(lambda a, b: E.Call("pow", (a, b), "float16"), ch, ch),
            st.builds(lambda a: E.Cast("float16", a), ch),
            st.builds(E.Select, bool_exprs_of(ints), ch, ch),
            st.builds(lambda a: E.Broadcast(a, 4), ch),
            st.builds(
                lambda b, base: E.Load(b, E.Ramp(base, E.IntImm(1), 4)), st.sampled_from(bufs), ints
            ),
        ),
        max_leaves=5,
    )


@st.composite
def stmts(draw, scope=(), bufs=ARGS, depth=0):
    kinds = ["store", "store", "barrier"] + (
        ["for", "if", "seq", "alloc", "thread", "produce"] if depth < 2 else []
    )
    kind = draw(st.sampled_from(kinds))
    ints = int_exprs(list(scope))
    if kind == "store":
        value = draw(float_exprs(list(scope), bufs))
        return S.Store(draw(st.sampled_from(bufs)), draw(ints), value)
    if kind == "barrier":
        return S.Barrier(draw(st.sampled_from(["shared", "global"])))
    if kind == "for":
        v = E.Var(draw(st.sampled_from(["i", "j", "i.outer", "blockIdx.x"])))
        pragmas = draw(
            st.lists(
                st.tuples(
                    st.sampled_from(["unroll_explicit", "k"]),
                    st.one_of(st.integers(), st.text(max_size=5), st.booleans()),
                ),
                max_size=2,
            )
        )
        return S.For(
            v,
            draw(ints),
            draw(ints),
            draw(st.sampled_from(S.LOOP_KINDS)),
            draw(stmts(scope + (v,), bufs, depth + 1)),
            tuple(pragmas),
        )
    if kind == "thread":
        tag = draw(st.sampled_from(THREAD_TAGS))
        v = E.Var(draw(st.sampled_from([tag, "tx"])))
        return S.ThreadExtent(
            v, tag, draw(st.integers(1, 64)), draw(stmts(scope + (v,), bufs, depth + 1))
        )
    if kind == "if":
        orelse = draw(st.one_of(st.none(), stmts(scope, bufs, depth + 1)))
        return S.IfThenElse(draw(bool_exprs_of(ints)), draw(stmts(scope, bufs, depth + 1)), orelse)
    if kind == "alloc":
        names = [n for n in ("T", "T.local", "produce") if n not in {b.name for b in bufs}]
        if not names:
            return S.Barrier()
        b = S.Buffer(
            draw(st.sampled_from(names)),
            draw(st.sampled_from(["float32", "float16"])),
            tuple(draw(st.lists(st.integers(1, 9), max_size=2))),
            draw(st.sampled_from(S.SCOPES)),
        )
        return S.Allocate(b, draw(stmts(scope, bufs + (b,), depth + 1)))
    if kind == "produce":
        return S.Produce(
            draw(st.sampled_from(["C", "C.local", "if"])), draw(stmts(scope, bufs, depth + 1))
        )
    parts = draw(st.lists(stmts(scope, bufs, depth + 1), min_size=0, max_size=3))
    return S.seq(*parts) if parts else S.Seq(())


def _stored_args(body):
    from tensorsched.ir.visitor import Visitor

    found = set()

    class _Stores(Visitor):
        def visit_Store(self, s):
            found.add(s.buffer)
            self.generic_visit(s)

    _Stores().visit(body)
    return tuple(b for b in ARGS if b in found)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(float_exprs([E.Var("i"), E.Var("j")], ARGS))
def test_random_expressions_roundtrip(e):
    env = {"A": A, "H": H, "C": C}
    for v in _vars(e):
        env[v.name] = v
    text = print_expr(e)
    back = parse_ir_expr(text, env)
    assert structural_equal(back, e), text
    assert back.dtype == e.dtype
    assert print_expr(back) == text


def _vars(e):
    from tensorsched.ir.visitor import free_vars

    return free_vars(e)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stmts())
def test_random_statements_roundtrip(body):
    func = S.LoweredFunc("f", ARGS, body, _stored_args(body))
    text = func.script()
    back = ts.parse_ir(text)
    assert structural_equal(back, func), text
    assert back.script() == text
    # the bare form declares no buffer, so the types it infers may differ from A, H, C: its
    # second round trip is exact
    try:
        bare = print_stmt(ts.parse_ir(print_stmt(body)).body)
    except ts.ParseError as exc:  # an index over a loop of unknown extent
        assert "cannot bound the index" in exc.message
    else:
        assert print_stmt(ts.parse_ir(bare).body) == bare


# ---------------------------------------------------------------- one test per error message


def _error(text):
    with pytest.raises(ts.ParseError) as info:
        ts.parse_ir(text)
    e = info.value
    lines = str(e).split("\n")
    assert lines[0] == f"<ir>:{e.line}:{e.column}: {e.message}"
    assert lines[1] == "  " + text.split("\n")[e.line - 1]
    assert lines[2].index("^") == e.column + 1  # two leading spaces
    return e


ERRORS = [
    # (text, line, column, message part)
    ("for (i, 0, 4) {\n  A[i] = 1.5\n}", 2, 11, "a float32 constant needs the suffix 'f' (1.5f)"),
    (
        "for (i, 0, 4) {\n  A[i] = 0f\n",
        2,
        12,
        "the text ends inside a block: a '{' is missing its '}'",
    ),
    ("A[0] = (1 + 2", 1, 14, "the text ends too early; expected ')'"),
    (
        "// pragma unroll_explicit = 0\nA[0] = 0f",
        2,
        1,
        "a '// pragma' line must come right before the loop it annotates",
    ),
    (
        "// pragma unroll_explicit\nfor (i, 0, 4) {\n}",
        1,
        1,
        "a pragma line is '// pragma key = value'",
    ),
    (
        "for (i, 4) {\n}",
        1,
        10,
        "a loop header is (variable, min, extent): for (i, 0, 64); found ')'",
    ),
    ("A[0] == 1f", 1, 7, "a store writes one element: name[index] = value; found '='"),
    ("A[0] = 1f\n  B[0] = 2 $ 3", 2, 12, "unexpected character '$'"),
    ("if (x < 3) {\n} else A[0] = 1f", 2, 8, "unexpected 'A'; expected '{'"),
    ("for (i, 0, 4) {\n  A[i] = 0f\n}\n}", 4, 1, "unexpected '}'; expected the end of the text"),
    (
        "for (i, 0, 4) {\n  A[i, 2] = 0f\n}",
        2,
        3,
        "buffer 'A' has 2 indices; lowered IR indexes a flat buffer with one (A[i*n + j])",
    ),
    ("allocate X[floot32 * 4], local\nX[0] = 0f", 1, 12, "unknown dtype 'floot32'"),
    ("allocate X[float32 * 4], private\nX[0] = 0f", 1, 26, "unknown memory scope 'private'"),
    ("barrier(warp)", 1, 9, "unknown memory scope 'warp' of a barrier"),
    ("// attr [foo] thread_extent = 4\nA[foo] = 0f", 1, 10, "unknown thread tag 'foo'"),
    (
        "func f(A: float32[4]) {\n  B[0] = 0f\n}",
        2,
        3,
        "buffer 'B' is neither an argument of the function nor allocated here",
    ),
    (
        "func f(A: float32[4]) {\n  A[x] = 0f\n}",
        2,
        5,
        "variable 'x' is not defined by an enclosing loop",
    ),
    ("func f(A: float32[4], A: float32[4]) {\n}", 1, 1, "argument 'A' is declared twice"),
    ("func f(A: float32[4] texture) {\n}", 1, 22, "unknown argument flag 'texture'"),
    ("A[x] = 0f", 1, 1, "cannot bound the index of buffer 'A' over the loop ranges"),
    (
        "A[0] = select(1, 2f)",
        1,
        8,
        "select() takes 3 arguments (condition, value if true, value if false), got 2",
    ),
    ("A[0] = ramp(0, 1, n)", 1, 8, "the lanes of ramp() must be an integer constant above 1"),
    ("A[0] = rand()", 1, 8, "rand() has no argument to take its dtype from; add dtype=..."),
    ("A[0] = exp(1f, axis=1)", 1, 8, "exp() takes no keyword 'axis'"),
    ("A[0] = int32(1.5)", 1, 8, "int32 is an integer type; 1.5 is not an integer"),
]


@pytest.mark.parametrize("text, line, column, message", ERRORS, ids=[m[:40] for *_, m in ERRORS])
def test_parse_error_message(text, line, column, message):
    e = _error(text)
    assert (e.line, e.column) == (line, column), str(e)
    assert message in e.message, str(e)


def test_parse_error_is_a_tensorsched_error_with_position():
    with pytest.raises(ts.TensorschedError, match=r"<ir>:1:10:"):
        ts.parse_ir("for (i, 4) {}")


# ---------------------------------------------------------------- hand-edited IR runs


def _gemm_func(M=32, N=24, K=16):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, ii = s[C].split(i, 8)
    jo, ji = s[C].split(j, 4)
    s[C].reorder(io, jo, ii, k, ji)
    s[C].bind(io, ts.thread_axis("blockIdx.x"))
    s[C].bind(jo, ts.thread_axis("threadIdx.x"))
    return ts.lower(s, [A, B, C], name="gemm")


def swap_loops(text, outer, inner):
    """Swap the header lines of two perfectly nested loops, as one would by hand."""
    lines = text.split("\n")
    a = next(n for n, line in enumerate(lines) if line.strip().startswith(f"for ({outer},"))
    b = next(n for n, line in enumerate(lines) if line.strip().startswith(f"for ({inner},"))
    assert b == a + 1, "the loops are not perfectly nested"
    indent = lambda s: s[: len(s) - len(s.lstrip())]  # noqa: E731
    lines[a], lines[b] = indent(lines[a]) + lines[b].strip(), indent(lines[b]) + lines[a].strip()
    return "\n".join(lines)


def _edited_gemm():
    func = _gemm_func()
    text = func.script()
    edited = swap_loops(text, "k", "j.inner").replace(
        "for (i.inner, 0, 8)", "unrolled (i.inner, 0, 8)"
    )
    assert edited != text
    back = ts.parse_ir(edited)
    assert not structural_equal(back, func)
    assert "unrolled (i.inner, 0, 8) {" in back.script()
    return back


def _run_gemm(mod, M=32, N=24, K=16):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.25, 1, (M, K)).astype("float32")
    b = rng.uniform(0.25, 1, (K, N)).astype("float32")
    c = np.full((M, N), np.nan, dtype="float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5)


def test_hand_edited_ir_runs_on_python_target():
    _run_gemm(ts.build(_edited_gemm(), target="python"))


@pytest.fixture
def device():
    from tensorsched.runtime.device import DeviceError, current_device

    try:
        return current_device()
    except (DeviceError, ImportError) as exc:
        pytest.skip(f"no OpenCL device: {exc}")


@pytest.mark.opencl
def test_hand_edited_ir_runs_on_the_device(device):
    mod = ts.build(_edited_gemm(), target="opencl")
    assert "for (int k = 0; k < 16; ++k)" in mod.get_source()
    _run_gemm(mod)


@pytest.mark.opencl
def test_parsed_template_kernel_runs_on_the_device(device):
    s, args = TEMPLATES["gemm"]["gpu_tiled"](Config(), *GEMM_SHAPE)
    func = ts.parse_ir(ts.lower(s, args, name="tiled").script())
    M, N, K = GEMM_SHAPE
    _run_gemm(ts.build(func, target="opencl"), M, N, K)


def test_parsed_bare_form_builds_with_inferred_buffers():
    A, B, C = gemm(6, 5, 4)
    func = ts.parse_ir(str(ts.lower(ts.create_schedule(C.op), [A, B, C])))
    c, a, b = np.zeros(30, "float32"), np.ones(24, "float32"), np.full(20, 2, "float32")
    ts.build(func, target="python")(c, a, b)
    np.testing.assert_allclose(c, 8.0)


def test_float16_ir_parses_with_types():
    text = (
        "func f(X: float16[4], Y: float16[4]) {\n  for (i, 0, 4) {\n"
        "    Y[i] = X[i]*float16(2) + exp(X[i])\n  }\n}"
    )
    func = ts.parse_ir(text)
    store = func.body.body
    assert store.value.dtype == "float16" and store.value.b.dtype == "float16"
    assert dt.element(store.value.a.b.dtype) == "float16"
    assert func.script() == text
