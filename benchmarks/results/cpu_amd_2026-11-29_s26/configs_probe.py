"""GFLOP/s of CPU GEMM configs at one shape and of numpy, by the wall clock: three rounds,
each config (checked against numpy into a NaN-poisoned output) then numpy, 10 calls a block
after a pause, medians.

    .venv/bin/python configs_probe.py 512,512,2048 '{"tile_y": [1, 16], ...}' ...
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
from tensorsched.runtime.numerics import random_array, relative_error  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402


def timed(fn) -> float:
    time.sleep(0.3)
    fn()
    t = []
    for _ in range(10):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return statistics.median(t)


M, N, K = (int(v) for v in sys.argv[1].split(","))
task = Task("gemm", "cpu", (M, N, K))
rng = np.random.default_rng(0)
x, y = random_array((M, K), "float32", rng), random_array((K, N), "float32", rng)
ref = x @ y
fs = {}
for c in sys.argv[2:]:
    s, args, _ = task.instantiate(json.loads(c))
    fs[c] = ts.build(s, args, target="opencl")
q = next(iter(fs.values())).device.queue
dx, dy = cla.to_device(q, x), cla.to_device(q, y)
dout = cla.empty(q, (M, N), np.float32)
res: dict[str, list[float]] = {k: [] for k in [*fs, "numpy"]}
flop = 2 * M * N * K / 1e9
for _ in range(3):
    for key, f in fs.items():
        dout.fill(np.nan)
        f(dx, dy, dout)
        if not relative_error(dout.get(), ref) < 1e-4:
            raise SystemExit(f"{key}: wrong result")
        res[key].append(flop / timed(lambda f=f: f(dx, dy, dout)))
    res["numpy"].append(flop / timed(lambda: x @ y))
for key, v in res.items():
    print(" ".join(f"{g:6.0f}" for g in v), key)
