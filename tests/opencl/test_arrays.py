"""What a module does with arrays that are not plain C-contiguous buffers (issue 15 item 6):
numpy views of any layout and device arrays at an offset give the right numbers; strided
device arrays (a transposed view) are refused with a ``RuntimeCallError`` saying what to pass."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from ocl_util import gemm

import tensorsched as ts
from tensorsched.errors import RuntimeCallError
from tensorsched.runtime.numerics import compare, random_array

M, N, K = 8, 12, 16


@pytest.fixture(scope="module")
def mod(ocl_device):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    i, _ = s[C].op.axis
    s[C].bind(i, ts.thread_axis("blockIdx.x"))
    return ts.build(s, [A, B, C], target="opencl", device=ocl_device)


def test_numpy_views_of_any_layout(mod, rng):
    a = random_array((K, M), np.float32, rng).T  # transposed view, F-contiguous
    big = random_array((K, 2 * N), np.float32, rng)
    b = big[:, ::2]  # strided view
    out = np.full((N, M), np.nan, np.float32).T  # a transposed output view
    mod(a, b, out)
    compare(out, a.astype(np.float64) @ b, "float32")


def test_device_arrays_at_an_offset(mod, rng):
    q = mod.device.queue
    a = random_array((M, K), np.float32, rng)
    b = random_array((K, N), np.float32, rng)
    da = cla.to_device(q, np.concatenate([np.zeros((3, K), np.float32), a]))[3:]
    db = cla.to_device(q, np.concatenate([np.zeros((1, N), np.float32), b]))[1:]
    whole = cla.to_device(q, np.full((M + 2, N), 7.0, np.float32))
    dc = whole[2:]
    assert da.offset and db.offset and dc.offset
    mod(da, db, dc)
    compare(dc.get(), a.astype(np.float64) @ b, "float32")
    assert (whole.get()[:2] == 7.0).all(), "rows before the output view were overwritten"
    t = mod.time_evaluator(repeat=2)(da, db, dc)
    assert t.device_median > 0


def test_strided_device_array_is_refused(mod, rng):
    q = mod.device.queue
    a = cla.to_device(q, random_array((K, M), np.float32, rng)).transpose()
    b = cla.to_device(q, random_array((K, N), np.float32, rng))
    c = cla.empty(q, (M, N), np.float32)
    assert a.shape == (M, K) and not a.flags.c_contiguous
    with pytest.raises(RuntimeCallError, match="'A' is a device array that is not C-contiguous"):
        mod(a, b, c)


def test_device_array_of_another_context_is_refused(mod, rng):
    ctx = cl.Context([mod.device.cl_device])
    a = cla.to_device(cl.CommandQueue(ctx), random_array((M, K), np.float32, rng))
    b = cla.to_device(mod.device.queue, random_array((K, N), np.float32, rng))
    c = cla.empty(mod.device.queue, (M, N), np.float32)
    with pytest.raises(RuntimeCallError, match="another OpenCL context"):
        mod(a, b, c)
