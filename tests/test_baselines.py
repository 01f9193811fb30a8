"""The ACL-style GEMM baseline (tensorsched/baselines): every strategy against numpy on odd
shapes, the reshaped layouts, illegal configs, the analyser's choices and archetypes on
hand-made results, the im2col convolution, and a small tuning run end to end."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tensorsched.baselines import AclConfigError, AclConv2d, AclGemm, GEMMConfig, acl_tuner
from tensorsched.baselines.acl_tuner import (
    AclTuneResults,
    analyse,
    best_acl,
    reduce_to_archetypes,
    tune_acl,
)
from tensorsched.baselines.configs import (
    COLUMNS,
    STRATEGIES,
    default_config_path,
    lhs_layout,
    load_config_list,
    load_gemm_params,
    rhs_layout,
)
from tensorsched.errors import TensorschedError
from tensorsched.ops.conv2d import conv2d_ref
from tensorsched.runtime.numerics import compare, random_array


def random(shape, rng):
    return random_array(shape, np.float32, rng)


def check_gemm(strategy, config, M, N, K, batch, rng, two_d=False):
    shape_a, shape_b, shape_c = (batch, M, K), (batch, K, N), (batch, M, N)
    if two_d:
        shape_a, shape_b, shape_c = shape_a[1:], shape_b[1:], shape_c[1:]
    a, b = random(shape_a, rng), random(shape_b, rng)
    c = np.full(shape_c, np.nan, np.float32)
    AclGemm(strategy, config, M, N, K, batch=batch)(a, b, c)
    compare(c, a.astype(np.float64) @ b, "float32", name="C")


CONFIGS = {
    "native": ["1,1,1", "4,4,4", "3,8,2", "8,16,8", "2,3,16", "5,2,3"],
    "reshaped_rhs_only": [
        "1,1,1,1,0,0,0",
        "4,4,4,1,0,0,0",
        "4,4,4,2,1,0,0",
        "3,8,2,3,0,1,0",
        "5,3,16,2,1,1,0",
        "4,4,2,2,1,0,1",
        "2,4,8,2,1,1,1",
        "8,16,4,4,0,0,1",
    ],
    "reshaped": [
        "1,1,1,1,1,0,0,0,0",
        "4,4,4,1,1,0,0,0,0",
        "4,4,4,2,2,1,1,1,0",
        "3,8,2,3,2,0,1,0,0",
        "5,3,16,2,3,1,1,1,0",
        "4,4,2,2,2,1,1,0,1",
        "2,4,8,2,2,1,1,1,1",
        "8,16,4,1,4,0,0,0,1",
    ],
}
CASES = [(s, c) for s, cs in CONFIGS.items() for c in cs]


@pytest.mark.opencl
@pytest.mark.parametrize("strategy,config", CASES, ids=[f"{s}-{c}" for s, c in CASES])
def test_strategy_matches_numpy_on_odd_shape_batch_2(device, strategy, config):
    check_gemm(strategy, config, 37, 29, 23, 2, np.random.default_rng(1))


@pytest.mark.opencl
@pytest.mark.parametrize(
    "strategy,config",
    [
        ("native", "8,16,4"),
        ("reshaped_rhs_only", "8,16,4,2,0,0,0"),
        ("reshaped", "8,16,4,2,2,1,1,0,0"),
        ("reshaped", "4,4,4,2,2,1,1,1,1"),
    ],
)
@pytest.mark.parametrize("M,N,K", [(1, 17, 5), (64, 48, 40)])
def test_strategy_matches_numpy_2d(device, strategy, config, M, N, K):
    """A single row (an FC layer), and a shape the blocks divide."""
    check_gemm(strategy, config, M, N, K, 1, np.random.default_rng(2), two_d=True)


@pytest.mark.opencl
@pytest.mark.parametrize(
    "config", ["3,8,2,3,2,1,0,0,0", "5,4,4,2,3,0,1,1,0", "4,4,4,2,2,1,1,0,1", "2,4,8,2,3,1,0,1,1"]
)
def test_reshape_kernels_follow_the_block_layout(device, config):
    """reshape_lhs / reshape_rhs put element (row, k) of A and (k, col) of B exactly where
    ``BlockLayout.offset`` says, with zeros in the padding of edge blocks."""
    import pyopencl as cl

    rng = np.random.default_rng(3)
    M, N, K = 11, 13, 7
    gemm = AclGemm("reshaped", config, M, N, K)
    cfg = gemm.config
    a, b = random((M, K), rng), random((K, N), rng)
    gemm.upload(a, b)
    gemm.launch(skip=("gemm_reshaped",))
    q = device.queue
    lhs, rhs = lhs_layout(cfg, M, K), rhs_layout(cfg, N, K)
    got_l = np.empty(lhs.size, np.float32)
    cl.enqueue_copy(q, got_l, gemm.buffers["Ars"])
    if cfg.export_to_cl_image_rhs:
        img = np.empty((rhs.rows, rhs.row_stride // 4, 4), np.float32)
        cl.enqueue_copy(
            q, img, gemm.buffers["Brs"], origin=(0, 0), region=(rhs.row_stride // 4, rhs.rows)
        )
        got_r = img.reshape(-1)
    else:
        got_r = np.empty(rhs.size, np.float32)
        cl.enqueue_copy(q, got_r, gemm.buffers["Brs"])
    q.finish()
    a_pad = np.zeros((lhs.blocks * cfg.m0, lhs.kblocks * cfg.k0), np.float32)
    a_pad[:M, :K] = a
    for i in range(lhs.blocks):
        for kb in range(lhs.kblocks):
            for mm in range(cfg.m0):
                for kk in range(cfg.k0):
                    vec, ln = (kk, mm) if cfg.lhs_transposed else (mm, kk)
                    assert (
                        got_l[lhs.offset(i, kb, vec, ln)]
                        == a_pad[i * cfg.m0 + mm, kb * cfg.k0 + kk]
                    )
    b_pad = np.zeros((rhs.kblocks * cfg.k0, rhs.blocks * cfg.n0), np.float32)
    b_pad[:K, :N] = b
    for j in range(rhs.blocks):
        for kb in range(rhs.kblocks):
            for kk in range(cfg.k0):
                for nn in range(cfg.n0):
                    vec, ln = (nn, kk) if cfg.transpose_rhs else (kk, nn)
                    assert (
                        got_r[rhs.offset(j, kb, vec, ln)]
                        == b_pad[kb * cfg.k0 + kk, j * cfg.n0 + nn]
                    )


# ---- illegal configs: rejected before anything is built


@pytest.mark.parametrize(
    "strategy,row,message",
    [
        ("native", "4,5,4", "n0=5: no OpenCL vector type has 5 floats"),
        ("native", "4,4,32", "k0=32: no OpenCL vector type has 32 floats"),
        ("native", "9,4,4", "m0=9"),
        ("native", "4,4", "a native config has 3 values (m0,n0,k0), got 2"),
        ("native", "4,x,4", "must be integers"),
        ("reshaped_rhs_only", "4,4,4,1,2,0,0", "interleave_rhs must be 0 or 1, got 2"),
        (
            "reshaped_rhs_only",
            "4,2,4,1,0,0,1",
            "n0 (the width of a non-transposed RHS block row) must be 4, 8 or 16, got 2",
        ),
        (
            "reshaped_rhs_only",
            "4,4,3,1,0,1,1",
            "k0 (the width of a transposed RHS block row) must be 4, 8 or 16, got 3",
        ),
        (
            "reshaped",
            "5,4,4,1,1,0,0,0,0",
            "m0=5: with transpose_rhs=0 the LHS blocks are stored transposed",
        ),
        ("reshaped", "4,4,4,0,1,0,0,0,0", "v0 must be a positive integer"),
        ("gemmlowp", "4,4,4", "unknown GEMM strategy 'gemmlowp'"),
    ],
)
def test_invalid_config_is_rejected_with_a_clear_message(strategy, row, message):
    with pytest.raises(AclConfigError, match=None) as info:
        GEMMConfig.parse(strategy, row)
    assert message in str(info.value)
    assert isinstance(info.value, TensorschedError)


@pytest.mark.opencl
def test_image_too_wide_for_the_device_is_rejected_before_building(device, monkeypatch):
    import tensorsched.baselines.acl_gemm as acl_gemm

    def no_build(*args):
        raise AssertionError("built a program for an illegal config")

    monkeypatch.setattr(acl_gemm, "build_program", no_build)
    with pytest.raises(AclConfigError, match="image2d_max_width") as info:
        AclGemm("reshaped_rhs_only", "4,16,16,16,0,1,1", 4, 16, 40000)
    assert "use a smaller h0, or export_to_cl_image_rhs=0" in str(info.value)
    with pytest.raises(AclConfigError, match="GEMM N must be a positive integer"):
        AclGemm("native", "4,4,4", 4, 0, 4)


def test_default_search_lists_are_valid_and_sized():
    for s in STRATEGIES:
        cfgs = load_config_list(s, default_config_path(s))
        assert 20 <= len(cfgs) <= 60
        assert len({c.label for c in cfgs}) == len(cfgs), f"{s}: duplicate configs"
        assert all(len(c.row()) == len(COLUMNS[s]) for c in cfgs)


def test_gemm_param_list_is_read_headerless(tmp_path):
    path = tmp_path / "shapes.csv"
    path.write_text("1,1000,4096,1\n3136,256,2304,1\n\n")
    assert load_gemm_params(str(path)) == [(1, 1000, 4096, 1), (3136, 256, 2304, 1)]
    path.write_text("1,1000,4096\n")
    with pytest.raises(AclConfigError, match="expected 4 values M,N,K,B"):
        load_gemm_params(str(path))


# ---- the analyser on hand-made results


def rec(shape, strategy, config, total, gemm=None, status="ok"):
    M, N, K, B = shape
    return {
        "M": M,
        "N": N,
        "K": K,
        "B": B,
        "strategy": strategy,
        "config": config,
        "status": status,
        "total_ms": total,
        "gemm_ms": total if gemm is None else gemm,
    }


S1, S2, S3, S4 = (64, 64, 64, 1), (128, 64, 32, 1), (1, 1000, 512, 1), (256, 256, 256, 2)
HAND_MADE = [
    rec(S1, "native", "4,4,4", 1.004),
    rec(S1, "native", "8,8,4", 0.995),
    rec(S1, "native", "4,8,4", 1.200),
    rec(S1, "reshaped_rhs_only", "4,4,4,1,0,0,0", 0.990, gemm=0.900),
    rec(S1, "reshaped", "4,4,4,1,1,0,0,0,0", 0.100, status="wrong"),  # fast but wrong
    rec(S1, "reshaped", "8,8,4,1,1,0,0,0,0", 2.0),
]


def test_analyser_without_tolerance_takes_the_fastest():
    res = analyse(HAND_MADE, tolerance_ms=0.0)
    (s,) = res.shapes
    assert (s["strategy"], s["config"]) == ("reshaped_rhs_only", "4,4,4,1,0,0,0")
    assert s["per_strategy"]["native"]["config"] == "8,8,4"
    assert s["per_strategy"]["reshaped"]["config"] == "8,8,4,1,1,0,0,0,0"  # wrong never chosen


def test_analyser_with_tolerance_takes_the_earliest_of_the_equally_fast():
    res = analyse(HAND_MADE, tolerance_ms=0.02)
    (s,) = res.shapes
    # 1.004, 0.995 and 0.990 are within 0.02 ms: the simpler strategy, then the earlier config
    assert (s["strategy"], s["config"]) == ("native", "4,4,4")
    assert s["per_strategy"]["native"]["equally_fast"] == ["4,4,4", "8,8,4"]
    # the default tolerance (0.01 ms) separates 1.004 from 0.990 but not 0.995
    s = analyse(HAND_MADE).shapes[0]
    assert (s["strategy"], s["config"]) == ("native", "8,8,4")


def test_analyser_can_rank_by_the_gemm_kernel_alone():
    s = analyse(HAND_MADE, tolerance_ms=0.02, rank_by="gemm").shapes[0]
    assert (s["strategy"], s["config"]) == ("reshaped_rhs_only", "4,4,4,1,0,0,0")
    with pytest.raises(AclConfigError, match="rank_by"):
        analyse(HAND_MADE, rank_by="host")


def archetype_records():
    """X = native 4,4,4, Y = native 8,8,4, Z = reshaped_rhs_only 4,4,4,1,0,0,0.
    S1: X 1.000, Y 1.005 (equal within 0.01); S2: Y best, X far; S3: X best; S4: Z best."""
    X, Y, Z = ("native", "4,4,4"), ("native", "8,8,4"), ("reshaped_rhs_only", "4,4,4,1,0,0,0")
    times = {S1: (1.000, 1.005, 3.0), S2: (2.0, 1.0, 3.0), S3: (0.5, 0.9, 0.8), S4: (5.0, 5.0, 4.0)}
    return [rec(sh, *cand, t) for sh, ts in times.items() for cand, t in zip((X, Y, Z), ts)]


def test_archetypes_share_a_best_config():
    res = analyse(archetype_records(), tolerance_ms=0.01)
    got = [(a["strategy"], a["config"], a["shapes"]) for a in res.archetypes]
    # X is equally fast on S1 and S3, Y on S1 and S2: a tie broken by the earlier config (X)
    assert got == [
        ("native", "4,4,4", [list(S1), list(S3)]),
        ("native", "8,8,4", [list(S2)]),
        ("reshaped_rhs_only", "4,4,4,1,0,0,0", [list(S4)]),
    ]
    assert [a["representative"] for a in res.archetypes] == [list(S1), list(S2), list(S4)]
    assert res.overall_best["native"] == "4,4,4"  # equally fast on S1, S3 (and S4: 5.0)
    # without tolerance S1 has Y no more
    res0 = analyse(archetype_records(), tolerance_ms=0.0)
    assert [a["shapes"] for a in res0.archetypes] == [[list(S1), list(S3)], [list(S2)], [list(S4)]]


def test_archetype_cover_picks_the_config_shared_by_most_shapes():
    near = {
        "a": [("native", "1")],
        "b": [("native", "1"), ("native", "2")],
        "c": [("native", "2")],
        "d": [("native", "2"), ("native", "3")],
    }
    out = reduce_to_archetypes(near, lambda s, c: (0, int(c)))
    assert [(a["config"], a["shapes"]) for a in out] == [
        ("2", [list("b"), list("c"), list("d")]),
        ("1", [list("a")]),
    ]


def test_results_save_load_and_best_acl(tmp_path):
    res = analyse(archetype_records(), tolerance_ms=0.01)
    res.save(str(tmp_path))
    for name in (
        "acl_best.json",
        "acl_best.csv",
        "acl_archetypes.csv",
        "acl_search_list_native.csv",
    ):
        assert (tmp_path / name).exists(), name
    assert (tmp_path / "acl_archetypes.csv").read_text().split() == [
        "64,64,64,1",
        "128,64,32,1",
        "256,256,256,2",
    ]
    rows = (tmp_path / "acl_best.csv").read_text().splitlines()
    assert rows[0] == "M,N,K,B,strategy,config,ms,gflops,archetype"
    assert rows[1].startswith('64,64,64,1,native,"4,4,4",1.0000,')
    data = json.loads((tmp_path / "acl_best.json").read_text())
    assert data["tolerance_ms"] == 0.01 and len(data["shapes"]) == 4
    choice = best_acl(128, 64, 32, str(tmp_path))
    assert (choice.strategy, choice.config.label, choice.exact) == ("native", "8,8,4", True)
    near = best_acl(250, 250, 250, AclTuneResults.load(str(tmp_path)), batch=2)
    assert (near.strategy, near.tuned_shape, near.exact) == ("reshaped_rhs_only", S4, False)
    only = best_acl(256, 256, 256, res, batch=2, strategy="native")
    assert only.config.label == "4,4,4"


# ---- the GEMM method of convolution


def conv_ref(d, w, stride, pad):
    return conv2d_ref(d, w, stride, pad)


@pytest.mark.opencl
@pytest.mark.parametrize(
    "strategy,config",
    [
        ("native", "4,8,4"),
        ("reshaped_rhs_only", "4,4,4,2,1,0,1"),
        ("reshaped", "3,8,2,2,2,1,0,1,0"),
    ],
)
@pytest.mark.parametrize(
    "shape",
    [
        (2, 3, 9, 7, 5, 3, 3, 2, 1),
        (1, 6, 5, 6, 4, 1, 1, 1, 0),
        (1, 2, 8, 9, 3, 2, 3, (1, 2), (0, 1)),
    ],
    ids=["3x3s2p1", "1x1", "2x3-s1x2-p0x1"],
)
def test_im2col_conv_matches_numpy(device, strategy, config, shape):
    rng = np.random.default_rng(4)
    conv = AclConv2d(strategy, config, shape)
    N, CI, IH, IW, CO, KH, KW = shape[:7]
    d, w = random((N, CI, IH, IW), rng), random((CO, CI, KH, KW), rng)
    out = np.full(conv.out_shape, np.nan, np.float32)
    conv(d, w, out)
    assert not np.isnan(out).any()
    compare(out, conv_ref(d, w, conv.stride, conv.pad), "float32")
    t = conv.time(d, w, out, repeat=2, include_rhs_reshape=False)
    assert set(t.kernel_times) == {"im2col", "col2im", *conv.gemm.kernel_names} - {"reshape_rhs"}
    assert t.mean >= t.kernel_mean(conv.gemm.gemm_kernel) > 0


# ---- timing and the tuner end to end


@pytest.mark.opencl
def test_time_reports_total_and_gemm_only(device):
    rng = np.random.default_rng(5)
    gemm = AclGemm("reshaped", "4,4,4,2,2,1,1,0,0", 33, 20, 17)
    a, b = random((33, 17), rng), random((17, 20), rng)
    c = np.full((33, 20), np.nan, np.float32)
    t = gemm.time(a, b, c, repeat=3)
    compare(c, a.astype(np.float64) @ b, "float32")
    assert len(t.device_times) == 3 and set(t.kernel_times) == set(gemm.kernel_names)
    assert t.mean == pytest.approx(sum(t.kernel_means().values()))
    assert t.mean > t.kernel_mean(gemm.gemm_kernel) > 0


@pytest.mark.opencl
def test_tune_acl_records_invalid_and_wrong_and_never_chooses_them(device, tmp_path, monkeypatch):
    class Broken(AclGemm):
        """Native 2,4,4 writes zeros: a wrong result the runner must catch."""

        def __call__(self, a, b, c):
            super().__call__(a, b, c)
            if self.config.label == "2,4,4":
                c[...] = 0

    monkeypatch.setattr(acl_tuner, "AclGemm", Broken)
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("16,16,16,1\n1,16,40000,1\n")
    lists = {
        "native": ["2,4,4", "4,4,4"],
        "reshaped_rhs_only": ["4,4,4,1,0,0,0", "4,16,16,16,0,1,1"],
    }
    res = tune_acl(str(shapes), lists, out_dir=str(tmp_path / "out"), repeat=1)
    status = {(r["M"], r["K"], r["strategy"], r["config"]): r["status"] for r in res.records}
    assert status[(16, 16, "native", "2,4,4")] == "wrong"
    assert status[(1, 40000, "reshaped_rhs_only", "4,16,16,16,0,1,1")] == "invalid"
    assert all(s["per_strategy"]["native"]["config"] == "4,4,4" for s in res.shapes)
    invalid = next(r for r in res.records if r["status"] == "invalid")
    assert "image2d_max_width" in invalid["reason"]
    log = (tmp_path / "out" / "acl_benchmark.jsonl").read_text().splitlines()
    assert len(log) == 8
    again = tune_acl(str(shapes), lists, out_dir=str(tmp_path / "out"), repeat=1)  # resumes
    assert len((tmp_path / "out" / "acl_benchmark.jsonl").read_text().splitlines()) == 8
    assert [s["config"] for s in again.shapes] == [s["config"] for s in res.shapes]
    assert best_acl(16, 16, 16, str(tmp_path / "out")).exact


OCLGRIND_SCRIPT = """
import numpy as np
from tensorsched.baselines import AclGemm, AclConv2d
rng = np.random.default_rng(0)
for s, c in [("native", "3,8,2"), ("reshaped_rhs_only", "3,8,2,3,1,1,0"),
             ("reshaped_rhs_only", "4,4,4,2,1,0,1"), ("reshaped", "5,3,16,2,3,1,1,1,0"),
             ("reshaped", "2,4,8,2,2,1,0,0,1")]:
    a = rng.uniform(0.25, 1, (2, 7, 5)).astype(np.float32)
    b = rng.uniform(0.25, 1, (2, 5, 9)).astype(np.float32)
    out = np.full((2, 7, 9), np.nan, np.float32)
    AclGemm(s, c, 7, 9, 5, batch=2)(a, b, out)
    assert np.allclose(out, a @ b, rtol=1e-5), (s, c)
conv = AclConv2d("native", "4,4,4", (2, 3, 6, 5, 5, 3, 3, 2, 1))
out = np.full(conv.out_shape, np.nan, np.float32)
conv(rng.uniform(size=(2, 3, 6, 5)).astype(np.float32),
     rng.uniform(size=(5, 3, 3, 3)).astype(np.float32), out)
assert not np.isnan(out).any()
"""


@pytest.mark.opencl
def test_kernels_are_clean_under_oclgrind():
    """No out-of-bounds access and no data race (Oclgrind's memory and race checkers) at the
    edges of every strategy, images included. (Its uninitialised-value checker is left off: it
    reports fully written float16 values passed to a function, and image texels, as
    uninitialised.)"""
    from tensorsched.runtime.oclgrind import available

    if not available():
        pytest.skip("the Oclgrind OpenCL platform is not installed")
    env = {**os.environ, "TS_DEVICE": "oclgrind", "OCLGRIND_DATA_RACES": "1"}
    env.pop("OCLGRIND_UNINITIALIZED", None)
    proc = subprocess.run(
        [sys.executable, "-c", OCLGRIND_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.strip() == "", proc.stderr[-3000:]
