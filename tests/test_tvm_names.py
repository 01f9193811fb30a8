"""TVM's programs reach the compute language through ``tvm.te`` and ``tvm.tir``: after ``tvm.``
is replaced by ``ts.`` the same names work (``ts.te.compute``, ``ts.tir.indexmod``), and the
scalar functions TVM has beside them (floor, ceil, round, trunc, cos, sin, abs, floordiv,
floormod) compute what numpy computes."""

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
    with pytest.raises(ts.ComputeError, match="ts.floor needs a float argument"):
        ts.compute((4,), lambda i: ts.floor(A[i]))
