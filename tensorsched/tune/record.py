"""A tuning log's record, and the schema a record read from a log must meet.

Logs are data shared between people and machines: reading a record imports nothing and calls
nothing but the registered template it names (to learn that template's knob space). A record
is kept only when every field has its type and range:

- ``task``: a task of a registered template (``Task.from_dict``);
- ``device`` a name, ``status`` one of ``STATUSES``, ``error`` text, ``timestamp`` a time;
  ``host`` (optional) the name of the machine that measured it (a cluster's worker's host);
- ``config``: knobs of that template's space at that shape, each with one of its candidates
  (a JSON list for a split's tuple);
- ``device_ms``, ``host_ms``, ``gflops``: absent or finite and non-negative; an ``ok`` record
  has a ``device_ms`` that is positive, at most ``MAX_DEVICE_MS``, and not faster than the
  task's FLOPs at ``PEAK_FLOPS`` allow, and a ``gflops`` that matches it (filled in from it
  where the record has none);
- ``remeasure`` (optional, written only when true): the record measures again a config that
  the same search measured before (the tuner's check of its fastest configs, ``tune``'s
  ``verify``); a config's time is the median of all its measurements (``best_records``).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field, fields
from typing import Any

from ..errors import TensorschedError
from .task import Task

STATUSES = ("ok", "wrong", "timeout", "crash", "build_error", "invalid", "error")
PEAK_FLOPS = 1e15  # FLOP/s no device reaches (an H200 peaks at 6.7e13 in float32)
MAX_DEVICE_MS = 24 * 3600 * 1e3  # a day
GFLOPS_RTOL = 0.01  # an ok record's gflops is its task's FLOPs over its device_ms


class RecordError(TensorschedError):
    """A log record that does not meet the schema (why is in the message)."""


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
    host: str = ""  # the machine that measured it ("" in logs written before hosts were kept)
    remeasure: bool = False  # a config measured again (see the module's docstring)

    def config_key(self) -> str:
        return config_key(self.config)

    def task_key(self) -> str:
        """The key of the task the record names (made once per record: records are not
        changed once read)."""
        key = self.__dict__.get("_task_key")
        if key is None:
            key = self.__dict__["_task_key"] = Task.from_dict(self.task).key()
        return key


FIELDS = tuple(f.name for f in fields(Record))
REQUIRED = ("task", "device", "config", "status")


def config_key(config: dict) -> str:
    """A canonical string for a config (to recognise it again in a log)."""
    return json.dumps(jsonable(config), sort_keys=True)


def jsonable(value: Any) -> Any:
    """A config (or a knob value) with its tuples as lists, as JSON writes them."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [jsonable(v) for v in value]
    return value


def from_json(value: Any) -> Any:
    """A config read from JSON, its lists (split values) as tuples again."""
    if isinstance(value, dict):
        return {k: from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(from_json(v) for v in value)
    return value


def _number(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RecordError(f"{name} {_shown(value)} is not a number")
    try:
        number = float(value)  # an integer literal of 400 digits is beyond a float
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or number < 0:
        raise RecordError(f"{name} {_shown(value)} is not a finite non-negative number")
    return number


def _shown(value: Any, limit: int = 40) -> str:
    """``repr(value)``, cut to ``limit`` characters (a record may hold a number of 400 digits)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


class KnobSpaces:
    """The knob space of each task met while reading a log (each template called once per
    task), as ``{knob: {candidate as JSON}}``, or the reason the task is refused."""

    def __init__(self) -> None:
        self._spaces: dict[str, dict[str, set[str]] | str] = {}
        self._flops: dict[str, int] = {}

    def of(self, task: Task) -> tuple[dict[str, set[str]], int]:
        key = task.key()
        if key not in self._spaces:
            try:
                knobs = task.space().space
                self._spaces[key] = {
                    name: {json.dumps(jsonable(c)) for c in knob.candidates}
                    for name, knob in knobs.items()
                }
                self._flops[key] = task.flop
            except Exception as exc:  # noqa: BLE001  (a template refusing the shape, say)
                self._spaces[key] = (
                    f"the template '{task.template}' refuses {task}: "
                    f"{type(exc).__name__}: {str(exc)[:200]}"
                )
        found = self._spaces[key]
        if isinstance(found, str):
            raise RecordError(found)
        return found, self._flops[key]


def check_record(d: Any, spaces: KnobSpaces) -> Record:
    """The ``Record`` a parsed JSON line holds, or ``RecordError`` saying what is wrong."""
    if not isinstance(d, dict):
        raise RecordError(f"a record is a JSON object, got {type(d).__name__}")
    missing = [k for k in REQUIRED if k not in d]
    if missing:
        raise RecordError(f"missing field(s) {', '.join(missing)}")
    foreign = sorted(str(k) for k in d if k not in FIELDS)
    if foreign:
        raise RecordError(f"unknown field(s) {', '.join(foreign)}")
    try:
        task = Task.from_dict(d["task"])
    except TensorschedError as exc:
        raise RecordError(f"task: {exc}") from None
    for name in ("device", "status", "error", "host"):
        if name in d and not isinstance(d[name], str):
            raise RecordError(f"{name} {d[name]!r} is not text")
    if not d["device"]:
        raise RecordError("device is empty")
    if d["status"] not in STATUSES:
        raise RecordError(f"status {d['status']!r} is not one of {', '.join(STATUSES)}")
    if not isinstance(d.get("remeasure", False), bool):
        raise RecordError(f"remeasure {_shown(d['remeasure'])} is not true or false")
    timestamp = _number("timestamp", d.get("timestamp", 0.0))
    device_ms, host_ms, gflops = (_number(k, d.get(k)) for k in ("device_ms", "host_ms", "gflops"))

    config = d["config"]
    if not isinstance(config, dict):
        raise RecordError(f"config is a JSON object of knobs, got {type(config).__name__}")
    space, flop = spaces.of(task)
    for knob, value in config.items():
        if knob not in space:
            raise RecordError(
                f"config: '{task.template}' has no knob {knob!r} (its knobs: {', '.join(space)})"
            )
        if json.dumps(value) not in space[knob]:
            raise RecordError(
                f"config: {json.dumps(value)[:80]} is not a candidate of knob {knob!r} of "
                f"'{task.template}' at this shape"
            )

    if d["status"] == "ok":
        fastest = flop / PEAK_FLOPS * 1e3
        if device_ms is None or not fastest <= device_ms <= MAX_DEVICE_MS or device_ms <= 0:
            raise RecordError(
                f"device_ms {d.get('device_ms')!r} of an ok record is not a plausible time "
                f"(between {fastest:.3g} ms, {flop} FLOP at {PEAK_FLOPS:.0e} FLOP/s, and "
                f"{MAX_DEVICE_MS:.0f} ms)"
            )
        expect = flop / device_ms / 1e6
        if gflops is None:  # derived from device_ms: filled in
            gflops = expect
        elif abs(gflops - expect) > GFLOPS_RTOL * expect:
            raise RecordError(
                f"gflops {d.get('gflops')!r} does not match device_ms {device_ms} "
                f"({expect:.6g} GFLOP/s)"
            )
    return Record(
        task=d["task"],
        device=d["device"],
        config=from_json(config),
        status=d["status"],
        device_ms=device_ms,
        host_ms=host_ms,
        gflops=gflops,
        error=d.get("error", ""),
        timestamp=timestamp if timestamp is not None else 0.0,
        host=d.get("host", ""),
        remeasure=d.get("remeasure", False),
    )
