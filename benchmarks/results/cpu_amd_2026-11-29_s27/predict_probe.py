"""The untuned prediction on the CPU device under several distance penalties: for each shape,
the config ``predicted_config`` picks with ``model.CPU_DISTRUST`` set to each of
``--distrust`` (a rank of e^(distrust * distance) times ``rescaled_ms``), every distinct pick
built, checked against numpy into a NaN-poisoned output and timed by the wall clock beside
numpy: three rounds, 10 calls a block after a pause, medians (GFLOP/s).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python predict_probe.py \\
        --distrust 1 0.5 0.25 0 --shapes 2047,129,511 ...
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import pyopencl.array as cla

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
import tensorsched as ts  # noqa: E402
from tensorsched.runtime.numerics import random_array, relative_error  # noqa: E402
from tensorsched.tune import model  # noqa: E402
from tensorsched.tune.dispatch import predicted_config  # noqa: E402
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


p = argparse.ArgumentParser()
p.add_argument("--distrust", type=float, nargs="+", default=[1.0, 0.5, 0.25, 0.0])
p.add_argument("--shapes", nargs="+", required=True)
a = p.parse_args()
ratios: dict[float, list[float]] = {d: [] for d in a.distrust}
print("shape: GFLOP/s of each distrust's pick | numpy", flush=True)
for arg in a.shapes:
    M, N, K = (int(v) for v in arg.split(","))
    task = Task("gemm", "cpu", (M, N, K))
    picks = {}
    for d in a.distrust:
        model.CPU_DISTRUST = d
        picks[d] = json.dumps(predicted_config(task) or {}, sort_keys=True)
    rng = np.random.default_rng(0)
    x, y = random_array((M, K), "float32", rng), random_array((K, N), "float32", rng)
    ref = x @ y
    fs = {}
    for c in dict.fromkeys(picks.values()):
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
                raise SystemExit(f"{arg} {key}: wrong result")
            res[key].append(flop / timed(lambda f=f: f(dx, dy, dout)))
        res["numpy"].append(flop / timed(lambda: x @ y))
    med = {k: statistics.median(v) for k, v in res.items()}
    for d in a.distrust:
        ratios[d].append(med[picks[d]] / med["numpy"])
    cols = "  ".join(f"{d:g}: {med[picks[d]]:5.0f}" for d in a.distrust)
    print(f"{arg:>14}  {cols} | numpy {med['numpy']:5.0f}", flush=True)
    for c in fs:
        cfg = json.loads(c)
        short = {k: cfg[k] for k in ("tile_y", "tile_x", "tile_k", "pad_a", "pad_b") if k in cfg}
        print(f"{'':16}{[d for d in a.distrust if picks[d] == c]} {short}", flush=True)
print("geomean ratio to numpy by distrust:")
for d, rs in ratios.items():
    g = math.exp(sum(map(math.log, rs)) / len(rs))
    print(f"  {d:g}: {g:.3f}x (worst {min(rs):.2f}x)")
