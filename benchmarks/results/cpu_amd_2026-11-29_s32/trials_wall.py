"""Seconds a fixed number of tuning trials take on the CPU device, with the configs and
timings of the tuner's stages: ``python trials_wall.py STRATEGY N`` (model or random).
Run once per side with PoCL's kernel cache emptied first (``rm -rf ~/.cache/pocl/kcache``):
random draws the same configs each time; model's depend on the timings."""

import os
import sys
import tempfile
import time

from tensorsched.tune import Task, tune

STAGES = ("check_s", "runner_s", "wait_build_s", "time_s", "load_s", "setup_s")

if __name__ == "__main__":
    strategy, n = sys.argv[1], int(sys.argv[2])
    shapes = [(1000, 1000, 1000), (517, 263, 1023) if strategy == "model" else (256, 512, 300)]
    for shape in shapes:
        task = Task("gemm", "cpu", shape)
        with tempfile.TemporaryDirectory() as d:
            t0 = time.time()
            r = tune(task, os.path.join(d, "log.jsonl"), strategy=strategy, trials=n, verify=0,
                     progress=False)  # fmt: skip
            wall = time.time() - t0
        stats = {k: round(v, 1) for k, v in sorted(r.stats.items()) if k in STAGES}
        best = round(r.best.gflops, 1) if r.best else None
        print(task, f"{n} trials in {wall:.1f} s", best, r.counts, stats, flush=True)
