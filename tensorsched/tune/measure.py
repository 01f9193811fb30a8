"""Measuring candidates safely: every kernel runs in a worker process with a timeout.

- ``prebuild`` (run in a pool of processes, in parallel) instantiates a candidate and builds
  its OpenCL program, which fills the driver's binary cache and reports build errors early.
- ``Runner`` is one long-lived worker process that builds (now from the cache), checks the
  output against numpy (inputs random, output poisoned with NaN first), and times the
  kernel. A candidate that hangs is killed at its timeout, one that crashes the process is
  recorded as a crash; either way a fresh worker takes over and tuning goes on.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
import traceback

import numpy as np

RTOL = {"float32": 1e-5, "float16": 1e-2, "float64": 1e-10}
START_TIMEOUT = 120.0       # seconds a fresh worker may take to import and open the device


def exit_with_parent():
    """In a worker process: exit when the tuner that started it dies (``kill -9`` included),
    even while a hung kernel holds the main thread, instead of lingering as an orphan."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()


def _select_device(device):
    if device:
        os.environ["TS_DEVICE"] = device


def _candidate(task_dict, config):
    """``(module or None, args, status, error)`` for one candidate."""
    from ..build import build
    from ..errors import BuildError, TensorschedError
    from .task import Task
    task = Task.from_dict(task_dict)
    try:
        s, args, cfg = task.instantiate(config)
        if not cfg.valid:
            return None, None, "invalid", "; ".join(cfg.constraints)
        mod = build(s, args, target="opencl", name=f"{task.kind}_{task.template}")
    except BuildError as exc:
        return None, None, "build_error", str(exc)[:2000]
    except TensorschedError as exc:
        return None, None, "invalid", f"{type(exc).__name__}: {exc}"[:2000]
    return mod, args, "ok", ""


def prebuild(task_dict, config, device):
    """Build one candidate (in a pool worker); returns ``(status, error)``."""
    _select_device(device)
    try:
        _, _, status, error = _candidate(task_dict, config)
        return status, error
    except Exception:                                                # noqa: BLE001
        return "error", traceback.format_exc(limit=3)[-2000:]


def measure_one(task_dict, config, repeat, cache):
    """Build, check and time one candidate in this process; returns a result dict."""
    from .task import Task
    mod, args, status, error = _candidate(task_dict, config)
    if mod is None:
        return {"status": status, "error": error}
    task = Task.from_dict(task_dict)
    key = task.key()
    if key not in cache:
        inputs = task.inputs(args)
        cache.clear()
        cache[key] = (inputs, task.reference(inputs))
    inputs, ref = cache[key]
    out = np.full(args[-1].shape, np.nan, dtype=args[-1].dtype)
    mod(*inputs, out)
    scale = float(np.max(np.abs(ref))) or 1.0
    err = float(np.max(np.abs(out.astype(np.float64) - ref))) / scale
    if not err <= RTOL.get(task.dtype, 1e-5):
        where = "unwritten (NaN) elements" if np.isnan(out).any() else f"relative error {err:.2e}"
        return {"status": "wrong", "error": f"output differs from numpy: {where}"}
    t = mod.time_evaluator(number=1, repeat=repeat, warmup=1)(*inputs, out)
    return {"status": "ok", "device_ms": t.device_median * 1e3, "host_ms": t.host_median * 1e3,
            "gflops": task.flop / t.device_median / 1e9}


def _runner_main(conn, device):
    exit_with_parent()
    _select_device(device)
    try:                        # start up now, not in the first candidate's timeout
        from ..runtime.device import current_device
        from .task import Task  # noqa: F401  (imports the templates)
        current_device().queue
    except Exception:                                                # noqa: BLE001
        pass                    # the first candidate reports it
    conn.send("ready")
    cache = {}
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        task_dict, config, repeat = msg
        try:
            result = measure_one(task_dict, config, repeat, cache)
        except Exception:                                            # noqa: BLE001
            result = {"status": "error", "error": traceback.format_exc(limit=4)[-2000:]}
        conn.send(result)


class Runner:
    """A worker process that measures one candidate at a time, with a timeout."""

    def __init__(self, device=None, timeout=60.0):
        self.device, self.timeout = device, timeout
        self.ctx = mp.get_context("spawn")
        self.proc = None
        self.restarts = 0

    def _start(self):
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_runner_main, args=(child, self.device), daemon=True)
        self.proc.start()
        child.close()
        # the worker's start-up (seconds: spawn, imports, the driver) is not the candidate's
        if not self.conn.poll(max(START_TIMEOUT, self.timeout)) or self.conn.recv() != "ready":
            raise EOFError("the worker process did not start")

    def _kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.join(5)
            self.proc = None
            self.restarts += 1

    def measure(self, task_dict, config, repeat=5):
        try:
            if self.proc is None or not self.proc.is_alive():
                self._start()
            self.conn.send((task_dict, config, repeat))
            if self.conn.poll(self.timeout):
                return self.conn.recv()
            self._kill()
            return {"status": "timeout", "error": f"no result within {self.timeout:g} s; the "
                    "worker was killed"}
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
            if self.proc is not None:
                self.proc.join(1)           # reap it, for its exit code
            code = self.proc.exitcode if self.proc is not None else None
            self._kill()
            return {"status": "crash", "error": f"the worker process died (exit code {code})"}

    def close(self):
        if self.proc is not None and self.proc.is_alive():
            try:
                self.conn.send(None)
                self.proc.join(2)
            except (BrokenPipeError, OSError):
                pass
            if self.proc.is_alive():
                self.proc.kill()
        self.proc = None
