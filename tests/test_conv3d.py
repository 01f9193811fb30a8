"""3-d convolution (``conv3d`` nodes, ``ops.conv3d``) and 3-d pooling (``max_pool3d`` /
``avg_pool3d``, ``ops.pool.pool3d``) read from ONNX's Conv, MaxPool, AveragePool and
GlobalAveragePool over NCDHW data: against onnxruntime through the numpy reference, the
python target and ``to_onnx`` (read back by onnxruntime), and on the OpenCL device into
outputs poisoned with NaN; odd sizes, strides 1 and 2, asymmetric pads, dilations, groups
(depthwise too), the pools' ceil mode and count_include_pad. Then the operators' numpy
references against brute-force loops, a small video model (Conv3d + BatchNorm + ReLU +
MaxPool3d + GlobalAveragePool + Gemm) end to end, 3-d ConvTranspose (as a ``conv3d`` of the
input spread with zeros: strides, pads, output_padding, groups, dilations, output_shape and
auto_pad), and what stays refused.

Tolerance: max |out - ref| / max |ref| under 1e-5 (float32 both); inputs random, never zero."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402
from test_onnx_pool_reduce import nonzero, ort_run, rel_err  # noqa: E402
from test_onnx_resize import _poisoned_run  # noqa: E402
from test_onnx_shape_ops import TOL, check_everywhere, floats, model_of, n  # noqa: E402

from tensorsched.frontend import OnnxImportError, UnsupportedOperatorError, from_onnx, to_onnx  # noqa: E402
from tensorsched.graph import Graph, build, run_reference  # noqa: E402
from tensorsched.ops.conv3d import conv3d_ref  # noqa: E402
from tensorsched.ops.pool import MODES, pool2d_ref, pool_nd_ref  # noqa: E402

RNG = np.random.default_rng(31)


def conv_model(x_shape, w_shape, bias=True, **attrs):
    """``tanh(x) - 0.25`` into a Conv with a random weight (and bias)."""
    w = nonzero(RNG, w_shape)
    inits = [floats("quarter", 0.25), floats("w", w)]
    ins = ["s", "w"]
    if bias:
        inits.append(floats("b", nonzero(RNG, (w_shape[0],))))
        ins.append("b")
    nodes = [n("Tanh", ["x"], ["t"]), n("Sub", ["t", "quarter"], ["s"]),
             n("Conv", ins, ["y"], "conv", **attrs)]  # fmt: skip
    return model_of(nodes, x_shape, inits=inits)


def pool_model(op, x_shape, **attrs):
    nodes = [n("Tanh", ["x"], ["t"]), n("Sub", ["t", "quarter"], ["s"]),
             n(op, ["s"], ["y"], "pool", **attrs)]  # fmt: skip
    return model_of(nodes, x_shape, inits=[floats("quarter", 0.25)])


def on_device(model, x):
    """The model built for the OpenCL device, its buffers poisoned, against onnxruntime."""
    ref = ort_run(model, {"x": x})[0]
    try:
        net = build(from_onnx(model))
    except Exception as exc:  # noqa: BLE001  (no OpenCL device here)
        pytest.skip(f"no OpenCL device: {exc}")
    out = _poisoned_run(net, x)
    assert not np.isnan(out).any()
    assert out.shape == ref.shape
    assert rel_err(out, ref) < TOL


# (name, x shape, weight shape, attributes)
CONVS = [
    ("3x3x3-pad1", (1, 3, 5, 7, 6), (4, 3, 3, 3, 3), {"pads": [1] * 6}),
    ("stride2-odd", (2, 2, 7, 9, 5), (5, 2, 3, 3, 3), {"strides": [2, 2, 2], "pads": [1] * 6}),
    ("asymmetric-pads", (1, 3, 5, 6, 7), (3, 3, 2, 3, 2),
     {"pads": [0, 1, 2, 1, 0, 1], "strides": [1, 2, 1]}),
    ("dilated", (1, 2, 7, 8, 9), (3, 2, 2, 3, 3), {"dilations": [2, 1, 3], "pads": [1, 2, 0, 1, 2, 3]}),
    ("groups", (1, 6, 4, 5, 7), (4, 3, 3, 1, 3), {"group": 2, "pads": [1, 0, 1, 1, 0, 1]}),
    ("depthwise", (1, 4, 5, 7, 6), (8, 1, 3, 3, 3), {"group": 4, "strides": [1, 2, 2], "pads": [1] * 6}),
    ("r2plus1d-temporal", (1, 4, 7, 5, 5), (6, 4, 3, 1, 1), {"pads": [1, 0, 0, 1, 0, 0]}),
    ("r3d-stem", (1, 3, 5, 13, 11), (8, 3, 3, 7, 7), {"strides": [1, 2, 2], "pads": [1, 3, 3, 1, 3, 3]}),
    ("same-upper", (1, 2, 5, 6, 7), (3, 2, 3, 3, 2), {"auto_pad": "SAME_UPPER", "strides": [2, 2, 1]}),
]  # fmt: skip


@pytest.mark.parametrize("case", CONVS, ids=[c[0] for c in CONVS])
def test_conv3d_matches_onnxruntime(case):
    _, xs, ws, attrs = case
    model = conv_model(xs, ws, bias=case[0] != "dilated", **attrs)
    g = check_everywhere(model, nonzero(RNG, xs))
    assert "conv3d" in [nd.op for nd in g.topo_nodes()]


@pytest.mark.parametrize("case", CONVS[:6], ids=[c[0] for c in CONVS[:6]])
def test_conv3d_on_the_device(case):
    _, xs, ws, attrs = case
    on_device(conv_model(xs, ws, **attrs), nonzero(RNG, xs))


# (op, x shape, attributes)
POOLS = [
    ("MaxPool", (1, 3, 5, 7, 6), {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]}),
    ("MaxPool", (2, 2, 5, 9, 7), {"kernel_shape": [3, 3, 3], "strides": [2, 2, 2],
                                  "pads": [1, 1, 1, 1, 1, 1]}),
    ("MaxPool", (1, 2, 5, 7, 8), {"kernel_shape": [1, 3, 3], "strides": [1, 2, 2],
                                  "pads": [0, 1, 1, 0, 1, 1], "ceil_mode": 1}),
    ("MaxPool", (1, 2, 6, 7, 5), {"kernel_shape": [2, 3, 2], "strides": [2, 2, 2],
                                  "pads": [0, 1, 0, 1, 0, 1], "ceil_mode": 1}),
    ("AveragePool", (1, 3, 5, 7, 6), {"kernel_shape": [3, 3, 3], "strides": [1, 1, 1],
                                      "pads": [1, 1, 1, 1, 1, 1]}),
    ("AveragePool", (1, 3, 5, 7, 6), {"kernel_shape": [3, 2, 3], "strides": [2, 1, 2],
                                      "pads": [1, 0, 1, 0, 1, 2], "count_include_pad": 1}),
    ("AveragePool", (1, 2, 7, 6, 9), {"kernel_shape": [2, 3, 3], "strides": [2, 2, 2],
                                      "pads": [1, 1, 0, 0, 1, 1], "ceil_mode": 1}),
    ("AveragePool", (1, 2, 5, 6, 7), {"kernel_shape": [3, 3, 2], "strides": [2, 2, 2],
                                      "pads": [1, 1, 0, 1, 1, 1], "ceil_mode": 1,
                                      "count_include_pad": 1}),
    ("AveragePool", (1, 2, 5, 6, 7), {"kernel_shape": [2, 2, 2], "auto_pad": "SAME_LOWER"}),
]  # fmt: skip
POOL_IDS = [f"{c[0]}-{i}" for i, c in enumerate(POOLS)]


@pytest.mark.parametrize("case", POOLS, ids=POOL_IDS)
def test_pool3d_matches_onnxruntime(case):
    op, xs, attrs = case
    g = check_everywhere(pool_model(op, xs, **attrs), nonzero(RNG, xs))
    assert [nd.op for nd in g.topo_nodes()][-1] in ("max_pool3d", "avg_pool3d")


@pytest.mark.parametrize("case", POOLS, ids=POOL_IDS)
def test_pool3d_on_the_device(case):
    op, xs, attrs = case
    on_device(pool_model(op, xs, **attrs), nonzero(RNG, xs))


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pools_over_ncdhw(op):
    xs = (2, 3, 3, 5, 4)
    check_everywhere(pool_model(op, xs), nonzero(RNG, xs))
    on_device(pool_model(op, xs), nonzero(RNG, xs))


def test_one_and_two_d_paths_are_unchanged():
    """A 1-d and a 2-d Conv and MaxPool still become conv2d / max_pool2d nodes."""
    g1 = from_onnx(conv_model((1, 2, 9), (3, 2, 3), pads=[1, 1]))
    g2 = from_onnx(pool_model("MaxPool", (1, 2, 6, 7), kernel_shape=[2, 2]))
    assert "conv2d" in g1.op_counts() and "max_pool2d" in g2.op_counts()


# ---- the numpy references against loops


def test_conv3d_ref_against_loops():
    x = nonzero(RNG, (1, 4, 4, 5, 3)).astype(np.float64)
    w = nonzero(RNG, (6, 2, 2, 3, 2)).astype(np.float64)
    strides, pads, dil, groups = (1, 2, 1), (1, 0, 1, 0, 2, 1), (2, 1, 1), 2
    got = conv3d_ref(x, w, strides, pads, dil, groups)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 0), (0, 2), (1, 1)))
    want = np.zeros(got.shape)
    for co, od, oh, ow in np.ndindex(*got.shape[1:]):
        g = co // 3
        for ci, a, b, c in np.ndindex(2, 2, 3, 2):
            want[0, co, od, oh, ow] += (
                xp[0, g * 2 + ci, od + a * 2, oh * 2 + b, ow + c] * w[co, ci, a, b, c]
            )
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_pool_nd_ref_is_pool2d_ref_on_two_axes(mode):
    x = nonzero(RNG, (2, 3, 7, 8))
    for kernel, strides, pads in (((3, 2), (2, 2), (1, 0, 1, 1)), ((2, 3), (2, 3), (0, 1, 1, 2))):
        np.testing.assert_array_equal(
            pool_nd_ref(x, kernel, strides, pads, mode), pool2d_ref(x, kernel, strides, pads, mode)
        )


# ---- a video model, built with onnx.helper


def video_model():
    """Conv3d (stride 1x2x2, bias) + BatchNorm + ReLU + MaxPool3d + Conv3d + ReLU +
    GlobalAveragePool + Flatten + Gemm: r3d_18's shape in miniature."""
    c = 8
    inits = [
        floats("w1", nonzero(RNG, (c, 3, 3, 5, 5)) * 0.2),
        floats("b1", nonzero(RNG, (c,))),
        floats("gamma", RNG.uniform(0.5, 1.5, c)),
        floats("beta", nonzero(RNG, (c,))),
        floats("mean", nonzero(RNG, (c,)) * 0.1),
        floats("var", RNG.uniform(0.5, 2.0, c)),
        floats("w2", nonzero(RNG, (c, c, 3, 3, 3)) * 0.1),
        floats("fc", nonzero(RNG, (5, c))),
        floats("fcb", nonzero(RNG, (5,))),
    ]
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], "stem", strides=[1, 2, 2], pads=[1, 2, 2, 1, 2, 2]),
        n("BatchNormalization", ["c1", "gamma", "beta", "mean", "var"], ["bn"], "bn"),
        n("Relu", ["bn"], ["r1"], "relu1"),
        n("MaxPool", ["r1"], ["p1"], "pool", kernel_shape=[1, 3, 3], strides=[1, 2, 2],
          pads=[0, 1, 1, 0, 1, 1]),
        n("Conv", ["p1", "w2"], ["c2"], "conv2", pads=[1] * 6),
        n("Relu", ["c2"], ["r2"], "relu2"),
        n("GlobalAveragePool", ["r2"], ["gap"], "gap"),
        n("Flatten", ["gap"], ["flat"], "flatten"),
        n("Gemm", ["flat", "fc", "fcb"], ["y"], "fc", transB=1),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes, "video", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 5, 17, 15])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_video_model_end_to_end():
    model, x = video_model(), nonzero(RNG, (2, 3, 5, 17, 15))
    g = check_everywhere(model, x)
    on_device(model, x)
    net = build(g, target="python")
    ops = [layer.node.op + "+" + "+".join(s[0] for s in layer.node.epilogue)
           for layer in net.layers]  # fmt: skip
    # the batch norm folded into the stem, bias and ReLU fused into both convs
    assert ops[:3] == ["conv3d+bias+relu", "max_pool3d+", "conv3d+relu"], ops


def test_graph_api_round_trip():
    """A graph built by the API, exported and read back, gives the same numbers."""
    g = Graph("api")
    x = g.input("x", (1, 2, 5, 6, 7))
    w = g.constant("w", nonzero(RNG, (4, 1, 2, 3, 3)))
    y = g.conv3d(x, w, strides=(2, 1, 2), pads=(1, 1, 0, 0, 1, 1), groups=2, dilations=(1, 2, 1))
    y = g.avg_pool3d(y, (2, 2, 2), 1, (0, 1, 1, 1, 0, 1), count_include_pad=True, ceil_mode=True)
    g.output(y)
    xv = nonzero(RNG, (1, 2, 5, 6, 7))
    ref = run_reference(g, xv)[y]
    back = from_onnx(to_onnx(g))
    assert rel_err(run_reference(back, xv)[back.outputs[0]], ref) < TOL
    assert rel_err(ort_run(to_onnx(g), {"x": xv})[0], ref) < TOL


# ---- 3-d ConvTranspose: the input spread with zeros, padded, into a conv3d


def conv_transpose_model(x_shape, w_shape, bias=True, **attrs):
    """``tanh(x) - 0.25`` into a ConvTranspose with a random (C_in, C_out / group, kD, kH, kW)
    weight (and bias)."""
    w = nonzero(RNG, w_shape)
    inits = [floats("quarter", 0.25), floats("w", w)]
    ins = ["s", "w"]
    if bias:
        inits.append(floats("b", nonzero(RNG, (w_shape[1] * attrs.get("group", 1),))))
        ins.append("b")
    nodes = [n("Tanh", ["x"], ["t"]), n("Sub", ["t", "quarter"], ["s"]),
             n("ConvTranspose", ins, ["y"], "up", **attrs)]  # fmt: skip
    return model_of(nodes, x_shape, inits=inits)


# (name, x shape, weight shape, attributes)
TRANSPOSES = [
    ("stride1-pad1", (1, 3, 3, 5, 4), (3, 2, 3, 3, 3), {"pads": [1] * 6}),
    ("unet-up2", (2, 4, 3, 5, 3), (4, 3, 2, 2, 2), {"strides": [2, 2, 2]}),
    ("stride2-odd-pads", (1, 2, 3, 4, 5), (2, 3, 3, 3, 3),
     {"strides": [2, 2, 2], "pads": [1, 0, 1, 0, 1, 2], "output_padding": [1, 0, 1]}),
    ("stride212", (1, 3, 3, 5, 3), (3, 2, 3, 2, 3),
     {"strides": [2, 1, 2], "pads": [1, 0, 1, 1, 1, 0], "output_padding": [1, 0, 0]}),
    ("groups", (1, 4, 3, 4, 5), (4, 3, 3, 1, 2), {"group": 2, "strides": [1, 2, 1],
                                                  "pads": [0, 0, 1, 1, 0, 0]}),
    ("dilated", (1, 2, 3, 5, 4), (2, 3, 2, 3, 2),
     {"dilations": [2, 1, 3], "strides": [2, 1, 2], "pads": [1, 1, 2, 0, 1, 1],
      "output_padding": [1, 0, 1]}),
    ("output-shape", (1, 2, 3, 4, 3), (2, 3, 3, 3, 2),
     {"strides": [2, 2, 2], "output_shape": [7, 9, 7]}),
    ("output-shape-crop", (1, 2, 3, 4, 3), (2, 2, 2, 3, 2),
     {"strides": [2, 1, 2], "output_shape": [5, 5, 4]}),
    ("same-upper", (1, 2, 3, 5, 4), (2, 3, 3, 3, 2), {"strides": [2, 2, 1], "auto_pad": "SAME_UPPER"}),
    ("same-lower", (1, 2, 3, 5, 4), (2, 3, 3, 2, 3), {"strides": [2, 1, 2], "auto_pad": "SAME_LOWER"}),
    ("valid", (1, 2, 3, 4, 5), (2, 2, 2, 3, 3), {"strides": [1, 2, 2], "auto_pad": "VALID"}),
]  # fmt: skip


@pytest.mark.parametrize("case", TRANSPOSES, ids=[c[0] for c in TRANSPOSES])
def test_conv_transpose_3d_matches_onnxruntime(case):
    """Replaces the old refusal test: a 3-d ConvTranspose is read, as a conv3d node."""
    name, xs, ws, attrs = case
    model = conv_transpose_model(xs, ws, bias=name != "dilated", **attrs)
    g = check_everywhere(model, nonzero(RNG, xs), targets=("numpy", "python"))
    assert "conv3d" in g.op_counts() and "conv2d" not in g.op_counts()


@pytest.mark.parametrize("case", TRANSPOSES[1:8], ids=[c[0] for c in TRANSPOSES[1:8]])
def test_conv_transpose_3d_on_the_device(case):
    _, xs, ws, attrs = case
    on_device(conv_transpose_model(xs, ws, **attrs), nonzero(RNG, xs))


def test_conv_transpose_1d_and_2d_stay_conv2d():
    """A 1-d and a 2-d ConvTranspose are still read as conv2d nodes."""
    for xs, ws in (((1, 2, 7), (2, 3, 3)), ((1, 2, 5, 6), (2, 3, 3, 3))):
        nodes = [n("ConvTranspose", ["x", "w"], ["y"], "up", strides=[2] * (len(xs) - 2))]
        model = model_of(nodes, xs, inits=[floats("w", nonzero(RNG, ws))])
        g = check_everywhere(model, nonzero(RNG, xs), targets=("numpy",))
        assert "conv2d" in g.op_counts() and "conv3d" not in g.op_counts()


@pytest.mark.parametrize(
    "attrs, match",
    [({"output_padding": [2, 0, 0], "strides": [2, 2, 2]}, "output_padding"),
     ({"pads": [1, 1, 1, 1, 1]}, "pads"),
     ({"output_shape": [5, 6]}, "output_shape"),
     ({"kernel_shape": [3, 3, 2]}, "kernel_shape")],
)  # fmt: skip
def test_conv_transpose_3d_bad_attributes(attrs, match):
    nodes = [n("ConvTranspose", ["x", "w"], ["y"], "up", **attrs)]
    model = model_of(nodes, (1, 2, 4, 5, 6), inits=[floats("w", nonzero(RNG, (2, 3, 3, 3, 3)))])
    with pytest.raises(OnnxImportError, match=match):
        from_onnx(model)


# ---- what stays refused


def test_conv_transpose_4d_is_refused():
    w = nonzero(RNG, (2, 3, 2, 2, 2, 2))
    nodes = [n("ConvTranspose", ["x", "w"], ["y"], "node")]
    model = model_of(nodes, (1, 2, 3, 3, 3, 3), inits=[floats("w", w)])
    with pytest.raises(UnsupportedOperatorError, match=r"not 4-d or more"):
        from_onnx(model)


def test_dilated_3d_pool_is_refused():
    model = pool_model("MaxPool", (1, 2, 5, 6, 7), kernel_shape=[2, 2, 2], dilations=[2, 2, 2])
    with pytest.raises(UnsupportedOperatorError, match=r"without dilation"):
        from_onnx(model)
