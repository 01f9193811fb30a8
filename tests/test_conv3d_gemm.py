"""3-d convolution as an implicit GEMM (``ops.conv3d.conv3d_ncdhw_implicit_gemm``) and the
``conv3d`` tuning task kind whose templates schedule it with the GEMM templates' schedules
(``ops.templates.conv3d``: ``implicit_gemm`` with ``gemm_gpu``'s knobs, ``gemm_cpu`` with the
CPU GEMM's; ``direct`` for any groups).

The declaration and every template against ``conv3d_ref`` on random non-zero data at odd
sizes (strides 1 and 2, asymmetric pads, dilations, batches 1 and 2, a temporal-only 3x1x1,
a spatial-only 1x3x3 and 1x1x1 kernels), on the python target and on the OpenCL device,
outputs poisoned with NaN (``runtime.numerics.check_numerics``); the task's key and shape
through a log and back, never taken for a conv2d task; the GEMM view that puts a conv3d task
in the ``gpu_tiled`` / ``cpu`` families, and a config predicted from the shipped H200 log
that is legal under the H200's limits; the graph building an ungrouped conv3d node through
its task (a grouped one keeps the direct kernel), and ``extract_tasks`` finding it."""

import numpy as np
import pytest

from tensorsched.errors import ComputeError
from tensorsched.graph import Graph, build, run_reference
from tensorsched.graph.tasks import extract_tasks, node_task, workload
from tensorsched.ops.conv3d import Conv3dShape, conv3d_ncdhw_implicit_gemm, conv3d_ref
from tensorsched.ops.space import Config
from tensorsched.ops.templates import TEMPLATES, gemm_view
from tensorsched.runtime.device import DeviceLimits
from tensorsched.runtime.numerics import check_numerics
from tensorsched.schedules.schedule import create_schedule
from tensorsched.tune import model as M
from tensorsched.tune.features import Lowering, shape_vector
from tensorsched.tune.log import LogWriter, read_log
from tensorsched.tune.record import Record
from tensorsched.tune.task import Task, TaskError

RNG = np.random.default_rng(53)

# (id, data shape, kernel shape, strides, pads, dilations)
CASES = [
    ("3x3x3-pad1", (1, 3, 5, 6, 7), (4, 3, 3, 3, 3), 1, 1, 1),
    ("stride2-batch2", (2, 2, 7, 9, 5), (5, 2, 3, 3, 3), 2, 1, 1),
    ("asym-pads-dilated", (1, 3, 6, 7, 9), (3, 3, 2, 3, 2), (1, 2, 1), (0, 1, 2, 1, 0, 1),
     (2, 1, 3)),
    ("temporal-3x1x1-batch2", (2, 4, 7, 5, 5), (6, 4, 3, 1, 1), 1, (1, 0, 0, 1, 0, 0), 1),
    ("spatial-1x3x3-s2", (1, 4, 5, 7, 6), (5, 4, 1, 3, 3), (1, 2, 2), (0, 1, 1, 0, 1, 1), 1),
    ("1x1x1", (1, 6, 3, 5, 7), (7, 6, 1, 1, 1), 1, 0, 1),
    ("1x1x1-s2-batch2", (2, 6, 3, 5, 7), (7, 6, 1, 1, 1), 2, 0, 1),
]  # fmt: skip
IDS = [c[0] for c in CASES]
SHAPES = [Conv3dShape.make(*c[1:]) for c in CASES]
GEMM_TEMPLATES = ("implicit_gemm", "gemm_cpu")
H200 = DeviceLimits(
    "NVIDIA CUDA / NVIDIA H200", 1024, (1024, 1024, 64), 49152, 132, group_ordering=True, gpu=True
)
H200_LOGS = M.shipped_logs(H200.name)  # the package's nvidia-cuda-nvidia-h200.jsonl


def _ref(sh):
    return lambda d, k: conv3d_ref(d, k, sh.strides, sh.pads, sh.dilations)


def _check_task(task, target, config=None):
    s, args, cfg = task.instantiate(config)
    assert cfg.valid, cfg.constraints
    check_numerics(s, args, lambda *x: task.reference(list(x)), target=target)


def _fields(task):
    return {k: v for k, v in task.__dict__.items() if not k.startswith("_")}


# ---- the declaration


@pytest.mark.parametrize("sh", SHAPES, ids=IDS)
def test_declaration_matches_numpy(sh):
    data, kernel, out = conv3d_ncdhw_implicit_gemm(sh)
    assert out.shape == (sh.N, sh.CO, *sh.out_dhw)
    check_numerics(create_schedule(out.op), [data, kernel, out], _ref(sh))


def test_declaration_is_the_gemm_view():
    sh = SHAPES[1]
    _, _, out = conv3d_ncdhw_implicit_gemm(sh)
    gemm = out.op.input_tensors[0]
    od, oh, ow = sh.out_dhw
    assert gemm.name == "conv_gemm" and gemm.shape == (sh.CO, sh.N * od * oh * ow)
    col, mat = {t.name: t for t in gemm.op.input_tensors}, sh.CI * 27
    assert col["kernel_mat"].shape == (sh.CO, mat) and col["data_col"].shape[0] == mat


def test_grouped_shapes_are_refused_by_the_gemm_form():
    sh = Conv3dShape.make((1, 4, 3, 5, 5), (4, 2, 3, 3, 3), groups=2)
    with pytest.raises(ComputeError, match="groups == 1"):
        conv3d_ncdhw_implicit_gemm(sh)
    for template in GEMM_TEMPLATES:
        with pytest.raises(ComputeError, match="groups == 1"):
            Task("conv3d", template, sh.astuple()).instantiate(None)
    _check_task(Task("conv3d", "direct", sh.astuple(), epilogue=("bias",)), "python")


# ---- the templates, through their tuning tasks


@pytest.mark.parametrize("sh", SHAPES, ids=IDS)
@pytest.mark.parametrize("template", sorted(TEMPLATES["conv3d"]))
def test_templates_match_numpy(template, sh):
    _check_task(Task("conv3d", template, sh.astuple(), epilogue=("bias", "relu")), "python")


@pytest.mark.parametrize("template", sorted(TEMPLATES["conv3d"]))
def test_templates_on_the_device(template, device):
    for i, sh in enumerate(SHAPES):
        ep = ("bias", "relu") if i % 2 else ()
        _check_task(Task("conv3d", template, sh.astuple(), epilogue=ep), "opencl")


def test_other_knobs_on_the_device(device):
    """Configs away from the defaults: ragged tiles shifted inwards, a peeled K step, a K
    split over work-groups (the GPU template), a residual epilogue."""
    sh = SHAPES[2]
    cpu = {"tile_y": (1, 4), "tile_x": (2, 8), "vec": 4, "tile_k": (8,), "tail": "shift",
           "tail_k": "peel"}  # fmt: skip
    gpu = {"tile_y": (1, 8, 1), "tile_x": (1, 8, 4), "tile_k": (8,), "split_k": 2,
           "tail": "shift", "double_buffer": "none"}  # fmt: skip
    for template, config in (("gemm_cpu", cpu), ("implicit_gemm", gpu)):
        task = Task("conv3d", template, sh.astuple(), epilogue=("add", "relu"))
        _check_task(task, "opencl", config)
        _check_task(task, "python", config)


# ---- the task: its key, its shape, its GEMM view


def test_task_key_and_shape_round_trip_through_a_log(tmp_path):
    sh = SHAPES[2]
    task = Task("conv3d", "implicit_gemm", sh.astuple(), epilogue=("bias", "relu"))
    assert task.shape == sh.astuple() and len(task.shape) == 22
    assert all(type(x) is int for x in task.shape)
    assert task.flop == sh.flop
    conv2d = Task("conv2d", "implicit_gemm", (1, 3, 7, 9, 3, 3, 3, 1, 1))
    log = tmp_path / "mixed.jsonl"
    writer = LogWriter(str(log))
    for t in (task, conv2d):
        config = {"tile_k": (8,), "unroll_k": 0}
        writer.append(Record(_fields(t), "gpu", config, "ok", device_ms=0.05))
    back = read_log(str(log))
    assert [r.task["kind"] for r in back] == ["conv3d", "conv2d"]
    again = Task.from_dict(back[0].task)
    assert again == task and again.key() == task.key() == back[0].task_key()
    assert again.shape_args()[0] == sh and back[0].config == {"tile_k": (8,), "unroll_k": 0}
    assert back[1].task_key() == conv2d.key() != task.key()


def test_a_conv3d_shape_is_never_a_conv2d_one():
    sh = SHAPES[0]
    with pytest.raises(TaskError, match="conv2d shape must be"):
        Task("conv2d", "implicit_gemm", sh.astuple())
    with pytest.raises(TaskError, match="conv3d shape must be 22 ints"):
        Task("conv3d", "implicit_gemm", (1, 3, 7, 9, 3, 3, 3, 1, 1))
    with pytest.raises(TaskError, match="conv3d shape"):  # a window that does not fit
        Task("conv3d", "gemm_cpu", (*sh.astuple()[:6], 9, *sh.astuple()[7:]))
    record = {"kind": "conv2d", "template": "implicit_gemm", "shape": list(sh.astuple())}
    with pytest.raises(TaskError):
        Task.from_dict(record)


def test_gemm_view_and_family():
    sh = SHAPES[1]
    od, oh, ow = sh.out_dhw
    mnk = (sh.CO, sh.N * od * oh * ow, sh.CI * 27)
    gpu = Task("conv3d", "implicit_gemm", sh.astuple())
    cpu = Task("conv3d", "gemm_cpu", sh.astuple())
    assert gemm_view("conv3d", "implicit_gemm", sh.astuple()) == ("gpu_tiled", mnk)
    assert shape_vector(gpu) == shape_vector(cpu) == tuple(float(x) for x in mnk)
    assert M.family(gpu) == M.family(Task("gemm", "gpu_tiled", mnk))
    assert M.family(gpu) == M.family(Task("conv2d", "implicit_gemm", (1, 3, 7, 9, 3, 3, 3, 1, 1)))
    assert M.family(cpu) == M.family(Task("gemm", "cpu", mnk))
    direct = Task("conv3d", "direct", sh.astuple())
    assert gemm_view("conv3d", "direct", sh.astuple()) is None
    assert M.family(direct)[0] == "conv3d"
    # the GEMM templates' knobs: a gpu_tiled config is a point of the conv3d task's space
    assert M.knobs_of(gpu.space()) == M.knobs_of(Task("gemm", "gpu_tiled", mnk).space())


def test_untuned_prediction_from_the_shipped_h200_log():
    """An r3d_18-like layer (64 -> 128 channels, 3x3x3, stride 2) and a temporal 3x1x1 one:
    configs from the shipped GEMM / conv2d records, legal under the H200's limits."""
    layers = [
        Conv3dShape.make((1, 64, 8, 28, 28), (128, 64, 3, 3, 3), 2, 1),
        Conv3dShape.make((2, 32, 5, 14, 14), (48, 32, 3, 1, 1), 1, (1, 0, 0, 1, 0, 0)),
    ]
    for sh in layers:
        task = Task("conv3d", "implicit_gemm", sh.astuple(), epilogue=("bias", "relu"))
        records = M.history(task, H200.name, H200_LOGS)
        assert records and all(r.task["kind"] in ("gemm", "conv2d") for r in records)
        config = M.predict_config(task, records, H200)
        assert config is not None and M.portable(config, task.space())
        _, _, cfg = task.instantiate(Config(config, H200))
        assert cfg.valid, cfg.constraints
        assert Lowering(H200)(task, config)[1] is None


def test_a_predicted_h200_config_computes_the_convolution():
    sh = SHAPES[3]
    task = Task("conv3d", "implicit_gemm", sh.astuple(), epilogue=("bias", "relu"))
    config = M.predict_config(task, M.history(task, H200.name, H200_LOGS), H200)
    assert config is not None
    _check_task(task, "python", config)


# ---- the graph


def _graph(groups=1, bias=True):
    g = Graph("video")
    x = g.input("x", (2, 4, 5, 9, 7))
    w = g.constant("w", RNG.uniform(-1, 1, (6, 4 // groups, 3, 1, 3)).astype(np.float32))
    b = g.constant("b", RNG.uniform(-1, 1, (6,)).astype(np.float32)) if bias else None
    y = g.conv3d(x, w, b, strides=(1, 2, 2), pads=(1, 0, 1, 1, 0, 0), groups=groups)
    y = g.relu(y)
    w2 = g.constant("w2", RNG.uniform(-1, 1, (5, 6, 1, 3, 3)).astype(np.float32))
    g.output(g.conv3d(y, w2, pads=(0, 1, 1, 0, 1, 1), dilations=(1, 2, 1)))
    return g


def test_graph_builds_an_ungrouped_conv3d_through_its_task():
    g = _graph()
    net = build(g, target="python")
    convs = [layer for layer in net.layers if layer.node.op == "conv3d"]
    assert [layer.task.kind for layer in convs] == ["conv3d", "conv3d"]
    assert convs[0].task.epilogue == ("bias", "relu") and convs[1].task.epilogue == ()
    assert {layer.task.template for layer in convs} == {"gemm_cpu"}
    x = RNG.uniform(-1, 1, (2, 4, 5, 9, 7)).astype(np.float32)
    ref = run_reference(g, x)[g.outputs[0]]
    out = np.asarray(net(x))
    assert np.abs(out - ref).max() <= 1e-5 * np.abs(ref).max()
    opt = net.graph
    node = next(nd for nd in opt.topo_nodes() if nd.op == "conv3d")
    assert node_task(opt, node, gpu=True).template == "implicit_gemm"
    assert workload(opt, node).flop == node_task(opt, node, gpu=True).flop
    tasks = extract_tasks(opt, gpu=True)
    assert [(t.kind, t.template, n) for t, n in tasks] == [("conv3d", "implicit_gemm", 1)] * 2


def test_a_grouped_conv3d_keeps_the_direct_kernel():
    g = _graph(groups=2, bias=False)
    net = build(g, target="python")
    first = next(layer for layer in net.layers if layer.node.op == "conv3d")
    assert first.task is None and workload(net.graph, first.node) is None
    assert [t.kind for t, _ in extract_tasks(net.graph, gpu=True)] == ["conv3d"]
    x = RNG.uniform(-1, 1, (2, 4, 5, 9, 7)).astype(np.float32)
    ref = run_reference(g, x)[g.outputs[0]]
    assert np.abs(np.asarray(net(x)) - ref).max() <= 1e-5 * np.abs(ref).max()


def test_graph_on_the_device(device):
    import pyopencl as cl

    g = _graph()
    net = build(g)
    assert all(layer.task is not None for layer in net.layers if layer.node.op == "conv3d")
    q = net.device.run_queue
    for name in {nd.output for nd in net.graph.topo_nodes()}:
        buf = net._bufs.get(name)
        if buf is not None:
            cl.enqueue_fill_buffer(q, buf, np.float32(np.nan), 0, buf.size)
    q.finish()
    x = RNG.uniform(-1, 1, (2, 4, 5, 9, 7)).astype(np.float32)
    out = np.asarray(net(x))
    ref = run_reference(g, x)[g.outputs[0]]
    assert not np.isnan(out).any()
    assert np.abs(out - ref).max() <= 1e-5 * np.abs(ref).max()
