"""ONNX operators read as compositions of the graph's own: PRelu, Elu, Selu, Softplus,
Softsign, Sum / Mean / Max / Min of computed tensors, GlobalMaxPool, InstanceNormalization
and nearest Resize by whole factors (the index map checked under each coordinate and
rounding mode, as torch's exporter writes ``interpolate(scale_factor=2)``). Small models built
with ``onnx.helper``, each against onnxruntime through the numpy reference, the python target
and ``to_onnx``, one of them on the OpenCL device; then the refusals, each naming its node.

Tolerance: max |out - ref| / max |ref| under 1e-5 against onnxruntime (float32 both); inputs
and weights are random and never zero; sizes are odd."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from test_onnx_pool_reduce import nonzero, rel_err  # noqa: E402
from test_onnx_shape_ops import TOL, check_everywhere, floats, ints, model_of, n  # noqa: E402

from tensorsched.frontend import OnnxImportError, UnsupportedOperatorError, from_onnx  # noqa: E402
from tensorsched.graph import build, run_reference  # noqa: E402

X = (1, 3, 5, 7)
RNG = np.random.default_rng(11)


def relu_then(op, extra_inputs=(), inits=(), x_shape=X, opset=13, **attrs):
    """A Relu's and a Tanh's outputs (computed tensors, of both signs after the Tanh's shift)
    into ``op``."""
    nodes = [
        n("Tanh", ["x"], ["t"]),
        n("Sub", ["t", "half"], ["s"]),
        n(op, ["s", *extra_inputs], ["y"], **attrs),
    ]
    return model_of(nodes, x_shape, inits=[floats("half", 0.25), *inits], opset=opset)


@pytest.mark.parametrize(
    "op, attrs",
    [
        ("Elu", {}),
        ("Elu", {"alpha": 0.4}),
        ("Selu", {}),
        ("Selu", {"alpha": 1.2, "gamma": 0.9}),
        ("Softplus", {}),
        ("Softsign", {}),
        ("GlobalMaxPool", {}),
    ],
    ids=["elu", "elu-alpha", "selu", "selu-attrs", "softplus", "softsign", "global-max-pool"],
)
def test_one_input_operators(op, attrs):
    check_everywhere(relu_then(op, **attrs), nonzero(RNG, X) * 3)


def test_softplus_does_not_overflow():
    model = model_of([n("Mul", ["x", "big"], ["b"]), n("Softplus", ["b"], ["y"])], X,
                     inits=[floats("big", 60.0)])  # fmt: skip
    check_everywhere(model, nonzero(RNG, X) * 3)  # up to +-540: exp(540) is inf in float32


@pytest.mark.parametrize(
    "slope_shape", [(3, 1, 1), (1,), (7,), (1, 3, 5, 7)], ids=["per-channel", "one", "w", "full"]
)
def test_prelu_broadcasts_its_slope(slope_shape):
    slope = floats("slope", nonzero(RNG, slope_shape))
    check_everywhere(relu_then("PRelu", ["slope"], [slope]), nonzero(RNG, X))


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
def test_many_input_operators(op):
    """Three inputs, one of them broadcast (a per-channel constant), one a second branch."""
    nodes = [
        n("Tanh", ["x"], ["t"]),
        n("Sigmoid", ["x"], ["u"]),
        n(op, ["t", "c", "u"], ["y"]),
    ]
    model = model_of(nodes, X, inits=[floats("c", nonzero(RNG, (3, 1, 1)) * 0.5)])
    check_everywhere(model, nonzero(RNG, X))
    one = model_of([n("Tanh", ["x"], ["t"]), n(op, ["t"], ["y"])], X)
    check_everywhere(one, nonzero(RNG, X))


def test_instance_normalization():
    scale, bias = floats("sc", nonzero(RNG, (3,))), floats("b", nonzero(RNG, (3,)))
    model = relu_then("InstanceNormalization", ["sc", "b"], [scale, bias], epsilon=1e-3)
    check_everywhere(model, nonzero(RNG, X))


def resize_model(scales=None, sizes=None, x_shape=X, **attrs):
    inputs, inits = ["s", "", "sc" if scales is not None else ""], []
    if scales is not None:
        inits.append(floats("sc", scales))
    if sizes is not None:
        inputs.append("sz")
        inits.append(ints("sz", sizes))
    return relu_then("Resize", inputs[1:], inits, x_shape=x_shape, **attrs)


RESIZES = [
    ("torch-scale-2", [1, 1, 2, 2], None, {"coordinate_transformation_mode": "asymmetric",
                                            "nearest_mode": "floor"}),
    ("default-modes", [1, 1, 2, 3], None, {}),
    ("pytorch-half-pixel", [1, 1, 3, 2], None, {"coordinate_transformation_mode":
                                                "pytorch_half_pixel"}),
    ("sizes", None, [1, 3, 10, 21], {"coordinate_transformation_mode": "asymmetric",
                                     "nearest_mode": "floor"}),
    ("channels-too", [1, 2, 1, 1], None, {}),
    ("identity", [1, 1, 1, 1], None, {}),
    # refused before the resize operator; now read
    ("fraction", [1, 1, 1.5, 2], None, {}),
    ("down", [1, 1, 0.5, 1], None, {}),
    ("half-pixel-floor", [1, 1, 2, 2], None, {"nearest_mode": "floor"}),
]  # fmt: skip


@pytest.mark.parametrize("case", RESIZES, ids=[c[0] for c in RESIZES])
def test_nearest_resize_by_whole_factors(case):
    _, scales, sizes, attrs = case
    check_everywhere(resize_model(scales, sizes, mode="nearest", **attrs), nonzero(RNG, X))


def test_the_new_operators_run_on_the_device():
    """PRelu, Elu, Max, InstanceNormalization and a Resize in one model, built for the OpenCL
    device, into poisoned outputs by the executor, against onnxruntime."""
    from test_onnx_pool_reduce import ort_run

    nodes = [
        n("PRelu", ["x", "slope"], ["p"]),
        n("Elu", ["p"], ["e"], alpha=0.7),
        n("Max", ["e", "x"], ["m"]),
        n("InstanceNormalization", ["m", "sc", "b"], ["i"]),
        n("Resize", ["i", "", "rs"], ["y"], mode="nearest",
          coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    ]  # fmt: skip
    inits = [
        floats("slope", nonzero(RNG, (3, 1, 1)) * 0.3),
        floats("sc", nonzero(RNG, (3,))),
        floats("b", nonzero(RNG, (3,))),
        floats("rs", [1, 1, 2, 2]),
    ]
    model = model_of(nodes, X, inits=inits)
    x = nonzero(RNG, X)
    ref = ort_run(model, {"x": x})[0]
    g = from_onnx(model)
    np.testing.assert_array_less(rel_err(run_reference(g, x)["y"], ref), TOL)
    try:
        net = build(g)
    except Exception as exc:  # noqa: BLE001  (no OpenCL device here)
        pytest.skip(f"no OpenCL device: {exc}")
    assert rel_err(np.asarray(net(x)), ref) < TOL


REFUSED = [
    ("crop-and-resize", resize_model([1, 1, 2, 2], mode="linear",
                                     coordinate_transformation_mode="tf_crop_and_resize"),
     UnsupportedOperatorError, "tf_crop_and_resize"),
    ("both", resize_model([1, 1, 2, 2], [1, 3, 10, 14]), OnnxImportError, "scales or sizes"),
    ("scales-rank", resize_model([2, 2]), OnnxImportError, "must be 4 positive"),
    ("slope-too-big", relu_then("PRelu", ["sl"], [floats("sl", np.ones((2, 3, 5, 7)))]),
     OnnxImportError, "does not broadcast"),
    ("instnorm-scale", relu_then("InstanceNormalization", ["sc", "b"],
                                 [floats("sc", np.ones(4)), floats("b", np.ones(3))]),
     OnnxImportError, "must have shape (3,)"),
]  # fmt: skip


@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_what_is_not_read_is_refused_naming_the_node(case):
    _, model, error, message = case
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        from_onnx(model)
    assert "node" in str(info.value)


@pytest.mark.parametrize(
    "size, attrs",
    [(5, {}), (3, {"alpha": 0.01, "beta": 0.5, "bias": 2.0}), (1, {}), (9, {})],
    ids=["alexnet", "attrs", "one", "wider-than-channels"],
)
def test_lrn_across_channels(size, attrs):
    x_shape = (1, 3, 5, 3) if size > 7 else (1, 7, 5, 3)
    check_everywhere(relu_then("LRN", x_shape=x_shape, size=size, **attrs), nonzero(RNG, x_shape))


def test_lrn_of_an_even_size_follows_the_onnx_formula():
    """onnxruntime takes odd sizes only; ONNX's formula has floor((size - 1) / 2) channels
    before each and ceil((size - 1) / 2) after."""
    x_shape, size, alpha, beta, bias = (1, 6, 3, 5), 4, 0.3, 0.8, 1.5
    g = from_onnx(relu_then("LRN", x_shape=x_shape, size=size, alpha=alpha, beta=beta, bias=bias))
    x = nonzero(RNG, x_shape)
    s = (np.tanh(x.astype(np.float64)) - 0.25) ** 2
    total = np.zeros_like(s)
    for c in range(x_shape[1]):
        total[:, c] = s[:, max(0, c - 1) : min(x_shape[1], c + 3)].sum(axis=1)
    ref = (np.tanh(x.astype(np.float64)) - 0.25) / (bias + alpha / size * total) ** beta
    assert rel_err(run_reference(g, x)["y"], ref) < TOL
    assert rel_err(build(g, target="python")(x), ref) < TOL


@pytest.mark.parametrize(
    "op, attrs, x_shape",
    [
        ("DepthToSpace", {"blocksize": 2, "mode": "DCR"}, (1, 12, 3, 5)),
        ("DepthToSpace", {"blocksize": 2, "mode": "CRD"}, (1, 12, 3, 5)),
        ("DepthToSpace", {"blocksize": 3}, (2, 9, 2, 3)),
        ("SpaceToDepth", {"blocksize": 2}, (1, 3, 6, 10)),
    ],
    ids=["d2s-dcr", "d2s-crd", "d2s-3", "s2d"],
)
def test_depth_and_space(op, attrs, x_shape):
    check_everywhere(relu_then(op, x_shape=x_shape, **attrs), nonzero(RNG, x_shape))


@pytest.mark.parametrize("reps", [[1, 2, 1, 3], [2, 1, 1, 1], [1, 1, 1, 1]], ids=str)
def test_tile_of_a_computed_tensor(reps):
    check_everywhere(relu_then("Tile", ["r"], [ints("r", reps)]), nonzero(RNG, X))


def test_space_and_tile_refusals_name_the_node():
    for model, message in [
        (relu_then("DepthToSpace", x_shape=(1, 6, 3, 5), blocksize=2), "does not divide"),
        (relu_then("SpaceToDepth", blocksize=2), "does not divide"),
        (relu_then("Tile", ["r"], [ints("r", [1, 2])]), "must be 4 positive"),
        (relu_then("LRN", size=0), "size 0 must be"),
    ]:
        with pytest.raises(OnnxImportError, match=message) as info:
            from_onnx(model)
        assert "node" in str(info.value)


def conv_model(op, w_shape, x_shape=X, bias=True, **attrs):
    inits = [floats("w", nonzero(RNG, w_shape) * 0.3)]
    inputs = ["s", "w"]
    if bias:
        c_out = w_shape[0] if op == "Conv" else w_shape[1] * attrs.get("group", 1)
        inits.append(floats("b", nonzero(RNG, (c_out,))))
        inputs.append("b")
    nodes = [n("Tanh", ["x"], ["t"]), n("Sub", ["t", "half"], ["s"]), n(op, inputs, ["y"], **attrs)]
    return model_of(nodes, x_shape, inits=[floats("half", 0.25), *inits])


@pytest.mark.parametrize(
    "w_shape, attrs",
    [
        ((4, 3, 3, 3), {"dilations": [2, 2], "pads": [2, 2, 2, 2]}),
        ((5, 3, 3, 2), {"dilations": [1, 3], "strides": [2, 1]}),
        ((6, 1, 3, 3), {"dilations": [2, 1], "group": 3, "pads": [2, 1, 2, 1]}),
    ],
    ids=["d2", "d1x3-strided", "grouped"],
)
def test_dilated_conv(w_shape, attrs):
    check_everywhere(conv_model("Conv", w_shape, **attrs), nonzero(RNG, X))


CONV_T = [
    ("decoder", (3, 4, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}),
    ("gan-k4s2p1", (3, 2, 4, 4), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("stride-1", (3, 5, 3, 2), {}),
    ("groups", (3, 2, 3, 3), {"group": 3, "strides": [1, 2], "pads": [0, 1, 2, 0]}),
    ("dilated", (3, 2, 3, 3), {"dilations": [2, 1], "strides": [2, 3]}),
    ("crop", (3, 2, 3, 3), {"pads": [3, 0, 2, 3]}),
    ("valid-no-bias", (3, 2, 2, 2), {"strides": [2, 2], "auto_pad": "VALID"}),
]  # fmt: skip


@pytest.mark.parametrize("case", CONV_T, ids=[c[0] for c in CONV_T])
def test_conv_transpose(case):
    what, w_shape, attrs = case
    model = conv_model("ConvTranspose", w_shape, bias=what != "valid-no-bias", **attrs)
    check_everywhere(model, nonzero(RNG, X))


def test_conv_transpose_on_the_device():
    from test_onnx_pool_reduce import ort_run

    model = conv_model("ConvTranspose", (3, 4, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1],
                       output_padding=[1, 1])  # fmt: skip
    x = nonzero(RNG, X)
    ref = ort_run(model, {"x": x})[0]
    try:
        net = build(from_onnx(model))
    except Exception as exc:  # noqa: BLE001  (no OpenCL device here)
        pytest.skip(f"no OpenCL device: {exc}")
    assert rel_err(np.asarray(net(x)), ref) < TOL


@pytest.mark.parametrize(
    "attrs",
    [{"output_shape": [6, 8]}, {"output_shape": [10, 14], "strides": [2, 2]},
     {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, {"auto_pad": "SAME_LOWER", "strides": [2, 3]},
     {"auto_pad": "SAME_UPPER"}],
    ids=["output-shape", "output-shape-strided", "same-upper", "same-lower", "same-stride-1"],
)  # fmt: skip
def test_conv_transpose_output_shape_and_same(attrs):
    """The pads follow from ONNX's total padding (output_shape, or SAME's input * stride)."""
    check_everywhere(conv_model("ConvTranspose", (3, 2, 3, 3), **attrs), nonzero(RNG, X))


def test_conv_transpose_refusals_name_the_node():
    for model, error, message in [
        (conv_model("ConvTranspose", (3, 2, 3, 3), output_shape=[0, 13]),
         OnnxImportError, "output_shape"),
        (conv_model("ConvTranspose", (3, 2, 3, 3), auto_pad="SAME_MIDDLE"),
         OnnxImportError, "auto_pad"),
        (conv_model("ConvTranspose", (4, 2, 3, 3)), OnnxImportError, "do not fit"),
        (conv_model("ConvTranspose", (3, 2, 3, 3), strides=[2, 2], output_padding=[2, 0]),
         OnnxImportError, "below the strides"),
        (conv_model("Conv", (4, 3, 3, 3), dilations=[0, 1]), OnnxImportError, "dilations"),
    ]:  # fmt: skip
        with pytest.raises(error, match=message) as info:
            from_onnx(model)
        assert "node" in str(info.value)


@pytest.mark.parametrize(
    "attrs, c_shape",
    [({"transA": 1}, (4,)), ({"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, (7, 4)),
     ({}, (7, 1))],
    ids=["transA", "all-attributes", "column-bias"],
)  # fmt: skip
def test_gemm_transposed_a_and_a_matrix_bias(attrs, c_shape):
    a_shape = (3, 7) if attrs.get("transA") else (7, 3)
    b_shape = (4, 3) if attrs.get("transB") else (3, 4)
    nodes = [n("Tanh", ["x"], ["t"]), n("Gemm", ["t", "B", "C"], ["y"], **attrs)]
    inits = [floats("B", nonzero(RNG, b_shape)), floats("C", nonzero(RNG, c_shape))]
    check_everywhere(model_of(nodes, a_shape, inits=inits), nonzero(RNG, a_shape))


L1 = (2, 3, 11)
ONE_D = [
    ("conv", "Conv", (4, 3, 3), {"strides": [2], "pads": [1, 2], "dilations": [2]}),
    ("conv-grouped-same", "Conv", (6, 1, 4), {"group": 3, "auto_pad": "SAME_UPPER"}),
    ("conv-transpose", "ConvTranspose", (3, 2, 3), {"strides": [2], "pads": [1, 0],
                                                     "output_padding": [1]}),
    ("max-pool", "MaxPool", None, {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ("avg-pool-ceil", "AveragePool", None, {"kernel_shape": [2], "strides": [2],
                                            "ceil_mode": 1}),
]  # fmt: skip


@pytest.mark.parametrize("case", ONE_D, ids=[c[0] for c in ONE_D])
def test_one_dimensional_windows(case):
    _, op, w_shape, attrs = case
    if w_shape is None:
        model = relu_then(op, x_shape=L1, **attrs)
    else:
        model = conv_model(op, w_shape, x_shape=L1, **attrs)
    g = check_everywhere(model, nonzero(RNG, L1))
    assert len(g.tensors[g.outputs[0]].shape) == 3


@pytest.mark.parametrize(
    "op, attrs, opset",
    [
        ("Mish", {}, 18),
        ("Gelu", {}, 20),
        ("Gelu", {"approximate": "tanh"}, 20),
        ("Celu", {"alpha": 0.6}, 13),
        ("LogSoftmax", {}, 13),
        ("LogSoftmax", {"axis": 1}, 13),
    ],
    ids=["mish", "gelu", "gelu-tanh", "celu", "log-softmax", "log-softmax-axis1"],
)
def test_activations(op, attrs, opset):
    check_everywhere(relu_then(op, opset=opset, **attrs), nonzero(RNG, X) * 3)


@pytest.mark.parametrize("op", ["ReduceMin", "ReduceL1", "ReduceL2", "ReduceSumSquare"])
@pytest.mark.parametrize("axes, keepdims", [([1, 3], 1), ([-1], 0), ([], 1)], ids=str)
def test_composed_reductions(op, axes, keepdims):
    inputs, inits = [], []
    if axes:
        inputs, inits = ["ax"], [ints("ax", axes)]
    opset = 18  # axes as an input for every reduction
    model = relu_then(op, inputs, inits, opset=opset, keepdims=keepdims)
    check_everywhere(model, nonzero(RNG, X))


@pytest.mark.parametrize(
    "op, attrs",
    [
        ("LpNormalization", {}),
        ("LpNormalization", {"p": 1, "axis": 1}),
        ("MeanVarianceNormalization", {}),
        ("MeanVarianceNormalization", {"axes": [2, 3]}),
    ],
    ids=["l2-last", "l1-channels", "mvn", "mvn-hw"],
)
def test_normalizations(op, attrs):
    check_everywhere(relu_then(op, **attrs), nonzero(RNG, X))
