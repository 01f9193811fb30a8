"""Hand-written GEMV kernels (y = x B, x of 1 x K, B of K x N row-major) on tensorsched's
default device (PoCL here), against numpy's matmul of the same arrays: each work-group takes
``W`` columns and ``K / P`` rows of B, ``U`` rows at a time, and walks its columns in 16-wide
vectors in a loop (not unrolled), its sums in a private array; with ``P`` > 1 a second kernel
adds the ``P`` partial rows. Checked against float64, then three rounds of a pause and 10
timed calls (wall clock, ``finish``) of each, medians.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        .venv/bin/python benchmarks/results/cpu_amd_2026-11-29_s28/gemv_probe.py 4096 4096
"""

import statistics
import sys
import time

import numpy as np
import pyopencl as cl

from tensorsched.runtime.device import resolve_device

K, N = (int(v) for v in sys.argv[1:3])
ctx = resolve_device(None).context
queue = cl.CommandQueue(ctx)
rng = np.random.default_rng(0)
x = rng.standard_normal((1, K), dtype=np.float32)
B = rng.standard_normal((K, N), dtype=np.float32)
ref = (x.astype(np.float64) @ B)[0]
mf = cl.mem_flags
dx = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
dB = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=B)
dy = cl.Buffer(ctx, mf.READ_WRITE, N * 4)


def source(W: int, P: int, U: int) -> str:
    terms = " + ".join(
        f"(float16)(x[k + {u}]) * vload16(0, B + (k + {u}) * {N} + c * {W} + j * 16)"
        for u in range(U)
    )
    return f"""
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void gemv(__global const float *restrict x, __global const float *restrict B,
          __global float *restrict part) {{
  const int c = get_group_id(0), p = get_group_id(1), k0 = p * {K // P};
  float16 acc[{W // 16}];
  for (int j = 0; j < {W // 16}; ++j) acc[j] = (float16)(0.0f);
  for (int k = k0; k < k0 + {K // P}; k += {U})
    for (int j = 0; j < {W // 16}; ++j) acc[j] += {terms};
  for (int j = 0; j < {W // 16}; ++j) vstore16(acc[j], 0, part + p * {N} + c * {W} + j * 16);
}}
__kernel void sum(__global const float *restrict part, __global float *restrict y) {{
  const int i = get_global_id(0);
  float s = 0.0f;
  for (int p = 0; p < {P}; ++p) s += part[p * {N} + i];
  y[i] = s;
}}"""


def timed(fn) -> list[float]:
    time.sleep(0.3)
    for _ in range(3):
        fn()
    runs = []
    for _ in range(10):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return runs


for W, P, U in [(256, 1, 1), (256, 1, 4), (2048, 1, 4), (2048, 1, 8), (1024, 8, 4), (4096, 8, 4)]:
    if W > N or K % (P * U) or N % W:
        continue
    program = cl.Program(ctx, source(W, P, U)).build()
    gemv, add = cl.Kernel(program, "gemv"), cl.Kernel(program, "sum")
    part = cl.Buffer(ctx, mf.READ_WRITE, P * N * 4) if P > 1 else dy

    def run() -> None:
        gemv(queue, (N // W, P), (1, 1), dx, dB, part)
        if P > 1:
            add(queue, (N,), None, part, dy)
        queue.finish()

    y = np.full(N, np.nan, np.float32)
    cl.enqueue_copy(queue, dy, y)
    run()
    cl.enqueue_copy(queue, y, dy)
    queue.finish()
    assert np.abs(y - ref).max() <= 1e-5 * np.abs(ref).max()
    ours, theirs = [], []
    for _ in range(3):
        ours += timed(run)
        theirs += timed(lambda: np.matmul(x, B))
    g = 2 * K * N / statistics.median(ours) / 1e9
    g_np = 2 * K * N / statistics.median(theirs) / 1e9
    print(f"W={W} P={P} U={U}: {g:.1f} GFLOP/s, numpy {g_np:.1f} ({g / g_np:.2f}x)", flush=True)
