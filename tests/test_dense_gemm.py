"""A dense layer of many rows (a transformer's tokens) scheduled as a GEMM: ``dense``'s
``gemm_gpu`` and ``gemm_cpu`` templates (the GEMM templates' schedules and knobs on the data
times the weight transposed by a kernel of its own). Each config checked against numpy on
random data into a NaN-poisoned output, at shapes no tile divides; the transposition runs
once when a network is built; the graph picks them from ``DENSE_GEMM_ROWS`` rows."""

import json

import numpy as np
import pytest

import tensorsched as ts
from tensorsched.graph import Graph, build
from tensorsched.graph.tasks import DENSE_GEMM_ROWS, choose_template
from tensorsched.ops.dense import dense_ref
from tensorsched.ops.templates import GEMM_VIEWS
from tensorsched.runtime.device import current_limits
from tensorsched.tune import dispatch
from tensorsched.tune.model import knobs_of
from tensorsched.tune.task import Task

RNG = np.random.default_rng(5)


def run(task, config):
    s, args, _ = task.instantiate(config)
    mod = ts.build(s, args, target="opencl")
    n, o, k = task.shape
    d = RNG.standard_normal((n, k)).astype(np.float32)
    w = RNG.standard_normal((o, k)).astype(np.float32)
    b = RNG.standard_normal(o).astype(np.float32)
    out = np.full((n, o), np.nan, np.float32)
    mod(*([d, w, b] if task.epilogue else [d, w]), out)
    ref = dense_ref(d, w, b if task.epilogue else None)
    if task.epilogue:
        ref = np.maximum(ref, 0)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("template", ["gemm_gpu", "gemm_cpu"])
@pytest.mark.parametrize("shape", [(37, 53, 29), (1, 7, 13), (130, 64, 200)])
def test_dense_as_a_gemm_matches_numpy(template, shape):
    epilogue = ("bias", "relu") if shape[0] == 37 else ()
    task = Task("dense", template, shape, "float32", epilogue)
    run(task, None)
    space = task.space()
    rng = np.random.default_rng(shape[0])
    for _ in range(200):  # a random valid point of the GEMM template's space
        config = space.point(int(rng.integers(space.size())))
        if task.instantiate(config)[2].valid:
            run(task, config)
            break


def test_the_gemm_templates_share_the_gemm_logs_knobs():
    for template, gemm in (("gemm_gpu", "gpu_tiled"), ("gemm_cpu", "cpu")):
        assert GEMM_VIEWS[("dense", template)][0] == gemm
        dense = Task("dense", template, (64, 96, 128), "float32", ())
        assert GEMM_VIEWS[("dense", template)][1](dense.shape) == (64, 96, 128)
        assert knobs_of(dense.space()) == knobs_of(Task("gemm", gemm, (64, 96, 128)).space())


def test_a_gpu_takes_the_gemm_template_for_few_rows_where_the_logs_know_so_few(tmp_path):
    """On a GPU a dense layer of fewer than ``DENSE_GEMM_ROWS`` rows takes the GEMM template
    where the logs its untuned config is predicted from hold a GEMM of as few rows (on the
    H200, 0.99x-5.5x the matrix-vector template at 1-16 rows); where they hold only taller
    ones, the matrix-vector template (the GEMM's defaults ran 0.40x-0.77x of it)."""
    device = current_limits().name
    for rows, tall in ((1, True), (3, True), (1, False), (7, False)):
        log = tmp_path / f"{rows}_{tall}.jsonl"
        logged = Task("gemm", "gpu_tiled", (2 if tall else 1, 1000, 300))
        with open(log, "w") as f:
            rec = {"task": json.loads(logged.key()), "device": device, "config": {},
                   "status": "ok", "device_ms": 0.01, "gflops": logged.flop / 1e4, "error": "",
                   "timestamp": 1.0}  # fmt: skip
            f.write(json.dumps(rec) + "\n")
        with dispatch.apply_best(str(log), device=device):
            gemm = rows >= logged.shape[0]
            want = "gemm_gpu" if gemm else "gpu"
            assert choose_template("dense", (rows, 1024, 256), (), True) == want, (rows, tall)
            assert choose_template("dense", (rows, 1024, 256), (), False) == "cpu"


def test_rows_choose_the_template_and_the_transposition_runs_once():
    for gpu, device in ((True, "gpu"), (False, "cpu")):
        rows = DENSE_GEMM_ROWS[device]
        assert choose_template("dense", (rows - 1, 64, 32), (), gpu) == device
        assert choose_template("dense", (rows, 64, 32), (), gpu) == f"gemm_{device}"
    g = Graph("tokens")
    x = g.input("x", (24, 32))
    w = g.constant("w", RNG.standard_normal((40, 32)).astype(np.float32))
    g.output(g.dense(x, w, name="fc"))
    net = build(g)
    (layer,) = [la for la in net.layers if la.node.name == "fc"]
    assert layer.kernel.startswith("dense[gemm_")
    assert layer.prepacked == 1  # the weight's transposition, at build time
    xs = RNG.standard_normal((24, 32)).astype(np.float32)
    np.testing.assert_allclose(net(xs), xs @ g.constants["w"].T, rtol=1e-4, atol=1e-4)
