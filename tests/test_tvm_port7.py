"""TVM classic ``te`` behaviour that tensorsched refused until this (seventh) round of ports:
``cache_write`` of a stage already split, fused or reordered (TVM >= 0.6's
``CacheWriteWithReLayout``, ``test_te_schedule_ops.py::test_schedule_cache_relayout*``: the
cache has one axis per data loop of the stage, the stage gets its original axes back and
copies the cache out, and is scheduled again, as GPU schedules do after it), and a group
made of stages some of which already form a group (``test_bound_nest_group``: the older group
goes inside the new one). Every kernel runs on the python target and the CPU OpenCL device
against numpy on random data, at sizes no split factor divides, into NaN-poisoned outputs.
What stays refused is checked for its error: ``cache_write`` after binding or annotating a
loop (TVM drops the annotation silently), after a split with ``tail="shift"``, or while a
stage is computed at a loop it removes."""

import numpy as np
import pytest
from ts_check import TARGETS, build, rand

import tensorsched as ts


def thr(tag):
    return ts.thread_axis(tag)


def check(s, args, target, ins, wants):
    f = build(s, args, target)
    outs = [np.full(w.shape, np.nan, "float32") for w in wants]
    f(*ins, *outs)
    for out, want in zip(outs, wants):
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    return f


def names(ivs):
    return [iv.var.name for iv in ivs]


# ---------------------------------------------------------------- cache_write after a split


@pytest.mark.parametrize("target", TARGETS)
def test_cache_write_after_split_and_reorder(target):
    # test_schedule_cache_relayout2: the cache is laid out (x.outer, y, x.inner)
    A = ts.placeholder((13, 7), name="A")
    B = ts.placeholder((13, 7), name="B")
    C = ts.compute(A.shape, lambda i, j: A[i, j] * B[i, j], name="C")
    s = ts.create_schedule(C.op)
    x, y = C.op.axis
    xo, xi = s[C].split(x, factor=4)
    s[C].reorder(xo, y, xi)
    CC = s.cache_write(C, "global")
    assert CC.shape == (4, 7, 4) and names(CC.op.axis) == ["i.outer.c", "j.c", "i.inner.c"]
    assert s[C].leaf_iter_vars == list(C.op.axis) and not s[C].relations
    a, b = rand(13, 7, seed=1), rand(13, 7, seed=2)
    check(s, [A, B, C], target, [a, b], [a * b])


@pytest.mark.parametrize("target", TARGETS)
def test_cache_write_after_split_of_a_reduction(target):
    # test_schedule_cache_relayout3, with the reduction split too: the cache keeps the
    # whole reduction (its splits go, as TVM's), guarded past the data extent
    A = ts.placeholder((13, 11), name="A")
    B = ts.placeholder((13, 11), name="B")
    k = ts.reduce_axis((0, 11), "k")
    C = ts.compute((13,), lambda i: ts.sum(A[i, k] * B[i, k], axis=k), name="C")
    s = ts.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    s[C].split(k, factor=3)
    CL = s.cache_write(C, "local")
    assert CL.shape == (4, 4) and names(CL.op.reduce_axis) == ["k"]
    a, b = rand(13, 11, seed=3), rand(13, 11, seed=4)
    check(s, [A, B, C], target, [a, b], [(a * b).sum(1)])


@pytest.mark.parametrize("target", TARGETS)
def test_cache_write_after_split_with_symbolic_sizes(target):
    # the relayout tests' te.var sizes: the cache's outer extent is ceil(m / 4)
    m, n = ts.var("m"), ts.var("n")
    A = ts.placeholder((m, n), name="A")
    C = ts.compute((m, n), lambda i, j: A[i, j] * 2.0 + 1.0, name="C")
    s = ts.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].reorder(xo, C.op.axis[1], xi)
    s.cache_write(C, "global")
    a = rand(9, 5, seed=5)
    check(s, [A, C], target, [a], [a * 2 + 1])


@pytest.mark.parametrize("target", TARGETS)
def test_cache_write_after_fuse(target):
    A = ts.placeholder((7, 5), name="A")
    C = ts.compute((7, 5), lambda i, j: A[i, j] + 3.0, name="C")
    s = ts.create_schedule(C.op)
    f = s[C].fuse(*C.op.axis)
    s[C].split(f, factor=8)
    CL = s.cache_write(C, "global")
    assert CL.shape == (5, 8)  # the fused loop of 35, split by 8
    a = rand(7, 5, seed=6)
    check(s, [A, C], target, [a], [a + 3])


@pytest.mark.parametrize("target", TARGETS)
def test_cache_write_of_two_outputs_after_split(target):
    # test_schedule_cache_relayout4, split first: one cache stage of two outputs
    A = ts.placeholder((10, 3), name="A")
    B = ts.placeholder((10, 3), name="B")
    C1, C2 = ts.compute(A.shape, lambda *i: (A(*i) + 1, B(*i) / 2), name="C")
    s = ts.create_schedule([C1.op, C2.op])
    s[C1].split(C1.op.axis[0], factor=4)
    L1, L2 = s.cache_write([C1, C2], "local")
    assert L1.shape == L2.shape == (3, 4, 3)
    a, b = rand(10, 3, seed=7), rand(10, 3, seed=8)
    check(s, [A, B, C1, C2], target, [a, b], [a + 1, b / 2])


@pytest.mark.parametrize("target", TARGETS)
def test_gpu_gemm_tiled_then_cache_write_local(target):
    # a GPU schedule that tiles first and caches after: the register tile is laid out by the
    # tiling, the output is tiled again and bound, the cache computed per work-item
    M, N, K = 37, 29, 19
    A = ts.placeholder((M, K), name="A")
    B = ts.placeholder((K, N), name="B")
    k = ts.reduce_axis((0, K), "k")
    C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    s[C].tile(C.op.axis[0], C.op.axis[1], 8, 4)
    CL = s.cache_write(C, "local")
    assert CL.shape == (5, 8, 8, 4)
    bx, tx = s[C].split(C.op.axis[0], factor=8)
    by, ty = s[C].split(C.op.axis[1], factor=4)
    s[C].reorder(bx, by, tx, ty)
    s[C].bind(bx, thr("blockIdx.x"))
    s[C].bind(by, thr("blockIdx.y"))
    s[C].bind(tx, thr("threadIdx.x"))
    s[C].bind(ty, thr("threadIdx.y"))
    s[CL].compute_at(s[C], ty)
    text = str(ts.lower(s, [A, B, C]))
    assert "allocate C.local[float32 * 1 * 1 * 1 * 1], local" in text
    a, b = rand(M, K, seed=9), rand(K, N, seed=10)
    f = check(s, [A, B, C], target, [a, b], [a.astype(np.float64) @ b])
    if target == "opencl":
        assert "get_local_id(1)" in f.get_source()


@pytest.mark.parametrize("target", TARGETS)
def test_gpu_elementwise_split_then_cache_write_per_block(target):
    # the cache laid out by a split of 16, computed per work-group of 16 (its own axes bound
    # to the work-items), read back by the output's work-items
    n = 45
    A = ts.placeholder((n,), name="A")
    C = ts.compute((n,), lambda i: ts.exp(A[i]) * 0.5, name="C")
    s = ts.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=16)
    CS = s.cache_write(C, "shared")
    bx, tx = s[C].split(C.op.axis[0], factor=16)
    s[C].bind(bx, thr("blockIdx.x"))
    s[C].bind(tx, thr("threadIdx.x"))
    s[CS].compute_at(s[C], bx)
    s[CS].bind(CS.op.axis[1], thr("threadIdx.x"))
    a = rand(n, seed=11)
    check(s, [A, C], target, [a], [np.exp(a.astype(np.float64)) * 0.5])


def test_cache_write_after_binding_stays_refused():
    A = ts.placeholder((13,), name="A")
    C = ts.compute((13,), lambda i: A[i] + 1, name="C")
    s = ts.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].bind(xi, thr("threadIdx.x"))
    with pytest.raises(ts.ScheduleError, match="'i.inner': the loop is bound to threadIdx.x"):
        s.cache_write(C, "local")
    s = ts.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].unroll(xi)
    with pytest.raises(ts.ScheduleError, match="'i.inner': the loop is unrolled"):
        s.cache_write(C, "local")


def test_cache_write_after_a_shifted_or_peeled_split_stays_refused():
    A = ts.placeholder((13,), name="A")
    C = ts.compute((13,), lambda i: A[i] + 1, name="C")
    s = ts.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4, tail="shift")
    with pytest.raises(ts.ScheduleError, match="tail='shift'"):
        s.cache_write(C, "local")
    s = ts.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4, tail="peel")
    with pytest.raises(ts.ScheduleError, match="tail='peel'"):
        s.cache_write(C, "local")


def test_cache_write_under_an_attached_stage_stays_refused():
    A = ts.placeholder((13,), name="A")
    B = ts.compute((13,), lambda i: A[i] * 2, name="B")
    C = ts.compute((13,), lambda i: B[i] + 1, name="C")
    s = ts.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], xo)
    with pytest.raises(ts.ScheduleError, match="stage 'B' is computed at its loop 'i.outer'"):
        s.cache_write(C, "local")


# ---------------------------------------------------------------- nested groups


def nest_group_schedule(m, n):
    # test_bound_nest_group: g1 = {x} goes inside g2 = {x, x1}
    x = ts.compute((m, n), lambda i, j: ts.const(1, "float32"), name="x")
    x1 = ts.compute(x.shape, lambda *i: x(*i) + 1, name="x1")
    x2 = ts.compute(x.shape, lambda *i: x1(*i) + 2, name="x2")
    s = ts.create_schedule(x2.op)
    g1 = s.create_group(outputs=x, inputs=x, include_inputs=True)
    g2 = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert s[x].group == g1 and s[x1].group == g2 and g1.group == g2 and g2.group is None
    return s, x, x1, x2, g1, g2


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("order", ["outer_first", "inner_first"])
def test_nested_group_bounds_and_kernel(order, target):
    s, x, x1, x2, g1, g2 = nest_group_schedule(ts.var("m"), ts.var("n"))
    if order == "outer_first":
        g2.compute_at(s[x2], x2.op.axis[0])
        g1.compute_at(s[x1], s[x1].op.axis[1])
    else:  # the inner group placed first stays inside x1 when the outer one moves
        g1.compute_at(s[x1], s[x1].op.axis[1])
        g2.compute_at(s[x2], x2.op.axis[0])
    assert s[x].attach_stage is s[x1] and s[x1].attach_stage is s[x2]
    bounds = ts.schedule.InferBound(s.normalize())
    assert bounds[x.op.axis[0]].extent.value == 1
    assert bounds[x.op.axis[1]].extent.value == 1
    assert bounds[x1.op.axis[0]].extent.value == 1
    assert str(bounds[x1.op.axis[1]].extent) == "n"
    out = np.full((6, 5), np.nan, "float32")
    build(s, [x2], target)(out)
    np.testing.assert_array_equal(out, np.full((6, 5), 4, "float32"))


def test_group_over_an_existing_group_takes_all_its_stages():
    # g1 = {x, x1}; a group of {x1, x2} holds g1, so x moves with it too, as in TVM
    A = ts.placeholder((9, 4), name="A")
    x = ts.compute(A.shape, lambda i, j: A[i, j] * 2, name="x")
    x1 = ts.compute(A.shape, lambda i, j: x[i, j] + 1, name="x1")
    x2 = ts.compute(A.shape, lambda i, j: x1[i, j] + 2, name="x2")
    x3 = ts.compute(A.shape, lambda i, j: x2[i, j] * 3, name="x3")
    s = ts.create_schedule(x3.op)
    g1 = s.create_group(outputs=x1, inputs=A)
    g2 = s.create_group(outputs=x2, inputs=x1, include_inputs=True)
    assert g1.group is g2 and [st.name for st in g2.members] == ["x", "x1", "x2"]
    g2.compute_at(s[x3], x3.op.axis[0])
    assert all(s[t].attach_stage is s[x3] for t in (x, x1, x2))
    a = rand(9, 4, seed=12)
    for target in TARGETS:
        check(s, [A, x3], target, [a], [((a * 2 + 1) + 2) * 3])
