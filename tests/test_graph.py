"""The graph layer: shape inference and its errors, the graph passes (BN folding, epilogue
fusion, memory planning), the executor on the Python target and on the OpenCL device (against
numpy; fusion and BN folding counted in kernels launched), task extraction.

Tolerance: the built network against the float64 numpy reference, max |out - ref| / max |ref|
under 1e-5 (float32 accumulation over at most a few hundred terms)."""

import numpy as np
import pytest

from tensorsched.graph import Graph, GraphError, build, extract_tasks, optimize, run_reference
from tensorsched.graph.passes import PIPELINE, fold_constants, plan_memory
from tensorsched.nets import resnet18

TOL = 1e-5


def rel_err(out, ref):
    return float(np.max(np.abs(np.asarray(out, np.float64) - ref)) / np.max(np.abs(ref)))


def tiny_cnn(seed=0, size=7):
    """conv-BN-ReLU, a conv with bias plus a residual add and ReLU6, a standalone add and
    clip, max pool, global pool, dense with bias, softmax: 7 channels, odd sizes."""
    rng = np.random.default_rng(seed)
    g = Graph("tiny")
    x = g.input("x", (1, 3, size, size))
    c = g.constant
    y = g.conv2d(x, c("w1", rng.standard_normal((6, 3, 3, 3)) * 0.3), pads=1)
    bn = [
        ("g", rng.uniform(0.5, 1.5, 6)),
        ("b", rng.standard_normal(6)),
        ("m", rng.standard_normal(6) * 0.1),
        ("v", rng.uniform(0.5, 1.5, 6)),
    ]
    y = g.relu(g.batch_norm(y, *[c(n, v) for n, v in bn]))
    z = g.conv2d(
        y, c("w2", rng.standard_normal((6, 6, 3, 3)) * 0.2), c("b2", rng.standard_normal(6)), pads=1
    )
    z = g.clip(g.add(z, y), 0.0, 6.0)
    z = g.clip(g.add(z, y), -1.0, 3.0)  # an add after a fused node, a clip that is no ReLU6
    z = g.max_pool2d(z, 3, 2, 1)
    z = g.flatten(g.global_avg_pool2d(z))
    z = g.dense(z, c("fc", rng.standard_normal((5, 6))), c("fcb", rng.standard_normal(5)))
    g.output(g.softmax(z))
    x_in = rng.standard_normal((1, 3, size, size)).astype(np.float32)
    return g, x_in


# ---- shape inference and its errors


def test_shapes_are_inferred():
    g, _ = tiny_cnn()
    shapes = {n.op: g.tensors[n.output].shape for n in g.topo_nodes()}
    assert shapes["conv2d"] == (1, 6, 7, 7)
    assert shapes["max_pool2d"] == (1, 6, 4, 4)
    assert shapes["dense"] == (1, 5)


@pytest.mark.parametrize(
    "build_bad, message",
    [
        (lambda g, x: g.conv2d(x, g.constant("w", np.ones((4, 5, 3, 3)))), "expects 5"),
        (lambda g, x: g.conv2d(x, g.constant("w", np.ones((4, 3, 9, 9)))), "does not fit"),
        (lambda g, x: g.max_pool2d(x, 2, 2, 2), "smaller than the kernel"),
        (lambda g, x: g.reshape(x, (5, -1)), "cannot be reshaped"),
        (lambda g, x: g.add(x, g.constant("c", np.ones(4))), "do not broadcast"),
        (lambda g, x: g.dense(x, g.constant("w", np.ones((3, 3)))), "must have 2 dims"),
        (lambda g, x: g.relu("nope"), "reads 'nope', which no node defines"),
        (lambda g, x: g.softmax(x, axis=4), "axis 4 out of range"),
        (lambda g, x: g.input("huge", (1 << 20, 1 << 20)), "more than"),
    ],
)
def test_malformed_graph_is_a_graph_error_naming_the_node(build_bad, message):
    g = Graph()
    x = g.input("x", (1, 3, 8, 8))
    with pytest.raises(GraphError, match=message):
        build_bad(g, x)


# ---- passes


def test_bn_folded_and_epilogues_fused_same_numbers():
    g, x = tiny_cnn()
    o = optimize(g)
    ops = [n.op for n in o.topo_nodes()]
    assert "batch_norm" not in ops and "relu" not in ops
    convs = [n for n in o.topo_nodes() if n.op == "conv2d"]
    assert [tuple(s[0] for s in c.epilogue) for c in convs] == [
        ("bias", "relu"),
        ("bias", "add", "clip"),
    ]
    # the standalone add and the clip to -1..3 (no ReLU6): one kernel of their own
    (fused,) = [n for n in o.topo_nodes() if n.op == "fused"]
    assert [s[0] for s in fused.attrs["steps"]] == ["add", "clip"]
    assert rel_err(run_reference(o, x)["softmax"], run_reference(g, x)["softmax"]) < TOL
    assert len(g.nodes) == 13 and len(o.nodes) == 8


def test_input_graph_is_not_changed_by_the_passes():
    g, _ = tiny_cnn()
    before = [(n.name, n.op, list(n.inputs)) for n in g.topo_nodes()]
    optimize(g)
    assert [(n.name, n.op, list(n.inputs)) for n in g.topo_nodes()] == before


def test_constant_subgraph_is_folded():
    g = Graph()
    x = g.input("x", (1, 4))
    w = g.relu(g.constant("w", -np.arange(8.0).reshape(2, 4) + 3))
    g.output(g.dense(x, w))
    o = fold_constants(g)
    assert [n.op for n in o.topo_nodes()] == ["dense"]
    assert o.constants[w].min() == 0


def test_memory_plan_reuses_buffers_and_never_overlaps_live_tensors():
    g = optimize(resnet18(image_size=64, classes=10))
    plan = g.plan
    inter = [n.output for n in g.topo_nodes() if n.output not in g.outputs]
    assert len(plan.sizes) < len(inter) / 3
    order = g.topo_nodes()
    alias = plan.alias
    first = {alias.get(n.output, n.output): i for i, n in reversed(list(enumerate(order)))}
    last = {}
    for i, n in enumerate(order):
        for t in n.inputs:
            last[alias.get(t, t)] = i
    live = [(first[t], last.get(t, first[t]), s) for t, s in plan.slot.items() if t not in alias]
    for a in live:
        for b in live:
            if a is not b and a[2] == b[2]:
                assert a[1] <= b[0] or b[1] <= a[0]  # a tensor is free once its last reader ran


def test_pipeline_is_one_named_list():
    assert [p.name for p in PIPELINE] == [
        "fold_constants",
        "fold_batch_norm",
        "fuse_layer_norm",
        "fuse_epilogues",
        "fuse_injective",
        "plan_memory",
    ]


def test_task_extraction_deduplicates():
    g = optimize(resnet18())
    tasks = extract_tasks(g, gpu=False)
    assert sum(count for _, count in tasks) == 21  # 20 convs and the dense layer
    assert len(tasks) == 16  # conv1, 2 in layer1, 4 in each later stage, the dense
    assert len({t.key() for t, _ in tasks}) == len(tasks)


# ---- executor


def test_python_target_matches_numpy():
    g, x = tiny_cnn(size=5)
    net = build(g, target="python")
    out = net(x)
    assert rel_err(out, run_reference(g, x)["softmax"]) < TOL


@pytest.mark.opencl
def test_opencl_matches_numpy_and_fusion_saves_kernels(device):
    g, x = tiny_cnn()
    ref = run_reference(g, x)["softmax"]
    fused = build(g, device=device)
    unfused = build(plan_memory(fold_constants(g)), device=device)
    err_fused, err_unfused = rel_err(fused(x), ref), rel_err(unfused(x), ref)
    print(f"max relative error: fused {err_fused:.2e}, unfused {err_unfused:.2e} (tol {TOL})")
    assert err_fused < TOL and err_unfused < TOL
    # unfused: batch_norm, relu, add, clip (ReLU6), and the standalone add and clip as two
    # kernels rather than one (fuse_injective): 5 kernels more
    assert unfused.kernels_per_run - fused.kernels_per_run == 5
    assert len(unfused.layers) - len(fused.layers) == 5
    assert fused.zero_copy == bool(device.cl_device.host_unified_memory)


@pytest.mark.opencl
def test_weight_only_kernels_run_once_at_build_time(device, monkeypatch):
    """Seed 003's spatial pack packs the kernel (``kernel_vec``) once, at build time; the CPU
    default (``gemm_cpu``) reads the weights in their own order and packs nothing."""
    from tensorsched.graph import tasks

    g, x = tiny_cnn()
    ref = run_reference(g, x)["softmax"]
    default = build(g, device=device)
    convs = [layer for layer in default.layers if layer.node.op == "conv2d"]
    if not device.is_gpu:
        assert {layer.task.template for layer in convs} == {"gemm_cpu"}
        assert all(layer.prepacked == 0 for layer in convs)
    monkeypatch.setitem(tasks.TEMPLATE_CHOICE["conv2d"], "cpu", ("spatial_pack",))
    monkeypatch.setitem(tasks.TEMPLATE_CHOICE["conv2d"], "gpu", ("spatial_pack",))
    packed = build(g, device=device)
    assert rel_err(packed(x), ref) < TOL
    convs = [layer for layer in packed.layers if layer.node.op == "conv2d"]
    assert all(layer.prepacked >= 1 for layer in convs)
    assert all("kernel_vec" not in launch.name for layer in convs for launch in layer.launches)


@pytest.mark.opencl
def test_profile_is_a_table_per_layer(device):
    g, x = tiny_cnn()
    net = build(g, device=device)
    p = net.profile(x, repeat=2)
    assert len(p.rows) == len(net.layers)
    assert abs(sum(r.percent for r in p.rows) - 100) < 1e-6
    text = str(p)
    assert "GFLOP/s" in text and "conv2d[" in text and "total" in text


@pytest.mark.opencl
def test_net_runs_on_the_queue_without_profiling(device, monkeypatch):
    """A call enqueues on the device's run queue (no profiling: cheaper launches) and drains
    it; profile() times on the profiling queue; calls and profiles interleave correctly."""
    import pyopencl as cl

    g, x = tiny_cnn()
    ref = run_reference(g, x)["softmax"]
    net = build(g, device=device)
    props = device.run_queue.get_info(cl.command_queue_info.PROPERTIES)
    assert not props & cl.command_queue_properties.PROFILING_ENABLE
    used = []
    real = cl.enqueue_nd_range_kernel
    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", lambda q, *a: used.append(q) or real(q, *a))
    x2 = x * 0.5  # another input: the calls must not reuse a stale result
    out1 = net(x)
    assert used and all(q is device.run_queue for q in used)
    used.clear()
    net.profile(x2, repeat=1, warmup=0)
    assert used and all(q is device.queue for q in used)
    assert rel_err(out1, ref) < TOL
    assert rel_err(net(x2), run_reference(g, x2)["softmax"]) < TOL
    assert rel_err(net(x), ref) < TOL


@pytest.mark.opencl
def test_net_input_checked(device):
    g, x = tiny_cnn(size=5)
    net = build(g, device=device)
    with pytest.raises(GraphError, match="has shape"):
        net(x[:, :2])


def pooled_residual():
    rng = np.random.default_rng(5)
    g = Graph("pools")
    x = g.input("x", (1, 3, 9, 9))
    a = g.conv2d(x, g.constant("wa", rng.standard_normal((4, 3, 3, 3))), pads=1)
    b = g.conv2d(x, g.constant("wb", rng.standard_normal((4, 3, 1, 1))))
    y = g.max_pool2d(a, 3, 2, 1)
    z = g.avg_pool2d(b, 3, 2, 1)
    out = g.relu(g.add(y, z))
    g.output(
        g.relu(g.add(g.global_avg_pool2d(out), g.constant("c", rng.standard_normal((1, 4, 1, 1)))))
    )
    return g, rng.standard_normal((1, 3, 9, 9)).astype(np.float32)


def test_pools_take_elementwise_epilogues():
    g, x = pooled_residual()
    o = optimize(g)
    eps = {n.op: tuple(s[0] for s in n.epilogue) for n in o.topo_nodes()}
    assert eps["max_pool2d"] == ("add", "relu") and eps["global_avg_pool2d"] == ("add", "relu")
    assert "add" not in eps and "relu" not in eps
    ref = run_reference(g, x)[g.outputs[0]]
    assert rel_err(run_reference(o, x)[o.outputs[0]], ref) < TOL
    assert rel_err(build(g, target="python")(x), ref) < TOL


@pytest.mark.opencl
def test_pools_with_epilogues_on_the_device(device):
    g, x = pooled_residual()
    net = build(g, device=device)
    assert rel_err(net(x), run_reference(g, x)[g.outputs[0]]) < TOL
    assert len(net.layers) == 5  # two convs, three pools: the adds and ReLUs are inside
