"""Models whose inputs and outputs are not float32: int64 token ids into Gather (an embedding
lookup), a bool mask into Where, an int32 input cast to float, integer and boolean outputs,
float16 and float64 ones. The graph holds them as float32; ``Graph.feed`` / ``Graph.fetch``
convert on the host. Each model against onnxruntime on random data, outputs of the dtype
onnxruntime gives: the numpy reference, the python target and the OpenCL device."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from test_onnx_pool_reduce import ort_run  # noqa: E402

from tensorsched.errors import RuntimeCallError  # noqa: E402
from tensorsched.frontend import (  # noqa: E402
    OnnxImportError,
    UnsupportedOperatorError,
    from_onnx,
    to_onnx,
)
from tensorsched.graph import build, run_reference  # noqa: E402

RNG = np.random.default_rng(31)
n = helper.make_node
F, F16, F64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE
I32, I64, B = TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL


def model(nodes, inputs, outputs, inits=(), opset=13):
    """``inputs`` / ``outputs``: (name, element type, shape) each."""
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info(*i) for i in inputs],
        [helper.make_tensor_value_info(*o) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in inits],
    )  # fmt: skip
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def check(m, feeds, tol=1e-6, device=True):
    """Every output against onnxruntime's, its dtype too: numpy, python target, OpenCL."""
    refs = ort_run(m, feeds)
    g = from_onnx(m)
    got = run_reference(g, feeds)
    runs = {"numpy": [got[t] for t in g.outputs], "python": build(g, target="python")(feeds)}
    if device:
        try:
            runs["opencl"] = build(g)(feeds)
        except Exception as exc:  # noqa: BLE001  (no OpenCL device here)
            print(f"no OpenCL device: {exc}")
    for what, outs in runs.items():
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        for out, ref in zip(outs, refs):
            assert out.dtype == ref.dtype and out.shape == ref.shape, (what, out.dtype, ref.dtype)
            if ref.dtype.kind in "biu":
                np.testing.assert_array_equal(out, ref, err_msg=what)
            else:
                np.testing.assert_allclose(out, ref, rtol=tol, atol=tol, err_msg=what)
    return g


def test_int64_token_ids_into_gather_an_embedding_lookup():
    """(batch, tokens) int64 ids, negative ones too, into a (vocab, dim) table, then a dense
    layer: the lookup is exact."""
    table = RNG.standard_normal((37, 8)).astype(np.float32)
    w = RNG.standard_normal((8, 5)).astype(np.float32)
    m = model(
        [n("Gather", ["table", "ids"], ["e"]), n("MatMul", ["e", "w"], ["y"])],
        [("ids", I64, [2, 6])], [("y", F, [2, 6, 5])], [("table", table), ("w", w)],
    )  # fmt: skip
    ids = RNG.integers(-37, 37, (2, 6)).astype(np.int64)
    g = check(m, {"ids": ids}, tol=1e-5)
    assert g.input_types == ["int64"]
    exact = model([n("Gather", ["table", "ids"], ["y"])], [("ids", I64, [2, 6])],
                  [("y", F, [2, 6, 8])], [("table", table)])  # fmt: skip
    check(exact, {"ids": ids}, tol=0)


def test_gather_at_computed_indices_along_an_inner_axis_of_an_int_table():
    """Axis 1 of a (3, 10, 2) int32 table at (4,) int32 ids: an int32 output, exact."""
    table = RNG.integers(-1000, 1000, (3, 10, 2)).astype(np.int32)
    m = model([n("Gather", ["t", "ids"], ["y"], axis=1)], [("ids", I32, [4])],
              [("y", I32, [3, 4, 2])], [("t", table)])  # fmt: skip
    check(m, {"ids": RNG.integers(-10, 10, 4).astype(np.int32)})


def test_bool_mask_into_where():
    """A bool attention-style mask selects x or a large negative value."""
    m = model(
        [n("Where", ["mask", "x", "neg"], ["y"])],
        [("mask", B, [2, 1, 7]), ("x", F, [2, 3, 7])], [("y", F, [2, 3, 7])],
        [("neg", np.array(-1e4, np.float32))],
    )  # fmt: skip
    feeds = {"mask": RNG.random((2, 1, 7)) < 0.5,
             "x": RNG.standard_normal((2, 3, 7)).astype(np.float32)}  # fmt: skip
    check(m, feeds)


def test_int32_input_cast_into_add_and_mul_with_a_float_one():
    m = model(
        [n("Cast", ["i"], ["f"], to=F), n("Add", ["f", "x"], ["s"]), n("Mul", ["s", "f"], ["y"])],
        [("i", I32, [3, 4]), ("x", F, [3, 4])], [("y", F, [3, 4])],
    )  # fmt: skip
    feeds = {"i": RNG.integers(-2**12, 2**12, (3, 4)).astype(np.int32),
             "x": RNG.standard_normal((3, 4)).astype(np.float32)}  # fmt: skip
    check(m, feeds, tol=1e-5)


def test_integer_and_boolean_outputs_have_onnxruntime_dtypes():
    """An int64 input passed on (negated, compared, reshaped), a float cast to int32, and
    a bool mask: each output of its declared type, values exact."""
    m = model(
        [n("Neg", ["i"], ["ni"]), n("Less", ["x", "zero"], ["neg"]),
         n("Cast", ["x"], ["xi"], to=I32), n("Max", ["ni", "i"], ["mi"]),
         n("Greater", ["i", "ni"], ["pos"])],
        [("i", I64, [2, 5]), ("x", F, [2, 5])],
        [("mi", I64, [2, 5]), ("neg", B, [2, 5]), ("xi", I32, [2, 5]), ("pos", B, [2, 5])],
        [("zero", np.array(0.0, np.float32))],
    )  # fmt: skip
    feeds = {"i": RNG.integers(-2**24, 2**24, (2, 5)).astype(np.int64),
             "x": (RNG.standard_normal((2, 5)) * 100).astype(np.float32)}  # fmt: skip
    g = check(m, feeds)
    assert g.output_types == ["int64", "bool", "int32", "bool"]


def test_float16_and_float64_inputs_and_outputs():
    """Computed in float32: float16 rounded once at the output (within a half ulp of
    onnxruntime's float16 arithmetic), float64 to float32's precision."""
    m16 = model([n("Sigmoid", ["x"], ["s"]), n("Mul", ["s", "x"], ["y"])],
                [("x", F16, [4, 6])], [("y", F16, [4, 6])])  # fmt: skip
    check(m16, {"x": RNG.standard_normal((4, 6)).astype(np.float16)}, tol=2e-3)
    m64 = model([n("Tanh", ["x"], ["y"])], [("x", F64, [4, 6])], [("y", F64, [4, 6])])
    check(m64, {"x": RNG.standard_normal((4, 6))}, tol=1e-6)


def test_integers_beyond_2_24_are_refused_at_run_time():
    m = model([n("Cast", ["i"], ["y"], to=F)], [("i", I64, [3])], [("y", F, [3])])
    g = from_onnx(m)
    ok = np.array([2**24, -(2**24), 5], np.int64)
    got = run_reference(g, {"i": ok})[g.outputs[0]]
    assert got.dtype == np.float32 and np.array_equal(got, ok)
    big = np.array([1, 2**24 + 1, 3], np.int64)
    message = r"input 'i' is int64 and holds 16777217 in magnitude.*exact up to 16777216"
    with pytest.raises(RuntimeCallError, match=message):
        run_reference(g, {"i": big})
    with pytest.raises(RuntimeCallError, match=message):
        build(g, target="python")({"i": big})
    with pytest.raises(RuntimeCallError, match=r"input 'i' is int64; got an array of float64"):
        run_reference(g, {"i": np.ones(3)})


def test_integer_semantics_stay_refused():
    """Integer arithmetic float32 cannot give (division, overflow; shifts of unsigned types) is
    refused, naming the node or input."""
    for op in ("Div", "Add", "Mul"):
        m = model([n(op, ["i", "i"], ["y"], "bad")], [("i", I64, [3])], [("y", I64, [3])])
        with pytest.raises(
            UnsupportedOperatorError,
            match=rf"node 'bad' \({op}\): reads 'i', "
            r"an integer tensor \(a model input\); tensorsched holds it as float32",
        ):
            from_onnx(m)
    shift = model(
        [n("BitShift", ["i", "i"], ["y"], direction="LEFT")],
        [("i", TensorProto.UINT32, [3])],
        [("y", TensorProto.UINT32, [3])],
    )
    with pytest.raises(
        OnnxImportError,
        match=r"input 'i': element type 12 \(UINT32\); "
        "tensorsched's inputs are float32, float16, float64, int32, int64 and bool",
    ):
        from_onnx(shift)
    mis = model([n("Cast", ["x"], ["y"], to=F)], [("x", F, [3])], [("y", F, [3])])
    mis.graph.output[0].type.tensor_type.elem_type = I64
    with pytest.raises(
        OnnxImportError,
        match=r"output 'y' is declared 7 \(INT64\), but the "
        "model computes a float tensor there",
    ):
        from_onnx(mis)


def test_gather_of_a_computed_tensor_at_computed_indices():
    """Both operands computed (a model input each): ``take`` reads one element per output;
    an inf in the data stays where it is, negative indices count from the end."""
    m = model([n("Relu", ["x"], ["r"]), n("Gather", ["r", "i"], ["y"], axis=1)],
              [("x", F, [3, 6]), ("i", I64, [2, 2])], [("y", F, [3, 2, 2])])  # fmt: skip
    x = RNG.standard_normal((3, 6)).astype(np.float32)
    x[1, 2] = np.inf
    feeds = {"x": x, "i": np.array([[2, -1], [0, 5]], np.int64)}
    g = check(m, feeds, tol=0)
    back = to_onnx(g)  # take written back as a Cast of the indices and a Gather; the int64
    assert [nd.op_type for nd in back.graph.node][-2:] == ["Cast", "Gather"]  # input cast too
    assert back.graph.input[1].type.tensor_type.elem_type == I64
    np.testing.assert_array_equal(ort_run(back, feeds)[0], ort_run(m, feeds)[0])


def test_to_onnx_declares_the_host_types_and_casts_at_the_boundary():
    """int64 ids in, a bool and an int64 output: written back with those types (Casts to and
    from float32 around the graph), the same outputs as the original model's."""
    table = RNG.standard_normal((11, 4)).astype(np.float32)
    m = model(
        [n("Gather", ["table", "ids"], ["e"]), n("Greater", ["e", "zero"], ["pos"]),
         n("Cast", ["pos"], ["count"], to=I64)],
        [("ids", I64, [2, 3])], [("pos", B, [2, 3, 4]), ("count", I64, [2, 3, 4])],
        [("table", table), ("zero", np.array(0.0, np.float32))],
    )  # fmt: skip
    feeds = {"ids": RNG.integers(-11, 11, (2, 3)).astype(np.int64)}
    g = check(m, feeds, tol=0)
    back = to_onnx(g)
    assert [v.type.tensor_type.elem_type for v in back.graph.input] == [I64]
    assert [v.type.tensor_type.elem_type for v in back.graph.output] == [B, I64]
    for got, want in zip(ort_run(back, feeds), ort_run(m, feeds)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
