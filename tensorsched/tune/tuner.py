"""The searcher: candidates of a task's knob space in the order of a strategy (``model``, the
default: a cost model trained as trials land, see ``model.py``; ``grid``; ``random``), measured
with a pipeline: a pool of build processes (``os.cpu_count()`` by default) instantiates, lowers,
filters and builds the next candidates while one worker process checks and times the current
one (from the build's artifact, on inputs that stay on the device), and every trial is logged
as it ends, in the search's order.

    result = tune(Task("gemm", "cpu", (1024, 1024, 1024)), "gemm.jsonl", trials=50)

Budgets: ``trials``, ``time_s`` (seconds of tuning) and ``early_stop`` (trials without a
better best), whichever ends first. Then the fastest configs are measured again (``verify``),
so that the log's best is a config's typical time, not one lucky measurement of thousands.

On a Dask cluster (``cluster=``, the ``distributed`` extra; see ``distributed.py``) the same
search runs as ``ClusterSearch``: builds go to any worker, measurements to the workers holding
the device, new candidates are sent as results land, and this process alone writes the log.
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import contextlib
import math
import numbers
import os
import re
import socket
import sys
import time
import types
import warnings
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm import tqdm

from ..errors import TensorschedError
from ..ir.dtype import itemsize
from ..ops.space import Config
from ..ops.templates import template_module, template_payload
from ..runtime.device import DeviceLimits, current_device, resolve_device
from .ahead import ProposeAhead
from .distributed import Cluster, ClusterError, cluster_of
from .filter import PRIVATE_BYTES, check_limits, early_filter  # noqa: F401
from .log import LogLock, LogWriter, Record, best_records, config_key, read_log
from .measure import TIME_BUDGET_MS, Runner, prebuild, signature
from .model import (
    BATCH,
    LOWER_WORKERS,
    ModelProposer,
    past_records,
    require_lightgbm,
    sibling_records,
)
from .task import Task, TaskError
from .workers import worker_pool

STRATEGIES = ("model", "grid", "random")
MEASURED = ("ok", "wrong", "timeout", "crash", "error")  # statuses that reached the runner
LOAD_AHEAD = 2  # built candidates the runner loads while one runs
START_AHEAD = 2  # candidates a GPU search proposes before its first measurement
HOST = socket.gethostname()  # the host of the single-process tuner's records
DEVICE_FAILURES = ("crash", "error")  # statuses that may be the device's fault, not the kernel's
MAX_FAILURES = 4  # a cluster device failing this many trials in a row is taken out of the pool
RETRIES = 3  # times a cluster trial whose task was lost is sent again
VERIFY_TOP = 8  # configs the tuner measures again at the end (``tune``'s ``verify``)
VERIFY_TIMES = 3  # measurements of each of them in all
KEEP = 4 * VERIFY_TOP  # built modules of the fastest trials kept for measuring them again
VERIFY_SHARE = 0.1  # the part of a ``time_s`` budget kept for measuring them again


@dataclass
class TuneResult:
    task: Task
    log: str
    best: Record | None
    counts: dict = field(default_factory=dict)
    seconds: float = 0.0
    stats: dict = field(default_factory=dict)  # where the time went (see ``tune``)

    @property
    def measured(self) -> int:
        """Records logged by this run: its trials and the measurements of the fastest ones
        again (``remeasured``); every count but ``skipped``."""
        return sum(v for k, v in self.counts.items() if k not in ("skipped", "filtered"))

    @property
    def on_device(self) -> int:
        """New trials that ran on the device (or were meant to: ok, wrong, timeout, crash,
        error)."""
        return sum(v for k, v in self.counts.items() if k in MEASURED)

    @property
    def rate(self) -> float:
        """Trials logged per minute, start-up included."""
        return self.measured / self.seconds * 60 if self.seconds else 0.0


def candidate_order(task: Task, strategy: str, seed: int = 0) -> Sequence[int]:
    """The indices of the grid, in the order ``strategy`` visits them."""
    size = task.space().size()
    if strategy == "grid":
        return range(size)
    if strategy == "random":
        rng = np.random.default_rng(seed)
        if size <= 1_000_000:
            return rng.permutation(size).tolist()
        seen: set[int] = set()
        out: list[int] = []
        while len(out) < min(size, 100_000):
            i = int(rng.integers(size))
            if i not in seen:
                seen.add(i)
                out.append(i)
        return out
    raise TensorschedError(
        f"unknown strategy '{strategy}' for an order; use one of grid, random (the model "
        "strategy proposes as it learns: ModelProposer)"
    )


class OrderProposer:
    """Candidates in a fixed order of grid indices (the grid and random strategies)."""

    def __init__(self, space: Config, order: Iterable[int]):
        self.space, self.order = space, iter(order)

    def next(self) -> dict | None:
        for idx in self.order:
            return self.space.point(idx)
        return None

    def observe(self, config: dict, status: str, gflops: float | None) -> None:
        pass

    def state(self) -> str:
        return ""


def parse_duration(text: str | float | int) -> float:
    """Seconds of ``text``: a number of seconds, or with an ``s``, ``m`` or ``h`` suffix
    (``90``, ``90s``, ``2m``, ``1.5h``); ``TensorschedError`` otherwise."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smh]?)\s*", str(text))
        if not m:
            raise TensorschedError(
                f"duration {text!r}: write seconds, or a number with s, m or h (90s, 2m, 1h)"
            )
        value = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    if not (math.isfinite(value) and value > 0):
        raise TensorschedError(f"duration {text!r} must be a positive time")
    return value


def check_fits(task: Task, device: Any) -> None:
    """Refuse ``task`` where one of its argument tensors is larger than ``device`` allocates
    (``CL_DEVICE_MAX_MEM_ALLOC_SIZE``) or all of them than its memory: every trial would fail
    making its inputs (an expression of 2 * 10^9 x 2 * 10^9 extents once logged three numpy
    tracebacks and no kernel)."""
    try:
        _, args, _ = task.instantiate(None)
    except TensorschedError:
        return  # the template's defaults are refused: the trials say why
    sizes = [
        (str(getattr(a, "name", "?")), math.prod(int(x) for x in a.shape) * itemsize(a.dtype))
        for a in args
        if hasattr(a, "shape") and all(isinstance(x, numbers.Integral) for x in a.shape)
    ]
    cl_dev = getattr(device, "cl_device", None)
    most = int(getattr(cl_dev, "max_mem_alloc_size", 0) or 0)
    total = int(getattr(cl_dev, "global_mem_size", 0) or 0)
    big = [(name, size) for name, size in sizes if most and size > most]
    if big or (total and sum(size for _, size in sizes) > total):
        listed = ", ".join(f"{name} {_bytes(size)}" for name, size in sizes)
        what = (
            f"tensor {big[0][0]} needs {_bytes(big[0][1])}, more than the {_bytes(most)} "
            "the device allocates at once (CL_DEVICE_MAX_MEM_ALLOC_SIZE)"
            if big
            else f"its tensors need more than the device's {_bytes(total)} of memory"
        )
        raise TaskError(
            f"{task} cannot run on {device.name}: {what} ({listed}); give smaller extents"
        )


def _bytes(n: int) -> str:
    for unit, size in (("EB", 1 << 60), ("PB", 1 << 50), ("TB", 1 << 40), ("GB", 1 << 30)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n / (1 << 20):.1f} MB"


def tune(
    task: Task,
    log_path: str,
    strategy: str = "model",
    trials: int | None = None,
    resume: bool = False,
    device: str | None = None,
    timeout: float = 60.0,
    repeat: int = 5,
    seed: int = 0,
    n_build: int | None = None,
    progress: bool = True,
    budget_ms: float | None = TIME_BUDGET_MS,
    ahead: int | None = None,
    restrict: dict | None = None,
    time_s: float | str | None = None,
    early_stop: int | None = None,
    transfer: Sequence[str] = (),
    cluster: str | Cluster | None = None,
    verify: int = VERIFY_TOP,
) -> TuneResult:
    """Tune ``task``: measure up to ``trials`` candidates (all by default) and log each one.

    ``strategy``: ``model`` (default; needs LightGBM, the ``tune`` extra) measures first the
    best configs of the nearest shapes that the logs know for this template and device (the
    log itself, the ``transfer`` logs and the package's shipped logs), then batches that a
    cost model trained on all those trials picks, with a share of random ones; ``grid`` and
    ``random`` visit the space in a fixed order. Tuning stops at ``trials`` measured, after
    ``time_s`` (seconds, or text such as ``"2m"``, counted from the first candidate: learning
    from the logs comes before it, ``stats["setup_s"]``) or after ``early_stop`` trials in a
    row without a faster kernel, whichever comes first; candidates built but not measured by
    then are not logged.

    ``verify``: then the ``verify`` fastest configs of the task in the log (by the median of
    their measurements, none found wrong) are measured again, in turns, until each has
    ``VERIFY_TIMES`` measurements (logged as ``remeasure`` records; from the modules built
    for their trials where this run measured them). Of ``time_s``, the trials take all but
    ``VERIFY_SHARE``, these at most that share after the trials end (on a CPU device, whose
    last batch is measured whole, that may be past ``time_s``). The fastest of thousands of
    single measurements of a 15 us kernel is often one that ran lucky (H200, 196x256x1152:
    logged at 13.3 us, 18.0 measured again, where 20 others ran 16.6-17.5). ``0`` measures
    nothing again.

    ``restrict`` (``{knob: [values]}``, see ``Config.restrict``) narrows the template's space
    that the grid or random search visits.

    One tuner writes a log at a time: while tuning, it holds an advisory lock (``fcntl.flock``
    on ``LOG.lock``, a file beside the log that holds its pid and is removed at the end); a
    second tuner on the same log refuses at once with ``LogBusyError`` naming the log and the
    first one's pid. With ``resume``, configs already in the log for this task and device are
    skipped; without it, a log that has trials of this task on this device is refused.
    ``n_build`` build processes (default ``os.cpu_count()``) keep ``ahead`` candidates (default
    ``2 * n_build + 2``) built or building ahead of the one being measured. Each candidate is
    timed ``repeat`` times, or at least 3 times (``repeat`` if fewer) and until its timed runs
    took ``budget_ms`` on the device (``None``: always ``repeat``); ``timeout`` (seconds) bounds
    a candidate's check and timing.
    Returns a ``TuneResult`` with the fastest correct record (from the whole log) and, in
    ``stats``, seconds spent waiting for builds (``wait_build_s``), in the runner
    (``runner_s``: loading ``load_s``, check ``check_s``, timing ``time_s``) and logging
    (``log_s``), the inputs made on the device (``uploads``) and the runner's restarts; the
    proposer's time (``propose_s``: choosing the ``proposed`` candidates and learning each
    trial) and, of the model strategy, the candidates it lowered for their IR features
    (``lowered``, in ``lower_s``; learning from the logs included).

    ``cluster``: tune on a Dask cluster instead (the ``distributed`` extra): a scheduler's
    address (``"tcp://host:8786"``), ``"local"`` (a cluster of this host's cores, started and
    stopped here) or a ``distributed.Cluster`` (kept open, for several tasks). ``device`` then
    names a device the cluster's workers hold (part of its name; default: the only kind they
    hold, else this host's); builds go to any worker, measurements one at a time to each
    worker device of that kind, and this process writes the log. The workers build (``n_build``
    is unused); ``ahead`` defaults to two candidates per worker thread, and two. A device that
    fails ``MAX_FAILURES`` trials in a row is taken out (its trials go to the others); trials a
    dying worker had are run again elsewhere, and each is logged once. ``stats`` then counts
    ``measured``, ``built_by_runner``, ``requeued`` and ``taken_out``.
    """
    t0 = time.time()
    _check_options(strategy, trials, timeout, repeat, n_build, ahead, budget_ms)
    seconds = parse_duration(time_s) if time_s is not None else None
    if early_stop is not None and (
        isinstance(early_stop, bool)
        or not isinstance(early_stop, numbers.Integral)
        or early_stop < 1
    ):
        raise TensorschedError(f"early_stop must be a positive integer, got {early_stop!r}")
    transfer = [transfer] if isinstance(transfer, str) else list(transfer)
    for path in transfer:
        if not os.path.isfile(path):
            what = "is not a file" if os.path.exists(path) else "does not exist"
            raise TensorschedError(f"transfer log {path} {what}")
    if strategy == "model":
        require_lightgbm()
    modules = worker_modules(task)
    pool, close = cluster_of(cluster) if cluster is not None else (None, None)
    proposer: Any = None
    ahead_of: ProposeAhead | None = None
    hidden = _main_hidden(any(isinstance(m, bytes) for m in modules))
    hidden.__enter__()
    try:
        resource = ""
        if pool is not None:
            resource, limits = pool.target(device)
        else:
            limits = DeviceLimits.of(device)
            if not device:  # the workers use this process's device (set_device() included)
                dev = current_device()
                device = f"{dev.platform_index}:{dev.device_index}"
            check_fits(task, resolve_device(device))
        on = device or ""
        space = task.space()
        if restrict:
            space.restrict(restrict)
        with _log_lock(log_path):
            done, times, configs = _logged_configs(task, log_path, limits.name, resume)
            if strategy == "model":
                past = past_records(task, limits.name, log_path, transfer)
                # the driver lowers candidates in processes of its own: as many as build
                # (a cluster's driver: its host's cores), at most LOWER_WORKERS
                lowerers = n_build if pool is None and n_build else (os.cpu_count() or 1)
                proposer = ModelProposer(
                    task,
                    space,
                    limits,
                    past,
                    seed,
                    workers=min(lowerers, LOWER_WORKERS),
                    modules=modules,
                    seeds=sibling_records(task, limits.name),
                )
            else:
                proposer = OrderProposer(space, candidate_order(task, strategy, seed))
            search: Search | ClusterSearch
            if pool is not None:
                writer = LogWriter(log_path)
                search = ClusterSearch(
                    task, space, proposer, done, writer, limits, pool, resource, modules, timeout
                )
            else:
                quiet = resolve_device(on or None).is_cpu
                if strategy == "model" and not quiet:  # a GPU's: proposed in a thread
                    ahead_of = ProposeAhead(proposer, 2 * BATCH)
                search = Search(
                    task,
                    space,
                    ahead_of or proposer,
                    done,
                    LogWriter(log_path),
                    Runner(on, timeout, task.to_dict(), _specs(task), limits, modules),
                    BuildPool(n_build or max(1, os.cpu_count() or 2), on, limits, modules),
                    limits,
                    quiet=quiet,
                )
            setup_s = time.time() - t0  # learning from the logs: not part of ``time_s``
            end = time.time() + seconds if seconds is not None else None
            again = verify
            search.times, search.configs = times, configs
            search.run(
                budget=trials if trials is not None else space.size(),
                ahead=ahead,
                repeat=repeat,
                budget_ms=budget_ms,
                progress=progress,
                deadline=end - VERIFY_SHARE * seconds if end and seconds and again else end,
                early_stop=early_stop,
                verify=again,
                verify_s=VERIFY_SHARE * seconds if seconds else None,
            )
            search.stats["setup_s"] = setup_s
            if strategy == "model":
                search.counts["skipped"] = len(done)
                if proposer.filtered:
                    search.stats["filtered_by_ir"] = proposer.filtered
                search.stats["lowered"] = proposer.lowering.lowered
                search.stats["lower_s"] = proposer.lowering.seconds
            search.counts = {k: v for k, v in search.counts.items() if v}
            all_best = best_records(read_log(log_path), task.key(), limits.name)
    finally:
        if ahead_of is not None:
            ahead_of.close()
        if isinstance(proposer, ModelProposer):
            proposer.close()
        if close is not None:
            close()
        hidden.__exit__(None, None, None)
    return TuneResult(
        task,
        log_path,
        all_best.get(task.key()),
        search.counts,
        time.time() - t0,
        dict(search.stats),
    )


_SHARED_LOGS: set[str] = set()  # logs that tune_devices holds for its searches


@contextlib.contextmanager
def _main_hidden(active: bool) -> Iterator[None]:
    """While ``active``, the worker processes started here do not run the main script again.

    A spawned process runs ``__main__``'s file again (as ``__mp_main__``) to find what it
    defined. A script that tunes at its top level, without ``if __name__ == "__main__":``
    (TVM's AutoTVM tutorials do), would tune again there. Its templates reach the workers by
    value instead (``worker_modules``), and multiprocessing is shown a bare ``__main__`` (as
    in an interactive session) while the workers start; the script's module itself is left
    untouched and put back at the end."""
    main = sys.modules.get("__main__")
    if not active or main is None:
        yield
        return
    stand_in = types.ModuleType("__main__", "the main script, hidden from the tuner's workers")
    sys.modules["__main__"] = stand_in
    try:
        yield
    finally:
        if sys.modules.get("__main__") is stand_in:
            sys.modules["__main__"] = main


@contextlib.contextmanager
def _log_lock(log_path: str) -> Iterator[None]:
    """The log's ``LogLock``, unless ``tune_devices`` holds it for the searches it runs."""
    if os.path.abspath(log_path) in _SHARED_LOGS:
        yield
        return
    with LogLock(log_path):
        yield


def tune_devices(
    task: Task, log_path: str, devices: Sequence[str], cluster: str | Cluster, **options: Any
) -> dict[str, TuneResult]:
    """Tune ``task`` for several device kinds of one cluster at once, into one log: a ``tune``
    on ``cluster`` for each of ``devices`` (parts of the devices' names, each naming another
    kind), side by side in threads that share the cluster and the log's lock; each record is
    keyed by its device, as ever. ``options`` are ``tune``'s other arguments. Returns each
    device's ``TuneResult``; if a search fails, the others finish and its error is raised."""
    if isinstance(devices, str) or not devices:
        raise TensorschedError(f"devices must be a list of device names, got {devices!r}")
    pool, close = cluster_of(cluster)
    key = os.path.abspath(log_path)
    try:
        kinds = [pool.target(d)[0] for d in devices]
        if len(set(kinds)) != len(kinds):
            raise ClusterError(
                f"devices {list(devices)} name the device kinds {kinds}: one each, please"
            )
        with LogLock(log_path):
            _SHARED_LOGS.add(key)
            try:
                with cf.ThreadPoolExecutor(len(devices), thread_name_prefix="tune") as ex:
                    futures = {
                        d: ex.submit(tune, task, log_path, device=d, cluster=pool, **options)
                        for d in devices
                    }
                    cf.wait(list(futures.values()))
            finally:
                _SHARED_LOGS.discard(key)
        return {d: f.result() for d, f in futures.items()}
    finally:
        close()


def _check_options(
    strategy: str,
    trials: int | None,
    timeout: float,
    repeat: int,
    n_build: int | None,
    ahead: int | None,
    budget_ms: float | None,
) -> None:
    """``TensorschedError`` for an option out of its range (before anything starts)."""
    if strategy not in STRATEGIES:
        raise TensorschedError(f"unknown strategy '{strategy}'; use one of {', '.join(STRATEGIES)}")
    counts = {"trials": trials, "repeat": repeat, "n_build": n_build, "ahead": ahead}
    for name, count in counts.items():
        if count is None and name != "repeat":
            continue
        if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1:
            raise TensorschedError(f"{name} must be a positive integer, got {count!r}")
    if not _is_positive(timeout):
        raise TensorschedError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if budget_ms is not None and not (budget_ms == 0 or _is_positive(budget_ms)):
        raise TensorschedError(f"budget_ms must be None or a number >= 0, got {budget_ms!r}")


def _is_positive(x: object) -> bool:
    return (
        isinstance(x, numbers.Real)
        and not isinstance(x, bool)
        and math.isfinite(float(x))
        and float(x) > 0
    )


def worker_modules(task: Task) -> tuple[str | bytes, ...]:
    """The modules the tuner's worker processes import to find the task's template: the
    module this process registered it from (``()`` for a built-in one), or the template's
    registration pickled where it was registered by value (``register_template``'s
    ``by_value``: an ``autotvm`` template of the main script). Read from this process's
    registry, never from a log."""
    payload = template_payload(task.kind, task.template)
    if payload is not None:  # a template of the main script, sent by value
        return (payload,)
    module = template_module(task.kind, task.template)
    if module is not None:
        return (module,)
    fn = task.function
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    if getattr(fn, "__module__", None) == "__main__" and not (script and os.path.isfile(script)):
        raise TaskError(
            f"the template '{task.template}' was registered in an interactive session, which "
            "the tuner's worker processes cannot import; register it in a module file and "
            "import that module"
        )
    return ()


def _logged_configs(
    task: Task, log_path: str, device: str, resume: bool
) -> tuple[set[str], dict[str, list[float]], dict[str, dict]]:
    """``(keys, times, configs)``: the keys of the configs of ``task`` on ``device`` already in
    the log (with ``resume``), the device milliseconds of each one's measurements (NaN where
    one found it wrong) and those configs by key; without ``resume``, ``TensorschedError``
    when there are any."""
    logged, times, configs = set[str](), dict[str, list[float]](), dict[str, dict]()
    for r in read_log(log_path):
        if r.device == device and r.task_key() == task.key():
            key = r.config_key()
            logged.add(key)
            ms = _measurement(r)
            if ms is not None:
                times.setdefault(key, []).append(ms)
                configs[key] = r.config
    if logged and not resume:
        raise TensorschedError(
            f"{log_path} already has trials of {task} on this device; pass "
            "resume=True (--resume) to continue it, or choose another log"
        )
    return logged, times, configs


class BuildPool:
    """The build processes (``prebuild``): a pool that a dying worker breaks is replaced by a
    fresh one, a new *generation*; a candidate whose future was lost with its pool is built by
    the runner instead."""

    def __init__(self, n: int, device: str, limits: DeviceLimits, modules: tuple[str | bytes, ...]):
        self.n, self.device, self.limits, self.modules = n, device, limits, modules
        self.pool: cf.ProcessPoolExecutor | None = None
        self.generation = 0  # pools that came before this one

    def submit(self, task_dict: dict, config: dict) -> cf.Future | None:
        """The future of ``config``'s build, or ``None`` if no pool takes it."""
        for _ in range(2):
            if self.pool is None:
                self.pool = worker_pool(self.n, self.modules)
            try:
                return self.pool.submit(prebuild, task_dict, config, self.device, self.limits)
            except (BrokenProcessPool, RuntimeError):  # broken since its last result was read
                self.renew()
        return None

    def renew(self) -> None:
        """Drop the current pool (its pending builds too); the next submit starts a new one."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
        self.pool, self.generation = None, self.generation + 1

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


@dataclass
class Pending:
    """A candidate submitted for building, in search order."""

    config: dict
    future: cf.Future | None
    generation: int


class Trials:
    """What both searches (``Search``, ``ClusterSearch``) keep: the proposer, the configs
    logged already, the counts and stats, the best record so far, and the log each trial is
    appended to (``_log``)."""

    def __init__(
        self,
        task: Task,
        space: Config,
        proposer: Any,
        done: set[str],
        writer: LogWriter,
        limits: DeviceLimits,
    ):
        self.task, self.task_dict, self.space = task, task.to_dict(), space
        self.proposer, self.done = proposer, done
        self.writer, self.limits = writer, limits
        self.submitted = 0
        self.counts: dict[str, int] = {}
        self.stats: dict[str, float] = collections.defaultdict(float)
        self.best: Record | None = None
        self.uploads: dict[Any, int] = {}  # runner process -> task inputs it made on the device
        self.bar: Any = None
        self.since_best = 0  # trials logged since the best last improved
        self.deadline: float | None = None
        self.stopped = ""  # why the search stopped before its trials: "time", "early stop"
        self.times: dict[str, list[float]] = {}  # config key -> its measurements (NaN: wrong)
        self.configs: dict[str, dict] = {}  # config key -> config, of those in ``times``
        self.artifacts: dict[str, bytes] = {}  # built modules of the fastest trials so far

    def _should_stop(self, early_stop: int | None) -> bool:
        if self.deadline is not None and time.time() >= self.deadline:
            self.stopped = "time"
        elif early_stop is not None and self.since_best >= early_stop:
            self.stopped = "early stop"
        return bool(self.stopped)

    def _unverified(self, top: int) -> list[dict]:
        """The configs among the ``top`` fastest (by the median of their measurements; none
        found wrong) with fewer than ``VERIFY_TIMES`` measurements, fastest first."""
        ranked = sorted(
            (float(np.median(ms)), key)
            for key, ms in self.times.items()
            if ms and not any(math.isnan(m) for m in ms)
        )
        need = [key for _, key in ranked[:top] if len(self.times[key]) < VERIFY_TIMES]
        return [self.configs[key] for key in need]

    def _keep(self, config: dict, artifact: bytes | None, res: dict) -> None:
        """Keep the built module of a trial among the ``KEEP`` fastest so far, for ``_verify``
        to measure it again without building it again."""
        if artifact is None or res.get("status") != "ok" or not res.get("device_ms"):
            return
        key = config_key(config)
        self.artifacts[key] = artifact
        if len(self.artifacts) > 2 * KEEP:
            fastest = sorted(self.artifacts, key=lambda k: min(self.times.get(k) or [math.inf]))
            self.artifacts = {k: self.artifacts[k] for k in fastest[:KEEP]}

    def _next_config(self) -> dict | None:
        """The next point of the order not in the log yet (counting those skipped)."""
        while True:
            t = time.perf_counter()
            config = self.proposer.next()
            self.stats["propose_s"] += time.perf_counter() - t
            if config is None:
                return None
            self.stats["proposed"] += 1
            if config_key(config) in self.done:
                self.counts["skipped"] = self.counts.get("skipped", 0) + 1
                continue
            return config

    def _account(self, res: dict) -> None:
        """Add a measurement's own figures to the stats."""
        for k in ("load", "prepare", "check", "time"):
            self.stats[f"{k}_s"] += res.get(f"_{k}_s", 0.0)
        self.stats["repeats"] += res.get("_repeats", 0)
        if "_uploads" in res:
            self.uploads[(res.get("_host", HOST), res["_pid"])] = res["_uploads"]

    def _log(self, config: dict, res: dict, remeasure: bool = False) -> None:
        t = time.perf_counter()
        rec = Record(
            task=self.task_dict,
            device=self.limits.name,
            config=config,
            status=res["status"],
            device_ms=res.get("device_ms"),
            host_ms=res.get("host_ms"),
            gflops=res.get("gflops"),
            error=res.get("error", ""),
            host=res.get("_host", HOST),
            remeasure=remeasure,
        )
        self.writer.append(rec)
        ms = _measurement(rec)
        if ms is not None:
            self.times.setdefault(rec.config_key(), []).append(ms)
            self.configs[rec.config_key()] = config
        if remeasure:
            self.counts["remeasured"] = self.counts.get("remeasured", 0) + 1
            self.stats["log_s"] += time.perf_counter() - t
            return
        self.counts[rec.status] = self.counts.get(rec.status, 0) + 1
        t_obs = time.perf_counter()
        self.proposer.observe(config, rec.status, rec.gflops)
        t_obs = time.perf_counter() - t_obs
        self.stats["propose_s"] += t_obs
        self.since_best += 1
        if rec.status == "ok" and (self.best is None or _faster(rec, self.best)):
            self.best, self.since_best = rec, 0
        self.bar.update(1)
        best = self.best
        text = f"best {best.gflops:.1f} GFLOP/s" if best else "no valid kernel yet"
        state = self.proposer.state()
        self.bar.set_postfix_str(f"{text}; {state}" if state else text)
        self.stats["log_s"] += time.perf_counter() - t - t_obs


class Search(Trials):
    """One tuning run: candidates in the search's order, built ahead by the ``BuildPool``,
    measured one at a time by the ``Runner`` and logged as each ends (``run``).

    With ``quiet`` (a CPU device, whose kernels run on the cores the builds use) builds and
    measurements take turns, as AutoTVM's local runner does: a batch is built in parallel,
    then measured one by one with no build running, so that compiling never slows a kernel
    being timed (on 2 cores it did, by up to half, and the search ranked configs by noise).
    Otherwise (a GPU) each candidate is measured, in the order the builds end, in a thread
    while this one proposes the next candidates and sends them to the pool, and the model
    strategy's proposer runs ahead in a thread of its own (``ahead.ProposeAhead``): its time,
    not the measurements', bounded a GPU's search. Quiet, the trials are logged in the
    proposer's order."""

    def __init__(
        self,
        task: Task,
        space: Config,
        proposer: Any,
        done: set[str],
        writer: LogWriter,
        runner: Runner,
        builds: BuildPool,
        limits: DeviceLimits,
        quiet: bool = False,
    ):
        super().__init__(task, space, proposer, done, writer, limits)
        self.runner, self.builds, self.quiet = runner, builds, quiet
        self.pending: collections.deque[Pending] = collections.deque()
        self.measurer: cf.ThreadPoolExecutor | None = None  # not quiet: measures meanwhile

    def run(
        self,
        budget: int,
        ahead: int | None,
        repeat: int,
        budget_ms: float | None,
        progress: bool,
        deadline: float | None = None,
        early_stop: int | None = None,
        verify: int = 0,
        verify_s: float | None = None,
    ) -> None:
        """Measure up to ``budget`` new candidates, keeping ``ahead`` built or building; stop
        at ``deadline`` (``time.time()``) or after ``early_stop`` trials without a better
        best (the candidates still pending are dropped, unlogged); then measure the
        ``verify`` fastest configs again (``_verify``) for at most ``verify_s`` seconds
        after the deadline, or after the last trial where that ran past it (a CPU device's
        last batch)."""
        ahead = ahead or 2 * self.builds.n + 2
        self.deadline = deadline
        self.bar = _progress(budget, str(self.task), progress)
        try:
            # a GPU's search starts measuring after a few proposals, not ``ahead`` (the model
            # strategy's take tens of ms each: 34 of them used up a 15 s budget on 16 cores),
            # then proposes whenever it would wait for a build or a measurement
            self._top_up(budget, ahead, None if self.quiet else START_AHEAD)
            self.runner.start()  # it starts up while the pool builds the first ones
            while self.pending:
                if self._should_stop(early_stop):
                    self.pending.clear()
                    break
                cand = self.pending.popleft() if self.quiet else self._first_built(budget, ahead)
                status, error, artifact = self._built(cand)
                if status != "ok":
                    res = {"status": status, "error": error}
                    if not self.quiet:
                        self._top_up(budget, ahead, 1)
                elif self.quiet:  # the batch's builds end before anything is timed
                    t = time.perf_counter()
                    cf.wait([p.future for p in self.pending if p.future is not None])
                    self.stats["wait_build_s"] += time.perf_counter() - t
                    res = self._measure(cand.config, artifact, repeat, budget_ms)
                else:  # measured in a thread while the next are proposed and built
                    if self.measurer is None:
                        self.measurer = cf.ThreadPoolExecutor(1, thread_name_prefix="measure")
                    upcoming = _built(self.pending, LOAD_AHEAD) if artifact is not None else []
                    measuring = self.measurer.submit(
                        self._run, cand.config, artifact, repeat, budget_ms, upcoming
                    )
                    self._top_up(budget, ahead, 1)
                    self._propose_until(measuring, budget, ahead)
                    res = self._measured(artifact, *measuring.result())
                self._log(cand.config, res)
                self._keep(cand.config, artifact, res)
                if self.quiet and not self.pending:
                    self._top_up(budget, ahead)  # the next batch, once this one is measured
            if verify:
                until = None
                if verify_s is not None:
                    until = max(deadline or 0.0, time.time()) + verify_s
                self._verify(verify, repeat, budget_ms, until)
        finally:
            self.bar.close()
            self.runner.close()  # a measurement still running (an error here) ends with it
            if self.measurer is not None:
                self.measurer.shutdown(wait=False)
            self.builds.close()
        self.stats["restarts"] = self.runner.restarts
        self.stats["uploads"] = sum(self.uploads.values())

    def _verify(
        self, top: int, repeat: int, budget_ms: float | None, deadline: float | None
    ) -> None:
        """Measure the ``top`` fastest configs again, a round of those with fewer than
        ``VERIFY_TIMES`` measurements at a time (from the modules built for their trials, or
        built again in parallel: a resumed log's), until none among the ``top`` lacks one or
        ``deadline`` passes."""
        while (todo := self._unverified(top)) and not (deadline and time.time() >= deadline):
            self.bar.set_postfix_str(f"measuring the {top} fastest again ({len(todo)} to go)")
            round_ = []
            for config in todo:
                kept = self.artifacts.get(config_key(config))
                future = None if kept else self.builds.submit(self.task_dict, config)
                round_.append((Pending(config, future, self.builds.generation), kept))
            if self.quiet:  # no build runs while a kernel is timed
                cf.wait([p.future for p, _ in round_ if p.future is not None])
            for cand, kept in round_:
                if deadline is not None and time.time() >= deadline:
                    return
                status, error, artifact = ("ok", "", kept) if kept else self._built(cand)
                if status == "ok":
                    res = self._measured(
                        artifact, *self._run(cand.config, artifact, repeat, budget_ms, [])
                    )
                else:
                    res = {"status": status, "error": error}
                self._log(cand.config, res, remeasure=True)

    def _first_built(self, budget: int, ahead: int) -> Pending:
        """The first pending candidate whose build has ended, proposing while none has. A
        GPU's search measures in the order the builds end: in the order they were sent, one
        slow compile (NVIDIA's took up to 4 s, its median 0.2) held up the measurements of
        every candidate built after it, and once ``ahead`` of them waited, the pool too."""
        while True:
            for i, cand in enumerate(self.pending):
                if cand.future is None or cand.future.done():
                    del self.pending[i]
                    return cand
            if not self._top_up(budget, ahead, 1):
                t = time.perf_counter()
                cf.wait(
                    [p.future for p in self.pending if p.future is not None],
                    timeout=1.0,
                    return_when=cf.FIRST_COMPLETED,
                )
                self.stats["wait_build_s"] += time.perf_counter() - t

    def _propose_until(self, future: cf.Future | None, budget: int, ahead: int) -> None:
        """Propose and send one candidate at a time to the pool while ``future`` runs and
        fewer than ``ahead`` are pending."""
        while future is not None and not future.done() and self._top_up(budget, ahead, 1):
            pass

    def _top_up(self, budget: int, ahead: int, most: int | None = None) -> int:
        """Propose and send to the pool until ``ahead`` are pending (at most ``most``);
        returns how many were sent."""
        sent = 0
        while len(self.pending) < ahead and self.submitted < budget:
            if most is not None and sent >= most:
                break
            if self.deadline is not None and time.time() >= self.deadline:
                break
            config = self._next_config()
            if config is None:
                break
            future = self.builds.submit(self.task_dict, config)
            self.pending.append(Pending(config, future, self.builds.generation))
            self.submitted += 1
            sent += 1
        return sent

    def _built(self, cand: Pending) -> tuple[str, str, bytes | None]:
        """``(status, error, artifact)`` of a candidate's build; ``("ok", "", None)`` when the
        runner has to build it itself."""
        t = time.perf_counter()
        try:
            result = cand.future.result() if cand.future is not None else ("ok", "", None)
        except Exception as exc:  # noqa: BLE001
            # a build worker died (a compiler crash?) and took the pool's other builds with
            # it: the runner builds these itself, with the timeout, and records the culprit
            # as a crash
            result = ("ok", "", None)
            if isinstance(exc, BrokenProcessPool) and cand.generation == self.builds.generation:
                self.builds.renew()
        self.stats["wait_build_s"] += time.perf_counter() - t
        return result

    def _measure(
        self, config: dict, artifact: bytes | None, repeat: int, budget_ms: float | None
    ) -> dict:
        upcoming = _built(self.pending, LOAD_AHEAD) if artifact is not None else []
        return self._measured(artifact, *self._run(config, artifact, repeat, budget_ms, upcoming))

    def _run(
        self,
        config: dict,
        artifact: bytes | None,
        repeat: int,
        budget_ms: float | None,
        upcoming: list[bytes],
    ) -> tuple[dict, float]:
        """The runner's result of one candidate, and the seconds it took (in any thread)."""
        t = time.perf_counter()
        res = self.runner.measure(self.task_dict, config, repeat, artifact, budget_ms, upcoming)
        return res, time.perf_counter() - t

    def _measured(self, artifact: bytes | None, res: dict, seconds: float) -> dict:
        """Count a measurement in the stats (in the search's thread); returns ``res``."""
        self.stats["runner_s"] += seconds
        self._account(res)
        if artifact is None:
            self.stats["built_by_runner"] += 1
        return res


@dataclass
class Flight:
    """A candidate in flight on a cluster: being built, then measured."""

    config: dict
    stage: str = "build"  # or "measure"
    artifact: bytes | None = None
    tries: int = 0  # times its task was lost and sent again
    failed_on: set[str] = field(default_factory=set)  # devices taken out while it failed there
    again: bool = False  # a config measured before, measured again (``remeasure``)


class ClusterSearch(Trials):
    """One tuning run on a Dask cluster (``distributed.Cluster``): each candidate is built on
    any worker, then measured on a worker holding the device (``resource``); new candidates
    are sent as results land, so every device stays busy, and each trial is logged here, once,
    as it ends. Dask runs a task again when its worker dies; a task that was lost is sent
    again (``RETRIES``); a device whose trials fail ``MAX_FAILURES`` times in a row (crash,
    error) is taken out of the pool, and those trials are measured on the other devices (one
    that fails there too is logged as it failed)."""

    def __init__(
        self,
        task: Task,
        space: Config,
        proposer: Any,
        done: set[str],
        writer: LogWriter,
        limits: DeviceLimits,
        cluster: Cluster,
        resource: str,
        modules: tuple[str | bytes, ...],
        timeout: float,
    ):
        super().__init__(task, space, proposer, done, writer, limits)
        self.cluster, self.resource = cluster, resource
        self.modules, self.timeout = modules, timeout
        self.specs = _specs(task)
        self.flights: dict[Any, Flight] = {}  # future -> its candidate
        self.streaks: dict[str, list[tuple[Flight, dict]]] = {}  # device -> failures held back
        self.taken_out: set[str] = set()
        self.repeat = 5
        self.budget_ms: float | None = None

    def run(
        self,
        budget: int,
        ahead: int | None,
        repeat: int,
        budget_ms: float | None,
        progress: bool,
        deadline: float | None = None,
        early_stop: int | None = None,
        verify: int = 0,
        verify_s: float | None = None,
    ) -> None:
        """Measure up to ``budget`` new candidates with ``ahead`` in flight (default: two per
        worker thread of the cluster, and two), then the ``verify`` fastest again, as
        ``Search.run``."""
        ahead = ahead or 2 * self.cluster.slots() + 2
        self.deadline, self.repeat, self.budget_ms = deadline, repeat, budget_ms
        self.bar = _progress(budget, str(self.task), progress)
        waiting_since, checked = time.time(), 0.0
        try:
            self._top_up(budget, ahead)
            while self.flights:
                if self._should_stop(early_stop):
                    break
                for fut in self.cluster.wait(self.flights, 0.5):
                    self._landed(fut, self.flights.pop(fut))
                    waiting_since = time.time()
                self._top_up(budget, ahead)
                if self.flights and time.time() - checked > 2.0:  # a device left to measure on?
                    self.cluster.check_holders(self.resource, waiting_since)
                    checked = time.time()
            if verify:
                self.cluster.cancel(self.flights)  # trials past the deadline: dropped
                self.flights.clear()
                until = None
                if verify_s is not None:
                    until = max(deadline or 0.0, time.time()) + verify_s
                self._verify(verify, until)
        finally:
            self.cluster.cancel(self.flights)  # built or measured, never logged: dropped
            self.flights.clear()
            for slot in list(self.streaks):  # failures of a device still in the pool
                for fl, res in self.streaks.pop(slot):
                    self._log_flight(fl, res)
            self.bar.close()
        self.stats["uploads"] = sum(self.uploads.values())

    def _verify(self, top: int, deadline: float | None) -> None:
        """``Search._verify`` on the cluster: each round's configs sent at once (measured from
        their kept modules, or built first), their results logged as they land."""
        while (todo := self._unverified(top)) and not (deadline and time.time() >= deadline):
            self.bar.set_postfix_str(f"measuring the {top} fastest again ({len(todo)} to go)")
            for config in todo:
                kept = self.artifacts.get(config_key(config))
                stage = "measure" if kept else "build"
                self._send(Flight(config, stage=stage, artifact=kept, again=True))
            while self.flights and not (deadline and time.time() >= deadline):
                for fut in self.cluster.wait(self.flights, 0.5):
                    self._landed(fut, self.flights.pop(fut))
            for slot in list(self.streaks):  # a round's failures: logged before the next
                for fl, res in self.streaks.pop(slot):
                    self._log_flight(fl, res)

    def _top_up(self, budget: int, ahead: int) -> None:
        while len(self.flights) < ahead and self.submitted < budget:
            if self.deadline is not None and time.time() >= self.deadline:
                return
            config = self._next_config()
            if config is None:
                return
            self._send(Flight(config))
            self.submitted += 1

    def _send(self, fl: Flight) -> None:
        if fl.stage == "build":
            fut = self.cluster.build(self.task_dict, fl.config, self.limits, self.modules)
        else:
            fut = self.cluster.measure(
                self.resource,
                self.task_dict,
                fl.config,
                fl.artifact,
                self.repeat,
                self.budget_ms,
                self.timeout,
                self.limits,
                self.modules,
                self.specs,
            )
        self.flights[fut] = fl

    def _landed(self, fut: Any, fl: Flight) -> None:
        kind, value = self.cluster.outcome(fut)
        if kind == "lost":  # cancelled, or lost with the connection: send it again
            if fl.tries >= RETRIES:
                raise ClusterError(
                    f"the cluster at {self.cluster.address} lost the trial of {fl.config} "
                    f"{fl.tries + 1} times (the last: {value}); the trials logged so far are "
                    "kept: rerun with --resume once the cluster is sound"
                )
            fl.tries += 1
            self.stats["requeued"] += 1
            self._send(fl)
        elif fl.stage == "build":
            # a build that failed as a task (not as a candidate) is left to the runner, which
            # builds it with the timeout, as in a single process
            status, error, artifact = value if kind == "ok" else ("ok", "", None)
            if status != "ok":
                self._log_flight(fl, {"status": status, "error": error})
                return
            if artifact is None:
                self.stats["built_by_runner"] += 1
            fl.stage, fl.artifact = "measure", artifact
            self._send(fl)
        elif kind == "ok":
            self._measured(fl, value)
        else:  # it killed the workers that measured it (crash), or the task itself failed
            status = "crash" if kind == "killed" else "error"
            self._log_flight(fl, {"status": status, "error": f"measuring: {value}"})

    def _measured(self, fl: Flight, res: dict) -> None:
        """Log a measurement, holding back a device's failures while they come in a row:
        the device's next success shows they were the kernels' own."""
        self._account(res)
        self.stats["measured"] += 1
        slot = f"{res.get('_device', '')} of {res.get('_worker', '')} ({res.get('_host', '')})"
        if res["status"] in DEVICE_FAILURES:
            if slot in self.taken_out:  # it ran on a device as that device was taken out
                fl.failed_on.add(slot)
                self._send(fl)
                return
            if fl.failed_on:  # it failed on a device taken out, and here too: its own fault
                self._log_flight(fl, res)
                return
            streak = self.streaks.setdefault(slot, [])
            streak.append((fl, res))
            if len(streak) >= MAX_FAILURES:
                self._take_out(slot, res.get("_worker", ""), res.get("_device", ""))
            return
        for held, held_res in self.streaks.pop(slot, []):
            self._log_flight(held, held_res)
        self._log_flight(fl, res)

    def _log_flight(self, fl: Flight, res: dict) -> None:
        """Log a flight's result (a measurement again as such); keep a fast trial's module."""
        self._log(fl.config, res, remeasure=fl.again)
        if not fl.again:
            self._keep(fl.config, fl.artifact, res)

    def _take_out(self, slot: str, worker: str, pd: str) -> None:
        """Take the device ``slot`` out of the pool; measure its held-back trials, and those
        the scheduler had sent it already, on the others."""
        streak = [fl for fl, _ in self.streaks[slot]]
        why = self.streaks.pop(slot)[-1][1].get("error", "").strip().splitlines()
        self.taken_out.add(slot)
        self.stats["taken_out"] += 1
        warnings.warn(
            f"tensorsched: device {pd} ({self.limits.name}) of worker {slot.split(' of ')[-1]} "
            f"failed {len(streak)} trials in a row (the last: {why[-1][:200] if why else '?'}): "
            "it is taken out of the pool and its trials go to the other devices; restart that "
            "worker to bring it back",
            stacklevel=2,
        )
        stuck = self.cluster.take_out(self.resource, worker, pd)
        for fut, fl in list(self.flights.items()):
            if fl.stage == "measure" and fut.key in stuck:
                del self.flights[fut]
                self.cluster.cancel([fut])
                streak.append(fl)
        if self.resource not in self.cluster.holders():
            raise ClusterError(
                f"every device {self.limits.name} of the cluster at {self.cluster.address} was "
                "taken out after failing trials in a row; the trials logged so far are kept: "
                "fix the devices (or start workers on other hosts) and rerun with --resume"
            )
        for fl in streak:
            fl.failed_on.add(slot)
            self._send(fl)


def _measurement(r: Record) -> float | None:
    """What a record adds to its config's measurements for measuring the fastest again: its
    time; NaN where it was wrong, or failed when measured again (a timeout: not again); None
    for a trial that failed otherwise (its config is no candidate)."""
    if r.status == "ok" and r.device_ms:
        return r.device_ms
    return math.nan if r.status == "wrong" or r.remeasure else None


def _faster(a: Record, b: Record) -> bool:
    return a.device_ms is not None and (b.device_ms is None or a.device_ms < b.device_ms)


def _built(pending: Iterable[Pending], n: int) -> list[bytes]:
    """The artifacts of the first ``n`` pending candidates whose build has finished (the next
    to be measured, in the order the builds end)."""
    out: list[bytes] = []
    for cand in list(pending):
        if len(out) >= n:
            break
        fut = cand.future
        if fut is None or not fut.done() or fut.cancelled() or fut.exception() is not None:
            continue
        status, _, artifact = fut.result()
        if status == "ok" and artifact is not None:
            out.append(artifact)
    return out


def _specs(task: Task) -> tuple | None:
    """The shapes and dtypes of the task's arguments (of its default config), for the runner
    to make its inputs while it starts; ``None`` if the default config does not instantiate."""
    try:
        _, args, _ = task.instantiate(None)
        return signature(args)
    except Exception:  # noqa: BLE001
        return None


class _NoProgress:
    def update(self, n: int) -> None:
        pass

    def set_postfix_str(self, s: str) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, desc: str, enabled: bool) -> Any:
    if not enabled:
        return _NoProgress()
    return tqdm(total=total, desc=desc, unit="trial", leave=True, dynamic_ncols=True)
