"""Wall clock of one synchronous call of a small GEMM's kernel on device arrays, by the full
path (argument checks, buffers, copies) and by the short path of device arrays taken as they
are, with numpy's matmul of the same shape; medians of 1000 calls each, interleaved.

    .venv/bin/python benchmarks/results/cpu_amd_2026-11-29_s28/call_cost.py
"""

import statistics
import time

import numpy as np
import pyopencl.array as cla

import tensorsched as ts

res = {}
for shape in [(16, 128, 508), (196, 16, 480), (1, 1000, 512)]:
    M, N, K = shape
    s, args = ts.tune.instantiate("gemm", "cpu", shape)
    f = ts.build(s, args, target="opencl")
    q = f.device.queue
    d = [cla.to_device(q, np.ones(tuple(int(v) for v in b.shape), np.float32)) for b in args]

    def slow():
        a, sz = f._arguments(d)
        b, c = f._device_args(a, sz)
        f._launch(b, sz or None)
        f._finish(c)

    def fast():
        return f(*d)

    x = np.ones((M, K), np.float32)
    y = np.ones((K, N), np.float32)
    R = {"full": [], "short": [], "numpy": []}
    for _ in range(5):
        for k, fn in (("full", slow), ("short", fast), ("numpy", lambda: np.matmul(x, y))):
            time.sleep(0.2)
            for _ in range(5):
                fn()
            for _ in range(200):
                t0 = time.perf_counter()
                fn()
                R[k].append(time.perf_counter() - t0)
    print(shape, "  ".join(f"{k} {statistics.median(v) * 1e6:.1f} us" for k, v in R.items()))
