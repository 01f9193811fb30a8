"""Resize as a ``resize`` node (``ops.resize``): modes linear (bilinear over H and W, linear
over one axis) and nearest (any factor, up or down, every nearest_mode), under each
coordinate transformation mode, given by scales or sizes (opset 13 and opset 18's axes), at
odd sizes; against onnxruntime through the numpy reference, the python target and
``to_onnx``, and on the OpenCL device into outputs poisoned with NaN. Then the operator's
own numpy reference against a brute-force one, and the refusals.

Tolerance: max |out - ref| / max |ref| under 1e-5 (float32 both); inputs random, never zero."""

from fractions import Fraction

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from test_onnx_more_ops import resize_model  # noqa: E402
from test_onnx_pool_reduce import nonzero, ort_run, rel_err  # noqa: E402
from test_onnx_shape_ops import TOL, check_everywhere, ints, model_of, n  # noqa: E402

from tensorsched.frontend import UnsupportedOperatorError, from_onnx  # noqa: E402
from tensorsched.graph import build, run_reference  # noqa: E402
from tensorsched.ops.resize import axis_map, resize_ref, scale_fraction  # noqa: E402

X = (1, 3, 5, 7)
RNG = np.random.default_rng(23)
COORDS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]

LINEAR = [
    ("up-scales", [1, 1, 2, 3], None),
    ("down-scales", [1, 1, 0.6, 0.5], None),
    ("fraction-scales", [1, 1, 1.8, 1.4], None),
    ("up-sizes", None, [1, 3, 11, 9]),
    ("down-sizes", None, [1, 3, 3, 4]),
    ("mixed-sizes", None, [1, 3, 2, 13]),
    ("one-axis", [1, 1, 1, 2.5], None),
]


@pytest.mark.parametrize("coord", COORDS)
@pytest.mark.parametrize("case", LINEAR, ids=[c[0] for c in LINEAR])
def test_linear_resize(case, coord):
    _, scales, sizes = case
    if coord == "align_corners" and scales is not None and case[0] != "up-scales":
        scales = None  # align_corners by scales is read where input * scale is whole
        sizes = [1, 3, 9, 4]
    model = resize_model(scales, sizes, mode="linear", coordinate_transformation_mode=coord)
    check_everywhere(model, nonzero(RNG, X))


NEAREST = [
    ("down-2", [1, 1, 0.5, 0.5], None, "asymmetric", "floor"),
    ("fraction", [1, 1, 1.5, 2], None, "half_pixel", "round_prefer_floor"),
    ("down-sizes", None, [1, 3, 3, 4], "half_pixel", "round_prefer_ceil"),
    ("up-sizes-ceil", None, [1, 3, 8, 11], "half_pixel", "ceil"),
    ("half-pixel-floor", [1, 1, 2, 2], None, "half_pixel", "floor"),
    ("align-corners", None, [1, 3, 9, 4], "align_corners", "round_prefer_floor"),
    ("pytorch-down", None, [1, 3, 1, 3], "pytorch_half_pixel", "floor"),
    ("tf-half-pixel", [1, 1, 3, 0.5], None, "tf_half_pixel_for_nn", "round_prefer_ceil"),
    ("asym-ceil", None, [1, 3, 12, 5], "asymmetric", "ceil"),
]  # fmt: skip


@pytest.mark.parametrize("case", NEAREST, ids=[c[0] for c in NEAREST])
def test_nearest_resize_by_any_factor(case):
    _, scales, sizes, coord, rounding = case
    model = resize_model(scales, sizes, mode="nearest", coordinate_transformation_mode=coord,
                         nearest_mode=rounding)  # fmt: skip
    g = check_everywhere(model, nonzero(RNG, X))
    assert [nd.op for nd in g.topo_nodes()][-1] == "resize"


def test_opset_18_axes():
    nodes = [n("Tanh", ["x"], ["t"]),
             n("Resize", ["t", "", "", "sz"], ["y"], mode="linear", axes=[3, 2])]  # fmt: skip
    model = model_of(nodes, X, inits=[ints("sz", [10, 3])], opset=18)
    check_everywhere(model, nonzero(RNG, X))


def _poisoned_run(net, x):
    """The net's output buffers (every one its nodes write) filled with NaN, then a run."""
    import pyopencl as cl

    g, q = net.graph, net.device.run_queue
    for name in {nd.output for nd in g.topo_nodes()}:
        buf = net._bufs.get(name)
        if buf is not None:
            cl.enqueue_fill_buffer(q, buf, np.float32(np.nan), 0, buf.size)
    q.finish()
    return np.asarray(net(x))


@pytest.mark.parametrize(
    "mode, coord, scales, sizes",
    [("linear", "half_pixel", [1, 1, 2, 2], None),
     ("linear", "align_corners", None, [1, 3, 4, 13]),
     ("linear", "pytorch_half_pixel", [1, 1, 0.6, 1.4], None),
     ("linear", "asymmetric", None, [1, 3, 9, 5]),
     ("nearest", "half_pixel", [1, 1, 0.6, 1.5], None),
     ("nearest", "asymmetric", None, [1, 3, 11, 3])],
    ids=["bilinear-up", "align-corners", "pytorch-mixed", "asymmetric-sizes", "nearest-mixed",
         "nearest-sizes"],
)  # fmt: skip
def test_resize_on_the_device(mode, coord, scales, sizes):
    model = resize_model(scales, sizes, mode=mode, coordinate_transformation_mode=coord)
    x = nonzero(RNG, X)
    ref = ort_run(model, {"x": x})[0]
    g = from_onnx(model)
    assert rel_err(run_reference(g, x)["y"], ref) < TOL
    try:
        net = build(g)
    except Exception as exc:  # noqa: BLE001  (no OpenCL device here)
        pytest.skip(f"no OpenCL device: {exc}")
    out = _poisoned_run(net, x)
    assert not np.isnan(out).any()
    assert rel_err(out, ref) < TOL


def _brute(x, sizes, scales, mode, coord, rounding):
    """One output at a time, from the exact coordinate of each axis."""
    maps = [axis_map(i, o, s, coord) for i, o, s in zip(x.shape, sizes, scales)]
    out = np.zeros(sizes)
    for idx in np.ndindex(*sizes):
        taps = [[]]
        for o, m in zip(idx, maps):
            xc = min(max(Fraction(m.num * o + m.off, m.den), Fraction(0)), Fraction(m.n_in - 1))
            if mode == "nearest":
                xr = Fraction(m.num * o + m.off, m.den)
                k = {"floor": int(np.floor(xr)), "ceil": -int(np.floor(-xr))}.get(rounding)
                if k is None:
                    fl = int(np.floor(xr))
                    tie = xr - fl == Fraction(1, 2)
                    up = rounding == "round_prefer_ceil"
                    k = (fl + 1 if up else fl) if tie else int(np.floor(xr + Fraction(1, 2)))
                taps = [t + [(min(max(k, 0), m.n_in - 1), 1.0)] for t in taps]
            else:
                lo = int(np.floor(xc))
                f = float(xc - lo)
                hi = min(lo + 1, m.n_in - 1)
                taps = [t + [(lo, 1 - f)] for t in taps] + [t + [(hi, f)] for t in taps]
        out[idx] = sum(x[tuple(i for i, _ in t)] * np.prod([w for _, w in t]) for t in taps)
    return out


@pytest.mark.parametrize(
    "mode, rounding",
    [
        ("linear", "floor"),
        ("nearest", "round_prefer_floor"),
        ("nearest", "round_prefer_ceil"),
        ("nearest", "ceil"),
    ],
)
@pytest.mark.parametrize("coord", [*COORDS, "half_pixel_symmetric", "tf_half_pixel_for_nn"])
def test_reference_against_brute_force(mode, rounding, coord):
    x = nonzero(RNG, (2, 5, 4)).astype(np.float64)
    sizes = (2, 3, 7)
    scales = [Fraction(1), Fraction(3, 5), scale_fraction(1.75)]
    got = resize_ref(x, sizes, scales, mode, coord, rounding)
    np.testing.assert_allclose(got, _brute(x, sizes, scales, mode, coord, rounding), rtol=1e-12)


def test_scale_fraction_is_the_simplest():
    assert scale_fraction(0.6) == Fraction(3, 5)
    assert scale_fraction(2.5) == Fraction(5, 2)
    assert scale_fraction(1 / 3) == Fraction(1, 3)
    assert scale_fraction(2.0) == 2


REFUSED = [
    ("cubic", resize_model([1, 1, 2, 2], mode="cubic"), "mode 'cubic'"),
    ("crop", resize_model([1, 1, 2, 2], mode="linear",
                          coordinate_transformation_mode="tf_crop_and_resize"),
     "tf_crop_and_resize"),
    ("align-corners-scale", resize_model([1, 1, 0.7, 1], mode="linear",
                                         coordinate_transformation_mode="align_corners"),
     "not whole"),
    ("antialias", resize_model([1, 1, 0.6, 0.5], mode="linear", antialias=1, opset=18),
     "antialias"),
]  # fmt: skip


@pytest.mark.parametrize("case", REFUSED, ids=[c[0] for c in REFUSED])
def test_resize_refusals_name_the_node(case):
    _, model, message = case
    with pytest.raises(UnsupportedOperatorError, match=message) as info:
        from_onnx(model)
    assert "node" in str(info.value)
