"""What the ONNX backend node test cases (``tests/test_onnx.py``) showed tensorsched
misreading or refusing, each on random data: SpaceToDepth's CRD mode (opset 28; it was read as
DCR), LpNormalization of an all-zero slice (0, not NaN, since opset 22), a Clip whose ``min``
is above its ``max``, Gather by indices of two dims, Resize's ``axes`` and
``keep_aspect_ratio_policy`` (opset 18), LayerNormalization's ``Mean`` and ``InvStdDev``
outputs, and a Dropout whose ``training_mode`` is false or whose ratio is 0; each against
onnxruntime through the numpy reference, the python target and ``to_onnx`` (and the formulas
of the ONNX spec where they say more), one model on the OpenCL device; then the refusals
that remain, each naming the node or the input, the attribute or element type, and what to do.

Tolerance: max |out - ref| / max |ref| under 1e-5 against onnxruntime (float32 both); inputs
and weights are random and never zero."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from test_onnx_pool_reduce import nonzero, ort_run, rel_err  # noqa: E402
from test_onnx_shape_ops import TOL, check_everywhere, floats, ints, model_of, n  # noqa: E402

from tensorsched.frontend import OnnxImportError, UnsupportedOperatorError, from_onnx  # noqa: E402
from tensorsched.graph import build, run_reference  # noqa: E402

X = (1, 3, 5, 7)
RNG = np.random.default_rng(29)


def shifted(op, inputs=(), inits=(), x_shape=X, outputs=("y",), opset=13, **attrs):
    """``tanh(x) - 0.25`` (a computed tensor of both signs) into ``op``."""
    nodes = [
        n("Tanh", ["x"], ["tanh"]),
        n("Sub", ["tanh", "quarter"], ["s"]),
        n(op, ["s", *inputs], list(outputs), "node", **attrs),
    ]
    return model_of(nodes, x_shape, [o for o in outputs if o], [floats("quarter", 0.25), *inits],
                    opset)  # fmt: skip


# ---- SpaceToDepth's modes


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_modes_follow_the_spec(mode):
    """Opset 28's ``mode``: the channel of block row ``i``, column ``j`` of input channel ``c``
    is ``(i * b + j) * C + c`` in DCR and ``(c * b + i) * b + j`` in CRD."""
    shape, b = (2, 3, 4, 6), 2
    x = nonzero(RNG, shape)
    model = shifted("SpaceToDepth", x_shape=shape, opset=28, blocksize=b, mode=mode)
    g = check_everywhere(model, x)
    s = np.tanh(x.astype(np.float64)) - 0.25
    nb, c, h, w = shape
    want = np.empty((nb, c * b * b, h // b, w // b))
    for ch in range(c):
        for i in range(b):
            for j in range(b):
                out = (i * b + j) * c + ch if mode == "DCR" else (ch * b + i) * b + j
                want[:, out] = s[:, ch, i::b, j::b]
    assert rel_err(run_reference(g, x)["y"], want) < TOL


# ---- LpNormalization of zeros


@pytest.mark.parametrize("p, axis", [(2, 0), (1, -1), (2, 1)], ids=["l2-axis0", "l1-last", "l2-c"])
def test_lp_normalization_of_an_all_zero_slice_is_zero(p, axis):
    """Slices of zeros along ``axis`` (the input times a mask of zero rows) normalise to 0, as
    opset 22 defines it; the others as before."""
    shape = (4, 3, 5)
    mask = np.ones(shape, np.float32)
    mask[tuple(slice(0, 1) if d != axis % 3 else slice(None) for d in range(3))] = 0
    nodes = [n("Mul", ["x", "mask"], ["m"]), n("LpNormalization", ["m"], ["y"], "node", p=p,
                                               axis=axis)]  # fmt: skip
    model = model_of(nodes, shape, inits=[floats("mask", mask)], opset=22)
    x = nonzero(RNG, shape)
    g = check_everywhere(model, x)
    y = run_reference(g, x)["y"]
    assert np.all(np.isfinite(y)) and np.all(y[mask == 0] == 0)


# ---- Clip, Gather, Dropout


def test_clip_with_min_above_max_gives_max_everywhere():
    model = shifted("Clip", ["lo", "hi"], [floats("lo", 0.5), floats("hi", -0.1)])
    g = check_everywhere(model, nonzero(RNG, X))
    assert np.all(run_reference(g, nonzero(RNG, X))["y"] == np.float32(-0.1))


@pytest.mark.parametrize(
    "indices, axis", [([[0, 2, 1], [2, 2, 0]], 1), ([[-1], [3], [0]], -1), ([[[4]]], 2)],
    ids=["2x3-channels", "3x1-negative", "1x1x1"],
)  # fmt: skip
def test_gather_by_indices_of_two_or_more_dims(indices, axis):
    g = check_everywhere(shifted("Gather", ["i"], [ints("i", indices)], axis=axis), nonzero(RNG, X))
    want = X[: axis % 4] + np.shape(indices) + X[axis % 4 + 1 :]
    assert g.tensors["y"].shape == want


@pytest.mark.parametrize(
    "inputs, inits",
    [(["r", "t"], [floats("r", 0.3), ("t", False)]), (["r", "t"], [floats("r", 0.0), ("t", True)]),
     (["", "t"], [("t", False)])],
    ids=["training-false", "ratio-0", "default-ratio"],
)  # fmt: skip
def test_dropout_that_drops_nothing_is_the_identity(inputs, inits):
    tensors = [helper.make_tensor(t[0], TensorProto.BOOL, [], [t[1]]) if isinstance(t, tuple)
               else t for t in inits]  # fmt: skip
    check_everywhere(shifted("Dropout", inputs, tensors), nonzero(RNG, X))


# ---- Resize's axes and keep_aspect_ratio_policy


RESIZES = [
    ("axes-scales", {"axes": [3, 2]}, [3.0, 2.0], None),
    ("negative-axes-sizes", {"axes": [-1]}, None, [14]),
    ("not-larger", {"axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"}, None, [15, 28]),
    ("not-smaller", {"axes": [2, 3], "keep_aspect_ratio_policy": "not_smaller"}, None, [10, 21]),
    ("stretch", {"keep_aspect_ratio_policy": "stretch"}, None, [2, 3, 10, 14]),
    ("channels-by-axes", {"axes": [1], "coordinate_transformation_mode": "asymmetric",
                          "nearest_mode": "floor"}, [2.0], None),
]  # fmt: skip


@pytest.mark.parametrize("case", RESIZES, ids=[c[0] for c in RESIZES])
def test_nearest_resize_of_some_axes_and_aspect_ratio_policies(case):
    _, attrs, scales, sizes = case
    inputs, inits = ["", "sc" if scales else ""], []
    if scales:
        inits.append(floats("sc", scales))
    else:
        inputs.append("sz")
        inits.append(ints("sz", sizes))
    model = shifted("Resize", inputs, inits, opset=18, mode="nearest", **attrs)
    check_everywhere(model, nonzero(RNG, X))


# ---- LayerNormalization's other outputs


@pytest.mark.parametrize(
    "axis, outputs, bias",
    [(1, ("y", "mean", "inv"), True), (-1, ("y", "mean", "inv"), False),
     (2, ("y", "", "inv"), True), (0, ("y", "mean"), True)],
    ids=["axis1", "last-no-bias", "inv-only", "mean-only"],
)  # fmt: skip
def test_layer_normalization_mean_and_inv_std_dev_outputs(axis, outputs, bias):
    """``Mean`` and ``InvStdDev`` keep the normalised axes as size 1; either may be left
    out."""
    shape = X[axis % 4 :]
    inits = [floats(t, nonzero(RNG, shape)) for t in ("g", "b")[: 1 + bias]]
    model = shifted("LayerNormalization", [t.name for t in inits], inits, outputs=outputs,
                    opset=17, axis=axis, epsilon=1e-3)  # fmt: skip
    g = check_everywhere(model, nonzero(RNG, X))
    kept = X[: axis % 4] + (1,) * (4 - axis % 4)
    assert [g.tensors[t].shape for t in g.outputs] == [X] + [kept] * (len(g.outputs) - 1)


def test_the_lifted_operators_run_on_the_device():
    """SpaceToDepth CRD, Gather of 2-d indices, LpNormalization with a zero slice, a Resize
    of some axes and LayerNormalization's three outputs in one model, built for the OpenCL
    device, against onnxruntime."""
    mask = np.ones((1, 12, 2, 3), np.float32)
    mask[:, 5] = 0  # channel 5's norms along H are 0
    nodes = [
        n("Tanh", ["x"], ["t"]),
        n("SpaceToDepth", ["t"], ["d"], blocksize=2, mode="CRD"),
        n("Gather", ["d", "i"], ["gd"], axis=1),
        n("Reshape", ["gd", "shape"], ["r"]),
        n("Mul", ["r", "mask"], ["m"]),
        n("LpNormalization", ["m"], ["l"], axis=2),
        n("Resize", ["l", "", "sc"], ["z"], mode="nearest", axes=[3]),
        n("LayerNormalization", ["z", "g"], ["y", "mean", "inv"], axis=2),
    ]
    inits = [ints("i", [[3, 0, 7, 11, 5, 2], [1, 4, 6, 8, 9, 10]]), ints("shape", [1, 12, 2, 3]),
             floats("mask", mask), floats("sc", [2.0]),
             floats("g", nonzero(RNG, (2, 6)))]  # fmt: skip
    model = model_of(nodes, (1, 3, 4, 6), outputs=("y", "mean", "inv"), inits=inits, opset=28)
    x = nonzero(RNG, (1, 3, 4, 6))
    refs = ort_run(model, {"x": x})
    g = from_onnx(model)
    for t, ref in zip(g.outputs, refs):
        assert rel_err(run_reference(g, x)[t], ref) < TOL
    try:
        net = build(g)
    except Exception as exc:  # noqa: BLE001  (no OpenCL device here)
        pytest.skip(f"no OpenCL device: {exc}")
    for out, ref in zip(net(x), refs):
        assert rel_err(np.asarray(out), ref) < TOL


# ---- what stays refused, and how it reads


def typed_input(elem_type, shape=(2, 3)):
    graph = helper.make_graph(
        [n("Relu", ["x"], ["y"])], "m", [helper.make_tensor_value_info("x", elem_type, shape)],
        [helper.make_tensor_value_info("y", elem_type, None)],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def sequence_input():
    model = typed_input(TensorProto.FLOAT)
    seq = helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, None)
    model.graph.input[0].CopyFrom(seq)
    return model


REFUSED = [
    # float16, float64, int32, int64 and bool inputs are read since (tests/test_onnx_dtypes.py)
    ("bfloat16-input", lambda: typed_input(TensorProto.BFLOAT16), OnnxImportError,
     r"input 'x': element type 16 \(BFLOAT16\); tensorsched's inputs are float32, float16, "
     r"float64, int32, int64 and bool \(convert"),
    ("int8-input", lambda: typed_input(TensorProto.INT8), OnnxImportError,
     r"input 'x': element type 3 \(INT8\); tensorsched's inputs are float32, .* and bool$"),
    ("int64-relu", lambda: typed_input(TensorProto.INT64), UnsupportedOperatorError,
     r"\(Relu\): reads 'x', an integer tensor \(a model input\); tensorsched holds it as "),
    ("empty-input", lambda: typed_input(TensorProto.FLOAT, (2, 0, 4)), OnnxImportError,
     r"input 'x' of shape \(2, 0, 4\): dim 1 is 0; tensorsched holds no empty tensor"),
    ("unknown-dim", lambda: typed_input(TensorProto.FLOAT, (2, None)), OnnxImportError,
     r"input 'x': dim 1 has no size; give its shape: from_onnx\(model, shapes="),
    ("no-shape", lambda: typed_input(TensorProto.FLOAT, None), OnnxImportError,
     r"input 'x' has no shape \(not even a rank\); give its shape"),
    ("sequence-input", sequence_input, OnnxImportError,
     r"input 'x' is of sequence, not a tensor; tensorsched reads tensor inputs only"),
    ("int8-weight", lambda: model_of([n("Add", ["x", "w"], ["y"])], X, inits=[
        helper.make_tensor("w", TensorProto.INT8, [1], [3])]), OnnxImportError,
     r"initializer 'w': element type 3 \(INT8\) is not supported; tensorsched reads float32, "),
    ("constant-output", lambda: model_of([n("Shape", ["x"], ["y"], "node")], X), OnnxImportError,
     r"output 'y' is a constant \(int64 of shape \(4,\)\) computed at import"),
    # a folded infinity is a value since (tests/test_onnx_masks.py: attention masks); nan is not
    ("folded-nan", lambda: model_of([n("Div", ["zero", "zero"], ["q"], "node"),
                                     n("Add", ["x", "q"], ["y"])], X,
                                    inits=[floats("zero", 0.0)]),
     OnnxImportError, r"node 'node' \(Div\): output 'q' holds nan; tensorsched's constants"),
    ("max-pool-indices", lambda: shifted("MaxPool", outputs=("y", "idx"), kernel_shape=[2, 2]),
     UnsupportedOperatorError, r"node 'node' \(MaxPool\): its output 1 'idx' is not supported; "
     r"tensorsched computes only the first output, 'y'"),
    # 3-d pools are read since (tests/test_conv3d.py); a 4-d window stays refused
    ("4d-pool", lambda: shifted("MaxPool", x_shape=(1, 2, 3, 4, 5, 3), kernel_shape=[2, 2, 2, 2]),
     UnsupportedOperatorError, r"node 'node' \(MaxPool\): kernel_shape \[2, 2, 2, 2\] must be two "
     r"or three ints; tensorsched pools 1-d, 2-d and 3-d windows"),
    ("dilated-pool", lambda: shifted("AveragePool", kernel_shape=[2, 2], dilations=[2, 2]),
     UnsupportedOperatorError, r"node 'node' \(AveragePool\): dilations \[2, 2\]; tensorsched "
     "pools windows without dilation"),
    ("training-dropout", lambda: shifted("Dropout", ["r", "t"], [
        floats("r", 0.5), helper.make_tensor("t", TensorProto.BOOL, [], [True])]),
     UnsupportedOperatorError, r"node 'node' \(Dropout\): training_mode is true and ratio 0.5"),
    ("antialias", lambda: shifted("Resize", ["", "sc"], [floats("sc", [1, 1, 0.5, 0.5])],
                                  opset=18, mode="linear", antialias=1), UnsupportedOperatorError,
     r"node 'node' \(Resize\): Resize antialias 1"),
    ("aspect-policy", lambda: shifted("Resize", ["", "", "sz"], [ints("sz", [1, 3, 10, 14])],
                                      opset=18, keep_aspect_ratio_policy="fit"), OnnxImportError,
     r"node 'node' \(Resize\): keep_aspect_ratio_policy 'fit' must be stretch"),
    ("layer-norm-4-outputs", lambda: shifted("LayerNormalization", ["g"], [floats("g", np.ones(7))],
                                             outputs=("y", "m", "v", "w"), opset=17),
     OnnxImportError, r"node 'node' \(LayerNormalization\): has 4 outputs"),
    ("cast-to-bfloat16", lambda: shifted("Cast", to=TensorProto.BFLOAT16), UnsupportedOperatorError,
     r"node 'node' \(Cast\): a cast of the computed tensor 's' to element type 16 \(BFLOAT16\)"),
]  # fmt: skip


@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_what_stays_refused_says_what_and_where(case):
    _, model, error, message = case
    with pytest.raises(error, match=message):
        from_onnx(model())
