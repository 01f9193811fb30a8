"""Attention masks as exporters write them: constants holding -inf (a causal mask added to
the scores, ``masked_fill(mask, -inf)`` as a Where of a scalar -inf), then Softmax. An
infinity is a value of a constant; nan is refused. And a transformer's LayerNormalization, the
graph's ``layer_norm``. Each model against onnxruntime on random
data: the numpy reference, the python target and the OpenCL device."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from test_onnx_dtypes import check, model  # noqa: E402
from test_onnx_pool_reduce import ort_run  # noqa: E402

from tensorsched.frontend import OnnxImportError, from_onnx, to_onnx  # noqa: E402
from tensorsched.graph.passes import optimize  # noqa: E402

RNG = np.random.default_rng(47)
n = helper.make_node
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
T, D = 7, 5  # tokens, width


def attention(mask_nodes, inputs, inits):
    """softmax(Q Kᵀ + mask) V of the input (T, D) with itself, the mask made by
    ``mask_nodes`` from ``scores`` into ``masked``."""
    nodes = [
        n("Transpose", ["x"], ["xt"], perm=[1, 0]),
        n("MatMul", ["x", "xt"], ["scores"]),
        *mask_nodes,
        n("Softmax", ["masked"], ["p"], axis=-1),
        n("MatMul", ["p", "x"], ["y"]),
    ]
    return model(nodes, [("x", F, [T, D]), *inputs], [("y", F, [T, D])], inits)


def test_causal_mask_constant_of_minus_inf_added_to_the_scores():
    causal = np.triu(np.full((T, T), -np.inf, np.float32), 1)
    m = attention([n("Add", ["scores", "causal"], ["masked"])], [], [("causal", causal)])
    check(m, {"x": RNG.standard_normal((T, D)).astype(np.float32)}, tol=1e-5)


def test_padding_mask_input_into_where_of_a_scalar_minus_inf():
    """``masked_fill(ids_mask == 0, -inf)``: an int64 mask input, Equal to 0, a Where whose
    other branch is the scores; a row keeps at least one token."""
    nodes = [
        n("Equal", ["mask", "zero"], ["pad"]),
        n("Where", ["pad", "minus_inf", "scores"], ["masked"]),
    ]
    inits = [("zero", np.array(0, np.int64)), ("minus_inf", np.array(-np.inf, np.float32))]
    m = attention(nodes, [("mask", I64, [1, T])], inits)
    mask = np.ones((1, T), np.int64)
    mask[0, -3:] = 0
    check(m, {"x": RNG.standard_normal((T, D)).astype(np.float32), "mask": mask}, tol=1e-5)


def test_a_nan_constant_is_refused_an_infinite_embedding_row_read():
    nan = model([n("Add", ["x", "c"], ["y"])], [("x", F, [2])], [("y", F, [2])],
                [("c", np.array([1.0, np.nan], np.float32))])  # fmt: skip
    with pytest.raises(OnnxImportError, match=r"initializer 'c' holds nan; tensorsched's"):
        from_onnx(nan)
    table = np.array([[0.0, 1.0], [np.inf, 2.0]], np.float32)
    lookup = model([n("Gather", ["table", "ids"], ["y"], "lookup")], [("ids", I64, [3])],
                   [("y", F, [3, 2])], [("table", table)])  # fmt: skip
    check(lookup, {"ids": np.array([1, 0, -1], np.int64)}, tol=0)  # an infinity is a value


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_normalization_is_one_node_of_three_kernels(axis):
    """Opset 17's LayerNormalization without its Mean / InvStdDev outputs: the graph's
    layer_norm (a bias or none); written back as LayerNormalization from opset 17, as its
    steps before; with Mean read, the steps' nodes."""
    shape, inner = (2, 3, 8), (3, 8)[axis:] if axis == -1 else (3, 8)
    scale = RNG.standard_normal(inner).astype(np.float32)
    bias = RNG.standard_normal(inner[-1:]).astype(np.float32)
    m = model([n("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=axis, epsilon=1e-3)],
              [("x", F, list(shape))], [("y", F, list(shape))],
              [("scale", scale), ("bias", bias)], opset=17)  # fmt: skip
    x = RNG.standard_normal(shape).astype(np.float32)
    g = check(m, {"x": x}, tol=2e-5)
    assert [nd.op for nd in g.nodes.values()] == ["layer_norm"]
    ref = ort_run(m, {"x": x})[0]
    for opset in (13, 17):
        np.testing.assert_allclose(ort_run(to_onnx(g, opset=opset), {"x": x})[0], ref,
                                   rtol=2e-5, atol=2e-5)  # fmt: skip
    no_bias = model([n("LayerNormalization", ["x", "scale"], ["y"], axis=axis)],
                    [("x", F, list(shape))], [("y", F, list(shape))], [("scale", scale)],
                    opset=17)  # fmt: skip
    check(no_bias, {"x": x}, tol=2e-5)
    with_mean = model([n("LayerNormalization", ["x", "scale"], ["y", "mean"], axis=axis)],
                      [("x", F, list(shape))],
                      [("y", F, list(shape)), ("mean", F, [*shape[:axis % 3], 1, 1][:3])],
                      [("scale", scale)],
                      opset=17)  # fmt: skip
    assert "layer_norm" not in {nd.op for nd in from_onnx(with_mean).nodes.values()}


@pytest.mark.parametrize("square", ["Pow", "Mul"])
def test_a_layer_norm_written_as_its_steps_becomes_one_node(square):
    """Older exporters' layer norm (ReduceMean, Sub, Pow or Mul, ReduceMean, Add, Sqrt, Div,
    Mul, Add) is one layer_norm after ``graph.passes.fuse_layer_norm``; where the mean is
    also read elsewhere (here an output), its steps stay."""
    shape, D = (2, 5, 8), 8
    gamma = RNG.standard_normal(D).astype(np.float32)
    beta = RNG.standard_normal(D).astype(np.float32)

    def steps(mean_out):
        sq = n("Pow", ["d", "two"], ["d2"]) if square == "Pow" else n("Mul", ["d", "d"], ["d2"])
        nodes = [
            n("ReduceMean", ["x"], ["mu"], axes=[-1]), n("Sub", ["x", "mu"], ["d"]), sq,
            n("ReduceMean", ["d2"], ["var"], axes=[-1]), n("Add", ["var", "eps"], ["ve"]),
            n("Sqrt", ["ve"], ["std"]), n("Div", ["d", "std"], ["z"]),
            n("Mul", ["z", "gamma"], ["zg"]), n("Add", ["zg", "beta"], ["y"]),
        ]  # fmt: skip
        outs = [("y", F, list(shape))] + ([("mu", F, [2, 5, 1])] if mean_out else [])
        inits = [("two", np.array(2.0, np.float32)), ("eps", np.array(1e-5, np.float32)),
                 ("gamma", gamma), ("beta", beta)]  # fmt: skip
        return model(nodes, [("x", F, list(shape))], outs, inits)

    x = RNG.standard_normal(shape).astype(np.float32)
    g = check(steps(False), {"x": x}, tol=2e-5)
    ops = optimize(g).op_counts()
    assert ops.get("layer_norm") == 1 and "reduce" not in ops and "sqrt" not in ops
    kept = check(steps(True), {"x": x}, tol=2e-5)
    assert "layer_norm" not in optimize(kept).op_counts()


def test_a_float64_constant_beyond_float32s_range_is_an_infinity():
    """A float64 model's mask filled with float64's lowest value: float32 holds it as -inf,
    which masks the softmax as well (onnxruntime's exp of -1.8e308 is 0 too), and the import
    says nothing (numpy's overflow warning stays in)."""
    import warnings

    fill = np.array([0.0, 0.0, np.finfo(np.float64).min], np.float64)
    f64 = TensorProto.DOUBLE
    m = model([n("Add", ["x", "c"], ["s"]), n("Softmax", ["s"], ["y"], axis=-1)],
              [("x", f64, [2, 3])], [("y", f64, [2, 3])], [("c", fill)])  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from_onnx(m)
    check(m, {"x": RNG.standard_normal((2, 3))}, tol=1e-6)
