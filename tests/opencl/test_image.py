"""Inputs read through an image2d_t (seed 004's texture path for B)."""

import numpy as np
import pytest

import tensorsched as ts


def gemm_with_image_b(M, N, K, vector):
    A = ts.placeholder((M, K), name="A")
    B = ts.placeholder((K, N), name="B")
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    s.use_image(B)
    CL = s.cache_write(C, "local")
    i, j = s[C].op.axis
    io, ii = s[C].split(i, 4)
    jo, ji = s[C].split(j, 4)
    s[C].reorder(io, jo, ii, ji)
    s[C].bind(io, ts.thread_axis("blockIdx.x"))
    s[C].bind(jo, ts.thread_axis("threadIdx.x"))
    s[CL].compute_at(s[C], jo)
    a1, a2 = s[CL].op.axis
    (kk,) = s[CL].op.reduce_axis
    s[CL].reorder(kk, a1, a2)
    if vector:
        s[CL].vectorize(a2)
    return s, [A, B, C]


@pytest.mark.parametrize("vector", [True, False])
@pytest.mark.parametrize("target", ["opencl", "python"])
def test_image_input_matches_numpy(ocl_device, rng, vector, target):
    M, N, K = 37, 32, 23
    s, args = gemm_with_image_b(M, N, K, vector)
    mod = ts.build(s, args, target=target)
    a = rng.uniform(0.25, 1, (M, K)).astype(np.float32)
    b = rng.uniform(0.25, 1, (K, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    mod(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5)
    if target == "opencl":
        src = mod.get_source()
        assert "__read_only image2d_t B" in src
        assert ("read_imagef(B, ts_sampler" in src) if vector else ("ts_read_image(B" in src)


def test_use_image_needs_a_2d_float_input_with_width_multiple_of_4():
    A = ts.placeholder((5, 6), name="A")
    C = ts.compute((5, 6), lambda i, j: A[i, j] * 2.0, name="C")
    s = ts.create_schedule(C.op)
    with pytest.raises(ts.ScheduleError, match="divisible by 4"):
        s.use_image(A)
    with pytest.raises(ts.ScheduleError, match="not an input placeholder"):
        s.use_image(C)
