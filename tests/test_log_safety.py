"""Logs are data (issue 15, items 1, 4, 7, 8): a record names a registered template, never a
module; reading a log imports and calls nothing but registered templates; a record that breaks
the schema is skipped with a warning naming its line, never a traceback and never a winner; and
one tuner writes a log at a time.

The hostile records below are written beside valid ones of the built-in ``cpu`` GEMM template
at 16x16x16, so most of these tests need no OpenCL device (``source`` only lowers and prints).
"""

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest
import tune_templates  # noqa: F401  (registers the test templates)

from tensorsched.cli import main
from tensorsched.errors import TensorschedError
from tensorsched.ops.templates import TEMPLATES, TemplateError, register_template
from tensorsched.tune.dispatch import apply_best
from tensorsched.tune.log import LogBusyError, LogLock, LogWriter, Record, read_log
from tensorsched.tune.record import PEAK_FLOPS
from tensorsched.tune.task import Task, TaskError

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
TASK = {
    "kind": "gemm",
    "template": "cpu",
    "shape": [16, 16, 16],
    "dtype": "float32",
    "epilogue": [],
    "expr": "",
    "expr_shapes": "",
}
FLOP = 2 * 16**3
GOOD = {"tile_y": [2, 4], "tile_x": [2, 8], "vec": 8, "tile_k": [4]}  # in cpu's space
GOOD2 = {"tile_y": [1, 4], "tile_x": [1, 8], "vec": 4, "tile_k": [2]}


def line(config=None, status="ok", device_ms=1.0, **over):
    d = {
        "task": TASK,
        "device": "cl / dev",
        "config": GOOD if config is None else config,
        "status": status,
        "device_ms": device_ms,
        "host_ms": 1.1,
        "gflops": FLOP / device_ms / 1e6 if isinstance(device_ms, float) and device_ms else 1.0,
        "error": "",
        "timestamp": 1.0,
    }
    d.update(over)
    return json.dumps(d)


# every hostile record: (what, the JSON line); each must be skipped, none may win
FAST = 1e-3  # the hostile "ok" records claim to be 1000x faster than the honest ones
HOSTILE = [
    ("config a list", line(config=[1, 2, 3], device_ms=FAST)),
    ("config a string", line(config="tile_x=8", device_ms=FAST)),
    ("task a string", line(task="gemm 16x16x16", device_ms=FAST)),
    ("task {}", line(task={}, device_ms=FAST)),
    ("task a list", line(task=[TASK], device_ms=FAST)),
    ("device_ms a string", line(device_ms="0.001")),
    ("device_ms negative", line(device_ms=-1.0)),
    ("device_ms zero", line(device_ms=0.0)),
    ("device_ms NaN", line(device_ms=float("nan"))),
    ("device_ms Infinity", line(device_ms=float("inf"))),
    ("device_ms huge", line(device_ms=1e300)),
    ("device_ms faster than any device", line(device_ms=FLOP / PEAK_FLOPS * 1e3 / 10)),
    ("device_ms missing from an ok record", line(device_ms=None)),
    ("device_ms a bool", line(device_ms=True)),
    ("gflops a string", line(device_ms=FAST, gflops="fast")),
    ("gflops that do not match device_ms", line(device_ms=FAST, gflops=1.0)),
    ("an unknown template", line(task=dict(TASK, template="fastest"), device_ms=FAST)),
    ("a module path as template", line(task=dict(TASK, template="os:system"), device_ms=FAST)),
    ("this:x as template", line(task=dict(TASK, template="this:x"), device_ms=FAST)),
    ("the evil module as template", line(task=dict(TASK, template="evil_mod"), device_ms=FAST)),
    ("evil_mod:boom as template", line(task=dict(TASK, template="evil_mod:boom"), device_ms=FAST)),
    ("an unknown kind", line(task=dict(TASK, kind="matmul"), device_ms=FAST)),
    ("a template of another kind", line(task=dict(TASK, kind="conv2d"), device_ms=FAST)),
    ("a shape beyond 32 bits", line(task=dict(TASK, shape=[2**40, 16, 16]), device_ms=FAST)),
    ("a negative shape", line(task=dict(TASK, shape=[-16, 16, 16]), device_ms=FAST)),
    ("a shape of strings", line(task=dict(TASK, shape=["16", "16", "16"]), device_ms=FAST)),
    ("an unknown dtype", line(task=dict(TASK, dtype="float128"), device_ms=FAST)),
    ("a task with a foreign field", line(task=dict(TASK, module="os"), device_ms=FAST)),
    ("a foreign knob", line(config=dict(GOOD, evil=1), device_ms=FAST)),
    ("a value outside the space", line(config=dict(GOOD, vec=3), device_ms=FAST)),
    ("a split outside the space", line(config=dict(GOOD, tile_x=[3, 5]), device_ms=FAST)),
    ("a float for an int knob", line(config=dict(GOOD, vec=8.0), device_ms=FAST)),
    ("a bool for an int knob", line(config=dict(GOOD, vec=True), device_ms=FAST)),
    ("a split as an int", line(config=dict(GOOD, tile_k=4), device_ms=FAST)),
    ("an unknown status", line(status="great", device_ms=FAST)),
    ("a status that is not text", line(status=1, device_ms=FAST)),
    ("a device that is not text", line(device=["cl / dev"], device_ms=FAST)),
    ("an empty device", line(device="", device_ms=FAST)),
    ("an error that is not text", line(error={"a": 1}, device_ms=FAST)),
    ("a timestamp that is text", line(timestamp="yesterday", device_ms=FAST)),
    ("host_ms negative", line(host_ms=-3.0, device_ms=FAST)),
    ("remeasure as text", line(remeasure="yes", device_ms=FAST)),
    ("a foreign field", line(device_ms=FAST, __class__="os.system")),
    ("a record without its task", json.dumps({"config": GOOD, "status": "ok"})),
    ("a JSON list", json.dumps([1, 2, 3])),
    ("a JSON number", "3.5"),
    ("a JSON string", json.dumps("ok")),
    ("null", "null"),
    ("deeply nested JSON", "[" * 100000 + "]" * 100000),
    ("not JSON", "import os; os.system('echo pwned')"),
    # numbers beyond a float: JSON integer literals of 401 digits, either sign
    ("device_ms a 401-digit integer", line(device_ms=10**400)),
    ("device_ms a negative 401-digit integer", line(device_ms=-(10**400))),
    ("host_ms a 401-digit integer", line(host_ms=10**400, device_ms=FAST)),
    ("gflops a negative 401-digit integer", line(gflops=-(10**400), device_ms=FAST)),
    ("timestamp a 401-digit integer", line(timestamp=10**400, device_ms=FAST)),
    # fields that do not belong to the task's kind: each would be a task of its own, whose
    # kernel file name (kind, template, shape, epilogue) is the honest record's
    ("an expr on a gemm task", line(task=dict(TASK, expr="os:system"), device_ms=FAST)),
    ("expr_shapes on a gemm task", line(task=dict(TASK, expr_shapes="i=4"), device_ms=FAST)),
    ("a repeated epilogue", line(task=dict(TASK, epilogue=["bias", "bias"]), device_ms=FAST)),
    ("an unknown epilogue", line(task=dict(TASK, epilogue=["os:system"]), device_ms=FAST)),
]


@pytest.fixture
def evil(tmp_path, monkeypatch):
    """A module ``evil_mod`` importable from the test's folder (on ``sys.path`` and beside the
    log) that records being imported, and an ``os.system`` that records being called."""
    marker = tmp_path / "imported.txt"
    (tmp_path / "evil_mod.py").write_text(
        f"open({str(marker)!r}, 'a').write('imported\\n')\ndef boom(*a, **k):\n"
        f"    open({str(marker)!r}, 'a').write('called\\n')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(a) or 0)
    yield marker, calls
    assert not marker.exists(), marker.read_text()
    assert "evil_mod" not in sys.modules
    assert calls == []


def hostile_log(path, with_honest=True):
    lines = [line(GOOD, device_ms=1.0), line(GOOD2, device_ms=2.0)] if with_honest else []
    # the hostile ones first, then the honest ones, then one more hostile one after them
    text = "\n".join([h for _, h in HOSTILE] + lines + [HOSTILE[0][1]]) + "\n"
    path.write_text(text)
    return len(HOSTILE) + 1


def test_every_hostile_record_is_skipped_with_a_warning_naming_its_line(tmp_path, evil):
    log = tmp_path / "hostile.jsonl"
    n_bad = hostile_log(log)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        recs = read_log(str(log))
    msgs = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert [r.config["vec"] for r in recs] == [8, 4]  # the honest ones, in order
    assert len(msgs) == n_bad, "\n".join(msgs)
    for n, (msg, (what, _)) in enumerate(zip(msgs, HOSTILE), 1):
        assert msg.startswith(f"{log}:{n}: skipped a damaged log line ("), (what, msg)
        assert "the file is left as it is" in msg
    assert recs[0].config == {"tile_y": (2, 4), "tile_x": (2, 8), "vec": 8, "tile_k": (4,)}
    assert all(isinstance(r.device_ms, float) and math.isfinite(r.device_ms) for r in recs)


@pytest.mark.parametrize("what, text", HOSTILE, ids=[w for w, _ in HOSTILE])
def test_a_hostile_record_never_wins(tmp_path, evil, what, text):
    log = tmp_path / "one.jsonl"
    log.write_text(line(GOOD, device_ms=1.0) + "\n" + text + "\n")
    with pytest.warns(UserWarning, match=":2: skipped a damaged log line"):
        with apply_best(str(log), device="cl / dev") as table:
            pass
    assert list(table.values()) == [
        {"tile_y": (2, 4), "tile_x": (2, 8), "vec": 8, "tile_k": (4,)}
    ], what


def test_the_reasons_say_what_is_wrong(tmp_path):
    cases = {
        "config a list": "config is a JSON object of knobs, got list",
        "task a string": "task: a task is a dict of its fields, got str",
        "task {}": "task: a task without the field(s) kind, template, shape",
        "device_ms a string": "device_ms '0.001' is not a number",
        "remeasure as text": "remeasure 'yes' is not true or false",
        "device_ms negative": "device_ms -1.0 is not a finite non-negative number",
        "device_ms faster than any device": "is not a plausible time",
        "a module path as template": "unknown gemm template 'os:system'",
        "a foreign knob": "config: 'cpu' has no knob 'evil'",
        "a value outside the space": "config: 3 is not a candidate of knob 'vec'",
        "a shape beyond 32 bits": "shape must be 3 positive ints up to 2147483647",
        "not JSON": "(JSONDecodeError)",
        "deeply nested JSON": "(RecursionError)",
        "device_ms a 401-digit integer": "device_ms 1000000000000000000000000000000000000000..."
        " (401 characters) is not a finite non-negative number",
        "timestamp a 401-digit integer": "timestamp 10000000000000000000000000000000",
        "an expr on a gemm task": "task: a gemm task has no expr",
        "expr_shapes on a gemm task": "task: a gemm task has no expr_shapes",
        "a repeated epilogue": "task: epilogue ['bias', 'bias'] names 'bias' twice",
        "an unknown epilogue": "task: unknown epilogue 'os:system'",
    }
    texts = dict(HOSTILE)
    for what, why in cases.items():
        log = tmp_path / f"{abs(hash(what))}.jsonl"
        log.write_text(texts[what] + "\n")
        with pytest.warns(UserWarning) as caught:
            assert read_log(str(log)) == []
        assert why in str(caught[0].message), (what, str(caught[0].message))


def test_source_and_apply_best_survive_a_hostile_log(tmp_path, evil, capsys):
    log = tmp_path / "hostile.jsonl"
    hostile_log(log)
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["source", "--log", str(log), "--out", str(out)]) == 0
    meta = json.loads((out / "gemm_cpu_16x16x16.json").read_text())
    assert meta["config"] == GOOD and meta["device_ms"] == 1.0
    assert sorted(os.listdir(out)) == ["gemm_cpu_16x16x16.cl", "gemm_cpu_16x16x16.json"]
    assert "Traceback" not in capsys.readouterr().err


def test_source_of_a_log_with_only_hostile_records_says_so(tmp_path, evil, capsys):
    log = tmp_path / "hostile.jsonl"
    hostile_log(log, with_honest=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["source", "--log", str(log), "--out", str(tmp_path / "o")]) == 2
    assert "has no correct trial" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_source_subprocess_prints_warnings_and_no_traceback(tmp_path, evil):
    log = tmp_path / "hostile.jsonl"
    hostile_log(log)
    res = subprocess.run(
        [sys.executable, "-m", "tensorsched.cli", "source", "--log", str(log), "--out", "out"],
        cwd=str(tmp_path),  # evil_mod.py lies in the working folder, beside the log
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    assert res.stderr.count("skipped a damaged log line") == len(HOSTILE) + 1


@pytest.mark.opencl
def test_tune_resume_survives_a_hostile_log(tmp_path, evil, device):
    task = Task("gemm", "gemm_tiny", (16, 16, 16))
    space = list(task.space().points())
    log = tmp_path / "tiny.jsonl"
    td = json.loads(task.key())
    honest = Record(td, "", space[0], "ok")  # device filled in below
    from tensorsched.runtime.device import DeviceLimits

    name = DeviceLimits.of(None).name
    honest.device, honest.device_ms, honest.gflops = name, 1.0, task.flop / 1e6
    LogWriter(str(log)).append(honest)
    hostile = [
        line(task=dict(td, template="os:system"), device=name, device_ms=FAST),
        line(config=[1], device=name, task=td),
        line(config={"unroll": 1}, device=name, task="x"),
        line(config={"bogus": 1}, device=name, task=td, device_ms=FAST),
        line(config={"unroll": 1}, device=name, task=td, device_ms=-1.0),
        line(config={"unroll": 1}, device=name, task=td, device_ms="fast"),
    ]
    with open(log, "a") as f:
        f.write("\n".join(hostile) + "\n")
    err = subprocess.run(
        [sys.executable, "-m", "tensorsched.cli", "tune", "gemm", "--shape", "16,16,16"]
        + ["--import", "tune_templates", "--template", "gemm_tiny", "--log", str(log)]
        + ["--resume", "--repeat", "2", "--timeout", "20"],
        cwd=str(tmp_path),
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([TESTS, ROOT])),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert err.returncode == 0, err.stderr[-3000:]
    assert "Traceback" not in err.stderr
    assert err.stderr.count("skipped a damaged log line") >= len(hostile)
    assert "skipped 1" in err.stdout  # the honest record's config
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recs = read_log(str(log))
    keys = sorted(json.dumps(r.config, sort_keys=True) for r in recs if not r.remeasure)
    assert keys == sorted(json.dumps(p, sort_keys=True) for p in space)  # each config once


# ---------------------------------------------------------------------------- the registry


def test_a_task_names_a_registered_template_only(evil):
    for name in ("os:system", "evil_mod:boom", "evil_mod", "tensorsched.ops.templates:gemm_cpu"):
        with pytest.raises(TaskError, match="unknown gemm template"):
            Task("gemm", name, (16, 16, 16))
    with pytest.raises(TaskError, match="unknown operator"):
        Task("os", "system", (1,))
    # numpy integers are ints; 32-bit index range
    assert Task("gemm", "cpu", (np.int64(16), 16, 16)).shape == (16, 16, 16)
    with pytest.raises(TaskError, match="up to 2147483647"):
        Task("gemm", "cpu", (2**31, 16, 16))
    with pytest.raises(TaskError, match="positive ints"):
        Task("gemm", "cpu", (True, 16, 16))


def test_register_template_by_name():
    def mine(cfg, M, N, K, dtype="float32", epilogue=()):
        return TEMPLATES["gemm"]["cpu"](cfg, M, N, K, dtype=dtype, epilogue=epilogue)

    try:
        assert register_template("gemm", "test_mine")(mine) is mine
        assert register_template("gemm", "test_mine", mine) is mine  # again: the same one
        task = Task("gemm", "test_mine", (16, 16, 16))
        assert task.space().size() == Task("gemm", "cpu", (16, 16, 16)).space().size()

        def other(cfg, M, N, K, dtype="float32", epilogue=()):
            return mine(cfg, M, N, K, dtype, epilogue)

        with pytest.raises(TemplateError, match="already registered"):
            register_template("gemm", "test_mine", other)
        with pytest.raises(TemplateError, match="already registered"):
            register_template("gemm", "cpu", mine)  # a built-in name
        for bad in ("os:system", "a/b", "", "1abc", "x" * 65, 3):
            with pytest.raises(TemplateError, match="a name, not a module path"):
                register_template("gemm", bad, mine)
        with pytest.raises(TemplateError, match="unknown operator"):
            register_template("matmul", "x", mine)
        with pytest.raises(TemplateError, match="is not a function"):
            register_template("gemm", "test_not_callable", 3)
    finally:
        TEMPLATES["gemm"].pop("test_mine", None)


def test_worker_modules_come_from_this_process_registry():
    from tensorsched.tune.tuner import worker_modules

    assert worker_modules(Task("gemm", "cpu", (16, 16, 16))) == ()
    assert worker_modules(Task("gemm", "gemm_tiny", (16, 16, 16))) == ("tune_templates",)


def test_cli_import_registers_a_users_templates(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_templates_mod.py").write_text(
        textwrap.dedent(
            """
            from tensorsched.ops.templates import TEMPLATES
            from tensorsched.tune import register_template

            @register_template("gemm", "test_cli_mine")
            def mine(cfg, M, N, K, dtype="float32", epilogue=()):
                return TEMPLATES["gemm"]["cpu"](cfg, M, N, K, dtype=dtype, epilogue=epilogue)
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    log = tmp_path / "mine.jsonl"
    log.write_text(line(GOOD, task=dict(TASK, template="test_cli_mine")) + "\n")
    out = tmp_path / "out"
    try:
        with pytest.warns(UserWarning, match="unknown gemm template 'test_cli_mine'"):
            assert main(["source", "--log", str(log), "--out", str(out)]) == 2
        assert (
            main(["source", "--log", str(log), "--out", str(out), "--import", "my_templates_mod"])
            == 0
        )
        assert os.listdir(out)
        assert main(["source", "--log", str(log), "--import", "no_such_module_here"]) == 2
        assert "--import no_such_module_here: cannot import it" in capsys.readouterr().err
    finally:
        TEMPLATES["gemm"].pop("test_cli_mine", None)
        sys.modules.pop("my_templates_mod", None)


# ---------------------------------------------------------------------------- one writer


LOCK_HOLDER = """
import sys, time
from tensorsched.tune.log import LogLock
lock = LogLock(sys.argv[1]).acquire()
print("locked", flush=True)
time.sleep(120)
"""


def test_a_second_writer_is_refused_with_the_holders_pid(tmp_path):
    log = str(tmp_path / "t.jsonl")
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, log], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(LogBusyError) as err:
            LogLock(log).acquire()
        msg = str(err.value)
        assert msg.startswith(f"{log} is being written by another tuner (pid {holder.pid},")
        assert isinstance(err.value, TensorschedError)
        # the tuner refuses before it measures anything (and writes nothing to the log)
        from tensorsched.tune.tuner import tune

        with pytest.raises(LogBusyError, match=f"pid {holder.pid}"):
            tune(Task("gemm", "cpu", (16, 16, 16)), log, progress=False)
        assert not os.path.exists(log)
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # a holder killed with -9 ...
        holder.wait(10)
    with LogLock(log):  # ... releases the lock: its stale lock file is locked again
        assert open(log + ".lock").read().strip() == str(os.getpid())
    assert not os.path.exists(log + ".lock")  # removed on release


@pytest.mark.opencl
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="Linux")
def test_two_tuners_on_one_log_measure_no_config_twice(tmp_path, device):
    log = tmp_path / "two.jsonl"
    cmd = [sys.executable, "-m", "tensorsched.cli", "tune", "gemm", "--shape", "16,16,16"]
    cmd += ["--import", "tune_templates", "--template", "gemm_slow", "--log", str(log)]
    cmd += ["--resume", "--repeat", "2", "--timeout", "20"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([TESTS, ROOT]), TS_TEST_SLOW="0.3")
    procs = [
        subprocess.Popen(
            cmd, cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    t0 = time.time()
    outs = [p.communicate(timeout=300) for p in procs]
    codes = [p.returncode for p in procs]
    errs = [e.decode() for _, e in outs]
    assert sorted(codes) in ([0, 0], [0, 2]), (codes, errs)
    if 2 in codes:  # the usual case: they overlapped and the second refused at once
        refused = errs[codes.index(2)]
        assert "is being written by another tuner (pid" in refused and "Traceback" not in refused
    recs = read_log(str(log))
    keys = [json.dumps(r.config, sort_keys=True) for r in recs if not r.remeasure]
    assert len(keys) == len(set(keys)) == 8, keys  # every config once: 0 duplicates
    assert time.time() - t0 < 300


SCRIPT = """
from tensorsched.ops.templates import TEMPLATES
from tensorsched.tune import Task, register_template, tune


@register_template("gemm", "script_gemm")
def script_gemm(cfg, M, N, K, dtype="float32", epilogue=()):
    return TEMPLATES["gemm"]["cpu"](cfg, M, N, K, dtype=dtype, epilogue=epilogue)


if __name__ == "__main__":
    task = Task("gemm", "script_gemm", (16, 16, 16))
    res = tune(task, "s.jsonl", trials=6, repeat=1, strategy="random", progress=False)
    print(sorted(res.counts), res.best is not None)
"""


@pytest.mark.opencl
def test_a_template_registered_in_the_main_script_reaches_the_workers(tmp_path, device):
    (tmp_path / "script.py").write_text(SCRIPT)
    res = subprocess.run(
        [sys.executable, "script.py"],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "True" in res.stdout  # a correct kernel of the script's template was measured
    recs = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    recs = [r for r in recs if not r.get("remeasure")]  # the fastest measured again
    assert len(recs) == 6 and all(r["status"] in ("ok", "invalid") for r in recs), recs


def test_a_template_registered_interactively_is_refused_before_tuning(tmp_path):
    code = SCRIPT.replace('if __name__ == "__main__":', "if True:")
    res = subprocess.run(
        [sys.executable, "-"],
        input=code,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 1
    assert "TaskError: the template 'script_gemm' was registered in an interactive session" in (
        res.stderr
    )
    assert os.listdir(tmp_path) == []


def test_an_ok_record_without_gflops_gets_them_from_its_time(tmp_path):
    d = json.loads(line(GOOD, device_ms=2.0))
    del d["gflops"], d["host_ms"], d["timestamp"], d["error"]
    log = tmp_path / "l.jsonl"
    log.write_text(json.dumps(d) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (rec,) = read_log(str(log))
    assert rec.gflops == pytest.approx(FLOP / 2.0 / 1e6) and rec.host_ms is None
