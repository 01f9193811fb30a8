"""The tuning log: JSON lines, one record per trial, appended and flushed (and fsynced) as each
trial ends, so killing the tuner loses at most the trial in flight.

Reading never rewrites the file: a line that does not parse (a truncated last line after a
kill, or damage) is skipped with a warning naming the file and line, and appending goes on
after it on a fresh line.
"""

from __future__ import annotations

import csv
import json
import os
import time
import warnings
from dataclasses import asdict, dataclass, field

from ..errors import TensorschedError
from .task import Task

STATUSES = ("ok", "wrong", "timeout", "crash", "build_error", "invalid", "error")


class LogError(TensorschedError):
    """The log cannot be written (full disk, permissions ...)."""


@dataclass
class Record:
    task: dict
    device: str
    config: dict
    status: str
    device_ms: float | None = None
    host_ms: float | None = None
    gflops: float | None = None
    error: str = ""
    timestamp: float = field(default_factory=time.time)

    def config_key(self):
        return config_key(self.config)

    def task_key(self):
        return Task.from_dict(self.task).key()


def config_key(config):
    """A canonical string for a config (to recognise it again in a log)."""
    return json.dumps(_jsonable(config), sort_keys=True)


def _jsonable(config):
    return {k: list(v) if isinstance(v, tuple) else v for k, v in config.items()}


def _from_json_config(config):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in config.items()}


def read_log(path):
    """The records of a log, skipping (with a warning) lines that do not parse."""
    records = []
    if not os.path.exists(path):
        return records
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise LogError(f"cannot read the tuning log {path}: {exc.strerror or exc}") from None
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                d["config"] = _from_json_config(d["config"])
                records.append(Record(**d))
            except (ValueError, TypeError, KeyError) as exc:
                warnings.warn(
                    f"{path}:{n}: skipped a damaged log line ({exc.__class__.__name__}); "
                    "the file is left as it is",
                    stacklevel=2,
                )
    return records


class LogWriter:
    """Appends records to ``path``; each append is one write of one line, flushed to disk."""

    def __init__(self, path):
        self.path = path
        folder = os.path.dirname(os.path.abspath(path))
        # a previous run killed mid-line leaves no newline: start on a fresh line
        self._needs_newline = False
        try:
            os.makedirs(folder, exist_ok=True)
            if os.path.exists(path) and os.path.getsize(path) > 0:
                with open(path, "rb") as f:
                    f.seek(-1, os.SEEK_END)
                    self._needs_newline = f.read(1) != b"\n"
        except OSError as exc:
            raise LogError(
                f"cannot open the tuning log {path} for appending: {exc.strerror or exc}"
            ) from None

    def append(self, record):
        d = asdict(record)
        d["config"] = _jsonable(record.config)
        line = json.dumps(d, sort_keys=True) + "\n"
        if self._needs_newline:
            line = "\n" + line
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                data = line.encode()
                written = os.write(fd, data)
                if written != len(data):
                    raise OSError(28, "short write (disk full?)")
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            self._needs_newline = True  # a part of the line may have been written
            raise LogError(
                f"cannot append to the tuning log {self.path}: {exc.strerror or exc}; "
                "the records already in it are intact; free space and rerun with "
                "--resume"
            ) from None
        self._needs_newline = False


def best_records(records, task_key=None, device=None):
    """The fastest correct record per task (optionally only one task / one device)."""
    best = {}
    for r in records:
        if r.status != "ok" or r.device_ms is None:
            continue
        if device is not None and r.device != device:
            continue
        k = r.task_key()
        if task_key is not None and k != task_key:
            continue
        if k not in best or r.device_ms < best[k].device_ms:
            best[k] = r
    return best


def export_csv(records, path):
    """Write the records as CSV (one row per trial, the config as JSON)."""
    cols = [
        "kind",
        "template",
        "shape",
        "epilogue",
        "device",
        "config",
        "status",
        "device_ms",
        "host_ms",
        "gflops",
        "error",
    ]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in records:
            t = r.task
            w.writerow(
                [
                    t["kind"],
                    t["template"],
                    "x".join(map(str, t["shape"])),
                    "+".join(t.get("epilogue", ())),
                    r.device,
                    json.dumps(_jsonable(r.config), sort_keys=True),
                    r.status,
                    r.device_ms,
                    r.host_ms,
                    r.gflops,
                    r.error,
                ]
            )
