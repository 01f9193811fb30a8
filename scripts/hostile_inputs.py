"""Hostile inputs for the parts of tensorsched that read what others wrote (issue 15), with
counts for benchmarks/reliability.md:

- tuning-log records: variants of a good record (every field, and every field of its task,
  replaced by wrong types, negative, NaN, infinite and huge numbers; fields missing and extra;
  unknown templates, module paths, foreign knobs and out-of-space values; truncated lines;
  binary garbage), each read by ``read_log`` after a good record, then all of them together by
  ``tensorsched source --log``: every bad line must be skipped with a warning naming it, never
  an uncaught exception, never a winner;
- concurrent tuners: rounds of 2-3 simultaneous ``tensorsched tune ... --resume --log L`` on
  one log, counting configs measured twice (must be 0) and tuners refused by the log's lock;
- parser inputs: seeded random and hostile texts for ``ts.parse_ir`` and ``ts.parse_expr``
  (deep nesting, long sums, garbage, truncated and mutated valid text, huge integers,
  out-of-bounds indices), counting exceptions that are not ``TensorschedError`` (must be 0).

    python scripts/hostile_inputs.py                 # about 3 minutes on 2 cores
    python scripts/hostile_inputs.py --quick         # smaller samples
    python scripts/hostile_inputs.py --json out.json # also write the counts as JSON

Each uncaught exception is printed with its input and traceback; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

TASK = {"kind": "gemm", "template": "cpu", "shape": [16, 16, 16], "dtype": "float32"}
FLOP = 2 * 16 * 16 * 16
GOOD_MS, FAST_MS = 1.0, 0.01  # the good record; every bad variant is 100x faster


def _record(config: dict, device_ms: float) -> dict:
    return {
        "task": dict(TASK, epilogue=[], expr="", expr_shapes=""),
        "device": "cl / dev",
        "config": config,
        "status": "ok",
        "device_ms": device_ms,
        "host_ms": 2.0,
        "gflops": FLOP / device_ms / 1e6,
        "error": "",
        "timestamp": 1.7e9,
    }


# ---------------------------------------------------------------------------- log records

WRONG = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    -0.5,
    float("nan"),
    float("inf"),
    float("-inf"),
    1e308,
    10**30,
    10**400,  # an integer no float holds
    -(10**400),
    "",
    "x",
    "1.0",
    "os:system",
    "\x00",
    "é" * 3,
    "x" * 100_000,
    [],
    [1],
    [[[[]]]],
    {},
    {"a": 1},
    {"__class__": "os"},
]


def _legit(field: str, value: Any) -> bool:
    """Whether replacing ``field`` of the fast record by ``value`` leaves a valid record (such
    variants are controls: they must be kept)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    try:
        finite = number and math.isfinite(float(value))
    except OverflowError:  # an integer no float holds
        finite = False
    if field == "device":
        return isinstance(value, str) and value != ""
    if field == "error":
        return isinstance(value, str)
    if field in ("timestamp", "host_ms"):  # absent, null (as 0 for a timestamp), or a number
        return value is None or (finite and value >= 0)
    if field == "gflops":
        return value is None
    if field == "config":
        return value == {}
    if field in ("task.dtype",):
        return value == "float32"
    if field in ("task.expr", "task.expr_shapes"):
        return value == ""
    if field == "task.epilogue":
        return value == []
    return False


def log_variants(rng: random.Random, space: dict) -> list[tuple[str, str | bytes, bool]]:
    """``(what, line, legit)`` for many variants of a fast record (a line without its line
    break; bytes for garbage)."""
    knobs = {k: v for k, v in space.items()}
    fast_cfg = {k: vals[-1] for k, vals in knobs.items()}
    base = _record(fast_cfg, FAST_MS)
    out: list[tuple[str, str | bytes, bool]] = []

    def add(what: str, d: Any, legit: bool = False) -> None:
        out.append((what, json.dumps(d), legit))

    for field in list(base):
        for v in WRONG:
            d = json.loads(json.dumps(base))
            d[field] = v
            add(f"{field}={_short(v)}", d, _legit(field, v))
        d = json.loads(json.dumps(base))
        del d[field]
        add(f"no {field}", d, field in ("host_ms", "error", "timestamp", "gflops"))
    for field in list(base["task"]):
        for v in WRONG:
            d = json.loads(json.dumps(base))
            d["task"][field] = v
            add(f"task.{field}={_short(v)}", d, _legit(f"task.{field}", v))
        d = json.loads(json.dumps(base))
        del d["task"][field]
        add(f"no task.{field}", d, field in ("dtype", "epilogue", "expr", "expr_shapes"))
    special = {
        "template": [
            "os:system",
            "this:x",
            "builtins:print",
            "tensorsched.ops.templates.gemm_cpu:gemm_cpu",
            "../evil",
            "fastest",
            "CPU",
            "gpu_tiled",  # a real template, but the config's knobs are the cpu one's
        ],
        "kind": ["conv2d", "expr", "GEMM", "matmul"],
        "shape": [
            [16, 16],
            [0, 16, 16],
            [-16, 16, 16],
            [16.0, 16, 16],
            ["16", 16, 16],
            [2**40, 16, 16],
            [2**70, 16, 16],
            [16, 16, 16, 16],
            [True, 16, 16],
        ],
        "dtype": ["float8", "object", "float32 "],
        "epilogue": [["gelu"], "relu", [1], ["bias", "bias"]],
    }
    for field, values in special.items():
        for v in values:
            d = json.loads(json.dumps(base))
            d["task"][field] = v
            add(f"task.{field}={_short(v)}", d)
    for extra in ({"code": "import os"}, {"__reduce__": [1]}, {"x": None}):
        d = json.loads(json.dumps(base))
        d.update(extra)
        add(f"extra field {list(extra)[0]}", d)
        d = json.loads(json.dumps(base))
        d["task"].update(extra)
        add(f"extra task field {list(extra)[0]}", d)
    # configs: foreign knobs, values out of the space, wrong types per knob
    for foreign in ("tile_q", "", "__class__", "TILE_X"):
        d = json.loads(json.dumps(base))
        d["config"][foreign] = 4
        add(f"foreign knob {foreign!r}", d)
    for knob, vals in knobs.items():
        for v in [3, 5, 10**9, -1, 0, [3, 16], [1, 2, 3], [], [2**40], 1.5, "4", None, {}, True]:
            if v in vals:
                continue
            d = json.loads(json.dumps(base))
            d["config"][knob] = v
            add(f"config.{knob}={_short(v)}", d)
    for status in ("OK", "ok ", "best", ""):
        d = json.loads(json.dumps(base))
        d["status"] = status
        add(f"status={status!r}", d)
    for what, ms, gf in (
        ("faster than the peak", 1e-9, None),
        ("zero time", 0.0, None),
        ("over a day", 1e9, None),
        ("gflops that does not match", FAST_MS, 1e6),
        ("negative gflops", FAST_MS, -0.8192),
    ):
        d = json.loads(json.dumps(base))
        d["device_ms"], d["gflops"] = ms, gf
        add(what, d)
    # not a JSON object
    for v in ([], [base], 1, "x", None, True, 1e400):
        add(f"top-level {_short(v)}", v)
    good_line = json.dumps(base)
    # truncated lines: every 7th cut of the record (and the last few bytes)
    cuts = sorted(set(range(1, len(good_line), 7)) | set(range(len(good_line) - 4, len(good_line))))
    for n in cuts:
        out.append((f"cut at {n}", good_line[:n], False))
    # deep nesting, long lines
    out.append(("nesting 100000 deep", "[" * 100_000 + "]" * 100_000, False))
    out.append(
        (
            "config nesting 5000 deep",
            good_line.replace(
                '"config": {', '"config": ' + "{" * 1 + '"a": ' + "[" * 5000 + "]" * 5000 + ", ", 1
            ),
            False,
        )
    )
    out.append(("a 2 MB line", '{"task": "' + "x" * 2_000_000 + '"}', False))
    # binary garbage (no line breaks, not blank)
    for k in range(200):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
        raw = raw.replace(b"\n", b"\x01").replace(b"\r", b"\x02") + b"#"
        out.append((f"garbage {k}", raw, False))
    # a good line with one byte changed so that it is no longer JSON (a change that still
    # parses is a field-level variant above, or a valid record: left out)
    for _ in range(300):
        pos = rng.randrange(len(good_line))
        ch = chr(rng.choice([c for c in range(32, 127) if chr(c) != good_line[pos]]))
        line = good_line[:pos] + ch + good_line[pos + 1 :]
        try:
            json.loads(line)
        except ValueError:
            out.append((f"byte {pos} changed to {ch!r}", line, False))
    return out


def _bytes(line: str | bytes) -> bytes:
    return line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 24 else text[:20] + "..."


def run_log_records(quick: bool, tmp: str) -> tuple[dict, list]:
    """Each variant after a good record through ``read_log`` and ``best_records``; then all
    of them in one log through ``tensorsched source``."""
    from tensorsched.tune import Task
    from tensorsched.tune.log import best_records, read_log
    from tensorsched.tune.record import config_key, jsonable

    space = {
        k: [jsonable(c) for c in knob.candidates]
        for k, knob in Task("gemm", "cpu", (16, 16, 16)).space().space.items()
    }
    good_cfg = {k: vals[0] for k, vals in space.items()}
    good = json.dumps(_record(good_cfg, GOOD_MS))
    variants = log_variants(random.Random(0), space)
    if quick:
        variants = variants[::4]
    counts: Counter = Counter()
    bugs: list = []
    log = os.path.join(tmp, "one.jsonl")
    for what, line, legit in variants:
        with open(log, "wb") as f:
            f.write(_bytes(good) + b"\n" + _bytes(line) + b"\n")
        counts["controls" if legit else "tried"] += 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                records = read_log(log)
                best = best_records(records)
            except Exception:  # noqa: BLE001  (what this counts)
                counts["uncaught"] += 1
                bugs.append(("read_log", what, line[:300], traceback.format_exc()[-2000:]))
                continue
        named = [w for w in caught if f"{log}:2:" in str(w.message)]
        kept = len(records) == 2
        good_wins = any(
            config_key(r.config) == config_key(good_cfg) and r.device_ms == GOOD_MS
            for r in best.values()
        )
        if legit:
            counts["controls kept" if kept and not named else "controls refused"] += 1
            continue
        if not kept and named:
            counts["skipped with a warning"] += 1
        elif not kept:
            counts["skipped silently"] += 1
        else:
            counts["accepted"] += 1
            bugs.append(("accepted", what, line[:300], ""))
        if not good_wins:
            counts["winners over the good record"] += 1
            bugs.append(("winner", what, line[:300], ""))
        elif len(best) > 1:
            counts["best of a task of their own"] += 1

    # all variants in one log, after the good record, through `tensorsched source`
    bad = [v for v in variants if not v[2]]  # the controls are valid, and faster: left out
    failed = {b[1] for b in bugs if b[0] == "read_log"}
    runs = [("all", bad)]
    if failed:  # past the lines read_log raises on, to see what source does with the rest
        runs.append(("without those read_log failed on", [v for v in bad if v[0] not in failed]))
    # valid records of two more tasks whose kernels must not share the good record's files,
    # nor each other's (an expr task's text is not in a file name)
    distinct = "3 distinct tasks"
    runs.append((distinct, [(e, json.dumps(_expr_record(e)), True) for e in EXPR_TASKS]))
    for k, (name, chosen) in enumerate(runs):
        counts[f"source log ({name}): lines"] = len(chosen) + 1
        big = os.path.join(tmp, f"all_{k}.jsonl")
        with open(big, "wb") as f:
            f.write(_bytes(good) + b"\n" + b"".join(_bytes(line) + b"\n" for _, line, _ in chosen))
        out = os.path.join(tmp, f"kernels_{k}")
        p = subprocess.run(
            [
                os.path.join(os.path.dirname(sys.executable), "tensorsched"),
                "source",
                "--log",
                big,
                "--out",
                out,
            ],
            capture_output=True,
            text=True,
            errors="replace",
        )
        warned = p.stderr.count("skipped a damaged log line")
        files = sorted(os.listdir(out)) if os.path.isdir(out) else []
        metas = [json.load(open(os.path.join(out, f))) for f in files if f.endswith(".json")]
        counts[f"source log ({name}): exit"] = p.returncode
        counts[f"source log ({name}): warnings"] = warned
        written = [ln for ln in p.stdout.splitlines() if ln.endswith("and its .json")]
        counts[f"source log ({name}): kernels"] = len(metas)
        counts[f"source log ({name}): kernels written over another"] = len(written) - len(metas)
        good_out = sum(
            config_key(m["config"]) == config_key(good_cfg) and m["task"]["expr"] == ""
            for m in metas
        )
        counts[f"source log ({name}): kernels of the good record"] = good_out
        if p.returncode == 0 and not good_out:
            why = "the good record's kernel is not in --out" + (
                ": another record's kernel of the same file name replaced it"
                if len(written) > len(metas)
                else ""
            )
            bugs.append(("source", name, "", why))
        if name == distinct and (p.returncode or len(metas) != 1 + len(EXPR_TASKS)):
            bugs.append(("source", name, "", f"exit {p.returncode}, {len(metas)} kernels"))
        if "Traceback" in p.stderr:
            counts[f"source log ({name}): traceback"] = 1
            bugs.append(("source", name, big, p.stderr[-3000:]))
    return dict(counts), bugs


EXPR_TASKS = ("B[i] = A[i] * 2.0", "B[i] = A[i] + 1.0")  # two valid expr tasks at i=16


def _expr_record(expr: str) -> dict:
    """A valid record of an expr task (the generic template's defaults) at i=16."""
    task = dict(kind="expr", template="generic", shape=[], dtype="float32", epilogue=[])
    return {
        "task": dict(task, expr=expr, expr_shapes="i=16"),
        "device": "cl / dev",
        "config": {},
        "status": "ok",
        "device_ms": GOOD_MS,
        "error": "",
        "timestamp": 1.0,
    }


# ---------------------------------------------------------------------------- concurrent tuners


def run_concurrent(rounds: int, tmp: str) -> tuple[dict, list]:
    """``rounds`` rounds of 2 or 3 tuners on one log, each with ``--resume``, started 0 to
    3 s apart (most overlap, some follow one that finished); then the log's configs
    counted."""
    from tensorsched.tune.log import read_log

    log = os.path.join(tmp, "shared.jsonl")
    exe = os.path.join(os.path.dirname(sys.executable), "tensorsched")
    rng = random.Random(1)
    counts: Counter = Counter(rounds=rounds)
    bugs: list = []
    for r in range(rounds):
        procs = []
        for t in range(rng.choice((2, 3))):
            cmd = [exe, "tune", "gemm", "--shape", "16,16,16", "--template", "cpu"]
            cmd += ["--strategy", "random", "--trials", "3", "--seed", str(r * 3 + t)]
            cmd += ["--resume", "--log", log, "--timeout", "30"]
            procs.append(
                subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            )
            time.sleep(rng.uniform(0.0, 3.0))  # some overlap, some follow
        for p in procs:
            out, err = p.communicate()
            counts["tuners started"] += 1
            if p.returncode == 0:
                counts["finished"] += 1
            elif "being written by another tuner" in err:
                counts["refused (log busy)"] += 1
            else:
                counts["failed otherwise"] += 1
                bugs.append(("tune", f"round {r}", " ".join(p.args), err[-3000:]))
            if "Traceback" in err:
                counts["tracebacks"] += 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = read_log(log)
    keys = Counter((r.task_key(), r.device, r.config_key()) for r in records)
    counts["records"] = len(records)
    counts["distinct configs"] = len(keys)
    counts["duplicated configs"] = sum(1 for n in keys.values() if n > 1)
    counts["damaged lines"] = len(caught)
    counts["lock file left"] = int(os.path.exists(log + ".lock"))
    return dict(counts), bugs


# ---------------------------------------------------------------------------- parsers


class Slow(BaseException):
    """An input took longer than the per-input limit (raised by the alarm)."""


def _valid_ir_texts() -> list[str]:
    import tensorsched as ts

    texts = []
    A = ts.placeholder((16, 8), name="A")
    B = ts.placeholder((8, 12), name="B")
    k = ts.reduce_axis((0, 8), name="k")
    C = ts.compute((16, 12), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    texts.append(ts.lower(s, [A, B, C]).script())
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    io, jo, ii, ji = s[C].tile(i, j, 4, 5)  # uneven: guards
    s[C].unroll(ji)
    texts.append(ts.lower(s, [A, B, C]).script())
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    AA = s.cache_read(A, "shared", [C])
    bx, tx = s[C].split(i, 4)
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[C].bind(tx, ts.thread_axis("threadIdx.x"))
    s[AA].compute_at(s[C], bx)
    texts.append(ts.lower(s, [A, B, C]).script())
    D = ts.placeholder((9,), name="D")
    E = ts.compute((9,), lambda i: ts.if_then_else(i > 3, ts.exp(D[i]), D[i] * 2.0), name="E")
    texts.append(ts.lower(ts.create_schedule(E.op), [D, E]).script())
    texts.append("func f(A: int32[10]) { for (i, 0, 10) { A[i] = i % 3 + i // 2 } }")
    return texts


# a bare body (what print(ts.lower(...)) shows) with its arguments given
BARE_ARGS = [("A", (16, 8), "float32"), ("B", (8, 12), "float32"), ("C", (16, 12), "float32")]


def _bare_body() -> str:
    import tensorsched as ts

    A, B = ts.placeholder((16, 8), name="A"), ts.placeholder((8, 12), name="B")
    k = ts.reduce_axis((0, 8), name="k")
    C = ts.compute((16, 12), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    s[C].split(s[C].op.axis[0], 5)
    return str(ts.lower(s, [A, B, C]))


EXPRS = [
    ("C[i, j] += A[i, k] * B[k, j]", "i=16,j=16,k=16"),
    ("C[i] = A[i] * 2.0 + 1.0", "i=8"),
    ("B[i, j] = exp(A[i, j]) - max(A[i, j], 0.0)", "i=4,j=4"),
    ("C[n, c] += A[n, c, h] * 0.5", "n=2,c=3,h=4"),
]


def _mutate(rng: random.Random, text: str) -> str:
    ops = rng.randrange(7)
    pos = rng.randrange(len(text) + 1)
    if ops == 0:  # truncate
        return text[:pos]
    if ops == 1:  # delete a span
        return text[:pos] + text[pos + rng.randrange(1, 20) :]
    if ops == 2:  # insert hostile tokens
        tok = rng.choice(
            [
                "(",
                ")",
                "{",
                "}",
                "[",
                "]",
                "+",
                "-",
                "*",
                "//",
                "%",
                ",",
                ";",
                "=",
                "for",
                "99999999999999999999999",
                "-2147483649",
                "1e309",
                "0x10",
                "\x00",
                "é",
                "A",
                "int64(",
                "float32",
                "allocate",
                "if",
                "else",
                "\n",
                "  ",
                "#",
                "'",
                '"',
            ]
        )
        return text[:pos] + tok + text[pos:]
    if ops == 3:  # replace a number by a huge or negative one
        digits = [k for k, c in enumerate(text) if c.isdigit()]
        if digits:
            p = rng.choice(digits)
            return (
                text[:p]
                + rng.choice(["9" * 30, "-1", "0", "2147483648", str(2**63)])
                + text[p + 1 :]
            )
        return text
    if ops == 4:  # swap two lines
        lines = text.splitlines()
        if len(lines) > 1:
            a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[a], lines[b] = lines[b], lines[a]
        return "\n".join(lines)
    if ops == 5:  # shift an index out of bounds
        return text.replace("]", rng.choice([" + 100]", " - 4]", " * 1000]", " + 2147483647]"]), 1)
    return text + rng.choice(["}", "{", "\n}", "+"])  # unbalanced ending


def _hostile_texts(rng: random.Random) -> list[tuple[str, str]]:
    """``(parser, text)``: deep nesting, long sums, huge numbers, garbage."""
    out: list[tuple[str, str]] = []
    F = "func f(A: float32[4], C: float32[4]) {{ {} }}"
    for n in (10, 100, 1000, 5000, 20000):
        out.append(("ir", F.format("C[0] = " + " + ".join(["A[0]"] * n))))
        out.append(("ir", F.format("C[0] = " + "(" * n + "A[0]" + ")" * n)))
        out.append(("ir", F.format("C[0] = " + "-" * n + "A[0]")))
        out.append(
            (
                "ir",
                "func f(A: float32[4]) {"
                + "".join(f"for (i{k}, 0, 1) {{" for k in range(n))
                + "A[0] = 1f"
                + "}" * (n + 1),
            )
        )
        out.append(
            ("ir", F.format("if (1 < 2) { " * min(n, 3000) + "C[0] = 1f" + " }" * min(n, 3000)))
        )
        out.append(("expr", "C[i] = " + " + ".join(["A[i]*2.0"] * n)))
        out.append(("expr", "C[i] = " + "(" * n + "A[i]" + ")" * n))
        out.append(("expr", "C[i] = " + "exp(" * n + "A[i]" + ")" * n))
    for big in ("2147483648", "9223372036854775808", "9" * 40, "1" + "0" * 400, "-9" * 20):
        out.append(("ir", f"func f(A: float32[{big}]) {{ A[0] = 1f }}"))
        out.append(("ir", f"func f(A: float32[4]) {{ for (i, 0, {big}) {{ A[0] = 1f }} }}"))
        out.append(("ir", f"func f(A: float32[4]) {{ A[{big}] = 1f }}"))
        out.append(("ir", f"func f(A: int32[4]) {{ A[0] = {big} }}"))
        out.append(("ir", f"func f(A: float32[4]) {{ A[0] = {big}f }}"))
        out.append(("expr", f"C[i] = A[i] * {big}"))
        out.append(("expr", f"C[i] = A[i + {big}]"))
        out.append(("expr-shape", f"i={big}"))
    for idx in ("i + 4", "i - 1", "i * 2", "3 - i", "i // 0", "i % 0", "-i", "i * 2147483647"):
        out.append(("ir", f"func f(A: float32[4]) {{ for (i, 0, 4) {{ A[{idx}] = 1f }} }}"))
        out.append(("expr", f"C[i] = A[{idx}]"))
    for _k in range(300):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
        out.append((rng.choice(["ir", "expr"]), raw.decode("latin-1")))
    for _k in range(100):
        alphabet = "AfCi0123456789()[]{}+-*/%<>=!&|,;: \nforifelseallocatefloat32int"
        out.append(
            (
                rng.choice(["ir", "expr"]),
                "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 200))),
            )
        )
    return out


def run_parsers(n_mutations: int, limit_s: float) -> tuple[dict, list]:
    import tensorsched as ts
    from tensorsched.errors import TensorschedError

    rng = random.Random(2)
    inputs: list[tuple[str, str]] = []
    valid = _valid_ir_texts()
    bare = _bare_body()
    inputs += [("ir", t) for t in valid] + [("ir-args", bare)]
    inputs += [("expr", e + "\x1f" + shp) for e, shp in EXPRS]
    n_valid = len(inputs)
    for t in valid:  # every prefix at a stride: truncated valid text
        inputs += [("ir", t[:n]) for n in range(0, len(t), max(1, len(t) // 40))]
    for k in range(n_mutations):
        if k % 2:
            t = rng.choice(valid)
            for _ in range(rng.randrange(1, 4)):
                t = _mutate(rng, t)
            inputs.append(("ir", t))
        else:
            e, shp = rng.choice(EXPRS)
            for _ in range(rng.randrange(1, 4)):
                e = _mutate(rng, e)
            inputs.append(("expr", e + "\x1f" + shp))
    for _ in range(n_mutations // 4):
        t = bare
        for _ in range(rng.randrange(1, 4)):
            t = _mutate(rng, t)
        inputs.append(("ir-args", t))
    inputs += _hostile_texts(rng)

    def on_alarm(signum: int, frame: Any) -> None:
        raise Slow()

    signal.signal(signal.SIGALRM, on_alarm)
    counts: Counter = Counter()
    bugs: list = []
    slowest = (0.0, "")
    for n, (kind, text) in enumerate(inputs):
        counts[f"{'parse_expr' if kind.startswith('expr') else 'parse_ir'} inputs"] += 1
        t0 = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, limit_s)
        try:
            if kind == "ir":
                ts.parse_ir(text)
            elif kind == "ir-args":
                ts.parse_ir(text, args=BARE_ARGS)
            elif kind == "expr-shape":
                ts.parse_expr("C[i] = A[i] * 2.0", text)
            else:
                body, _, shapes = text.partition("\x1f")
                ts.parse_expr(body, shapes or "i=4,j=4,k=4")
            counts["parsed"] += 1
            counts["valid texts parsed"] += n < n_valid
        except Slow:
            counts[f"over {limit_s:g} s"] += 1
            bugs.append(("slow", kind, text[:300], ""))
        except TensorschedError:
            counts["TensorschedError"] += 1
        except Exception:  # noqa: BLE001  (what this counts)
            counts["other exceptions"] += 1
            bugs.append(("parser", kind, text[:300], traceback.format_exc()[-3000:]))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        dt = time.perf_counter() - t0
        if dt > slowest[0]:
            slowest = (dt, f"{kind}: {text[:60]!r}... ({len(text)} characters)")
    counts["slowest input"] = f"{slowest[0]:.2f} s ({slowest[1]})"
    return dict(counts), bugs


# ---------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller samples (under a minute)")
    p.add_argument("--rounds", type=int, help="concurrent-tuner rounds (default 12, quick 3)")
    p.add_argument("--mutations", type=int, help="mutated parser texts (default 6000, quick 500)")
    p.add_argument("--json", help="also write the counts to this file")
    args = p.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 12)
    mutations = args.mutations or (500 if args.quick else 6000)
    results: dict[str, Any] = {}
    bugs: list = []
    tmp = tempfile.mkdtemp(prefix="ts_hostile_")
    try:
        for name, fn in (
            ("log records", lambda: run_log_records(args.quick, tmp)),
            ("concurrent tuners", lambda: run_concurrent(rounds, tmp)),
            ("parsers", lambda: run_parsers(mutations, 20.0)),
        ):
            t0 = time.time()
            with contextlib.redirect_stderr(io.StringIO()):
                counts, found = fn()
            counts["seconds"] = round(time.time() - t0, 1)
            results[name] = counts
            bugs += found
            print(f"{name}:", flush=True)
            for k, v in counts.items():
                print(f"  {k}: {v}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for where, what, text, tb in bugs:
        print(f"\n=== {where}: {what}\ninput: {text!r}\n{tb}")
    if args.json:
        with open(args.json, "w") as f:
            findings = [
                {
                    "where": where,
                    "what": what,
                    "input": text[:200],
                    "error": tb.strip().splitlines()[-1] if tb.strip() else "",
                }
                for where, what, text, tb in bugs
            ]
            json.dump({"results": results, "findings": findings}, f, indent=2)
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
