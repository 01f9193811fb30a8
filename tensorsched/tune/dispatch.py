"""Using tuning results: ``apply_best(log)`` makes ``instantiate`` build each task with its best
logged config (the fastest correct one on the current device). A task no log has is built
with the task's own best in the package's shipped logs (``tune/logs/``) where they hold it,
else with a config predicted from the logs of other shapes of its template on that device
(the active logs, then the shipped ones): of the nearest logged shapes' bests, made legal for
this shape, the one expected fastest (``model.predict_config``, ``model.rescaled_ms``); with
none, the template's defaults. A
conv scheduled as a GEMM (``templates.GEMM_VIEWS``) is predicted from that GEMM template's
logs too, at the GEMM's extents, and a GEMM from such convs' logs (``model.family``).

    with ts.tune.apply_best("gemm.jsonl"):
        s, args = ts.tune.instantiate("gemm", "cpu", (1024, 1024, 1024))
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from typing import Any

from ..runtime.device import DeviceLimits, current_limits
from .features import shape_vector
from .log import best_records, read_log
from .model import history, own_best, predict_from_shapes, same_family, shipped_logs, sibling_logs
from .record import Record
from .task import Task

_ACTIVE: list[dict] = []  # stack of {task key: config}
_LOGS: list[tuple[DeviceLimits, list[Record]]] = []  # the device and records of active logs


@contextlib.contextmanager
def apply_best(log_path: str, device: str | None = None) -> Iterator[dict[str, dict]]:
    """Within the block, ``instantiate`` uses the best config of ``log_path`` for each task."""
    limits = current_limits() if device and " / " in device else DeviceLimits.of(device)
    name = device if device and " / " in device else limits.name
    records = read_log(log_path)
    best = {k: r.config for k, r in best_records(records, device=name).items()}
    _ACTIVE.append(best)
    _LOGS.append((limits, [r for r in records if r.device == name]))
    try:
        yield best
    finally:
        _ACTIVE.pop()
        _LOGS.pop()


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
    active and has one for this task, else a config predicted from the logs of other shapes
    (``predicted_config``), else the template's defaults."""
    task = Task(kind, template, tuple(shape), dtype, tuple(epilogue))
    config = best_config(task)
    if config is None:
        config = predicted_config(task)
    s, args, _ = task.instantiate(config)
    return s, args


def _sources(task: Task) -> list[tuple[DeviceLimits, list[Record]]]:
    """The records of ``task``'s family that ``predicted_config`` reads, in its order, each
    with the limits it predicts for: the active logs (last applied first), the current
    device's shipped logs, then those of a device on its platform."""
    sources = [(lim, same_family(task, records)) for lim, records in reversed(_LOGS)]
    limits = current_limits()
    paths = shipped_logs(limits.name)
    if paths:
        sources.append((limits, history(task, limits.name, paths)))
    sibling = sibling_logs(limits.name)  # one on its platform, after this device's own
    if sibling is not None:
        sources.append((limits, history(task, sibling[0], sibling[1])))
    return sources


def fewest_logged_rows(task: Task) -> float:
    """The fewest rows (first extent of the GEMM view, ``features.shape_vector``) of a shape
    of ``task``'s family with a correct trial in the logs ``predicted_config`` reads;
    infinity where they hold none."""
    rows = [
        shape_vector(Task.from_dict(r.task))[0]
        for _, records in _sources(task)
        for r in records
        if r.status == "ok"
    ]
    return min(rows, default=math.inf)


def predicted_config(task: Task) -> dict | None:
    """A config for a task no active log has: its own best trial in the package's shipped logs
    (``model.own_best``), else one predicted from the records of other shapes of its
    template's family (``model.family``: a conv scheduled as a GEMM and its GEMM template are
    one) in the active logs (on their device), else in the package's shipped logs for the
    current device, else in those of another device on its OpenCL platform (an H100 gets the
    H200's: ``model.sibling_logs``; a task that this device's shipped log lacks, such as a
    network's layer tuned on another machine, takes that device's best); ``None`` when none
    of them know the family."""
    sources = _sources(task)
    for lim, records in sources:  # the task itself, in any of them, first
        config = own_best(task, records, lim)
        if config is not None:
            return config
    for lim, records in sources:
        config = predict_from_shapes(task, records, lim)
        if config is not None:
            return config
    return None
