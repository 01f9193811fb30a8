"""64-bit indexing run on the device: ``INDEX_LIMIT`` lowered to 0 forces the ``long`` form on
small kernels (a real one needs tensors of more than 2^31 elements), whose results must match
numpy as the ``int`` form's do."""

import numpy as np
import pytest
from ocl_util import conv_ref, gemm, gemm_shared_schedule, run_check

import tensorsched as ts
from tensorsched.codegen import opencl

pytestmark = [pytest.mark.opencl, pytest.mark.usefixtures("ocl_device")]


@pytest.fixture
def wide(monkeypatch):
    monkeypatch.setattr(opencl, "INDEX_LIMIT", 0)


def test_gemm_shared_wide(wide, rng):
    s, args = gemm_shared_schedule(37, 29, 23)
    mod = run_check(s, list(args), lambda a, b: a @ b, rng)
    text = mod.get_source()
    assert "const long threadIdx_x = (long)get_local_id(0);" in text
    assert "for (long" in text and "for (int" not in text


def test_gemm_serial_wide(wide, rng):
    A, B, C = gemm(13, 11, 7)
    s = ts.create_schedule(C.op)
    mod = run_check(s, [A, B, C], lambda a, b: a @ b, rng)
    assert "for (long i = 0; i < 13; ++i)" in mod.get_source()


def test_floor_helpers_wide(wide, rng):
    """Negative operands of % (and //, which the simplifier rewrites over non-negative ones):
    the long helper rounds toward minus infinity."""
    n = 23
    A = ts.placeholder((n, n), name="A")
    B = ts.compute((n, n), lambda i, j: A[(j - i) % n, (i - j - 1) // n + 1], name="B")
    s = ts.create_schedule(B.op)
    x, y = s[B].op.axis
    s[B].bind(x, ts.thread_axis("blockIdx.x"))
    s[B].bind(y, ts.thread_axis("threadIdx.x"))
    idx = np.arange(n)
    i, j = np.meshgrid(idx, idx, indexing="ij")
    mod = run_check(s, [A, B], lambda a: a[(j - i) % n, (i - j - 1) // n + 1], rng)
    text = mod.get_source()
    assert "ts_floormod_long(threadIdx_x - blockIdx_x, 23)" in text


def test_padded_conv_wide(wide, rng):
    """A padded convolution (index arithmetic below zero, guarded) in the long form."""
    N, C, H, W, F = 1, 3, 9, 9, 4
    d = ts.placeholder((N, C, H, W), name="d")
    k = ts.placeholder((F, C, 3, 3), name="k")
    rc, ry, rx = (
        ts.reduce_axis((0, C), "rc"),
        ts.reduce_axis((0, 3), "ry"),
        ts.reduce_axis((0, 3), "rx"),
    )

    def body(n, f, y, x):
        yy, xx = y + ry - 1, x + rx - 1
        inside = ts.all(yy >= 0, yy < H, xx >= 0, xx < W)
        return ts.sum(
            ts.if_then_else(inside, d[n, rc, yy, xx], 0.0) * k[f, rc, ry, rx], axis=[rc, ry, rx]
        )

    out = ts.compute((N, F, H, W), body, name="out")
    s = ts.create_schedule(out.op)
    n, f, y, x = s[out].op.axis
    s[out].bind(f, ts.thread_axis("blockIdx.x"))
    s[out].bind(y, ts.thread_axis("threadIdx.x"))
    run_check(s, [d, k, out], lambda a, b: conv_ref(a, b, pad=1), rng)
