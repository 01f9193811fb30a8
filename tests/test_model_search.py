"""The model strategy of the tuner: features, a planted cost function found in far fewer trials
than random search, transfer from a log of another shape, configs predicted for shapes no log
has, budgets (``--time``, ``--early-stop``)."""

import json
import math
import os
import time

import numpy as np
import pytest
import tune_templates  # noqa: F401  (registers the test templates)

import tensorsched as ts
from tensorsched.errors import TensorschedError
from tensorsched.ops.gemm import gemm
from tensorsched.runtime.device import DeviceLimits, current_limits
from tensorsched.tune import dispatch, features, model, register_template
from tensorsched.tune.ahead import ProposeAhead
from tensorsched.tune.features import Lowering, SpaceFeatures, lower_features
from tensorsched.tune.log import read_log
from tensorsched.tune.model import ModelProposer, fit_config, history, nearest_bests
from tensorsched.tune.record import config_key
from tensorsched.tune.task import Task
from tensorsched.tune.tuner import parse_duration, tune, worker_modules

LIMITS = DeviceLimits("test / planted", 1024, (1024, 1024, 1024), 64 * 1024)
TILES = [(2**k,) for k in range(8)]  # 1 .. 128


@register_template("gemm", "gemm_planted_cost")
def gemm_planted_cost(cfg, M, N, K, dtype="float32", epilogue=()):
    """A GEMM whose work-group is tile_y x tile_x (over 1024 work-items: invalid on
    ``LIMITS``), plus knobs that change nothing but the planted cost."""
    (ty,) = cfg.define_split("tile_y", M, 2, policy="candidates", candidates=TILES)
    (tx,) = cfg.define_split("tile_x", N, 2, policy="candidates", candidates=TILES)
    cfg.define_knob("unroll", (0, 1, 2, 3))
    cfg.define_knob("vec", (1, 2, 4, 8))
    cfg.define_knob("order", (0, 1, 2, 3, 4, 5))
    A, B, C = gemm(M, N, K, "NN", dtype)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    by, tyy = s[C].split(i, factor=ty)
    bx, txx = s[C].split(j, factor=tx)
    s[C].reorder(by, bx, tyy, txx)
    s[C].bind(by, ts.thread_axis("blockIdx.y"))
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[C].bind(tyy, ts.thread_axis("threadIdx.y"))
    s[C].bind(txx, ts.thread_axis("threadIdx.x"))
    return s, [A, B, C]


OPTIMUM = {"tile_y": (8,), "tile_x": (16,), "unroll": 2, "vec": 4, "order": 4}


def planted_gflops(c):
    """A smooth function of the knobs with one optimum, ``OPTIMUM``."""
    (ty,), (tx,) = c["tile_y"], c["tile_x"]
    g = 100 * math.exp(-0.5 * ((math.log2(ty) - 3) ** 2 + (math.log2(tx) - 4) ** 2))
    g *= 1.0 if c["unroll"] == 2 else 0.8
    g *= 1 - 0.1 * abs(math.log2(c["vec"]) - 2)
    g *= 1.0 if c["order"] == 4 else 0.9
    return g


def valid(c):
    return c["tile_y"][0] * c["tile_x"][0] <= LIMITS.max_work_group_size


def model_trials_to_optimum(task, seed, limit=600):
    prop = ModelProposer(task, task.space(), LIMITS, (), seed=seed)
    for n in range(1, limit + 1):
        c = prop.next()
        assert c is not None and valid(c), c  # the IR filter drops the invalid ones
        if c == OPTIMUM:
            return n
        prop.observe(c, "ok", planted_gflops(c))
    return limit + 1


def random_trials_to_optimum(space, seed):
    order = np.random.default_rng(seed).permutation(space.size())
    n = 0
    for i in order:
        c = space.point(int(i))
        if valid(c):
            n += 1
            if c == OPTIMUM:
                return n
    raise AssertionError("the optimum is not in the space")


# ---------------------------------------------------------------------------- features


def test_config_features_of_known_configs():
    task = Task("gemm", "cpu", (4095, 257, 1023))
    f = SpaceFeatures(task, task.space()).features(
        {"tile_y": (1, 4), "tile_x": (1, 32), "vec": 16, "tile_k": (4,)}
    )
    assert f["shape.1"] == pytest.approx(math.log2(257))
    assert (f["tile_x.p0"], f["tile_x.p1"], f["tile_x.prod"]) == (0.0, 5.0, 5.0)
    assert f["tile_x.cover1"] == pytest.approx(257 / 288)  # 9 tiles of 32 for 257 columns
    assert f["tile_y.cover0"] == pytest.approx(4095 / 4096)
    assert f["tile_k.cover2"] == pytest.approx(1023 / 1024)
    assert f["vec.val"] == 4.0 and f["vec.idx"] == 0.0


def test_ir_features_of_known_configs():
    limits = DeviceLimits("test / cpu", 4096, (4096, 4096, 4096), 1 << 20)
    # (A's 16 rows a work-item, 2 KiB apart, would be copied into padded rows by default)
    cfg = {"tile_y": (2, 16), "tile_x": (2, 16), "vec": 16, "tile_k": (4,), "pad_a": False}
    f, why = lower_features(Task("gemm", "cpu", (512, 512, 512)), cfg, limits)
    assert why is None
    assert f["ir.wg_size"] == 4  # 2 x 2 work-items
    assert f["ir.log2_work_items"] == math.log2((512 // 16) ** 2)
    assert f["ir.log2_flop_item"] == math.log2(2 * 512**3 / (512 // 16) ** 2)
    assert f["ir.max_lanes"] == 16
    assert f["ir.guard_fraction"] == 0.0  # the tiles divide the shape: no guard
    assert f["ir.log2_private_bytes"] == math.log2(16 * 16 * 4)  # the register tile
    assert f["ir.occupancy"] == 1.0
    ragged = Task("gemm", "cpu", (512, 272, 512))  # 8.5 tiles of 32 columns, 17 vectors
    g, why = lower_features(ragged, {**cfg, "tail": "guard"}, limits)
    assert why is None and g["ir.guard_fraction"] == 1.0  # every store under an if
    g, why = lower_features(ragged, cfg, limits)  # the default tail there: the last tile shifts
    assert why is None and g["ir.guard_fraction"] == 0.0
    # proven invalid from the IR, without building: 16 x 128 work-items over 1024
    _, why = lower_features(
        Task("gemm", "gemm_planted_cost", (256, 256, 16)),
        {**OPTIMUM, "tile_y": (16,), "tile_x": (128,)},
        LIMITS,
    )
    assert why == "work-group of 2048 over the device's 1024"


def test_work_items_a_guard_leaves_idle_are_not_counted_as_working():
    """A CPU GEMM tile of 4 work-items x 32 columns at N = 64: the two work-items past the
    shape skip the whole body (``if (threadIdx.x * 32 < 64)``), so on a CPU device a
    work-item loops half as much on average as with 2 work-items, and ``rescaled_ms`` sees
    the same work in both."""
    limits = DeviceLimits("test / cpu", 4096, (4096, 4096, 4096), 1 << 20)
    task = Task("gemm", "cpu", (3136, 64, 576))
    cfg = {"tile_y": (2, 8), "tile_k": (8,), "vec": 16, "pad_a": False}
    wide, why = lower_features(task, {**cfg, "tile_x": (4, 32)}, limits)
    assert why is None and wide["ir.wg_size"] == 8
    fits, why = lower_features(task, {**cfg, "tile_x": (2, 32)}, limits)
    assert why is None and fits["ir.wg_size"] == 4
    assert wide["ir.log2_loop_trips"] == pytest.approx(fits["ir.log2_loop_trips"] - 1)
    assert model.rescaled_ms(1.0, fits, wide, limits) == pytest.approx(1.0)
    # a GPU runs a warp's work-items in lockstep: the idle ones save no time there
    gpu = DeviceLimits("test / gpu", 4096, (4096, 4096, 4096), 1 << 20, gpu=True)
    wide, _ = lower_features(task, {**cfg, "tile_x": (4, 32)}, gpu)
    fits, _ = lower_features(task, {**cfg, "tile_x": (2, 32)}, gpu)
    assert wide["ir.log2_loop_trips"] == fits["ir.log2_loop_trips"]


def test_pass_fraction_of_conditions_on_work_item_indices():
    tx, bx, i = ts.var("tx"), ts.var("bx"), ts.var("i")
    axes = {tx: 4, bx: 10}
    assert features.pass_fraction(tx * 32 < 64, axes) == 0.5
    assert features.pass_fraction((bx * 4 + tx < 39) & (tx != 0), axes) == pytest.approx(29 / 40)
    assert features.pass_fraction(tx * 32 < i, axes) is None  # a loop variable: unknown
    assert features.pass_fraction(ts.const(1, "int32") < 2, axes) is None  # no index at all
    many = {tx: 1024, bx: 4096}  # sampled, not enumerated
    assert features.pass_fraction(bx < 1024, many) == pytest.approx(0.25, abs=0.02)


def test_lowering_in_a_pool_gives_the_same_features_each_candidate_lowered_once(monkeypatch):
    monkeypatch.setattr(features, "POOL_AFTER_S", 0.0)  # the pool from the first batch
    limits = DeviceLimits("test / pool", 1024, (1024, 1024, 64), 48 * 1024)
    task = Task("gemm", "gpu_tiled", (96, 64, 80))
    space = task.space()
    configs = [space.point(i) for i in range(0, space.size(), space.size() // 9)][:9]
    here = [lower_features(task, c, limits) for c in configs]
    features._MEMO.clear()
    lowering = Lowering(limits, workers=2)
    try:
        assert lowering.many([(task, c) for c in configs + configs[:2]]) == here + here[:2]
        assert lowering.pool is not None and lowering.lowered == 9  # the repeats: the memo's
        assert lowering.here_n == features.POOL_MIN  # the rest in the pool
        assert lowering(task, configs[3]) == here[3] and lowering.lowered == 9
        # the memo is the process's: another proposer's lowering finds them too
        assert Lowering(limits).many([(task, c) for c in configs]) == here
    finally:
        lowering.close()


def test_a_lowering_pool_that_fails_hands_over_to_this_process(monkeypatch):
    """The pool's workers do not know this module's template (no modules to import): the
    candidates are lowered here instead, with the same results."""
    monkeypatch.setattr(features, "POOL_AFTER_S", 0.0)
    task = Task("gemm", "gemm_planted_cost", (256, 256, 16))
    space = task.space()
    configs = [space.point(i) for i in range(0, space.size(), space.size() // 9)][:9]
    features._MEMO.clear()
    lowering = Lowering(LIMITS, workers=2)
    try:
        got = lowering.many([(task, c) for c in configs])
    finally:
        lowering.close()
    assert got == [lower_features(task, c, LIMITS) for c in configs]
    assert lowering.workers == 0 and lowering.pool is None


def test_proposals_are_the_same_with_lowering_workers_and_trials_are_not_lowered_again(
    monkeypatch,
):
    monkeypatch.setattr(features, "POOL_AFTER_S", 0.0)
    task = Task("gemm", "gemm_planted_cost", (256, 256, 16))

    def propose(workers):
        features._MEMO.clear()
        prop = ModelProposer(
            task, task.space(), LIMITS, (), seed=5, workers=workers, modules=worker_modules(task)
        )
        got = []
        try:
            for _ in range(16):  # a random batch, then the model's
                c = prop.next()
                lowered = prop.lowering.lowered
                prop.observe(c, "ok", planted_gflops(c))
                assert prop.lowering.lowered == lowered  # lowered when it was proposed
                got.append(c)
        finally:
            prop.close()
        assert prop.model.fitted_on > 0  # the model's batches, not only random ones
        return got, prop.lowering

    alone, _ = propose(0)
    pooled, lowering = propose(2)
    assert pooled == alone
    assert lowering.lowered > lowering.here_n and lowering.pool is None  # used, then closed


# ---------------------------------------------------------------------------- search


def test_ir_features_of_split_k_describe_each_kernel_on_its_own():
    """Split-K lowers to two kernels (partial products over blockIdx.z, then their sum): each
    launches on its own, so neither the work-group limit nor the footprint adds them up (a
    split-K candidate was once refused as a work-group of 4096 and never measured)."""
    task = Task("gemm", "gpu_tiled", (784, 512, 4608))
    limits = DeviceLimits("gpu", 1024, (1024, 1024, 64), 48 * 1024)
    one, why_one = lower_features(task, {"split_k": 1}, limits)
    two, why_two = lower_features(task, {"split_k": 2}, limits)
    assert why_one is None and why_two is None
    assert one["ir.kernels"] == 1 and two["ir.kernels"] == 2
    assert two["ir.wg_size"] == one["ir.wg_size"]
    assert two["ir.log2_work_groups"] == pytest.approx(one["ir.log2_work_groups"] + 1)
    # the partial products lie in a global buffer between the kernels: M x N a split
    assert one["temp_bytes"] == 0 and two["temp_bytes"] == 2 * 784 * 512 * 4


def test_the_bytes_a_task_moves_and_the_buffers_between_its_kernels():
    """``task_bytes``: the argument tensors, read or written once whatever the config; the
    IR's ``temp_bytes``: global buffers between kernels, here the copy of B into panels."""
    task = Task("gemm", "cpu", (8, 4096, 1024))
    assert features.task_bytes(task) == 4 * (8 * 1024 + 1024 * 4096 + 8 * 4096)
    conv = Task("conv2d", "gemm_cpu", (1, 3, 224, 224, 64, 7, 7, 2, 3))
    assert features.task_bytes(conv) == 4 * (3 * 224 * 224 + 64 * 3 * 49 + 64 * 112 * 112)
    cfg = {"tile_y": (1, 8), "tile_x": (2, 32), "vec": 16, "tile_k": (4,), "pad_a": False}
    plain, _ = lower_features(task, {**cfg, "pad_b": False}, CPU_LIMITS)
    copied, _ = lower_features(task, {**cfg, "pad_b": True}, CPU_LIMITS)
    assert plain["temp_bytes"] == 0 and copied["temp_bytes"] == 4 * 1024 * 4096


def test_model_finds_a_planted_optimum_in_far_fewer_trials_than_random():
    task = Task("gemm", "gemm_planted_cost", (256, 256, 16))
    space = task.space()
    assert space.size() > model.EXHAUSTIVE  # the annealing, not the whole-space scoring
    by_model = [model_trials_to_optimum(task, s) for s in (0, 1, 2)]
    by_random = [random_trials_to_optimum(space, s) for s in range(9)]
    assert by_model[2] == model_trials_to_optimum(task, 2)  # deterministic for a seed
    # random search needs about half the valid space (2,500 trials) on average
    assert np.median(by_model) <= 150 and max(by_model) <= 250, (by_model, by_random)
    assert np.median(by_model) * 10 <= np.median(by_random), (by_model, by_random)


def test_every_batch_tries_a_neighbour_of_the_fastest_trials():
    """One candidate a batch (``LOCAL``) is one knob away from one of the three fastest trials
    so far, never one measured or proposed before: a value the model has no data on (a new
    candidate, a shape class no log has) is still tried where it matters most."""
    task = Task("gemm", "gemm_planted_cost", (256, 256, 16))
    prop = ModelProposer(task, task.space(), LIMITS, (), seed=0)
    done = []
    for _ in range(40):
        c = prop.next()
        done.append((planted_gflops(c), c))
        prop.observe(c, "ok", done[-1][0])
    fastest = [c for _, c in sorted(done, key=lambda t: -t[0])[:3]]
    assert [c for _, c in prop.fastest] == fastest
    picks = prop._neighbours(20, set())
    assert len(picks) == 20
    for c in picks:
        assert any(sum(c[k] != f[k] for k in c) == 1 for f in fastest), c
        assert config_key(c) not in prop.seen
    assert len({config_key(c) for c in picks}) == len(picks)


@register_template("gemm", "gemm_few_valid")
def gemm_few_valid(cfg, M, N, K, dtype="float32", epilogue=()):
    """``gemm_planted_cost`` whose only valid points have one row of 128 work-items: 1 in 64."""
    s, args = gemm_planted_cost(cfg, M, N, K, dtype, epilogue)
    cfg.constrain(cfg["tile_y"] == (1,) and cfg["tile_x"] == (128,), "not one row of 128")
    return s, args


@pytest.mark.parametrize("seed", range(6))
def test_a_space_of_few_valid_points_still_gives_a_first_batch(seed):
    """Where random points are rarely valid (gpu_tiled at small shapes: 1-5%), a batch whose
    draws were all proven invalid is drawn again with twice as many: the search starts
    instead of ending with no config measured."""
    task = Task("gemm", "gemm_few_valid", (256, 256, 16))
    prop = ModelProposer(task, task.space(), LIMITS, (), seed=seed)
    assert prop.size > model.EXHAUSTIVE  # drawn at random, not scored whole
    c = prop.next()
    assert c is not None and c["tile_y"] == (1,) and c["tile_x"] == (128,), c


def test_model_whole_space_scoring_finds_the_optimum_of_a_small_space():
    task = Task("gemm", "gemm_planted_cost", (256, 256, 16))
    space = task.space().restrict({"order": [4, 5], "unroll": [1, 2]})
    assert space.size() <= model.EXHAUSTIVE
    prop = ModelProposer(task, space, LIMITS, (), seed=0)
    seen = []
    while (c := prop.next()) is not None and c != OPTIMUM:
        seen.append(config_key(c))
        prop.observe(c, "ok", planted_gflops(c))
    assert c == OPTIMUM and len(seen) < 100
    assert len(seen) == len(set(seen))  # nothing proposed twice


def test_proposals_cover_the_whole_space_once():
    task = Task("gemm", "gemm_tiny", (16, 16, 16))
    prop = ModelProposer(task, task.space(), LIMITS, (), seed=3)
    got = []
    while (c := prop.next()) is not None:
        got.append(config_key(c))
        prop.observe(c, "ok", 1.0 + len(got))
    assert sorted(got) == sorted(config_key(p) for p in task.space().points())


# ---------------------------------------------------------------------------- transfer


def write_log(path, device, task, results):
    """A log of ``task`` on ``device`` with ``results`` [(config, device_ms)]."""
    with open(path, "a") as f:
        for config, ms in results:
            rec = {
                "task": json.loads(task.key()),
                "device": device,
                "config": {k: list(v) if isinstance(v, tuple) else v for k, v in config.items()},
                "status": "ok",
                "device_ms": ms,
                "gflops": task.flop / ms / 1e6,
                "error": "",
                "timestamp": 1.0,
            }
            f.write(json.dumps(rec) + "\n")


def test_fit_config_maps_values_to_the_nearest_legal_ones():
    space = Task("gemm", "gpu_tiled", (96, 96, 96)).space()
    big = Task("gemm", "gpu_tiled", (4096, 4096, 4096)).space()
    for name, knob in big.space.items():
        value = knob.candidates[-1]
        fitted = fit_config({name: value}, space)[name]
        assert fitted in space.space[name].candidates
        if value in space.space[name].candidates:
            assert fitted == value
    assert fit_config({}, space) == {n: k.default for n, k in space.space.items()}


# three points of gemm_planted_cost's space, for logs written by the tests
PLANTED_A = {"tile_y": (4,), "tile_x": (32,), "unroll": 3, "vec": 2, "order": 1}
PLANTED_B = {"tile_y": (2,), "tile_x": (64,), "unroll": 1, "vec": 4, "order": 0}
PLANTED_C = {"tile_y": (1,), "tile_x": (64,), "unroll": 1, "vec": 8, "order": 5}


def test_transfer_proposes_the_nearest_shapes_best_first(tmp_path):
    log = tmp_path / "a.jsonl"
    dev = "test / planted"
    a, far = (
        Task("gemm", "gemm_planted_cost", (256, 256, 16)),
        Task("gemm", "gemm_planted_cost", (16, 16, 4096)),
    )
    best_a = PLANTED_A
    other = {"tile_y": (2,), "tile_x": (2,), "unroll": 0, "vec": 1, "order": 0}
    best_far = PLANTED_C
    write_log(log, dev, a, [(other, 2.0), (best_a, 1.0)])
    write_log(log, dev, far, [(best_far, 0.5)])
    b = Task("gemm", "gemm_planted_cost", (512, 256, 16))
    past = history(b, dev, [str(log)])
    assert len(past) == 3
    assert nearest_bests(b, b.space(), past)[0] == best_a
    prop = ModelProposer(b, b.space(), LIMITS, past, seed=0)
    assert prop.next() == best_a  # measured first
    assert prop.next() == other  # A's second best, then the farther shape's
    assert prop.next() == best_far


@pytest.mark.opencl
def test_tune_with_transfer_measures_shape_as_best_first(device, tmp_path):
    dev = current_limits().name
    a = Task("gemm", "gemm_tiny", (16, 16, 16))
    best_a = {"tile_y": (8,), "tile_x": (4,), "unroll": 1}
    write_log(tmp_path / "a.jsonl", dev, a, [({**best_a, "unroll": 0}, 0.5), (best_a, 0.25)])
    b = Task("gemm", "gemm_tiny", (32, 16, 16))
    res = tune(
        b,
        str(tmp_path / "b.jsonl"),
        strategy="model",
        trials=2,
        transfer=[str(tmp_path / "a.jsonl")],
        timeout=20.0,
        repeat=2,
        n_build=1,
        progress=False,
        verify=0,
    )
    recs = read_log(str(tmp_path / "b.jsonl"))
    assert [r.config for r in recs] == [best_a, {**best_a, "unroll": 0}]
    assert res.counts == {"ok": 2} and all(r.status == "ok" for r in recs)


@pytest.mark.opencl
def test_budgets_time_and_early_stop(device, tmp_path):
    task = Task("gemm", "gemm_tiny", (16, 16, 16))
    kw = {"timeout": 20.0, "repeat": 2, "n_build": 1, "progress": False, "strategy": "model"}
    res = tune(task, str(tmp_path / "e.jsonl"), early_stop=1, verify=0, **kw)
    recs = read_log(str(tmp_path / "e.jsonl"))
    assert 2 <= len(recs) < 8  # stopped at the first trial that was not faster
    faster = [r.device_ms < min(q.device_ms for q in recs[:i]) for i, r in enumerate(recs) if i]
    assert faster[:-1] == [True] * (len(faster) - 1) and not faster[-1]
    t0 = time.time()
    res = tune(task, str(tmp_path / "t.jsonl"), time_s="0.1s", **kw)
    assert res.on_device <= 1 and time.time() - t0 < 60  # (and it measured again, briefly)


def test_durations_and_budget_options():
    assert [parse_duration(t) for t in ("90", "90s", "2m", "1.5h", 3)] == [90, 90, 120, 5400, 3]
    for bad in ("2x", "-1m", "m", "0s"):
        with pytest.raises(TensorschedError, match="duration"):
            parse_duration(bad)
    task = Task("gemm", "gemm_tiny", (16, 16, 16))
    with pytest.raises(TensorschedError, match="early_stop must be a positive integer"):
        tune(task, "never.jsonl", early_stop=0, progress=False)
    with pytest.raises(TensorschedError, match="transfer log nowhere.jsonl does not exist"):
        tune(task, "never.jsonl", transfer=["nowhere.jsonl"], progress=False)
    assert not os.path.exists("never.jsonl")


def test_cli_budget_flags_are_checked(tmp_path, monkeypatch, capsys):
    from tensorsched.cli import main

    monkeypatch.chdir(tmp_path)
    argv = ["tune", "gemm", "--shape", "16,16,16", "--template", "cpu"]
    with pytest.raises(SystemExit) as exc:
        main(argv + ["--time", "2x"])
    assert exc.value.code == 2 and "--time: duration '2x'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(argv + ["--early-stop", "0"])
    assert exc.value.code == 2 and "--early-stop: expected a positive integer" in (
        capsys.readouterr().err
    )
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------- instantiate


# logged before the tail knobs existed: a prediction fills them with their defaults at the
# new shape (the tiles of CPU_512 / CPU_64 do not divide 500 x 520 / 60 x 70: the last tile
# shifts; their K steps divide 480 / 64: no K tail), and the work-group order, its default
TAILS = {"tail": "shift", "tail_k": "guard", "group_order": "cols", "pad_b": False, "pad_a": False}
CPU_512 = {"tile_y": (4, 8), "tile_x": (2, 32), "vec": 8, "tile_k": (8,)}
CPU_64 = {"tile_y": (1, 4), "tile_x": (1, 8), "vec": 4, "tile_k": (1,)}


CPU_LIMITS = DeviceLimits("test / cpu", 4096, (4096, 4096, 4096), 32 * 1024, 2)


def cpu_log(path, dev):
    write_log(path, dev, Task("gemm", "cpu", (512, 512, 512)), [(CPU_512, 1.0)])
    write_log(path, dev, Task("gemm", "cpu", (64, 64, 64)), [(CPU_64, 0.01)])


def lowered(s, args):
    return str(ts.lower(s, args, name="k"))


def test_untuned_instantiate_picks_the_nearest_logged_shapes_config(tmp_path, monkeypatch):
    # the prediction ranks for the current device: a CPU's here, whatever runs the tests (on
    # an H200 the GPU's waves of work-groups rank CPU_64's small tiles first at 500 x 520)
    monkeypatch.setattr(dispatch, "current_limits", lambda: CPU_LIMITS)
    log = tmp_path / "cpu.jsonl"
    cpu_log(log, "test / cpu")
    task = Task("gemm", "cpu", (500, 520, 480))
    with dispatch.apply_best(str(log), device="test / cpu"):
        assert dispatch.best_config(task) is None
        assert dispatch.predicted_config(task) == CPU_512 | TAILS
        s, args = dispatch.instantiate("gemm", "cpu", (500, 520, 480))
        small = dispatch.predicted_config(Task("gemm", "cpu", (60, 70, 64)))
    assert small == CPU_64 | TAILS
    s2, args2, _ = task.instantiate(CPU_512)
    assert lowered(s, args) == lowered(s2, args2)


def test_shipped_logs_are_read_by_device(tmp_path, monkeypatch):
    dev = current_limits().name
    monkeypatch.setattr(model, "LOGS_DIR", str(tmp_path))
    task = Task("gemm", "cpu", (500, 520, 480))
    assert dispatch.predicted_config(task) is None  # nothing shipped for this device
    cpu_log(tmp_path / f"{model.device_slug(dev)}.jsonl", dev)
    assert model.shipped_logs(dev) == [str(tmp_path / f"{model.device_slug(dev)}.jsonl")]
    assert dispatch.predicted_config(task) == CPU_512 | TAILS
    s, args = dispatch.instantiate("gemm", "cpu", (500, 520, 480))
    s2, args2, _ = task.instantiate(CPU_512)
    assert lowered(s, args) == lowered(s2, args2)
    assert model.shipped_logs("another / device") == []


# ---------------------------------------------------------------------------- GEMM views

CPU_LIMITS = DeviceLimits("test / cpu", 4096, (4096, 4096, 4096), 1 << 20)
GUARDS = {"tail": "guard", "tail_k": "guard", "group_order": "cols", "pad_b": False, "pad_a": False}
SMALL_CONV = (1, 8, 8, 8, 64, 3, 3, 1, 1)  # CO 64, 8x8 pixels, K = 8*3*3: GEMM 64 x 64 x 72


def test_a_conv_scheduled_as_a_gemm_has_the_features_and_family_of_its_gemm_view():
    shape = (1, 64, 56, 56, 64, 3, 3, 1, 1)  # CO 64, 56x56 pixels, K = 64*3*3
    views = {
        "gemm_cpu": ("cpu", (64, 3136, 576)),
        "implicit_gemm": ("gpu_tiled", (64, 3136, 576)),
        "im2col": ("cpu", (3136, 64, 576)),  # the patches are its rows
        "im2col_gpu": ("gpu_tiled", (3136, 64, 576)),
    }
    for name, (gemm_name, mnk) in views.items():
        conv, view = Task("conv2d", name, shape), Task("gemm", gemm_name, mnk)
        assert features.shape_vector(conv) == tuple(map(float, mnk))
        assert model.family(conv) == model.family(view)
        space = conv.space()
        assert model.knobs_of(space) == model.knobs_of(view.space())
        here, there = SpaceFeatures(conv, space), SpaceFeatures(view, view.space())
        assert here.columns == there.columns
        for i in range(0, space.size(), space.size() // 5):
            assert here.features(space.point(i)) == there.features(space.point(i))
    direct = Task("conv2d", "spatial_pack", shape)  # no GEMM view: its own shape and family
    assert features.shape_vector(direct) == tuple(map(float, shape))
    assert model.family(direct) != model.family(Task("gemm", "cpu", (64, 3136, 576)))


def test_an_untuned_conv_predicts_its_config_from_a_logged_gemm_neighbour(tmp_path):
    log = tmp_path / "cpu.jsonl"
    cpu_log(log, "test / cpu")  # GEMMs 512^3 and 64^3
    small = Task("conv2d", "gemm_cpu", SMALL_CONV)
    # CO 512, 23x23 pixels (529), K = 64*3*3: nearest 512^3, whose tile_x (64) leaves a tail
    big = Task("conv2d", "gemm_cpu", (1, 64, 23, 23, 512, 3, 3, 1, 1))
    assert model.history(small, "test / cpu", [str(log)]) == read_log(str(log))
    with dispatch.apply_best(str(log), device="test / cpu"):
        assert dispatch.predicted_config(small) == CPU_64 | GUARDS
        assert dispatch.predicted_config(big) == CPU_512 | TAILS
        s, args = dispatch.instantiate("conv2d", "gemm_cpu", SMALL_CONV)
    s2, args2, _ = small.instantiate(CPU_64)
    assert lowered(s, args) == lowered(s2, args2)


def test_an_untuned_conv_takes_no_config_from_a_far_gemm_but_its_search_measures_it(tmp_path):
    """512^3 is far from the conv's 64 x 64 x 72 (``NEAR_VIEW``): the defaults are predicted,
    while a search measures the GEMM's best first."""
    log = tmp_path / "cpu.jsonl"
    write_log(log, "test / cpu", Task("gemm", "cpu", (512, 512, 512)), [(CPU_512, 1.0)])
    conv = Task("conv2d", "gemm_cpu", SMALL_CONV)
    assert model.shape_distance(conv, Task("gemm", "cpu", (512, 512, 512))) > model.NEAR_VIEW
    past = model.history(conv, "test / cpu", [str(log)])
    assert model.predict_config(conv, past, CPU_LIMITS) is None  # (then the shipped logs')
    assert nearest_bests(conv, conv.space(), past) == [CPU_512 | GUARDS]


def test_an_untuned_dense_gemm_takes_the_gemm_templates_configs_at_any_distance(tmp_path):
    """A dense layer's GEMM template is the GEMM template on the transposed weight (a twin,
    ``templates.TWINS``): 512^3's best is predicted for 128 rows of 1000 x 72, however far."""
    log = tmp_path / "cpu.jsonl"
    write_log(log, "test / cpu", Task("gemm", "cpu", (512, 512, 512)), [(CPU_512, 1.0)])
    dense = Task("dense", "gemm_cpu", (128, 1000, 72))
    assert model.shape_distance(dense, Task("gemm", "cpu", (512, 512, 512))) > model.NEAR_VIEW
    past = model.history(dense, "test / cpu", [str(log)])
    assert model.predict_config(dense, past, CPU_LIMITS) == CPU_512 | TAILS
    conv = Task("conv2d", "gemm_cpu", SMALL_CONV)  # not a twin: nothing from that far
    assert (
        model.predict_config(conv, model.history(conv, "test / cpu", [str(log)]), CPU_LIMITS)
        is None
    )


def test_a_choice_the_new_shape_refuses_is_undone_not_dropped(tmp_path):
    """The nearest GEMM (64 x 64 x 76) chose to peel its last, partial K step; at the
    implicit-GEMM conv's 64 x 64 x 72 the K steps divide, where the template refuses
    tail_k='peel' (the same kernel as 'guard'): the config is carried with 'guard', so the
    nearest shape's best still counts (it was dropped before, and a farther one predicted)."""
    log = tmp_path / "gpu.jsonl"
    dev = "test / gpu"
    peeled = {"tile_y": (1, 16, 4), "tile_x": (1, 16, 4), "tile_k": (8,), "tail_k": "peel"}
    nearer = {"tile_y": (1, 8, 4), "tile_x": (2, 16, 2), "tile_k": (8,)}
    write_log(log, dev, Task("gemm", "gpu_tiled", (64, 64, 76)), [(peeled, 0.001)])
    write_log(log, dev, Task("gemm", "gpu_tiled", (64, 64, 64)), [(nearer, 0.001)])
    conv = Task("conv2d", "implicit_gemm", SMALL_CONV)
    # the defaults of the template's default tiles (128 x 128: tail "shift" at 64 x 64); both
    # configs' tiles divide the conv, where the tail's default is "guard"
    defaults = {name: knob.default for name, knob in conv.space().space.items()}
    divides = {"tail": "guard"}
    carried = nearest_bests(conv, conv.space(), read_log(str(log)))
    assert carried == [
        defaults | peeled | divides | {"tail_k": "guard"},
        defaults | nearer | divides,
    ]
    for config in carried:
        _, _, cfg = conv.instantiate(config)
        assert cfg.valid, cfg.constraints
    with dispatch.apply_best(str(log), device=dev):
        assert dispatch.predicted_config(conv) in carried


def test_a_split_of_k_finer_than_the_new_shapes_step_is_undone():
    """split_k=16 chosen at K = 2304 splits K = 72 finer than its K step of 8 there: the
    carried config falls back to the new shape's default split, the rest kept."""
    there, here = (
        Task("gemm", "gpu_tiled", (196, 256, 2304)),
        Task("gemm", "gpu_tiled", (96, 96, 72)),
    )
    logged = {"split_k": 16, "tile_y": (1, 8, 4), "tile_x": (2, 16, 2), "tile_k": (8,)}
    carried = model.carry_config(logged, there, here, here.space())
    assert carried["split_k"] == 1
    assert (carried["tile_y"], carried["tile_x"], carried["tile_k"]) == (
        (1, 8, 4),
        (2, 16, 2),
        (8,),
    )
    _, _, cfg = here.instantiate(carried)
    assert cfg.valid, cfg.constraints


def test_a_knob_logged_at_its_default_takes_the_default_of_the_new_shape():
    """The CPU GEMM's tail defaults to 'guard' where the tiles divide the shape, to 'shift'
    where they do not: a config logged with the default follows the new shape's; one that
    chose 'guard' where the default was 'shift' keeps it (where 'guard' keeps whole vectors:
    36 columns, vectors of 4)."""
    conv = Task("conv2d", "gemm_cpu", (1, 8, 6, 6, 64, 3, 3, 1, 1))  # GEMM 64 x 36 x 72
    space = conv.space()
    divides, ragged = Task("gemm", "cpu", (64, 64, 64)), Task("gemm", "cpu", (64, 60, 64))
    logged = CPU_64 | GUARDS
    assert model.carry_config(logged, divides, conv, space) == CPU_64 | TAILS
    assert model.carry_config(logged, ragged, conv, space) == CPU_64 | GUARDS
    assert model.carry_config(CPU_64, ragged, conv, space) == CPU_64 | TAILS
    # at 49 columns 'guard' would split a vector: the shape refuses it, so it is undone
    odd = Task("conv2d", "gemm_cpu", (1, 8, 7, 7, 64, 3, 3, 1, 1))
    assert model.carry_config(logged, ragged, odd, odd.space()) == CPU_64 | TAILS


def test_configs_cross_only_between_templates_of_the_same_knobs(tmp_path, monkeypatch):
    """A GEMM view given to a template of other knobs: the GEMM's trials are in its family,
    yet neither seed nor teach it (their knobs are not its knobs)."""
    space = Task("conv2d", "gemm_cpu", SMALL_CONV).space()
    assert model.portable(CPU_64, space) and model.portable({}, space)
    assert not model.portable({**CPU_64, "VH": 2}, space)  # a knob it does not have
    assert not model.portable({**CPU_64, "vec": 3}, space)  # not a candidate
    log = tmp_path / "cpu.jsonl"
    cpu_log(log, "test / cpu")
    conv_gemm = ts.ops.templates.GEMM_VIEWS[("conv2d", "gemm_cpu")][1]
    monkeypatch.setitem(ts.ops.templates.GEMM_VIEWS, ("conv2d", "spatial_pack"), ("cpu", conv_gemm))
    direct = Task("conv2d", "spatial_pack", SMALL_CONV)
    past = model.history(direct, "test / cpu", [str(log)])
    assert len(past) == 2  # in the family ...
    assert nearest_bests(direct, direct.space(), past) == []  # ... but nothing carries over
    prop = ModelProposer(direct, direct.space(), CPU_LIMITS, past, seed=0)
    assert prop.model.rows == []
    with dispatch.apply_best(str(log), device="test / cpu"):
        assert dispatch.predicted_config(direct) is None


def test_transfer_seeds_a_conv_search_with_the_gemm_logs_best_and_back(tmp_path):
    log = tmp_path / "cpu.jsonl"
    dev = "test / cpu"
    near = Task("gemm", "cpu", (64, 64, 64))
    second = {**CPU_64, "vec": 8}  # tile_x (1, 8): a multiple of 8 as of 4
    write_log(log, dev, near, [(second, 0.02), (CPU_64, 0.01)])
    write_log(log, dev, Task("gemm", "cpu", (512, 512, 512)), [(CPU_512, 1.0)])
    conv = Task("conv2d", "gemm_cpu", SMALL_CONV)
    past = model.past_records(conv, dev, str(log), [])
    assert len(past) == 3
    prop = ModelProposer(conv, conv.space(), CPU_LIMITS, past, seed=0)
    try:
        assert len(prop.model.rows) == 3  # the GEMM trials teach the conv's model
        assert [prop.next() for _ in range(3)] == [
            CPU_64 | GUARDS,  # the nearest GEMM's best, measured first
            second | GUARDS,
            CPU_512 | GUARDS,
        ]
    finally:
        prop.close()
    # and back: a conv's trials seed a GEMM near its view (64 x 64 x 72)
    conv_log = tmp_path / "conv.jsonl"
    write_log(conv_log, dev, conv, [(CPU_64 | {"vec": 8}, 0.01)])
    gemm = Task("gemm", "cpu", (64, 64, 80))
    back = model.past_records(gemm, dev, str(conv_log), [])
    assert [r.task for r in back] == [json.loads(conv.key())]
    prop = ModelProposer(gemm, gemm.space(), CPU_LIMITS, back, seed=0)
    try:
        assert prop.next() == second | GUARDS
    finally:
        prop.close()
    with dispatch.apply_best(str(conv_log), device=dev):
        assert dispatch.predicted_config(gemm) == second | GUARDS


def test_a_device_with_no_shipped_log_predicts_from_one_on_its_platform(tmp_path, monkeypatch):
    """TopHub-like: an H100 gets the H200's configs (each made legal for its own limits);
    a device of another platform gets nothing."""
    dev = current_limits().name
    platform = dev.split(" / ", 1)[0]
    monkeypatch.setattr(model, "LOGS_DIR", str(tmp_path))
    sibling = f"{platform} / another device of the same platform"
    cpu_log(tmp_path / f"{model.device_slug(sibling)}.jsonl", sibling)
    cpu_log(tmp_path / "elsewhere.jsonl", "Another platform / a device")
    assert model.shipped_logs(dev) == []
    assert model.sibling_logs(dev) == (
        sibling,
        [str(tmp_path / f"{model.device_slug(sibling)}.jsonl")],
    )
    task = Task("gemm", "cpu", (500, 520, 480))
    assert dispatch.predicted_config(task) == CPU_512 | TAILS
    assert model.sibling_logs("Nobody's platform / device") is None


def test_a_search_on_a_device_with_no_log_measures_the_siblings_configs_first(
    tmp_path, monkeypatch
):
    """Tuning on a device the package ships no log of starts from its platform sibling's:
    the task's own best there, then the nearest shapes' bests, measured here (not taken as
    this device's times); a device with a log of its own reads only that."""
    dev = current_limits().name
    platform = dev.split(" / ", 1)[0]
    monkeypatch.setattr(model, "LOGS_DIR", str(tmp_path))
    sibling = f"{platform} / another device of the same platform"
    task = Task("gemm", "cpu", (512, 512, 512))
    theirs = {**CPU_512, "tile_y": (2, 8)}
    write_log(tmp_path / f"{model.device_slug(sibling)}.jsonl", sibling, task, [(theirs, 0.5)])
    cpu_log(tmp_path / f"{model.device_slug(sibling)}.jsonl", sibling)  # 512^3 and 64^3
    seeds = model.sibling_records(task, dev)
    assert len(seeds) == 3
    prop = ModelProposer(task, task.space(), CPU_LIMITS, (), seed=0, seeds=seeds)
    try:
        first = [prop.next() for _ in range(2)]
        assert prop.fastest == []  # nothing taken as measured on this device
    finally:
        prop.close()
    assert first[0] == theirs | GUARDS  # the sibling's own fastest first
    assert first[1] == CPU_512 | GUARDS
    cpu_log(tmp_path / f"{model.device_slug(dev)}.jsonl", dev)
    assert model.sibling_records(task, dev) == []


def test_a_task_its_devices_shipped_log_lacks_takes_the_siblings_best(tmp_path, monkeypatch):
    """A device with a shipped log of its own (a few GEMMs) still reads its platform's other
    device for a task that only that one tuned (a network's layer): its logged best there;
    a task of its own log takes its own."""
    dev = current_limits().name
    platform = dev.split(" / ", 1)[0]
    monkeypatch.setattr(model, "LOGS_DIR", str(tmp_path))
    sibling = f"{platform} / another device of the same platform"
    conv = Task("conv2d", "gemm_cpu", SMALL_CONV)
    theirs = {**CPU_64, "tile_y": (2, 4)}
    write_log(tmp_path / f"{model.device_slug(sibling)}.jsonl", sibling, conv, [(theirs, 0.01)])
    write_log(
        tmp_path / f"{model.device_slug(sibling)}.jsonl",
        sibling,
        Task("gemm", "cpu", (512, 512, 512)),
        [(CPU_64, 1.0)],
    )
    cpu_log(tmp_path / f"{model.device_slug(dev)}.jsonl", dev)
    assert dispatch.predicted_config(conv)["tile_y"] == (2, 4)
    assert dispatch.predicted_config(Task("gemm", "cpu", (512, 512, 512))) == CPU_512 | GUARDS


def test_rescaled_ms_scales_by_waves_of_work_groups_and_their_work():
    limits = DeviceLimits("test / gpu", 1024, (1024, 1024, 64), 48 * 1024, compute_units=4)

    def feats(groups, work_group, kernels=1.0):  # 64 work-items, each looping work_group / 64
        return {
            "ir.log2_work_groups": math.log2(groups),
            "ir.wg_size": 64.0,
            "ir.log2_loop_trips": math.log2(work_group / 64),
            "ir.kernels": kernels,
        }

    launch = model.LAUNCH_MS
    there = feats(8, 1e6)  # 8 groups, 2 at once on each of 4 units: one wave
    assert model.rescaled_ms(1.0, there, feats(16, 1e6), limits) == pytest.approx(
        launch + (1.0 - launch) * 2
    )  # two waves
    assert model.rescaled_ms(1.0, there, feats(3, 1e6), limits) == pytest.approx(1.0)  # one
    assert model.rescaled_ms(1.0, there, feats(8, 5e5), limits) == pytest.approx(
        launch + (1.0 - launch) / 2
    )  # half the work per group
    # a second kernel (split-K's sum) costs a launch
    assert model.rescaled_ms(1.0, there, feats(8, 1e6, 2.0), limits) == pytest.approx(1.0 + launch)


def test_rescaled_ms_on_a_gpu_counts_the_work_groups_its_units_hold_and_split_k_traffic():
    """On a GPU a compute unit runs as many work-groups at once as its work-items and
    ``__local`` memory allow (a CPU device's: ``GROUPS_PER_UNIT``), and a split K's partial
    products are written and read again (``SPLIT_BYTE_MS``)."""
    limits = DeviceLimits("test / gpu", 1024, (1024, 1024, 64), 48 * 1024, 4, gpu=True)

    def feats(groups, local_bytes, kernels=1.0, stored=0.0):
        return {
            "ir.log2_work_groups": math.log2(groups),
            "ir.wg_size": 128.0,  # 8 fit a unit by work-items
            "ir.log2_loop_trips": math.log2(1e4),
            "ir.log2_local_bytes": math.log2(local_bytes),
            "ir.kernels": kernels,
            "ir.log2_work_items": math.log2(groups * 128),
            "ir.log2_global_store_bytes_item": math.log2(stored / (groups * 128))
            if stored
            else -1.0,
        }

    launch = model.LAUNCH_MS
    small = feats(32, 4096)  # 8 a unit (by work-items): 32 groups on 4 units, one wave
    assert model.rescaled_ms(1.0, small, feats(64, 4096), limits) == pytest.approx(
        launch + (1.0 - launch) * 2
    )
    # 24 KB of __local each: 2 a unit, so 32 groups are 4 waves where 4 KB ones are one
    assert model.rescaled_ms(1.0, small, feats(32, 24 * 1024), limits) == pytest.approx(
        launch + (1.0 - launch) * 4
    )
    # the same on a CPU device: 2 a unit whatever they hold
    cpu = DeviceLimits("test / cpu", 1024, (1024, 1024, 64), 48 * 1024, 4)
    assert model.rescaled_ms(1.0, small, feats(32, 24 * 1024), cpu) == pytest.approx(1.0)
    # a split K whose first kernel stores 1 GB of partial products pays for 2 GB of traffic
    split = feats(32, 4096, 2.0, stored=1e9)
    assert model.rescaled_ms(1.0, small, split, limits) == pytest.approx(
        1.0 + launch + model.SPLIT_BYTE_MS * 2e9
    )
    assert model.rescaled_ms(1.0, small, split, cpu) == pytest.approx(1.0 + launch)


def test_an_untuned_prediction_ranks_the_logged_bests_not_only_the_nearest(tmp_path):
    """The nearest logged shape's best is slow; a slightly farther shape's best is 1000x faster
    there: the prediction takes the latter (the nearest shape's best alone took the former)."""
    log = tmp_path / "a.jsonl"
    dev = "test / planted"
    near, farther = (
        Task("gemm", "gemm_planted_cost", (384, 256, 16)),
        Task("gemm", "gemm_planted_cost", (1024, 256, 16)),
    )
    slow = PLANTED_A
    fast = PLANTED_B
    write_log(log, dev, near, [(slow, 10.0)])
    write_log(log, dev, farther, [(fast, 0.01)])
    b = Task("gemm", "gemm_planted_cost", (512, 256, 16))
    assert model.shape_distance(b, near) < model.shape_distance(b, farther)
    past = history(b, dev, [str(log)])
    assert nearest_bests(b, b.space(), past)[0] == slow
    assert model.predict_config(b, past, LIMITS) == fast


GEMV = {"tile_y": (1, 1), "tile_x": (1, 1024), "vec": 16, "tile_k": (8,), "pad_b": False}


def test_an_untuned_matrix_vector_product_is_not_expected_faster_than_memory_allows(tmp_path):
    """Scaled by work alone, a 512^3 GEMM's config (268 GFLOP/s there) or a 1 x 1000 x 1000
    product's (its 4 MB in 10 us) would take a 1 x 4096 x 4096 product in a fraction of the
    time a logged 1 x 3000 x 6000 product's config took per byte. No config moves 64 MB
    faster than the logs show the device moving as much
    (``memory_rate``: 1 x 3000 x 6000's 72 MB in 2 ms; not 1 x 1000 x 1000's 4 MB, which
    stays in a cache), so both are held to that floor and the nearer shape's config wins.
    A config that copies B into panels first moves B twice more."""
    log, dev = tmp_path / "a.jsonl", "test / cpu"
    gemv = Task("gemm", "cpu", (1, 3000, 6000))
    write_log(log, dev, gemv, [(GEMV, 2.0)])
    write_log(log, dev, Task("gemm", "cpu", (1, 1000, 1000)), [(CPU_64, 0.01)])
    write_log(log, dev, Task("gemm", "cpu", (512, 512, 512)), [(CPU_512, 1.0)])
    task = Task("gemm", "cpu", (1, 4096, 4096))
    past = history(task, dev, [str(log)])
    rate = model.memory_rate(task, model.logged_shapes(task, task.space(), past))
    assert rate == pytest.approx(features.task_bytes(gemv) / 2.0)
    carried = model.carry_config(GEMV, gemv, task, task.space())
    by_work = min(
        (model.rescaled_ms(ms, src, new, CPU_LIMITS), i, c)
        for i, (_, ms, src, c, new) in enumerate(model.shape_candidates(task, past, CPU_LIMITS))
    )
    assert by_work[2]["tile_x"] != GEMV["tile_x"]  # 512^3's or 1 x 1000 x 1000's
    floor = model.memory_floor_ms(task, {}, rate)
    assert floor == pytest.approx(features.task_bytes(task) / rate)
    assert model.memory_floor_ms(task, {"temp_bytes": 1e6}, rate) == pytest.approx(
        floor + 2e6 / rate
    )
    assert model.predict_config(task, past, CPU_LIMITS) == carried


def test_the_memory_rate_counts_every_task_of_the_devices_shipped_logs(tmp_path, monkeypatch):
    """A family of compute-bound tasks shows its kernels' rates, not the memory's: the rate
    also counts the device's shipped tasks of other families (on the AMD EPYC VM, a first
    layer's conv family alone gave 19 GB/s, and a floor that tied its candidates)."""
    dev = "test / cpu"
    monkeypatch.setattr(model, "LOGS_DIR", str(tmp_path))
    gemv = Task("gemm", "cpu", (1, 3000, 6000))
    write_log(tmp_path / f"{model.device_slug(dev)}.jsonl", dev, gemv, [(GEMV, 2.0)])
    task = Task("gemm", "cpu", (1, 4096, 4096))
    assert model.memory_rate(task, [], dev) == pytest.approx(features.task_bytes(gemv) / 2.0)
    assert model.memory_rate(task, []) == 0.0  # no device: the logged shapes' alone


def test_an_untuned_prediction_takes_the_tasks_own_logged_best(tmp_path):
    """A shipped log that holds the task itself (TVM's TopHub) gives its fastest trial."""
    log = tmp_path / "a.jsonl"
    dev = "test / planted"
    b = Task("gemm", "gemm_planted_cost", (512, 256, 16))
    best = PLANTED_A
    other = PLANTED_B
    write_log(log, dev, b, [(other, 2.0), (best, 1.0)])
    write_log(log, dev, Task("gemm", "gemm_planted_cost", (500, 256, 16)), [(other, 0.001)])
    assert model.predict_config(b, history(b, dev, [str(log)]), LIMITS) == best


def test_a_search_measures_the_tasks_own_trials_from_other_logs_first(tmp_path):
    """Another log (a shipped one) holds the task itself: its fastest configs are proposed
    before the nearest shapes' bests (the search skips those its own log has)."""
    log = tmp_path / "a.jsonl"
    dev = "test / planted"
    b = Task("gemm", "gemm_planted_cost", (512, 256, 16))
    best = PLANTED_A
    other = PLANTED_B
    near = PLANTED_C
    write_log(log, dev, b, [(other, 2.0), (best, 1.0)])
    write_log(log, dev, Task("gemm", "gemm_planted_cost", (500, 256, 16)), [(near, 0.001)])
    prop = ModelProposer(b, b.space(), LIMITS, history(b, dev, [str(log)]), seed=0)
    try:
        assert [prop.next() for _ in range(3)] == [best, other, near]
    finally:
        prop.close()


def test_a_shipped_log_that_holds_the_task_wins_over_an_active_logs_other_shapes(
    tmp_path, monkeypatch
):
    """``instantiate`` with an active log of other shapes: a shipped log's trial of the task
    itself is taken before anything predicted from the active log."""
    limits = current_limits()
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    monkeypatch.setattr(model, "LOGS_DIR", str(shipped))
    b = Task("gemm", "gemm_planted_cost", (512, 256, 16))
    best = PLANTED_A
    near = PLANTED_C
    write_log(shipped / (model.device_slug(limits.name) + ".jsonl"), limits.name, b, [(best, 1.0)])
    active = tmp_path / "mine.jsonl"
    write_log(active, limits.name, Task("gemm", "gemm_planted_cost", (500, 256, 16)), [(near, 0.1)])
    with dispatch.apply_best(str(active)):
        assert dispatch.best_config(b) is None
        assert dispatch.predicted_config(b) == best


GPU_48 = DeviceLimits("test / gpu", 1024, (1024, 1024, 64), 48 * 1024, compute_units=48, gpu=True)


def _gpu_tiled(shape, split):
    """A gpu_tiled config of 64 x 64 work-group tiles with K split ``split`` times."""
    task = Task("gemm", "gpu_tiled", shape)
    config = {name: knob.default for name, knob in task.space().space.items()}
    config.update(tile_y=(1, 16, 4), tile_x=(1, 16, 4), tile_k=(16,), split_k=split)
    return task, config


def test_an_untuned_prediction_splits_k_to_fill_the_device_where_tiles_are_few(tmp_path):
    """A deep layer's GEMM (49 rows) predicted from a shape with four times its row tiles:
    the neighbour's split (4: 128 work-groups there, under two waves of 2 a compute unit on
    48 of them) leaves it 32 work-groups; the prediction raises the split to the largest that
    fills one wave (8: 64 groups; 16 would be 128, past 96), whose work-groups loop half as
    long (on the H200, a 7x7x512 convolution ran 3.5 times faster so)."""
    log = tmp_path / "a.jsonl"
    dev = "test / gpu"
    there, logged = _gpu_tiled((196, 512, 4608), 4)
    write_log(log, dev, there, [(logged, 0.1)])
    here = Task("gemm", "gpu_tiled", (49, 512, 4608))
    past = history(here, dev, [str(log)])
    assert nearest_bests(here, here.space(), past)[0]["split_k"] == 4  # the carried config
    predicted = model.predict_config(here, past, GPU_48)
    assert predicted["split_k"] == 8
    assert {k: v for k, v in predicted.items() if k != "split_k"} == {
        k: v for k, v in nearest_bests(here, here.space(), past)[0].items() if k != "split_k"
    }


def test_a_k_split_is_kept_within_two_waves_and_cut_past_them():
    """``_split_to_fill``: work-groups of one to two waves keep their split; more than two
    waves cut it to the largest split that fits one (or the smallest); fewer than a wave
    raise it."""
    space = Task("gemm", "gpu_tiled", (1024, 1024, 1024)).space()

    def split(groups, split_k):
        feats = {"ir.log2_work_groups": math.log2(groups)}
        out = model._split_to_fill({"split_k": split_k}, feats, space, GPU_48)
        return None if out is None else out["split_k"]

    assert split(128, 4) is None  # 96 < 128 <= 192
    assert split(32, 4) == 8  # 8 a split: 64 <= 96 < 128
    assert split(96, 16) is None  # one wave exactly: the largest that fits is its own
    assert split(640, 16) == 2  # 40 a split: 80 <= 96
    assert split(784, 4) == 1  # 196 a split: none fits, the smallest


# ---- proposing ahead in a thread (a GPU's model search)


class Counting:
    """A proposer of ``n`` numbered configs that records what it is told, optionally failing
    at its ``fail_at``-th proposal."""

    def __init__(self, n: int, fail_at: int = -1):
        self.n, self.fail_at, self.given, self.told = n, fail_at, 0, []

    def next(self):
        if self.given == self.fail_at:
            raise TensorschedError("planted failure")
        if self.given >= self.n:
            return None
        self.given += 1
        return {"i": self.given - 1}

    def observe(self, config, status, gflops):
        self.told.append((config["i"], status, gflops))

    def state(self):
        return f"{len(self.told)} told"


def test_a_proposer_run_ahead_hands_out_each_candidate_once_and_learns_every_result():
    inner = Counting(40)
    ahead = ProposeAhead(inner, 6)
    got = []
    try:
        while (c := ahead.next()) is not None:
            got.append(c["i"])
            ahead.observe(c, "ok", float(c["i"]))
        assert got == list(range(40)) and ahead.next() is None
        deadline = time.time() + 10
        while len(inner.told) < 40 and time.time() < deadline:
            time.sleep(0.01)  # the thread learns the last results after the last proposal
        assert inner.told == [(i, "ok", float(i)) for i in range(40)]
        assert ahead.state() == "40 told"
        assert inner.given - len(got) == 0  # nothing proposed past the end
    finally:
        ahead.close()
    assert not ahead._thread.is_alive()


def test_a_proposer_run_ahead_stays_at_most_its_queue_ahead_and_raises_what_it_raised():
    inner = Counting(100, fail_at=12)
    ahead = ProposeAhead(inner, 4)
    try:
        first = ahead.next()
        deadline = time.time() + 10
        while inner.given < 5 and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
        assert first == {"i": 0} and inner.given == 5  # one taken, four ready
        got = [ahead.next()["i"] for _ in range(11)]
        assert got == list(range(1, 12))
        with pytest.raises(TensorschedError, match="planted failure"):
            ahead.next()
    finally:
        ahead.close()


@pytest.mark.opencl
def test_a_gpu_search_by_model_proposes_ahead_and_logs_each_trial_once(
    device, tmp_path, monkeypatch
):
    """Not on a CPU device (the device's kind faked), the model search takes its candidates
    from a ``ProposeAhead``: a budget past the space's 8 points measures each point once,
    all correct, and the search ends when the proposer is spent; the thread stops."""
    from tensorsched.runtime.device import Device
    from tensorsched.tune import tuner

    made = []

    class Recorded(ProposeAhead):
        def __init__(self, proposer, ahead):
            super().__init__(proposer, ahead)
            made.append(self)

    monkeypatch.setattr(Device, "is_cpu", property(lambda self: False))
    monkeypatch.setattr(tuner, "ProposeAhead", Recorded)
    task = Task("gemm", "gemm_tiny", (24, 16, 20))
    log = str(tmp_path / "g.jsonl")
    res = tune(task, log, strategy="model", trials=10, timeout=20.0, repeat=2, n_build=2,
               progress=False, verify=0)  # fmt: skip
    recs = read_log(log)
    assert len(made) == 1 and not made[0]._thread.is_alive()
    assert task.space().size() == 8
    assert len(recs) == 8 and len({r.config_key() for r in recs}) == 8
    assert res.counts == {"ok": 8} and all(r.status == "ok" for r in recs)
