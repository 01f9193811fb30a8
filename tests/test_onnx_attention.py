"""ONNX MatMul of two computed tensors (``batch_matmul``: broadcast batch axes, 1-d operands,
a constant on either side) and what attention blocks are made of, as torch exports them: a
multi-head self-attention block (heads split by a shape folded from Shape / Gather /
Concat, ``Q @ K^T`` through Transpose (0, 1, 3, 2), Div by sqrt(d), Softmax(-1), ``@ V``,
heads merged, output projection, residual, LayerNormalization, Erf-GELU) and a tiny ViT
(a 4x4 stride-4 Conv patch embedding, tokens by Reshape / Transpose, a constant position
embedding, one attention block, ReduceMean over the tokens, a Gemm head). Each model is
built with ``onnx.helper`` and checked against onnxruntime through the numpy reference, the
python target, the OpenCL device and ``to_onnx``; then the errors of products whose shapes
do not fit, each naming its node.

Tolerance: max |out - ref| / max |ref| under 1e-5 (float32 both); inputs and weights are
random and never zero."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from test_onnx_pool_reduce import nonzero, ort_run, rel_err  # noqa: E402

from tensorsched.errors import TensorschedError  # noqa: E402
from tensorsched.frontend import OnnxImportError, from_onnx, to_onnx  # noqa: E402
from tensorsched.graph import Graph, build, run_reference  # noqa: E402
from tensorsched.graph.graph import GraphError  # noqa: E402
from tensorsched.ops.batch_matmul import BatchMatmulShape  # noqa: E402

TOL = 1e-5
n = helper.make_node


def ints(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def floats(name, arr):
    return numpy_helper.from_array(np.asarray(arr, np.float32), name)


def model_of(nodes, inputs, inits=(), opset=17):
    """A model of the float inputs ``{name: shape}`` and the one output ``y``."""
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(s))
                     for k, s in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits),
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def check(model, feeds, targets=("numpy", "python", "export"), device=None):
    """The model's output against onnxruntime on ``targets``; returns the graph."""
    (ref,) = ort_run(model, feeds)
    g = from_onnx(model)
    outs = {}
    if "numpy" in targets:
        outs["numpy"] = run_reference(g, feeds)[g.outputs[0]]
    if "python" in targets:
        outs["python"] = build(g, target="python")(feeds)
    if "export" in targets:
        outs["to_onnx"] = ort_run(to_onnx(g, opset=17), feeds)[0]
    if device is not None:
        outs["device"] = build(g, device=device)(feeds)
    for what, out in outs.items():
        assert out.shape == ref.shape, (what, out.shape, ref.shape)
        assert rel_err(out, ref) < TOL, (what, rel_err(out, ref))
    return g


# ---- MatMul of two computed tensors

# (A's shape, B's shape): broadcast batches, odd sizes no tile divides, 1-d operands
PRODUCTS = [
    ((2, 3, 5, 7), (7, 9)),  # B one matrix: one GEMM of 30 rows
    ((2, 1, 5, 7), (3, 7, 4)),  # both broadcast: 6 products
    ((4, 17, 8), (4, 8, 17)),
    ((2, 3, 5, 3), (2, 3, 3, 6)),  # attention's (batch, heads, tokens, d)
    ((7,), (3, 7, 5)),  # a row, dropped from the result
    ((3, 5, 7), (7,)),  # a column, dropped
    ((33, 65), (65, 31)),
    ((2, 1, 3, 1, 5, 7), (4, 3, 2, 7, 3)),  # 48 products, indexed by // and %
]
IDS = [f"{'x'.join(map(str, a))}@{'x'.join(map(str, b))}" for a, b in PRODUCTS]


def product_model(a_shape, b_shape):
    """``y = (a + 0.5) @ (b * 2)``: both operands computed (not inputs)."""
    inits = [floats("half", 0.5), floats("two", 2.0)]
    nodes = [
        n("Add", ["a", "half"], ["a1"]), n("Mul", ["b", "two"], ["b1"]),
        n("MatMul", ["a1", "b1"], ["y"], "mm"),
    ]  # fmt: skip
    return model_of(nodes, {"a": a_shape, "b": b_shape}, inits)


@pytest.mark.parametrize("a_shape,b_shape", PRODUCTS, ids=IDS)
def test_matmul_of_computed_tensors_matches_onnxruntime(a_shape, b_shape):
    rng = np.random.default_rng(0)
    feeds = {"a": nonzero(rng, a_shape), "b": nonzero(rng, b_shape)}
    targets = ("numpy", "export") if len(a_shape) > 4 else ("numpy", "python", "export")
    g = check(product_model(a_shape, b_shape), feeds, targets)
    assert g.op_counts()["batch_matmul"] == 1


@pytest.mark.opencl
def test_matmul_of_computed_tensors_on_the_device(device):
    rng = np.random.default_rng(1)
    for a_shape, b_shape in PRODUCTS:
        feeds = {"a": nonzero(rng, a_shape), "b": nonzero(rng, b_shape)}
        check(product_model(a_shape, b_shape), feeds, (), device)


def test_the_kernel_view_folds_and_merges_batch_axes():
    v = BatchMatmulShape.of((2, 3, 5, 7), (7, 9))
    assert (v.Z, v.M, v.N, v.K) == (1, 30, 9, 7)
    v = BatchMatmulShape.of((2, 3, 5, 7), (2, 3, 7, 4))
    assert (v.Z, v.ZA, v.ZB, v.dims) == (6, 6, 6, ((6, True, True),))
    v = BatchMatmulShape.of((2, 1, 5, 7), (3, 7, 4))
    assert (v.Z, v.ZA, v.ZB) == (6, 2, 3)


def test_matmul_with_a_constant_on_either_side():
    """A constant first operand (``C @ x``) and an N-d constant second one are products of
    their own; a 2-d constant second operand stays a dense layer."""
    rng = np.random.default_rng(2)
    inits = [floats("C", nonzero(rng, (5, 7))), floats("W", nonzero(rng, (2, 3, 4))),
             floats("V", nonzero(rng, (7,)))]  # fmt: skip
    nodes = [
        n("MatMul", ["C", "x"], ["cx"]),  # (5, 7) @ (2, 7, 3)
        n("MatMul", ["cx", "W"], ["cxw"]),  # (2, 5, 3) @ (2, 3, 4)
        n("Transpose", ["x"], ["xt0"], perm=[0, 2, 1]),
        # onnxruntime 1.32's optimizer fuses a Transpose into a MatMul by a 1-d B wrongly
        # (right with its optimizations off): the Relu keeps them apart
        n("Relu", ["xt0"], ["xt"]),
        n("MatMul", ["xt", "V"], ["xv"]),  # (2, 3, 7) @ (7,)
        n("Unsqueeze", ["xv", "ax"], ["xv1"]),
        n("MatMul", ["cxw", "D"], ["y0"]),  # (2, 5, 4) @ (4, 3): a dense layer
        n("Add", ["y0", "xv1"], ["y"]),
    ]
    inits += [floats("D", nonzero(rng, (4, 3))), ints("ax", [1])]
    model = model_of(nodes, {"x": (2, 7, 3)}, inits)
    g = check(model, {"x": nonzero(rng, (2, 7, 3))})
    assert g.op_counts()["batch_matmul"] == 3 and g.op_counts()["dense"] == 1


# ---- multi-head self-attention, as torch exports it


def attention_nodes(rng, x, T, D, heads, prefix=""):
    """A post-norm encoder block on ``x`` (batch, T, D): nodes, initializers and the name
    of its output."""
    d = D // heads
    p = prefix

    def w(name, shape, scale=0.5):
        inits.append(floats(p + name, rng.uniform(-scale, scale, shape)))
        return p + name

    inits: list = []
    nodes = [n("Shape", [x], [p + "shape"])]
    for i, what in enumerate(("batch", "tokens")):
        inits.append(ints(p + f"i{i}", i))  # a scalar index: Gather gives a scalar
        nodes += [
            n("Gather", [p + "shape", p + f"i{i}"], [p + what], axis=0),
            n("Unsqueeze", [p + what, p + "ax0"], [p + what + "1"]),
        ]
    inits += [ints(p + "ax0", [0]), ints(p + "hd", [heads, d]), ints(p + "dd", [D])]
    nodes += [
        n("Concat", [p + "batch1", p + "tokens1", p + "hd"], [p + "hshape"], axis=0),
        n("Concat", [p + "batch1", p + "tokens1", p + "dd"], [p + "mshape"], axis=0),
    ]
    split = {}
    for t in "qkv":
        nodes += [
            n("MatMul", [x, w("W" + t, (D, D))], [p + t + "p"]),
            n("Add", [w("b" + t, (D,)), p + t + "p"], [p + t]),  # torch: bias first
            n("Reshape", [p + t, p + "hshape"], [p + t + "h"]),
            n("Transpose", [p + t + "h"], [p + t + "t"], perm=[0, 2, 1, 3]),
        ]
        split[t] = p + t + "t"
    inits.append(floats(p + "sqrt_d", np.sqrt(d)))
    nodes += [
        n("Transpose", [split["k"]], [p + "kT"], perm=[0, 1, 3, 2]),
        n("MatMul", [split["q"], p + "kT"], [p + "scores"], p + "qk"),
        n("Div", [p + "scores", p + "sqrt_d"], [p + "scaled"]),
        n("Softmax", [p + "scaled"], [p + "probs"], axis=-1),
        n("MatMul", [p + "probs", split["v"]], [p + "ctx"], p + "pv"),
        n("Transpose", [p + "ctx"], [p + "ctx_t"], perm=[0, 2, 1, 3]),
        n("Reshape", [p + "ctx_t", p + "mshape"], [p + "merged"]),
        n("MatMul", [p + "merged", w("Wo", (D, D))], [p + "op"]),
        n("Add", [w("bo", (D,)), p + "op"], [p + "o"]),
        n("Add", [x, p + "o"], [p + "res"]),
        n("LayerNormalization", [p + "res", w("gamma", (D,)), w("beta", (D,))], [p + "ln"],
          axis=-1, epsilon=1e-5),
    ]  # fmt: skip
    inits += [floats(p + "sqrt2", np.sqrt(2.0)), floats(p + "one", 1.0), floats(p + "h", 0.5)]
    nodes += [
        n("Div", [p + "ln", p + "sqrt2"], [p + "u"]), n("Erf", [p + "u"], [p + "erf"]),
        n("Add", [p + "erf", p + "one"], [p + "e1"]), n("Mul", [p + "ln", p + "e1"], [p + "ge"]),
        n("Mul", [p + "ge", p + "h"], [p + "gelu"]),
    ]  # fmt: skip
    return nodes, inits, p + "gelu"


def attention_model(rng, B=2, T=5, D=12, heads=3):
    nodes, inits, out = attention_nodes(rng, "x", T, D, heads)
    nodes.append(n("Identity", [out], ["y"]))
    return model_of(nodes, {"x": (B, T, D)}, inits)


def test_attention_block_matches_onnxruntime():
    rng = np.random.default_rng(3)
    g = check(attention_model(rng), {"x": nonzero(rng, (2, 5, 12))})
    ops = g.op_counts()
    assert ops["batch_matmul"] == 2 and ops["dense"] == 4 and ops["softmax"] == 1
    assert ops["transpose"] == 5  # q, k, v to heads, K^T, the context back


@pytest.mark.opencl
def test_attention_block_on_the_device(device):
    rng = np.random.default_rng(3)
    check(attention_model(rng, B=2, T=7, D=12, heads=3), {"x": nonzero(rng, (2, 7, 12))},
          ("numpy",), device)  # fmt: skip


# ---- a tiny ViT


def vit_model(rng, D=12, heads=3, classes=10):
    """1x3x16x16 -> 4x4 patches of 4x4 (Conv, stride 4) -> 16 tokens of D, + a position
    embedding -> one attention block -> the tokens' mean -> a Gemm head."""
    inits = [
        floats("patch_w", rng.uniform(-0.3, 0.3, (D, 3, 4, 4))),
        floats("patch_b", rng.uniform(-0.3, 0.3, D)),
        floats("pos", rng.uniform(-0.3, 0.3, (1, 16, D))),
        floats("head_w", rng.uniform(-0.5, 0.5, (classes, D))),
        floats("head_b", rng.uniform(-0.5, 0.5, classes)),
        ints("tok_shape", [1, D, 16]),
    ]
    nodes = [
        n("Conv", ["x", "patch_w", "patch_b"], ["pe"], kernel_shape=[4, 4], strides=[4, 4]),
        n("Reshape", ["pe", "tok_shape"], ["pe_flat"]),
        n("Transpose", ["pe_flat"], ["tokens"], perm=[0, 2, 1]),
        n("Add", ["tokens", "pos"], ["emb"]),
    ]
    block, block_inits, out = attention_nodes(rng, "emb", 16, D, heads, "blk_")
    nodes += block + [
        n("ReduceMean", [out], ["pooled"], axes=[1], keepdims=0),
        n("Gemm", ["pooled", "head_w", "head_b"], ["y"], transB=1),
    ]
    return model_of(nodes, {"x": (1, 3, 16, 16)}, inits + block_inits)


def test_vit_matches_onnxruntime():
    rng = np.random.default_rng(5)
    g = check(vit_model(rng), {"x": nonzero(rng, (1, 3, 16, 16))}, ("numpy", "export"))
    assert g.op_counts()["batch_matmul"] == 2 and g.op_counts()["conv2d"] == 1


@pytest.mark.opencl
def test_vit_on_the_device(device):
    rng = np.random.default_rng(5)
    x = nonzero(rng, (1, 3, 16, 16))
    check(vit_model(rng), {"x": x}, ("numpy",), device)


# ---- Expand of a computed tensor


@pytest.mark.parametrize("shape", [(2, 3, 5), (4, 2, 1, 5), (2, 1, 5), (1, 5)])
def test_expand_of_a_computed_tensor(shape):
    rng = np.random.default_rng(6)
    nodes = [n("Relu", ["x"], ["r"]), n("Expand", ["r", "shape"], ["y"])]
    model = model_of(nodes, {"x": (2, 1, 5)}, [ints("shape", shape)])
    check(model, {"x": nonzero(rng, (2, 1, 5))})


def test_expand_to_a_shape_that_does_not_broadcast_is_refused():
    nodes = [n("Relu", ["x"], ["r"]), n("Expand", ["r", "shape"], ["y"], "grow")]
    model = model_of(nodes, {"x": (2, 3, 5)}, [ints("shape", (2, 4, 5))])
    with pytest.raises(OnnxImportError, match=r"node 'grow' \(Expand\).*do not broadcast"):
        from_onnx(model)


# ---- errors


@pytest.mark.parametrize(
    "a_shape,b_shape,match",
    [
        ((2, 5, 7), (2, 6, 3), r"inner dims differ: \(2, 5, 7\) @ \(2, 6, 3\)"),
        ((2, 5, 7), (3, 7, 4), r"batch dims \(2,\) of \(2, 5, 7\) and \(3,\) .* do not broadcast"),
        ((7,), (7,), r"two 1-d tensors is a scalar"),
    ],
)  # fmt: skip
def test_products_that_do_not_fit_are_refused(a_shape, b_shape, match):
    with pytest.raises(OnnxImportError, match=r"node 'mm' \(MatMul\).*" + match) as err:
        from_onnx(product_model(a_shape, b_shape))
    assert isinstance(err.value, TensorschedError)
    g = Graph("g")
    a, b = g.input("a", a_shape), g.input("b", b_shape)
    with pytest.raises(GraphError, match=r"node 'qk' \(batch_matmul\): .*" + match):
        g.batch_matmul(a, b, name="qk")


def test_integer_operands_are_refused():
    nodes = [n("MatMul", ["x", "I"], ["y"], "mm")]
    model = model_of(nodes, {"x": (2, 3)}, [ints("I", np.ones((3, 2)))])
    with pytest.raises(OnnxImportError, match=r"node 'mm' \(MatMul\): 'I' is an integer"):
        from_onnx(model)


@pytest.mark.opencl
@pytest.mark.parametrize("gpu", [False, True], ids=["cpu_tiles", "gpu_tiles"])
def test_both_schedules_on_the_device(device, gpu):
    """The CPU (register tiles) and GPU (``__local`` tiles) schedules of a batch_matmul node,
    whichever the device is, on products that no tile divides."""
    from tensorsched.graph.tasks import batch_matmul_kernel
    from tensorsched.runtime.build import build as build_module
    from tensorsched.schedules.lower import lower

    rng = np.random.default_rng(7)
    for a_shape, b_shape in [((2, 1, 5, 7), (3, 7, 4)), ((3, 17, 33), (3, 33, 19)),
                             ((2, 3, 5, 7), (7, 9))]:  # fmt: skip
        g = Graph("g")
        node = g.nodes[g.batch_matmul(g.input("a", a_shape), g.input("b", b_shape), name="mm")]
        s, args = batch_matmul_kernel(g, node, gpu)
        mod = build_module(lower(s, args, name="mm"), target="opencl", device=device)
        a, b = nonzero(rng, a_shape), nonzero(rng, b_shape)
        out = np.full([int(d) for d in args[-1].shape], np.nan, np.float32)
        mod(a.reshape([int(d) for d in args[0].shape]), b.reshape([int(d) for d in args[1].shape]),
            out)  # fmt: skip
        ref = np.matmul(a.astype(np.float64), b)
        assert rel_err(out.reshape(ref.shape), ref) < TOL, (a_shape, b_shape)
