"""Attention masks as exporters write them: constants holding -inf (a causal mask added to
the scores, ``masked_fill(mask, -inf)`` as a Where of a scalar -inf), then Softmax. An
infinity is a value of a constant; nan is refused. Each model against onnxruntime on random
data: the numpy reference, the python target and the OpenCL device."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from test_onnx_dtypes import check, model  # noqa: E402

from tensorsched.frontend import OnnxImportError, from_onnx  # noqa: E402

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
