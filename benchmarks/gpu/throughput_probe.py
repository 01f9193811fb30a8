"""Where a GPU tuning trial's time goes, a probe: how many configs a minute the tuner measures,
and what bounds that rate.

1. Serial, in this process, for ``N`` random valid configs of each shape: the seconds to
   instantiate, lower and generate the code (``build_candidate`` without ``compile``), and
   to build the OpenCL program on the device (the same with ``compile``, less the first);
   each config's source is new to the driver (random configs, no repeats).
2. The tuner itself (``tune``, model search from the shipped log, into a fresh log) for
   ``SECONDS`` on each shape with ``BUILD`` build workers: configs a minute and its
   ``stats`` (seconds waiting for builds, in the runner, loading, checking, timing,
   proposing, lowering in the proposer).

    . benchmarks/gpu/gpu_env.sh && [N=24] [SECONDS=40] [BUILD=15] \\
        python benchmarks/gpu/throughput_probe.py MxNxK [MxNxK ...]
"""

import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import numpy as np  # noqa: E402

from tensorsched.runtime.device import current_device, current_limits  # noqa: E402
from tensorsched.tune import Task, tune  # noqa: E402
from tensorsched.tune.measure import build_candidate  # noqa: E402


def serial(task: Task, n: int, rng: np.random.Generator) -> None:
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


def tuned(task: Task, seconds: float, build: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        r = tune(task, os.path.join(d, "log.jsonl"), time_s=seconds, n_build=build,
                 progress=False)  # fmt: skip
    st = {k: round(v, 1) if isinstance(v, float) else v for k, v in sorted(r.stats.items())}
    print(f"  tune {task}: {r.measured} logged in {r.seconds:.0f} s = {r.rate:.0f} a minute, "
          f"counts {r.counts}")  # fmt: skip
    print(f"    stats {st}")


def main() -> None:
    n = int(os.environ.get("N", "24"))
    seconds = float(os.environ.get("SECONDS", "40"))
    build = int(os.environ.get("BUILD", str(max((os.cpu_count() or 2) - 1, 1))))
    rng = np.random.default_rng(0)
    tasks = [Task("gemm", "gpu_tiled", tuple(int(x) for x in s.split("x"))) for s in sys.argv[1:]]
    print(f"device {current_device()}; cpus {os.cpu_count()}; build workers {build}")
    for t in tasks:
        serial(t, n, rng)
    for t in tasks:
        tuned(t, seconds, build)


if __name__ == "__main__":
    main()
