"""python interleave_probe.py M,N,K CONFIG_JSON PAUSE: 8 rounds of 10 timed calls of the
config and of numpy.matmul, each block after PAUSE seconds and 3 unmeasured calls; GFLOP/s by
wall clock, the ratio of each round and its median."""

import json
import os
import statistics
import sys
import time

import numpy as np
import pyopencl.array as cla

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
import tensorsched as ts  # noqa: E402
from tensorsched.runtime.numerics import random_array  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

M, N, K = (int(v) for v in sys.argv[1].split(","))
task = Task("gemm", "cpu", (M, N, K))
rng = np.random.default_rng(0)
x, y = random_array((M, K), "float32", rng), random_array((K, N), "float32", rng)
s, args, cfg = task.instantiate(json.loads(sys.argv[2]))
f = ts.build(s, args, target="opencl")
q = f.device.queue
dx, dy = cla.to_device(q, x), cla.to_device(q, y)
dout = cla.empty(q, (M, N), np.float32)
pause = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5


def blk(fn):
    time.sleep(pause)
    for _ in range(3):
        fn()
    v = []
    for _ in range(10):
        t0 = time.perf_counter()
        fn()
        v.append(time.perf_counter() - t0)
    return statistics.median(v) * 1e3


g = 2 * M * N * K / 1e6
rs = []
for _ in range(8):
    a = blk(lambda: f(dx, dy, dout))
    b = blk(lambda: x @ y)
    rs.append(b / a)
    print(f"ts {g / a:6.1f}  numpy {g / b:6.1f}  ratio {b / a:.2f}")
print("median ratio", statistics.median(rs))
