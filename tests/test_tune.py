"""The grid-search tuner: knob spaces, search order, the log, and (on the OpenCL device) the
measurement's isolation and checks, resuming after ``kill -9``, ``apply_best`` and
``tensorsched source``.

The templates tuned here are the tiny ones of ``tune_templates.py`` (16x16x16, 3 to 8 points):
each ``tune`` call costs the start of its worker processes (about a second) plus a few tenths
of a second per trial.
"""

import collections
import concurrent.futures as cf
import csv
import dataclasses
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
import tune_templates  # noqa: F401  (registers the test templates)

import tensorsched as ts
from tensorsched.errors import RuntimeCallError, TensorschedError
from tensorsched.ops.space import factorizations
from tensorsched.runtime.device import DeviceError, DeviceLimits, current_device
from tensorsched.tune import Config, ConfigError
from tensorsched.tune.dispatch import apply_best, best_config, instantiate
from tensorsched.tune.log import (
    LogError,
    LogWriter,
    Record,
    best_records,
    config_key,
    export_csv,
    read_log,
)
from tensorsched.tune.task import Task
from tensorsched.tune.tuner import VERIFY_TIMES, Search, candidate_order, early_filter, tune

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
SHAPE = (16, 16, 16)


def tmpl(name):
    return Task("gemm", name, SHAPE)


def run_tune(task, log, **kw):
    kw = {"strategy": "grid", "timeout": 20.0, "repeat": 2, "n_build": 1, "progress": False, **kw}
    kw.setdefault("verify", 0)  # the trials alone (measuring the best again: its own tests)
    return tune(task, str(log), **kw)


def valid_records(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_log(str(path))


def statuses(path):
    return [r.status for r in valid_records(path)]


def cl_source(s, args):
    from tensorsched.codegen.opencl import emit_opencl

    return emit_opencl(ts.lower(s, args, name="k")).text


@pytest.fixture(scope="module")
def device():
    try:
        return current_device()
    except DeviceError as exc:
        pytest.skip(f"no OpenCL device: {exc}")
    except ImportError as exc:
        pytest.skip(f"pyopencl cannot be imported: {exc}")


@pytest.fixture(scope="module")
def tiny_log(device, tmp_path_factory):
    """A log with every point of ``gemm_tiny`` measured, in grid order."""
    path = tmp_path_factory.mktemp("tiny") / "tiny.jsonl"
    res = run_tune(tmpl("gemm_tiny"), path)
    assert res.counts == {"ok": 8}, res.counts
    return path


def subprocess_env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([TESTS, ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    env.update(extra)
    return env


# ---------------------------------------------------------------------------- spaces


def brute_splits(extent, parts, keep):
    """The inner parts (tuples of ``parts - 1`` ints) of every way to split ``extent``,
    filtered by ``keep``, by brute force."""
    import itertools

    rng = range(1, extent + 1)
    return sorted(c for c in itertools.product(rng, repeat=parts - 1) if keep(c))


@pytest.mark.parametrize("extent,parts", [(12, 2), (12, 3), (16, 3), (7, 2), (36, 4)])
def test_split_factors_and_divisors_are_the_exact_factorizations(extent, parts):
    want = brute_splits(extent, parts, lambda c: extent % int(np.prod(c)) == 0)
    for policy in ("factors", "divisors"):
        cfg = Config()
        cfg.define_split("x", extent, parts, policy=policy)
        assert list(cfg.space["x"].candidates) == want, policy
    # factorizations() itself: every ordered product, no duplicates
    fs = factorizations(extent, parts)
    assert len(set(fs)) == len(fs) and all(int(np.prod(f)) == extent for f in fs)
    assert sorted(f[1:] for f in fs) == want


def test_split_sizes_for_known_extents():
    cfg = Config()
    cfg.define_split("f12", 12, 2, policy="factors")
    cfg.define_split("f12x3", 12, 3, policy="factors")
    cfg.define_split("p16x3", 16, 3, policy="power2")
    cfg.define_split("p10", 10, 2, policy="power2")
    cfg.define_split("p16m", 16, 3, policy="power2", max_factor=4)
    cfg.define_split("c", 64, 3, policy="candidates", candidates=[(2, 4), [8, 1]])
    sizes = {n: len(k.candidates) for n, k in cfg.space.items()}
    # 12: 6 divisors; 12 into 3 ordered factors: 18; powers of two a*b <= 16: exponents
    # e1 + e2 <= 4 -> 15; 10: 1, 2, 4, 8; max_factor 4: e1 + e2 <= 2 -> 6
    assert sizes == {"f12": 6, "f12x3": 18, "p16x3": 15, "p10": 4, "p16m": 6, "c": 2}
    assert cfg.space["f12"].candidates == ((1,), (2,), (3,), (4,), (6,), (12,))
    assert cfg.space["p10"].candidates == ((1,), (2,), (4,), (8,))
    assert cfg.space["c"].candidates == ((2, 4), (8, 1))
    assert cfg.size() == 6 * 18 * 15 * 4 * 6 * 2
    assert cfg["f12"] == (1,)  # the default: the first candidate


def test_knob_reorder_constrain_and_values():
    cfg = Config()
    assert cfg.define_knob("unroll", (1, 0)) == 1
    assert cfg.define_reorder("order", ["i", "j", "k"]) == (0, 1, 2)
    assert len(cfg.space["order"].candidates) == 6
    assert set(cfg.space["order"].candidates) == {
        (0, 1, 2),
        (0, 2, 1),
        (1, 0, 2),
        (1, 2, 0),
        (2, 0, 1),
        (2, 1, 0),
    }
    cfg.define_reorder("two", ["i", "j", "k"], candidates=[(2, 1, 0), (0, 1, 2)])
    assert cfg.space["two"].candidates == ((2, 1, 0), (0, 1, 2))
    assert cfg.size() == 2 * 6 * 2
    with pytest.raises(ConfigError, match="not a permutation"):
        cfg.define_reorder("bad", ["i", "j"], candidates=[(0, 0)])
    with pytest.raises(ConfigError, match="no candidates"):
        cfg.define_knob("empty", ())
    with pytest.raises(ConfigError, match="candidates"):
        cfg.define_split("s", 8, 2, policy="candidates")
    with pytest.raises(ConfigError, match="unknown policy"):
        cfg.define_split("s", 8, 2, policy="primes")
    with pytest.raises(ConfigError, match="defined twice"):
        cfg.define_knob("unroll", (0, 1, 2))

    # values: chosen ones are returned (lists from JSON too), others are refused
    chosen = Config({"unroll": 0, "order": [2, 0, 1]})
    assert chosen.define_knob("unroll", (1, 0)) == 0
    assert chosen.define_reorder("order", ["i", "j", "k"]) == (2, 0, 1)
    with pytest.raises(ConfigError, match="not one of its candidates"):
        Config({"unroll": 5}).define_knob("unroll", (1, 0))

    c = Config()
    c.constrain(True, "fine")
    assert c.valid
    c.constrain(False, "too big")
    assert not c.valid and c.constraints == ["too big"]


def test_real_template_spaces_have_their_known_sizes():
    # gemm cpu: tile_y 3*6, tile_x 3*7, vec 3, tile_k 4, tail, tail_k, group_order, pad_b, pad_a 2 each;
    # gpu_tiled:
    # tile_y/x 2*7*4 each, tile_k 4, unroll_k, a_layout, a_pad, fetch_vec, tail, tail_k 2 each,
    # reg_fetch 3, double_buffer 4, split_k 5, warp 3, slice_k 4, split_sum 2, stage 3
    assert Task("gemm", "cpu", (256, 256, 256)).space().size() == 18 * 21 * 3 * 4 * 2**5
    gpu_size = 56 * 56 * 4 * 2**6 * 3 * 4 * 5 * 3 * 4 * 2 * 3
    assert Task("gemm", "gpu_tiled", (128, 128, 128)).space().size() == gpu_size
    # the cpu template's constraint: columns per work-item a multiple of the vector width
    _, _, cfg = Task("gemm", "cpu", (256, 256, 256)).instantiate({"tile_x": (2, 8), "vec": 16})
    assert not cfg.valid and "vector width" in cfg.constraints[0]
    # a tail strategy other than "guard" where every tile divides the shape would only repeat
    # the "guard" kernel: the filter rejects it before it is built
    for template, tail in (("cpu", {"tail": "shift"}), ("cpu", {"tail_k": "peel"})):
        _, _, cfg = Task("gemm", template, (256, 256, 256)).instantiate(tail)
        assert not cfg.valid and "divide" in cfg.constraints[-1]
    for tail in ({"tail": "shift"}, {"tail_k": "peel"}):
        _, _, cfg = Task("gemm", "gpu_tiled", (128, 128, 128)).instantiate(tail)
        assert not cfg.valid and "divide" in cfg.constraints[-1]
    _, _, cfg = Task("gemm", "gpu_tiled", (128, 128, 127)).instantiate({"tail_k": "peel"})
    assert cfg.valid
    _, _, cfg = Task("gemm", "cpu", (255, 256, 257)).instantiate(
        {"tail": "shift", "tail_k": "peel"}
    )
    assert cfg.valid
    # a guarded last tile whose edge splits a vector would be scalar code: refused where
    # "shift" can keep the tile whole (N = 129, 32 columns a tile), allowed where it cannot
    # (a tile wider than N) or where the edge falls between vectors (N = 144)
    knobs = {"tile_x": (1, 32), "vec": 16, "tail": "guard"}
    _, _, cfg = Task("gemm", "cpu", (256, 129, 256)).instantiate(knobs)
    assert not cfg.valid and "scalar" in cfg.constraints[0]
    for n in (20, 144):
        _, _, cfg = Task("gemm", "cpu", (256, n, 256)).instantiate(knobs)
        assert cfg.valid, cfg.constraints


def test_grid_order_is_deterministic_and_point_matches_points():
    def space():
        cfg = Config()
        cfg.define_split("a", 12, 2, policy="factors")
        cfg.define_knob("b", ("x", "y", "z"))
        cfg.define_reorder("c", ["i", "j"])
        return cfg

    first, second = list(space().points()), list(space().points())
    assert first == second
    assert len(first) == space().size() == 6 * 3 * 2
    assert len({json.dumps(p, sort_keys=True) for p in first}) == len(first)
    s = space()
    assert [s.point(i) for i in range(s.size())] == first
    # the last knob defined varies fastest, the first slowest
    assert first[0] == {"a": (1,), "b": "x", "c": (0, 1)}
    assert first[1] == {"a": (1,), "b": "x", "c": (1, 0)}
    assert first[6] == {"a": (2,), "b": "x", "c": (0, 1)}
    # a real template, too
    gpu = Task("gemm", "gpu_tiled", (128, 128, 128)).space()
    pts = list(itertools.islice(gpu.points(), 4096))
    for i in (0, 1, 17, 1000, 4095):
        assert gpu.point(i) == pts[i]


def test_candidate_order_grid_and_random():
    task = Task("gemm", "cpu", (256, 256, 256))
    size = task.space().size()
    assert list(candidate_order(task, "grid")) == list(range(size))
    a, b = candidate_order(task, "random", seed=3), candidate_order(task, "random", seed=3)
    assert a == b
    assert sorted(a) == list(range(size))  # every point once
    assert a != list(range(size))
    assert candidate_order(task, "random", seed=4) != a
    with pytest.raises(TensorschedError, match="unknown strategy"):
        candidate_order(task, "annealing")


# ---------------------------------------------------------------------------- the log


def record(config, status="ok", device_ms=1.0, device="dev"):
    return Record(
        task=json.loads(tmpl("gemm_tiny").key()),
        device=device,
        config=config,
        status=status,
        device_ms=device_ms if status == "ok" else None,
        gflops=tmpl("gemm_tiny").flop / device_ms / 1e6 if status == "ok" else None,
    )


def test_read_log_skips_damaged_lines_and_writer_appends_on_a_fresh_line(tmp_path):
    path = str(tmp_path / "log.jsonl")
    w = LogWriter(path)
    w.append(record({"unroll": 0}))
    w.append(record({"unroll": 1}, status="wrong"))
    good = open(path, "rb").read()
    with open(path, "ab") as f:  # damage: a line that is not JSON, a
        f.write(b"not json at all\n")  # record without fields, and a record
        f.write(b'{"config": {}}\n')  # cut short by a kill
        f.write(good.splitlines()[0][:40])
    damaged = open(path, "rb").read()
    with pytest.warns(UserWarning) as caught:
        recs = read_log(path)
    assert [r.config for r in recs] == [{"unroll": 0}, {"unroll": 1}]
    assert [r.status for r in recs] == ["ok", "wrong"]
    msgs = [str(c.message) for c in caught]
    assert len(msgs) == 3
    assert all("skipped a damaged log line" in m for m in msgs)
    assert [f"{path}:{n}:" in m for n, m in zip((3, 4, 5), msgs)] == [True] * 3
    assert open(path, "rb").read() == damaged  # reading never rewrites

    LogWriter(path).append(record({"unroll": 1, "tile_x": (8,)}))
    after = open(path, "rb").read()
    assert after.startswith(damaged)  # appended, nothing rewritten
    assert after[len(damaged) : len(damaged) + 2] == b"\n{"
    with pytest.warns(UserWarning):
        recs = read_log(path)
    assert recs[-1].config == {"unroll": 1, "tile_x": (8,)}  # tuples come back as tuples
    assert len(recs) == 3
    assert read_log(str(tmp_path / "missing.jsonl")) == []


def test_full_disk_raises_log_error_and_keeps_earlier_records(tmp_path, monkeypatch):
    path = str(tmp_path / "log.jsonl")
    w = LogWriter(path)
    w.append(record({"unroll": 0}))
    w.append(record({"unroll": 1}))
    before = open(path, "rb").read()
    real_write = os.write

    def short_write(fd, data):  # half the line fits, then the disk is full
        return real_write(fd, data[: len(data) // 2])

    def enospc(fd, data):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(os, "write", short_write)
        with pytest.raises(LogError, match="records already in it are intact"):
            w.append(record({"unroll": 0, "tile_x": (8,)}))
        m.setattr(os, "write", enospc)
        with pytest.raises(LogError, match="No space left on device"):
            w.append(record({"unroll": 0, "tile_y": (8,)}))
    assert open(path, "rb").read().startswith(before)
    with pytest.warns(UserWarning, match=":3:"):  # the half line
        recs = read_log(path)
    assert [r.config for r in recs] == [{"unroll": 0}, {"unroll": 1}]

    # space again: the same writer goes on on a fresh line, the half line stays skipped
    w.append(record({"unroll": 1, "tile_y": (8,)}))
    with pytest.warns(UserWarning, match=":3:"):
        recs = read_log(path)
    assert [r.config for r in recs] == [{"unroll": 0}, {"unroll": 1}, {"unroll": 1, "tile_y": (8,)}]


def test_best_records_takes_the_fastest_correct_one():
    recs = [
        record({"unroll": 0}, device_ms=2.0),
        record({"unroll": 1}, device_ms=1.0),
        record({"unroll": 1, "tile_x": (8,)}, status="wrong"),
        record({"unroll": 0, "tile_x": (8,)}, device_ms=0.5, device="other"),
    ]
    best = best_records(recs, device="dev")
    assert [r.config for r in best.values()] == [{"unroll": 1}]
    assert list(best_records(recs).values())[0].device == "other"


def test_export_csv(tmp_path):
    recs = [record({"unroll": 0, "tile_x": (8,)}), record({"unroll": 1}, status="wrong")]
    recs[1].error = "output differs from numpy: relative error 1e-01"
    out = tmp_path / "log.csv"
    export_csv(recs, str(out))
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    assert list(rows[0]) == [
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
    assert rows[0]["shape"] == "16x16x16" and rows[0]["template"] == "gemm_tiny"
    assert json.loads(rows[0]["config"]) == {"tile_x": [8], "unroll": 0}
    assert [r["status"] for r in rows] == ["ok", "wrong"]
    assert rows[1]["error"].startswith("output differs") and rows[1]["device_ms"] == ""


# ---------------------------------------------------------------------------- early filter


def test_early_filter_rejects_without_building(monkeypatch):
    import tensorsched.runtime.module

    def no_build(*a, **k):
        raise AssertionError("early_filter must not build")

    monkeypatch.setattr(tensorsched.runtime.module, "build_program", no_build)
    monkeypatch.setattr(sys.modules["tensorsched.runtime.build"], "build", no_build)
    monkeypatch.setattr(ts, "build", no_build)

    small = DeviceLimits("fake", 256, (256, 256, 64), 2048)
    wide = tmpl("gemm_wide")
    assert early_filter(wide, {"threads": (8,)}, small) is None
    assert "work-group of 16384 over the device's 256" in early_filter(
        wide, {"threads": (128,)}, small
    )
    narrow = DeviceLimits("fake", 1 << 20, (64, 64, 1), 2048)
    assert "threadIdx.x = 128 over the device's 64" in early_filter(
        wide, {"threads": (128,)}, narrow
    )
    assert early_filter(wide, {"threads": (8,)}, narrow) is None
    # __local memory: gpu_tiled's default A and B tiles take 8 KiB per work-group at 64^3
    gpu = Task("gemm", "gpu_tiled", (64, 64, 64))
    assert "bytes of __local memory over the device's 2048" in early_filter(gpu, {}, small)
    assert early_filter(gpu, {}, DeviceLimits("fake", 256, (256, 256, 64), 48 * 1024)) is None
    # private memory: the cpu template's 16x16 float register tile is 1 KiB per work-item
    cpu = Task("gemm", "cpu", (64, 64, 64))
    big = DeviceLimits("fake", 4096, (4096, 4096, 4096), 1 << 20)
    assert early_filter(cpu, {}, big) is None
    assert "bytes of private memory per work-item over 512" in early_filter(
        cpu, {}, big, private_bytes=512
    )
    # a template's own constraint
    assert "vector width" in early_filter(
        Task("gemm", "cpu", (256, 256, 256)), {"tile_x": (2, 8), "vec": 16}, big
    )


# ---------------------------------------------------------------------------- on the device


@pytest.mark.opencl
def test_grid_tune_logs_every_point_in_grid_order(tiny_log):
    recs = read_log(str(tiny_log))
    space = tmpl("gemm_tiny").space()
    assert [r.config for r in recs] == list(space.points())
    assert all(
        r.status == "ok" and r.device_ms > 0 and r.host_ms > 0 and r.gflops > 0 for r in recs
    )
    assert all(r.task == json.loads(tmpl("gemm_tiny").key()) for r in recs)


@pytest.mark.opencl
def test_resume_of_a_finished_log_measures_nothing_and_no_resume_refuses(tiny_log):
    before = open(tiny_log, "rb").read()
    res = run_tune(tmpl("gemm_tiny"), tiny_log, resume=True)
    assert res.counts == {"skipped": 8}
    assert res.best is not None and res.best.status == "ok"
    with pytest.raises(TensorschedError, match="already has trials"):
        run_tune(tmpl("gemm_tiny"), tiny_log)
    assert open(tiny_log, "rb").read() == before


@pytest.mark.opencl
def test_random_strategy_is_deterministic_for_a_seed(device, tmp_path):
    task = tmpl("gemm_tiny")
    order = candidate_order(task, "random", seed=7)
    assert order == candidate_order(task, "random", seed=7)
    res = run_tune(task, tmp_path / "r.jsonl", strategy="random", trials=4, seed=7)
    space = task.space()
    assert [r.config for r in read_log(str(tmp_path / "r.jsonl"))] == [
        space.point(i) for i in order[:4]
    ]
    assert res.counts == {"ok": 4}


@pytest.mark.opencl
def test_planted_wrong_kernel_is_caught_logged_and_never_best(device, tmp_path):
    log = tmp_path / "wrong.jsonl"
    res = run_tune(tmpl("gemm_planted_wrong"), log)
    recs = read_log(str(log))
    assert len(recs) == 8 and res.counts == {"ok": 4, "wrong": 4}
    for r in recs:
        if r.config["bug"]:
            assert r.status == "wrong", r
            assert "differs from numpy" in r.error
            assert r.device_ms is None and r.gflops is None  # never timed, never ranked
        else:
            assert r.status == "ok", r
    assert res.best.config["bug"] == 0
    fastest = min((r for r in recs if r.status == "ok"), key=lambda r: r.device_ms)
    assert res.best.config == fastest.config


@pytest.mark.opencl
@pytest.mark.slow
def test_planted_hanging_kernel_is_killed_at_its_timeout(device, tmp_path):
    log = tmp_path / "hang.jsonl"
    timeout = 4.0
    t0 = time.time()
    res = run_tune(tmpl("gemm_planted_hang"), log, trials=3, timeout=timeout)
    elapsed = time.time() - t0
    recs = read_log(str(log))
    # grid order: (tile_x 4, hang 0), (4, hang 1), (8, hang 0)
    assert [r.config["hang"] for r in recs] == [0, 1, 0]
    assert [r.status for r in recs] == ["ok", "timeout", "ok"]  # tuning went on after it
    assert "no result within 4 s" in recs[1].error
    assert recs[2].timestamp - recs[1].timestamp < 20  # a fresh worker took over
    assert recs[1].timestamp - recs[0].timestamp >= timeout - 0.5
    assert elapsed < timeout + 40
    assert res.counts == {"ok": 2, "timeout": 1}
    assert res.best.config["hang"] == 0


@pytest.mark.opencl
def test_crashing_workers_are_recorded_and_tuning_goes_on(device, tmp_path):
    """crash = 1 kills the measuring worker, crash = 2 every worker that builds it (the prebuild
    pool's too, which breaks the pool: the others of its batch must still be measured)."""
    log = tmp_path / "crash.jsonl"
    res = run_tune(tmpl("gemm_planted_crash"), log, n_build=2)
    recs = read_log(str(log))
    assert [(r.config["tile_x"], r.config["crash"]) for r in recs] == [
        ((4,), 0),
        ((4,), 1),
        ((4,), 2),
        ((8,), 0),
        ((8,), 1),
        ((8,), 2),
    ]
    assert [r.status for r in recs] == ["ok", "crash", "crash", "ok", "crash", "crash"]
    assert all("worker process died" in r.error for r in recs if r.status == "crash")
    assert res.best.config["crash"] == 0


@pytest.mark.opencl
def test_early_filter_in_tuning_logs_invalid(device, tmp_path):
    log = tmp_path / "wide.jsonl"
    res = run_tune(tmpl("gemm_wide"), log)
    recs = {r.config["threads"]: r for r in read_log(str(log))}
    assert len(recs) == 3
    assert [recs[t].status for t in ((4,), (8,), (128,))] == ["ok", "ok", "invalid"]
    assert "work-group of 16384 over the device's" in recs[(128,)].error
    assert recs[(128,)].device_ms is None
    assert res.counts == {"ok": 2, "invalid": 1}


@pytest.mark.opencl
def test_apply_best_builds_the_logged_best(tiny_log, tmp_path):
    task = tmpl("gemm_tiny")
    recs = read_log(str(tiny_log))
    fastest = min((r for r in recs if r.status == "ok"), key=lambda r: r.device_ms)
    with apply_best(str(tiny_log)) as table:
        assert table[task.key()] == fastest.config
        assert best_config(task) == fastest.config
        s, args = instantiate("gemm", "gemm_tiny", SHAPE)
        assert cl_source(s, args) == cl_source(*task.instantiate(fastest.config)[:2])
    assert best_config(task) is None  # only inside the block
    s, args = instantiate("gemm", "gemm_tiny", SHAPE)
    assert cl_source(s, args) == cl_source(*task.instantiate()[:2])

    # a planted faster record decides, a faster wrong one does not
    log = tmp_path / "planted.jsonl"
    with open(tiny_log, "rb") as f, open(log, "wb") as g:
        g.write(f.read())
    dev = fastest.device
    w = LogWriter(str(log))
    pick = {"tile_y": (8,), "tile_x": (4,), "unroll": 1}
    for _ in range(2):  # with its logged time, the median of three measurements
        w.append(
            Record(
                task=fastest.task,
                device=dev,
                config=pick,
                status="ok",
                device_ms=fastest.device_ms / 100,
                gflops=task.flop / (fastest.device_ms / 100) / 1e6,
                remeasure=True,
            )
        )
    w.append(
        Record(
            task=fastest.task,
            device=dev,
            config={"tile_y": (4,), "tile_x": (8,), "unroll": 0},
            status="wrong",
            device_ms=1e-9,
        )
    )
    with apply_best(str(log)):
        s, args = instantiate("gemm", "gemm_tiny", SHAPE)
    text = cl_source(s, args)
    assert "reqd_work_group_size(4, 8, 1)" in text and text == cl_source(
        *task.instantiate(pick)[:2]
    )
    # the built module computes the GEMM
    mod = ts.build(s, args, target="opencl")
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(-1, 1, (16, 16)).astype("float32") for _ in range(2))
    c = np.full((16, 16), np.nan, dtype="float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_a_config_counts_at_the_median_of_its_measurements(tmp_path):
    """One lucky measurement of a config measured three times does not make it the best;
    a config that one measurement found wrong is never the best."""
    task = tmpl("gemm_tiny")

    def rec(config, ms, status="ok", again=False):
        gflops = task.flop / ms / 1e6 if status == "ok" else None
        return Record(dataclasses.asdict(task), "dev", config, status, ms, None, gflops)

    lucky = {"tile_y": (4,), "tile_x": (4,), "unroll": 0}
    steady = {"tile_y": (8,), "tile_x": (4,), "unroll": 0}
    racy = {"tile_y": (4,), "tile_x": (8,), "unroll": 1}
    records = [rec(lucky, 1.0), rec(steady, 1.5), rec(racy, 0.5)]
    again = [(lucky, 2.0), (steady, 1.4), (lucky, 2.2), (steady, 1.6), (racy, 0.4)]
    records += [dataclasses.replace(rec(c, ms), remeasure=True) for c, ms in again]
    records.append(dataclasses.replace(rec(racy, None, "wrong"), remeasure=True))
    # through a log: the flag is written where it is set, and read back
    w = LogWriter(str(tmp_path / "again.jsonl"))
    for r in records:
        w.append(r)
    lines = (tmp_path / "again.jsonl").read_text().splitlines()
    assert ['"remeasure"' in line for line in lines] == [False] * 3 + [True] * 6
    read = read_log(str(tmp_path / "again.jsonl"))
    assert [r.remeasure for r in read] == [r.remeasure for r in records]
    best = best_records(read)[task.key()]
    assert best.config == steady and best.device_ms == 1.5
    assert best.gflops == pytest.approx(task.flop / 1.5 / 1e6)


@pytest.mark.opencl
def test_the_fastest_configs_are_measured_again_until_each_has_its_share(device, tmp_path):
    """``verify=3``: after the trials, the three fastest configs (by the median of their
    measurements) are measured again until each of them has ``VERIFY_TIMES``; the result's
    best is a config measured that often, at its median."""
    log = tmp_path / "verify.jsonl"
    res = run_tune(tmpl("gemm_tiny"), log, verify=3)
    recs = read_log(str(log))
    trials = [r for r in recs if not r.remeasure]
    assert len(trials) == 8 and len({config_key(r.config) for r in trials}) == 8
    assert res.counts["ok"] == 8 and res.counts["remeasured"] == len(recs) - 8 >= 6
    times = collections.defaultdict(list)
    for r in recs:
        times[config_key(r.config)].append(r.device_ms)
    ranked = sorted(times, key=lambda k: float(np.median(times[k])))
    assert all(len(times[k]) == VERIFY_TIMES for k in ranked[:3]), times
    assert config_key(res.best.config) == ranked[0]
    assert res.best.device_ms == pytest.approx(float(np.median(times[ranked[0]])))
    # a resumed run measures nothing again: the fastest have their share
    again = run_tune(tmpl("gemm_tiny"), log, verify=3, resume=True)
    assert again.counts == {"skipped": 8}


@pytest.mark.opencl
def test_source_writes_cl_and_launch_json_that_match(tiny_log, tmp_path, capsys):
    import pyopencl as cl

    from tensorsched.cli import main

    out = tmp_path / "src"
    assert main(["source", "--log", str(tiny_log), "--out", str(out)]) == 0
    files = sorted(os.listdir(out))
    assert files == [
        "gemm_gemm_tiny_16x16x16.cl",
        "gemm_gemm_tiny_16x16x16.json",
    ]
    text = (out / files[0]).read_text()
    meta = json.loads((out / files[1]).read_text())
    best = min((r for r in read_log(str(tiny_log)) if r.status == "ok"), key=lambda r: r.device_ms)
    assert meta["config"] == json.loads(config_key(best.config))
    assert meta["device_ms"] == best.device_ms
    assert [a["name"] for a in meta["arguments"]] == ["A", "B", "C"]
    assert len(meta["kernels"]) == 1
    k = meta["kernels"][0]
    (ty,), (tx,) = best.config["tile_y"], best.config["tile_x"]
    assert k["local_size"] == [tx, ty] and k["global_size"] == [16, 16]
    assert f"void {k['name']}(" in text
    assert f"reqd_work_group_size({tx}, {ty}, 1)" in text
    assert k["arguments"] == ["A", "B", "C"]

    # ready to embed: build the .cl with plain pyopencl and launch it as the JSON says
    dev = current_device()
    prg = cl.Program(dev.context, text).build(options=meta["build_options"])
    rng = np.random.default_rng(1)
    host = {a["name"]: rng.uniform(-1, 1, a["shape"]).astype(a["dtype"]) for a in meta["arguments"]}
    mf = cl.mem_flags
    bufs = {
        n: cl.Buffer(dev.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=v)
        for n, v in host.items()
    }
    getattr(prg, k["name"])(
        dev.queue, k["global_size"], k["local_size"], *[bufs[n] for n in k["arguments"]]
    )
    c = np.empty_like(host["C"])
    cl.enqueue_copy(dev.queue, c, bufs["C"])
    np.testing.assert_allclose(c, host["A"].astype(np.float64) @ host["B"], rtol=1e-5, atol=1e-5)

    assert main(["source", "--log", str(tmp_path / "none.jsonl"), "--out", str(out)]) == 2
    assert "has no correct trial" in capsys.readouterr().err


def _children(pid):
    """Live child processes of ``pid`` (Linux /proc), zombies left out."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(d))
    return out


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.opencl
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc for the worker processes")
@pytest.mark.parametrize("strategy", ["grid", "model"])
def test_kill_9_midway_then_resume_logs_every_config_once(device, tmp_path, strategy):
    log = tmp_path / "killed.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "tensorsched.cli",
        "tune",
        "gemm",
        "--shape",
        "16,16,16",
        "--import",
        "tune_templates",
        "--template",
        "gemm_slow",
        "--log",
        str(log),
        "--timeout",
        "20",
        "--repeat",
        "2",
        "--strategy",
        strategy,
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=str(tmp_path),
        env=subprocess_env(TS_TEST_SLOW="0.4"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    workers = []
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            if log.exists() and log.read_bytes().count(b"\n") >= 3:
                break
            assert proc.poll() is None, "the tuner ended before it was killed"
            time.sleep(0.05)
        else:
            pytest.fail("no 3 trials logged within 90 s")
        workers = _children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        # its worker processes notice and exit (no orphans left behind)
        deadline = time.time() + 10
        while time.time() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.1)
        assert workers and not any(_alive(p) for p in workers), workers
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of this test's group
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait(10)

    first = log.read_bytes()
    n_first = len(read_log(str(log)))
    assert 3 <= n_first < 8
    # a kill during a write (or a crash of the machine) can leave a cut line: add one
    with open(log, "ab") as f:
        f.write(first.splitlines()[0][:57])
    damaged = log.read_bytes()

    again = subprocess.run(
        cmd + ["--resume"],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        env=subprocess_env(TS_TEST_SLOW="0"),
        timeout=120,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert "skipped a damaged log line" in again.stderr
    assert f"skipped {n_first}" in again.stdout
    assert "configs/min" in again.stdout  # the tuning rate is printed
    assert log.read_bytes().startswith(damaged)  # appended only
    with pytest.warns(UserWarning, match="skipped a damaged log line"):
        recs = read_log(str(log))
    keys = [config_key(r.config) for r in recs if not r.remeasure]
    space = tmpl("gemm_slow").space()
    assert sorted(keys) == sorted(config_key(p) for p in space.points())  # each once
    assert all(r.status == "ok" for r in recs)
    # then the fastest configs were measured again, VERIFY_TIMES times each in all
    again = collections.Counter(config_key(r.config) for r in recs if r.remeasure)
    assert again and all(n == VERIFY_TIMES - 1 for n in again.values()), again


@pytest.mark.opencl
def test_full_disk_during_tuning_stops_with_log_error_and_resume_finishes(
    device, tmp_path, monkeypatch
):
    log = tmp_path / "full.jsonl"
    real_write = os.write
    appended = []

    def write(fd, data):
        try:
            is_log = (
                os.path.samefile(f"/proc/self/fd/{fd}", log)
                if os.path.isdir("/proc")
                else data.startswith((b"{", b"\n{"))
            )
        except OSError:
            is_log = False
        if is_log:
            if len(appended) >= 3:
                raise OSError(28, "No space left on device")
            appended.append(data)
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    with pytest.raises(LogError, match="No space left on device"):
        run_tune(tmpl("gemm_tiny"), log)
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing damaged: no warning
        recs = read_log(str(log))
    assert [r.config for r in recs] == list(tmpl("gemm_tiny").space().points())[:3]
    res = run_tune(tmpl("gemm_tiny"), log, resume=True)
    assert res.counts == {"skipped": 3, "ok": 5}
    assert sorted(config_key(r.config) for r in read_log(str(log))) == sorted(
        config_key(p) for p in tmpl("gemm_tiny").space().points()
    )


# ---------------------------------------------------------------------------- the pipeline


@pytest.mark.opencl
def test_runner_never_instantiates_a_template_and_keeps_inputs_on_the_device(
    device, tmp_path, monkeypatch
):
    """The build pool lowers and builds each candidate once; the measuring worker loads the
    artifact (no template call, no lowering) and makes the task's inputs once."""
    count = tmp_path / "count.txt"
    monkeypatch.setenv("TS_TEST_COUNT", str(count))
    log = tmp_path / "counted.jsonl"
    res = run_tune(Task("gemm", "gemm_counted", SHAPE), log, n_build=2)
    assert res.counts == {"ok": 8}, res.counts
    lines = [line.split() for line in count.read_text().splitlines()]
    assert all(role == "other" for _, role in lines), lines
    # outside the tuner's own process (the space, the order, the inputs' shapes): one
    # instantiation per candidate, in the build pool
    assert sum(int(pid) != os.getpid() for pid, _ in lines) == 8
    assert res.stats["uploads"] == 1 and res.stats["restarts"] == 0, res.stats
    assert res.stats.get("built_by_runner", 0) == 0
    assert res.stats["repeats"] == 8 * 2  # repeat=2: every run timed twice
    assert res.rate > 0 and res.on_device == 8


def test_module_artifact_loads_without_lowering(device, monkeypatch):
    import pickle

    import tensorsched.schedules.lower as lower_mod
    from tensorsched.runtime.module import ModuleArtifact, OpenCLModule

    s, args, _ = tmpl("gemm_tiny").instantiate({"tile_y": (8,), "tile_x": (4,), "unroll": 1})
    mod = ts.build(s, args, target="opencl")
    rng = np.random.default_rng(2)
    a, b = (rng.uniform(-1, 1, (16, 16)).astype("float32") for _ in range(2))

    def no_lower(*a, **k):
        raise AssertionError("loading an artifact must not lower")

    monkeypatch.setattr(lower_mod, "lower", no_lower)
    for binary in (False, True):
        art = mod.export(binary=binary)
        assert (art.binary is not None) == binary
        data = art.dumps()
        loaded = OpenCLModule.from_artifact(pickle.loads(pickle.dumps(data)), cache=False)
        assert loaded.get_source() == mod.get_source()
        assert [k.name for k in loaded.source.kernels] == [k.name for k in mod.source.kernels]
        c = np.full((16, 16), np.nan, dtype="float32")
        loaded(a, b, c)
        np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
        assert loaded.func.outputs[0] is loaded.func.args[-1]
    with pytest.raises(TensorschedError, match="not a module artifact"):
        ModuleArtifact.loads(pickle.dumps({"a": 1}))


def test_time_evaluator_budget_stops_after_min_repeats(device):
    import pyopencl.array as cla

    s, args, _ = tmpl("gemm_tiny").instantiate()
    mod = ts.build(s, args, target="opencl")
    q = device.queue
    arrs = [cla.to_device(q, np.ones((16, 16), "float32")) for _ in range(3)]
    assert len(mod.time_evaluator(repeat=7, budget_ms=0)(*arrs).device_times) == 3
    assert len(mod.time_evaluator(repeat=2, budget_ms=0)(*arrs).device_times) == 2
    assert len(mod.time_evaluator(repeat=7, budget_ms=1e6)(*arrs).device_times) == 7
    assert len(mod.time_evaluator(repeat=5)(*arrs).device_times) == 5


def test_output_check_on_the_device_catches_errors_and_nan(device):
    import pyopencl.array as cla

    from tensorsched.tune.check import OutputCheck, poison

    if "cl_khr_fp64" not in device.cl_device.extensions:
        pytest.skip("the device has no float64")
    q = device.queue
    rng = np.random.default_rng(3)
    ref = rng.uniform(-1, 1, (512, 512))
    check = OutputCheck(q, ref, "float32", device_side=True)
    assert check.on_device
    out = cla.to_device(q, ref.astype("float32"))
    assert check(out) is None
    assert check.device_error(out) < 1e-7
    bad = ref.astype("float32")
    bad[300, 7] += 1e-3
    out.set(bad)
    assert "relative error" in check(out)
    bad[300, 7] = np.nan
    out.set(bad)
    assert check.device_error(out) == float("inf")
    assert "unwritten (NaN) elements" in check(out)
    poison(q, out)
    assert np.isnan(out.get()).all()
    # a small output is compared on the host
    assert not OutputCheck(q, ref[:4, :4], "float32").on_device


@pytest.mark.opencl
def test_measure_one_recovers_from_inputs_spoilt_on_the_device(device):
    """An earlier kernel that wrote out of bounds could spoil the inputs that stay on the
    device: a candidate found wrong is checked once more on inputs copied in afresh."""
    from tensorsched.tune.measure import Worker, build_candidate, measure_one, signature

    task = tmpl("gemm_tiny")
    td = json.loads(task.key())
    config = {"tile_y": (4,), "tile_x": (8,), "unroll": 0}
    status, _, art, mod = build_candidate(td, config)
    assert status == "ok"
    worker = Worker()
    bench = worker.prepare(td, signature(mod.func.args))
    bench.inputs[0].fill(np.float32(0))  # spoilt
    res = measure_one(td, config, art.dumps(), 2, None, worker)
    assert res["status"] == "ok", res
    assert worker.uploads == 1
    # a wrong kernel stays wrong; without an artifact the worker builds the candidate itself
    wrong = json.loads(tmpl("gemm_planted_wrong").key())
    res = measure_one(wrong, {"tile_y": (4,), "tile_x": (4,), "bug": 1}, None, 2, None, worker)
    assert res["status"] == "wrong" and "differs from numpy" in res["error"]
    res = measure_one(wrong, {"tile_y": (4,), "tile_x": (4,), "bug": 0}, None, 2, None, worker)
    assert res["status"] == "ok"
    assert worker.uploads == 2  # one bench per task


class Overlap:
    """A proposer, a build pool and a runner (no device): each build and each measurement
    takes 50 ms in a thread of its own, each proposal 20 ms; each proposal records whether a
    build or a measurement ran meanwhile."""

    restarts, n, generation = 0, 1, 0

    def __init__(self, configs, task, slow=None):
        self.configs = list(configs)
        self.slow = dict(slow or {})  # config key -> seconds its build takes
        self.result = {"status": "ok", "device_ms": 1.0, "gflops": task.flop / 1e6}  # 1 ms
        self.busy = 0  # builds and measurements running now
        self.lock = threading.Lock()
        self.during = []
        self.threads = cf.ThreadPoolExecutor(4)

    def _work(self, value, seconds=0.05):
        with self.lock:
            self.busy += 1
        time.sleep(seconds)
        with self.lock:
            self.busy -= 1
        return value

    def next(self):
        if not self.configs:
            return None
        before = self.busy > 0
        time.sleep(0.02)  # a proposal's own time (the model strategy's: tens of ms)
        self.during.append(before or self.busy > 0)
        return self.configs.pop(0)

    def observe(self, config, status, gflops):
        pass

    def state(self):
        return ""

    def submit(self, task_dict, config):
        seconds = self.slow.get(config_key(config), 0.05)
        return self.threads.submit(self._work, ("ok", "", b"artifact"), seconds)

    def measure(self, task_dict, config, repeat, artifact, budget_ms, upcoming):
        return self._work(dict(self.result))

    def start(self):
        pass

    def close(self):
        pass

    def renew(self):
        pass


def test_a_gpu_search_proposes_while_it_builds_and_measures(tmp_path):
    """Not quiet (a GPU device), the search measures after the first few proposals and then
    proposes while it waits for a build or a measurement; every trial is logged once (in
    the order the builds end, here the proposer's)."""
    task = tmpl("gemm_tiny")
    space = task.space()
    configs = list(space.points())
    fake = Overlap(configs, task)
    limits = DeviceLimits("fake / gpu", 256, (256, 256, 64), 48 * 1024)
    log = str(tmp_path / "g.jsonl")
    search = Search(task, space, fake, set(), LogWriter(log), fake, fake, limits, quiet=False)
    search.run(budget=len(configs), ahead=4, repeat=1, budget_ms=None, progress=False)
    assert [r.config for r in read_log(log)] == configs
    assert fake.during[0] is False  # the first: nothing running yet
    assert all(fake.during[1:])  # the rest overlap a build or a measurement
    assert search.stats["proposed"] == len(configs) and search.stats["runner_s"] > 0


def test_a_call_of_device_arrays_skips_the_full_checks_and_stays_right(device, monkeypatch):
    """Device arrays that the module takes as they are go straight to the launch (the full
    path's checks are most of our cost of a small kernel's call); anything else, a view at
    an offset, a numpy array, a wrong shape, takes the full path with its copies and errors."""
    import pyopencl.array as cla

    from tensorsched.runtime.module import OpenCLModule

    q = device.queue
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((40, 64), "float32"), rng.standard_normal((64, 48), "float32")
    ref = x.astype(np.float64) @ y
    # pad_b: B is copied by a kernel of its own into a temporary, made by the first call
    s, args, _ = Task("gemm", "cpu", (40, 48, 64)).instantiate({"pad_b": True})
    mod = ts.build(s, args, target="opencl")
    assert mod.source.temps
    full = []
    checked = OpenCLModule._arguments
    monkeypatch.setattr(
        OpenCLModule, "_arguments", lambda self, a: full.append(1) or checked(self, a)
    )
    dx, dy = cla.to_device(q, x), cla.to_device(q, y)
    for _ in range(2):
        out = cla.to_device(q, np.full((40, 48), np.nan, "float32"))
        mod(dx, dy, ts.nd.NDArray(out, ts.opencl(0)) if _ else out)
        np.testing.assert_allclose(out.get(), ref, rtol=1e-4, atol=1e-4)
    assert len(full) == 1  # the first call made the temporary
    # an output at an offset of a larger buffer: the full path copies it back
    big = cla.to_device(q, np.full((41, 48), np.nan, "float32"))
    mod(dx, dy, big[1:])
    np.testing.assert_allclose(big.get()[1:], ref, rtol=1e-4, atol=1e-4)
    assert np.isnan(big.get()[0]).all()
    host = np.full((40, 48), np.nan, "float32")
    mod(x, y, host)
    np.testing.assert_allclose(host, ref, rtol=1e-4, atol=1e-4)
    assert len(full) == 3
    with pytest.raises(RuntimeCallError, match="has shape"):
        mod(dx, cla.to_device(q, y[:, :40].copy()), out)


@pytest.mark.opencl
def test_a_warmed_module_has_launched_each_kernel_and_runs_right_after(device):
    """``OpenCLModule.warm`` launches each kernel of a module once, one work-group over zeros
    (what the tuner's build workers do on a CPU device, so that PoCL's compile for the
    work-group size happens there); the module then computes right. A module of symbolic
    sizes is not warmed."""
    from tensorsched.runtime.module import OpenCLModule

    s, args, _ = Task("gemm", "cpu", (37, 45, 29)).instantiate({"pad_b": True})
    mod = ts.build(s, args, target="opencl")
    assert len(mod.source.kernels) == 2  # B's copy, then the product
    launched = []
    kernels = mod.kernels
    mod.kernels = [
        (lambda k: lambda q, g, loc, *a: launched.append((g, loc)) or k(q, g, loc, *a))(k)
        for k in kernels
    ]
    assert mod.warm() is True
    assert [g == loc for g, loc in launched] == [True, True]  # one work-group each
    mod.kernels = kernels
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((37, 29), "float32"), rng.standard_normal((29, 45), "float32")
    out = np.full((37, 45), np.nan, "float32")
    mod(a, b, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: A[i] * 2.0, name="B")
    sym = OpenCLModule(ts.lower(ts.create_schedule(B.op), [A, B], name="twice"))
    assert sym.warm() is False
