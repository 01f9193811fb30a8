"""Dilated 2-d convolutions as a native parameter: the declarations of ``ops.conv2d`` (direct,
spatial pack, im2col, implicit GEMM, row GEMM) and every conv2d, depthwise and grouped template
against numpy, on the Python target and the OpenCL device (outputs poisoned with NaN before
each run, by ``numerics.check_numerics``); the output size and FLOP count of a dilated
``ConvShape``; the graph's conv2d node (shape inference, reference, tuning task, export); the
ONNX importer against onnxruntime (the weight keeps its taps, no zeros spread between them).

Sizes are odd on purpose; the cases cover dilation 2 and 3 (and 2x3 per axis), stride 1 and
2, pads, 1x1 and 3x3 kernels, batch 2, and an output of one pixel."""

import numpy as np
import pytest

from tensorsched.errors import ComputeError
from tensorsched.graph import Graph, GraphError, build, run_reference
from tensorsched.graph.tasks import node_task, workload
from tensorsched.ops.conv2d import (
    ConvShape,
    conv2d_nchw,
    conv2d_nchw_im2col,
    conv2d_nchw_implicit_gemm,
    conv2d_nchw_row_gemm,
    conv2d_nchw_spatial_pack,
    conv2d_ref,
    conv_output_size,
)
from tensorsched.ops.depthwise import group_conv2d_ref
from tensorsched.ops.templates import TEMPLATES
from tensorsched.runtime.numerics import check_numerics
from tensorsched.schedules.schedule import create_schedule
from tensorsched.tune.record import Record
from tensorsched.tune.task import Task, TaskError

# (N, CI, IH, IW, CO, KH, KW, stride, pad, dilation)
CONVS = [
    (1, 3, 9, 11, 4, 3, 3, 1, 2, 2),  # dilation 2, "same" padding
    (2, 3, 10, 7, 5, 3, 3, 2, 1, 3),  # batch 2, stride 2, dilation 3
    (1, 2, 5, 5, 3, 3, 3, 1, 0, 2),  # an output of one pixel
    (1, 3, 7, 7, 4, 1, 1, 2, 0, 3),  # 1x1: dilation changes nothing
    (1, 2, 8, 9, 3, 3, 3, 2, 3, 3),  # stride 2, padded past the dilated window's reach
]
IDS = ["d2-same", "batch2-s2-d3", "one-pixel", "1x1-d3", "s2-d3-padded"]

DECLARATIONS = {
    "direct": conv2d_nchw,
    "spatial_pack": conv2d_nchw_spatial_pack,
    "im2col": conv2d_nchw_im2col,
    "implicit_gemm": conv2d_nchw_implicit_gemm,
    "row_gemm": conv2d_nchw_row_gemm,
}


def _ref(sh):
    return lambda d, k: conv2d_ref(d, k, sh.stride, sh.pad, sh.dilation)


def _check_task(task, target):
    s, args, cfg = task.instantiate(None)
    assert cfg.valid, cfg.constraints
    check_numerics(s, args, lambda *x: task.reference(list(x)), target=target)


# ---- the declarations and their numpy reference


def test_output_size_and_flop_count_the_dilated_window():
    sh = ConvShape(1, 16, 33, 33, 8, 3, 3, 1, 12, 12)
    assert (sh.OH, sh.OW) == (33, 33)  # (33 + 24 - 12 * 2 - 1) // 1 + 1
    assert sh.flop == 2 * 8 * 33 * 33 * 16 * 3 * 3  # the 9 taps, not the 25 x 25 span
    assert conv_output_size(10, 3, 2, 1, 3) == (10 + 2 - 6 - 1) // 2 + 1
    assert ConvShape(1, 2, 5, 5, 3, 3, 3, 1, 0, 2).OH == 1
    assert ConvShape(1, 2, 5, 5, 3, 3, 3).astuple() == (1, 2, 5, 5, 3, 3, 3, 1, 0)
    assert ConvShape(1, 2, 5, 5, 3, 3, 3, 1, 0, 2).astuple()[-1] == 2


def test_numpy_reference_matches_a_zero_spread_kernel():
    """A dilated conv is the undilated conv by the kernel with zeros between its taps."""
    rng = np.random.default_rng(0)
    d, k = rng.standard_normal((2, 3, 11, 9)), rng.standard_normal((4, 3, 3, 2))
    big = np.zeros((4, 3, 7, 3))
    big[:, :, ::3, ::2] = k
    got = conv2d_ref(d, k, (2, 1), (1, 2), (3, 2))
    np.testing.assert_allclose(got, conv2d_ref(d, big, (2, 1), (1, 2)), rtol=1e-12)
    grouped = group_conv2d_ref(d, k, (2, 1), (1, 2), 1, (3, 2))
    np.testing.assert_allclose(got, grouped, rtol=1e-12)


@pytest.mark.parametrize("shape", CONVS, ids=IDS)
@pytest.mark.parametrize("name", list(DECLARATIONS))
def test_declarations_match_numpy(name, shape):
    sh = ConvShape(*shape)
    if name == "row_gemm" and sh.N != 1:
        pytest.skip("conv2d_nchw_row_gemm is for batch 1")
    args = {"spatial_pack": (sh, 2, 4, 2)}.get(name, (sh,))  # VH 2: tiles past the image
    data, kernel, out = DECLARATIONS[name](*args)
    check_numerics(create_schedule(out.op), [data, kernel, out], _ref(sh), target="python")


def test_a_window_that_does_not_fit_names_the_dilation():
    with pytest.raises(ComputeError, match="dilation 3"):
        conv2d_nchw(ConvShape(1, 2, 5, 5, 3, 3, 3, 1, 0, 3))
    with pytest.raises(ComputeError, match="dilation 0"):
        conv2d_nchw(ConvShape(1, 2, 5, 5, 3, 3, 3, 1, 0, 0))


# ---- the templates, through their tuning tasks


CONV_TEMPLATES = sorted(TEMPLATES["conv2d"])


@pytest.mark.parametrize("shape", CONVS, ids=IDS)
@pytest.mark.parametrize("template", CONV_TEMPLATES)
def test_conv2d_templates_match_numpy(template, shape):
    _check_task(Task("conv2d", template, shape, epilogue=("bias", "relu")), "python")


@pytest.mark.parametrize("template", CONV_TEMPLATES)
def test_conv2d_templates_on_the_device(template, device):
    for shape in (CONVS[0], CONVS[1], CONVS[2]):
        _check_task(Task("conv2d", template, shape), "opencl")


# GroupConvShape fields: N, CI, IH, IW, CO, KH, KW, groups, stride_h, stride_w, pad_top,
# pad_left, pad_bottom, pad_right, dilation_h, dilation_w
DEPTHWISE = [
    (1, 4, 11, 9, 4, 3, 3, 4, 1, 1, 2, 2, 2, 2, 2, 2),  # DeepLab's: 3x3, dilation 2, same size
    (1, 3, 13, 10, 6, 3, 3, 3, 2, 2, 3, 1, 3, 2, 3, 2),  # multiplier 2, stride 2, 3x2 dilation
    (2, 5, 7, 7, 5, 3, 3, 5, 1, 1, 0, 0, 0, 0, 3, 3),  # batch 2, one output pixel
]
GROUPED = [
    (1, 6, 9, 11, 4, 3, 3, 2, 1, 1, 2, 1, 2, 1, 2, 3),
    (2, 4, 10, 9, 6, 3, 1, 2, 2, 1, 3, 0, 1, 0, 3, 1),
]


@pytest.mark.parametrize("shape", DEPTHWISE, ids=["d2-same", "m2-s2-d3x2", "one-pixel"])
@pytest.mark.parametrize("template", sorted(TEMPLATES["depthwise_conv2d"]))
def test_depthwise_templates_match_numpy(template, shape):
    _check_task(Task("depthwise_conv2d", template, shape, epilogue=("bias", "relu6")), "python")


@pytest.mark.parametrize("shape", GROUPED, ids=["d2x3", "batch2-s2-d3"])
@pytest.mark.parametrize("template", sorted(TEMPLATES["group_conv2d"]))
def test_grouped_templates_match_numpy(template, shape):
    _check_task(Task("group_conv2d", template, shape), "python")


def test_depthwise_and_grouped_templates_on_the_device(device):
    for template in sorted(TEMPLATES["depthwise_conv2d"]):
        for shape in DEPTHWISE:
            _check_task(Task("depthwise_conv2d", template, shape), "opencl")
    for template in sorted(TEMPLATES["group_conv2d"]):
        _check_task(Task("group_conv2d", template, GROUPED[0]), "opencl")


# ---- the tuning task


def test_a_dilated_task_is_told_apart_from_an_undilated_one():
    plain = Task("conv2d", "implicit_gemm", (1, 8, 17, 17, 8, 3, 3, 1, 1))
    dilated = Task("conv2d", "implicit_gemm", (1, 8, 17, 17, 8, 3, 3, 1, 1, 2))
    assert plain.key() != dilated.key()
    assert len(plain.shape) == 9 and dilated.shape[-1] == 2
    # a dilation of 1 written out is the undilated task, key and all (old logs still match)
    assert Task("conv2d", "implicit_gemm", (1, 8, 17, 17, 8, 3, 3, 1, 1, 1)).key() == plain.key()
    fields = {k: v for k, v in dilated.__dict__.items() if not k.startswith("_")}
    assert Task.from_dict(fields | {"shape": list(dilated.shape)}).key() == dilated.key()
    assert dilated.flop == 2 * 8 * 15 * 15 * 8 * 9
    with pytest.raises(TaskError, match="dilation"):
        Task("conv2d", "implicit_gemm", (1, 8, 17, 17, 8, 3, 3, 1, 1, 0))


def test_a_log_record_of_the_undilated_conv_does_not_pick_the_dilated_template():
    from tensorsched.graph.tasks import choose_template

    undilated = Task("conv2d", "im2col_gpu", (1, 8, 17, 17, 8, 3, 3, 1, 2))
    task = {k: v for k, v in undilated.__dict__.items() if not k.startswith("_")}
    rec = Record(task=task, device="gpu", config={}, status="ok", device_ms=0.001)
    shape = (1, 8, 17, 17, 8, 3, 3, 1, 2, 2)
    assert choose_template("conv2d", shape, (), True, [rec]) == "implicit_gemm"
    assert choose_template("conv2d", undilated.shape, (), True, [rec]) == "im2col_gpu"


# ---- the graph and the ONNX importer


def dilated_net(seed=0):
    """A plain dilated conv (ASPP's: pad = dilation), a dilated depthwise conv, a grouped conv
    with a 2x3 dilation and a stride, and a 1x1 conv: odd sizes."""
    rng = np.random.default_rng(seed)
    g = Graph("dilated")
    x = g.input("x", (1, 3, 15, 13))
    c = g.constant

    def w(name, shape):
        return c(name, rng.standard_normal(shape) * 0.3)

    y = g.conv2d(x, w("w1", (8, 3, 3, 3)), w("b1", (8,)), 1, 3, name="aspp", dilations=3)
    y = g.relu(g.conv2d(y, w("w2", (8, 1, 3, 3)), None, 1, 2, 8, name="dw", dilations=[2, 2]))
    y = g.conv2d(y, w("w3", (4, 4, 3, 3)), None, 2, [1, 3, 2, 1], 2, "grp", dilations=(2, 3))
    g.output(g.conv2d(y, w("w4", (5, 4, 1, 1)), name="pw", dilations=2))
    return g, rng.standard_normal((1, 3, 15, 13)).astype(np.float32)


def _expected(x, g):
    """The network by ``conv2d_ref`` alone, grouped convs one group at a time."""
    k = g.constants
    y = conv2d_ref(x, k["w1"], 1, 3, 3) + k["b1"].reshape(1, -1, 1, 1)
    y = np.maximum(group_conv2d_ref(y, k["w2"], 1, 2, 8, 2), 0)
    y = group_conv2d_ref(y, k["w3"], 2, (1, 3, 2, 1), 2, (2, 3))
    return conv2d_ref(y, k["w4"], 1, 0, 2)


def test_graph_node_shapes_reference_and_tasks():
    g, x = dilated_net()
    nodes = {n.name: n for n in g.topo_nodes()}
    assert nodes["aspp"].attrs["dilations"] == (3, 3)
    assert g.tensors[nodes["aspp"].output].shape == (1, 8, 15, 13)
    assert g.tensors[nodes["grp"].output].shape == (1, 4, 7, 6)
    ref = run_reference(g, x)[g.outputs[0]]
    np.testing.assert_allclose(ref, _expected(x.astype(np.float64), g), rtol=1e-5, atol=1e-5)
    kinds = {name: workload(g, n) for name, n in nodes.items() if n.op == "conv2d"}
    assert kinds["aspp"].kind == "conv2d" and kinds["aspp"].shape[-1] == 3
    assert kinds["aspp"].flop == 2 * 8 * 15 * 13 * 3 * 9
    assert kinds["dw"].kind == "depthwise_conv2d" and kinds["dw"].shape[-2:] == (2, 2)
    assert kinds["grp"].kind == "group_conv2d" and kinds["grp"].shape[-2:] == (2, 3)
    assert kinds["pw"].kind == "conv2d" and kinds["pw"].shape[-1] == 2
    assert node_task(g, nodes["aspp"], gpu=True).template == "implicit_gemm"


def test_graph_refuses_a_bad_dilation():
    g = Graph("bad")
    x = g.input("x", (1, 2, 5, 5))
    w = g.constant("w", np.ones((2, 2, 3, 3), np.float32))
    with pytest.raises(GraphError, match="dilations"):
        g.conv2d(x, w, dilations=0)
    with pytest.raises(GraphError, match="does not fit"):
        g.conv2d(x, w, dilations=3)


def test_graph_runs_on_the_python_target():
    g, x = dilated_net()
    out = build(g, target="python")(x)
    np.testing.assert_allclose(out, _expected(x.astype(np.float64), g), rtol=1e-4, atol=1e-4)


def test_graph_runs_on_the_device(device):
    g, x = dilated_net()
    out = np.asarray(build(g, device=device)(x))
    np.testing.assert_allclose(out, _expected(x.astype(np.float64), g), rtol=1e-4, atol=1e-4)


onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _onnx_model():
    """Conv (dilation 12, ASPP), a dilated depthwise Conv, a Conv dilated 1x3 and strided
    (onnxruntime runs no dilated Conv with auto_pad SAME)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    inits = {
        "w1": rng.standard_normal((6, 3, 3, 3)) * 0.3,
        "b1": rng.standard_normal(6),
        "w2": rng.standard_normal((6, 1, 3, 3)) * 0.3,
        "w3": rng.standard_normal((4, 6, 3, 2)) * 0.3,
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["a"], "aspp", dilations=[12, 12],
                         pads=[12, 12, 12, 12]),
        helper.make_node("Relu", ["a"], ["r"], "relu"),
        helper.make_node("Conv", ["r", "w2"], ["dw"], "dw", dilations=[2, 2], group=6,
                         pads=[2, 2, 2, 2]),
        helper.make_node("Conv", ["dw", "w3"], ["y"], "last", dilations=[1, 3], strides=[2, 1],
                         pads=[0, 1, 1, 2]),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "dilated",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 27, 25))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _ort(model, x):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def test_onnx_conv_keeps_its_taps_and_matches_onnxruntime():
    from tensorsched.frontend import from_onnx, to_onnx

    model = _onnx_model()
    x = np.random.default_rng(4).standard_normal((1, 3, 27, 25)).astype(np.float32)
    want = _ort(model, x)
    g = from_onnx(model)
    convs = {n.name: n for n in g.topo_nodes() if n.op == "conv2d"}
    assert g.tensors[convs["aspp"].inputs[1]].shape == (6, 3, 3, 3)  # no zeros spread
    assert convs["aspp"].attrs["dilations"] == (12, 12)
    assert convs["dw"].attrs["dilations"] == (2, 2)
    assert convs["last"].attrs["dilations"] == (1, 3)
    for got in (run_reference(g, x)[g.outputs[0]], build(g, target="python")(x),
                _ort(to_onnx(g), x)):  # fmt: skip
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)


def test_onnx_dilated_model_on_the_device(device):
    from tensorsched.frontend import from_onnx

    model = _onnx_model()
    x = np.random.default_rng(5).standard_normal((1, 3, 27, 25)).astype(np.float32)
    out = np.asarray(build(from_onnx(model), device=device)(x))
    np.testing.assert_allclose(out, _ort(model, x), rtol=1e-4, atol=1e-4)


def test_onnx_same_padding_covers_the_dilated_window():
    """auto_pad SAME_UPPER pads for the window the taps span (5 for 3 taps 2 apart), which
    onnxruntime does not run: checked against numpy with the pads worked out by hand."""
    from onnx import TensorProto, helper, numpy_helper

    from tensorsched.frontend import from_onnx

    w = np.random.default_rng(6).standard_normal((2, 3, 3, 3)).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], "c", dilations=[2, 2], strides=[2, 2],
                            auto_pad="SAME_UPPER")  # fmt: skip
    graph = helper.make_graph(
        [node],
        "same",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 10, 9))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")],
    )
    g = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    (conv,) = [n for n in g.topo_nodes() if n.op == "conv2d"]
    assert conv.attrs["pads"] == (1, 2, 2, 2)  # H: total 3, the larger half below
    x = np.random.default_rng(7).standard_normal((1, 3, 10, 9))
    want = conv2d_ref(np.pad(x, ((0, 0), (0, 0), (1, 2), (2, 2))), w, 2, 0, 2)
    np.testing.assert_allclose(run_reference(g, x.astype(np.float32))[g.outputs[0]], want,
                               rtol=1e-5, atol=1e-5)  # fmt: skip
