"""Tuning rate: trials per minute of ``ts.tune.tune`` for GEMM tasks, and how much the parallel
prebuild adds; with ``--gpu``, the rate of tuning ``gpu_tiled`` at 4096^3 on the GPU.

For each task the same ``--trials`` random configs (``--seed``) are tuned, from an empty log,
in up to three ways:

- ``no prebuild``: the pool's job is a no-op; the measuring worker builds each candidate;
- ``n_build=1``: one pool process builds the candidates ahead of their measurement;
- ``n_build=N``: ``os.cpu_count()`` pool processes build them in parallel (the default).

Every run starts with empty kernel caches (``POCL_CACHE_DIR`` and ``CUDA_CACHE_PATH`` in a
fresh folder), so the compiler's work is counted every time; the wall time of ``tune()``
includes starting its worker processes and making the task's inputs and reference. The rates
are medians of ``--repeat`` runs, interleaved by mode. Below the table, where the time of the
last run of each mode went (``TuneResult.stats``): waiting for the pool's builds, the runner
(loading the built module, checking, timing) and writing the log.

    python benchmarks/tuning_rate.py [--trials 40] [--repeat 3] [--quick]
    python benchmarks/tuning_rate.py --gpu            # 300 trials of gpu_tiled 4096^3, n_build=N
    python benchmarks/tuning_rate.py --strategy model --modes N --trials 40
    python benchmarks/tuning_rate.py --proposal 64    # the model strategy's driver alone

With ``--strategy model`` the runs tune with the cost model (the configs differ from run to
run as the model learns); every run's table row also gives the driver's proposal rate:
candidates proposed per minute of the proposer's time (choosing them, learning each trial;
``TuneResult.stats["propose_s"]``).

``--proposal N`` measures the model strategy's driver alone, with no device: N candidates of
``gpu_tiled`` at 784x512x4608 (a shape of the shipped H200 log, held out) proposed under the
H200's limits, learning the log's other shapes first, each candidate told a made-up result at
once; with the candidates lowered in this process and in a pool of ``min(os.cpu_count(), 8)``
processes (as ``tune`` does with its default ``n_build``). It prints the set-up (learning the
log) and the candidates proposed per minute.

On PoCL the prebuild matters less than on a GPU driver: ``clBuildProgram`` (what the pool runs)
is the small part of the compile; PoCL compiles each kernel's work-group function, specialized
for its local size, at its first launch, which happens in the measuring worker (for the
``cpu`` template at 256^3: about 1.5 s at build, 4 to 22 s at the first launch, depending on
the register tile). On drivers that compile at ``clBuildProgram`` the pool takes all of the
compile, and the lowering, off the measurement.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
import zlib

from tensorsched.runtime.device import DeviceLimits, current_device
from tensorsched.runtime.table import print_table
from tensorsched.tune import features, model, tuner
from tensorsched.tune.log import read_log
from tensorsched.tune.record import config_key
from tensorsched.tune.task import Task

TASKS = [("cpu", (256, 256, 256)), ("gpu_tiled", (128, 128, 128))]
GPU_TASKS = [("gpu_tiled", (4096, 4096, 4096))]


def no_prebuild(task_dict, config, device, limits=None, binary=None):
    """A pool job that builds nothing: the measuring worker builds the candidate."""
    return "ok", "", None


# the H200 through NVIDIA's OpenCL, as DeviceLimits.of reads it there (the shipped log's device)
H200 = DeviceLimits("NVIDIA CUDA / NVIDIA H200", 1024, (1024, 1024, 64), 48 * 1024)
HELD_OUT = Task("gemm", "gpu_tiled", (784, 512, 4608))


def proposal_rate(n, workers, seed=0):
    """``(setup seconds, candidates proposed per minute, lowered)`` of the model strategy's
    proposer alone (``--proposal``)."""
    features._MEMO.clear()  # each run lowers what it needs, as a fresh process does
    past = model.history(HELD_OUT, H200.name, model.shipped_logs(H200.name))
    past = [r for r in past if r.task_key() != HELD_OUT.key()]
    t0 = time.perf_counter()
    prop = model.ModelProposer(HELD_OUT, HELD_OUT.space(), H200, past, seed, workers=workers)
    try:
        t1 = time.perf_counter()
        for _ in range(n):
            c = prop.next()
            fake = 1000.0 + zlib.crc32(config_key(c).encode()) % 20000  # GFLOP/s, made up
            prop.observe(c, "ok", fake)
        t2 = time.perf_counter()
    finally:
        prop.close()
    return t1 - t0, n / (t2 - t1) * 60, prop.lowering.lowered


def proposal_main(n, repeat):
    cpus = os.cpu_count() or 1
    pool = min(cpus, model.LOWER_WORKERS)
    modes = [0, pool] if pool >= 2 else [0]
    print(
        f"the model strategy's proposer alone: {n} candidates of {HELD_OUT} under {H200.name}'s "
        f"limits, learning the shipped log's other shapes first; {cpus} CPUs, median of "
        f"{repeat} run(s)\n",
        flush=True,
    )
    got = {m: [] for m in modes}
    for _ in range(repeat):
        for m in modes:
            got[m].append(proposal_rate(n, m))
            setup, rate, lowered = got[m][-1]
            print(
                f"  lowering workers {m}: set-up {setup:.1f} s, {rate:.0f} proposed/min", flush=True
            )
    rows = []
    for m in modes:
        rows.append(
            [
                "in this process" if m == 0 else f"pool of {m}",
                f"{statistics.median(r[0] for r in got[m]):.1f}",
                f"{statistics.median(r[1] for r in got[m]):.0f}",
                str(got[m][-1][2]),
            ]
        )
    print()
    print_table(["lowering", "set-up s", "proposed/min", "lowered"], rows)
    return 0


def one_run(task, mode, trials, seed, workdir, repeat=3, strategy="random"):
    """``(seconds, result)`` of one tuning run from an empty log and empty kernel caches."""
    run_dir = tempfile.mkdtemp(dir=workdir)
    os.environ["POCL_CACHE_DIR"] = os.path.join(run_dir, "pocl-cache")
    os.environ["CUDA_CACHE_PATH"] = os.path.join(run_dir, "cuda-cache")
    log = os.path.join(run_dir, "log.jsonl")
    n_build = 1 if mode in ("none", 1) else os.cpu_count()
    real = tuner.prebuild
    if mode == "none":
        tuner.prebuild = no_prebuild
    try:
        t0 = time.perf_counter()
        res = tuner.tune(
            task,
            log,
            strategy=strategy,
            trials=trials,
            seed=seed,
            n_build=n_build,
            repeat=repeat,
            timeout=60,
            progress=False,
            verify=0,  # the rate of trials alone
        )
        seconds = time.perf_counter() - t0
    finally:
        tuner.prebuild = real
    assert len(read_log(log)) == trials, "every trial is logged"
    return seconds, res


def proposed_per_min(res):
    """Candidates the driver's proposer gave per minute of its own time."""
    st = res.stats
    return st.get("proposed", 0) / st["propose_s"] * 60 if st.get("propose_s") else 0.0


def breakdown(res):
    """Where a run's time went, from ``TuneResult.stats``."""
    st = res.stats
    n = max(res.on_device, 1)
    return (
        f"wait for builds {st.get('wait_build_s', 0):.1f} s, runner {st.get('runner_s', 0):.1f} s"
        f" (per measured config: load {st.get('load_s', 0) / n * 1e3:.0f} ms, check "
        f"{st.get('check_s', 0) / n * 1e3:.0f} ms, time {st.get('time_s', 0) / n * 1e3:.0f} ms"
        f" over {st.get('repeats', 0) / n:.1f} runs), log {st.get('log_s', 0):.1f} s; "
        f"inputs made {st.get('uploads', 0)}x, runner restarts {st.get('restarts', 0)}, "
        f"built by the runner {st.get('built_by_runner', 0)}; proposer "
        f"{st.get('propose_s', 0):.1f} s for {st.get('proposed', 0):.0f} candidates"
        + (
            f" (IR features: {st['lowered']:.0f} lowered in {st['lower_s']:.1f} s, learning "
            f"the logs in {st.get('setup_s', 0):.1f} s included)"
            if "lowered" in st
            else ""
        )
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=None, help="default 40 (--gpu: 300)")
    p.add_argument("--repeat", type=int, default=None, help="runs per mode (default 3, --gpu 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--timed",
        type=int,
        default=None,
        help="timed runs per candidate (tune's repeat; default 3, --gpu 5 as the tune command)",
    )
    p.add_argument("--quick", action="store_true", help="12 trials, 1 run, cpu template only")
    p.add_argument("--gpu", action="store_true", help="gpu_tiled 4096^3, n_build=cpu_count only")
    p.add_argument("--shape", help="M,N,K instead of the default tasks' shapes")
    p.add_argument("--template", help="the template (with --shape)")
    p.add_argument("--modes", help="comma-separated of none,1,N (default: all; --gpu: N)")
    p.add_argument("--strategy", choices=tuner.STRATEGIES, default="random")
    p.add_argument(
        "--proposal",
        type=int,
        metavar="N",
        help="measure the model strategy's proposer alone: N candidates, no device",
    )
    args = p.parse_args()
    if args.proposal:
        return proposal_main(args.proposal, args.repeat or 3)
    tasks = GPU_TASKS if args.gpu else TASKS
    trials = args.trials or (300 if args.gpu else 40)
    repeat = args.repeat or (1 if args.gpu else 3)
    timed = args.timed or (5 if args.gpu else 3)
    if args.quick:
        trials, repeat, tasks = 12, 1, TASKS[:1]
    if args.shape:
        tasks = [(args.template or tasks[0][0], tuple(int(x) for x in args.shape.split(",")))]

    dev = current_device()
    ncpu = os.cpu_count()
    modes = ["none", 1, ncpu] if ncpu > 1 else ["none", 1]
    if args.gpu:
        modes = [ncpu]
    if args.modes:
        modes = [
            ncpu if m == "N" else (m if m == "none" else int(m)) for m in args.modes.split(",")
        ]
    label = {m: "no prebuild" if m == "none" else f"n_build={m}" for m in modes}
    print(
        f"device: {dev.name} ({dev.platform_name}), {ncpu} CPUs; {trials} {args.strategy} "
        f"trials per run (seed {args.seed}), {timed} timed runs per candidate at most, median "
        f"of {repeat} run(s), cold kernel caches\n",
        flush=True,
    )
    rows, notes = [], []
    base_mode = 1 if 1 in modes else modes[0]
    with tempfile.TemporaryDirectory(prefix="ts-tuning-rate-") as workdir:
        for name, shape in tasks:
            task = Task("gemm", name, shape)
            times = {m: [] for m in modes}
            results = {}
            for _ in range(repeat):
                for m in modes:
                    sec, results[m] = one_run(
                        task, m, trials, args.seed, workdir, timed, args.strategy
                    )
                    times[m].append(sec)
                    print(
                        f"  {task} {label[m]:<12} {sec:6.1f} s  {trials / sec * 60:6.1f} "
                        f"trials/min",
                        flush=True,
                    )
            base = statistics.median(times[base_mode])
            for m in modes:
                sec = statistics.median(times[m])
                res = results[m]
                status = ", ".join(f"{k} {v}" for k, v in sorted(res.counts.items()))
                rows.append(
                    [
                        str(task),
                        label[m],
                        f"{sec:.1f}",
                        f"{trials / sec * 60:.0f}",
                        f"{res.on_device / res.seconds * 60:.0f}",
                        f"{base / sec:.2f}x",
                        f"{proposed_per_min(res):.0f}",
                        status,
                    ]
                )
                notes.append(f"{task} {label[m]}: {breakdown(res)}")
    print()
    head = [
        "task",
        "build",
        "seconds",
        "trials/min",
        "on device/min",
        f"vs {label[base_mode]}",
        "proposed/min",
        "trials",
    ]
    print_table(head, rows)
    print()
    for n in notes:
        print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
