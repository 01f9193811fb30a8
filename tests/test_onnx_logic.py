"""Comparisons, logic, Where, Mod, Sign, IsNaN / IsInf and Cast to and from bool and int on
computed tensors: the graph holds booleans as float32 masks (1.0 true, 0.0 false) and integers
as float32 integer values. Each model against onnxruntime on random data (ties for the
comparisons, negative values for Mod and Sign) at odd, broadcast shapes: the numpy reference,
the python target, the export read back by onnxruntime, and the OpenCL device into outputs
poisoned with NaN."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from test_onnx_pool_reduce import nonzero, ort_run, rel_err  # noqa: E402
from test_onnx_resize import _poisoned_run  # noqa: E402
from test_onnx_shape_ops import TOL, check_everywhere, floats, ints, model_of, n  # noqa: E402

from tensorsched.frontend import OnnxImportError, UnsupportedOperatorError, from_onnx  # noqa: E402
from tensorsched.graph import build, run_reference  # noqa: E402

RNG = np.random.default_rng(23)
X = (2, 3, 5, 7)


def tied(shape):
    """Random halves and whole numbers in -3 .. 3, none zero: many ties between two draws."""
    v = RNG.integers(1, 7, size=shape) / 2.0 * RNG.choice([-1.0, 1.0], size=shape)
    return v.astype(np.float32)


def on_device(model, x):
    """The model on the OpenCL device, into NaN-poisoned outputs, against onnxruntime."""
    ref = ort_run(model, {"x": x})[0]
    try:
        net = build(from_onnx(model))
    except Exception as exc:  # noqa: BLE001  (no OpenCL device here)
        pytest.skip(f"no OpenCL device: {exc}")
    out = _poisoned_run(net, x)
    assert out.shape == ref.shape
    assert rel_err(out, ref) < TOL


def everywhere(model, x, opset=13):
    check_everywhere(model, x)
    on_device(model, x)


def to_float(t, out):
    return n("Cast", [t], [out], to=TensorProto.FLOAT)


COMPARES = ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]


@pytest.mark.parametrize("op", COMPARES)
def test_comparisons_broadcast_with_ties(op):
    """x (2, 3, 5, 7) against a computed (5, 1) and a constant (7,): each mask cast to float
    and multiplied in, as models mask values."""
    other = tied((5, 1))
    nodes = [
        n("Slice", ["x", "s0", "e0", "a0"], ["col"]),  # x[0, 0, :, 0:1]: computed (5, 1)
        n("Reshape", ["col", "shape"], ["c"]),
        n("Add", ["c", "o"], ["cc"]),
        n(op, ["x", "cc"], ["m1"]),
        n(op, ["k", "x"], ["m2"]),
        to_float("m1", "f1"),
        to_float("m2", "f2"),
        n("Mul", ["f1", "x"], ["p"]),
        n("Add", ["p", "f2"], ["y"]),
    ]
    inits = [ints("s0", [0, 0, 0]), ints("e0", [1, 1, 1]), ints("a0", [0, 1, 3]),
             ints("shape", [5, 1]), floats("o", other), floats("k", tied((7,)))]  # fmt: skip
    everywhere(model_of(nodes, X, inits=inits), tied(X))


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logic_of_masks(op):
    nodes = [
        n("Greater", ["x", "t"], ["a"]),
        n("Less", ["x", "u"], ["b"]),
        n(op, ["a", "b"], ["c"]),
        n("Not", ["c"], ["d"]),
        n(op, ["d", "k"], ["e"]),
        to_float("e", "y"),
    ]
    inits = [floats("t", tied((3, 1, 7))), floats("u", tied((5, 1))),
             helper.make_tensor("k", TensorProto.BOOL, [7], RNG.random(7) < 0.5)]  # fmt: skip
    everywhere(model_of(nodes, X, inits=inits), tied(X))


def test_where_clamp_and_constant_condition():
    """``Where(Less(x, a), a, x)`` (a clamp) and a Where of a constant condition."""
    nodes = [
        n("Less", ["x", "lo"], ["below"]),
        n("Where", ["below", "lo", "x"], ["c"]),
        n("Where", ["k", "c", "neg"], ["w"]),
        n("Tanh", ["x"], ["t"]),
        n("Where", ["below", "t", "w"], ["y"]),
    ]
    inits = [floats("lo", tied((1, 5, 1))), floats("neg", -tied((7,)) * 3),
             helper.make_tensor("k", TensorProto.BOOL, [5, 7], RNG.random(35) < 0.5)]  # fmt: skip
    everywhere(model_of(nodes, X, inits=inits), tied(X))


@pytest.mark.parametrize("fmod, opset", [(1, 13), (0, 28)])
def test_mod_of_floats(fmod, opset):
    """C's fmod (the dividend's sign) and, from opset 28, numpy's mod (the divisor's) of
    negative and positive values, by a computed and a constant divisor."""
    x = nonzero(RNG, X) * 4
    nodes = [
        n("Tanh", ["x"], ["t"]),
        n("Add", ["t", "half"], ["d"]),  # a computed divisor, never 0 here
        n("Mod", ["x", "d"], ["m1"], fmod=fmod),
        n("Mod", ["m1", "k"], ["m2"], fmod=fmod),
        n("Add", ["m2", "m1"], ["y"]),
    ]
    inits = [floats("half", np.full((7,), 1.5, np.float32)),
             floats("k", np.array([[0.7], [-1.3], [2.1], [-0.4], [1.1]], np.float32))]  # fmt: skip
    everywhere(model_of(nodes, X, inits=inits, opset=opset), x)


def test_mod_fmod_0_of_floats_needs_opset_28():
    model = model_of([n("Mod", ["x", "x"], ["y"], "bad", fmod=0)], X, opset=13)
    with pytest.raises(OnnxImportError, match=r"node 'bad' \(Mod\): .*fmod=1 before opset 28"):
        from_onnx(model)


def test_sign_isnan_isinf():
    """Sign of negative, positive and zero values; IsNaN and IsInf (each direction) of an
    input holding NaN and both infinities."""
    x = tied(X)
    x.flat[::11] = 0.0
    x.flat[1::13] = np.nan
    x.flat[2::17] = np.inf
    x.flat[3::19] = -np.inf
    nodes = [
        n("Sign", ["x"], ["s"]),
        n("IsNaN", ["x"], ["a"]),
        n("IsInf", ["x"], ["b"]),
        n("IsInf", ["x"], ["c"], detect_negative=0),
        n("IsInf", ["x"], ["d"], detect_positive=0),
        *(to_float(t, t + "f") for t in "abcd"),
        n("Where", ["a", "zero", "s"], ["s2"]),  # NaN's sign is NaN: masked out
        n("Mul", ["bf", "two"], ["b2"]),
        n("Mul", ["cf", "four"], ["c4"]),
        n("Mul", ["df", "eight"], ["d8"]),
        n("Sum", ["s2", "af", "b2", "c4", "d8"], ["y"]),
    ]
    inits = [floats("zero", 0.0), floats("two", 2.0), floats("four", 4.0), floats("eight", 8.0)]
    everywhere(model_of(nodes, X, inits=inits, opset=20), x)


def test_cast_to_bool_and_int_and_back():
    """Cast to bool (``x != 0``) and back; to int64 (toward zero), Mod of the integers, Equal
    to an int constant, back to float."""
    x = nonzero(RNG, X) * 5
    x.flat[::7] = 0.0
    nodes = [
        n("Cast", ["x"], ["b"], to=TensorProto.BOOL),
        n("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
        n("Cast", ["x"], ["i"], to=TensorProto.INT64),
        n("Mod", ["i", "three"], ["r"]),  # integer Mod: the divisor's sign
        n("Equal", ["r", "one"], ["e"]),
        n("Cast", ["e"], ["ef"], to=TensorProto.FLOAT),
        n("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
        n("Cast", ["i"], ["if"], to=TensorProto.FLOAT),
        n("Sum", ["bf", "ef", "rf", "if"], ["y"]),
    ]
    inits = [ints("three", [3]), ints("one", 1)]
    everywhere(model_of(nodes, X, inits=inits), x)


def test_attention_mask_model_end_to_end():
    """A small attention block: scores of q and k, a padding mask from the token ids
    (``Where(Equal(ids, 0), -1e9, scores)`` through Unsqueeze), softmax, times v; built with
    onnx.helper and run everywhere."""
    B, S, D = 2, 6, 8
    ids = RNG.integers(1, 9, size=(B, S)).astype(np.float32)
    ids[0, 4:] = 0  # padding
    ids[1, 5:] = 0
    x = np.concatenate([nonzero(RNG, (B, S, D)), ids[:, :, None]], axis=2)  # ids in channel D
    nodes = [
        n("Slice", ["x", "z", "d", "two"], ["h"]),  # (B, S, D)
        n("Slice", ["x", "d", "d1", "two"], ["idc"]),  # (B, S, 1)
        n("Reshape", ["idc", "bs"], ["tok"]),  # (B, S)
        n("MatMul", ["h", "wq"], ["q"]),
        n("MatMul", ["h", "wk"], ["k"]),
        n("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        n("MatMul", ["q", "kt"], ["s"]),
        n("Mul", ["s", "scale"], ["ss"]),
        n("Equal", ["tok", "zero"], ["pad"]),
        n("Unsqueeze", ["pad", "one"], ["padm"]),  # (B, 1, S)
        n("Where", ["padm", "big", "ss"], ["ms"]),
        n("Softmax", ["ms"], ["p"], axis=-1),
        n("MatMul", ["p", "h"], ["y"]),
    ]
    inits = [ints("z", [0]), ints("d", [D]), ints("d1", [D + 1]), ints("two", [2]),
             ints("bs", [B, S]), ints("one", [1]), floats("wq", nonzero(RNG, (D, D)) * 0.3),
             floats("wk", nonzero(RNG, (D, D)) * 0.3), floats("scale", 1 / np.sqrt(D)),
             floats("zero", 0.0), floats("big", -1e9)]  # fmt: skip
    model = model_of(nodes, (B, S, D + 1), inits=inits)
    g = from_onnx(model)
    assert {"equal", "where"} <= {nd.op for nd in g.topo_nodes()}
    everywhere(model, x)
    p = run_reference(g, x, keep=True)["p"]
    assert np.all(p[0, :, 4:] == 0) and np.all(p[1, :, 5:] == 0)  # padding gets no weight


# ---- what stays refused


REFUSED = [
    # boolean and integer outputs are read since (tests/test_onnx_dtypes.py), where declared so
    ("bool-output", lambda: model_of([n("Less", ["x", "x"], ["y"], "bad")], X),
     OnnxImportError, r"node 'bad' \(Less\): its output 'y' is declared 1 \(FLOAT\), but the "
     "model computes a boolean tensor there"),
    ("int-arithmetic", lambda: model_of([
        n("Cast", ["x"], ["i"], "c", to=TensorProto.INT64), n("Add", ["i", "i"], ["j"], "bad"),
        n("Cast", ["j"], ["y"], to=TensorProto.FLOAT)], X),
     UnsupportedOperatorError, r"node 'bad' \(Add\): reads 'i', an integer tensor computed "
     r"from the model's inputs \(by node 'c' \(Cast\)\)"),
    ("bool-arithmetic", lambda: model_of([
        n("Less", ["x", "x"], ["b"], "c"), n("Relu", ["b"], ["y"], "bad")], X),
     UnsupportedOperatorError, r"node 'bad' \(Relu\): reads 'b', a boolean tensor"),
    ("cast-int8", lambda: model_of([n("Cast", ["x"], ["y"], "bad", to=TensorProto.INT8)], X),
     UnsupportedOperatorError, r"node 'bad' \(Cast\): a cast of the computed tensor 'x' to "
     r"element type 3 \(INT8\)"),
]  # fmt: skip


@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_what_stays_refused(case):
    _, model, error, message = case
    with pytest.raises(error, match=message):
        from_onnx(model())
