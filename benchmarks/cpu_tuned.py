"""Tuned GEMM on the CPU OpenCL device against numpy, side by side in one run, at any shape.

Every shape's ``cpu`` GEMM template is tuned with the default model strategy for at most
``--time`` (into ``<--logs>/gemm_MxNxK.jsonl``, resumed when it exists); then, with the tuner's
processes gone (right after a tuning run PoCL ran at half speed), each shape's best config is
rebuilt, checked against numpy (poisoned output, random inputs) and timed against
``numpy.matmul`` on the same inputs, in three rounds of ``--repeat`` runs of each, each block
after a pause and three unmeasured runs (OpenBLAS's threads spin for a while after a call and
slow whatever runs next: alternating calls cost PoCL a third of its speed), medians: the
kernel on arrays already on the device (wall clock from launch to ``finish``), as an
application that keeps its buffers there runs it, numpy on its arrays. The last two columns
time the kernels alone by OpenCL's profiling events, without what a call costs around them
(on PoCL, 35-70 us of waking its threads and back: most of a small GEMM's gap to numpy).
``--time 0`` measures the logs' best without tuning. ``--awake``: tuning and measuring with
every core kept from halting (``ts.runtime.awake_cores``), for virtual machines that slow a
core once it has halted.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        .venv/bin/python benchmarks/cpu_tuned.py --time 2m --logs /tmp/cpu_logs \\
        --shapes 1000,1000,1000 4095,257,1023 512,512,512

Measure on a quiet machine: numpy's two threads slow down more than PoCL's under load.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time

import numpy as np
import pyopencl.array as cla

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.awake import awake_cores  # noqa: E402
from tensorsched.runtime.numerics import random_array, relative_error  # noqa: E402
from tensorsched.runtime.table import print_table  # noqa: E402
from tensorsched.tune.dispatch import apply_best  # noqa: E402
from tensorsched.tune.log import read_log  # noqa: E402
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


def block(fn, repeat: int) -> list[float]:
    """``repeat`` timed runs of ``fn`` after a pause and three unmeasured ones, so that neither
    contender runs while the other's threads still spin."""
    time.sleep(0.5)
    timed(fn, 3)
    return timed(fn, repeat)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", nargs="+", default=list(SHAPES), help="M,N,K ...")
    p.add_argument("--time", default="2m", help="tuning budget per shape (0: measure only)")
    p.add_argument("--logs", required=True, help="folder of the tuning logs")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--template", default="cpu")
    p.add_argument(
        "--awake",
        action="store_true",
        help="tune and measure with every core kept from halting (ts.runtime.awake_cores: a "
        "spinner at idle priority on each, numpy's runs included)",
    )
    a = p.parse_args(argv)
    with awake_cores() if a.awake else contextlib.nullcontext():
        run(a)


def run(a: argparse.Namespace) -> None:
    os.makedirs(a.logs, exist_ok=True)
    shapes = [tuple(int(x) for x in text.split(",")) for text in a.shapes]
    logs = {sh: os.path.join(a.logs, "gemm_{}x{}x{}.jsonl".format(*sh)) for sh in shapes}
    if a.time not in ("0", "0s"):  # tune every shape first, measure after: the tuner's
        for sh in shapes:  # processes are gone by then
            tune(Task("gemm", a.template, sh), logs[sh], trials=100000, time_s=a.time,
                 resume=True, progress=False)  # fmt: skip
        time.sleep(2)
    rows = []
    for M, N, K in shapes:
        text, log = f"{M},{N},{K}", logs[(M, N, K)]
        recs = read_log(log)
        trials = len(recs)
        tuned_s = max(r.timestamp for r in recs) - min(r.timestamp for r in recs) if recs else 0
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
        # the kernel on device-resident arrays (an application keeps its buffers on the
        # device; on a CPU device they are host memory), wall clock of launch to finish
        q = f.device.queue
        dx, dy, dout = (cla.to_device(q, v) for v in (x, y, out))
        ours, theirs = [], []
        for _ in range(3):  # blocks, each after a pause and 3 unmeasured runs: OpenBLAS's
            ours += block(lambda: (f(dx, dy, dout), q.finish()), a.repeat)  # threads spin for
            theirs += block(lambda: np.matmul(x, y), a.repeat)  # a while after a call
        flop = 2 * M * N * K
        g_ours = flop / statistics.median(ours) / 1e9
        g_np = flop / statistics.median(theirs) / 1e9
        # the kernels alone, by the device's profiling events (without the call's cost)
        time.sleep(0.5)
        events = f.time_evaluator(number=1, repeat=3 * a.repeat)(dx, dy, dout).device_times
        g_events = flop / statistics.median(events) / 1e9
        rows.append(
            [
                f"{M}x{N}x{K}",
                f"{trials}",
                f"{tuned_s:.0f} s",  # first to last logged trial
                f"{g_ours:.1f}",
                f"{g_np:.1f}",
                f"{g_ours / g_np:.2f}x",
                f"{g_events:.1f}",
                f"{g_events / g_np:.2f}x",
            ]
        )
        print(
            f"{text}: {g_ours:.1f} GFLOP/s vs numpy {g_np:.1f}; kernel by events {g_events:.1f} "
            f"(error {err:.1e})",
            flush=True,
        )
    print()
    head = ["GEMM", "trials logged", "tuning", "tensorsched GFLOP/s", "numpy GFLOP/s", "ratio"]
    head += ["kernel by events GFLOP/s", "its ratio"]
    print_table(head, rows)


if __name__ == "__main__":
    main()
