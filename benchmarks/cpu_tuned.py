"""Tuned GEMM on the CPU OpenCL device against numpy, side by side in one run, at any shape.

For each shape, the ``cpu`` GEMM template is tuned with the default model strategy for at most
``--time`` (into ``<--logs>/gemm_MxNxK.jsonl``, resumed when it exists), then its best config is
rebuilt, checked against numpy (poisoned output, random inputs) and timed against
``numpy.matmul`` on the same inputs, alternating, medians of ``--repeat`` runs each.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        .venv/bin/python benchmarks/cpu_tuned.py --time 2m --logs /tmp/cpu_logs \\
        --shapes 1000,1000,1000 4095,257,1023 512,512,512

Measure on a quiet machine: numpy's two threads slow down more than PoCL's under load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.numerics import random_array, relative_error  # noqa: E402
from tensorsched.runtime.table import print_table  # noqa: E402
from tensorsched.tune.dispatch import apply_best  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402
from tensorsched.tune.tuner import tune  # noqa: E402

SHAPES = ("1000,1000,1000", "4095,257,1023", "512,512,512")


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", nargs="+", default=list(SHAPES), help="M,N,K ...")
    p.add_argument("--time", default="2m", help="tuning budget per shape (0: measure only)")
    p.add_argument("--logs", required=True, help="folder of the tuning logs")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--template", default="cpu")
    a = p.parse_args(argv)
    os.makedirs(a.logs, exist_ok=True)
    rows = []
    for text in a.shapes:
        M, N, K = (int(x) for x in text.split(","))
        task = Task("gemm", a.template, (M, N, K))
        log = os.path.join(a.logs, f"gemm_{M}x{N}x{K}.jsonl")
        t0 = time.perf_counter()
        trials = 0
        if a.time not in ("0", "0s"):
            res = tune(task, log, trials=100000, time_s=a.time, resume=True, progress=False)
            trials = res.measured
        tuned_s = time.perf_counter() - t0
        with apply_best(log):
            s, args = ts.tune.instantiate("gemm", a.template, (M, N, K))
        f = ts.build(s, args, target="opencl")
        rng = np.random.default_rng(0)
        x, y = random_array((M, K), "float32", rng), random_array((K, N), "float32", rng)
        out = np.full((M, N), np.nan, np.float32)
        f(x, y, out)
        err = relative_error(out, x.astype(np.float64) @ y.astype(np.float64))
        if not err <= 1e-5:
            raise SystemExit(f"{text}: tuned kernel wrong (relative error {err:.1e})")
        ours, theirs = [], []
        for _ in range(a.repeat):  # alternate, so both see the same machine
            ours += timed(lambda: f(x, y, out), 1)
            theirs += timed(lambda: np.matmul(x, y), 1)
        flop = 2 * M * N * K
        g_ours = flop / statistics.median(ours) / 1e9
        g_np = flop / statistics.median(theirs) / 1e9
        rows.append(
            [
                f"{M}x{N}x{K}",
                f"{trials}",
                f"{tuned_s:.0f} s",
                f"{g_ours:.1f}",
                f"{g_np:.1f}",
                f"{g_ours / g_np:.2f}x",
            ]
        )
        print(f"{text}: {g_ours:.1f} GFLOP/s vs numpy {g_np:.1f} (error {err:.1e})", flush=True)
    print()
    print_table(["GEMM", "trials", "tuning", "tensorsched GFLOP/s", "numpy GFLOP/s", "ratio"], rows)


if __name__ == "__main__":
    main()
