"""The CPU GEMM at one config, built without ``pad_b`` (``0:0``) and with B's rows padded to a
stride of OFFSET more than a multiple of FACTOR elements (``FACTOR:OFFSET``), each call timed
by the wall clock (the copy included), three rounds of 10 calls, medians in GFLOP/s.

    .venv/bin/python benchmarks/results/cpu_intel_2026-11-27_s25/pad_offsets_probe.py \\
        1024,2048,1024 0:0,256:16,256:48,256:80 \\
        '{"group_order": "rows", "tile_k": [4], "tile_x": [4, 32], "tile_y": [1, 8], "vec": 16}'
"""

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

g = sys.modules["tensorsched.ops.templates.gemm_cpu"]  # (the package's gemm_cpu is a function)
M, N, K = (int(v) for v in sys.argv[1].split(","))
variants = [tuple(int(x) for x in v.split(":")) for v in sys.argv[2].split(",")]
base = json.loads(sys.argv[3])
task = Task("gemm", "cpu", (M, N, K))
rng = np.random.default_rng(0)
x, y = random_array((M, K), "float32", rng), random_array((K, N), "float32", rng)
fs = {}
for fac, off in variants:
    g.PAD_FACTOR, g.PAD_OFFSET = max(fac, 1), off
    s, args, cfg = task.instantiate(dict(base, pad_b=fac > 0))
    fs[(fac, off)] = ts.build(s, args, target="opencl")
q = next(iter(fs.values())).device.queue
dx, dy = cla.to_device(q, x), cla.to_device(q, y)
dout = cla.empty(q, (M, N), np.float32)
res: dict = {k: [] for k in fs}
for _ in range(3):
    for key, f in fs.items():
        time.sleep(0.2)
        t = []
        for _ in range(10):
            t0 = time.perf_counter()
            f(dx, dy, dout)
            q.finish()
            t.append(time.perf_counter() - t0)
        res[key].append(2 * M * N * K / statistics.median(t) / 1e9)
for key, v in res.items():
    print(f"{key[0]}:{key[1]}", " ".join(f"{x:.0f}" for x in v))
