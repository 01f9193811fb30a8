"""``ts.autotvm``: TVM's AutoTVM tutorial templates (``define_knob`` v1 and ``define_split``)
as written, their spaces against what TVM documents, tuning a few trials on the CPU OpenCL
device (TVM's ``"llvm"``), ``apply_history_best`` picking the log's best, the fallback, and
the errors a user can cause. Every kernel is checked against numpy on random data into an
output poisoned with NaN."""

import json
import logging
import math

import numpy as np
import pytest

import tensorsched as ts
from tensorsched import autotvm, te
from tensorsched.errors import ScheduleError, TensorschedError
from tensorsched.ops.space import Config
from tensorsched.runtime.device import DeviceError, current_device
from tensorsched.runtime.tvm_api import cpu_opencl_device
from tensorsched.tune.autotvm import AutotvmConfigError, AutotvmError, ConfigEntity, SplitEntity
from tensorsched.tune.log import ranked_configs, read_log
from tensorsched.tune.task import Task, TaskError


def _matmul(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


@autotvm.template("test/matmul_v1")
def matmul_v1(N, L, M, dtype):
    A, B, C = _matmul(N, L, M, dtype)
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = autotvm.get_config()
    cfg.define_knob("tile_y", [1, 2, 4, 8, 16])
    cfg.define_knob("tile_x", [1, 2, 4, 8, 16])
    yo, yi = s[C].split(y, cfg["tile_y"].val)
    xo, xi = s[C].split(x, cfg["tile_x"].val)
    s[C].reorder(yo, xo, k, yi, xi)
    return s, [A, B, C]


@autotvm.template("test/matmul")
def matmul(N, L, M, dtype):
    A, B, C = _matmul(N, L, M, dtype)
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, k, yi, xi)
    cfg.add_flop(2 * N * L * M)
    return s, [A, B, C]


@autotvm.template("test/knob_twice")
def knob_twice(n):
    A, B, C = _matmul(n, n, n, "float32")
    cfg = autotvm.get_config()
    cfg.define_knob("t", [1, 2])
    cfg.define_knob("t", [1, 4])
    return te.create_schedule(C.op), [A, B, C]


@autotvm.template("test/undefined_knob")
def undefined_knob(n):
    A, B, C = _matmul(n, n, n, "float32")
    s = te.create_schedule(C.op)
    autotvm.get_config()["tile"]
    return s, [A, B, C]


@autotvm.template("test/reorder_annotate")
def reorder_annotate(n):
    A, B, C = _matmul(n, n, n, "float32")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    cfg = autotvm.get_config()
    cfg.define_split("tile_x", x, num_outputs=2, policy="power2", max_factor=4)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    cfg.define_reorder("order", [y, xo, k], policy="all")
    cfg["order"].apply(s, C, [y, xo, k])
    cfg.define_annotate("ann", [xi], policy="try_unroll_vec")
    cfg["ann"].apply(s, C, [xi])
    return s, [A, B, C]


def _space(define):
    cfg = ConfigEntity(Config(), "test")
    define(cfg)
    return cfg


def _sizes(cfg, name):
    return [e.size for e in cfg.space_map[name].entities]


def _check(func, N, L, M, seed=0):
    """Run ``func`` on random inputs into a NaN-poisoned output; compare with numpy."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (N, L)).astype(np.float32)
    b = rng.uniform(-1, 1, (L, M)).astype(np.float32)
    c = np.full((N, M), np.nan, dtype=np.float32)
    func(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- spaces


def test_split_policies_list_what_tvm_documents():
    cfg = _space(lambda c: c.define_split("t", 12, num_outputs=2))  # factors: the default
    assert _sizes(cfg, "t") == [[-1, 1], [-1, 2], [-1, 3], [-1, 4], [-1, 6], [-1, 12]]
    cfg = _space(lambda c: c.define_split("t", 12, policy="power2", num_outputs=2))
    assert _sizes(cfg, "t") == [[-1, 1], [-1, 2], [-1, 4], [-1, 8]]
    cfg = _space(lambda c: c.define_split("t", 12, policy="verbose", num_outputs=2))
    assert _sizes(cfg, "t") == [[-1, d] for d in (1, 2, 3, 4, 6, 8, 12)]
    cfg = _space(
        lambda c: c.define_split(
            "t", 16, policy="candidate", num_outputs=3, candidate=[[-1, 4, 2], [1, 8, 2]]
        )  # fmt: skip
    )
    assert _sizes(cfg, "t") == [[-1, 4, 2], [1, 8, 2]]
    cfg = _space(lambda c: c.define_split("t", 16, num_outputs=2, max_factor=4))
    assert _sizes(cfg, "t") == [[-1, 1], [-1, 2], [-1, 4]]
    cfg = _space(lambda c: c.define_split("t", 16, num_outputs=2, filter=lambda e: e.size[1] > 2))
    assert _sizes(cfg, "t") == [[-1, 4], [-1, 8], [-1, 16]]
    # the counts of TVM's test_autotvm_space.py
    counts = {}
    for extent in (128, 224, 256):
        for policy in ("factors", "power2", "verbose"):
            n = 2 if extent == 128 else 3
            cfg = _space(lambda c: c.define_split("t", extent, policy=policy, num_outputs=n))
            counts[extent, policy] = len(cfg.space_map["t"])
    assert counts[128, "factors"] == 8
    assert [counts[256, p] for p in ("factors", "power2", "verbose")] == [45, 45, 45]
    assert [counts[224, p] for p in ("factors", "power2", "verbose")] == [63, 36, 84]


def test_config_space_size_and_listing():
    task = autotvm.task.create("test/matmul", args=(16, 8, 12, "float32"), target="opencl")
    assert len(task.config_space) == 5 * 6  # factors of 16 and of 12
    text = str(task.config_space)
    assert text.splitlines() == [
        "ConfigSpace (len=30, range_length=30, space_map=",
        "   0 tile_y: Split(policy=factors, product=16, num_outputs=2) len=5",
        "   1 tile_x: Split(policy=factors, product=12, num_outputs=2) len=6",
        ")",
    ]
    assert task.args == (16, 8, 12, "float32")
    assert task.workload == ("test/matmul", 16, 8, 12, "float32")
    assert task.flop == 2 * 16 * 8 * 12  # cfg.add_flop
    v1 = autotvm.task.create("test/matmul_v1", args=(16, 8, 12, "float32"), target="opencl")
    assert len(v1.config_space) == 25 and v1.flop == 2 * 16 * 8 * 12  # counted
    assert "OtherOption([1, 2, 4, 8, 16]) len=5" in str(v1.config_space)


def test_task_keys_and_logs_of_other_kinds_unchanged():
    gemm = Task("gemm", "cpu", (64, 64, 64))
    assert "args" not in gemm.to_dict() and '"args"' not in gemm.key()
    assert Task.from_dict(json.loads(gemm.key())) == gemm
    t = Task("autotvm", "test/matmul", (), args=(16, 8, 12, "float32"))
    back = Task.from_dict(json.loads(json.dumps(t.to_dict())))  # lists from JSON
    assert back == t and back.key() == t.key() and back.args == (16, 8, 12, "float32")
    for hostile in ([{"a": 1}], ["x" * 10_000], [float("nan")], [[[[[[1]]]]]], [2**80]):
        with pytest.raises(TaskError):
            Task("autotvm", "test/matmul", (), args=tuple(hostile))
    with pytest.raises(TaskError, match="no args"):
        Task("gemm", "cpu", (64, 64, 64), args=(1,))


def test_split_entity_applies_to_a_split_stage():
    A, B, C = _matmul(24, 8, 20, "float32")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    yo, yi = s[C].split(y, factor=12)  # a loop made by a split, split again
    yio, yii = SplitEntity([-1, 3]).apply(s, C, yi)
    xo, xm, xi = SplitEntity([-1, 2, 5]).apply(s, C, x)
    s[C].reorder(yo, xo, yio, xm, yii, xi)
    _check(ts.build(s, [A, B, C], target="python"), 24, 8, 20)
    other = te.compute((4,), lambda i: A[i, 0] * 2, name="D")
    with pytest.raises(ScheduleError):
        SplitEntity([-1, 2]).apply(s, C, te.create_schedule(other.op)[other].op.axis[0])


def test_reorder_and_annotate_knobs():
    task = autotvm.task.create("test/reorder_annotate", args=(8,), target="opencl")
    space = task.config_space
    assert len(space.space_map["order"]) == 6 and len(space.space_map["ann"]) == 3
    assert len(space) == 3 * 6 * 3
    for i in range(0, len(space), 7):  # every 7th point, on the exact backend
        s, bufs = task.instantiate(space.get(i))
        _check(ts.build(s, bufs, target="python"), 8, 8, 8, seed=i)


def test_fallback_without_a_log_is_logged_once(caplog):
    with caplog.at_level(logging.WARNING, logger="autotvm"):
        for _ in range(2):
            s, bufs = matmul(12, 7, 10, "float32")
    warned = [r for r in caplog.records if "fallback configuration" in r.getMessage()]
    assert len(warned) == 1 and "test/matmul" in warned[0].getMessage()
    _check(ts.build(s, bufs, target="python"), 12, 7, 10)


# ---------------------------------------------------------------------------- errors


def test_errors_a_user_can_cause(tmp_path):
    with pytest.raises(AutotvmError, match="unknown autotvm template 'nope'.*@autotvm.template"):
        autotvm.task.create("nope", args=(1,), target="opencl")
    with pytest.raises(AutotvmError, match="outside a template"):
        autotvm.get_config()
    with pytest.raises(AutotvmConfigError, match="'test/knob_twice', knob 't' is defined twice"):
        knob_twice(4)
    with pytest.raises(AutotvmConfigError, match=r"cfg\['tile'\].*not defined.*define it"):
        undefined_knob(4)
    with pytest.raises(AutotvmError, match="keyword arguments"):
        matmul(N=4, L=4, M=4, dtype="float32")
    with pytest.raises(AutotvmError, match="cannot be a template argument"):
        autotvm.task.create("test/matmul", args=(np.zeros(2), 4, 4, "float32"), target="opencl")
    with pytest.raises(AutotvmConfigError, match="unknown policy 'fast'"):
        _space(lambda c: c.define_split("t", 12, policy="fast"))
    missing = tmp_path / "missing.log"
    with pytest.raises(AutotvmError, match="no tuning log at .*missing.log.*log_to_file"):
        autotvm.apply_history_best(str(missing))
    hostile = tmp_path / "hostile.log"
    hostile.write_text('{"task": {"kind": "autotvm", "template": "x", "shape": []}}\nnot json\n')
    with pytest.raises(AutotvmError, match="holds no tuning record"):
        autotvm.apply_history_best(str(hostile))
    with pytest.raises(AutotvmError, match="measures on this host only"):
        autotvm.measure_option(builder="local", runner="rpc")
    assert all(issubclass(c, TensorschedError) for c in (AutotvmError, AutotvmConfigError))


# ---------------------------------------------------------------------------- tuning


@pytest.fixture(scope="module")
def cpu_device():
    try:
        current_device()
        return cpu_opencl_device()
    except (DeviceError, ImportError) as exc:
        pytest.skip(f"target 'llvm' is the CPU OpenCL device: {exc}")


OPTION = dict(builder=autotvm.LocalBuilder(n_parallel=2), runner=autotvm.LocalRunner(number=2))


def _tune_and_apply(tuner_class, name, template, shape, n_trial, log):
    task = autotvm.task.create(name, args=(*shape, "float32"), target="llvm")
    tuner = tuner_class(task)
    tuner.tune(
        n_trial=n_trial,
        measure_option=autotvm.measure_option(**OPTION),
        callbacks=[autotvm.callback.log_to_file(str(log))],
    )
    records = [r for r in read_log(str(log)) if r.task_key() == task.ts_task.key()]
    assert len({json.dumps(r.config, sort_keys=True) for r in records}) == n_trial
    assert all(r.status == "ok" for r in records)
    best = ranked_configs(records)[0]
    assert tuner.best_config.config.values == best.config
    with autotvm.apply_history_best(str(log)) as history:
        with ts.target.Target("llvm"):
            assert history.query(task.ts_task, task.device_name) == best.config
            s, bufs = template(*shape, "float32")
            func = ts.build(s, bufs)
    _check(func, *shape)
    return task, best


@pytest.mark.opencl
def test_tune_v1_define_knob(cpu_device, tmp_path):
    _tune_and_apply(
        autotvm.tuner.GridSearchTuner, "test/matmul_v1", matmul_v1, (37, 53, 29), 4,
        tmp_path / "v1.log",
    )  # fmt: skip


@pytest.mark.opencl
def test_tune_define_split_and_apply_the_best(cpu_device, tmp_path):
    log = tmp_path / "matmul.log"
    _, best = _tune_and_apply(
        autotvm.tuner.RandomTuner, "test/matmul", matmul, (64, 64, 64), 5, log
    )
    assert best.config["tile_y"][0] in [d for d in range(1, 65) if 64 % d == 0]
    assert math.isfinite(best.device_ms) and best.gflops > 0
