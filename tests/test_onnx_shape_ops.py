"""ONNX shape arithmetic folded at import, the tensor operators on computed tensors (Transpose,
Slice, Split, Squeeze / Unsqueeze, Gather) and the math of transformer blocks (Erf, Sqrt, Pow,
ReduceMean / ReduceSum / ReduceMax over any axes, LayerNormalization): small models built with
``onnx.helper`` as torch exports them, each against onnxruntime through the numpy reference,
built on the python target and on the OpenCL device, and written back with ``to_onnx``; then
the errors of hostile or unsupported attributes, each naming its node.

Tolerance: max |out - ref| / max |ref| under 1e-5 against onnxruntime (float32 both); inputs
and weights are random and never zero."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from test_onnx_pool_reduce import nonzero, ort_run, rel_err  # noqa: E402

from tensorsched.frontend import (  # noqa: E402
    OnnxImportError,
    UnsupportedOperatorError,
    from_onnx,
    to_onnx,
)
from tensorsched.graph import Graph, build, run_reference  # noqa: E402
from tensorsched.graph.graph import GraphError  # noqa: E402

TOL = 1e-5
I64_MAX, I64_MIN = 2**63 - 1, -(2**63)
n = helper.make_node


def ints(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def floats(name, arr):
    return numpy_helper.from_array(np.asarray(arr, np.float32), name)


def model_of(nodes, x_shape, outputs=("y",), inits=(), opset=13):
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], list(inits),
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def check_everywhere(model, x, targets=("numpy", "python", "export")):
    """The model's outputs against onnxruntime: the numpy reference, the python target, the
    export read by onnxruntime; returns the graph."""
    refs = ort_run(model, {"x": x})
    g = from_onnx(model)
    assert len(g.outputs) == len(refs)

    def each(outs, what):
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        for name, out, ref in zip(g.outputs, outs, refs):
            assert out.shape == ref.shape, (what, name)
            assert rel_err(out, ref) < TOL, (what, name, rel_err(out, ref))

    if "numpy" in targets:
        got = run_reference(g, x)
        each([got[t] for t in g.outputs], "numpy")
    if "python" in targets:
        each(build(g, target="python")(x), "python")
    if "export" in targets:
        each(ort_run(to_onnx(g, opset=max(13, _opset(model))), {"x": x}), "to_onnx")
    return g


def _opset(model):
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


# ---- shape arithmetic folded at import


def test_shape_arithmetic_is_folded():
    """``x.view(x.size(0), -1, 2)`` and ``x.view(n, c // 2, 2 * h, w)`` as torch writes them:
    Shape, Gather, Div, Mul, Unsqueeze, Concat, Cast, Slice of the shape: no node is left but
    the reshapes."""
    nodes = [
        n("Shape", ["x"], ["s"]),
        n("Gather", ["s", "i0"], ["n0"], axis=0),
        n("Gather", ["s", "i1"], ["c"]),
        n("Div", ["c", "two"], ["c2"]),
        n("Slice", ["s", "i2", "end"], ["hw"]),  # shape[2:]
        n("Gather", ["hw", "i0"], ["h"]),
        n("Mul", ["h", "two"], ["h2"]),
        n("Cast", ["h2"], ["h2f"], to=TensorProto.FLOAT),
        n("Cast", ["h2f"], ["h2i"], to=TensorProto.INT64),
        n("Unsqueeze", ["n0", "ax0"], ["n1"]),
        n("Unsqueeze", ["c2", "ax0"], ["c1"]),
        n("Unsqueeze", ["h2i", "ax0"], ["h1"]),
        n("Gather", ["s", "i3"], ["w"]),
        n("Unsqueeze", ["w", "ax0"], ["w1"]),
        n("Concat", ["n1", "c1", "h1", "w1"], ["shape4"], axis=0),
        n("Reshape", ["x", "shape4"], ["y"]),
    ]
    inits = [ints("i0", 0), ints("i1", 1), ints("i3", 3), ints("two", 2), ints("i2", [2]),
             ints("end", [I64_MAX]), ints("ax0", [0])]  # fmt: skip
    model = model_of(nodes, (2, 6, 3, 5), inits=inits)
    x = nonzero(np.random.default_rng(0), (2, 6, 3, 5))
    g = check_everywhere(model, x, ("numpy", "export"))
    assert g.op_counts() == {"reshape": 1}
    assert g.tensors["y"].shape == (2, 3, 6, 5)


def test_constant_folding_of_weights_and_torch_floor_divide():
    """A MatMul whose weight is Transpose(initializer) and a shape from torch's integer floor
    division (Div, Mul, Sub, Less, Xor, Not, Equal, And, Cast, Where), ConstantOfShape, Range,
    Expand: computed at import."""
    rng = np.random.default_rng(1)
    nodes = [
        n("Transpose", ["W"], ["Wt"]),
        n("Shape", ["x"], ["s"]),
        n("Gather", ["s", "i1"], ["c"]),
        n("Div", ["c", "three"], ["q"]),
        n("Mul", ["q", "three"], ["qm"]),
        n("Sub", ["c", "qm"], ["rem"]),
        n("Less", ["c", "zero"], ["neg_c"]),
        n("Less", ["three", "zero"], ["neg_d"]),
        n("Xor", ["neg_c", "neg_d"], ["signs"]),
        n("Equal", ["rem", "zero"], ["exact"]),
        n("Not", ["exact"], ["inexact"]),
        n("And", ["signs", "inexact"], ["fix"]),
        n("Cast", ["fix"], ["fix_i"], to=TensorProto.INT64),
        n("Sub", ["q", "fix_i"], ["fq"]),  # 8 // 3 = 2
        n("Range", ["zero", "fq", "one"], ["r"]),  # [0, 1]
        n("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
        n("Unsqueeze", ["fq", "ax0"], ["fq1"]),
        n("ConstantOfShape", ["fq1"], ["ones"], value=floats("v", [1.5])),
        n("Add", ["ones", "rf"], ["bias2"]),  # [1.5, 2.5]
        n("Concat", ["bias2", "bias2", "bias2"], ["bias6"], axis=0),
        n("Expand", ["bias6", "shape2"], ["bias"]),  # (1, 6)
        n("MatMul", ["x", "Wt"], ["mm"]),
        n("Add", ["mm", "bias"], ["y"]),
    ]
    inits = [
        floats("W", rng.uniform(-1, 1, (6, 8))), ints("i1", 1), ints("three", 3),
        ints("zero", 0), ints("one", 1), ints("ax0", [0]), ints("shape2", [1, 6]),
    ]  # fmt: skip
    model = model_of(nodes, (4, 8), inits=inits)
    g = check_everywhere(model, nonzero(rng, (4, 8)))
    assert g.op_counts() == {"dense": 1, "add": 1}


# ---- ShuffleNet-v2's block, as torch exports it


def shuffle_block(rng, split, opset=13, C=8, H=7, W=5):
    """A stride-1 ShuffleNet-v2 unit: the channels split in two (Split with sizes, Split with
    num_outputs, or two Slices), the branch 1x1 conv / BN / ReLU, depthwise 3x3 / BN, 1x1 /
    BN / ReLU, a Concat, and the channel shuffle ``x.view(n, 2, c // 2, h, w).transpose(1, 2)
    .reshape(n, -1, h, w)`` with its shape computed from Shape / Gather / Div / Unsqueeze /
    Concat."""
    half = C // 2
    inits = [
        floats("w1", rng.uniform(-0.6, 0.6, (half, half, 1, 1))),
        floats("wd", rng.uniform(-0.6, 0.6, (half, 1, 3, 3))),
        floats("w3", rng.uniform(-0.6, 0.6, (half, half, 1, 1))),
        ints("i0", 0), ints("i1", 1), ints("i2", 2), ints("i3", 3), ints("two", 2),
        ints("ax0", [0]), ints("minus1", [-1]), ints("halves", [half, half]),
        ints("s0", [0]), ints("s1", [half]), ints("e1", [I64_MAX]), ints("axc", [1]),
    ]  # fmt: skip
    for k in "abc":
        inits += [
            floats(f"g{k}", rng.uniform(0.5, 1.5, half)), floats(f"b{k}", rng.uniform(-1, 1, half)),
            floats(f"m{k}", rng.uniform(-0.3, 0.3, half)), floats(f"v{k}", rng.uniform(0.5, 1.5, half)),
        ]  # fmt: skip
    if split == "split13":
        first = [n("Split", ["x", "halves"], ["x1", "x2"], "split", axis=1)]
    elif split == "split18":
        first = [n("Split", ["x"], ["x1", "x2"], "split", axis=1, num_outputs=2)]
    else:
        first = [
            n("Slice", ["x", "s0", "s1", "axc"], ["x1"], "left"),
            n("Slice", ["x", "s1", "e1", "axc"], ["x2"], "right"),
        ]

    def bn(src, dst, k):
        return n("BatchNormalization", [src, f"g{k}", f"b{k}", f"m{k}", f"v{k}"], [dst])

    nodes = first + [
        n("Conv", ["x2", "w1"], ["c1"]), bn("c1", "n1", "a"), n("Relu", ["n1"], ["r1"]),
        n("Conv", ["r1", "wd"], ["c2"], group=half, pads=[1, 1, 1, 1]), bn("c2", "n2", "b"),
        n("Conv", ["n2", "w3"], ["c3"]), bn("c3", "n3", "c"), n("Relu", ["n3"], ["r3"]),
        n("Concat", ["x1", "r3"], ["cat"], axis=1),
        n("Shape", ["cat"], ["s"]),
        *[n("Gather", ["s", f"i{k}"], [f"d{k}"], axis=0) for k in range(4)],
        n("Div", ["d1", "two"], ["cpg"]),
        *[n("Unsqueeze", [t, "ax0"], [t + "_u"]) for t in ("d0", "two", "cpg", "d2", "d3")],
        n("Concat", ["d0_u", "two_u", "cpg_u", "d2_u", "d3_u"], ["shape5"], axis=0),
        n("Reshape", ["cat", "shape5"], ["grouped"]),
        n("Transpose", ["grouped"], ["swapped"], "shuffle", perm=[0, 2, 1, 3, 4]),
        n("Concat", ["d0_u", "minus1", "d2_u", "d3_u"], ["shape4"], axis=0),
        n("Reshape", ["swapped", "shape4"], ["y"]),
    ]  # fmt: skip
    return model_of(nodes, (1, C, H, W), inits=inits, opset=opset)


SHUFFLE = [("split13", 13), ("split18", 18), ("slice", 13)]


@pytest.mark.parametrize("split, opset", SHUFFLE, ids=[s for s, _ in SHUFFLE])
def test_shufflenet_block_matches_onnxruntime(split, opset):
    rng = np.random.default_rng(3)
    model = shuffle_block(rng, split, opset)
    g = check_everywhere(model, nonzero(rng, (1, 8, 7, 5)))
    ops = g.op_counts()
    assert ops["slice"] == 2 and ops["transpose"] == 1 and ops["reshape"] == 2
    assert not {"shape", "gather"} & set(ops)


@pytest.mark.opencl
def test_shufflenet_block_on_the_device(device):
    rng = np.random.default_rng(3)
    model = shuffle_block(rng, "split13")
    x = nonzero(rng, (1, 8, 7, 5))
    net = build(from_onnx(model), device=device)
    assert rel_err(net(x), ort_run(model, {"x": x})[0]) < TOL
    # the branch's BN folded into its convs and its ReLUs fused, as in every network
    convs = [ly.node for ly in net.layers if ly.node.op == "conv2d"]
    assert all(not any(t.startswith("bn") for t in c.inputs) for c in convs)
    assert sum(("relu",) in c.epilogue for c in convs) == 2


# ---- a transformer-ish block


def transformer_block(rng, opset=17, T=5, D=12, E=16):
    """Projection (MatMul by a constant + Add), LayerNormalization, Erf-GELU, a projection
    back with a residual Add, a layer norm as older exporters write it (ReduceMean, Sub, Pow,
    ReduceMean, Add, Sqrt, Div, Mul, Add), heads split with a shape from ``Shape(start,
    end)``, Transpose, Softmax over the last axis."""
    inits = [
        floats("W1", rng.uniform(-0.5, 0.5, (D, E))), floats("b1", rng.uniform(-0.5, 0.5, E)),
        floats("gamma", rng.uniform(0.5, 1.5, E)), floats("beta", rng.uniform(-0.5, 0.5, E)),
        floats("W2", rng.uniform(-0.5, 0.5, (E, D))), floats("b2", rng.uniform(-0.5, 0.5, D)),
        floats("g2", rng.uniform(0.5, 1.5, D)), floats("be2", rng.uniform(-0.5, 0.5, D)),
        floats("sqrt2", np.sqrt(2.0)), floats("one", 1.0), floats("half", 0.5),
        floats("two", 2.0), floats("eps", 1e-5), ints("heads", [3, D // 3]), ints("axes", [-1]),
    ]  # fmt: skip
    mean_axes = {"axes": [-1]} if opset < 18 else {}
    mean_in = [] if opset < 18 else ["axes"]
    nodes = [
        n("MatMul", ["x", "W1"], ["p"]), n("Add", ["p", "b1"], ["h"]),
        n("LayerNormalization", ["h", "gamma", "beta"], ["ln"], "ln", axis=-1, epsilon=1e-5),
        n("Div", ["ln", "sqrt2"], ["u"]), n("Erf", ["u"], ["erf"]), n("Add", ["erf", "one"], ["e1"]),
        n("Mul", ["ln", "e1"], ["ge"]), n("Mul", ["ge", "half"], ["gelu"]),
        n("MatMul", ["gelu", "W2"], ["p2"]), n("Add", ["p2", "b2"], ["q"]),
        n("Add", ["q", "x"], ["res"]),
        n("ReduceMean", ["res", *mean_in], ["mu"], **mean_axes),
        n("Sub", ["res", "mu"], ["d"]), n("Pow", ["d", "two"], ["d2"]),
        n("ReduceMean", ["d2", *mean_in], ["var"], **mean_axes),
        n("Add", ["var", "eps"], ["ve"]), n("Sqrt", ["ve"], ["sd"]), n("Div", ["d", "sd"], ["nd"]),
        n("Mul", ["nd", "g2"], ["sc"]), n("Add", ["sc", "be2"], ["o"]),
        n("Shape", ["o"], ["bt"], start=0, end=2),
        n("Concat", ["bt", "heads"], ["hshape"], axis=0),
        n("Reshape", ["o", "hshape"], ["oh"]),
        n("Transpose", ["oh"], ["ht"], perm=[0, 2, 1, 3]),
        n("Softmax", ["ht"], ["y"], axis=-1),
    ]  # fmt: skip
    return model_of(nodes, (1, T, D), inits=inits, opset=opset)


@pytest.mark.parametrize("opset", [17, 18])
def test_transformer_block_matches_onnxruntime(opset):
    rng = np.random.default_rng(4)
    model = transformer_block(rng, opset)
    g = check_everywhere(model, nonzero(rng, (1, 5, 12)))
    ops = g.op_counts()
    # the LayerNormalization one layer_norm node, the older exporters' layer norm its steps
    assert ops["dense"] == 2 and ops["layer_norm"] == 1 and ops["erf"] == 1
    assert ops["reduce"] == 2 and ops["power"] == 1


@pytest.mark.opencl
def test_transformer_block_on_the_device(device):
    rng = np.random.default_rng(4)
    model = transformer_block(rng)
    x = nonzero(rng, (1, 5, 12))
    assert rel_err(build(from_onnx(model), device=device)(x), ort_run(model, {"x": x})[0]) < TOL


# ---- each operator alone, odd sizes, negative axes


def math_model(rng):
    """Every elementwise function and reduction: outputs y0 ... y15."""
    nodes = [
        n("Abs", ["x"], ["a"]), n("Neg", ["x"], ["y0"]), n("Sqrt", ["a"], ["y1"]),
        n("Exp", ["x"], ["y2"]), n("Log", ["a"], ["y3"]), n("Reciprocal", ["x"], ["y4"]),
        n("Floor", ["x"], ["y5"]), n("Ceil", ["x"], ["y6"]), n("Erf", ["x"], ["y7"]),
        n("Pow", ["a", "p07"], ["y8"]), n("Pow", ["x", "p3"], ["y9"]),  # 3 as an int64
        n("Pow", ["a", "pvec"], ["y10"]), n("Pow", ["x", "pm1"], ["y11"]),
        n("ReduceSum", ["x", "sum_axes"], ["y12"], keepdims=0),  # axes input (opset 13)
        n("ReduceMax", ["x"], ["y13"], axes=[0, -2], keepdims=1),
        n("ReduceMean", ["x"], ["y14"], axes=[-3], keepdims=0),
        n("ReduceMean", ["x"], ["y15"]),  # every axis
    ]  # fmt: skip
    inits = [floats("p07", 0.7), ints("p3", 3), floats("pvec", rng.uniform(0.5, 2.5, 7)),
             floats("pm1", [-1.0]), ints("sum_axes", [1, -1])]  # fmt: skip
    return model_of(nodes, (2, 3, 5, 7), [f"y{k}" for k in range(16)], inits)


def test_math_and_reductions_match_onnxruntime():
    rng = np.random.default_rng(5)
    g = check_everywhere(math_model(rng), nonzero(rng, (2, 3, 5, 7)))
    assert g.tensors["y12"].shape == (2, 5) and g.tensors["y15"].shape == (1, 1, 1, 1)


def layout_model():
    """Transpose (default and given perms), Slice (negative starts, ends and axes, negative
    steps, clamped ends, no axes), Gather of a scalar and a list on a computed tensor,
    Squeeze and Unsqueeze: outputs y0 ... y9."""
    nodes = [
        n("Transpose", ["x"], ["y0"]),
        n("Transpose", ["x"], ["y1"], perm=[2, 0, 3, 1]),
        n("Slice", ["x", "s_a", "e_a", "ax_a", "st_a"], ["y2"]),
        n("Slice", ["x", "s_b", "e_b", "ax_b", "st_b"], ["y3"]),
        n("Slice", ["x", "s_c", "e_c"], ["y4"]),
        n("Slice", ["x", "s_d", "e_d", "ax_d", "st_d"], ["y5"]),
        n("Gather", ["x", "g_scalar"], ["y6"], axis=1),
        n("Gather", ["x", "g_list"], ["y7"], axis=-1),
        n("Slice", ["x", "s_e", "e_e", "ax_e"], ["one"]),
        n("Squeeze", ["one", "sq_axes"], ["y8"]),
        n("Unsqueeze", ["y0", "unsq_axes"], ["y9"]),  # of a computed tensor: an output
    ]
    inits = [
        ints("s_a", [-1]), ints("e_a", [I64_MIN]), ints("ax_a", [-1]), ints("st_a", [-2]),
        ints("s_b", [1, 0]), ints("e_b", [1000, -1]), ints("ax_b", [2, 0]), ints("st_b", [2, 1]),
        ints("s_c", [0, 2]), ints("e_c", [2, 6]),
        ints("s_d", [5, -100]), ints("e_d", [1, 100]), ints("ax_d", [1, 3]), ints("st_d", [-3, 4]),
        ints("g_scalar", 2), ints("g_list", [-1, 0, 3]),
        ints("s_e", [4]), ints("e_e", [5]), ints("ax_e", [-3]), ints("sq_axes", [1]),
        ints("unsq_axes", [0, -1]),
    ]  # fmt: skip
    return model_of(nodes, (3, 7, 6, 5), [f"y{k}" for k in range(10)], inits)


def test_transpose_slice_gather_squeeze_match_onnxruntime():
    rng = np.random.default_rng(6)
    g = check_everywhere(layout_model(), nonzero(rng, (3, 7, 6, 5)))
    assert g.tensors["y2"].shape == (3, 7, 6, 3) and g.tensors["y5"].shape == (3, 2, 6, 2)


@pytest.mark.opencl
def test_math_and_layout_operators_on_the_device(device):
    rng = np.random.default_rng(7)
    for model in (math_model(rng), layout_model()):
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        x = nonzero(rng, shape)
        refs = ort_run(model, {"x": x})
        outs = build(from_onnx(model), device=device)(x)
        for out, ref in zip(outs, refs):
            assert out.shape == ref.shape
            assert rel_err(out, ref) < TOL


def test_graph_builder_api():
    g = Graph()
    x = g.input("x", (2, 5, 7))
    s = g.slice(x, [-1], [-9], [2], [-2])  # 6, 4, 2, 0
    t = g.transpose(s)
    r = g.reduce(t, "max", [-1], keepdims=False)
    g.output(r)
    xv = nonzero(np.random.default_rng(8), (2, 5, 7))
    want = np.transpose(xv[:, :, ::-2]).max(axis=-1)
    np.testing.assert_array_equal(run_reference(g, xv)[r], want)
    np.testing.assert_array_equal(build(g, target="python")(xv), want)


# ---- errors: each names its node


def one_node(op, inputs, inits, x_shape=(1, 4, 5, 6), outputs=("y",), opset=13, **attrs):
    node = n(op, inputs, list(outputs), "bad", **attrs)
    return model_of([node], x_shape, outputs, inits, opset)


ERRORS = [
    ("perm-repeat", lambda: one_node("Transpose", ["x"], [], perm=[0, 0, 1, 2]),
     OnnxImportError, "not a permutation"),
    ("perm-short", lambda: one_node("Transpose", ["x"], [], perm=[1, 0]),
     OnnxImportError, "not a permutation"),
    ("step-0", lambda: one_node("Slice", ["x", "s", "e", "a", "st"], [ints("s", [0]), ints("e", [2]),
     ints("a", [1]), ints("st", [0])]), OnnxImportError, "must be non-zero"),
    ("slice-axis", lambda: one_node("Slice", ["x", "s", "e", "a"], [ints("s", [0]), ints("e", [2]),
     ints("a", [4])]), OnnxImportError, "out of range"),
    ("slice-empty", lambda: one_node("Slice", ["x", "s", "e"], [ints("s", [3]), ints("e", [3])]),
     OnnxImportError, "no element"),
    ("slice-lengths", lambda: one_node("Slice", ["x", "s", "e"], [ints("s", [0, 1]), ints("e", [2])]),
     OnnxImportError, "same length"),
    ("slice-computed-starts", lambda: one_node("Slice", ["x", "x", "x"], []),
     UnsupportedOperatorError, "must be a constant integer tensor"),
    ("split-sizes", lambda: one_node("Split", ["x", "sp"], [ints("sp", [1, 2])], outputs=("y", "z"),
     axis=1), OnnxImportError, "adding up to 4"),
    ("split-axis", lambda: one_node("Split", ["x"], [], outputs=("y", "z"), axis=4),
     OnnxImportError, "axis 4 is out of range"),
    ("split-unequal", lambda: one_node("Split", ["x"], [], outputs=("y", "z", "w"), axis=1),
     OnnxImportError, "equal parts"),
    ("gather-range", lambda: one_node("Gather", ["x", "i"], [ints("i", 9)], axis=2),
     OnnxImportError, "out of range"),
    ("unsqueeze-twice", lambda: one_node("Unsqueeze", ["x", "a"], [ints("a", [1, -5])]),
     OnnxImportError, "twice"),
    ("squeeze-not-1", lambda: one_node("Squeeze", ["x", "a"], [ints("a", [1])]),
     OnnxImportError, "not all size 1"),
    # a Cast of data to int64 is read now (trunc, held as float32: test_onnx_logic.py); as the
    # model's output it is refused, being of an integer type
    ("cast-to-int", lambda: one_node("Cast", ["x"], [], to=TensorProto.INT64),
     OnnxImportError, r"its output 'y' is declared 1 \(FLOAT\), but the model computes an "
     "integer tensor"),
    ("matmul-computed", lambda: one_node("MatMul", ["x", "x"], []),  # (1, 4, 5, 6) @ itself
     OnnxImportError, "inner dims differ"),
    # Equal of data is read now (a mask: test_onnx_logic.py); Range stays fold-only
    ("fold-only", lambda: one_node("Range", ["x", "x", "x"], []),
     UnsupportedOperatorError, "only where all its inputs are constants"),
    ("huge-constant", lambda: model_of([n("ConstantOfShape", ["s"], ["c"], "bad"), n("Add", ["x", "c"], ["y"])],
              (1, 4), inits=[ints("s", [2**20, 2**20])]), OnnxImportError, "computes at import"),
    ("range-0", lambda: model_of([n("Range", ["a", "b", "z"], ["r"], "bad"),
     n("Reshape", ["x", "r"], ["y"])], (1, 4), inits=[ints("a", 0), ints("b", 3), ints("z", 0)]),
     OnnxImportError, "delta must be non-zero"),
    ("int-div-0", lambda: model_of([n("Div", ["a", "z"], ["q"], "bad"),
     n("Reshape", ["x", "q"], ["y"])], (1, 4), inits=[ints("a", [4]), ints("z", [0])]),
     OnnxImportError, "division by zero"),
    ("ln-axis", lambda: one_node("LayerNormalization", ["x", "g"], [floats("g", [1.0] * 6)],
     opset=17, axis=4), OnnxImportError, "axis 4 is out of range"),
    ("reduce-axis", lambda: one_node("ReduceMax", ["x"], [], axes=[-5]),
     OnnxImportError, "out of range"),
    ("reduce-scalar", lambda: one_node("ReduceSum", ["x"], [], keepdims=0),
     OnnxImportError, "keepdims=1"),
    ("cast-type", lambda: model_of([n("Cast", ["a"], ["b"], "bad", to=TensorProto.STRING),
     n("Reshape", ["x", "b"], ["y"])], (1, 4), inits=[ints("a", [4])]),
     UnsupportedOperatorError, "cast to element type 8"),
    ("int-plus-float", lambda: one_node("Add", ["x", "i"], [ints("i", [2])]),
     UnsupportedOperatorError, "float32 only"),
]  # fmt: skip


@pytest.mark.parametrize("model, cls, message", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_bad_models_are_refused_naming_the_node(model, cls, message):
    with pytest.raises(cls, match=r"node 'bad' \(\w+\).*" + message):
        from_onnx(model())


def test_graph_errors_name_the_node():
    g = Graph()
    x = g.input("x", (2, 3))
    for kwargs, message in [
        ({"op": "transpose", "attrs": {"perm": (0, 2)}}, "not a permutation"),
        ({"op": "slice", "attrs": {"starts": [0], "ends": [1], "steps": [0]}}, "non-zero"),
        ({"op": "slice", "attrs": {"starts": [0], "ends": [1], "axes": [2]}}, "out of range"),
        ({"op": "slice", "attrs": {"starts": "0", "ends": [1]}}, "int64 values"),
        ({"op": "reduce", "attrs": {"kind": "prod"}}, "kind 'prod'"),
        ({"op": "reduce", "attrs": {"kind": "sum", "axes": [1, -1]}}, "repeat an axis"),
        ({"op": "power", "attrs": {"exponent": float("nan")}}, "finite"),
    ]:
        with pytest.raises(GraphError, match=f"node 'n' \\({kwargs['op']}\\).*{message}"):
            g.add_node(kwargs["op"], [x], kwargs["attrs"], name="n")


def test_mutated_attributes_and_shape_constants_raise_only_tensorsched_errors():
    """Random attribute values, integer constants and rewired inputs in the models above:
    each is read or refused with a TensorschedError, never an IndexError or KeyError."""
    from tensorsched import TensorschedError

    rng = np.random.default_rng(9)
    bases = [shuffle_block(rng, "split18", 18), transformer_block(rng), layout_model()]
    values = [0, 1, -1, 2, -2, 3, 7, 100, -100, I64_MAX, I64_MIN]
    for _ in range(300):
        model = onnx.ModelProto()
        model.CopyFrom(bases[rng.integers(len(bases))])
        node = model.graph.node[rng.integers(len(model.graph.node))]
        kind = rng.integers(3)
        if kind == 0:
            t = model.graph.initializer[rng.integers(len(model.graph.initializer))]
            if t.data_type == TensorProto.INT64:
                new = rng.choice(values, rng.integers(0, 4)).astype(np.int64)
                t.CopyFrom(numpy_helper.from_array(new, t.name))
        elif kind == 1 and node.attribute:
            a = node.attribute[rng.integers(len(node.attribute))]
            if a.type == onnx.AttributeProto.INT:
                a.i = int(rng.choice(values))
            elif a.type == onnx.AttributeProto.INTS:
                del a.ints[:]
                a.ints.extend(int(v) for v in rng.choice(values, rng.integers(0, 5)))
        elif node.input:
            names = ["x", *(t.name for t in model.graph.initializer)]
            node.input[rng.integers(len(node.input))] = str(rng.choice(names))
        try:
            from_onnx(model)
        except TensorschedError:
            pass


def test_reshape_with_allowzero_and_no_zero_in_the_shape():
    """torch's dynamo exporter writes Reshape with allowzero=1; without a 0 in the shape it
    changes nothing, and with one (an empty dimension) it is refused naming the node."""
    x = nonzero(np.random.default_rng(8), (1, 4, 5, 6))
    model = one_node("Reshape", ["x", "s"], [ints("s", [1, 20, -1])], opset=14, allowzero=1)
    check_everywhere(model, x)
    bad = one_node("Reshape", ["x", "s"], [ints("s", [0, 20, -1])], opset=14, allowzero=1)
    with pytest.raises(UnsupportedOperatorError, match=r"node 'bad' \(Reshape\): allowzero=1"):
        from_onnx(bad)
