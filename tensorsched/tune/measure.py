"""Measuring candidates safely: every kernel runs in a worker process with a timeout.

- ``prebuild`` (run in a pool of processes, many candidates at a time) instantiates a
  candidate, lowers it, generates its OpenCL C, filters it by the device's limits and builds
  its program (which reports compiler errors early and fills the driver's cache; on a CPU
  device it also launches each kernel once, ``OpenCLModule.warm``); it returns
  the module as a ``ModuleArtifact`` (pickled): the source and the launch table of its
  kernels, plus the program binary where the driver keeps no cache of source builds.
- ``Runner`` is one long-lived worker process that loads each artifact (no lowering, no code
  generation: the program comes from the driver's cache or from the binary; the next
  candidates' are loaded in a thread while the current one runs), runs it once into
  an output poisoned with NaN, checks the output against the float64 reference and times the
  kernels. The task's inputs, output and reference stay on the device from one candidate to
  the next (made once, when the worker starts), so nothing crosses to the host but a number.
  A candidate that hangs is killed at its timeout, one that crashes the process is recorded
  as a crash; either way a fresh worker takes over and tuning goes on. A candidate that the
  pool could not build (its build worker died) is built by the runner itself.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
import time
import traceback
from collections import namedtuple
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..errors import BuildError, TensorschedError
from ..ir.dtype import NUMPY
from ..ops.space import Config
from ..runtime.device import Device, DeviceLimits, current_device
from ..runtime.module import ModuleArtifact, OpenCLModule, Timing, caches_source_builds
from ..schedules.lower import lower
from .check import RTOL, OutputCheck, poison  # noqa: F401  (RTOL: the tolerances, re-exported)
from .features import group_steps
from .filter import check_limits
from .task import Task
from .workers import _IMPORT_ERROR, exit_with_parent, import_modules

START_TIMEOUT = 120.0  # seconds a fresh worker may take to start (imports, device, inputs)
TIME_BUDGET_MS = 50.0  # stop repeating once the timed runs took this long (>= 3 runs)
# a build on a CPU device launches each kernel as one work-group (``OpenCLModule.warm``) only
# where that work-group runs at most this many loop steps (``features.group_steps``): a 64x64
# tile of a GEMM with K = 4096 runs 2**24
WARM_STEPS = 2.0**26

ArgSpec = namedtuple("ArgSpec", "shape dtype")


def _select_device(device: str | None) -> None:
    if device:
        os.environ["TS_DEVICE"] = device


def signature(args: Sequence[Any]) -> tuple[ArgSpec, ...]:
    """The shapes and dtypes of a function's arguments (tensors or buffers), as plain data."""
    return tuple(
        ArgSpec(tuple(int(x) for x in a.shape), str(np.dtype(_np_dtype(a.dtype)))) for a in args
    )


def _np_dtype(dtype: str) -> str:
    return NUMPY.get(dtype, dtype)


# ---------------------------------------------------------------------------- building


def build_candidate(
    task_dict: dict,
    config: dict,
    limits: DeviceLimits | None = None,
    compile: bool = True,
    device: Device | None = None,
) -> tuple[str, str, ModuleArtifact | None, OpenCLModule | None]:
    """``(status, error, artifact, module)`` of one candidate, built in this process:
    instantiated (for the device of ``limits``, default: this process's device), lowered, its
    code generated, filtered by the device's ``limits`` and, with ``compile``, its program
    built on ``device`` (default: this process's). ``artifact`` is ``None`` unless the status
    is ``ok``; so is ``module``, which is ``None`` without ``compile`` too (a build worker of a
    cluster without the device)."""
    task = Task.from_dict(task_dict)
    try:
        s, args, cfg = task.instantiate(Config(config, limits=limits))
        if not cfg.valid:
            return "invalid", "; ".join(cfg.constraints) or "constraint", None, None
        func = lower(s, args, name=f"{task.kind}_{task.template}")
        art = ModuleArtifact.from_func(func)
        why = check_limits(func, art.source, limits) if limits is not None else None
        if why is not None:
            return "invalid", why, None, None
        if not compile:
            return "ok", "", art, None
        mod = OpenCLModule.from_artifact(art, device, cache=False)
        if mod.device.is_cpu and group_steps(func) <= WARM_STEPS:
            # PoCL compiles a kernel for its work-group size at its first launch (up to 16 s
            # for a large unrolled tile) and keeps it by the source: here, in the build pool's
            # processes at once, that leaves the runner's first launch (the check, under the
            # timeout) a cache hit. Only where one work-group's run is short, since no
            # timeout guards it here (a kernel that runs for hours runs it in the runner)
            mod.warm()
    except BuildError as exc:
        return "build_error", str(exc)[:2000], None, None
    except TensorschedError as exc:
        return "invalid", f"{type(exc).__name__}: {exc}"[:2000], None, None
    return "ok", "", art, mod


def prebuild(
    task_dict: dict,
    config: dict,
    device: str | Device | None,
    limits: DeviceLimits | None = None,
    binary: bool | None = None,
    compile: bool = True,
) -> tuple[str, str, bytes | None]:
    """Build one candidate (in a pool worker) on ``device`` (``"P:D"``, which this process then
    uses, or a ``Device``); returns ``(status, error, artifact)`` with the artifact as
    ``ModuleArtifact.dumps()`` bytes (``None`` unless ``ok``). ``binary``: ship the program
    binary (default: where the driver keeps no cache of source builds). Without ``compile``
    (a worker that does not hold the device), the artifact is the source only and the
    measuring worker builds it."""
    on = device if isinstance(device, Device) else None
    if compile and on is None:
        _select_device(device if isinstance(device, str) else None)
    if _IMPORT_ERROR:
        return "error", _IMPORT_ERROR[0], None
    try:
        status, error, art, mod = build_candidate(task_dict, config, limits, compile, on)
        if art is not None and mod is None and not compile:
            return status, error, art.dumps()
        if mod is None or art is None:
            return status, error, None
        if binary is None:
            binary = not caches_source_builds(mod.device)
        if binary:
            try:
                art = mod.export(binary=True)
            except Exception:  # noqa: BLE001
                pass  # the runner builds it from the source
        return status, error, art.dumps()
    except Exception:  # noqa: BLE001
        return "error", traceback.format_exc(limit=3)[-2000:], None


# ---------------------------------------------------------------------------- measuring


class Bench:
    """A task's inputs (random, on the host and on the device), its output buffer on the
    device and the check against its float64 reference, made once per task and worker."""

    def __init__(self, queue: Any, task: Task, specs: Sequence[ArgSpec]):
        import pyopencl.array as cla

        self.queue, self.specs = queue, tuple(specs)
        self.host = task.inputs(specs)
        ref = task.reference(self.host)
        out = specs[-1]
        if tuple(ref.shape) != tuple(out.shape):
            ref = ref.reshape(out.shape)
        self.inputs = [cla.to_device(queue, np.ascontiguousarray(h)) for h in self.host]
        self.out = cla.empty(queue, out.shape, out.dtype)
        self.check = OutputCheck(queue, ref, out.dtype)

    def args(self, mod: OpenCLModule) -> list:
        """The arrays to call ``mod`` with: device arrays, but images (numpy, converted by the
        module)."""
        return [h if b.image else d for h, d, b in zip(self.host, self.inputs, mod.func.args)] + [
            self.out
        ]

    def restore(self, which: Iterable[int] | None = None) -> None:
        """Copy the host inputs to the device again (all, or the indices ``which``)."""
        for i, (h, d) in enumerate(zip(self.host, self.inputs)):
            if which is None or i in which:
                d.set(np.ascontiguousarray(h), queue=self.queue)


class Worker:
    """The runner process's state: its device, the bench of the task being tuned, and the
    modules of the next candidates, loaded ahead in a thread (building a program does not hold
    Python's lock) while the current one runs."""

    def __init__(self, limits: DeviceLimits | None = None):
        self.device = current_device()
        self.queue = self.device.queue
        self.limits = limits
        self.bench: Bench | None = None
        self.bench_key: tuple | None = None
        self.uploads = 0
        self._ahead: dict[int, cf.Future] = {}  # hash of an artifact's bytes -> its module
        self._loader: cf.ThreadPoolExecutor | None = None

    def _load(self, artifact: bytes) -> OpenCLModule:
        return OpenCLModule.from_artifact(artifact, self.device, cache=False)

    def load(self, artifact: bytes, upcoming: Iterable[bytes | None] = ()) -> OpenCLModule:
        """The module of ``artifact`` (loaded ahead, or now), after starting to load the
        ``upcoming`` artifacts' modules in the background."""
        fut = self._ahead.pop(hash(artifact), None)
        keep = {hash(a): a for a in upcoming if a is not None and a is not artifact}
        for k in list(self._ahead):
            if k not in keep:  # not coming next any more
                del self._ahead[k]
        for k, a in keep.items():
            if k not in self._ahead:
                if self._loader is None:
                    self._loader = cf.ThreadPoolExecutor(1, thread_name_prefix="load-ahead")
                self._ahead[k] = self._loader.submit(self._load, a)
        return fut.result() if fut is not None else self._load(artifact)

    def prepare(self, task_dict: dict, specs: Sequence[ArgSpec]) -> Bench:
        """The bench of a task with arguments ``specs`` (made now unless it is the current)."""
        key = (Task.from_dict(task_dict).key(), tuple(specs))
        if key != self.bench_key or self.bench is None:
            self.bench, self.bench_key = None, None
            self.bench = Bench(self.queue, Task.from_dict(task_dict), specs)
            self.bench_key = key
            self.uploads += 1
        return self.bench


def measure_one(
    task_dict: dict,
    config: dict,
    artifact: bytes | None,
    repeat: int,
    budget_ms: float | None,
    worker: Worker,
    upcoming: Iterable[bytes | None] = (),
) -> dict[str, Any]:
    """Load (or, without an artifact, build), check and time one candidate in this process;
    returns a result dict (keys starting with ``_`` are the worker's figures, not logged).
    ``upcoming``: the artifacts of the next candidates, to load while this one runs."""
    t0 = time.perf_counter()
    if artifact is None:  # the pool could not build it: build it here
        status, error, _, mod = build_candidate(task_dict, config, worker.limits)
        if mod is None:
            return {"status": status, "error": error}
    else:
        try:
            mod = worker.load(artifact, upcoming)
        except BuildError as exc:
            return {"status": "build_error", "error": str(exc)[:2000]}
        except TensorschedError as exc:
            return {"status": "invalid", "error": f"{type(exc).__name__}: {exc}"[:2000]}
    t1 = time.perf_counter()
    bench = worker.prepare(task_dict, signature(mod.func.args))
    written = {i for i, b in enumerate(mod.func.args[:-1]) if b in mod.func.outputs}
    if written:  # it writes an input: give it the inputs afresh
        bench.restore(written)
    args = bench.args(mod)
    t2 = time.perf_counter()
    poison(worker.queue, bench.out)
    mod(*args)
    why = bench.check(bench.out)
    if why is not None:
        # an earlier candidate may have written out of bounds into the inputs that stay on
        # the device: check once more on inputs copied in afresh before calling it wrong
        bench.restore()
        poison(worker.queue, bench.out)
        mod(*args)
        why = bench.check(bench.out)
    t3 = time.perf_counter()
    stages = {
        "_load_s": t1 - t0,
        "_prepare_s": t2 - t1,
        "_check_s": t3 - t2,
        "_uploads": worker.uploads,
        "_pid": os.getpid(),
    }
    if why is not None:
        return {"status": "wrong", "error": why, **stages}
    # the checked run was the warm-up
    t = mod.time_evaluator(number=1, repeat=repeat, warmup=0, budget_ms=budget_ms)(*args)
    stages["_time_s"] = time.perf_counter() - t3
    stages["_repeats"] = len(t.device_times)
    device = inference_seconds(mod, t, task_dict["kind"])
    return {
        "status": "ok",
        "device_ms": device * 1e3,
        "host_ms": t.host_median * 1e3,
        "gflops": _flop(task_dict) / device / 1e9,
        **stages,
    }


WEIGHTED = ("conv2d", "depthwise_conv2d", "group_conv2d", "dense")  # args[1]: the weights


def inference_seconds(mod: OpenCLModule, t: Timing, kind: str) -> float:
    """The median device time of a call without its weight-only kernels (an operator with
    weights: its repacking, which a network runs once at build time), else of all."""
    packing = mod.weight_only_kernels(mod.func.args[1:2]) if kind in WEIGHTED else frozenset()
    if not packing:
        return t.device_median
    runs = np.array(t.device_times) - sum(np.array(t.kernel_times[k]) for k in packing)
    return float(np.median(runs))


_FLOP: dict[str, int] = {}


def _flop(task_dict: dict) -> int:
    task = Task.from_dict(task_dict)
    key = task.key()
    if key not in _FLOP:
        _FLOP[key] = task.flop
    return _FLOP[key]


def _is_device_error(exc: BaseException) -> bool:
    try:
        import pyopencl as cl

        return isinstance(exc, cl.Error)
    except ImportError:
        return False


def _runner_main(
    conn: Any,
    device: str | None,
    task_dict: dict | None = None,
    specs: Sequence[ArgSpec] | None = None,
    limits: DeviceLimits | None = None,
    modules: tuple[str | bytes, ...] = (),
) -> None:
    exit_with_parent()
    _select_device(device)
    worker = None
    try:  # start up now, not in the first candidate's timeout
        import_modules(modules)  # a user's template modules
        worker = Worker(limits)
        if task_dict is not None and specs:
            worker.prepare(task_dict, specs)
    except Exception:  # noqa: BLE001
        pass  # the first candidate reports it
    conn.send("ready")
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        task_dict, config, artifact, repeat, budget_ms, upcoming = msg
        try:
            if worker is None:
                worker = Worker(limits)
            result = measure_one(task_dict, config, artifact, repeat, budget_ms, worker, upcoming)
        except Exception as exc:  # noqa: BLE001
            result = {"status": "error", "error": traceback.format_exc(limit=4)[-2000:]}
            if _is_device_error(exc):
                # the context may be unusable after a failed launch: a fresh worker goes on
                result["_restart"] = True
        conn.send(result)
        if result.get("_restart"):
            return


class Runner:
    """A worker process that measures one candidate at a time, with a timeout.

    Give it the task (``task_dict``) and its arguments' shapes and dtypes (``specs``) to have
    a fresh worker make the inputs, the reference and the device buffers while it starts,
    and the ``modules`` that register the user's templates to have it import them;
    ``start()`` starts it without waiting."""

    def __init__(
        self,
        device: str | None = None,
        timeout: float = 60.0,
        task_dict: dict | None = None,
        specs: tuple | None = None,
        limits: DeviceLimits | None = None,
        modules: tuple[str | bytes, ...] = (),
    ):
        self.device, self.timeout = device, timeout
        self.task_dict, self.specs, self.limits = task_dict, specs, limits
        self.modules = tuple(modules)
        self.ctx = mp.get_context("spawn")
        self.proc: Any = None  # the worker process
        self.ready = False
        self.restarts = 0

    def start(self) -> None:
        """Start a worker, unless one is running; returns at once."""
        if self.proc is not None and self.proc.is_alive():
            return
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(
            target=_runner_main,
            daemon=True,
            args=(child, self.device, self.task_dict, self.specs, self.limits, self.modules),
        )
        self.proc.start()
        child.close()
        self.ready = False

    def _wait_ready(self) -> None:
        # the worker's start-up (seconds: spawn, imports, the driver, the task's inputs and
        # reference) is not the candidate's
        if self.ready:
            return
        if not self.conn.poll(max(START_TIMEOUT, self.timeout)) or self.conn.recv() != "ready":
            raise EOFError("the worker process did not start")
        self.ready = True

    def _kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join(5)
            self.proc = None
            self.restarts += 1

    def measure(
        self,
        task_dict: dict,
        config: dict,
        repeat: int = 5,
        artifact: bytes | None = None,
        budget_ms: float | None = None,
        upcoming: Iterable[bytes | None] = (),
    ) -> dict[str, Any]:
        """Measure one candidate: from its ``artifact`` (``prebuild``'s bytes), or without one
        built by the worker itself; ``upcoming``: the next candidates' artifacts, which the
        worker loads meanwhile. Returns a result dict."""
        result = self._measure(task_dict, config, repeat, artifact, budget_ms, upcoming)
        if result["status"] == "crash" and upcoming:
            # a load ahead may have been what crashed: the candidate alone decides
            result = self._measure(task_dict, config, repeat, artifact, budget_ms, ())
        return result

    def _measure(
        self,
        task_dict: dict,
        config: dict,
        repeat: int,
        artifact: bytes | None,
        budget_ms: float | None,
        upcoming: Iterable[bytes | None],
    ) -> dict[str, Any]:
        try:
            if self.proc is None or not self.proc.is_alive():
                self.start()
            self._wait_ready()
            self.conn.send((task_dict, config, artifact, repeat, budget_ms, tuple(upcoming)))
            if self.conn.poll(self.timeout):
                result = self.conn.recv()
                if result.get("_restart"):  # the worker exits after this one
                    self.proc.join(5)
                    self._kill()
                return result
            self._kill()
            return {
                "status": "timeout",
                "error": f"no result within {self.timeout:g} s; the worker was killed",
            }
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
            if self.proc is not None:
                self.proc.join(1)  # reap it, for its exit code
            code = self.proc.exitcode if self.proc is not None else None
            self._kill()
            return {"status": "crash", "error": f"the worker process died (exit code {code})"}

    def close(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            try:
                self.conn.send(None)
                self.proc.join(2)
            except (BrokenPipeError, OSError):
                pass
            if self.proc.is_alive():
                self.proc.kill()
        self.proc = None
