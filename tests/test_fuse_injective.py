"""``passes.fuse_injective``: trees of injective nodes (elementwise math, masks, views,
transposes, slices, padding, concatenation) become one ``fused`` node, one kernel. Each graph
runs, optimized, on the CPU OpenCL device and the python target against the unfused graph's
numpy reference, on random data, at odd sizes; the structure of what is fused and what is not
is checked, and the fused graph goes back to ONNX (``unfuse``) and through onnxruntime."""

import numpy as np
import pytest

import tensorsched as ts
from tensorsched.graph import Graph
from tensorsched.graph.graph import FUSED_STEPS, GraphError, Node
from tensorsched.graph.passes import PIPELINE, fuse_injective, optimize, unfuse
from tensorsched.graph.reference import run_reference


def _check(g: Graph, feeds: dict, target: str = "opencl") -> ts.graph.Net:
    net = ts.graph.build(g, target=target)
    want = run_reference(g, feeds)
    got = net(feeds)
    if isinstance(got, (list, tuple)):
        got = dict(zip(g.outputs, got))
    elif not isinstance(got, dict):
        got = {g.outputs[0]: got}
    for name, ref in want.items():
        np.testing.assert_allclose(np.asarray(got[name]), ref, rtol=1e-5, atol=1e-5)
    return net


def _op(g: Graph, op: str, *ins: str) -> str:
    return g.add_node(op, list(ins))


def _ops(g: Graph) -> list[str]:
    return [n.op for n in g.topo_nodes()]


def gelu_block(rows: int = 37, width: int = 53) -> tuple[Graph, dict]:
    """A dense layer, then GELU written out as exporters write it (div, erf, add, mul, mul)."""
    rng = np.random.default_rng(0)
    g = Graph("gelu")
    x = g.input("x", (rows, width))
    w = g.constant("w", rng.standard_normal((61, width)) * 0.2)
    h = g.dense(x, w)
    e = g.add_node("erf", [_op(g, "div", h, g.constant("sqrt2", [np.sqrt(2.0)]))])
    y = _op(
        g, "mul", _op(g, "mul", h, g.add(e, g.constant("one", [1.0]))), g.constant("half", [0.5])
    )
    g.output(y)
    return g, {"x": rng.standard_normal((rows, width)).astype(np.float32)}


@pytest.mark.parametrize("target", ["opencl", "python"])
def test_gelu_written_out_is_one_kernel(target):
    g, feeds = gelu_block()
    o = optimize(g)
    assert _ops(o) == ["dense", "fused"]
    fused = o.nodes[o.producer[o.outputs[0]]]
    assert [s[0] for s in fused.attrs["steps"]] == ["div", "erf", "add", "mul", "mul"]
    net = _check(g, feeds, target)
    assert len(net.layers) == 2


def attention_heads(tokens: int = 19, heads: int = 3, head: int = 7) -> tuple[Graph, dict]:
    """A transformer's head split and scale: qkv (tokens, 3 * width) reshaped, transposed,
    sliced into q and k, k transposed again, each scaled, then q @ k^T plus a mask."""
    rng = np.random.default_rng(1)
    width = heads * head
    g = Graph("heads")
    qkv = g.input("qkv", (tokens, 3 * width))
    mask = g.input("mask", (1, tokens))
    t = g.transpose(g.reshape(qkv, (tokens, 3, heads, head)), (1, 2, 0, 3))  # 3, h, t, d
    q = g.reshape(g.slice(t, [0], [1], [0]), (heads, tokens, head))
    k = g.reshape(g.slice(t, [1], [2], [0]), (heads, tokens, head))
    scale = g.constant("scale", [head**-0.25])
    q = _op(g, "mul", q, scale)
    k = _op(g, "mul", g.transpose(k, (0, 2, 1)), scale)
    att = g.batch_matmul(q, k)
    neg = _op(g, "mul", _op(g, "sub", g.constant("one", [1.0]), g.reshape(mask, (1, 1, tokens))),
                g.constant("big", [-1e4]))  # fmt: skip
    g.output(g.softmax(g.add(att, neg), axis=-1))
    feeds = {
        "qkv": rng.standard_normal((tokens, 3 * width)).astype(np.float32),
        "mask": (rng.uniform(size=(1, tokens)) > 0.3).astype(np.float32),
    }
    return g, feeds


@pytest.mark.parametrize("target", ["opencl", "python"])
def test_head_split_scale_and_mask_fuse(target):
    g, feeds = attention_heads()
    o = optimize(g)
    ops = _ops(o)
    # t is read by both slices: its own kernel; q's and k's chains, the mask's, and the add
    # of the scores and the mask: one kernel each
    assert ops.count("batch_matmul") == 1 and ops.count("softmax") == 1
    assert "transpose" not in ops and "slice" not in ops and "mul" not in ops
    assert ops.count("fused") == 4, ops
    _check(g, feeds, target)


def test_a_result_read_twice_or_an_output_ends_a_tree():
    rng = np.random.default_rng(2)
    g = Graph()
    x = g.input("x", (5, 9))
    a = g.relu(g.add(x, g.constant("c", rng.standard_normal(9))))  # read by two nodes
    b = _op(g, "mul", a, a)
    d = _op(g, "sub", g.add_node("exp", [a]), b)
    g.output(d, a)
    o = optimize(g)
    producer = {o.nodes[o.producer[t]].op for t in o.outputs}
    assert producer == {"fused"}
    for n in o.topo_nodes():  # a (an output, read twice) is made by one node only
        assert sum(t == o.producer.get(a) for t in n.inputs) <= 2
    _check(g, {"x": rng.standard_normal((5, 9)).astype(np.float32)})


def test_views_alone_stay_views():
    g = Graph()
    x = g.input("x", (4, 6))
    y = g.reshape(g.reshape(x, (2, 12)), (24,))
    g.output(g.dense(g.reshape(y, (1, 24)), g.constant("w", np.ones((3, 24)))))
    o = optimize(g)
    assert "fused" not in _ops(o)


def test_a_long_chain_is_cut_into_fused_nodes_of_at_most_the_limit():
    g = Graph()
    x = g.input("x", (3, 11))
    y = x
    for k in range(FUSED_STEPS + 10):
        y = g.add(y, g.constant(f"c{k}", [0.01 * (k % 7)])) if k % 2 else g.add_node("abs", [y])
    g.output(y)
    o = optimize(g)
    sizes = [len(n.attrs["steps"]) for n in o.topo_nodes() if n.op == "fused"]
    assert max(sizes) <= FUSED_STEPS and sum(sizes) == FUSED_STEPS + 10
    _check(g, {"x": np.random.default_rng(3).standard_normal((3, 11)).astype(np.float32)})


def test_unfuse_gives_back_the_steps_and_onnx_export_runs():
    ort = pytest.importorskip("onnxruntime")
    g, feeds = attention_heads(tokens=9, heads=2, head=5)
    o = optimize(g)
    back = unfuse(o)
    assert "fused" not in _ops(back)
    no_fusion = optimize(g, tuple(p for p in PIPELINE if p.name != "fuse_injective"))
    assert sorted(_ops(back)) == sorted(_ops(no_fusion))
    model = ts.frontend.to_onnx(o)
    sess = ort.InferenceSession(model.SerializeToString())
    (got,) = sess.run(None, feeds)
    np.testing.assert_allclose(got, run_reference(g, feeds)[g.outputs[0]], rtol=1e-5, atol=1e-6)


def test_fused_is_the_passes_own_and_checked():
    g = Graph()
    x = g.input("x", (2, 3))
    with pytest.raises(GraphError, match="unknown operator 'fused'"):
        g.add_node("fused", [x], {"steps": (("relu", (("in", 0),), {}),)})
    bad = [
        {"steps": ()},
        {"steps": (("conv2d", (("in", 0),), {}),)},
        {"steps": (("relu", (("step", 0),), {}),)},
        {"steps": (("relu", (("in", 5),), {}),)},
        {"steps": ("relu",)},
    ]
    for attrs in bad:
        with pytest.raises(GraphError, match="fused"):
            g.add_node("fused", [x], attrs, internal=True)
    out = g.add_node("fused", [x], {"steps": (("relu", (("in", 0),), {}),)}, internal=True)
    assert g.tensors[out].shape == (2, 3)


def test_fusion_leaves_the_input_graph_alone():
    g, _ = gelu_block()
    before = [(n.name, n.op) for n in g.topo_nodes()]
    fuse_injective(g)
    assert [(n.name, n.op) for n in g.topo_nodes()] == before
    assert all(isinstance(n, Node) for n in g.nodes.values())


@pytest.mark.parametrize("target", ["opencl", "python"])
def test_dense_epilogue_behind_a_reshape(target):
    """An exporter's dense layer: MatMul to (rows, 1, outputs), then the bias, ReLU and a
    residual add on that view: all three join the dense node's epilogue (the residual read
    through a view of the dense's shape), the reshape moves behind it, no other kernel."""
    rng = np.random.default_rng(5)
    rows, width = 13, 29
    g = Graph()
    x = g.input("x", (rows, 1, width))
    h = g.dense(g.reshape(x, (rows, width)), g.constant("w", rng.standard_normal((width, width))))
    y = g.reshape(h, (rows, 1, width))
    y = g.relu(g.add(y, g.constant("b", rng.standard_normal(width))))
    g.output(g.add(y, x))
    o = optimize(g)
    assert [n.op for n in o.topo_nodes() if n.op not in ("reshape", "flatten")] == ["dense"]
    (dense,) = [n for n in o.topo_nodes() if n.op == "dense"]
    assert [s[0] for s in dense.epilogue] == ["bias", "relu", "add"]
    net = _check(g, {"x": rng.standard_normal((rows, 1, width)).astype(np.float32)}, target)
    assert len(net.layers) == 1


def test_a_bias_across_the_view_is_not_taken_for_the_outputs():
    """After a reshape to (rows, outputs / 2, 2) a constant of 2 values is no bias of the
    outputs: the add stays a kernel of its own."""
    rng = np.random.default_rng(6)
    g = Graph()
    x = g.input("x", (7, 12))
    h = g.reshape(g.dense(x, g.constant("w", rng.standard_normal((10, 12)))), (7, 5, 2))
    g.output(g.add(h, g.constant("b", rng.standard_normal(2))))
    o = optimize(g)
    assert not any(n.epilogue for n in o.topo_nodes())
    _check(g, {"x": rng.standard_normal((7, 12)).astype(np.float32)})


@pytest.mark.parametrize("gpu", [False, True])
def test_a_residual_add_and_transpose_before_a_layer_norm_join_its_kernel(gpu):
    """(tokens, 1, width) transposed to (1, tokens, width), plus the residual, then a layer
    norm: one fused node ending in the layer norm, on the GPU's one-kernel row schedule and
    the CPU's kernels alike."""
    from tensorsched.graph.tasks import node_kernel

    rng = np.random.default_rng(7)
    tokens, width = 11, 70
    g = Graph()
    x = g.input("x", (tokens, 1, width))
    r = g.input("r", (1, tokens, width))
    y = g.add(g.transpose(x, (1, 0, 2)), r)
    g.output(g.layer_norm(y, g.constant("s", rng.standard_normal(width)), None, name="ln"))
    o = optimize(g)
    (node,) = o.topo_nodes()
    assert node.op == "fused" and [s[0] for s in node.attrs["steps"]] == [
        "transpose", "add", "layer_norm",
    ]  # fmt: skip
    feeds = {
        "x": rng.standard_normal((tokens, 1, width)).astype(np.float32),
        "r": rng.standard_normal((1, tokens, width)).astype(np.float32),
    }
    s, args = node_kernel(o, node, gpu=gpu)
    mod = ts.build(s, args)
    out = np.full((1, tokens, width), np.nan, np.float32)
    mod(feeds["x"], feeds["r"], o.constants[node.inputs[2]], out)
    np.testing.assert_allclose(out, run_reference(g, feeds)[g.outputs[0]], rtol=1e-4, atol=1e-5)
    if gpu:
        assert mod.get_source().count("__kernel") == 1
    _check(g, feeds)


def test_a_result_read_twice_by_one_node_is_not_inlined():
    """x * x, then that times itself, 40 times: fused, the last kernel would hold 2 ** 40
    copies of x; each square stays a kernel reading the one before."""
    g = Graph()
    y = g.input("x", (3, 5))
    for _ in range(40):
        y = _op(g, "mul", y, y)
    g.output(y)
    o = optimize(g)
    assert "fused" not in _ops(o)
    _check(g, {"x": np.full((3, 5), 1.0001, np.float32)})
