"""The tuning log: JSON lines, one record per trial, appended and flushed (and fsynced) as each
trial ends, so killing the tuner loses at most the trial in flight.

Reading never rewrites the file: a line that does not parse (a truncated last line after a
kill, or damage) or whose record does not meet the schema of ``record.py`` (a log is data: it
may come from anyone) is skipped with a warning naming the file and line, and appending goes
on after it on a fresh line.
"""

from __future__ import annotations

import csv
import fcntl
import json
import math
import os
import stat
import statistics
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import asdict, replace
from typing import BinaryIO

from ..errors import TensorschedError
from .record import (  # noqa: F401  (re-exported: a log's records)
    STATUSES,
    KnobSpaces,
    Record,
    RecordError,
    check_record,
    config_key,
    jsonable,
)


class LogError(TensorschedError):
    """The log cannot be read or written (full disk, permissions ...)."""


MAX_LINE_BYTES = 1 << 20  # a record is a few hundred bytes; an expr task's text a few KiB


def read_log(path: str) -> list[Record]:
    """The records of a log that meet the schema (``record.check_record``); a line that does
    not parse, is longer than ``MAX_LINE_BYTES`` or holds a record that does not meet it is
    skipped with a warning naming the file and line. Nothing is imported or run but the
    registered templates the records name. A log that does not exist holds no record; one
    that is not a regular file (a folder, a FIFO, a device such as ``/dev/zero``) is a
    ``LogError``, never a read that blocks or does not end."""
    records: list[Record] = []
    try:  # non-blocking: opening a FIFO that no one writes returns at once (to be refused)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return records
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL character
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise LogError(f"cannot read the tuning log {path}: {why}") from None
    kind = not_regular(os.fstat(fd).st_mode)
    if kind:
        os.close(fd)
        raise LogError(
            f"cannot read the tuning log {path}: it is {kind}, not a file; give the path of a "
            "JSON-lines file"
        )
    with os.fdopen(fd, "rb") as f:
        spaces = KnobSpaces()
        for n, raw in enumerate(_lines(f), 1):
            if raw is None:
                _skip(path, n, f"longer than {MAX_LINE_BYTES} bytes")
                continue
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            try:
                records.append(check_record(json.loads(line), spaces))
            except (ValueError, RecursionError) as exc:
                _skip(path, n, exc.__class__.__name__)
            except RecordError as exc:
                _skip(path, n, str(exc))
    return records


def not_regular(mode: int) -> str:
    """What a file of ``mode`` (``os.stat``) is where it is not a regular file (else "")."""
    if stat.S_ISREG(mode):
        return ""
    kinds = {
        stat.S_ISDIR: "a folder",
        stat.S_ISFIFO: "a FIFO (a named pipe)",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISSOCK: "a socket",
    }
    return next((what for test, what in kinds.items() if test(mode)), "not a regular file")


def _check_is_file(path: str, verb: str) -> None:
    """``LogError`` where ``path`` is there but is not a regular file (a folder, a FIFO, a
    device): a log is read and appended to as a file."""
    try:
        kind = not_regular(os.stat(path).st_mode)
    except (OSError, ValueError):
        return  # not there (yet): opening it says what is wrong
    if kind:
        raise LogError(
            f"cannot {verb} the tuning log {path}: it is {kind}, not a file; give the path of "
            "a JSON-lines file"
        )


def _lines(f: BinaryIO) -> Iterator[bytes | None]:
    """The lines of ``f``, each read in at most ``MAX_LINE_BYTES`` (and its newline); a line
    longer than that is read through in pieces and given as None."""
    while True:
        raw = f.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = f.readline(MAX_LINE_BYTES)
            yield None
        else:
            yield raw


def _skip(path: str, line: int, why: str) -> None:
    warnings.warn(
        f"{path}:{line}: skipped a damaged log line ({why}); the file is left as it is",
        stacklevel=3,
    )


class LogBusyError(LogError):
    """Another tuner is writing the log."""


class LogLock:
    """One writer per log: an advisory lock (``fcntl.flock``) on ``LOG.lock``, a file beside the
    log holding the pid of the process that holds it. ``acquire`` refuses at once with
    ``LogBusyError`` when another process holds it; the kernel releases it when its holder
    exits, ``kill -9`` included (a stale file left behind is simply locked again). ``release``
    removes the file. Use it as a context manager."""

    def __init__(self, log_path: str):
        self.log_path = log_path
        self.path = log_path + ".lock"
        self._fd: int | None = None

    def acquire(self) -> LogLock:
        _check_is_file(self.log_path, "lock")  # before the lock file is made beside it
        for _ in range(20):
            try:
                os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise LogError(
                    f"cannot lock the tuning log {self.log_path} (with {self.path}): "
                    f"{exc.strerror or exc}"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = _holder(fd)
                os.close(fd)
                raise LogBusyError(
                    f"{self.log_path} is being written by another tuner (pid {holder}, as "
                    f"{self.path} says): one tuner writes a log at a time; wait for it to "
                    "finish (then --resume), or tune into another --log"
                ) from None
            # the holder before us may have removed the file after we opened it: lock the
            # file that is there now
            try:
                now, mine = os.stat(self.path), os.fstat(fd)
                same = (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino)
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                self._fd = fd
                return self
            os.close(fd)
        raise LogBusyError(f"cannot lock {self.path}: it keeps being replaced")

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            os.unlink(self.path)  # while locked: a tuner waiting on this file tries again
        except OSError:
            pass
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> LogLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _holder(fd: int) -> str:
    """The pid written in a lock file (it is written just after the lock is taken)."""
    for _ in range(20):
        text = os.pread(fd, 32, 0).decode(errors="replace").strip()
        if text:
            return text
        time.sleep(0.01)
    return "unknown"


class LogWriter:
    """Appends records to ``path``; each append is one write of one line, flushed to disk."""

    def __init__(self, path: str):
        self.path = path
        folder = os.path.dirname(os.path.abspath(path))
        # a previous run killed mid-line leaves no newline: start on a fresh line
        self._needs_newline = False
        _check_is_file(path, "open")
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

    def append(self, record: Record) -> None:
        d = asdict(record)
        d["config"] = jsonable(record.config)
        if not record.remeasure:  # the usual case: logs stay as they were before the field
            del d["remeasure"]
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


def best_records(
    records: Iterable[Record], task_key: str | None = None, device: str | None = None
) -> dict[str, Record]:
    """The fastest correct config per task (optionally only one task / one device), as
    ``ranked_configs`` gives it: a config measured several times (``remeasure``) counts at
    the median of its measurements, not at its luckiest."""
    best: dict[str, Record] = {}
    for r in ranked_configs(records, task_key, device):
        best.setdefault(r.task_key(), r)
    return best


def ranked_configs(
    records: Iterable[Record], task_key: str | None = None, device: str | None = None
) -> list[Record]:
    """Each correct config of each task (optionally one task / one device) once, fastest
    first: its latest record, with ``device_ms`` and ``gflops`` those of the median of its
    measurements. A config that one of its measurements found wrong is left out (a race
    shows only sometimes)."""
    times: dict[tuple[str, str, str], list[float]] = {}
    latest: dict[tuple[str, str, str], Record] = {}
    wrong: set[tuple[str, str, str]] = set()
    for r in records:
        if device is not None and r.device != device:
            continue
        k = r.task_key()
        if task_key is not None and k != task_key:
            continue
        key = (k, r.device, r.config_key())
        if r.status == "wrong":
            wrong.add(key)
        if r.status == "ok" and r.device_ms is not None:
            times.setdefault(key, []).append(r.device_ms)
            latest[key] = r
    ranked = []
    for key, ms in times.items():
        if key in wrong:
            continue
        r, median = latest[key], statistics.median(ms)
        if median != r.device_ms and r.gflops is not None and r.device_ms is not None:
            r = replace(r, device_ms=median, gflops=r.gflops * r.device_ms / median)
        ranked.append(r)
    return sorted(ranked, key=lambda r: r.device_ms or math.inf)


def export_csv(records: Iterable[Record], path: str) -> None:
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
                    config_key(r.config),
                    r.status,
                    r.device_ms,
                    r.host_ms,
                    r.gflops,
                    r.error,
                ]
            )
