"""Where a GPU tuning trial's time goes, a probe: how many configs a minute the tuner measures,
and what bounds that rate.

1. Serial, in this process, for ``N`` random valid configs of each shape: the seconds to
   instantiate, lower and generate the code (``build_candidate`` without ``compile``), and
   to build the OpenCL program on the device (the same with ``compile``, less the first);
   each config's source is new to the driver (random configs, no repeats).
2. The tuner itself (``tune``, model search from the shipped log, into a fresh log) for
   ``SECONDS`` on each shape with ``BUILD`` build workers: configs a minute, the best, and
   its ``stats`` (seconds waiting for builds, in the runner, loading, checking, timing,
   proposing, lowering in the proposer); once for each of ``VARIANTS`` (``;``-separated,
   each ``batch=B,lowerers=L`` or empty: the model strategy's batch and the most lowering
   processes, set in this process).

    . benchmarks/gpu/gpu_env.sh && [N=24] [SECONDS=40] [BUILD=15] [VARIANTS=";batch=16"] \\
        python benchmarks/gpu/throughput_probe.py MxNxK [MxNxK ...]
"""

import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import numpy as np  # noqa: E402

from tensorsched.runtime.device import current_device, current_limits  # noqa: E402
from tensorsched.tune import Task, model, tune, tuner  # noqa: E402
from tensorsched.tune.measure import build_candidate  # noqa: E402


def serial(task: Task, n: int, rng: np.random.Generator) -> None:
    if n <= 0:
        return
    space = task.space()
    limits = current_limits()
    gen_s, cl_s, seen = [], [], set()
    tries = 0
    while len(cl_s) < n and tries < 50 * n:
        tries += 1
        config = space.point(int(rng.integers(space.size())))
        key = json.dumps(config, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        t0 = time.perf_counter()
        status, _, art, _ = build_candidate(task.to_dict(), config, limits, compile=False)
        t1 = time.perf_counter()
        if status != "ok":
            continue
        status, _, _, mod = build_candidate(task.to_dict(), config, limits, compile=True)
        t2 = time.perf_counter()
        if mod is None:
            continue
        gen_s.append(t1 - t0)
        cl_s.append((t2 - t1) - (t1 - t0))
    print(
        f"  serial {task}: {len(cl_s)} configs ({tries} drawn); lower+codegen median "
        f"{statistics.median(gen_s) * 1e3:.0f} ms, OpenCL build median "
        f"{statistics.median(cl_s) * 1e3:.0f} ms (max {max(cl_s) * 1e3:.0f})"
    )


def tuned(task: Task, seconds: float, build: int, variant: str) -> None:
    """``tune`` for ``seconds`` with the proposer's settings of ``variant`` (``batch=16``,
    ``lowerers=12``, comma-separated; empty: as shipped), patched in this process: the model
    strategy's batch (and the queue it runs ahead, two batches), and the most processes that
    lower its candidates."""
    patches = contextlib.ExitStack()
    for item in filter(None, variant.split(",")):
        name, value = item.split("=")
        if name == "batch":
            patches.enter_context(mock.patch.object(tuner, "ModelProposer", _batched(int(value))))
            patches.enter_context(mock.patch.object(tuner, "BATCH", int(value)))
        else:
            patches.enter_context(mock.patch.object(tuner, "LOWER_WORKERS", int(value)))
    with patches, tempfile.TemporaryDirectory() as d:
        r = tune(task, os.path.join(d, "log.jsonl"), time_s=seconds, n_build=build, progress=False)
    st = {k: round(v, 1) if isinstance(v, float) else v for k, v in sorted(r.stats.items())}
    best = f"{r.best.gflops / 1e3:.2f} TFLOP/s" if r.best and r.best.gflops else "none"
    print(f"  tune {task} [{variant or 'as shipped'}]: {r.measured} logged in {r.seconds:.0f} s "
          f"= {r.rate:.0f} a minute, best {best}, counts {r.counts}")  # fmt: skip
    print(f"    stats {st}")


def _batched(batch: int) -> type:
    """``ModelProposer`` proposing ``batch`` candidates a round."""

    class Batched(model.ModelProposer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "batch": batch})

    return Batched


def main() -> None:
    n = int(os.environ.get("N", "24"))
    seconds = float(os.environ.get("SECONDS", "40"))
    build = int(os.environ.get("BUILD", str(max((os.cpu_count() or 2) - 1, 1))))
    rng = np.random.default_rng(0)
    tasks = [Task("gemm", "gpu_tiled", tuple(int(x) for x in s.split("x"))) for s in sys.argv[1:]]
    print(f"device {current_device()}; cpus {os.cpu_count()}; build workers {build}")
    for t in tasks:
        serial(t, n, rng)
    for variant in os.environ.get("VARIANTS", "").split(";"):
        for t in tasks:
            tuned(t, seconds, build, variant)


if __name__ == "__main__":
    main()
