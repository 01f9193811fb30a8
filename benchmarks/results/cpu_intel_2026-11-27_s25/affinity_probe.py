"""One GEMM's best predicted config timed call by call (wall clock of launch to finish),
against numpy, in three rounds of N calls each: percentiles of GFLOP/s, to show the two
speeds PoCL's kernels run at when its worker threads are not pinned.

    P=benchmarks/results/cpu_intel_2026-11-27_s25/affinity_probe.py
    POCL_AFFINITY=0 .venv/bin/python $P 1500,700,300 200
    .venv/bin/python $P 1500,700,300 200
"""

import os
import sys
import time

import numpy as np
import pyopencl.array as cla

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
import tensorsched as ts  # noqa: E402
from tensorsched.runtime.numerics import random_array  # noqa: E402

M, N, K = (int(v) for v in sys.argv[1].split(","))
n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
s, args = ts.tune.instantiate("gemm", "cpu", (M, N, K))
f = ts.build(s, args, target="opencl")
print("POCL_AFFINITY =", os.environ.get("POCL_AFFINITY"))
rng = np.random.default_rng(0)
x, y = random_array((M, K), "float32", rng), random_array((K, N), "float32", rng)
q = f.device.queue
dx, dy, dout = (cla.to_device(q, v) for v in (x, y, np.zeros((M, N), np.float32)))
flop = 2 * M * N * K


def run(fn, n):
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return sorted(flop / v / 1e9 for v in t)


def pct(g):
    return " ".join(f"{g[int(p * (len(g) - 1))]:.0f}" for p in (0, 0.1, 0.25, 0.5, 0.75, 0.9, 1))


print("GFLOP/s percentiles 0 10 25 50 75 90 100")
for _ in range(3):
    time.sleep(0.5)
    ours = run(lambda: (f(dx, dy, dout), q.finish()), n)
    time.sleep(0.5)
    theirs = run(lambda: np.matmul(x, y), n)
    print(f"tensorsched {pct(ours)}")
    print(f"numpy       {pct(theirs)}")
