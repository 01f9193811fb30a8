"""The GPU kernels of softmax, layer_norm and reduce nodes: a work-group a row in one kernel
(``schedule_row_groups``), the reductions across the work-group's work-items. Built as a GPU
graph builds them (``node_kernel(..., gpu=True)``), run on the CPU OpenCL device and the
python target against ``graph.reference`` on random data into NaN-poisoned outputs, at row
lengths no work-group size divides; rows too short for it, reductions not along trailing
axes and single rows keep the work-item-a-row kernels, which are checked too."""

import numpy as np
import pytest

import tensorsched as ts
from tensorsched.graph import Graph
from tensorsched.graph.reference import eval_node
from tensorsched.graph.tasks import node_kernel
from tensorsched.ops.templates.injective import row_threads, schedule_row_groups
from tensorsched.runtime.oclgrind import available as oclgrind_available
from tensorsched.runtime.oclgrind import run_checked


def _run(g: Graph, name: str, target: str, seed: int = 0):
    node = g.nodes[name]
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(g.tensors[t].shape).astype(np.float32) * 3 for t in node.inputs]
    s, args = node_kernel(g, node, gpu=True)
    mod = ts.build(s, args, target=target)
    out = np.full(g.tensors[node.output].shape, np.nan, np.float32)
    mod(*xs, out)
    ref = eval_node(node, [x.astype(np.float64) for x in xs])
    return mod, out, ref


def _one_kernel(mod) -> bool:
    return len(mod.get_source().split("__kernel")) == 2


@pytest.mark.parametrize("target", ["opencl", "python"])
@pytest.mark.parametrize("shape", [(5, 200), (2, 3, 77), (3, 1000), (4, 64)])
def test_softmax_one_kernel_a_work_group_a_row(shape, target):
    g = Graph()
    x = g.input("x", shape)
    g.softmax(x, -1, name="sm")
    mod, out, ref = _run(g, "sm", target)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    if target == "opencl":
        assert _one_kernel(mod)


@pytest.mark.parametrize("target", ["opencl", "python"])
@pytest.mark.parametrize(("shape", "axis"), [((7, 300), -1), ((2, 3, 10, 9), 2), ((3, 65), 1)])
def test_layer_norm_one_kernel(shape, axis, target):
    g = Graph()
    x = g.input("x", shape)
    inner = shape[axis % len(shape) :]
    w = g.constant("w", np.random.default_rng(1).standard_normal(inner))
    b = g.constant("b", np.random.default_rng(2).standard_normal(inner[-1:]))
    g.layer_norm(x, w, b, axis=axis, name="ln")
    node = g.nodes["ln"]
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(shape).astype(np.float32) * 3 + 1, g.constants[w], g.constants[b]]
    s, args = node_kernel(g, node, gpu=True)
    mod = ts.build(s, args, target=target)
    out = np.full(shape, np.nan, np.float32)
    mod(*xs, out)
    ref = eval_node(node, [v.astype(np.float64) for v in xs])
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    if target == "opencl":
        assert _one_kernel(mod)


@pytest.mark.parametrize(
    ("shape", "axes", "kind", "keepdims"),
    [
        ((6, 300), [1], "mean", True),
        ((2, 5, 9, 11), [2, 3], "sum", False),  # 99 elements a row, two axes fused
        ((2, 130, 3), [1], "max", True),  # not trailing: strided rows, still a group a row
        ((1, 512, 7, 7), [2, 3], "mean", True),  # 49 a row: a work-item a row
    ],
)
def test_reduce(shape, axes, kind, keepdims):
    g = Graph()
    x = g.input("x", shape)
    g.reduce(x, kind, axes, keepdims, name="r")
    _, out, ref = _run(g, "r", "opencl")
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_short_rows_and_other_axes_keep_a_work_item_a_row():
    for shape, axis in (((50, 10), -1), ((4, 100, 3), 1), ((300,), 0)):
        g = Graph()
        x = g.input("x", shape)
        g.softmax(x, axis, name="sm")
        mod, out, ref = _run(g, "sm", "opencl")
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
        assert not _one_kernel(mod), (shape, axis)


def test_refusal_leaves_the_schedule_untouched():
    x = ts.placeholder((8, 10), name="x")
    out = ts.ops.nn.softmax(x)
    s = ts.create_schedule(out.op)
    before = str(ts.lower(s, [x, out]))
    reds = [t for t in out.op.input_tensors if t.op.reduce_axis]
    assert not schedule_row_groups(s, out, reds)
    assert str(ts.lower(s, [x, out])) == before


def test_row_threads():
    assert [row_threads(n) for n in (10, 64, 77, 200, 256, 1000)] == [32, 64, 64, 128, 256, 256]
    assert row_threads(1000, limit=128) == 128


@pytest.mark.skipif(not oclgrind_available(), reason="the Oclgrind OpenCL platform is missing")
def test_row_kernels_are_clean_under_oclgrind():
    """No data race, uninitialised read or out-of-bounds access in the one-kernel layer norm
    (two cross-thread reductions, then the row) and softmax (max, then sum)."""
    rng = np.random.default_rng(3)
    g = Graph()
    x = g.input("x", (3, 70))
    w = g.constant("w", rng.standard_normal(70))
    g.layer_norm(x, w, None, name="ln")
    g.softmax(x, -1, name="sm")
    for name in ("ln", "sm"):
        node = g.nodes[name]
        s, args = node_kernel(g, node, gpu=True)
        xs = [rng.standard_normal((3, 70)).astype(np.float32)]
        xs += [g.constants[w].astype(np.float32)] if name == "ln" else []
        out = np.full((3, 70), np.nan, np.float32)
        result = run_checked(ts.lower(s, args), [*xs, out])
        assert result.log.strip() == ""
        ref = eval_node(node, [v.astype(np.float64) for v in xs])
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_softmax_along_a_middle_axis_of_a_cube_is_not_taken_for_trailing():
    """Along axis 1 of (3, 70, 70): the reductions' shape equals the leading axes' by chance."""
    g = Graph()
    x = g.input("x", (3, 70, 70))
    g.softmax(x, 1, name="sm")
    mod, out, ref = _run(g, "sm", "opencl")
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    assert not _one_kernel(mod)
