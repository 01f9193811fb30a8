"""TVM's programs reach the compute language through ``tvm.te`` and ``tvm.tir``: after ``tvm.``
is replaced by ``ts.`` the same names work (``ts.te.compute``, ``ts.tir.indexmod``), and the
scalar functions TVM has beside them (floor, ceil, round, trunc, cos, sin, abs, floordiv,
floormod) compute what numpy computes."""

import math

import numpy as np
import pytest

import tensorsched as ts
from tensorsched.runtime.numerics import random_array


def test_te_and_tir_are_importable_namespaces():
    from tensorsched import te, tir

    assert te.compute is ts.compute and te.create_schedule is ts.create_schedule
    assert tir.indexmod is ts.indexmod and tir.floordiv is ts.indexdiv
    assert tir.Select is ts.if_then_else
    import tensorsched.te as te2

    assert te2 is te


def _run(fn, x, target, dtype="float32"):
    n = x.shape[0]
    A = ts.te.placeholder((n,), name="A", dtype=dtype)
    B = ts.te.compute((n,), lambda i: fn(A[i]), name="B")
    s = ts.te.create_schedule(B.op)
    if target == "opencl":
        xo, xi = s[B].split(B.op.axis[0], factor=16)
        s[B].bind(xo, ts.thread_axis("blockIdx.x"))
        s[B].bind(xi, ts.thread_axis("threadIdx.x"))
    out = np.full(x.shape, np.nan if dtype.startswith("float") else -7, dtype)
    ts.build(s, [A, B], target=target)(x, out)
    return out


CASES = [
    (ts.floor, np.floor),
    (ts.ceil, np.ceil),
    (ts.trunc, np.trunc),
    (ts.round, lambda v: np.copysign(np.floor(np.abs(v) + 0.5), v)),  # halves away from 0
    (ts.cos, np.cos),
    (ts.sin, np.sin),
    (ts.abs, np.abs),
]


@pytest.mark.parametrize("target", ["python", pytest.param("opencl", marks=pytest.mark.opencl)])
@pytest.mark.parametrize("fn,ref", CASES, ids=[f.__name__ for f, _ in CASES])
def test_float_functions_match_numpy(fn, ref, target):
    rng = np.random.default_rng(0)
    x = (random_array((37,), "float32", rng) * 9).astype("float32")
    x[:4] = [2.5, -2.5, 0.5, -1.5]  # halves: round() goes away from zero
    np.testing.assert_allclose(_run(fn, x, target), ref(x), rtol=1e-6, atol=1e-6)


_erf = np.vectorize(math.erf)
# TVM's other float intrinsics: (function, numpy's, the interval random inputs are drawn from,
# inputs outside its domain and what C gives there)
MORE = [
    ("exp2", np.exp2, (-20, 20), [2000.0], [np.inf]),
    ("exp10", lambda v: 10.0**v, (-6, 6), [-2000.0], [0.0]),
    ("log2", np.log2, (0.01, 100), [0.0, -1.0], [-np.inf, np.nan]),
    ("log10", np.log10, (0.01, 100), [-3.0], [np.nan]),
    ("log1p", np.log1p, (-0.9, 10), [-1.0, -2.0], [-np.inf, np.nan]),
    ("rsqrt", lambda v: 1 / np.sqrt(v), (0.01, 100), [0.0, -4.0], [np.inf, np.nan]),
    ("tan", np.tan, (-1.5, 1.5), [], []),
    ("sinh", np.sinh, (-10, 10), [-1000.0, 1000.0], [-np.inf, np.inf]),
    ("cosh", np.cosh, (-10, 10), [-1000.0], [np.inf]),
    ("asin", np.arcsin, (-1, 1), [2.0], [np.nan]),
    ("acos", np.arccos, (-1, 1), [-2.0], [np.nan]),
    ("atan", np.arctan, (-50, 50), [], []),
    ("asinh", np.arcsinh, (-50, 50), [], []),
    ("acosh", np.arccosh, (1, 50), [0.5], [np.nan]),
    ("atanh", np.arctanh, (-0.99, 0.99), [1.0, -1.0, 3.0], [np.inf, -np.inf, np.nan]),
    ("erf", _erf, (-4, 4), [], []),
]


@pytest.mark.parametrize("target", ["python", pytest.param("opencl", marks=pytest.mark.opencl)])
@pytest.mark.parametrize("name,ref,interval,edge,at_edge", MORE, ids=[m[0] for m in MORE])
def test_more_float_intrinsics_match_numpy(name, ref, interval, edge, at_edge, target):
    fn = getattr(ts.te, name)
    assert fn is getattr(ts, name) is getattr(ts.tir, name)
    x = np.random.default_rng(1).uniform(*interval, 37).astype("float32")
    x[: len(edge)] = edge
    out = _run(fn, x, target)
    np.testing.assert_allclose(
        out[len(edge) :], ref(x[len(edge) :].astype(np.float64)), rtol=2e-5, atol=1e-6
    )
    np.testing.assert_array_equal(out[: len(edge)], np.asarray(at_edge, "float32"))


@pytest.mark.parametrize("target", ["python", pytest.param("opencl", marks=pytest.mark.opencl)])
def test_integer_abs_floordiv_floormod(target):
    x = np.arange(-20, 21, dtype="int32")
    np.testing.assert_array_equal(_run(ts.abs, x, target, "int32"), np.abs(x))
    np.testing.assert_array_equal(
        _run(lambda v: ts.tir.floordiv(v, 3), x, target, "int32"), np.floor_divide(x, 3)
    )
    np.testing.assert_array_equal(
        _run(lambda v: ts.tir.floormod(v, 3), x, target, "int32"), np.mod(x, 3)
    )


def test_float_functions_refuse_integers():
    A = ts.placeholder((4,), name="A", dtype="int32")
    with pytest.raises(ts.ComputeError, match="ts.sin needs a float argument"):
        ts.compute((4,), lambda i: ts.sin(A[i]))
    # the rounding functions return an integer unchanged, as TVM's do
    # (test_tir_intrin.py::test_round_intrinsics_on_int; tests/test_tvm_port10.py)
    assert ts.floor(A[0]) == A[0]
