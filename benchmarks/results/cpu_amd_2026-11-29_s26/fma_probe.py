"""A kernel of FMAs alone (16-wide, 8 chains, 2000 steps, 256 work-groups of one), 3 x 200
calls back to back after a 1 s pause each; prints GFLOP/s, the median of each 10 calls.
Run plain, and inside ts.runtime.awake_cores (see this folder's README)."""

import os
import statistics
import sys
import time

import numpy as np
import pyopencl as cl

os.environ.setdefault("POCL_AFFINITY", "1")
ctx = cl.Context([d for p in cl.get_platforms() for d in p.get_devices() if "pthread" in d.name])
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
src = """__kernel void k(__global float16 *a, int n) {
  float16 x0 = a[get_global_id(0)], x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3;
  float16 x4 = x0 + 4, x5 = x0 + 5, x6 = x0 + 6, x7 = x0 + 7;
  float16 m = a[0];
  for (int i = 0; i < n; i++) { x0 = fma(x0, m, m); x1 = fma(x1, m, m);
     x2 = fma(x2, m, m); x3 = fma(x3, m, m);
     x4 = fma(x4, m, m); x5 = fma(x5, m, m); x6 = fma(x6, m, m); x7 = fma(x7, m, m);}
  a[get_global_id(0)] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7; }"""
prg = cl.Program(ctx, src).build()
k = cl.Kernel(prg, "k")
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64 * 4096)
a = np.full(16 * 4096, 0.5, np.float32)
cl.enqueue_copy(q, buf, a)
n = 2000
k.set_args(buf, np.int32(n))
groups = int(sys.argv[1]) if len(sys.argv) > 1 else 256
for _ in range(3):
    time.sleep(1)
    ev = []
    for _ in range(200):
        e = cl.enqueue_nd_range_kernel(q, k, (groups,), (1,))
        q.finish()
        ev.append((e.profile.end - e.profile.start) * 1e-6)
    fl = groups * n * 8 * 16 * 2 / 1e6
    print(" ".join(f"{fl / statistics.median(ev[i : i + 10]):.0f}" for i in range(0, 200, 10)))
