"""AutoTVM's tuning callbacks. ``log_to_file(path)`` names the log the tuner writes (each
trial is appended as it ends, in tensorsched's JSON-lines format, which
``apply_history_best`` reads); ``progress_bar(total)`` shows the tuner's progress bar. Any
other callable is called once, after tuning, with ``(tuner, inputs, results)`` of all the
trials of that run (``MeasureInput``, ``MeasureResult``)."""

from __future__ import annotations

import os
from typing import Any

from .space import AutotvmError


class log_to_file:  # noqa: N801  (TVM's name)
    """Record every trial in the log at ``file_out`` (a path; appended to)."""

    def __init__(self, file_out: Any, protocol: str = "json") -> None:
        if not isinstance(file_out, (str, os.PathLike)):
            raise AutotvmError(
                f"log_to_file: give a file path, got {type(file_out).__name__}; the tuner "
                "appends to the file itself, one JSON line per trial"
            )
        if protocol != "json":
            raise AutotvmError(f"log_to_file: protocol {protocol!r}: the log is JSON lines")
        self.path = os.fspath(file_out)

    def __call__(self, tuner: Any, inputs: Any, results: Any) -> None:
        pass  # the tuner wrote each trial as it ended


class progress_bar:  # noqa: N801  (TVM's name)
    """Show the tuner's progress bar (of ``total`` trials)."""

    def __init__(self, total: int, prefix: str = "", si_prefix: str = "G") -> None:
        self.total, self.prefix = total, prefix

    def __call__(self, tuner: Any, inputs: Any, results: Any) -> None:
        pass
