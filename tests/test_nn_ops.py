"""The network operators (issue 18): every declaration against its numpy reference at small odd
sizes (outputs poisoned first), every template of the new kinds at its default config and one
other on the Python target and on the OpenCL device, and the errors of bad arguments."""

import re

import numpy as np
import pytest
from ts_check import check

import tensorsched as ts
from tensorsched.errors import ComputeError
from tensorsched.ops import nn
from tensorsched.ops.dense import dense, dense_ref
from tensorsched.ops.depthwise import depthwise_conv2d_nchw, group_conv2d_nchw, group_conv2d_ref
from tensorsched.ops.pool import avg_pool2d, global_avg_pool2d, max_pool2d, pool2d_ref
from tensorsched.ops.space import Config
from tensorsched.ops.templates.injective import schedule_injective
from tensorsched.ops.transform import concat, flatten, reshape, transpose
from tensorsched.runtime.device import DeviceError, current_device
from tensorsched.runtime.numerics import compare, make_arrays
from tensorsched.tune.task import Task, TaskError


@pytest.fixture(scope="module")
def device():
    try:
        return current_device()
    except DeviceError as exc:
        pytest.skip(f"no OpenCL device: {exc}")
    except ImportError as exc:
        pytest.skip(f"pyopencl cannot be imported: {exc}")


def _ph(shape, name):
    return ts.placeholder(shape, name=name)


# ---------------------------------------------------------------- declarations, plain schedule

CONVS = [  # (data shape, kernel shape, stride, padding, groups, dilation)
    ((1, 3, 7, 9), (3, 1, 3, 3), 1, 1, 3, 1),  # depthwise, stride 1, odd H/W
    ((1, 3, 9, 11), (6, 1, 3, 3), 2, (1, 0, 1, 2), 3, 1),  # stride 2, multiplier 2, ONNX pads
    ((2, 4, 7, 5), (6, 2, 3, 3), (1, 2), (1, 1), 2, 1),  # grouped, batch 2, (h, w) stride
    ((1, 2, 9, 9), (2, 1, 3, 3), 1, 2, 2, 2),  # dilated depthwise
]


@pytest.mark.parametrize("dshape,kshape,stride,padding,groups,dilation", CONVS)
def test_depthwise_and_group_conv2d_match_numpy(dshape, kshape, stride, padding, groups, dilation):
    d, k = _ph(dshape, "data"), _ph(kshape, "kernel")
    if groups == dshape[1]:
        out = depthwise_conv2d_nchw(d, k, stride, padding, dilation)
    else:
        out = group_conv2d_nchw(d, k, stride, padding, groups, dilation)
    check(
        ts.create_schedule(out.op),
        [d, k, out],
        lambda a, b: group_conv2d_ref(a, b, stride, padding, groups, dilation),
    )


POOLS = [  # (function, mode, kernel, stride, padding)
    (max_pool2d, "max", 3, 2, (1, 0, 1, 1)),
    (max_pool2d, "max", (2, 3), 1, 0),
    (avg_pool2d, "avg", 3, 2, 1),
    (avg_pool2d, "avg", (3, 2), (2, 1), (0, 1, 1, 0)),
]


@pytest.mark.parametrize("fn,mode,kernel,stride,padding", POOLS)
def test_pools_match_numpy(fn, mode, kernel, stride, padding):
    d = _ph((1, 3, 9, 7), "data")
    out = fn(d, kernel, stride, padding)
    check(
        ts.create_schedule(out.op),
        [d, out],
        lambda a: pool2d_ref(a, kernel, stride, padding, mode),
    )


def test_avg_pool_counting_the_padding_and_global_avg_pool():
    d = _ph((2, 3, 5, 7), "data")
    out = avg_pool2d(d, 3, 2, 1, count_include_pad=True)
    check(ts.create_schedule(out.op), [d, out], lambda a: pool2d_ref(a, 3, 2, 1, "avg_include_pad"))
    g = global_avg_pool2d(d)
    assert g.shape == (2, 3, 1, 1)
    check(ts.create_schedule(g.op), [d, g], lambda a: a.mean(axis=(2, 3), keepdims=True))


def test_dense_with_and_without_bias():
    x, w, b = _ph((3, 11), "x"), _ph((5, 11), "w"), _ph((5,), "b")
    out = dense(x, w)
    check(ts.create_schedule(out.op), [x, w, out], dense_ref)
    out = dense(x, w, b)
    check(ts.create_schedule(out.op), [x, w, b, out], dense_ref)


@pytest.mark.parametrize("parts", [1, 4])
@pytest.mark.parametrize("shape,axis", [((13,), -1), ((3, 11), -1), ((2, 3, 5), 1), ((2, 3, 5), 0)])
def test_softmax_matches_numpy(shape, axis, parts):
    d = _ph(shape, "data")
    out = nn.softmax(d, axis, parts=parts)
    check(ts.create_schedule(out.op), [d, out], lambda a: nn.softmax_ref(a, axis))


def test_softmax_is_stable_for_large_inputs():
    d = _ph((2, 7), "data")
    out = nn.softmax(d)
    big = np.linspace(500, 900, 14, dtype=np.float32).reshape(2, 7)
    check(ts.create_schedule(out.op), [d, out], nn.softmax_ref, inputs={d: big})


def _injective_cases():
    """(name, build, ref): ``build()`` gives ``(inputs, output)``."""
    a, b = _ph((2, 3, 5), "a"), _ph((3, 1), "b")
    c, e = _ph((2, 3, 5), "c"), _ph((2, 4, 5), "e")
    bias = _ph((3,), "bias")
    yield "add_broadcast", ([a, b], nn.add(a, b)), lambda x, y: x + y
    yield "add_same", ([a, c], nn.add(a, c)), lambda x, y: x + y
    yield "relu", ([a], nn.relu(a)), lambda x: np.maximum(x, 0)
    yield "relu6", ([a], nn.relu6(a)), lambda x: np.clip(x, 0, 6)
    yield "clip", ([a], nn.clip(a, -0.5, 0.25)), lambda x: np.clip(x, -0.5, 0.25)
    yield "sigmoid", ([a], nn.sigmoid(a)), lambda x: 1 / (1 + np.exp(-x))
    yield "bias_add", ([a, bias], nn.bias_add(a, bias, axis=1)[0]), lambda x, y: x + y[:, None]
    yield "flatten", ([a], flatten(a)), lambda x: x.reshape(2, -1)
    yield "flatten_axis2", ([a], flatten(a, 2)), lambda x: x.reshape(6, 5)
    yield "reshape", ([a], reshape(a, (5, -1, 2))), lambda x: x.reshape(5, -1, 2)
    yield "transpose", ([a], transpose(a, (2, 0, 1))), lambda x: x.transpose(2, 0, 1)
    yield "concat", ([a, e], concat([a, e, a], 1)), lambda x, y: np.concatenate([x, y, x], 1)
    yield "concat_last", ([a, c], concat([a, c], -1)), lambda x, y: np.concatenate([x, y], -1)


INJECTIVE = list(_injective_cases())
OTHER_INJECTIVE = {"threads": 16, "per_item": 2}


@pytest.mark.parametrize("name,built,ref", INJECTIVE, ids=[c[0] for c in INJECTIVE])
@pytest.mark.parametrize("config", [{}, OTHER_INJECTIVE], ids=["default", "other"])
def test_injective_ops_on_python(name, built, ref, config):
    ins, out = built
    s = ts.create_schedule(out.op)
    schedule_injective(Config(config), s, out)
    check(s, [*ins, out], ref)


@pytest.mark.opencl
@pytest.mark.parametrize("name,built,ref", INJECTIVE, ids=[c[0] for c in INJECTIVE])
@pytest.mark.parametrize("config", [{}, OTHER_INJECTIVE], ids=["default", "other"])
def test_injective_ops_on_the_device(device, name, built, ref, config):
    ins, out = built
    s = ts.create_schedule(out.op)
    schedule_injective(Config(config), s, out)
    _run(s, [*ins, out], ref, "opencl")


def _run(s, args, ref, target):
    mod = ts.build(s, args, target=target)
    arrays, ins, outs = make_arrays(args, seed=3)
    mod(*arrays)
    ((t, got),) = outs
    compare(got, ref(*[x.astype(np.float64) for x in ins]), t.dtype, name=t.name)


# ---------------------------------------------------------------- templates

DW_S1 = (1, 5, 9, 11, 5, 3, 3, 5, 1, 1, 1, 1, 1, 1, 1, 1)  # MobileNet's 3x3, stride 1
DW_S2 = (1, 4, 11, 9, 8, 3, 3, 4, 2, 2, 1, 1, 1, 1, 1, 1)  # stride 2, multiplier 2
DW_S2_ONNX = (1, 3, 7, 9, 3, 3, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1)  # stride 2, pads (0, 0, 1, 1)
GROUP = (1, 4, 7, 9, 6, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1)
DW_OTHER = {
    "pad_inline": 0,
    "tile_h": 2,
    "tile_w": 2,
    "threads_h": 2,
    "threads_w": 4,
    "vectorize": 1,
}
DW_CPU_OTHER = {
    "pad_inline": 1,
    "tile_h": 4,
    "tile_w": 4,
    "threads_h": 1,
    "threads_w": 2,
    "vectorize": 0,
}

TEMPLATE_CASES = [  # (kind, template, shape, epilogue, another config)
    ("depthwise_conv2d", "direct", DW_S1, ("bias", "relu6"), DW_OTHER),
    ("depthwise_conv2d", "direct", DW_S2, ("bias", "add"), DW_OTHER),
    ("depthwise_conv2d", "cpu", DW_S1, ("add", "relu"), DW_CPU_OTHER),
    ("depthwise_conv2d", "cpu", DW_S2_ONNX, ("bias", "relu6"), DW_CPU_OTHER),
    ("group_conv2d", "direct", GROUP, ("bias", "relu"), DW_OTHER),
    ("group_conv2d", "cpu", GROUP, (), DW_CPU_OTHER),
    ("dense", "cpu", (1, 13, 37), ("bias", "relu"), {"vec": 4, "tile_o": 4, "threads": 1}),
    ("dense", "gpu", (2, 13, 37), ("bias",), {"split_k": 16, "threads": 32}),
    ("pool", "direct", (1, 3, 9, 7, 3, 3, 2, 2, 1, 0, 1, 1, 0), (), {"threads": 16, "per_item": 2}),
    ("pool", "direct", (1, 3, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1), ("relu",), {"per_item": 4}),
    ("pool", "cpu", (1, 3, 9, 7, 3, 3, 2, 2, 1, 0, 1, 1, 0), ("bias",), {"per_item": 2}),
    ("pool", "cpu", (1, 2, 5, 7, 2, 2, 2, 2, 0, 0, 1, 1, 1), (), {"rows": 0, "threads": 16}),
    ("pool", "direct", (1, 2, 5, 7, 3, 3, 2, 2, 1, 1, 1, 1, 2), (), {"threads": 32}),
    ("pool", "direct", (1, 5, 7, 7, 7, 7, 1, 1, 0, 0, 0, 0, 1), (), {"threads": 1}),  # global
    ("softmax", "rows", (3, 17), (), {"one_kernel": 0, "threads": 16}),
    ("softmax", "rows_gpu", (2, 37), ("relu",), {"row_threads": 32}),
    # its reference applied no epilogue (relu after softmax changes nothing); a bias does
    ("softmax", "rows", (3, 17), ("bias", "sigmoid"), {"row_threads": 32}),
]
IDS = [f"{k}-{n}-{'x'.join(map(str, s[:8]))}-{'+'.join(e)}" for k, n, s, e, _ in TEMPLATE_CASES]


def _check_task(task, config, target):
    s, args, cfg = task.instantiate(config)
    assert cfg.valid, cfg.constraints
    mod = ts.build(s, args, target=target)
    ins = task.inputs(args, seed=5)
    arrays, _, outs = make_arrays(args, inputs=dict(zip(args, ins)))
    mod(*arrays)
    ((t, got),) = outs
    compare(got, task.reference(ins), t.dtype, name=str(task))


@pytest.mark.parametrize("kind,name,shape,epilogue,other", TEMPLATE_CASES, ids=IDS)
@pytest.mark.parametrize("which", ["default", "other"])
def test_templates_on_python(kind, name, shape, epilogue, other, which):
    _check_task(
        Task(kind, name, shape, epilogue=epilogue), {} if which == "default" else other, "python"
    )


@pytest.mark.opencl
@pytest.mark.parametrize("kind,name,shape,epilogue,other", TEMPLATE_CASES, ids=IDS)
@pytest.mark.parametrize("which", ["default", "other"])
def test_templates_on_the_device(device, kind, name, shape, epilogue, other, which):
    _check_task(
        Task(kind, name, shape, epilogue=epilogue), {} if which == "default" else other, "opencl"
    )


def test_cpu_depthwise_loads_rows_as_vectors():
    """Where ``tile_w`` divides the output width, each patch row is one vector load."""
    shape = (1, 2, 5, 16, 2, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1)
    s, args, _ = Task("depthwise_conv2d", "cpu", shape, epilogue=("bias",)).instantiate()
    src = ts.build(s, args, target="opencl").get_source()
    assert "vload4(" in src and "data_pad" in src  # tile_w 4 below 32 columns


DW_RAGGED = [  # 13 x 11 and 7 x 6 outputs: no patch grid below divides them
    (1, 3, 13, 11, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
    (1, 2, 13, 11, 4, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1),  # stride 2, multiplier 2
]


@pytest.mark.opencl
@pytest.mark.parametrize("shape", DW_RAGGED, ids=str)
@pytest.mark.parametrize("template", ["cpu", "direct"])
@pytest.mark.parametrize("tail", ["guard", "shift"])
def test_depthwise_tails_match_numpy_where_patches_do_not_divide(device, shape, template, tail):
    task = Task("depthwise_conv2d", template, shape, epilogue=("bias", "relu6"))
    for tiles in ({"tile_h": 2, "tile_w": 4, "threads_h": 2, "threads_w": 2}, {"tile_w": 2}):
        for target in ("python", "opencl"):
            _check_task(task, {**tiles, "tail": tail}, target)


def test_a_shifted_depthwise_kernel_tests_no_bounds_and_loads_vectors():
    """MobileNet's 14x14 layer with 8-column patch rows: 'guard' tests every element of the
    last patch column, 'shift' moves it inwards: no test left, the rows load as vectors."""
    shape = (1, 512, 14, 14, 512, 3, 3, 512, 1, 1, 1, 1, 1, 1, 1, 1)
    task = Task("depthwise_conv2d", "cpu", shape, epilogue=("bias", "relu6"))
    src = {}
    for tail in ("guard", "shift"):
        s, args, _ = task.instantiate({"threads_w": 2, "tail": tail})
        src[tail] = ts.build(s, args, target="opencl").get_source()
    conv = {k: v[v.rindex("__kernel") :] for k, v in src.items()}
    assert "if (" in conv["guard"] and "if (" not in conv["shift"]
    assert "vload4(" in conv["shift"]


# ---------------------------------------------------------------- errors


def _raises(fn, *words):
    with pytest.raises(ComputeError) as info:
        fn()
    for w in words:
        assert w in str(info.value), str(info.value)


def test_bad_arguments_are_compute_errors_naming_what_and_where():
    d, k = _ph((1, 4, 7, 7), "data"), _ph((4, 1, 3, 3), "kernel")
    _raises(
        lambda: depthwise_conv2d_nchw(d, _ph((4, 2, 3, 3), "k2")),
        "depthwise_conv2d",
        "(C*m, 1, KH, KW)",
    )
    _raises(lambda: group_conv2d_nchw(d, _ph((6, 2, 3, 3), "k3"), groups=3), "groups=3", "divide")
    _raises(
        lambda: group_conv2d_nchw(d, _ph((6, 1, 3, 3), "k4"), groups=2),
        "kernel shape",
        "(6, 2, 3, 3)",
    )
    _raises(
        lambda: depthwise_conv2d_nchw(d, k, padding=(1, 1, 1)),
        "padding",
        "(top, left, bottom, right)",
    )
    _raises(lambda: depthwise_conv2d_nchw(d, k, stride=0), "stride")
    _raises(lambda: depthwise_conv2d_nchw(d, _ph((4, 1, 9, 9), "k5")), "does not fit", "9x9")
    _raises(lambda: max_pool2d(d, 3, 1, 3), "pool2d", "smaller than")
    _raises(lambda: avg_pool2d(_ph((4, 7), "flat"), 3), "avg_pool2d", "4-d NCHW")
    _raises(lambda: dense(_ph((1, 5), "x"), _ph((3, 6), "w")), "dense", "same K")
    _raises(lambda: nn.softmax(d, axis=4), "softmax", "axis 4")
    _raises(lambda: nn.add(d, _ph((3, 1), "r")), "add", "do not broadcast")
    _raises(lambda: nn.clip(d, 1.0, 0.0), "clip", "above")
    _raises(lambda: reshape(d, (5, -1)), "reshape", "do not fill")
    _raises(lambda: reshape(d, (-1, -1)), "reshape", "at most one -1")
    _raises(lambda: concat([d, _ph((1, 4, 6, 7), "e")], 1), "concat", "outside axis 1")
    _raises(lambda: nn.epilogue(d, ("gelu",)), "unknown epilogue 'gelu'", "relu6", "add")


def test_bad_task_shapes_are_task_errors():
    with pytest.raises(TaskError, match="pool shape must be 13 ints"):
        Task("pool", "direct", (1, 3, 7, 7))
    with pytest.raises(TaskError, match="groups=3 must divide"):
        Task("depthwise_conv2d", "cpu", (1, 4, 9, 7, 6, 3, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1))
    with pytest.raises(TaskError, match="dense shape must be 3 ints"):
        Task("dense", "cpu", (1, 0, 3))


CONV = (1, 3, 7, 9, 5, 3, 3, 1, 1)


@pytest.mark.parametrize("target", ["python", pytest.param("opencl", marks=pytest.mark.opencl)])
@pytest.mark.parametrize("name", ["spatial_pack", "im2col", "implicit_gemm"])
def test_conv2d_templates_fuse_bias_residual_add_and_relu6(request, target, name):
    """The graph's fusion hands conv2d templates the new epilogue steps too."""
    if target == "opencl":
        request.getfixturevalue("device")
    _check_task(Task("conv2d", name, CONV, epilogue=("bias", "add", "relu6")), {}, target)


KERNELS = {  # (kind, template) -> __kernel functions at the default config
    ("depthwise_conv2d", "direct"): 1,
    ("depthwise_conv2d", "cpu"): 2,  # the padded input first
    ("group_conv2d", "direct"): 1,
    ("group_conv2d", "cpu"): 2,
    ("dense", "cpu"): 1,
    ("dense", "gpu"): 2,  # partial sums, then their total
    ("pool", "direct"): 1,
    ("pool", "cpu"): 1,
    ("softmax", "rows"): 1,
    ("softmax", "rows_gpu"): 1,  # a work-group per row, its parts in __local memory
}


@pytest.mark.parametrize("kind,name,shape,epilogue,other", TEMPLATE_CASES, ids=IDS)
def test_templates_launch_their_kernels_in_parallel(kind, name, shape, epilogue, other):
    """The default config gives the expected kernels, each over more than one work-item where
    the output has more than one element (no stage left serial at the root)."""
    from tensorsched.codegen.opencl import emit_opencl

    s, args, _ = Task(kind, name, shape, epilogue=epilogue).instantiate()
    kernels = emit_opencl(ts.lower(s, args)).kernels
    assert len(kernels) == KERNELS[kind, name]
    for k in kernels:
        assert np.prod(k.global_size) > 1, f"{k.name} runs on one work-item"


INTERIOR_CASES = [
    (1, 3, 20, 21, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),  # stride 1
    (1, 2, 24, 20, 2, 3, 3, 2, 2, 2, 0, 0, 1, 1, 1, 1),  # stride 2, ONNX pads (0, 0, 1, 1)
    (1, 2, 17, 30, 4, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1),  # stride 2, multiplier 2
]


@pytest.mark.opencl
@pytest.mark.parametrize("shape", INTERIOR_CASES, ids=["s1", "s2-onnx", "s2-m2"])
@pytest.mark.parametrize("tail", ["guard", "shift"])
def test_interior_work_items_read_the_padded_input_without_tests(device, shape, tail):
    """specialize_interior: the work-items whose taps all fall inside the image run a copy of
    the body without the padding's tests, its rows loaded as vectors; the border ones keep
    the tests; both against numpy."""
    config = {"pad_inline": 1, "tile_h": 2, "tile_w": 4, "threads_h": 2, "threads_w": 1}
    config.update(vectorize=1, tail=tail)
    task = Task("depthwise_conv2d", "cpu", shape, epilogue=("bias",))
    s, args, cfg = task.instantiate(config)
    assert cfg.valid, cfg.constraints
    src = ts.build(s, args, target="opencl").get_source()
    fast, slow = src.split("} else {")
    assert "if (" in fast and re.search(r"(vload4|ts_vload4_s2)\(.*data", fast), fast
    assert " ? data[" not in fast and " ? data[" in slow
    _check_task(task, config, "opencl")
