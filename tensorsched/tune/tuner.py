"""The grid searcher: enumerate a task's knob space, filter, build in parallel, measure in a
worker with a timeout, check, and log every trial.

    result = tune(Task("gemm", "cpu", (1024, 1024, 1024)), "gemm.jsonl", trials=50)
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import TensorschedError
from .log import LogWriter, Record, best_records, config_key, read_log
from .measure import Runner, exit_with_parent, prebuild
from .task import Task

STRATEGIES = ("grid", "random")
PRIVATE_BYTES = 16 * 1024          # per work-item private arrays above this are filtered out


@dataclass
class DeviceLimits:
    name: str
    max_work_group_size: int
    max_work_item_sizes: tuple
    local_mem_size: int

    @classmethod
    def of(cls, device=None):
        from ..runtime.device import current_device, find_device
        dev = find_device(device) if device else current_device()
        return cls(f"{dev.platform_name} / {dev.name}", dev.max_work_group_size,
                   dev.max_work_item_sizes, dev.local_mem_size)


def early_filter(task, config, limits, private_bytes=PRIVATE_BYTES):
    """``None`` when the candidate may run on a device with ``limits``, else why not; decided
    from the lowered IR and the kernels' launch shapes, without building anything."""
    from ..codegen.opencl import emit_opencl
    from ..ir.dtype import NUMPY
    from ..ir.visitor import Visitor
    from ..schedules.lower import lower
    try:
        s, args, cfg = task.instantiate(config)
        if not cfg.valid:
            return "; ".join(cfg.constraints) or "constraint"
        func = lower(s, args)
        src = emit_opencl(func)
    except TensorschedError as exc:
        return f"{type(exc).__name__}: {exc}"
    for k in src.kernels:
        n = int(np.prod(k.local_size))
        if n > limits.max_work_group_size:
            return f"work-group of {n} over the device's {limits.max_work_group_size}"
        for d, e in enumerate(k.local_size):
            if e > limits.max_work_item_sizes[d]:
                return f"threadIdx.{'xyz'[d]} = {e} over the device's {limits.max_work_item_sizes[d]}"
    sizes = {"shared": 0, "local": 0}

    class _Alloc(Visitor):
        def visit_Allocate(self, a):
            if a.buffer.scope in sizes:
                sizes[a.buffer.scope] += a.buffer.size * np.dtype(NUMPY[a.buffer.dtype]).itemsize
            self.generic_visit(a)

    _Alloc().visit(func.body)
    if sizes["shared"] > limits.local_mem_size:
        return f"{sizes['shared']} bytes of __local memory over the device's {limits.local_mem_size}"
    if sizes["local"] > private_bytes:
        return f"{sizes['local']} bytes of private memory per work-item over {private_bytes}"
    return None


@dataclass
class TuneResult:
    task: Task
    log: str
    best: Record | None
    counts: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def measured(self):
        return sum(v for k, v in self.counts.items() if k not in ("skipped", "filtered"))


def candidate_order(task, strategy, seed=0):
    """The indices of the grid, in the order ``strategy`` visits them."""
    size = task.space().size()
    if strategy == "grid":
        return range(size)
    if strategy == "random":
        rng = np.random.default_rng(seed)
        if size <= 1_000_000:
            return rng.permutation(size).tolist()
        seen, out = set(), []
        while len(out) < min(size, 100_000):
            i = int(rng.integers(size))
            if i not in seen:
                seen.add(i)
                out.append(i)
        return out
    raise TensorschedError(f"unknown strategy '{strategy}'; use one of {', '.join(STRATEGIES)}")


def tune(task, log_path, strategy="grid", trials=None, resume=False, device=None, timeout=60.0,
         repeat=5, seed=0, n_build=None, progress=True):
    """Tune ``task``: measure up to ``trials`` candidates (all by default) and log each one.

    With ``resume``, configs already in the log for this task and device are skipped.
    Returns a ``TuneResult`` with the fastest correct record (from the whole log).
    """
    t0 = time.time()
    limits = DeviceLimits.of(device)
    if not device:              # the workers use this process's device (set_device() included)
        from ..runtime.device import current_device
        dev = current_device()
        device = f"{dev.platform_index}:{dev.device_index}"
    space = task.space()
    done = set()
    if resume:
        for r in read_log(log_path):
            if r.task_key() == task.key() and r.device == limits.name:
                done.add(r.config_key())
    elif os.path.exists(log_path) and any(r.task_key() == task.key() and r.device == limits.name
                                          for r in read_log(log_path)):
        raise TensorschedError(f"{log_path} already has trials of {task} on this device; pass "
                               "resume=True (--resume) to continue it, or choose another log")
    writer = LogWriter(log_path)
    runner = Runner(device, timeout)
    n_build = n_build or max(1, (os.cpu_count() or 2))

    def new_pool():
        return cf.ProcessPoolExecutor(n_build, mp_context=mp.get_context("spawn"),
                                      initializer=exit_with_parent)
    pool, pool_broken = new_pool(), False
    counts = {}
    budget = trials if trials is not None else space.size()
    bar = _progress(budget, str(task), progress)
    best = None

    def log(config, res):
        nonlocal best
        rec = Record(task=_task_dict(task), device=limits.name, config=config,
                     status=res["status"], device_ms=res.get("device_ms"),
                     host_ms=res.get("host_ms"), gflops=res.get("gflops"),
                     error=res.get("error", ""))
        writer.append(rec)
        counts[rec.status] = counts.get(rec.status, 0) + 1
        if rec.status == "ok" and (best is None or rec.device_ms < best.device_ms):
            best = rec
        bar.update(1)
        bar.set_postfix_str(f"best {best.gflops:.1f} GFLOP/s" if best else "no valid kernel yet")

    try:
        order = iter(candidate_order(task, strategy, seed))
        measured = 0
        while measured < budget:
            batch = []
            for idx in order:
                config = space.point(idx)
                if config_key(config) in done:
                    counts["skipped"] = counts.get("skipped", 0) + 1
                    continue
                batch.append(config)
                if len(batch) >= max(2 * n_build, 4) or len(batch) >= budget - measured:
                    break
            if not batch:
                break
            if pool_broken:                     # a build worker died in the last batch
                pool.shutdown(wait=False, cancel_futures=True)
                pool, pool_broken = new_pool(), False
            futures = {}
            for config in batch:
                why = early_filter(task, config, limits)
                if why is not None:
                    log(config, {"status": "invalid", "error": why})
                    measured += 1
                    continue
                futures[pool.submit(prebuild, _task_dict(task), config, device)] = config
            for fut in futures:                          # measure in grid order
                config = futures[fut]
                try:
                    status, error = fut.result()
                except Exception:                        # noqa: BLE001
                    # a build worker died (a compiler crash?) and took the pool's other builds
                    # with it: the runner builds these itself, with the timeout, and records the
                    # culprit as a crash
                    status, error, pool_broken = "ok", "", True
                if status != "ok":
                    log(config, {"status": status, "error": error})
                else:
                    log(config, runner.measure(_task_dict(task), config, repeat))
                measured += 1
    finally:
        bar.close()
        runner.close()
        pool.shutdown(wait=False, cancel_futures=True)
    all_best = best_records(read_log(log_path), task.key(), limits.name)
    return TuneResult(task, log_path, all_best.get(task.key()), counts, time.time() - t0)


def _task_dict(task):
    from dataclasses import asdict
    return asdict(task)


def _progress(total, desc, enabled):
    try:
        from tqdm import tqdm
    except ImportError:                                  # tqdm is a dependency; be robust
        tqdm = None
    if tqdm is None or not enabled:
        class _Null:
            def update(self, n):
                pass

            def set_postfix_str(self, s):
                pass

            def close(self):
                pass
        return _Null()
    return tqdm(total=total, desc=desc, unit="trial", leave=True, dynamic_ncols=True)
