"""Numerical check helpers of the tensorsched test suite (imported by the test modules as
``from ts_check import check``; a module of its own so that it never clashes with another
directory's ``conftest``).

``check`` builds a schedule with the exact Python backend, fills the inputs with seeded random
data (never zeros), poisons every output (NaN for floats, a sentinel for integers) so an
unwritten element is caught, runs the module and compares each output with a float64 numpy
reference.
"""

import numpy as np

import tensorsched as ts
from tensorsched.ir.tensor import PlaceholderOp
from tensorsched.ops.conv2d import conv2d_ref
from tensorsched.runtime.numerics import (  # noqa: F401 (the tests import them from here)
    INT_POISON,
    TOL,
    compare,
    poisoned,
    random_array,
)


def is_input(t):
    return isinstance(t.op, PlaceholderOp)


def assert_close(out, expected, dtype, name="output"):
    """``numerics.compare``: within the package's tolerance for ``dtype``, nothing unwritten."""
    compare(out, expected, dtype, name=name)


def check(s, args, ref_fn, inputs=None, seed=0, positive=False):
    """Build ``s`` for the python target, run it on random inputs and compare with numpy.

    ``args``: the tensors in call order (placeholders and outputs). ``ref_fn`` gets the input
    arrays (as float64 for float inputs, in the order they appear in ``args``) and returns the
    expected output, or a tuple with one array per output in ``args`` order. ``inputs`` may map
    a placeholder tensor (or its name) to a fixed array. Returns the built module.
    """
    rng = np.random.default_rng(seed)
    inputs = dict(inputs or {})
    mod = ts.build(s, args, target="python")
    arrays, in_arrays, outs = [], [], []
    for t in args:
        if is_input(t):
            given = inputs.get(t, inputs.get(t.name))
            a = (
                np.asarray(given, dtype=t.dtype)
                if given is not None
                else random_array(t.shape, t.dtype, rng, positive=positive)
            )
            assert a.shape == tuple(t.shape)
            in_arrays.append(a)
        else:
            a = poisoned(t.shape, t.dtype)
            outs.append((t, a))
        arrays.append(a)
    saved = [a.copy() for a in in_arrays]
    mod(*arrays)
    for t, a, before in zip([t for t in args if is_input(t)], in_arrays, saved):
        np.testing.assert_array_equal(a, before, err_msg=f"input '{t.name}' was modified")
    ref_in = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in in_arrays]
    expected = ref_fn(*ref_in)
    if len(outs) == 1:
        expected = (expected,)
    assert len(expected) == len(outs), "ref_fn must return one array per output"
    for (t, a), e in zip(outs, expected):
        assert_close(a, e, t.dtype, name=t.name)
    return mod


def gemm(M, N, K, dtype="float32"):
    """``C[i, j] = sum_k A[i, k] * B[k, j]``; returns ``(A, B, C)``."""
    A = ts.placeholder((M, K), name="A", dtype=dtype)
    B = ts.placeholder((K, N), name="B", dtype=dtype)
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def row_sums_added(M, N, K, parts):
    """``R[i] = sum_k A[i, k]`` and ``D[i, j] = R[i] + B[i, j]``, with the sum's K split in
    ``parts`` ``rfactor``-ed into ``P``; returns ``(A, B, R, D, schedule, P)``."""
    A = ts.placeholder((M, K), name="A")
    B = ts.placeholder((M, N), name="B")
    k = ts.reduce_axis((0, K), name="k")
    R = ts.compute((M,), lambda i: ts.sum(A[i, k], axis=k), name="R")
    D = ts.compute((M, N), lambda i, j: R[i] + B[i, j], name="D")
    s = ts.create_schedule(D.op)
    ko, _ = s[R].split(R.op.reduce_axis[0], nparts=parts)
    return A, B, R, D, s, s.rfactor(R, ko)


def gemm_ref(a, b):
    return a @ b


def conv_ref(d, k, pad=1):
    """Direct NCHW conv2d, stride 1, in float64."""
    return conv2d_ref(d, k, 1, pad)


# ---------------------------------------------------------------- TVM's tests, ported

TARGETS = ["python", "opencl"]  # the ported tests run on both


def build(s, args, target, name="default_function"):
    """``ts.build`` for ``target``; an OpenCL build is skipped without pyopencl."""
    if target == "opencl":
        import pytest

        pytest.importorskip("pyopencl")
    return ts.build(s, args, target=target, name=name)


def rand(*shape, seed=0):
    """Seeded random float32 data in [0.5, 1.5)."""
    return (np.random.default_rng(seed).random(shape, dtype=np.float32) + 0.5).astype("float32")
