"""Channels-last (NHWC) on CPU devices: the vectorizer's shared-test select, the NHWC
templates against numpy at odd sizes, and ``passes.channels_last`` choosing where a network
runs channels-last (layouts, transforms, kernels launched, values).

Tolerance: max |out - ref| / max |ref| under 1e-5 against float64 numpy (float32 sums of at
most a few hundred terms)."""

import numpy as np
import pytest

import tensorsched as ts
from tensorsched.graph import Graph, build, optimize, run_reference
from tensorsched.graph.passes import channels_last, for_device
from tensorsched.graph.tasks import extract_tasks
from tensorsched.ops.conv2d import ConvShape, conv2d_ref
from tensorsched.ops.depthwise import GroupConvShape, group_conv2d_ref
from tensorsched.ops.nn import epilogue_ref
from tensorsched.ops.space import Config
from tensorsched.ops.templates import TEMPLATES, layouts_of
from tensorsched.tune import Task

TOL = 1e-5


def rel_err(out, ref):
    return float(np.max(np.abs(np.asarray(out, np.float64) - ref)) / np.max(np.abs(ref)))


# ---- templates


def _run(template, shape, config, epilogue, rng):
    cfg = Config(config)
    s, args = template(cfg, shape, epilogue=epilogue)
    assert cfg.valid, cfg.constraints
    mod = ts.build(s, args, target="opencl")
    ins = [
        rng.standard_normal(tuple(int(d) for d in a.shape)).astype(np.float32) for a in args[:-1]
    ]
    out = np.full(tuple(int(d) for d in args[-1].shape), np.nan, np.float32)
    mod(*ins, out)
    return mod, ins, out


DEPTHWISE = [  # odd sizes, stride 2, ONNX's asymmetric pads, a channel multiplier of 2
    (GroupConvShape(1, 24, 13, 11, 24, 3, 3, 24, 1, 1, 1, 1, 1, 1), {}),
    (GroupConvShape(1, 20, 15, 15, 20, 3, 3, 20, 2, 2, 1, 1, 1, 1), {"vec": 4, "tail": "guard"}),
    (GroupConvShape(1, 32, 14, 14, 32, 3, 3, 32, 2, 2, 0, 0, 1, 1), {"tile_h": 4, "tile_w": 8}),
    (GroupConvShape(2, 8, 9, 7, 16, 3, 3, 8, 1, 1, 1, 1, 1, 1), {"vec": 8, "threads_w": 2}),
]


@pytest.mark.opencl
@pytest.mark.parametrize("shape, config", DEPTHWISE, ids=lambda v: str(v)[:60])
def test_depthwise_nhwc_matches_numpy(device, shape, config):
    rng = np.random.default_rng(1)
    mod, (d, k, b), out = _run(TEMPLATES["depthwise_conv2d"]["nhwc"], shape, config, ("bias",), rng)
    ref = group_conv2d_ref(d.transpose(0, 3, 1, 2), k, shape.stride, shape.pads, shape.groups)
    ref = epilogue_ref(ref, ("bias",), [b], 1).transpose(0, 2, 3, 1)
    assert rel_err(out, ref) < TOL
    # the padding is a test per pixel that a channel vector's lanes share: whole vectors
    # loaded or not, no padded copy and no per-lane test
    text = mod.source.text
    assert len(mod.source.kernels) == 2  # the kernel's repacking, then the convolution
    if shape.CO == shape.CI and shape.CO % config.get("vec", 16) == 0:  # (c // 2: lane-wise)
        assert "? vload" in text


CONVS = [
    ("gemm_nhwc", ConvShape(1, 24, 7, 9, 40, 1, 1, 1, 0), {}),
    ("gemm_nhwc", ConvShape(2, 8, 6, 5, 20, 3, 3, 1, 1), {"tail": "guard"}),
    ("gemm_to_nhwc", ConvShape(1, 3, 15, 13, 32, 3, 3, 2, 1), {}),
    # pad_b: the repacked kernel (CI x KH x KW x CO) stored with rows padded off 2 KiB
    ("gemm_nhwc", ConvShape(1, 8, 6, 7, 48, 3, 3, 1, 1), {"pad_b": True}),
    ("gemm_to_nhwc", ConvShape(1, 3, 9, 9, 20, 3, 3, 2, 1), {"pad_b": True, "tail": "shift"}),
]


@pytest.mark.opencl
@pytest.mark.parametrize("name, shape, config", CONVS, ids=lambda v: str(v)[:50])
def test_conv_nhwc_matches_numpy(device, name, shape, config):
    rng = np.random.default_rng(2)
    tmpl = TEMPLATES["conv2d"][name]
    mod, (d, k, b, r), out = _run(tmpl, shape, config, ("bias", "add", "relu6"), rng)
    data, output = layouts_of("conv2d", name)
    assert output == "NHWC" and data == ("NHWC" if name == "gemm_nhwc" else "NCHW")
    x = d.transpose(0, 3, 1, 2) if data == "NHWC" else d
    ref = conv2d_ref(x, k, shape.stride, shape.pad)
    ref = epilogue_ref(ref, ("bias", "add", "relu6"), [b, r.transpose(0, 3, 1, 2)], 1)
    assert rel_err(out, ref.transpose(0, 2, 3, 1)) < TOL
    if config.get("pad_b"):  # the GEMM reads the weights' rows CO + (80 - CO) % 256 apart
        stride = shape.CO + (80 - shape.CO) % 256
        gemm = mod.source.text.split("__kernel")[-1]
        assert "kernel_ihwo + " in gemm and f"rh * {shape.KW * stride} " in gemm  # a row of KW
    # the task's reference knows the layouts
    task = Task("conv2d", name, tuple(vars(shape).values()), epilogue=("bias", "add", "relu6"))
    assert rel_err(task.reference([d, k, b, r]), ref.transpose(0, 2, 3, 1)) < 1e-12


# ---- the graph pass


def separable(seed=0, residual=False, pool=True):
    """A first conv, then depthwise / pointwise pairs (MobileNet's block) at odd sizes; with
    ``residual`` the last pointwise conv adds the first pair's output (a v2-style skip)."""
    rng = np.random.default_rng(seed)
    g = Graph("separable")
    c = g.constant
    x = g.input("x", (1, 3, 17, 15))
    y = g.relu(g.conv2d(x, c("w0", rng.standard_normal((12, 3, 3, 3)) * 0.3), pads=1, strides=2))
    y = g.conv2d(y, c("dw1", rng.standard_normal((12, 1, 3, 3))), pads=1, groups=12)
    y1 = g.clip(
        g.conv2d(
            y, c("pw1", rng.standard_normal((20, 12, 1, 1)) * 0.3), c("b1", rng.standard_normal(20))
        )
    )
    y = g.conv2d(y1, c("dw2", rng.standard_normal((20, 1, 3, 3))), pads=1, groups=20)
    y = g.conv2d(y, c("pw2", rng.standard_normal((20, 20, 1, 1)) * 0.3))
    if residual:
        y = g.add(y, y1)
    if pool:
        y = g.flatten(g.global_avg_pool2d(y))
        y = g.dense(y, c("fc", rng.standard_normal((5, 20))))
    g.output(y)
    return g, rng.standard_normal((1, 3, 17, 15)).astype(np.float32)


def test_channels_last_takes_the_depthwise_run_and_its_head():
    g, _ = separable()
    cl = channels_last(optimize(g))
    nodes = {n.name: n for n in cl.topo_nodes()}
    convs = [n for n in nodes.values() if n.op == "conv2d"]
    assert [(n.attrs["data_layout"], n.attrs["layout"]) for n in convs] == [
        ("NCHW", "NHWC")] + [("NHWC", "NHWC")] * 4  # fmt: skip
    transforms = [n for n in nodes.values() if n.op == "layout_transform"]
    # the first conv writes NHWC itself; the global pool reads NCHW: one transform, back
    assert [(n.attrs["src"], n.attrs["dst"]) for n in transforms] == [("NHWC", "NCHW")]
    assert cl.plan is not None and set(cl.plan.slot) >= {n.output for n in convs}
    # logical shapes are unchanged; the reference evaluates the new graph the same
    x = np.random.default_rng(3).standard_normal((1, 3, 17, 15)).astype(np.float32)
    assert rel_err(run_reference(cl, x)[cl.outputs[0]], run_reference(g, x)[g.outputs[0]]) == 0
    assert channels_last(cl) is cl  # chosen once


def test_channels_last_leaves_a_network_without_depthwise_convs_alone():
    rng = np.random.default_rng(0)
    g = Graph("pointwise")
    x = g.input("x", (1, 8, 5, 5))
    y = g.conv2d(x, g.constant("w", rng.standard_normal((8, 8, 1, 1))))
    g.output(g.conv2d(y, g.constant("w2", rng.standard_normal((4, 8, 1, 1)))))
    opt = optimize(g)
    assert for_device(opt, gpu=False) is opt
    g2, _ = separable()
    assert for_device(optimize(g2), gpu=True).op_counts().get("layout_transform") is None


@pytest.mark.opencl
@pytest.mark.parametrize("residual, pool", [(False, True), (True, True), (True, False)])
def test_channels_last_network_matches_numpy(device, residual, pool):
    if device.is_gpu:
        pytest.skip("channels-last is a CPU device's choice")
    g, x = separable(residual=residual, pool=pool)
    ref = run_reference(g, x)[g.outputs[0]]
    net = build(g, device=device)
    assert rel_err(net(x), ref) < TOL
    kinds = [layer.kernel for layer in net.layers]
    assert kinds.count("depthwise_conv2d[nhwc]") == 2 and "conv2d[gemm_to_nhwc]" in kinds
    # no padded copies: the depthwise layers launch one kernel each (their repacking ran once
    # at build time)
    dw = [layer for layer in net.layers if layer.kernel == "depthwise_conv2d[nhwc]"]
    assert all(len(layer.launches) == 1 and layer.prepacked == 1 for layer in dw)
    # the network's output (NCHW) comes back through one transform
    assert kinds.count("layout_transform") == 1
    tasks = extract_tasks(for_device(optimize(g), gpu=False), gpu=False)
    assert {t.template for t, _ in tasks if t.kind == "depthwise_conv2d"} == {"nhwc"}


def test_python_target_keeps_nchw():
    g, x = separable(residual=True)
    net = build(g, target="python")
    assert "layout_transform" not in net.graph.op_counts()
    assert rel_err(net(x), run_reference(g, x)[g.outputs[0]]) < TOL


def test_a_layout_transform_is_the_passes_own():
    g = Graph("hand")
    x = g.input("x", (1, 4, 3, 3))
    with pytest.raises(ts.TensorschedError, match="unknown operator 'layout_transform'"):
        g.add_node("layout_transform", [x], {"src": "NCHW", "dst": "NHWC"})


@pytest.mark.opencl
def test_the_tuner_leaves_the_weight_repacking_out_of_its_times(device):
    """A network repacks the weights once at build time, so a trial's time is the call's
    less its weight-only kernels (here ``kernel_ihwo``, ahead of the GEMM)."""
    from tensorsched.tune.measure import inference_seconds

    task = Task("conv2d", "gemm_nhwc", (1, 64, 7, 7, 96, 1, 1, 1, 0))
    s, args, _ = task.instantiate()
    mod = ts.build(s, args, target="opencl")
    assert mod.weight_only_kernels(mod.func.args[1:2]) == {mod.source.kernels[0].name}
    assert mod.weight_only_kernels(mod.func.args[:1]) == frozenset()  # the data is no weight
    rng = np.random.default_rng(4)
    ins = [rng.standard_normal(tuple(int(d) for d in a.shape)).astype(np.float32) for a in args]
    t = mod.time_evaluator(repeat=3)(*ins)
    pack = np.array(t.kernel_times[mod.source.kernels[0].name])
    want = float(np.median(np.array(t.device_times) - pack))
    assert inference_seconds(mod, t, "conv2d") == pytest.approx(want)
    assert inference_seconds(mod, t, "conv2d") < t.device_median
    assert inference_seconds(mod, t, "gemm") == t.device_median  # no weights in a GEMM task


def test_transpose_names_a_bad_permutation():
    x = ts.placeholder((2, 3, 4), name="x")
    from tensorsched.ops.transform import transpose

    with pytest.raises(ts.TensorschedError, match=r"axes \(0, 0, 1\) are not a permutation"):
        transpose(x, (0, 0, 1))
