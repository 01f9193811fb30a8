"""The command line as a new user meets it (issue 15 "CLI" and item 10, issue 14 item 7): every
number checked (exit status 2 and a message, no traceback), ``source --out`` never overwrites
unasked, nothing written where the user did not say, ``devices`` with a type column, no
compiler warning on success."""

import io
import os
import subprocess
import sys
import warnings
from contextlib import redirect_stderr

import pytest

from tensorsched import cli
from tensorsched.cli import device_type, main
from tensorsched.errors import TensorschedError
from tensorsched.graph.tasks import choose_template
from tensorsched.ops.templates import KINDS, templates_of
from tensorsched.tune.log import read_log
from tensorsched.tune.task import ShapeError, Task

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)


def run(argv):
    """``(exit status, stderr)`` of ``tensorsched ARGV`` run in this process."""
    err = io.StringIO()
    with redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code
    return code, err.getvalue()


TUNE = ["tune", "gemm", "--shape", "16,16,16", "--template", "cpu"]
BAD_NUMBERS = [
    (TUNE + ["--trials", "0"], "--trials: expected a positive integer"),
    (TUNE + ["--trials", "-1"], "--trials: expected a positive integer"),
    (TUNE + ["--trials", "many"], "--trials: expected a positive integer, got 'many'"),
    (TUNE + ["--trials", "99999999999"], "--trials: expected a positive integer"),
    (TUNE + ["--repeat", "0"], "--repeat: expected a positive integer"),
    (TUNE + ["--timeout", "-5"], "--timeout: expected a positive number of seconds"),
    (TUNE + ["--timeout", "0"], "--timeout: expected a positive number of seconds"),
    (TUNE + ["--timeout", "nan"], "--timeout: expected a positive number of seconds"),
    (TUNE + ["--timeout", "inf"], "--timeout: expected a positive number of seconds"),
    (TUNE + ["--seed", "-1"], "--seed: expected an integer from 0"),
    (["peak", "--repeat", "0"], "--repeat: expected a positive integer"),
    (["compare", "gemm", "--shape", "8,8,8", "--rounds", "0"], "--rounds: expected a positive"),
    (["compare", "gemm", "--shape", "8,8,8", "--limit", "-2"], "--limit: expected a positive"),
    (["compare", "gemm", "--shape", "8,8,8", "--trials", "0"], "--trials: expected a positive"),
    (
        ["tune", "gemm", "--shape", "99999999999,16,16", "--template", "cpu"],
        "--shape: 99999999999 is over 2147483647, the largest 32-bit index",
    ),
    (
        ["tune", "gemm", "--shape", "16,16,16,16", "--template", "cpu"],
        "gemm shape must be 3 positive ints",
    ),
    (
        ["ir", "--expr", "C[i] = A[i] * 2", "--shape", "i=99999999999999"],
        "--shape: 99999999999999 is over 2147483647",
    ),
    (
        ["tune", "--expr", "C[i] = A[i] * 2", "--shape", "i=99999999999999"],
        "--shape: 99999999999999 is over 2147483647",
    ),
]


@pytest.mark.parametrize("argv, message", BAD_NUMBERS, ids=[" ".join(a) for a, _ in BAD_NUMBERS])
def test_a_bad_number_exits_2_with_a_message(argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    code, err = run(argv)
    assert code == 2, err
    assert message in err, err
    assert "Traceback" not in err
    assert os.listdir(tmp_path) == []  # nothing written


def test_a_bad_number_in_a_subprocess_exits_2_without_traceback(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "tensorsched.cli"] + TUNE + ["--trials", "-1"],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2
    assert "--trials: expected a positive integer (1 to 2147483647), got '-1'" in res.stderr
    assert "Traceback" not in res.stderr and os.listdir(tmp_path) == []


def test_tune_api_checks_its_numbers_before_anything_runs(tmp_path):
    from tensorsched.tune.tuner import tune

    task = Task("gemm", "cpu", (16, 16, 16))
    log = str(tmp_path / "t.jsonl")
    for kw, msg in [
        ({"trials": 0}, "trials must be a positive integer, got 0"),
        ({"trials": -1}, "trials must be a positive integer"),
        ({"trials": 2.5}, "trials must be a positive integer"),
        ({"repeat": 0}, "repeat must be a positive integer"),
        ({"n_build": 0}, "n_build must be a positive integer"),
        ({"timeout": -5}, "timeout must be a positive number of seconds"),
        ({"timeout": float("nan")}, "timeout must be a positive number of seconds"),
        ({"budget_ms": -1.0}, "budget_ms must be None or a number >= 0"),
        ({"strategy": "annealing"}, "unknown strategy 'annealing'"),
    ]:
        with pytest.raises(TensorschedError, match=msg):
            tune(task, log, progress=False, **kw)
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------- files


def _log_line(template="cpu", **task_fields):
    import json

    task = {"kind": "gemm", "template": template, "shape": [16, 16, 16], "dtype": "float32"}
    task.update(epilogue=[], expr="", expr_shapes="")
    task.update(task_fields)
    config = {"tile_y": [2, 4], "tile_x": [2, 8], "vec": 8, "tile_k": [4]}
    if task["kind"] == "expr":
        config = {}
    rec = {"task": task, "device": "cl / dev", "config": config, "status": "ok"}
    rec.update(device_ms=1.0, gflops=2 * 16**3 / 1e6, host_ms=1.0, error="", timestamp=1.0)
    if task["kind"] == "expr":
        del rec["gflops"]  # filled in from its own FLOPs
    return json.dumps(rec) + "\n"


def test_source_never_overwrites_unless_forced(tmp_path):
    log = tmp_path / "l.jsonl"
    log.write_text(_log_line())
    out = tmp_path / "out"
    assert run(["source", "--log", str(log), "--out", str(out)])[0] == 0
    cl_file = out / "gemm_cpu_16x16x16.cl"
    cl_file.write_text("mine")
    code, err = run(["source", "--log", str(log), "--out", str(out)])
    assert code == 2 and "Traceback" not in err
    assert f"{cl_file} exists (and 1 more); pass --force to overwrite" in err
    assert cl_file.read_text() == "mine"
    assert run(["source", "--log", str(log), "--out", str(out), "--force"])[0] == 0
    assert "__kernel" in cl_file.read_text()
    # --out naming a file
    code, err = run(["source", "--log", str(log), "--out", str(log)])
    assert code == 2 and f"--out {log} is a file; give a folder" in err


def _kernel_files(out, stdout):
    """The .cl files ``source`` wrote into ``out``, checked against the paths it printed."""
    printed = [line.split(" (")[0] for line in stdout.splitlines() if line.strip()]
    assert len(printed) == len(set(printed)), stdout  # never one path twice
    assert sorted(printed) == sorted(str(p) for p in out.glob("*.cl"))
    return sorted(p.name for p in out.glob("*.cl"))


def test_source_gives_each_task_its_own_files(tmp_path, capsys):
    """Two tasks never share a kernel file: expr tasks (the text is no file name) and tasks
    whose names agree once odd characters are replaced get a digest of the whole task."""
    from tensorsched.ops.templates import TEMPLATES, register_template

    def dot(cfg, M, N, K, dtype="float32", epilogue=()):
        return TEMPLATES["gemm"]["cpu"](cfg, M, N, K, dtype=dtype, epilogue=epilogue)

    def dash(cfg, M, N, K, dtype="float32", epilogue=()):
        return dot(cfg, M, N, K, dtype, epilogue)

    log = tmp_path / "l.jsonl"
    log.write_text(
        _log_line("test.name")
        + _log_line("test-name")
        + _log_line("cpu")
        + _log_line("generic", kind="expr", shape=[], expr="B[i] = A[i] * 2.0", expr_shapes="i=16")
        + _log_line("generic", kind="expr", shape=[], expr="B[i] = A[i] + 1.0", expr_shapes="i=16")
    )
    try:
        register_template("gemm", "test.name", dot)
        register_template("gemm", "test-name", dash)
        assert main(["source", "--log", str(log), "--out", str(tmp_path / "out")]) == 0
    finally:
        TEMPLATES["gemm"].pop("test.name", None)
        TEMPLATES["gemm"].pop("test-name", None)
    names = _kernel_files(tmp_path / "out", capsys.readouterr().out)
    assert len(names) == 5 and "gemm_cpu_16x16x16.cl" in names, names
    assert sum(n.startswith("gemm_test_name_16x16x16_") for n in names) == 2, names
    assert sum(n.startswith("expr_generic_") for n in names) == 2, names


@pytest.mark.opencl
def test_tune_writes_its_log_in_the_cache_folder_unless_told(device, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    code, err = run(TUNE + ["--trials", "1", "--repeat", "1"])
    assert code == 0, err
    log = cache / "tensorsched" / "tensorsched_tune.jsonl"
    assert log.exists() and f"writing {log}" in err
    assert os.listdir(work) == []  # nothing in the working folder
    assert sorted(os.listdir(log.parent)) == ["tensorsched_tune.jsonl"]  # the lock is gone
    code, err = run(TUNE + ["--trials", "1", "--repeat", "1", "--log", "mine.jsonl", "--resume"])
    assert code == 0, err
    assert os.listdir(work) == ["mine.jsonl"] and "writing" not in err


def test_compare_defaults_to_the_cache_folder_and_a_small_acl_list(tmp_path, monkeypatch):
    seen = {}

    def fake_compare(tasks, log, acl_dir, **kw):
        seen.update(log=log, acl_dir=acl_dir, **kw)
        return []

    monkeypatch.setattr(cli, "compare", fake_compare)
    monkeypatch.setattr(cli, "print_table", lambda rows, name: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    argv = ["compare", "gemm", "--shape", "8,8,8", "--template", "cpu"]
    code, err = run(argv)
    assert code == 0, err
    assert seen["log"] == str(tmp_path / "cache" / "tensorsched" / "tensorsched_tune.jsonl")
    assert seen["acl_dir"] == str(tmp_path / "cache" / "tensorsched" / "acl_tuning")
    assert seen["acl_config_lists"] == cli.SMALL_ACL_LISTS
    assert sum(len(v) for v in cli.SMALL_ACL_LISTS.values()) <= 3
    assert os.listdir(tmp_path) == []  # the fake compare wrote nothing, nor did the CLI
    run(argv + ["--acl-full", "--log", "l.jsonl", "--acl-dir", "acl"])
    assert seen["acl_config_lists"] is None and seen["log"] == "l.jsonl"


def test_tune_passes_its_build_workers_to_the_tuner(tmp_path, monkeypatch):
    seen: dict = {}

    def fake_tune(task, log, **kw):
        seen.update(kw)
        raise SystemExit(0)

    monkeypatch.setattr(cli, "tune", fake_tune)
    monkeypatch.chdir(tmp_path)
    argv = ["tune", "gemm", "--shape", "8,8,8", "--template", "cpu", "--log", "l.jsonl"]
    run(argv + ["--build-workers", "3"])
    assert seen["n_build"] == 3
    run(argv)
    assert seen["n_build"] is None  # the tuner's default: one a core
    code, err = run(argv + ["--build-workers", "0"])
    assert code == 2 and "--build-workers: expected a positive integer" in err, err


def test_small_acl_lists_are_configs_of_the_full_ones():
    from tensorsched.baselines.acl_tuner import resolve_config_lists

    small = resolve_config_lists(cli.SMALL_ACL_LISTS)
    full = resolve_config_lists()
    for strategy, configs in small.items():
        assert configs and all(c in full[strategy] for c in configs), strategy


# ---------------------------------------------------------------------------- devices, warnings


def test_device_type_names():
    class Fake:
        def __init__(self, bits):
            self.type = bits

    assert [device_type(Fake(b)) for b in (4, 2, 8, 16, 1, 6)] == [
        "GPU",
        "CPU",
        "ACCELERATOR",
        "CUSTOM",
        "OTHER",
        "GPU",
    ]


@pytest.mark.opencl
def test_devices_has_a_type_column(device, capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split("|")[1].strip() == "type"
    assert any(
        row.split("|")[1].strip() in ("CPU", "GPU", "ACCELERATOR") for row in out[2:] if "|" in row
    )


def test_no_compiler_warning_leaks_on_success(monkeypatch):
    def noisy(args):
        warnings.warn(
            "Non-empty compiler output encountered. Set the environment variable "
            "PYOPENCL_COMPILER_OUTPUT=1 to see more.",
            UserWarning,
            stacklevel=1,
        )

    monkeypatch.setitem(cli.COMMANDS, "devices", noisy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["devices"]) == 0
    assert caught == []


@pytest.mark.opencl
def test_peak_prints_no_warning(device, tmp_path):
    res = subprocess.run(
        [sys.executable, "-W", "always", "-m", "tensorsched.cli", "peak", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYOPENCL_NO_CACHE="1"),
    )
    assert res.returncode == 0, res.stderr
    assert "Warning" not in res.stderr, res.stderr


# ---------------------------------------------------------------------------- every operator


def test_tune_help_lists_every_operator_and_its_shape(capsys):
    assert run(["tune", "--help"])[0] == 0
    out = capsys.readouterr().out
    assert "{" + ",".join(cli.TUNE_KINDS) + "}" in out
    # text expressions are tune --expr; AutoTVM templates are tuned from Python (ts.autotvm)
    assert set(cli.TUNE_KINDS) == set(cli.SHAPE_EXAMPLES) == set(KINDS) - {"expr", "autotvm"}
    for kind in cli.TUNE_KINDS:
        assert f"\n  {kind}: " in out and f"e.g. --shape {cli.SHAPE_EXAMPLES[kind]}\n" in out
    assert "  conv3d: N,CI,ID,IH,IW,CO,KD,KH,KW[,groups=1," in out


def test_every_shape_example_is_a_task():
    for kind, example in cli.SHAPE_EXAMPLES.items():
        Task(kind, next(iter(templates_of(kind))), cli.parse_shape(kind, example))


def test_a_shape_left_short_takes_the_defaults():
    assert cli.parse_shape("depthwise_conv2d", "1,8,10,10,8,3,3,8") == (
        (1, 8, 10, 10, 8, 3, 3, 8) + (1, 1) + (0, 0, 0, 0) + (1, 1)
    )
    assert cli.parse_shape("conv2d", "1,8,10,10,8,3,3") == (1, 8, 10, 10, 8, 3, 3, 1, 0)
    assert cli.parse_shape("pool", "1,4,9,9,3,3,2,2,0,0,0,0,5")[-1] == 5


WRONG_SHAPES = [
    ("dense", "16,16", "--shape 16,16: 2 ints, not 3; dense takes --shape N,O,K, e.g. "),
    (
        "depthwise_conv2d",
        "1,8,10",
        "--shape 1,8,10: 3 ints, not 8 to 16; depthwise_conv2d takes --shape "
        "N,CI,IH,IW,CO,KH,KW,groups[,stride_h=1,stride_w=1,pad_top=0,",
    ),
    ("group_conv2d", "1,8,10,10,8,3,3,3", "groups=3 must divide both the 8 input"),
    ("pool", "1,4,9,9,3,3,1,1,0,0,0,0,7", "mode 7 must be 0 (max)"),
    ("softmax", "4,x", "--shape must be comma-separated integers, got '4,x'; softmax takes "),
    ("conv3d", "1,4,0,6,6,8,3,3,3", "conv3d shape must be 22 ints up to 2147483647 (N, CI, ID,"),
]


@pytest.mark.parametrize("kind, shape, message", WRONG_SHAPES, ids=[k for k, _, _ in WRONG_SHAPES])
def test_a_wrong_shape_names_the_fields_with_an_example(kind, shape, message, tmp_path):
    with pytest.raises(ShapeError) as exc:
        cli.parse_shape(kind, shape)
    assert message in str(exc.value)
    assert str(exc.value).endswith(f"e.g. --shape {cli.SHAPE_EXAMPLES[kind]}")
    code, err = run(["tune", kind, "--shape", shape, "--log", str(tmp_path / "l.jsonl")])
    assert code == 2 and message in err and "Traceback" not in err, err
    assert os.listdir(tmp_path) == []


def test_the_default_template_is_net_tunes_for_the_clusters_device():
    class FakeCluster:
        def __init__(self, gpu):
            self.gpu = gpu

        def is_gpu(self, device):
            return self.gpu[device]

    argv = ["tune", "depthwise_conv2d", "--shape", "1,8,10,10,8,3,3,8", "--device", "A,B"]
    args = cli.make_parser().parse_args(argv)
    for gpu, template in ((True, "direct"), (False, "cpu")):
        (task,) = cli._tasks(args, FakeCluster({"A": gpu, "B": gpu}))
        assert task.template == template == choose_template(task.kind, task.shape, (), gpu)
    with pytest.raises(TensorschedError, match="names GPUs and other devices: give --template"):
        cli._tasks(args, FakeCluster({"A": True, "B": False}))
    args.template = "direct"
    assert cli._tasks(args, FakeCluster({"A": True, "B": False}))[0].template == "direct"


# small shapes of each network operator (padding, strides, groups, an epilogue among them)
OPERATORS = [
    ("depthwise_conv2d", "1,8,10,10,8,3,3,8,1,1,1,1,1,1", ""),
    ("group_conv2d", "1,8,10,10,8,3,3,2", "bias,relu"),
    ("dense", "2,16,32", "bias,relu"),
    ("pool", "1,4,9,9,3,3,2,2", ""),
    ("softmax", "4,33", ""),
    ("conv3d", "1,4,4,6,6,8,3,3,3,1,1,1,1,1,1,1,1,1,1", "relu"),
]


@pytest.mark.opencl
@pytest.mark.parametrize("kind, shape, epilogue", OPERATORS, ids=[k for k, _, _ in OPERATORS])
def test_tune_each_operator_logs_a_checked_kernel(kind, shape, epilogue, device, tmp_path):
    log = str(tmp_path / "l.jsonl")
    argv = ["tune", kind, "--shape", shape, "--trials", "2", "--repeat", "1", "--verify", "0"]
    argv += ["--build-workers", "1"]
    argv += ["--log", log] + (["--epilogue", epilogue] if epilogue else [])
    code, err = run(argv)
    assert code == 0, err
    want = cli.parse_shape(kind, shape)
    ep = tuple(x for x in epilogue.split(",") if x)
    ok = [r for r in read_log(log) if r.status == "ok"]
    assert ok, [r.error for r in read_log(log)]
    for r in ok:  # checked against numpy: its kind, shape, epilogue and net tune's template
        assert (r.task["kind"], tuple(r.task["shape"]), tuple(r.task["epilogue"])) == (
            kind,
            want,
            ep,
        )
        assert r.task["template"] == choose_template(kind, want, ep, bool(device.is_gpu))


@pytest.mark.opencl
def test_tune_resumes_an_operators_log(device, tmp_path):
    log = str(tmp_path / "l.jsonl")
    argv = ["tune", "softmax", "--shape", "4,33", "--trials", "1", "--verify", "0"]
    argv += ["--repeat", "1", "--log", log]
    assert run(argv)[0] == 0
    code, err = run(argv)
    assert code == 2 and "already has trials of softmax 4x33" in err, err
    code, err = run(argv + ["--resume"])  # one more trial, not the first again
    assert code == 0, err
    configs = [r.config_key() for r in read_log(log)]
    assert len(configs) == len(set(configs)) == 2
