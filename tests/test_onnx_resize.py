"""Resize as a ``resize`` node (``ops.resize``): modes linear (bilinear over H and W, linear
over one axis), cubic (bicubic over H and W, cubic over one axis; both exclude_outside values,
two cubic_coeff_a values) and nearest (any factor, up or down, every nearest_mode), under each
coordinate transformation mode, given by scales or sizes (opset 13 and opset 18's axes), at
odd sizes; against onnxruntime through the numpy reference, the python target and
``to_onnx``, and on the OpenCL device into outputs poisoned with NaN. Then the operator's
own numpy reference against a brute-force one (cubic's: the four integers nearest each
coordinate), and the refusals.

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


CUBIC_COORDS = [*COORDS, "half_pixel_symmetric", "tf_half_pixel_for_nn"]
CUBIC = [
    ("up-scales", [1, 1, 2, 3], None),
    ("down-scales", [1, 1, 0.6, 0.5], None),
    ("up-sizes", None, [1, 3, 11, 9]),
    ("down-sizes", None, [1, 3, 3, 4]),
    ("mixed-sizes", None, [1, 3, 2, 13]),
    ("one-axis", [1, 1, 1, 2.5], None),
]


@pytest.mark.parametrize("exclude, a", [(0, -0.75), (1, -0.75), (0, -0.5), (1, -0.5)])
@pytest.mark.parametrize("coord", CUBIC_COORDS)
@pytest.mark.parametrize("case", CUBIC, ids=[c[0] for c in CUBIC])
def test_cubic_resize(case, coord, exclude, a):
    _, scales, sizes = case
    if coord == "align_corners" and scales is not None and case[0] != "up-scales":
        scales, sizes = None, [1, 3, 9, 4]  # as in test_linear_resize
    opset = 19 if coord == "half_pixel_symmetric" else 13
    model = resize_model(scales, sizes, mode="cubic", coordinate_transformation_mode=coord,
                         exclude_outside=exclude, cubic_coeff_a=a, opset=opset)  # fmt: skip
    g = check_everywhere(model, nonzero(RNG, X))
    assert [nd.op for nd in g.topo_nodes()][-1] == "resize"


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
    _check_on_the_device(model)


@pytest.mark.parametrize(
    "coord, scales, sizes, exclude, a",
    [("half_pixel", [1, 1, 2, 2], None, 0, -0.75),
     ("half_pixel", None, [1, 3, 3, 11], 1, -0.5),
     ("align_corners", None, [1, 3, 4, 13], 1, -0.75),
     ("pytorch_half_pixel", [1, 1, 0.6, 1.4], None, 0, -0.5),
     ("asymmetric", None, [1, 3, 9, 5], 1, -0.75),
     ("half_pixel_symmetric", None, [1, 3, 2, 9], 0, -0.75),
     ("tf_half_pixel_for_nn", [1, 1, 1, 0.5], None, 1, -0.5)],
    ids=["bicubic-up", "exclude-mixed", "align-corners", "pytorch-mixed", "asymmetric-sizes",
         "symmetric", "tf-half-pixel-one-axis"],
)  # fmt: skip
def test_cubic_resize_on_the_device(coord, scales, sizes, exclude, a):
    opset = 19 if coord == "half_pixel_symmetric" else 13
    model = resize_model(scales, sizes, mode="cubic", coordinate_transformation_mode=coord,
                         exclude_outside=exclude, cubic_coeff_a=a, opset=opset)  # fmt: skip
    _check_on_the_device(model)


def _check_on_the_device(model):
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


def _keys(d, a):
    """The cubic convolution kernel at distance ``d``, piece by piece."""
    d = abs(d)
    if d <= 1:
        return (a + 2) * d**3 - (a + 3) * d**2 + 1
    return a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a if d < 2 else 0.0


def _brute_cubic(x, sizes, scales, coord, a, exclude):
    """One output at a time: per axis the four integers nearest the exact coordinate (the
    smaller on a tie), edge-clamped or, with ``exclude``, dropped and the rest renormalised."""
    maps = [axis_map(i, o, s, coord) for i, o, s in zip(x.shape, sizes, scales)]
    out = np.zeros(sizes)
    for idx in np.ndindex(*sizes):
        taps = [[]]
        for o, m in zip(idx, maps):
            xc = Fraction(m.num * o + m.off, m.den)
            ks = sorted(sorted(range(int(np.floor(xc)) - 3, int(np.floor(xc)) + 4),
                               key=lambda k: (abs(xc - k), k))[:4])  # fmt: skip
            ws = [_keys(float(xc - k), a) for k in ks]
            if exclude:
                ws = [w if 0 <= k < m.n_in else 0.0 for k, w in zip(ks, ws)]
                ws = [w / sum(ws) for w in ws]
            axis = [(min(max(k, 0), m.n_in - 1), w) for k, w in zip(ks, ws)]
            taps = [t + [kw] for t in taps for kw in axis]
        out[idx] = sum(x[tuple(i for i, _ in t)] * np.prod([w for _, w in t]) for t in taps)
    return out


@pytest.mark.parametrize("exclude, a", [(0, -0.75), (1, -0.75), (0, -0.5), (1, -0.5)])
@pytest.mark.parametrize("coord", CUBIC_COORDS)
def test_cubic_reference_against_brute_force(coord, exclude, a):
    x = nonzero(RNG, (2, 5, 4)).astype(np.float64)
    sizes = (2, 3, 7)
    scales = [Fraction(1), Fraction(3, 5), scale_fraction(1.75)]
    got = resize_ref(x, sizes, scales, "cubic", coord, "floor", a, bool(exclude))
    want = _brute_cubic(x, sizes, scales, coord, a, exclude)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_scale_fraction_is_the_simplest():
    assert scale_fraction(0.6) == Fraction(3, 5)
    assert scale_fraction(2.5) == Fraction(5, 2)
    assert scale_fraction(1 / 3) == Fraction(1, 3)
    assert scale_fraction(2.0) == 2


REFUSED = [
    ("cubic-three-axes", resize_model([1, 2, 2, 2], mode="cubic"), "cubic resize of 3 axes"),
    ("cubic-antialias", resize_model([1, 1, 0.6, 0.5], mode="cubic", antialias=1, opset=18),
     "antialias"),
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
