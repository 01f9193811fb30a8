"""What the probes of generated GEMM kernels share (``prefetch_probe.py``, ``async_probe.py``,
``sass_probe.py``, ``timing_probe.py``, ``cuda_launch_probe.py``, ``clock_probe.py``,
``peel_probe.py``, ``split_probe.py``, ``remeasure_probe.py``): the fastest logged config (of
a kind), random GEMM operands with their float64 product, the parts of a double-buffered K
loop, and checking and timing kernel variants or configs side by side on the device in use."""

import json
import re
import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from tensorsched.runtime.device import current_device
from tensorsched.runtime.numerics import relative_error


def gemm_operands(
    M: int, N: int, K: int, queue: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Any]]:
    """``(a, b, a @ b in float64, [A, B, C] on queue)`` of an ``M x N x K`` GEMM: ``a`` and
    ``b`` random (seed 0), ``C`` an uninitialised device array."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    dev = [cla.to_device(queue, a), cla.to_device(queue, b), cla.empty(queue, (M, N), np.float32)]
    return a, b, a.astype(np.float64) @ b, dev


def fastest(path: str) -> dict:
    """The fastest ok record of a log."""
    rs = [json.loads(line) for line in open(path) if line.strip()]
    return min((r for r in rs if r.get("status") == "ok"), key=lambda r: r["device_ms"])


def best_both(path: str, **knobs: Any) -> dict | None:
    """The fastest ok record of a log with ``double_buffer="both"``, no split-K, a guarded
    K loop (not peeled) and the given knob values (compared as text)."""
    rs = [json.loads(l) for l in open(path) if l.strip()]
    ok = [
        r
        for r in rs
        if r.get("status") == "ok"
        and r["config"].get("double_buffer") == "both"
        and r["config"].get("split_k", 1) == 1
        and r["config"].get("tail_k", "guard") == "guard"
        and all(str(r["config"].get(k)) == str(v) for k, v in knobs.items())
    ]
    return min(ok, key=lambda r: r["device_ms"]) if ok else None


def built(record: dict, **knobs: Any) -> tuple[Any, str, Any]:
    """``(task, OpenCL C, KernelInfo of its first kernel)`` of a log record's config with
    ``knobs`` changed, the kernels named ``g_*``; ``ValueError`` naming the constraints the
    config breaks where it is not valid."""
    import tensorsched as ts
    from tensorsched.tune.task import Task

    task = Task.from_dict(record["task"])
    s, args, cfg = task.instantiate({**record["config"], **knobs})
    if not cfg.valid:
        raise ValueError(f"{task}: {', '.join(cfg.constraints)}")
    mod = ts.build(s, args, target="opencl", name="g")
    return task, mod.get_source(), mod.source.kernels[0]


@dataclass
class BothLoop:
    """The K loop ``double_buffer("both")`` writes: ``for (k_outer ...) { if (not last)
    {ahead: next step's global loads into registers} compute; if (not last) {stores: the
    registers into the other __local buffer} barrier }``, as lists of source lines."""

    lines: list[str]  # the whole kernel
    start: int  # index of the ``for`` line
    end: int  # index of its closing ``  }``
    steps: int  # the loop's trip count
    ahead: list[str]
    compute: list[str]
    stores: list[str]


def both_loop(src: str) -> BothLoop:
    lines = src.split("\n")
    start = next(
        i for i, l in enumerate(lines) if l.startswith("  for (int k_outer = 0; k_outer < ")
    )
    steps = int(re.search(r"k_outer < (\d+);", lines[start]).group(1))
    guard = f"if (k_outer < {steps - 1}) {{"
    end = next(i for i in range(start + 1, len(lines)) if lines[i] == "  }")
    body = lines[start + 1 : end]
    assert body[0].strip() == guard, body[0]
    j = next(i for i in range(1, len(body)) if body[i] == "    }")
    k = next(i for i in range(j + 1, len(body)) if body[i].strip() == guard)
    m = next(i for i in range(k + 1, len(body)) if body[i] == "    }")
    assert body[m + 1].strip() == "barrier(CLK_LOCAL_MEM_FENCE);" and m + 2 == len(body), body[m:]
    return BothLoop(lines, start, end, steps, body[1:j], body[j + 1 : k], body[k + 1 : m])


def run_variants(
    variants: dict[str, tuple[str, Any]], name: str, M: int, N: int, K: int, reps: int = 6
) -> dict[str, tuple[float, float]]:
    """``{variant: (median microseconds, relative error)}`` of GEMM kernels named ``name``,
    ``{variant: (source, KernelInfo of its launch)}``: each built, checked on random data
    against float64 numpy into a NaN-poisoned output, then timed by profiling events in
    ``reps`` rounds that alternate the variants' order (15 launches a round, the first 3
    dropped). A variant that does not build is reported and left out."""
    dev = current_device()
    q = dev.queue
    _, _, ref, (da, db, _) = gemm_operands(M, N, K, q)
    kern, err = {}, {}
    for v, (text, info) in variants.items():
        try:
            kern[v] = cl.Kernel(cl.Program(dev.context, text).build(), name)
        except cl.Error as e:
            print(v, "build failed:", str(e)[:1500])
            continue
        out = cla.to_device(q, np.full((M, N), np.nan, np.float32))
        kern[v].set_args(da.data, db.data, out.data)
        cl.enqueue_nd_range_kernel(q, kern[v], info.global_size, info.local_size).wait()
        err[v] = relative_error(out.get(), ref)
    times: dict[str, list[float]] = {v: [] for v in kern}
    out = cla.empty(q, (M, N), np.float32)
    order = list(kern)
    for rep in range(reps):
        for v in order if rep % 2 == 0 else order[::-1]:
            info = variants[v][1]
            kern[v].set_args(da.data, db.data, out.data)
            t = []
            for _ in range(15):
                ev = cl.enqueue_nd_range_kernel(q, kern[v], info.global_size, info.local_size)
                ev.wait()
                t.append((ev.profile.end - ev.profile.start) * 1e-3)
            times[v].append(statistics.median(t[3:]))
    return {v: (statistics.median(times[v]), err[v]) for v in kern}


def time_configs(
    task: Any, configs: dict[str, dict], queue: Any, rounds: int = 7
) -> dict[str, float]:
    """``{name: median microseconds}`` of a GEMM task's ``configs`` (``{name: config}``): each
    built (one the template refuses is left out), checked against float64 numpy into a
    NaN-poisoned output (a wrong one is reported and left out), then timed alternately by
    profiling events: ``rounds`` rounds of ``time_evaluator`` medians of 15 runs each."""
    import tensorsched as ts

    _, _, ref, arrs = gemm_operands(*task.shape, queue)
    mods = {}
    for name, config in configs.items():
        s, args, cfg = task.instantiate(config)
        if not cfg.valid:
            continue
        mod = ts.build(s, args, target="opencl")
        arrs[2].fill(np.nan)
        mod(*arrs)
        err = np.abs(arrs[2].get() - ref).max() / np.abs(ref).max()
        if not err < 1e-5:
            print(f"  {name}: WRONG, error {err:.1e}: {config}")
            continue
        mods[name] = mod
    times: dict[str, list[float]] = {name: [] for name in mods}
    for _ in range(rounds):
        for name, mod in mods.items():
            t = mod.time_evaluator(number=1, repeat=15, warmup=2)(*arrs)
            times[name].append(t.device_median * 1e6)
    for name, mod in mods.items():  # still right after hundreds of runs (counters reset)
        arrs[2].fill(np.nan)
        mod(*arrs)
        err = np.abs(arrs[2].get() - ref).max() / np.abs(ref).max()
        if not err < 1e-5:
            print(f"  {name}: WRONG after timing, error {err:.1e}")
            times.pop(name)
    return {name: statistics.median(v) for name, v in times.items()}
