"""Tuning rate on the CPU OpenCL device: trials per minute of ``ts.tune.tune`` for GEMM tasks,
and how much the parallel prebuild adds.

For each task the same ``--trials`` random configs (``--seed``) are tuned, from an empty log,
in three ways:

- ``no prebuild``: the pool's build is a no-op; the measuring worker builds each candidate;
- ``n_build=1``: one pool process builds each batch ahead of its measurement;
- ``n_build=N``: ``os.cpu_count()`` pool processes build each batch in parallel (the default).

Every run starts with an empty PoCL kernel cache (``POCL_CACHE_DIR`` in a fresh folder), so the
compiler's work is counted every time; the wall time of ``tune()`` includes starting its
worker processes. The rates are medians of ``--repeat`` runs, interleaved by mode.

    python benchmarks/tuning_rate.py [--trials 40] [--repeat 3] [--quick]

On PoCL the prebuild hardly matters: ``clBuildProgram`` (what the pool runs) is the small part
of the compile; PoCL compiles each kernel's work-group function, specialized for its local
size, at its first launch, which happens in the measuring worker (for the ``cpu`` template at
256^3: about 1.5 s at build, 4 to 22 s at the first launch, depending on the register tile).
On drivers that compile at ``clBuildProgram`` the pool takes that work off the measurement.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

from tensorsched.runtime.device import current_device
from tensorsched.tune import tuner
from tensorsched.tune.log import read_log
from tensorsched.tune.task import Task

TASKS = [("cpu", (256, 256, 256)), ("gpu_tiled", (128, 128, 128))]


def no_prebuild(task_dict, config, device):
    """A pool job that builds nothing: the measuring worker compiles the candidate."""
    return "ok", ""


def one_run(task, mode, trials, seed, workdir):
    """``(seconds, counts)`` of one tuning run from an empty log and an empty kernel cache."""
    run_dir = tempfile.mkdtemp(dir=workdir)
    os.environ["POCL_CACHE_DIR"] = os.path.join(run_dir, "pocl-cache")
    log = os.path.join(run_dir, "log.jsonl")
    n_build = 1 if mode in ("none", 1) else os.cpu_count()
    real = tuner.prebuild
    if mode == "none":
        tuner.prebuild = no_prebuild
    try:
        t0 = time.perf_counter()
        res = tuner.tune(task, log, strategy="random", trials=trials, seed=seed,
                         n_build=n_build, repeat=3, timeout=60, progress=False)
        seconds = time.perf_counter() - t0
    finally:
        tuner.prebuild = real
    assert len(read_log(log)) == trials, "every trial is logged"
    return seconds, res.counts


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=40)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="12 trials, 1 run, cpu template only")
    args = p.parse_args()
    tasks = TASKS
    if args.quick:
        args.trials, args.repeat, tasks = 12, 1, TASKS[:1]

    dev = current_device()
    ncpu = os.cpu_count()
    modes = ["none", 1, ncpu] if ncpu > 1 else ["none", 1]
    label = {"none": "no prebuild", 1: "n_build=1", ncpu: f"n_build={ncpu}"}
    print(f"device: {dev.name} ({dev.platform_name}), {ncpu} CPUs; {args.trials} random "
          f"trials per run (seed {args.seed}), median of {args.repeat} run(s), cold kernel "
          "cache\n", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ts-tuning-rate-") as workdir:
        for name, shape in tasks:
            task = Task("gemm", name, shape)
            times = {m: [] for m in modes}
            counts = {}
            for _ in range(args.repeat):
                for m in modes:
                    sec, counts[m] = one_run(task, m, args.trials, args.seed, workdir)
                    times[m].append(sec)
                    print(f"  {task} {label[m]:<12} {sec:6.1f} s", flush=True)
            base = statistics.median(times[1])
            for m in modes:
                sec = statistics.median(times[m])
                status = ", ".join(f"{k} {v}" for k, v in sorted(counts[m].items()))
                rows.append([str(task), label[m], f"{sec:.1f}",
                             f"{args.trials / sec * 60:.0f}", f"{base / sec:.2f}x", status])
    print()
    head = ["task", "build", "seconds", "trials/min", "vs n_build=1", "trials"]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    fmt = " | ".join(f"{{:<{w}}}" for w in widths)
    print(fmt.format(*head))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(fmt.format(*r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
