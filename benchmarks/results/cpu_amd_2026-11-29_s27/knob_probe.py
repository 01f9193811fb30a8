"""Each shape's untuned config (``predicted_config``: its own best in the shipped log, or one
predicted from other shapes) with a boolean knob (``pad_a`` unless ``KNOB`` says) forced off
and on, against numpy, by the wall clock: three rounds, each config checked against numpy
into a NaN-poisoned output, 10 calls a block after a pause, medians (GFLOP/s).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE [KNOB=pad_b] .venv/bin/python knob_probe.py \
        512,512,2048 ...
"""

import os
import statistics
import sys
import time

import numpy as np
import pyopencl.array as cla

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
import tensorsched as ts  # noqa: E402
from tensorsched.runtime.numerics import random_array, relative_error  # noqa: E402
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


KNOB = os.environ.get("KNOB", "pad_a")
for arg in sys.argv[1:]:
    M, N, K = (int(v) for v in arg.split(","))
    task = Task("gemm", "cpu", (M, N, K))
    config = predicted_config(task) or {}
    rng = np.random.default_rng(0)
    x, y = random_array((M, K), "float32", rng), random_array((K, N), "float32", rng)
    ref = x @ y
    fs = {}
    for pad in (False, True):
        s, args, _ = task.instantiate({**config, KNOB: pad})
        fs[f"{pad}"] = ts.build(s, args, target="opencl")
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
    shown = {k: v for k, v in config.items() if k in ("tile_y", "tile_x", "vec", "tile_k")}
    med = {k: statistics.median(v) for k, v in res.items()}
    print(
        f"{arg:>14}  {KNOB} off {med['False']:5.0f}  on {med['True']:5.0f}  numpy"
        f" {med['numpy']:5.0f}  on/off {med['True'] / med['False']:.2f}  {shown}",
        flush=True,
    )
