"""A kernel that PoCL 3.1 (Debian, CPU device) computes wrong when it optimises it, and right
with ``-cl-opt-disable`` and under Oclgrind: found by the schedule fuzzer (a GEMM of 6x1x13,
work-groups of 4 rows, A's K step of 8 staged in ``__local`` memory with the next step's
copy started before the sums, as double buffering does), reduced by hand. Each work-item
zeroes its row of C, the work-group copies rows of A into ``S``, and after a barrier each
work-item sums its row of ``S`` times B into C, while the copy of the next K step runs. On
PoCL the second work-group's first row (row 4) gets its sum twice.

    .venv/bin/python benchmarks/results/cpu_amd_2026-11-29_s29/pocl_miscompile.py
"""

# ruff: noqa: E501  (the kernel's lines as the code generator wrote them)
import numpy as np
import pyopencl as cl

from tensorsched.runtime.device import resolve_device

KERNEL = """
__kernel __attribute__((reqd_work_group_size(1, 4, 1)))
void f(__global const float* A, __global const float* B, __global float* C) {
  const int g = get_group_id(1);
  const int y = get_local_id(1);
  __local float S[64];
  if (g * 4 + y < 6) C[g * 4 + y] = 0.0f;
  // this K step (columns 0-7) of the work-group's four rows of A
  for (int i = 0; i < 2; ++i) S[y * 2 + i] = A[g * 52 + y * 2 + i];
  for (int i = 0; i < 2; ++i) S[y * 2 + i + 8] = A[g * 52 + y * 2 + i + 13];
  for (int i = 0; i < 2; ++i) S[y * 2 + i + 16] = (g * 4 + 2 < 6 ? A[g * 52 + y * 2 + i + 26] : 0.0f);
  for (int i = 0; i < 2; ++i) S[y * 2 + i + 24] = (g * 4 + 3 < 6 ? A[g * 52 + y * 2 + i + 39] : 0.0f);
  barrier(CLK_LOCAL_MEM_FENCE);
  // the next K step's copy (columns 8-12)
  for (int i = 0; i < 2; ++i) S[y * 2 + i + 32] = (y * 2 + i + 8 < 13 ? A[g * 52 + y * 2 + i + 8] : 0.0f);
  for (int i = 0; i < 2; ++i) S[y * 2 + i + 40] = (y * 2 + i + 8 < 13 ? A[g * 52 + y * 2 + i + 21] : 0.0f);
  for (int i = 0; i < 2; ++i) S[y * 2 + i + 48] = (y * 2 + i + 8 < 13 && g * 4 + 2 < 6 ? A[g * 52 + y * 2 + i + 34] : 0.0f);
  for (int i = 0; i < 2; ++i) S[y * 2 + i + 56] = (y * 2 + i + 8 < 13 && g * 4 + 3 < 6 ? A[g * 52 + y * 2 + i + 47] : 0.0f);
  // this K step's sums
  if (g * 4 + y < 6) {
    for (int k = 0; k < 8; ++k) C[g * 4 + y] = C[g * 4 + y] + S[y * 8 + k] * B[k];
  }
}
"""

ctx = resolve_device(None).context
queue = cl.CommandQueue(ctx)
print("device:", ctx.devices[0].name)
rng = np.random.default_rng(0)
a = rng.standard_normal((6, 13)).astype(np.float32)
b = rng.standard_normal((13, 1)).astype(np.float32)
expected = a[:, :8].astype(np.float64) @ b[:8]
for options in ([], ["-cl-opt-disable"]):
    program = cl.Program(ctx, KERNEL).build(options=options)
    mf = cl.mem_flags
    da = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    db = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
    c = np.full((6, 1), np.nan, np.float32)
    dc = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=c)
    program.f(queue, (1, 8), (1, 4), da, db, dc)
    cl.enqueue_copy(queue, c, dc)
    queue.finish()
    wrong = np.nonzero(np.abs(c - expected).ravel() > 1e-4)[0].tolist()
    print(f"build options {options}: rows wrong {wrong}; got {c.ravel()}")
print(f"expected {expected.ravel()}")
