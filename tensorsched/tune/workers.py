"""The tuner's worker processes: started fresh (spawn), each exiting with the tuner and
importing the user's template modules; used by the build pool (``measure.prebuild``), the
runner (``measure.Runner``) and the proposer's lowering (``features.Lowering``)."""

from __future__ import annotations

import concurrent.futures as cf
import importlib
import multiprocessing as mp
import os
import pickle
import threading
import time
import traceback


def exit_with_parent() -> None:
    """In a worker process: exit when the tuner that started it dies (``kill -9`` included),
    even while a hung kernel holds the main thread, instead of lingering as an orphan."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def import_modules(modules: tuple[str | bytes, ...]) -> None:
    """In a worker process: import the modules that registered the user's templates (named by
    the tuner's own process from its registry, never by a log). An item that is bytes is a
    registration the tuner's process pickled itself (``autotvm``: a template defined in the
    main script, sent by value as TVM's workers get it, so that the script is not run again):
    unpickled and called. Neither comes from a log."""
    for item in modules:
        if isinstance(item, bytes):
            pickle.loads(item)()
        else:
            importlib.import_module(item)


_IMPORT_ERROR: list[str] = []  # in a build worker: why the user's modules did not import


def init_worker(modules: tuple[str | bytes, ...] = ()) -> None:
    """A build worker's start: exit with the tuner, find the user's templates (a module that
    does not import is reported by each build, not by a broken pool)."""
    exit_with_parent()
    try:
        import_modules(modules)
    except Exception:  # noqa: BLE001
        _IMPORT_ERROR.append(traceback.format_exc(limit=3)[-2000:])


def worker_pool(n: int, modules: tuple[str | bytes, ...] = ()) -> cf.ProcessPoolExecutor:
    """``n`` worker processes, started fresh (spawn: no forked OpenCL state), each exiting
    with this one and importing the user's template ``modules`` (``init_worker``)."""
    return cf.ProcessPoolExecutor(
        n, mp_context=mp.get_context("spawn"), initializer=init_worker, initargs=(modules,)
    )
