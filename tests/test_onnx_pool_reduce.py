"""ONNX's ``ceil_mode=1`` pooling and ReduceMean over H and W, as torchvision's SqueezeNet,
GoogLeNet (ceil-mode MaxPool) and MNASNet, ShuffleNet (``x.mean([2, 3])``) export them: each
against onnxruntime through the numpy reference, the pool templates on the python target and
the network built on the OpenCL device; the export of ceil-mode pooling; the errors of what
stays unsupported.

Ceil mode (the ONNX spec, onnxruntime and PyTorch agree): the output size rounds up, a last
window that would start in the bottom/right padding is dropped, and what a last window reaches
past the padded input never wins a max and is never counted by an average, even one with
``count_include_pad=1``. Inputs are random and never zero; a max pool's are all negative, so a
padding read as 0 would win.

Tolerance: max |out - ref| / max |ref| under 1e-5 against onnxruntime (float32 both)."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.frontend import (  # noqa: E402
    OnnxImportError,
    from_onnx,
    to_onnx,
)
from tensorsched.graph import Graph, build, run_reference  # noqa: E402
from tensorsched.graph.graph import GraphError  # noqa: E402
from tensorsched.ops.pool import MODES, PoolShape  # noqa: E402
from tensorsched.tune.task import Task, TaskError  # noqa: E402

TOL = 1e-5


def rel_err(out, ref):
    return float(np.max(np.abs(np.asarray(out, np.float64) - ref)) / np.max(np.abs(ref)))


def ort_run(model, feeds):
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def make_model(nodes, x_shape, inits=(), opset=13, name="m"):
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits),
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def nonzero(rng, shape, negative=False):
    """Random float32 of magnitude 0.5 to 2, signs mixed (all negative with ``negative``)."""
    x = rng.uniform(0.5, 2.0, shape)
    sign = -1.0 if negative else rng.choice([-1.0, 1.0], shape)
    return (x * sign).astype(np.float32)


# ---- ceil-mode MaxPool / AveragePool


# (op, count_include_pad, (H, W), kernel, strides, pads (top, left, bottom, right))
CEIL_CASES = [
    ("MaxPool", None, (56, 56), (3, 3), (2, 2), (0, 0, 0, 0)),  # GoogLeNet's: 27 -> 28
    ("MaxPool", None, (13, 13), (2, 2), (2, 2), (0, 0, 0, 0)),  # 6 -> 7
    ("MaxPool", None, (56, 56), (3, 3), (2, 2), (1, 1, 1, 1)),  # 28 -> 29
    ("MaxPool", None, (5, 5), (2, 2), (2, 2), (1, 1, 1, 1)),  # 3: a 4th would start on the pad
    ("MaxPool", None, (9, 12), (3, 2), (2, 3), (1, 0, 0, 1)),  # H 4 -> 5; W's 5th dropped
    ("AveragePool", 0, (56, 56), (3, 3), (2, 2), (0, 0, 0, 0)),
    ("AveragePool", 1, (56, 56), (3, 3), (2, 2), (0, 0, 0, 0)),
    ("AveragePool", 0, (13, 13), (2, 2), (2, 2), (0, 0, 0, 0)),
    ("AveragePool", 0, (13, 13), (3, 3), (2, 2), (1, 1, 0, 0)),  # 6 -> 7
    ("AveragePool", 1, (13, 13), (3, 3), (2, 2), (1, 1, 0, 0)),  # top pad counted, overhang not
    ("AveragePool", 1, (6, 6), (3, 3), (2, 2), (1, 1, 1, 1)),  # 3 -> 4: past the bottom pad
    ("AveragePool", 0, (6, 6), (3, 3), (2, 2), (1, 1, 1, 1)),
    ("AveragePool", 1, (5, 5), (2, 2), (2, 2), (1, 1, 1, 1)),
    ("AveragePool", 1, (9, 12), (3, 2), (2, 3), (1, 0, 0, 1)),
    ("AveragePool", 1, (2, 2), (3, 3), (3, 3), (1, 1, 1, 1)),  # ONNX's last_window_starts_on_pad
]
CEIL_IDS = [
    f"{op}{'' if cip is None else cip}-{h}x{w}-k{k[0]}{k[1]}-s{s[0]}{s[1]}-p{''.join(map(str, p))}"
    for op, cip, (h, w), k, s, p in CEIL_CASES
]


def ceil_pool_model(op, cip, hw, kernel, strides, pads, channels=3):
    attrs = {"kernel_shape": list(kernel), "strides": list(strides), "pads": list(pads)}
    if cip is not None:
        attrs["count_include_pad"] = cip
    node = helper.make_node(op, ["x"], ["y"], "pool", ceil_mode=1, **attrs)
    return make_model([node], (1, channels, *hw))


def _ceil_case(case, seed=0):
    op, cip, hw, kernel, strides, pads = case
    model = ceil_pool_model(*case)
    x = nonzero(np.random.default_rng(seed), (1, 3, *hw), negative=op == "MaxPool")
    return model, x, ort_run(model, {"x": x})[0]


def test_ceil_mode_output_sizes():
    """Rounded up, less a last window that would start in the bottom/right padding."""
    from tensorsched.ops.pool import pooled_size

    assert (pooled_size(56, 3, 2, 0, 0), pooled_size(56, 3, 2, 0, 0, ceil=True)) == (27, 28)
    assert (pooled_size(13, 2, 2, 0, 0), pooled_size(13, 2, 2, 0, 0, ceil=True)) == (6, 7)
    assert pooled_size(5, 2, 2, 1, 1, ceil=True) == 3  # not 4
    assert pooled_size(12, 2, 3, 0, 1, ceil=True) == 4  # not 5
    g = Graph()
    x = g.input("x", (1, 2, 56, 56))
    assert g.tensors[g.max_pool2d(x, 3, 2, ceil_mode=True)].shape == (1, 2, 28, 28)
    assert g.tensors[g.max_pool2d(x, 3, 2)].shape == (1, 2, 27, 27)


@pytest.mark.parametrize("case", CEIL_CASES, ids=CEIL_IDS)
def test_ceil_mode_pooling_matches_onnxruntime_in_numpy(case):
    model, x, ref = _ceil_case(case)
    g = from_onnx(model)
    (node,) = g.nodes.values()
    assert node.attrs["ceil_mode"] is True
    assert g.tensors["y"].shape == ref.shape
    assert rel_err(run_reference(g, x)["y"], ref) < TOL


@pytest.mark.opencl
@pytest.mark.parametrize("case", CEIL_CASES, ids=CEIL_IDS)
def test_ceil_mode_pooling_matches_onnxruntime_on_the_device(device, case):
    model, x, ref = _ceil_case(case)
    out = build(from_onnx(model), device=device)(x)
    assert out.shape == ref.shape
    assert rel_err(out, ref) < TOL


# pool workloads in ceil mode (mode 3, 4, 5), small enough for the python target
TEMPLATE_SHAPES = [
    (1, 2, 7, 4, 3, 3, 2, 2, 1, 0, 0, 2),  # H 3 -> 4; W 2: a 3rd would start on the pad
    (1, 2, 6, 5, 3, 2, 2, 2, 1, 1, 1, 1),  # H 3 -> 4, past the bottom pad; W 3, not 4
    (1, 2, 5, 5, 2, 2, 2, 2, 0, 0, 0, 0),  # 2 -> 3
]


def _onnx_of(shape: PoolShape):
    kind = MODES[shape.mode % 3]
    op = "MaxPool" if kind == "max" else "AveragePool"
    cip = None if kind == "max" else int(kind == "avg_include_pad")
    hw, k = (shape.IH, shape.IW), (shape.KH, shape.KW)
    return ceil_pool_model(op, cip, hw, k, shape.stride, shape.pads, channels=shape.C)


@pytest.mark.parametrize("template", ["direct", "cpu"])
@pytest.mark.parametrize("mode", [3, 4, 5])
@pytest.mark.parametrize("dims", TEMPLATE_SHAPES, ids=["p1002", "p1111", "p0000"])
def test_ceil_mode_pool_templates_on_python(template, mode, dims):
    """The pool templates (``PoolShape`` modes 3 to 5: ceil mode) lowered and run by the
    python target, against onnxruntime; the task's own numpy reference agrees too."""
    task = Task("pool", template, (*dims, mode), epilogue=())
    s, args, cfg = task.instantiate({})
    assert cfg.valid
    mod = ts.build(s, args, target="python")
    shape = PoolShape(*task.shape)
    x = nonzero(np.random.default_rng(mode), (shape.N, shape.C, shape.IH, shape.IW), mode == 3)
    ref = ort_run(_onnx_of(shape), {"x": x})[0]
    out = np.full(ref.shape, np.nan, np.float32)
    assert tuple(int(d) for d in args[-1].shape) == ref.shape
    mod(x, out)
    assert rel_err(out, ref) < TOL
    assert rel_err(task.reference([x]), ref) < TOL


def test_pool_modes_beyond_ceil_are_refused():
    """Modes 3 to 5 are the ceil-mode pools; 6 and on are refused, saying what is valid."""
    assert PoolShape(
        *Task("pool", "direct", (1, 2, 5, 5, 2, 2, 2, 2, 0, 0, 0, 0, 5)).shape
    ).ceil_mode
    with pytest.raises(TaskError, match=r"mode 6 must be 0 .* or one of them plus 3 \(ceil mode\)"):
        Task("pool", "direct", (1, 2, 5, 5, 2, 2, 2, 2, 0, 0, 0, 0, 6))


def test_ceil_mode_pooling_exports_to_onnx():
    """A graph's ceil-mode pools are written with ``ceil_mode=1``: onnxruntime runs the export
    to the numpy reference's values, and the export reads back the same."""
    rng = np.random.default_rng(3)
    g = Graph("ceil")
    x = g.input("x", (1, 3, 13, 13))
    a = g.max_pool2d(x, 3, 2, (1, 1, 0, 0), ceil_mode=True)
    b = g.avg_pool2d(x, 3, 2, (1, 1, 0, 0), count_include_pad=True, ceil_mode=True)
    c = g.avg_pool2d(x, 3, 2, (1, 1, 0, 0), ceil_mode=True)
    g.output(g.concat([a, b, c], 1))
    data = nonzero(rng, (1, 3, 13, 13))
    ref = run_reference(g, data)
    (out,) = ref.values()
    assert out.shape == (1, 9, 7, 7)
    model = to_onnx(g)
    pools = [n for n in model.graph.node if n.op_type in ("MaxPool", "AveragePool")]
    assert len(pools) == 3
    assert all(helper.get_attribute_value(at) == 1 for n in pools for at in n.attribute
               if at.name == "ceil_mode")  # fmt: skip
    assert sum(at.name == "ceil_mode" for n in pools for at in n.attribute) == 3
    assert rel_err(ort_run(model, {"x": data})[0], out) < TOL
    back = from_onnx(model)
    assert rel_err(next(iter(run_reference(back, data).values())), out) < TOL


def test_bad_ceil_modes_are_refused():
    g = Graph()
    x = g.input("x", (1, 2, 8, 8))
    with pytest.raises(GraphError, match="ceil_mode must be True or False, got 'yes'"):
        g.add_node("max_pool2d", [x], {"kernel": 2, "ceil_mode": "yes"}, "p")
    model = ceil_pool_model("MaxPool", None, (8, 8), (2, 2), (2, 2), (0, 0, 0, 0))
    model.graph.node[0].attribute[0].i = 2  # ceil_mode=2
    assert model.graph.node[0].attribute[0].name == "ceil_mode"
    with pytest.raises(OnnxImportError, match=r"node 'pool' \(MaxPool\): ceil_mode 2 must be 0"):
        from_onnx(model)


# ---- ReduceMean over H and W


def reduce_mean_net(rng, axes, keepdims, opset=13):
    """Torchvision's heads: conv, ReLU, a ceil-mode MaxPool (SqueezeNet / GoogLeNet), a
    squeeze-and-excitation gate from ``mean([2, 3], keepdim=True)`` (MNASNet's relatives),
    then ``x.mean([2, 3])`` into a Gemm where ``keepdims=0`` (MNASNet, ShuffleNet) or a 1x1
    conv where ``keepdims=1``. ``axes`` is the last ReduceMean's, an attribute before opset
    18, an input from 18 on."""
    f = np.float32
    inits = [
        numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.5).astype(f), "w"),
        numpy_helper.from_array((rng.standard_normal((8, 8, 1, 1)) * 0.5).astype(f), "wse"),
        numpy_helper.from_array((rng.standard_normal((5, 8)) * 0.5).astype(f), "fc"),
        numpy_helper.from_array((rng.standard_normal((5, 8, 1, 1)) * 0.5).astype(f), "w1x1"),
        numpy_helper.from_array(np.array([2, 3], np.int64), "hw"),
        numpy_helper.from_array(np.array(axes, np.int64), "axes"),
    ]
    n = helper.make_node

    def mean(x, y, name, ax, keep):
        if opset >= 18:
            return n("ReduceMean", [x, ax], [y], name, keepdims=keep)
        values = [2, 3] if ax == "hw" else list(axes)
        return n("ReduceMean", [x], [y], name, axes=values, keepdims=keep)

    nodes = [
        n("Conv", ["x", "w"], ["c"], "conv", pads=[1, 1, 1, 1]),
        n("Relu", ["c"], ["r"], "relu"),
        n("MaxPool", ["r"], ["p"], "pool", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        mean("p", "se_in", "se_mean", "hw", 1),
        n("Conv", ["se_in", "wse"], ["se_c"], "se_conv"),
        n("Sigmoid", ["se_c"], ["gate"], "se_gate"),
        n("Mul", ["p", "gate"], ["scaled"], "se_scale"),
        mean("scaled", "m", "mean", "axes", keepdims),
    ]
    if keepdims:
        nodes.append(n("Conv", ["m", "w1x1"], ["y"], "head"))
    else:
        nodes.append(n("Gemm", ["m", "fc"], ["y"], "fc", transB=1))
    return make_model(nodes, (1, 3, 16, 16), inits, opset, "reduce_mean")


REDUCE_CASES = [  # (axes, keepdims, opset)
    ([2, 3], 0, 13),
    ([2, 3], 1, 13),
    ([-1, -2], 0, 13),
    ([3, -2], 1, 13),
    ([2, 3], 0, 18),
    ([-2, -1], 1, 18),
]
REDUCE_IDS = [f"axes{'_'.join(map(str, a))}-keep{k}-opset{o}" for a, k, o in REDUCE_CASES]


def _reduce_case(axes, keepdims, opset, seed=4):
    rng = np.random.default_rng(seed)
    model = reduce_mean_net(rng, axes, keepdims, opset)
    x = nonzero(rng, (1, 3, 16, 16))
    return model, x, ort_run(model, {"x": x})[0]


@pytest.mark.parametrize("axes,keepdims,opset", REDUCE_CASES, ids=REDUCE_IDS)
def test_reduce_mean_matches_onnxruntime_in_numpy(axes, keepdims, opset):
    model, x, ref = _reduce_case(axes, keepdims, opset)
    g = from_onnx(model)
    ops = g.op_counts()
    assert ops["global_avg_pool2d"] == 2 and ops.get("flatten", 0) == 1 - keepdims
    assert g.tensors["y"].shape == ref.shape == ((1, 5, 1, 1) if keepdims else (1, 5))
    assert rel_err(run_reference(g, x)["y"], ref) < TOL


@pytest.mark.opencl
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_mean_matches_onnxruntime_on_the_device(device, keepdims):
    model, x, ref = _reduce_case([2, 3], keepdims, 13)
    out = build(from_onnx(model), device=device)(x)
    assert out.shape == ref.shape
    assert rel_err(out, ref) < TOL


def _one_mean(x_shape, opset=13, axes_input=None, **attrs):
    inputs, inits = ["x"], []
    if axes_input is not None:
        inputs.append("axes")
        inits.append(numpy_helper.from_array(np.array(axes_input, np.int64), "axes"))
    node = helper.make_node("ReduceMean", inputs, ["y"], "my_mean", **attrs)
    return make_model([node], x_shape, inits, opset)


@pytest.mark.parametrize(
    "x_shape, opset, axes_input, attrs",
    [
        ((1, 4, 5, 5), 13, None, {"axes": [1]}),
        ((1, 4, 5, 5), 13, None, {"axes": [1, 2, 3]}),
        ((1, 4, 5, 5), 13, None, {"axes": [2]}),
        ((1, 4, 5, 5), 13, None, {}),
        ((1, 4, 5), 13, None, {"axes": [1, 2]}),
        ((1, 4, 5, 5), 18, [0, 3], {}),
    ],
)
def test_other_reduce_means_are_general_reductions(x_shape, opset, axes_input, attrs):
    """ReduceMean over axes other than H and W (all of them too) is a ``reduce`` node, not a
    global average pool, and matches onnxruntime."""
    model = _one_mean(x_shape, opset, axes_input, **attrs)
    x = nonzero(np.random.default_rng(11), x_shape)
    ref = ort_run(model, {"x": x})[0]
    g = from_onnx(model)
    assert "global_avg_pool2d" not in g.op_counts()
    assert rel_err(run_reference(g, x)["y"], ref) < TOL


def test_reduce_mean_errors_and_the_empty_axes_noop():
    with pytest.raises(OnnxImportError, match=r"axes \[2, 4\] out of range"):
        from_onnx(_one_mean((1, 4, 5, 5), axes=[2, 4]))
    with pytest.raises(OnnxImportError, match="keepdims 3 must be 0 or 1"):
        from_onnx(_one_mean((1, 4, 5, 5), axes=[2, 3], keepdims=3))
    model = _one_mean((1, 4, 5, 5), 18, [2, 3])
    model.graph.node[0].input[0] = "axes"  # the mean of an integer constant
    with pytest.raises(OnnxImportError, match="the first input must be a float tensor"):
        from_onnx(model)
    # opset 18: no axes and noop_with_empty_axes=1 is the identity
    model = _one_mean((1, 4, 5, 5), 18, noop_with_empty_axes=1)
    x = nonzero(np.random.default_rng(5), (1, 4, 5, 5))
    g = from_onnx(model)
    assert len(g.nodes) == 0
    np.testing.assert_array_equal(run_reference(g, x)[g.outputs[0]], ort_run(model, {"x": x})[0])
