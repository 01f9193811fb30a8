"""Helpers of the OpenCL tests: ``run_check`` (build for OpenCL, run on random inputs into
poisoned outputs, compare with numpy: the inputs, poisoning and tolerances of
``tensorsched.runtime.numerics``), the test GEMM and its shared-memory schedule."""

from __future__ import annotations

import os
import sys

import numpy as np

import tensorsched as ts
from tensorsched.ops.conv2d import conv2d_ref
from tensorsched.runtime.numerics import (  # noqa: F401 (the tests import them from here)
    INT_POISON,
    compare,
    make_arrays,
    poisoned,
    random_array,
)

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)  # seed_conv


def assert_close(out, expected, dtype, name="output", rtol=None):
    """``numerics.compare`` (the package's tolerance table), or with ``rtol`` given, the same
    check at that tolerance."""
    if rtol is None or np.dtype(dtype).kind != "f":
        compare(out, expected, dtype, name=name)
        return
    out = np.asarray(out)
    assert not np.isnan(out).any(), f"{name}: some elements were never written (still NaN)"
    expected = np.asarray(expected, dtype=np.float64)
    scale = max(float(np.max(np.abs(expected))), 1.0)
    np.testing.assert_allclose(
        out.astype(np.float64), expected, rtol=rtol, atol=rtol * scale, err_msg=name
    )


def run_check(
    s, args, ref_fn, rng, name="kernel", positive=False, rtol=None, inputs=None, **build_options
):
    """Build ``s`` for OpenCL, run it on random inputs into NaN-poisoned outputs and compare each
    output with ``ref_fn(*inputs as float64)``. Returns the module."""
    mod = ts.build(s, args, target="opencl", name=name, **build_options)
    arrays, ins, outs = make_arrays(args, rng, positive, inputs)
    mod(*arrays)
    expected = ref_fn(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in ins])
    if len(outs) == 1:
        expected = (expected,)
    assert len(expected) == len(outs)
    for (t, a), e in zip(outs, expected):
        assert_close(a, e, t.dtype, name=t.name, rtol=rtol)
    return mod


def gemm(M, N, K, dtype="float32"):
    A = ts.placeholder((M, K), name="A", dtype=dtype)
    B = ts.placeholder((K, N), name="B", dtype=dtype)
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def conv_ref(d, k, pad=1, stride=1):
    """NCHW conv2d in float64."""
    return conv2d_ref(d, k, stride, pad)


def gemm_shared_schedule(M, N, K, tile=8, threads=4, kfactor=4):
    """The shared-memory GEMM of the examples: 8x8 output tiles per work-group of 4x4
    work-items, register blocking through a local cache, A and B tiles in ``__local`` memory
    filled cooperatively."""
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    BB = s.cache_read(B, "shared", [C])
    CL = s.cache_write(C, "local")
    i, j = s[C].op.axis
    bx, by, tx, ty = s[C].tile(i, j, tile, tile)
    tyo, tyi = s[C].split(ty, nparts=threads)
    txo, txi = s[C].split(tx, nparts=threads)
    s[C].reorder(bx, by, txo, tyo, txi, tyi)
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[C].bind(by, ts.thread_axis("blockIdx.y"))
    s[C].bind(txo, ts.thread_axis("threadIdx.x"))
    s[C].bind(tyo, ts.thread_axis("threadIdx.y"))
    s[CL].compute_at(s[C], tyo)
    ii, jj = s[CL].op.axis
    (kk,) = s[CL].op.reduce_axis
    ko, ki = s[CL].split(kk, kfactor)
    s[CL].reorder(ko, ki, ii, jj)
    s[CL].vectorize(jj)
    s[AA].compute_at(s[CL], ko)
    s[BB].compute_at(s[CL], ko)
    for X in (AA, BB):
        a, b = s[X].op.axis
        ao, ai = s[X].split(a, nparts=threads)
        bo, bi = s[X].split(b, nparts=threads)
        s[X].reorder(ao, bo, ai, bi)
        s[X].bind(ao, ts.thread_axis("threadIdx.x"))
        s[X].bind(bo, ts.thread_axis("threadIdx.y"))
    return s, (A, B, C)
