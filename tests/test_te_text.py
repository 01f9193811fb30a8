"""Tensor expressions as text (``ts.parse_expr``): the text forms of GEMM, a padded conv, softmax
and an elementwise chain compute what their ``ts.compute`` forms compute; shape inference; one
test per error message; the ``tensorsched ir`` command; the generic template."""

import argparse
import contextlib
import io

import numpy as np
import pytest
from ts_check import assert_close, conv_ref, gemm, random_array

import tensorsched as ts
from tensorsched.cli import add_ir_parser, cmd_ir
from tensorsched.ir.structural import structural_equal
from tensorsched.ir.te_text import parse_shapes
from tensorsched.ir.tensor import PlaceholderOp
from tensorsched.ops.conv2d import ConvShape, conv2d_nchw
from tensorsched.ops.space import Config
from tensorsched.ops.templates.generic import generic


def run(out, args, inputs):
    """Build ``out``'s default schedule (python target) and run it on ``inputs`` (by name)."""
    mod = ts.build(ts.create_schedule(out.op), args, target="python")
    arrays = [
        inputs[t.name]
        if isinstance(t.op, PlaceholderOp)
        else np.full(t.shape, np.nan, dtype=t.dtype)
        for t in args
    ]
    mod(*arrays)
    return arrays[-1]


def inputs_of(tensors, seed=0):
    rng = np.random.default_rng(seed)
    return {
        t.name: random_array(t.shape, t.dtype, rng)
        for t in tensors.values()
        if isinstance(t.op, PlaceholderOp)
    }


def args_of(tensors):
    ins = [t for t in tensors.values() if isinstance(t.op, PlaceholderOp)]
    return ins + [list(tensors.values())[-1]]


# ---------------------------------------------------------------- same numbers as ts.compute


def test_gemm_text_is_the_compute_gemm():
    t = ts.parse_expr("C[i, j] += A[i, k] * B[k, j]", "i=13,j=11,k=7")
    assert list(t) == ["A", "B", "C"]
    assert t["A"].shape == (13, 7) and t["B"].shape == (7, 11) and t["C"].shape == (13, 11)
    A, B, C = gemm(13, 11, 7)
    text_ir = ts.lower(ts.create_schedule(t["C"].op), args_of(t))
    assert structural_equal(text_ir, ts.lower(ts.create_schedule(C.op), [A, B, C]))
    ins = inputs_of(t)
    np.testing.assert_array_equal(run(t["C"], args_of(t), ins), run(C, [A, B, C], ins))


def test_padded_conv_text_is_the_compute_conv():
    shape = ConvShape(1, 3, 7, 9, 5, 3, 3, 1, 1)
    t = ts.parse_expr(
        """
        data_pad[n, ci, y, x] = pad(data[n, ci, y - 1, x - 1], 0.0)
        conv2d[n, co, h, w] += data_pad[n, ci, h + kh, w + kw] * kernel[co, ci, kh, kw]
    """,
        "data=1x3x7x9,data_pad=1x3x9x11,n=1,co=5,h=7,w=9,kernel=5x3x3x3",
    )
    assert list(t) == ["data", "kernel", "data_pad", "conv2d"]
    data, kernel, out = conv2d_nchw(shape)
    ins = inputs_of(t)
    got = run(t["conv2d"], args_of(t), ins)
    np.testing.assert_allclose(got, run(out, [data, kernel, out], ins), rtol=1e-6)
    assert_close(got, conv_ref(ins["data"].astype(np.float64), ins["kernel"]), "float32")


def test_strided_conv_input_shape_is_inferred():
    t = ts.parse_expr(
        "O[f, y, x] += I[c, y*2 + ry, x*2 + rx] * W[f, c, ry, rx]", "f=4,y=5,x=6,c=3,ry=3,rx=2"
    )
    assert t["I"].shape == (3, 11, 12) and t["W"].shape == (4, 3, 3, 2)


def softmax_compute(M, N):
    A = ts.placeholder((M, N), name="A")
    k = ts.reduce_axis((0, N), name="k")
    mx = ts.compute((M,), lambda i: ts.max(A[i, k], axis=k), name="mx")
    ex = ts.compute((M, N), lambda i, j: ts.exp(A[i, j] - mx[i]), name="ex")
    k2 = ts.reduce_axis((0, N), name="k2")
    sm = ts.compute((M,), lambda i: ts.sum(ex[i, k2], axis=k2), name="sm")
    out = ts.compute((M, N), lambda i, j: ex[i, j] / sm[i], name="out")
    return A, out


SOFTMAX = """
    mx[i] max= A[i, k]              # row maximum
    ex[i, j] = exp(A[i, j] - mx[i])
    sm[i] += ex[i, k]
    out[i, j] = ex[i, j] / sm[i]
"""


def test_softmax_text_is_the_compute_softmax():
    t = ts.parse_expr(SOFTMAX, "i=7,j=13")  # k's extent: A's second dimension
    assert list(t) == ["A", "mx", "ex", "sm", "out"] and t["A"].shape == (7, 13)
    A, out = softmax_compute(7, 13)
    ins = inputs_of(t)
    got = run(t["out"], [t["A"], t["out"]], ins)
    np.testing.assert_allclose(got, run(out, [A, out], ins), rtol=1e-6)
    e = np.exp(ins["A"] - ins["A"].max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_elementwise_chain_text_is_the_compute_chain():
    t = ts.parse_expr(
        "B[i, j] = A[i, j] * 2.0; C[i, j] = B[i, j] + 1\n"
        "D[i, j] = C[i, j] * C[i, 6 - j]\n"
        "E[i, j] = sigmoid(max(D[i, j], 0.0)) + sqrt(fabs(D[i, j])) / 3.0",
        "i=5,j=7",
    )
    A = ts.placeholder((5, 7), name="A")
    B = ts.compute((5, 7), lambda i, j: A[i, j] * 2.0, name="B")
    C = ts.compute((5, 7), lambda i, j: B[i, j] + 1, name="C")
    D = ts.compute((5, 7), lambda i, j: C[i, j] * C[i, 6 - j], name="D")
    E_ = ts.compute(
        (5, 7),
        lambda i, j: ts.sigmoid(ts.max(D[i, j], 0.0)) + ts.sqrt(ts.fabs(D[i, j])) / 3.0,
        name="E",
    )
    assert str(t["E"].op.body[0]) == str(E_.op.body[0])  # the same expression
    ins = inputs_of(t)
    np.testing.assert_array_equal(run(t["E"], [t["A"], t["E"]], ins), run(E_, [A, E_], ins))


def test_min_reduction_casts_and_conditions():
    t = ts.parse_expr(
        "m[i] min= select(A[i, k] > 0.5 && !(k == 0), A[i, k], float32(k))\n"
        "h[i] = float16(m[i]) * float16(2)",
        "i=4,k=6",
        dtype="float32",
    )
    assert t["h"].dtype == "float16"
    a = np.random.default_rng(1).uniform(0, 1, (4, 6)).astype("float32")
    ref = np.where((a > 0.5) & (np.arange(6) != 0), a, np.arange(6, dtype="float32")).min(1)
    got = run(t["h"], [t["A"], t["h"]], {"A": a})
    np.testing.assert_allclose(got, ref * 2, rtol=1e-3)


def test_shapes_string():
    assert parse_shapes("i=64, j=32,A=34x34") == {"i": 64, "j": 32, "A": (34, 34)}
    assert parse_shapes({"i": 3}) == {"i": 3}


# ---------------------------------------------------------------- one test per error message

TE_ERRORS = [
    (
        "C[i] = A[i, k]",
        "i=4,k=3",
        1,
        1,
        "index variable 'k' appears only on the right; reduce over it with += (sum), max= or min=",
    ),
    (
        "C[i] += A[i]",
        "i=4",
        1,
        1,
        "'+=' reduces over the index variables that appear only on "
        "the right, and there is none; write '='",
    ),
    ("C[i] = A[i]", "", 1, 1, "no extent for index variable 'i': give it in the shapes (i=64)"),
    ("C[i] = A[i]\nC[i] = A[i] + 1.0", "i=4", 2, 1, "tensor 'C' is defined twice"),
    ("C[i] = D[i]\nD[i] = A[i]", "i=4", 1, 8, "'D' is read before the statement that defines it"),
    ("C[i, i] = A[i]", "i=4", 1, 1, "'C': an index variable is repeated on the left"),
    ("C[i] = A[i - 1]", "i=4", 1, 10, "cannot size input 'A' from this index"),
    (
        "P[i] = pad(A[i - 1], 0.0)",
        "i=6",
        1,
        12,
        "input 'A' is only read through pad(), so its shape is unknown; give it in the shapes",
    ),
    (
        "C[i] = A[i] + A[i, 0]",
        "i=4",
        1,
        15,
        "input 'A' is read with 2 indices here and 1 elsewhere",
    ),
    ("C[i] = A[i, 0]", "i=4,A=4", 1, 8, "'A' has 1 dimensions, indexed with 2"),
    ("C[i] = gelu(A[i])", "i=4", 1, 8, "unknown function 'gelu'"),
    ("C[i] = max(A[i])", "i=4", 1, 8, "max() takes 2 arguments, got 1"),
    (
        "C[i] = pad(A[i] + 1.0, 0.0)",
        "i=4",
        1,
        8,
        "pad takes a tensor element and the padding value",
    ),
    ("C[i] = A[i] / 2\nD[i] = i / 2", "i=4", 2, 8, "'/' on integer expressions is ambiguous"),
    ("C[i] = A[i] +* 2.0", "i=4", 1, 14, "unexpected '*'"),
    ("C[i] = A[i] $ 2.0", "i=4", 1, 13, "unexpected character '$'"),
    ("C[i] = A[i]\nD[i] = C * 2.0", "i=4", 2, 8, "'C' is a tensor: index it (C[...])"),
    (
        "C[i] = A[B[i]]",
        "i=4",
        1,
        10,
        "an index reads tensor 'B'; indices are arithmetic on index variables",
    ),
    ("C[i, j] = A[i, j]", "C=4x4x4,i=4,j=4", 1, 1, "shapes give 'C' 3 dimensions, the statement 2"),
    # numbers their type cannot hold: refused, never infinity or an OverflowError
    ("C[i] = A[i] * 1" + "0" * 400, "i=4", 1, 8, "(401 characters) is beyond float32"),
    ("C[i] = A[i] * 1e300", "i=4", 1, 8, "const: 1e+300 is beyond float32"),
    ("C[i] = A[i] * 1e400", "i=4", 1, 15, "the number 1e400 is beyond every type"),
    ("C[i] = A[i] + 1" + "0" * 5000, "i=4", 1, 15, "(5001 characters) is beyond every type"),
    ("C[i] = A[i + 1" + "0" * 30 + "]", "i=4", 1, 10, "does not fit in int64"),
]


@pytest.mark.parametrize(
    "text, shapes, line, column, message", TE_ERRORS, ids=[m[:40] for *_, m in TE_ERRORS]
)
def test_te_error_message(text, shapes, line, column, message):
    with pytest.raises(ts.ParseError) as info:
        ts.parse_expr(text, shapes)
    e = info.value
    assert message in e.message, str(e)
    assert (e.line, e.column) == (line, column), str(e)
    assert str(e).startswith(f"<expr>:{line}:{column}: ")
    assert str(e).split("\n")[1] == "  " + text.split("\n")[line - 1]


def test_shapes_error_message():
    with pytest.raises(ts.ParseError, match=r"shapes: 'i:64' is not name=extent \(i=64\)"):
        ts.parse_expr("C[i] = A[i]", "i:64")


def test_empty_text_error_message():
    with pytest.raises(ts.ParseError, match="the text has no statement"):
        ts.parse_expr("# only a comment\n", "i=4")


# ---------------------------------------------------------------- the command and the template


def _cli(*argv):
    p = argparse.ArgumentParser()
    add_ir_parser(p.add_subparsers(dest="command"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cmd_ir(p.parse_args(["ir", *argv]))
    return out.getvalue()


def test_ir_command_prints_the_default_schedule():
    text = _cli("--expr", "C[i, j] += A[i, k] * B[k, j]", "--shape", "i=4,j=4,k=4")
    assert text.startswith("produce C {\n  for (i, 0, 4) {")
    assert "C[i*4 + j] = C[i*4 + j] + A[i*4 + k]*B[k*4 + j]" in text
    func = _cli("--expr", "C[i, j] += A[i, k] * B[k, j]", "--shape", "i=4,j=4,k=4", "--func")
    assert func.startswith(
        "func default_function(A: float32[4, 4], B: float32[4, 4], C: float32[4, 4]) {"
    )
    assert ts.parse_ir(func).script() + "\n" == func


def test_ir_command_prints_opencl_of_the_generic_template():
    src = _cli(
        "--expr",
        "B[i] = exp(A[i]); C[i] = B[i] * 2.0",
        "--shape",
        "i=1000",
        "--opencl",
        "--generic",
    )
    assert "__kernel" in src and "get_group_id(0)" in src and "exp(" in src


GENERIC_CASES = {
    "gemm": ("C[i, j] += A[i, k] * B[k, j]", "i=13,j=11,k=7", lambda ins: ins["A"] @ ins["B"]),
    "softmax": (SOFTMAX, "i=7,j=13", None),
    "conv": (
        """P[c, y, x] = pad(I[c, y - 1, x - 1], 0.0)
                O[f, h, w] += P[c, h + r, w + s] * W[f, c, r, s]""",
        "I=3x6x5,P=3x8x7,f=4,h=6,w=5,W=4x3x3x3",
        None,
    ),
}


def _points(cfg, k, seed):
    pts = [p for p in cfg.points()]
    rng = np.random.default_rng(seed)
    return [{}] + [pts[i] for i in rng.choice(len(pts), k, replace=False)]


@pytest.mark.parametrize("case", list(GENERIC_CASES))
def test_generic_template_knobs_keep_the_numbers(case):
    text, shapes, ref = GENERIC_CASES[case]
    space = Config()
    generic(space, text, shapes)
    assert {"tile_x", "vectorize"} <= set(space.space)
    tensors = ts.parse_expr(text, shapes)
    ins = inputs_of(tensors)
    expected = run(list(tensors.values())[-1], args_of(tensors), ins)
    if ref is not None:
        np.testing.assert_allclose(expected, ref(ins), rtol=1e-5)
    for point in _points(space, 4, seed=len(case)):
        cfg = Config(point)
        s, args = generic(cfg, text, shapes)
        if not cfg.valid:
            continue
        mod = ts.build(s, args, target="python")
        arrays = [
            ins[t.name]
            if isinstance(t.op, PlaceholderOp)
            else np.full(t.shape, np.nan, dtype="float32")
            for t in args
        ]
        mod(*arrays)
        np.testing.assert_allclose(arrays[-1], expected, rtol=1e-5, err_msg=str(point))


@pytest.mark.opencl
def test_generic_template_runs_on_the_device():
    from tensorsched.runtime.device import DeviceError, current_device

    try:
        current_device()
    except (DeviceError, ImportError) as exc:
        pytest.skip(f"no OpenCL device: {exc}")
    text, shapes, ref = GENERIC_CASES["gemm"]
    s, args = generic(Config({"vectorize": 1, "tile_x": (2, 4)}), text, shapes)
    ins = {
        "A": np.random.default_rng(0).uniform(-1, 1, (13, 7)).astype("float32"),
        "B": np.random.default_rng(1).uniform(-1, 1, (7, 11)).astype("float32"),
    }
    c = np.full((13, 11), np.nan, dtype="float32")
    ts.build(s, args, target="opencl")(ins["A"], ins["B"], c)
    np.testing.assert_allclose(c, ref(ins), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- long text


@pytest.mark.parametrize(
    "text",
    [
        "C[i] = " + " + ".join(["A[i]"] * 1000),  # issue 15 item 9: RecursionError
        "C[i] = " + " + ".join(["A[i]*2.0"] * 2000),
        "C[i] = " + "-" * 300 + "A[i]",
    ],
    ids=["1000-term sum", "2000-term expression", "300 negations"],
)
def test_too_deep_an_expression_is_a_parse_error(text):
    with pytest.raises(ts.ParseError, match="nests more than 128 operators deep") as info:
        ts.parse_expr(text, "i=4")
    assert (info.value.line, info.value.column) == (1, 8)


def test_an_expression_below_the_depth_limit_builds_and_runs():
    t = ts.parse_expr("C[i] = " + " + ".join(["A[i]"] * 100), "i=4")
    s = ts.create_schedule(t["C"].op)
    a, c = np.arange(4, dtype="float32"), np.zeros(4, "float32")
    ts.build(s, [t["A"], t["C"]], target="python")(a, c)
    np.testing.assert_allclose(c, 100 * a)
