"""The grid searcher: enumerate a task's knob space and measure candidates in order, with a
pipeline: a pool of build processes (``os.cpu_count()`` by default) instantiates, lowers,
filters and builds the next candidates while one worker process checks and times the current
one (from the build's artifact, on inputs that stay on the device), and every trial is logged
as it ends, in the search's order.

    result = tune(Task("gemm", "cpu", (1024, 1024, 1024)), "gemm.jsonl", trials=50)
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import multiprocessing as mp
import os
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

import numpy as np

from ..errors import TensorschedError
from ..runtime.device import DeviceLimits
from .filter import PRIVATE_BYTES, check_limits, early_filter  # noqa: F401
from .log import LogWriter, Record, best_records, config_key, read_log
from .measure import TIME_BUDGET_MS, Runner, exit_with_parent, prebuild, signature
from .task import Task

STRATEGIES = ("grid", "random")
MEASURED = ("ok", "wrong", "timeout", "crash", "error")  # statuses that reached the runner
LOAD_AHEAD = 2  # built candidates the runner loads while one runs


@dataclass
class TuneResult:
    task: Task
    log: str
    best: Record | None
    counts: dict = field(default_factory=dict)
    seconds: float = 0.0
    stats: dict = field(default_factory=dict)  # where the time went (see ``tune``)

    @property
    def measured(self):
        """Trials logged by this run (every status but ``skipped``)."""
        return sum(v for k, v in self.counts.items() if k not in ("skipped", "filtered"))

    @property
    def on_device(self):
        """Trials that ran on the device (or were meant to: ok, wrong, timeout, crash, error)."""
        return sum(v for k, v in self.counts.items() if k in MEASURED)

    @property
    def rate(self):
        """Trials logged per minute, start-up included."""
        return self.measured / self.seconds * 60 if self.seconds else 0.0


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


def tune(
    task,
    log_path,
    strategy="grid",
    trials=None,
    resume=False,
    device=None,
    timeout=60.0,
    repeat=5,
    seed=0,
    n_build=None,
    progress=True,
    budget_ms=TIME_BUDGET_MS,
    ahead=None,
    restrict=None,
):
    """Tune ``task``: measure up to ``trials`` candidates (all by default) and log each one.

    ``restrict`` (``{knob: [values]}``, see ``Config.restrict``) narrows the template's space
    that the grid or random search visits.

    With ``resume``, configs already in the log for this task and device are skipped.
    ``n_build`` build processes (default ``os.cpu_count()``) keep ``ahead`` candidates (default
    ``2 * n_build + 2``) built or building ahead of the one being measured. Each candidate is
    timed ``repeat`` times, or at least 3 times (``repeat`` if fewer) and until its timed runs
    took ``budget_ms`` on the device (``None``: always ``repeat``); ``timeout`` (seconds) bounds
    a candidate's check and timing.
    Returns a ``TuneResult`` with the fastest correct record (from the whole log) and, in
    ``stats``, seconds spent waiting for builds (``wait_build_s``), in the runner
    (``runner_s``: loading ``load_s``, check ``check_s``, timing ``time_s``) and logging
    (``log_s``), the inputs made on the device (``uploads``) and the runner's restarts.
    """
    t0 = time.time()
    limits = DeviceLimits.of(device)
    if not device:  # the workers use this process's device (set_device() included)
        from ..runtime.device import current_device

        dev = current_device()
        device = f"{dev.platform_index}:{dev.device_index}"
    space = task.space()
    if restrict:
        space.restrict(restrict)
    done = set()
    if resume:
        for r in read_log(log_path):
            if r.task_key() == task.key() and r.device == limits.name:
                done.add(r.config_key())
    elif os.path.exists(log_path) and any(
        r.task_key() == task.key() and r.device == limits.name for r in read_log(log_path)
    ):
        raise TensorschedError(
            f"{log_path} already has trials of {task} on this device; pass "
            "resume=True (--resume) to continue it, or choose another log"
        )
    writer = LogWriter(log_path)
    task_dict = _task_dict(task)
    runner = Runner(device, timeout, task_dict, _specs(task), limits)
    n_build = n_build or max(1, (os.cpu_count() or 2))
    ahead = ahead or 2 * n_build + 2

    def new_pool():
        return cf.ProcessPoolExecutor(
            n_build, mp_context=mp.get_context("spawn"), initializer=exit_with_parent
        )

    pool, generation = None, 0  # the pool, and how many pools came before it
    counts = {}
    budget = trials if trials is not None else space.size()
    bar = _progress(budget, str(task), progress)
    best = None
    stats = collections.Counter()
    uploads = {}  # runner process -> task inputs it made on the device

    def log(config, res):
        nonlocal best
        t = time.perf_counter()
        rec = Record(
            task=task_dict,
            device=limits.name,
            config=config,
            status=res["status"],
            device_ms=res.get("device_ms"),
            host_ms=res.get("host_ms"),
            gflops=res.get("gflops"),
            error=res.get("error", ""),
        )
        writer.append(rec)
        counts[rec.status] = counts.get(rec.status, 0) + 1
        if rec.status == "ok" and (best is None or rec.device_ms < best.device_ms):
            best = rec
        bar.update(1)
        bar.set_postfix_str(f"best {best.gflops:.1f} GFLOP/s" if best else "no valid kernel yet")
        stats["log_s"] += time.perf_counter() - t

    order = iter(candidate_order(task, strategy, seed))
    pending = collections.deque()  # (config, future, pool generation), in order
    submitted = 0

    def next_config():
        for idx in order:
            config = space.point(idx)
            if config_key(config) in done:
                counts["skipped"] = counts.get("skipped", 0) + 1
                continue
            return config
        return None

    def new_generation():
        nonlocal pool, generation
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        pool, generation = None, generation + 1

    def submit(config):
        nonlocal pool
        for _ in range(2):
            if pool is None:
                pool = new_pool()
            try:
                return pool.submit(prebuild, task_dict, config, device, limits)
            except (BrokenProcessPool, RuntimeError):  # broken since its last result was read
                new_generation()
        return None  # the runner builds it

    def top_up():
        nonlocal submitted
        while len(pending) < ahead and submitted < budget:
            config = next_config()
            if config is None:
                return
            fut = submit(config)
            pending.append((config, fut, generation))
            submitted += 1

    try:
        top_up()
        runner.start()  # it starts up while the pool builds the first ones
        while pending:
            config, fut, gen = pending.popleft()
            t = time.perf_counter()
            artifact = None
            try:
                status, error, artifact = fut.result() if fut is not None else ("ok", "", None)
            except Exception as exc:  # noqa: BLE001
                # a build worker died (a compiler crash?) and took the pool's other builds
                # with it: the runner builds these itself, with the timeout, and records the
                # culprit as a crash
                status, error = "ok", ""
                if isinstance(exc, BrokenProcessPool) and gen == generation:
                    new_generation()
            stats["wait_build_s"] += time.perf_counter() - t
            top_up()  # the pool builds on while this one is measured
            if status != "ok":
                log(config, {"status": status, "error": error})
                continue
            t = time.perf_counter()
            res = runner.measure(
                task_dict,
                config,
                repeat,
                artifact,
                budget_ms,
                _built(pending, LOAD_AHEAD) if artifact is not None else (),
            )
            stats["runner_s"] += time.perf_counter() - t
            for k in ("load", "prepare", "check", "time"):
                stats[f"{k}_s"] += res.get(f"_{k}_s", 0.0)
            stats["repeats"] += res.get("_repeats", 0)
            if "_uploads" in res:
                uploads[res["_pid"]] = res["_uploads"]
            if artifact is None:
                stats["built_by_runner"] += 1
            log(config, res)
    finally:
        bar.close()
        runner.close()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
    stats["restarts"] = runner.restarts
    stats["uploads"] = sum(uploads.values())
    all_best = best_records(read_log(log_path), task.key(), limits.name)
    return TuneResult(
        task, log_path, all_best.get(task.key()), counts, time.time() - t0, dict(stats)
    )


def _built(pending, n):
    """The artifacts of the first ``n`` pending candidates whose build has finished."""
    out = []
    for _, fut, _ in list(pending)[:n]:
        if fut is None or not fut.done() or fut.cancelled() or fut.exception() is not None:
            continue
        status, _, artifact = fut.result()
        if status == "ok" and artifact is not None:
            out.append(artifact)
    return out


def _specs(task):
    """The shapes and dtypes of the task's arguments (of its default config), for the runner
    to make its inputs while it starts; ``None`` if the default config does not instantiate."""
    try:
        _, args, _ = task.instantiate(None)
        return signature(args)
    except Exception:  # noqa: BLE001
        return None


def _task_dict(task):
    from dataclasses import asdict

    return asdict(task)


def _progress(total, desc, enabled):
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is a dependency; be robust
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
