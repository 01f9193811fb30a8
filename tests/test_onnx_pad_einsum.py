"""ONNX Pad (modes constant, reflect and edge; pads as inputs, opset 18's axes, opset 2's
attributes; negative pads cropping), ScatterND (folded on constants) and Einsum (transposes,
sums and batched matrix products on computed tensors; any equation folded on constants):
small models built with ``onnx.helper``, each against onnxruntime through the numpy
reference, the python target, the OpenCL device and ``to_onnx``; then the refusals, each
naming its node.

Tolerance: max |out - ref| / max |ref| under 1e-5 against onnxruntime (float32 both); inputs
and weights are random and never zero; sizes are odd."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from test_onnx_pool_reduce import nonzero, ort_run, rel_err  # noqa: E402
from test_onnx_shape_ops import (  # noqa: E402
    TOL,
    check_everywhere,
    floats,
    ints,
    model_of,
    n,
    one_node,
)

from tensorsched.errors import TensorschedError  # noqa: E402
from tensorsched.frontend import OnnxImportError, UnsupportedOperatorError, from_onnx  # noqa: E402
from tensorsched.graph import build, run_reference  # noqa: E402

X = (1, 3, 5, 7)
RNG = np.random.default_rng(7)


def pad_model(pads, mode="constant", value=None, axes=None, x_shape=X, opset=13):
    inputs, inits = ["x", "p"], [ints("p", pads)]
    if value is not None or axes is not None:
        inputs.append("v" if value is not None else "")
        if value is not None:
            inits.append(floats("v", value))
    if axes is not None:
        inputs.append("ax")
        inits.append(ints("ax", axes))
    # a Relu first, so the Pad's data is computed
    nodes = [n("Relu", ["x"], ["r"]), n("Pad", ["r", *inputs[1:]], ["y"], mode=mode)]
    return model_of(nodes, x_shape, inits=inits, opset=opset)


PADS = [
    ("constant", [0, 1, 2, 3, 0, 2, 1, 0], 0.75, None, 13),
    ("constant-default", [0, 0, 1, 1, 0, 0, 2, 3], None, None, 13),
    ("reflect", [0, 1, 2, 3, 0, 1, 4, 6], None, None, 13),
    ("edge", [0, 2, 3, 1, 1, 0, 4, 5], None, None, 13),
    ("crop", [0, -1, 2, -2, 0, 1, -1, 3], 1.5, None, 13),
    ("reflect-crop", [0, 0, -1, 2, 0, 0, 2, -3], None, None, 13),
    ("axes", [1, 2, 3, 1], -0.5, [2, -1], 18),
]


@pytest.mark.parametrize("case", PADS, ids=[c[0] for c in PADS])
def test_pad_of_a_computed_tensor(case):
    what, pads, value, axes, opset = case
    mode = what.split("-")[0] if what.split("-")[0] in ("reflect", "edge") else "constant"
    model = pad_model(pads, mode, value, axes, opset=opset)
    g = check_everywhere(model, nonzero(RNG, X))
    assert g.op_counts().get("pad") == 1


def test_pad_attribute_form_and_zero_pads():
    """Opset 2's pads and value attributes (as older converters leave them); all-zero pads
    are the identity."""
    nodes = [n("Relu", ["x"], ["r"]), n("Pad", ["r"], ["y"], pads=[0, 1, 0, 2, 0, 3, 1, 0],
                                       value=2.5)]  # fmt: skip
    model = model_of(nodes, X)
    x = nonzero(RNG, X)
    ref = np.pad(np.maximum(x, 0), [(0, 0), (1, 3), (0, 1), (2, 0)], constant_values=2.5)
    g = from_onnx(model)
    assert rel_err(build(g, target="python")(x), ref) < TOL
    g = from_onnx(pad_model([0] * 8))
    assert "pad" not in g.op_counts()


def test_pad_of_constants_is_folded():
    """A Pad of an initializer (a relative-position table, say) is computed at import."""
    w = nonzero(RNG, (3, 4))
    nodes = [n("Pad", ["w", "p"], ["wp"], mode="reflect"), n("Add", ["x", "wp"], ["y"])]
    model = model_of(nodes, (5, 7), inits=[floats("w", w), ints("p", [1, 2, 1, 1])])
    g = check_everywhere(model, nonzero(RNG, (5, 7)))
    assert g.op_counts() == {"add": 1}


def test_scatter_nd_of_constants_is_folded():
    """swin's attention masks: ScatterND of constants, with and without reduction."""
    data = nonzero(RNG, (5, 3))
    idx = np.array([[4], [0]], np.int64)
    upd = nonzero(RNG, (2, 3))
    nodes = [
        n("ScatterND", ["d", "i", "u"], ["s"]),
        n("ScatterND", ["s", "i2", "u2"], ["t"], reduction="add"),
        n("Add", ["x", "t"], ["y"]),
    ]
    inits = [floats("d", data), ints("i", idx), floats("u", upd),
             ints("i2", [[1, 2], [-1, 0]]), floats("u2", [0.5, -1.25])]  # fmt: skip
    g = check_everywhere(model_of(nodes, (5, 3), inits=inits, opset=16), nonzero(RNG, (5, 3)))
    assert g.op_counts() == {"add": 1}


EINSUMS = [
    ("bij,bjk->bik", (3, 5, 7), (3, 7, 5)),
    ("bhqd,bhkd->bhqk", (1, 3, 5, 7), (1, 3, 9, 7)),
    ("nctw,cd->ndtw", (1, 3, 5, 7), (3, 5)),  # the right one a constant: a dense layer
    ("ij,kj", (5, 7), (3, 7)),  # implicit output: ik
    ("...ij,...jk->...ik", (3, 5, 7), (3, 7, 1)),
    ("bij,bkj->bki", (3, 5, 7), (3, 1, 7)),
    ("abc,cd->bd", (3, 5, 7), (7, 3)),  # a summed own letter
]


@pytest.mark.parametrize("case", EINSUMS, ids=[c[0] for c in EINSUMS])
def test_einsum_of_two_tensors(case):
    eq, sa, sb = case
    const_b = eq.startswith("nctw") or eq.startswith("abc")
    nodes = [n("Relu", ["x"], ["r"])]
    inits = [floats("b", nonzero(RNG, sb))] if const_b else []
    if not const_b:
        nodes.append(n("Tanh", ["x2"], ["b"]))
    nodes.append(n("Einsum", ["r", "b"], ["y"], equation=eq))
    graph = helper.make_graph(
        nodes, "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(sa))]
        + ([] if const_b else
           [helper.make_tensor_value_info("x2", TensorProto.FLOAT, list(sb))]),
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    feeds = {"x": nonzero(RNG, sa)}
    if not const_b:
        feeds["x2"] = nonzero(RNG, sb)
    ref = ort_run(model, feeds)[0]
    g = from_onnx(model)

    assert rel_err(run_reference(g, feeds)[g.outputs[0]], ref) < TOL
    outs = build(g, target="python")(feeds)
    assert outs.shape == ref.shape and rel_err(outs, ref) < TOL
    assert ("dense" if const_b else "batch_matmul") in g.op_counts()


@pytest.mark.parametrize("eq", ["abcd->adbc", "abcd->ad", "abcd->dca", "abcd"])
def test_einsum_of_one_tensor(eq):
    model = model_of([n("Einsum", ["x"], ["y"], equation=eq)], X)
    check_everywhere(model, nonzero(RNG, X))


def test_einsum_of_constants_is_folded():
    """Any equation (a trace, three operands) is computed at import by numpy."""
    a, b, c = nonzero(RNG, (3, 3)), nonzero(RNG, (3, 5)), nonzero(RNG, (5, 7))
    nodes = [
        n("Einsum", ["a", "b", "c"], ["abc"], equation="ii,ij,jk->ik"),
        n("Add", ["x", "abc"], ["y"]),
    ]
    inits = [floats("a", a), floats("b", b), floats("c", c)]
    g = check_everywhere(model_of(nodes, (3, 7), inits=inits), nonzero(RNG, (3, 7)))
    assert g.op_counts() == {"add": 1}


def test_pad_and_einsum_on_the_device(device):
    """Each pad mode and an attention-style Einsum, built for the OpenCL device."""
    nodes = [
        n("Relu", ["x"], ["r"]),
        n("Pad", ["r", "p1"], ["a"], mode="reflect"),
        n("Pad", ["a", "p2", "v"], ["b"], mode="constant"),
        n("Pad", ["b", "p3"], ["c"], mode="edge"),
        n("Einsum", ["c", "c"], ["y"], equation="nchw,ncgw->nchg"),
    ]
    inits = [ints("p1", [0, 0, 2, 1, 0, 0, 1, 3]), ints("p2", [0, 1, -1, 0, 0, 1, 0, -2]),
             floats("v", 0.5), ints("p3", [0, 0, 1, 1, 0, 0, 2, 0])]  # fmt: skip
    model = model_of(nodes, X, inits=inits)
    x = nonzero(RNG, X)
    out = build(from_onnx(model), device=device)(x)
    assert rel_err(out, ort_run(model, {"x": x})[0]) < TOL


# ---- refusals: each a TensorschedError naming the node


def pad_one(pads, mode="constant", **kw):
    return one_node("Pad", ["x", "p"], [ints("p", pads)], mode=mode, **kw)


def einsum_two(eq, sb=(1, 4, 5, 6)):
    nodes = [n("Exp", ["x"], ["e"]), n("Einsum", ["x", "e"], ["y"], "bad", equation=eq)]
    return model_of(nodes, sb)


ERRORS = [
    ("pad-wrap", lambda: pad_one([0] * 8, "wrap"), UnsupportedOperatorError, "wrap"),
    ("pad-count", lambda: pad_one([1, 1]), OnnxImportError, "give 8"),
    ("pad-crop-all", lambda: pad_one([0, -2, 0, 0, 0, -2, 0, 0]), OnnxImportError, "crop all"),
    ("pad-reflect-wide", lambda: pad_one([0, 0, 5, 0, 0, 0, 0, 0], "reflect"), OnnxImportError,
     "smaller than"),
    ("pad-huge", lambda: pad_one([0, 0, 2**62, 0, 0, 0, 0, 0]), OnnxImportError, "too large"),
    ("pad-axes-repeat", lambda: one_node("Pad", ["x", "p", "", "a"], [ints("p", [1, 1, 1, 1]),
     ints("a", [1, -3])], opset=18), OnnxImportError, "twice"),
    ("pad-computed-pads", lambda: one_node("Pad", ["x", "x"], []), UnsupportedOperatorError,
     "constant integer"),
    ("pad-value-shape", lambda: one_node("Pad", ["x", "p", "v"], [ints("p", [0] * 8),
     floats("v", [1.0, 2.0])]), OnnxImportError, "one number"),
    ("pad-no-pads", lambda: one_node("Pad", ["x"], []), OnnxImportError, "no pads"),
    ("scatter-computed", lambda: one_node("ScatterND", ["x", "i", "x"], [ints("i", [[0]])]),
     UnsupportedOperatorError, "all its inputs are constants"),
    ("scatter-range", lambda: model_of([n("ScatterND", ["d", "i", "u"], ["s"], "bad"),
     n("Add", ["x", "s"], ["y"])], (2,), inits=[floats("d", [1.0, 2.0]), ints("i", [[2]]),
     floats("u", [3.0])]), OnnxImportError, "out of range"),
    ("scatter-updates", lambda: model_of([n("ScatterND", ["d", "i", "u"], ["s"], "bad"),
     n("Add", ["x", "s"], ["y"])], (2,), inits=[floats("d", [1.0, 2.0]), ints("i", [[1]]),
     floats("u", [3.0, 4.0])]), OnnxImportError, "expected"),
    ("einsum-diagonal", lambda: one_node("Einsum", ["x"], [], x_shape=(5, 5), equation="ii->i"),
     UnsupportedOperatorError, "diagonal"),
    ("einsum-no-eq", lambda: one_node("Einsum", ["x"], []), OnnxImportError, "equation"),
    ("einsum-terms", lambda: einsum_two("bchw->bchw"), OnnxImportError, "1 terms for 2"),
    ("einsum-letters", lambda: einsum_two("bch,bchw->bc"), OnnxImportError, "3 letters"),
    ("einsum-chars", lambda: einsum_two("bc1w,bchw->bc"), OnnxImportError, "only letters"),
    ("einsum-out", lambda: einsum_two("bchw,bchw->bz"), OnnxImportError, "no input has"),
    ("einsum-sizes", lambda: einsum_two("bchw,bcwh->bc"), OnnxImportError, "in another"),
    ("einsum-scalar", lambda: einsum_two("bchw,bchw->"), UnsupportedOperatorError, "scalar"),
    ("einsum-outer", lambda: einsum_two("bchw,bchw->bchw"), UnsupportedOperatorError,
     "no letter is summed"),
    ("einsum-three", lambda: one_node("Einsum", ["x", "x", "x"], [], equation="i,i,i->i",
     x_shape=(3,)), UnsupportedOperatorError, "3 inputs"),
    ("einsum-ellipsis", lambda: einsum_two("..b.,bchw->b"), OnnxImportError, "'...'"),
]  # fmt: skip


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_refusals(case):
    _, make, error, text = case
    with pytest.raises(error, match=None) as info:
        from_onnx(make())
    assert isinstance(info.value, TensorschedError)
    assert "'bad'" in str(info.value) and text in str(info.value), str(info.value)
