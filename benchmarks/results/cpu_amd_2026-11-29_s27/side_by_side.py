"""What the probes beside this file share: CPU GEMM configs and numpy timed side by side."""

import os
import statistics
import sys
import time
from typing import Any

import numpy as np
import pyopencl.array as cla

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
import tensorsched as ts  # noqa: E402
from tensorsched.runtime.numerics import random_array, relative_error  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402


def timed(fn) -> float:
    """The median of 10 timed calls of ``fn``, after a pause and one unmeasured call."""
    time.sleep(0.3)
    fn()
    t = []
    for _ in range(10):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return statistics.median(t)


def side_by_side(shape: str, configs: dict[str, dict[str, Any]]) -> dict[str, float]:
    """GFLOP/s of the CPU GEMM at ``shape`` ("M,N,K") under each named config, and of numpy
    (key ``"numpy"``), by the wall clock: three rounds, each config checked against numpy into
    a NaN-poisoned output, then timed (``timed``) on device-resident arrays; medians."""
    M, N, K = (int(v) for v in shape.split(","))
    task = Task("gemm", "cpu", (M, N, K))
    rng = np.random.default_rng(0)
    x, y = random_array((M, K), "float32", rng), random_array((K, N), "float32", rng)
    ref = x @ y
    fs = {}
    for name, config in configs.items():
        s, args, _ = task.instantiate(config)
        fs[name] = ts.build(s, args, target="opencl")
    q = next(iter(fs.values())).device.queue
    dx, dy = cla.to_device(q, x), cla.to_device(q, y)
    dout = cla.empty(q, (M, N), np.float32)
    res: dict[str, list[float]] = {k: [] for k in [*fs, "numpy"]}
    flop = 2 * M * N * K / 1e9
    for _ in range(3):
        for name, f in fs.items():
            dout.fill(np.nan)
            f(dx, dy, dout)
            if not relative_error(dout.get(), ref) < 1e-4:
                raise SystemExit(f"{shape} {name}: wrong result")
            res[name].append(flop / timed(lambda f=f: f(dx, dy, dout)))
        res["numpy"].append(flop / timed(lambda: x @ y))
    return {k: statistics.median(v) for k, v in res.items()}
