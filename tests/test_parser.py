"""The IR text round trip (``ts.parse_ir``): every template's IR, codegen-stage IR with vectors,
hypothesis-generated expression and statement trees, one test per parse error message, and a
hand-edited kernel that builds and runs. (Every other test's lowerings round-trip too: see
``roundtrip_hook.py``.)"""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sweep import NETWORK_SHAPES
from ts_check import gemm

import tensorsched as ts
from tensorsched.config import config
from tensorsched.errors import InternalError
from tensorsched.ir import dtype as dt
from tensorsched.ir import expr as E
from tensorsched.ir import printer as P
from tensorsched.ir import stmt as S
from tensorsched.ir.parser import (
    MAX_EXPR_DEPTH,
    MAX_NESTING,
    THREAD_TAGS,
    IndexBoundsError,
    check_roundtrip,
    ir_parser,
    parse_ir_expr,
    parse_ir_unchecked,
    roundtrip_problem,
)
from tensorsched.ir.precedence import BINARY
from tensorsched.ir.printer import print_expr, print_stmt
from tensorsched.ir.structural import structural_equal
from tensorsched.ops.conv2d import ConvShape
from tensorsched.ops.space import Config
from tensorsched.ops.templates import SHAPES, TEMPLATES


def assert_roundtrip(func):
    problem = roundtrip_problem(func)
    assert problem is None, problem
    ts.parse_ir(func.script())  # and every index provably inside its buffer


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
    if kind in SHAPES:  # a network operator's shape object
        shape = (SHAPES[kind](*NETWORK_SHAPES[kind]),)
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

    t = seed_conv.declare(CI=8, IH=10, IW=12, CO=8)
    assert_roundtrip(ts.lower(seed_conv.schedule(t, kernel_no), [t[0], t[1], t[-1]]))


def test_seed_conv_with_a_width_vw_does_not_divide_reads_past_conv():
    """The tutorial's packed layout holds OW // VW blocks of VW columns: with OW = 10 and
    VW = 4 the unpacking stage reads columns 8 and 9 past the end of 'conv'."""
    import seed_conv

    t = seed_conv.declare(CI=8, IH=10, IW=10, CO=8)
    func = ts.lower(seed_conv.schedule(t, 1), [t[0], t[1], t[-1]])
    with pytest.raises(IndexBoundsError, match=r"past the end of 'conv' \(float32\[1, 2, 10, 2"):
        ts.parse_ir(func.script())


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


def test_bare_form_takes_its_arguments_and_never_guesses():
    A, B, C = gemm(5, 3, 4)
    text = str(ts.lower(ts.create_schedule(C.op), [A, B, C]))
    with pytest.raises(ts.ParseError, match=r"uses buffers C, A, B without declaring") as info:
        ts.parse_ir(text)
    assert "args=[A, B, C]" in info.value.message
    func = ts.parse_ir(text, args=[A, B, C])
    assert [(b.name, b.dtype, b.shape) for b in func.args] == [
        ("A", "float32", (5, 4)),
        ("B", "float32", (4, 3)),
        ("C", "float32", (5, 3)),
    ]
    assert [b.name for b in func.outputs] == ["C"]
    half = ts.parse_ir(
        "for (i, 0, 8) {\n  H[i*2] = float16(X[i] + float16(1))\n}",
        args=[("X", 8, "float16"), ("H", (16,), "float16")],
    )
    assert {b.name: (b.dtype, b.shape) for b in half.args} == {
        "H": ("float16", (16,)),
        "X": ("float16", (8,)),
    }
    # a body that declares every buffer it uses needs no arguments
    assert ts.parse_ir("allocate T[float32 * 4], local\nT[3] = 0f").args == ()


@pytest.mark.parametrize(
    "args, message",
    [
        ([("A", 4)], "args[0] is ('A', 4); give a tensor"),
        ([("A", (0,), "float32")], "positive integer dims"),
        ([("A", (2**70,), "float32")], "has 1180591620717411303424 elements, more than int64"),
        ([("A", (2**40, 2**40), "float32")], "elements, more than int64"),
        ([("A", (4,), "floot32")], "a dtype such as 'float32'"),
        ([("A", 4, "float32"), ("A", 4, "float32")], "argument 'A' is declared twice"),
        ([("B", 4, "float32")], "buffer 'A' is neither an argument"),
    ],
)
def test_bare_form_args_are_checked(args, message):
    with pytest.raises(ts.ParseError, match=re.escape(message)):
        ts.parse_ir("A[0] = 1f", args=args)


def test_function_form_takes_no_args():
    with pytest.raises(ts.ParseError, match="declares its arguments in its signature"):
        ts.parse_ir("func f(A: float32[4]) {\n}", args=[("A", 4, "float32")])


# ---------------------------------------------------------------- indices inside their buffers

F8 = "func f(A: float32[4], C: float32[8]) {{\n{}\n}}"
BOUNDS_ERRORS = [
    # (body, message part): issue 15's cases, then each way an index escapes
    ("for (i, 0, 8) {\n  C[i + 6] = 1f\n}", "C[i + 6] reaches index 13, past the end of 'C'"),
    ("for (i, 0, 4) {\n  C[i] = A[i + 100]\n}", "A[i + 100] reaches index 103, past the end"),
    ("for (i, 0, 4) {\n  C[i] = A[i - 4]\n}", "A[i - 4] reaches index -4, before the start"),
    ("for (i, 0, 4) {\n  C[i*3] = 1f\n}", "reaches index 9, past the end of 'C'"),
    ("for (i, 0, 2) {\n  C[ramp(i*4, 1, 8)] = broadcast(1f, 8)\n}", "reaches index 11"),
    ("for (i, 0, 9) {\n  if (i < 9) {\n    C[i] = 1f\n  }\n}", "reaches index 8"),
    ("for (i, 0, 8) {\n  C[i] = select(i < 5, A[i], 0f)\n}", "else branch"),
    ("for (i, 0, 8) {\n  C[A[i] < 1f] = 0f\n}", "A[i] reaches index 7"),
    ("for (i, 0, 8) {\n  for (j, 0, i) {\n    C[i + j] = 0f\n  }\n}", "reaches index 13"),
    ("for (i, 0, 8) {\n  C[i*i] = 0f\n}", "reaches index 49"),
    ("// attr [threadIdx.x] thread_extent = 16\nC[threadIdx.x] = 0f", "reaches index 15"),
    ("allocate T[float32 * 4], local\nfor (i, 0, 8) {\n  T[i] = 0f\n}", "'T' (float32[4]"),
]


@pytest.mark.parametrize("body, message", BOUNDS_ERRORS, ids=[b[:30] for b, _ in BOUNDS_ERRORS])
def test_index_outside_its_buffer_is_refused(body, message):
    if message == "else branch":  # the load sits on the branch the guard does not cover
        body, message = body.replace("A[i], 0f", "0f, A[i]"), "A[i] reaches index 7"
    with pytest.raises(IndexBoundsError) as info:
        ts.parse_ir(F8.format(body))
    assert message in info.value.message, str(info.value)
    assert info.value.line is not None and "guard the access" in info.value.message


GUARDED = [
    "for (i, 0, 12) {\n  if (i < 8) {\n    C[i] = 1f\n  }\n}",
    "for (i, 0, 12) {\n  if (i >= 4) {\n    C[i - 4] = 1f\n  }\n}",
    "for (i, 0, 12) {\n  if (i < 4 || i >= 8) {\n  } else {\n    C[i - 4] = 1f\n  }\n}",
    "for (i, 0, 8) {\n  C[i] = select(i >= 2 && i < 6, A[i - 2], 0f)\n}",
    "for (i, 0, 8) {\n  C[i] = select(!(i < 4), A[i - 4], 0f)\n}",
    "for (o, 0, 3) {\n  for (k, 0, 4) {\n    if (o*4 + k < 8) {\n      C[o*4 + k] = 1f\n"
    "    }\n  }\n}",
    "for (i, 0, 16) {\n  if (i//2 < 4) {\n    C[i] = 1f\n  }\n}",
    "for (i, 0, 100) {\n  C[i % 8] = A[i//8 % 4]\n}",
    "for (i, 0, 8) {\n  if (i < 8 && A[i % 4] > 0f) {\n    C[i] = 1f\n  }\n}",
    "for (i, 0, 0) {\n  C[i + 100] = 1f\n}",
    "for (i, 0, 4) {\n  if (i > 10) {\n    C[i + 100] = 1f\n  }\n}",
    "for (i, 0, 2) {\n  C[ramp(i*4, 1, 4)] = broadcast(A[i], 4)\n}",
]


@pytest.mark.parametrize("body", GUARDED)
def test_index_kept_inside_by_loops_or_guards_is_accepted(body):
    ts.parse_ir(F8.format(body))


def test_guard_on_a_combination_bounds_its_multiples():
    """An uneven split's guards (i.outer*4 + i.inner < 10) bound a row-major index."""
    A = ts.placeholder((10, 6), name="A")
    B = ts.compute((10, 6), lambda i, j: A[i, j] * 2, name="B")
    s = ts.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    s[B].split(B.op.axis[1], factor=4)
    func = ts.lower(s, [A, B])
    assert structural_equal(ts.parse_ir(func.script()), func)
    edited = func.script().replace("i.outer*4 + i.inner < 10", "i.outer*4 + i.inner < 11")
    with pytest.raises(IndexBoundsError, match=r"reaches index 65, past the end of 'A'"):
        ts.parse_ir(edited)


# ---------------------------------------------------------------- the exact check

# Indices the interval bounds cannot prove, each with the size that holds it exactly: //
# and % of one variable, guards that are not linear or say !=, loops bounded by outer
# variables, vector lanes, a guard on the branch of a select, a huge domain split in parts.
EXACT = [
    ("for (w, 0, 5) {\n  C[w//3*4 + w%3] = 1f\n}", 6, "w = 4"),
    (
        "for (i, 0, 4) {\n  for (j, 0, 4) {\n    if (i*j < 3) {\n      C[i + j] = 1f\n    }\n"
        "  }\n}",
        4,
        "i = 0, j = 3",
    ),
    ("for (i, 0, 8) {\n  if (i != 7) {\n    C[i] = 1f\n  }\n}", 7, "i = 6"),
    ("for (i, 0, 16) {\n  if ((i + 1) % 4 != 0) {\n    C[i//4*3 + i%4] = 1f\n  }\n}", 12, "i = 14"),
    ("for (i, 0, 4) {\n  for (j, i, 4 - i) {\n    C[j] = 1f\n  }\n}", 4, "i = 0, j = 3"),
    (
        "for (i, 0, 6) {\n  if (i % 3 != 2) {\n"
        "    C[ramp(i//3*8 + i%3*2, 1, 2)] = broadcast(1f, 2)\n  }\n}",
        12,
        "i = 4, lane = 1",
    ),
    ("for (i, 0, 10) {\n  C[0] = select(i % 5 != 4, C[i//5*4 + i%5], 0f)\n}", 8, "i = 8"),
    (
        "for (i, 0, 4096) {\n  for (j, 0, 2048) {\n    for (w, 0, 5) {\n"
        "      C[i*12288 + j*6 + w//3*4 + w%3] = 1f\n    }\n  }\n}",
        4096 * 2048 * 6,
        "i = 4095, j = 2047, w = 4",
    ),
]


def _func(body, size):
    return f"func f(C: float32[{size}]) {{\n{body}\n}}"


@pytest.mark.parametrize("body, size, at", EXACT, ids=[b[:30] for b, _, _ in EXACT])
def test_index_the_intervals_cannot_prove_is_decided_point_by_point(monkeypatch, body, size, at):
    import tensorsched.ir.index_check as index_check

    ts.parse_ir(_func(body, size))  # exactly in bounds: accepted
    with pytest.raises(IndexBoundsError) as info:  # one element short: the last one is caught
        ts.parse_ir(_func(body, size - 1))
    exc = info.value
    assert f"reaches index {size - 1}, past the end of 'C'" in exc.message
    assert f"when {at};" in exc.message and "guard the access" in exc.message
    assert exc.counterexample == {k: int(v) for k, v in (x.split(" = ") for x in at.split(", "))}
    assert exc.line is not None
    if size < 100 and "ramp" not in body:  # the python target (scalar) agrees
        ts.build(ts.parse_ir(_func(body, size)), target="python")(np.zeros(size, "float32"))
        short = ts.build(parse_ir_unchecked(_func(body, size - 1)), target="python")
        with pytest.raises(ts.RuntimeCallError, match="is outside"):
            short(np.zeros(size - 1, "float32"))
    monkeypatch.setattr(index_check, "ENUMERATE_LIMIT", 0)  # the intervals alone refuse it
    with pytest.raises(IndexBoundsError, match="cannot be proven inside 'C'") as info:
        ts.parse_ir(_func(body, size))
    assert info.value.counterexample is None


def test_index_over_too_many_points_is_refused_until_a_guard_makes_it_provable():
    """6 million points of (i, j) in one term: more than ENUMERATE_LIMIT, so the interval
    bounds decide, and they cannot rule out index 6; the guard the message suggests bounds it."""
    body = "for (i, 0, 3000) {{\n  for (j, 0, 2000) {{\n    {}\n  }}\n}}"
    with pytest.raises(IndexBoundsError) as info:
        ts.parse_ir(_func(body.format("C[(i*j) % 7] = 1f"), 6))
    assert info.value.message == (
        "C[i*j%7] cannot be proven inside 'C' (float32[6], 6 elements): the loops it depends "
        "on run more than 4194304 times together, too many to check one by one, and the "
        "bounds over the loop ranges and guards let it reach 6; guard the access "
        "(if (0 <= index && index < 6) { ... }) to make it provable"
    )
    assert info.value.counterexample is None
    ts.parse_ir(_func(body.format("if ((i*j) % 7 < 6) {\n      C[(i*j) % 7] = 1f\n    }"), 6))


def test_index_read_from_a_buffer_cannot_be_proven():
    with pytest.raises(IndexBoundsError, match="it depends on values read from a buffer"):
        ts.parse_ir(_func("for (i, 0, 4) {\n  C[int32(C[i])] = 0f\n}", 4))


def test_guard_the_check_cannot_evaluate_keeps_the_others():
    """`A[i] > 0f` says nothing the check can use; `i < 4` beside it still bounds C[i]."""
    text = "func f(A: float32[8], C: float32[4]) {\n  for (i, 0, 8) {\n    if (A[i] > 0f && i*i < 16) {\n      C[i] = 1f\n    }\n  }\n}"
    ts.parse_ir(text)
    with pytest.raises(IndexBoundsError, match="cannot be proven inside 'C'.*a guard around it"):
        ts.parse_ir(text.replace("i*i < 16", "i*i < 17"))


@st.composite
def index_programs(draw):
    """Up to three loops and a store ``C[index]`` under an optional guard, with // and %."""
    names = ["i", "j", "k"][: draw(st.integers(1, 3))]
    extents = [draw(st.integers(1, 6)) for _ in names]

    def linear():
        out = ""
        for _ in range(draw(st.integers(1, 3))):
            v = draw(st.sampled_from(names))
            atom = draw(st.sampled_from([v, f"{v}//{draw(st.integers(2, 4))}", f"({v} + 1)%3"]))
            out += f" {draw(st.sampled_from('+-'))} {atom}*{draw(st.integers(1, 4))}"
        const = draw(st.integers(-3, 3))
        return f"0{out} {'+-'[const < 0]} {abs(const)}"

    index = linear()
    guard = draw(
        st.one_of(
            st.none(),
            st.tuples(
                st.just(linear()),
                st.sampled_from(["<", "<=", ">", ">=", "==", "!="]),
                st.integers(-4, 8),
            ),
        )
    )
    store = f"C[{index}] = 1f"
    if guard is not None:
        bound = f"({guard[2]})" if guard[2] < 0 else guard[2]  # the text's negative constant
        store = f"if ({guard[0]} {guard[1]} {bound}) {{\n{store}\n}}"
    body = store
    for v, n in reversed(list(zip(names, extents))):
        body = f"for ({v}, 0, {n}) {{\n{body}\n}}"
    return body, draw(st.integers(1, 30))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index_programs())
def test_index_check_agrees_with_the_python_target(program):
    """Exact: parse_ir refuses a store exactly when running it indexes outside C, and then
    names a value outside C with the loop values that reach it."""
    body, size = program
    text = _func(body, size)
    run = ts.build(parse_ir_unchecked(text), target="python")
    try:
        run(np.zeros(size, "float32"))
        outside = False
    except ts.RuntimeCallError:
        outside = True
    try:
        ts.parse_ir(text)
        refused = None
    except IndexBoundsError as exc:
        refused = exc
    assert (refused is not None) == outside, text
    if refused is not None:
        assert refused.counterexample is not None, refused.message
        value = int(re.search(r"reaches index (-?\d+)", refused.message).group(1))
        assert not 0 <= value < size


def test_fuzzed_lowering_the_intervals_refused_parses_back():
    """A fuse + split of 22 elements by 6 reads M[outer*3 + inner//2] under the guard
    outer*6 + inner < 22: at most 10, though the intervals say 11."""
    A = ts.placeholder((11, 2), name="A")
    M = ts.placeholder((11,), name="M")
    B = ts.compute((11, 2), lambda i, j: A[i, j] - M[i], name="B")
    s = ts.create_schedule(B.op)
    fused = s[B].fuse(*B.op.axis)
    s[B].split(fused, factor=6)
    func = ts.lower(s, [A, M, B])  # the round-trip hook parses it back with the check on
    text = func.script()
    assert "M[i.j.fused.outer*3 + i.j.fused.inner//2]" in text
    assert structural_equal(ts.parse_ir(text), func)
    edited = text.replace("i.j.fused.inner//2]", "(i.j.fused.inner + 1)//2]")  # one too far
    with pytest.raises(IndexBoundsError) as info:
        ts.parse_ir(edited)
    assert "reaches index 11, past the end of 'M'" in info.value.message
    assert info.value.counterexample == {"i.j.fused.outer": 3, "i.j.fused.inner": 3}


def test_round_trip_fails_on_a_lowering_parse_ir_cannot_prove(monkeypatch):
    """No unchecked fallback: refusing a lowering that stays in its buffers is a round-trip
    failure (here forced by turning the point-by-point check off)."""
    import tensorsched.ir.index_check as index_check

    func = ts.parse_ir(_func(EXACT[0][0], 6))
    monkeypatch.setattr(index_check, "ENUMERATE_LIMIT", 0)
    problem = roundtrip_problem(func)
    assert problem is not None and "parse_ir refuses the printed IR" in problem
    assert "cannot be proven" in problem


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
        st.floats(allow_nan=False, allow_infinity=False, width=16).map(  # within float16
            lambda v: E.FloatImm(v, "float16")
        ),
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
    # the syntax alone: random indices leave their buffers, so the index check is off
    func = S.LoweredFunc("f", ARGS, body, _stored_args(body))
    text = func.script()
    back = parse_ir_unchecked(text)
    assert structural_equal(back, func), text
    assert back.script() == text
    bare = print_stmt(body)
    assert print_stmt(parse_ir_unchecked(bare, args=ARGS).body) == bare
    try:
        ts.parse_ir(text)
    except IndexBoundsError:
        pass


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
    ("A[x] = 0f", 1, 1, "the body uses buffer A without declaring"),
    ("B[0] = A[3]", 1, 1, "the body uses buffers B, A without declaring them"),
    (
        "func f(A: float32[4]) {\n  for (i, 0, n) {\n    A[i] = 0f\n  }\n}",
        2,
        14,
        "variable 'n' is not defined",
    ),
    (
        "func f(A: float32[4]) {\n  for (i, 0, 5) {\n    A[i] = 0f\n  }\n}",
        3,
        5,
        "A[i] reaches index 4, past the end of 'A' (float32[4], 4 elements)",
    ),
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
    # a quoted name is a JSON string (the printer writes it with json.dumps)
    ('"s-\x01abc" x', 1, 1, "is not a JSON string (it holds a control character)"),
    ('A[0] = 0f\n"x\\q"[0] = 1f', 2, 1, "is not a JSON string (a backslash starts no JSON"),
    # numbers beyond what their type holds (int64 at most): a ParseError, never an OverflowError
    (
        "func f(A: int32[10]) { for (i, 999999999999999999999999999999, 10) { A[i] = 1 } }",
        1,
        32,
        "the integer 999999999999999999999999999999 is beyond int64",
    ),
    (
        "func f(A: int32[10]) {\n  for (i, 9223372036854775808, 10) {\n    A[i] = 1\n  }\n}",
        2,
        11,
        "the integer 9223372036854775808 is beyond int64",
    ),
    ("for (i, 0, 99999999999999999999) {\n}", 1, 12, "99999999999999999999 is beyond int64"),
    (
        "func f(A: int64[10]) { for (i, 0, 10) { A[i] = 99999999999999999999999999 } }",
        1,
        48,
        "the integer 99999999999999999999999999 is beyond int64",
    ),
    ("A[0] = int32(3000000000)", 1, 8, "3000000000 does not fit in int32; write int64(3000000000)"),
    ("A[0] = int32(-2147483649)", 1, 8, "-2147483649 does not fit in int32"),
    ("A[0] = int64(9223372036854775808)", 1, 8, "the integer 9223372036854775808 is beyond"),
    ("A[0] = (-1" + "0" * 5000 + ")", 1, 10, "the integer -10000000000000000000... (5001 digits)"),
    (
        "func f(A: float32[99999999999999999999999]) {\n}",
        1,
        19,
        "the integer 99999999999999999999999 is beyond int64",
    ),
    (
        "func f(A: float32[3037000500, 3037000500]) {\n}",
        1,
        19,
        "argument 'A' has 9223372037000250000 elements, more than int64",
    ),
    (
        "allocate X[float32 * 4294967296 * 4294967296], local\nX[0] = 0f",
        1,
        22,
        "'X' has 18446744073709551616 elements, more than int64",
    ),
    (
        "// attr [threadIdx.x] thread_extent = 99999999999999999999\nA[0] = 1f",
        1,
        39,
        "the integer 99999999999999999999 is beyond int64",
    ),
    (
        "for (i, int64(9223372036854775800), 100) {\n}",
        1,
        6,
        "loop 'i' may run up to 9223372036854775899, past int64",
    ),
    ("A[0] = 1e39f", 1, 8, "1e39 is beyond float32 (largest 3.40282e+38)"),
    ("A[0] = (-1e39f)", 1, 10, "-1e39 is beyond float32"),
    ("A[0] = float16(65536)", 1, 8, "65536 is beyond float16 (largest 65504)"),
    ("A[0] = float64(1e400)", 1, 8, "1e400 is beyond float64"),
    (
        "func f(A: float32[4], C: int32[1]) {\n  last_group (C[0], threadIdx.x, 2) {\n  }\n}",
        2,
        21,
        "last_group counts work-groups along a block tag",
    ),
    (
        "func f(A: float32[4], C: float32[1]) {\n  last_group (C[0], blockIdx.z, 2) {\n  }\n}",
        2,
        15,
        "last_group counts arrivals in a global int32 buffer; 'C' is global float32",
    ),
    (
        "func f(A: float32[4], C: int32[1]) {\n  for (i, 0, 2) {\n"
        "    last_group (C[0], blockIdx.z, 2) {\n    }\n  }\n}",
        3,
        17,
        "last_group must be outside every loop",
    ),
]


@pytest.mark.parametrize("text, line, column, message", ERRORS, ids=[m[:40] for *_, m in ERRORS])
def test_parse_error_message(text, line, column, message):
    e = _error(text)
    assert (e.line, e.column) == (line, column), str(e)
    assert message in e.message, str(e)


def test_last_group_reads_back():
    """``last_group`` (the last of a K split's work-groups adds it in the same kernel) prints
    and parses back, under a test of the other block indices."""
    text = (
        "func f(A: float32[8], C: float32[8]) {\n"
        "  allocate arrivals[int32 * 2], global\n"
        "  // attr [blockIdx.x] thread_extent = 2\n"
        "  if (blockIdx.x < 2) {\n"
        "    // attr [blockIdx.z] thread_extent = 4\n"
        "    A[blockIdx.x*4 + blockIdx.z] = 1f\n"
        "    last_group (arrivals[blockIdx.x], blockIdx.z, 4) {\n"
        "      C[blockIdx.x] = A[blockIdx.x*4]\n"
        "    }\n"
        "  }\n"
        "}"
    )
    f = ts.parse_ir(text)
    assert "last_group (arrivals[blockIdx.x], blockIdx.z, 4) {" in f.script()
    assert ts.parse_ir(f.script()).script() == f.script()


def test_numbers_at_the_limits_of_their_types_parse():
    text = (
        "func f(A: int64[4], B: float32[4], C: float16[4]) {\n"
        "  A[0] = int64(9223372036854775807)\n"
        "  A[1] = int64(-9223372036854775808)\n"
        "  A[2] = 2147483647 + (-2147483648)\n"
        '  B[0] = 3.4e+38f + (-3.4e+38f) + float32("inf") + float32("-inf")\n'
        "  C[0] = float16(65504) + float16(-65504)\n"
        "}"
    )
    f = ts.parse_ir(text)
    assert ts.parse_ir(f.script()).script() == f.script()


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


def test_parsed_bare_form_builds_with_the_given_arguments():
    A, B, C = gemm(6, 5, 4)
    func = ts.parse_ir(str(ts.lower(ts.create_schedule(C.op), [A, B, C])), args=[A, B, C])
    a, b, c = np.ones((6, 4), "float32"), np.full((4, 5), 2, "float32"), np.zeros((6, 5), "float32")
    ts.build(func, target="python")(a, b, c)  # issue 15: a guessed order C, A, B wrote into a
    np.testing.assert_allclose(c, 8.0)
    np.testing.assert_allclose(a, 1.0)


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


# ---------------------------------------------------------------- long text


def _sum(n, term="A[0]"):
    return " + ".join([term] * n)


def _nested(n, inner="A[0] = 1f"):
    return "".join(f"for (i{k}, 0, 1) {{\n" for k in range(n)) + inner + "\n" + "}\n" * n


LONG_TEXTS = [
    # issue 15 item 9: each raised RecursionError or lark's VisitError
    ("a 1000-term sum", f"A[0] = {_sum(1000)}", (2, 8), "nests more than 128 operators"),
    ("500 nested loops", _nested(500), (66, 1), "blocks nest more than 64 deep"),
    ("a 2000-term expression", f"A[0] = {_sum(1000, 'A[1]*2f')}", (2, 8), "operators deep"),
    ("129 nested ifs", "if (True) {\n" * 65 + "}\n" * 65, (66, 1), "blocks nest more than"),
]


@pytest.mark.parametrize("what, body, where, message", LONG_TEXTS, ids=[t[0] for t in LONG_TEXTS])
def test_long_text_is_refused_with_a_parse_error(what, body, where, message):
    with pytest.raises(ts.ParseError) as info:
        ts.parse_ir("func f(A: float32[4]) {\n" + body + "\n}")
    assert (info.value.line, info.value.column) == where
    assert message in info.value.message and "split it" in info.value.message


def test_text_at_the_limits_parses_and_generates_opencl():
    from tensorsched.codegen.opencl import emit_opencl

    body = _nested(MAX_NESTING - 1, f"A[0] = {_sum(MAX_EXPR_DEPTH - 8)}")
    func = ts.parse_ir("func f(A: float32[4]) {\n" + body + "}")
    assert "A[0] + A[0]" in emit_opencl(func).text
    # parenthesised, the same number of terms is shallow: 2000 terms parse
    balanced = "A[0]"
    for _ in range(11):
        balanced = f"({balanced} + {balanced})"
    ts.parse_ir(f"func f(A: float32[4]) {{\n  A[0] = {balanced}\n}}")


def test_python_target_says_when_python_cannot_nest_that_deep():
    func = ts.parse_ir("func f(A: float32[4]) {\n" + _nested(30) + "}")
    with pytest.raises(ts.CodegenError, match="nests too deep for Python"):
        ts.build(func, target="python")


# ---------------------------------------------------------------- the python target's errors


def test_python_target_out_of_bounds_is_a_runtime_call_error():
    text = "func f(C: float32[8]) {\n  for (i, 0, 8) {\n    C[i + 6] = 1f\n  }\n}"
    mod = ts.build(parse_ir_unchecked(text), target="python")
    with pytest.raises(ts.RuntimeCallError, match=r"access C\[8\] is outside the 8 elements"):
        mod(np.zeros(8, "float32"))


def test_python_target_runs_a_lowering_that_reads_past_a_buffer_into_an_error():
    import seed_conv

    t = seed_conv.declare(CI=4, IH=6, IW=6, CO=4)  # OW = 6: VW = 4 covers 4 of 6 columns
    mod = ts.build(seed_conv.schedule(t, 1), [t[0], t[1], t[-1]], target="python")
    args = [np.zeros([int(d) for d in x.shape], "float32") for x in (t[0], t[1], t[-1])]
    with pytest.raises(ts.RuntimeCallError, match=r"access conv\[\d+\] is outside"):
        mod(*args)


def test_python_target_integer_division_by_zero_is_a_runtime_call_error():
    text = "func f(A: int32[4]) {\n  for (i, 0, 4) {\n    A[i] = 4//(i - i)\n  }\n}"
    mod = ts.build(ts.parse_ir(text), target="python")
    with pytest.raises(ts.RuntimeCallError, match="ZeroDivisionError"):
        mod(np.zeros(4, "int32"))
