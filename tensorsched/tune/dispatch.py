"""Using tuning results: ``apply_best(log)`` makes ``instantiate`` build each task with its best
logged config (the fastest correct one on the current device), else the template's defaults.

    with ts.tune.apply_best("gemm.jsonl"):
        s, args = ts.tune.instantiate("gemm", "cpu", (1024, 1024, 1024))
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from ..runtime.device import DeviceLimits
from .log import best_records, read_log
from .task import Task

_ACTIVE: list[dict] = []  # stack of {task key: config}


@contextlib.contextmanager
def apply_best(log_path: str, device: str | None = None) -> Iterator[dict[str, dict]]:
    """Within the block, ``instantiate`` uses the best config of ``log_path`` for each task."""
    name = device if device and " / " in device else DeviceLimits.of(device).name
    best = {k: r.config for k, r in best_records(read_log(log_path), device=name).items()}
    _ACTIVE.append(best)
    try:
        yield best
    finally:
        _ACTIVE.pop()


def best_config(task: Task) -> dict | None:
    """The config ``apply_best`` chose for ``task``, or None."""
    for table in reversed(_ACTIVE):
        if task.key() in table:
            return table[task.key()]
    return None


def instantiate(
    kind: str,
    template: str,
    shape: Sequence[int],
    dtype: str = "float32",
    epilogue: Sequence[str] = (),
) -> tuple[Any, list]:
    """``(schedule, args)`` of a template, with the best logged config when ``apply_best`` is
    active and has one for this task."""
    task = Task(kind, template, tuple(shape), dtype, tuple(epilogue))
    s, args, _ = task.instantiate(best_config(task))
    return s, args
