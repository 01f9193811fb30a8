"""TVM classic ``te`` behaviour found missing by a port of TVM's tests (the fifth round, from
``test_te_schedule_ops.py``, ``test_te_schedule.py`` and ``integration/test_reduce.py``): a
``set_store_predicate`` naming a thread axis that a stage around it binds (one bound only
inside it, as ``test_rfactor_elemwise_threads`` has, is a clear ScheduleError); ``cache_write`` of a
reduction whose range or ``comm_reducer`` uses the compute's index
(``test_loop_dep_reduce_cache_write``); ``cache_read`` with a multi-output reader
(``test_schedule_compute_inline``); ``cache_write`` after a ``reorder`` laying the cache out in
that order (``test_schedule_cache_relayout1``); ``split(..., disable_predication=True)``. Also
TVM behaviours that already held (inlining next to ``compute_at``, argmax over an inlined
stage, loop-dependent reductions, ``rfactor`` of two reduce axes with ``factor_axis``, the
API errors) and those that stay refused, with their errors (a ``compute_at`` target split or
fused afterwards, ``cache_write`` after a split, fusing a data with a reduce axis, a shared
stage in a kernel without threads). Every kernel runs on the python
target and the CPU OpenCL device against numpy on random data, at sizes no split factor
divides, into poisoned outputs."""

import numpy as np
import pytest
from ts_check import TARGETS, build, rand

import tensorsched as ts


def thr(tag):
    return ts.thread_axis(tag)


def check(s, args, target, ins, want):
    f = build(s, args, target)
    out = np.full(want.shape, np.nan, "float32")
    f(*ins, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    return f


def check_many(s, args, target, ins, wants):
    f = build(s, args, target)
    outs = [np.full(w.shape, np.nan, "float32") for w in wants]
    f(*ins, *outs)
    for out, want in zip(outs, wants):
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- store predicates


def elemwise_threads(m=10, n=1025, nt=16):
    # TVM's test_rfactor_elemwise_threads: a cross-thread sum B computed at C's threadIdx.y
    A = ts.placeholder((m, n), name="A")
    k = ts.reduce_axis((0, n), name="k")
    B = ts.compute((m,), lambda i: ts.sum(A[i, k], axis=k), name="B")
    BB = ts.compute((m,), lambda i: B[i] + 1.0, name="BB")
    C = ts.compute((m,), lambda i: BB[i] * 2.0, name="C")
    s = ts.create_schedule(C.op)
    s[BB].compute_inline()
    bx, ty = s[C].split(s[C].op.axis[0], factor=nt)
    _, kf = s[B].split(k, factor=nt)
    BF = s.rfactor(B, kf)
    s[B].compute_at(s[C], ty)
    s[C].bind(bx, thr("blockIdx.x"))
    thread_y, thread_x = thr("threadIdx.y"), thr("threadIdx.x")
    s[C].bind(ty, thread_y)
    s[B].bind(s[B].op.reduce_axis[0], thread_x)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    return A, B, C, s, thread_x, thread_y


@pytest.mark.parametrize("target", TARGETS)
def test_store_predicate_on_a_thread_axis_bound_around_the_stage(target):
    # B's predicate names threadIdx.y, which only C (B is computed inside it) binds
    A, B, C, s, thread_x, thread_y = elemwise_threads()
    s[B].set_store_predicate(thread_y.var < 10)  # every work-item keeps its copy of B
    a = rand(10, 1025, seed=1)
    check(s, [A, C], target, [a], (a.astype(np.float64).sum(1) + 1.0) * 2.0)


def test_store_predicate_on_a_thread_axis_bound_inside_the_stage_is_refused():
    # TVM's own schedule: C's predicate names threadIdx.x, which only B (computed inside C)
    # binds; TVM reads a work-item index anywhere in the kernel, tensorsched's IR only within
    # its loop: a clear error instead of a NameError / undefined variable
    A, B, C, s, thread_x, _ = elemwise_threads()
    s[B].set_store_predicate(thread_x.var == 0)
    s[C].set_store_predicate(thread_x.var == 0)
    with pytest.raises(ts.ScheduleError, match="only a stage computed inside it does"):
        ts.lower(s, [A, C])


# ---------------------------------------------------------------- cache_write / cache_read


def loop_dep_reduce(n=10):
    # a reduction over k < i, whose combiner and identity also use i
    X = ts.placeholder((n,), name="x")

    def body(i):
        k = ts.reduce_axis((0, i), name="k")
        fi = i.astype("float32")
        red = ts.comm_reducer(
            lambda x, y: ts.max(x + y, fi),
            lambda dtype: ts.tir.Select(i > 1, ts.const(0, dtype), i.astype(dtype)),
            name="sum_at_least_i",
        )
        return red(X[k], axis=k)

    return X, ts.compute((n,), body, name="y")


def loop_dep_ref(x):
    out = []
    for i in range(len(x)):
        acc = 0.0 if i > 1 else float(i)
        for j in range(i):
            acc = max(acc + float(x[j]), float(i))
        out.append(acc)
    return np.array(out)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("cached", [False, True])
def test_reduction_depending_on_its_index_cache_write(target, cached):
    X, Y = loop_dep_reduce()
    s = ts.create_schedule(Y.op)
    if cached:
        s.cache_write(Y, "local")
        text = str(ts.lower(s, [X, Y]))
        assert "for (k, 0, i.c)" in text
    x = rand(10, seed=2)
    check(s, [X, Y], target, [x], loop_dep_ref(x))


@pytest.mark.parametrize("target", TARGETS)
def test_triangular_sum_cache_write_and_tuple_reduction(target):
    n = 23
    A = ts.placeholder((n, n), name="A")

    def tri(i):
        r = ts.reduce_axis((0, i + 1), name="r")
        return ts.sum(A[i, r], axis=r)

    T = ts.compute((n,), tri, name="T")
    s = ts.create_schedule(T.op)
    TL = s.cache_write(T, "local")
    xo, xi = s[T].split(T.op.axis[0], factor=4)
    s[TL].compute_at(s[T], xo)
    a = rand(n, n, seed=3)
    check(s, [A, T], target, [a], np.tril(a.astype(np.float64)).sum(1))

    # argmax over the first i + 1 columns, cached: both outputs keep one reduce axis
    def fcombine(x, y):
        keep = x[1] >= y[1]
        return ts.tir.Select(keep, x[0], y[0]), ts.tir.Select(keep, x[1], y[1])

    argmax = ts.comm_reducer(
        fcombine, lambda t0, t1: (ts.const(-1, t0), ts.min_value(t1)), name="argmax"
    )

    def am(i):
        r = ts.reduce_axis((0, i + 1), name="r")
        return argmax((r.var, A[i, r]), axis=r)

    I, V = ts.compute((n,), am, name="M")
    s = ts.create_schedule(I.op)
    s.cache_write([I, V], "local")
    f = build(s, [A, I, V], target)
    oi, ov = np.full(n, -7, "int32"), np.full(n, np.nan, "float32")
    f(a, oi, ov)
    low = np.where(np.tri(n, dtype=bool), a, -np.inf)
    np.testing.assert_array_equal(oi, low.argmax(1))
    np.testing.assert_allclose(ov, low.max(1))


@pytest.mark.parametrize("target", TARGETS)
def test_cache_read_with_a_multi_output_reader(target):
    # TVM's test_schedule_compute_inline: B cached for C and for the two-output F, E
    shape = (10, 37)
    A = ts.placeholder(shape, name="A")
    B = ts.placeholder(shape, name="B")
    C = ts.compute(shape, lambda *i: A(*i) + B(*i), name="C")
    F, E = ts.compute(shape, lambda *i: (C(*i), C(*i) * B(*i)), name="F")
    s = ts.create_schedule([F.op, E.op])
    s.cache_read(A, "local", [C])
    s.cache_read(B, "local", [C, E])
    s.cache_write(C, "local")
    s.cache_write([F, E], "local")
    s[C].compute_inline()
    text = str(ts.lower(s, [A, B, F, E]))
    assert "B.local" in text and "F.local" in text
    a, b = rand(*shape, seed=4), rand(*shape, seed=5)
    check_many(s, [A, B, F, E], target, [a, b], [a + b, (a + b) * b])


@pytest.mark.parametrize("target", TARGETS)
def test_cache_write_after_reorder_lays_the_cache_out_in_that_order(target):
    # TVM's test_schedule_cache_relayout1: the cache is laid out (and computed) j-major
    m, n = 13, 11
    A = ts.placeholder((m, n), name="A")
    B = ts.placeholder((m, n), name="B")
    C = ts.compute((m, n), lambda i, j: A[i, j] * B[i, j], name="C")
    s = ts.create_schedule(C.op)
    s[C].reorder(C.op.axis[1], C.op.axis[0])
    CC = s.cache_write(C, "global")
    assert tuple(CC.shape) == (n, m)
    text = str(ts.lower(s, [A, B, C]))
    assert text.index("for (j.c") < text.index("for (i.c")
    a, b = rand(m, n, seed=6), rand(m, n, seed=7)
    check(s, [A, B, C], target, [a, b], a * b)


@pytest.mark.parametrize("target", TARGETS)
def test_middle_caches(target):
    # TVM's test_schedule_middle_cache
    m, n = 13, 11
    A = ts.placeholder((m, n), name="A")
    B = ts.placeholder((m, n), name="B")
    C = ts.compute((m, n), lambda i, j: A[i, j] * B[i, j], name="C")
    D = ts.compute((m, n), lambda i, j: C[i, j] + 1.0, name="D")
    s = ts.create_schedule(D.op)
    s.cache_read(A, "local", readers=[C])
    s.cache_read(B, "local", readers=[C])
    s.cache_read(C, "local", readers=[D])
    s.cache_write(D, "local")
    a, b = rand(m, n, seed=8), rand(m, n, seed=9)
    check(s, [A, B, D], target, [a, b], a * b + 1.0)


def test_cache_write_after_split_relayouts():
    # refused here until tests/test_tvm_port7.py lifted it: TVM >= 0.6 relayouts the cache
    # by the split (CacheWriteWithReLayout), the reduce axes left whole
    A = ts.placeholder((13, 11), name="A")
    k = ts.reduce_axis((0, 11), name="k")
    C = ts.compute((13,), lambda i: ts.sum(A[i, k], axis=k), name="C")
    s = ts.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    s[C].split(k, factor=3)
    CG = s.cache_write(C, "global")
    assert CG.shape == (4, 4) and [iv.var.name for iv in CG.op.reduce_axis] == ["k"]
    a = rand(13, 11)
    f = build(s, [A, C], "python")
    c = np.full(13, np.nan, "float32")
    f(a, c)
    np.testing.assert_allclose(c, a.sum(1), rtol=1e-5)


# ---------------------------------------------------------------- compute_at targets


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("how", ["split", "fuse"])
def test_compute_at_target_split_or_fused_afterwards_moves_inwards(how, target):
    # TVM's test_legalize_invalid_attach: the attach point moves to the inner loop of a split
    # of the target axis (to the fused loop of a fuse whose inner operand it was)
    m, n = 10, 13
    X = ts.placeholder((m, n), name="X")
    A = ts.compute((m, n), lambda i, j: X[i, j] + 1.0, name="A")
    B = ts.compute((m, n), lambda i, j: A[i, j] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    s[A].compute_at(s[B], B.op.axis[1])
    if how == "split":
        _, inner = s[B].split(B.op.axis[1], 2)
    else:
        inner = s[B].fuse(B.op.axis[0], B.op.axis[1])
    ts.lower(s, [X, B])
    assert s[A].attach_ivar is inner
    x = rand(m, n, seed=5)
    check(s, [X, B], target, [x], (x + 1.0) * 2.0)


def test_compute_at_target_fused_as_the_outer_operand_stays_refused():
    # a fuse of the target axis with one inside it: no loop of the fused stage stands for
    # the target alone, so (as TVM's LegalizeInvalidAttach leaves it) the attach is invalid
    m, n = 10, 13
    X = ts.placeholder((m, n), name="X")
    A = ts.compute((m, n), lambda i, j: X[i, j] + 1.0, name="A")
    B = ts.compute((m, n), lambda i, j: A[i, j] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    s[A].compute_at(s[B], B.op.axis[0])
    s[B].fuse(B.op.axis[0], B.op.axis[1])
    with pytest.raises(ts.ScheduleError, match="was split or fused after compute_at"):
        ts.lower(s, [X, B])


@pytest.mark.parametrize("target", TARGETS)
def test_inline_next_to_compute_at(target):
    # TVM's test_inline_mixed: A2 (inlined) reads A1, which is computed at C's outer loop
    n = 37
    A = ts.placeholder((n,), name="A")
    A1 = ts.compute(A.shape, lambda *i: A(*i) + 1.0, name="A1")
    A2 = ts.compute(A.shape, lambda *i: A1(*i) * 3.0, name="A2")
    C = ts.compute((n,), lambda i: A2[i] + A1[n - 1 - i], name="C")
    s = ts.create_schedule(C.op)
    xo, _ = s[C].split(C.op.axis[0], factor=8)
    s[A1].compute_at(s[C], xo)
    s[A2].compute_inline()
    a = rand(n, seed=11)
    check(s, [A, C], target, [a], (a + 1.0) * 3.0 + (a[::-1] + 1.0))


# ---------------------------------------------------------------- reductions


@pytest.mark.parametrize("target", TARGETS)
def test_argmax_over_an_inlined_stage(target):
    # TVM's test_inline_multi_reduce
    def fcombine(x, y):
        keep = x[1] >= y[1]
        return ts.tir.Select(keep, x[0], y[0]), ts.tir.Select(keep, x[1], y[1])

    argmax = ts.comm_reducer(
        fcombine, lambda t0, t1: (ts.const(-1, t0), ts.min_value(t1)), name="argmax"
    )
    m, n = 7, 13
    val = ts.placeholder((m, n), name="val")
    v1 = ts.compute((m, n), lambda i, j: val[i, j] + 1.0, name="v1")
    v2 = ts.compute((m, n), lambda i, j: ts.exp(v1[i, j]), name="v2")
    k = ts.reduce_axis((0, n), name="k")
    T_idx, T_val = ts.compute((m,), lambda i: argmax((k.var, v2[i, k]), axis=k), name="T")
    s = ts.create_schedule(T_idx.op)
    s[v1].compute_inline()
    f = build(s, [val, T_idx, T_val], target)
    a = rand(m, n, seed=12)
    oi, ov = np.full(m, -7, "int32"), np.full(m, np.nan, "float32")
    f(a, oi, ov)
    np.testing.assert_array_equal(oi, a.argmax(1))
    np.testing.assert_allclose(ov, np.exp(a.astype(np.float64) + 1.0).max(1), rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("reducer", ["sum", "min", "max"])
def test_reduce_where_an_inlined_select(target, reducer):
    # integration/test_reduce.py's test_reduce_prims: rows 0 and 1 reduce nothing and keep
    # the identity
    red, npr = {"sum": (ts.sum, np.sum), "min": (ts.min, np.min), "max": (ts.max, np.max)}[reducer]
    n, m = 37, 29
    A = ts.placeholder((n, m), name="A")
    R = ts.compute((n,), lambda i: ts.tir.Select(i > 1, 1, 0), name="R")
    k = ts.reduce_axis((0, m), name="k")
    B = ts.compute((n,), lambda i: red(A[i, k], axis=k, where=(R[i] == 1)), name="B")
    s = ts.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    s[B].bind(xo, thr("blockIdx.x"))
    s[B].bind(xi, thr("threadIdx.x"))
    s[R].compute_inline()
    a = rand(n, m, seed=13)
    want = npr(a, axis=1)
    want[:2] = {"sum": 0.0, "min": np.finfo("float32").max, "max": np.finfo("float32").min}[reducer]
    check(s, [A, B], target, [a], want)


@pytest.mark.parametrize("target", TARGETS)
def test_rfactor_of_two_reduce_axes_and_factor_axis(target):
    # TVM's test_te_schedule.py::test_rfactor, with the kernels run
    n = 9
    A = ts.placeholder((n, n, n), name="A")
    k1 = ts.reduce_axis((0, n), name="k1")
    k2 = ts.reduce_axis((0, n), name="k2")
    B = ts.compute((n,), lambda i: ts.sum(A[i, k1, k2], axis=[k1, k2]), name="B")
    a = rand(n, n, n, seed=14)
    want = a.astype(np.float64).sum((1, 2))
    s = ts.create_schedule(B.op)
    BF = s.rfactor(B, k1)
    assert tuple(BF.shape) == (n, n)
    assert [iv.var.name for iv in BF.op.reduce_axis] == ["k2"]
    check(s, [A, B], target, [a], want)
    for factor_axis, shape in [(0, (4, n)), (1, (n, 4))]:
        s = ts.create_schedule(B.op)
        _, ki = s[B].split(k1, factor=4)
        BF = s.rfactor(B, ki, factor_axis)
        assert tuple(BF.shape) == shape
        assert s[B].op.reduce_axis[0].dom.extent == 4
        check(s, [A, B], target, [a], want)


@pytest.mark.parametrize("target", TARGETS)
def test_rank_zero_reduction_fused_and_split(target):
    # TVM's test_reduction_and_dummy_fuse_split
    n = 10
    X = ts.placeholder((n,), dtype="int32", name="X")
    k = ts.reduce_axis((0, n), name="k")
    Y = ts.compute((), lambda: ts.sum(X[k], axis=k), name="Y")
    s = ts.create_schedule(Y.op)
    ax = s[Y].fuse(*Y.op.axis)
    s[Y].split(ax, nparts=20)
    f = build(s, [Y, X], target)
    x = np.random.default_rng(15).integers(-50, 50, n).astype("int32")
    y = np.full((), -12345, "int32")
    f(y, x)
    assert int(y) == int(x.sum())


# ---------------------------------------------------------------- split, API errors


@pytest.mark.parametrize("target", TARGETS)
def test_split_disable_predication_is_accepted(target):
    A = ts.placeholder((43,), name="A")
    B = ts.compute(A.shape, lambda i: A[i] + 2.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4, disable_predication=True)
    a = rand(43, seed=16)
    check(s, [A, B], target, [a], a + 2.0)


def test_schedule_api_errors_as_in_tvm():
    m, n = 23, 7
    A = ts.placeholder((m, n), name="A")
    T = ts.compute((m, n), lambda i, j: A[i, j] + 1.0, name="T")
    s = ts.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    a, b = s[T].split(xi, factor=2)
    s[T].reorder(b, a, xo)
    assert list(s[T].leaf_iter_vars)[:3] == [b, a, xo]
    with pytest.raises(ts.ScheduleError, match="listed twice"):
        s[T].reorder(b, a, b)
    s = ts.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    with pytest.raises(ts.ScheduleError, match="not adjacent"):
        s[T].fuse(xo, T.op.axis[1])
    s[T].reorder(T.op.axis[1], xo, xi)
    with pytest.raises(ts.ScheduleError, match="not adjacent"):
        s[T].fuse(T.op.axis[1], xi)
    s[T].fuse(T.op.axis[1], xo)
    V = ts.placeholder((128,), name="V")
    ax = ts.reduce_axis((0, 128), name="ax")
    O = ts.compute((1,), lambda _: ts.sum(V[ax], axis=[ax]), name="O")
    s = ts.create_schedule(O.op)
    with pytest.raises(ts.ScheduleError, match="reduction axis"):
        s[O].vectorize(ax)
    C = ts.compute((16, 16), lambda i, j: A[i, j] * 2.0, name="C")
    s = ts.create_schedule(C.op)
    with pytest.raises(ts.ScheduleError, match="inside itself"):
        s[C].compute_at(s[C], C.op.axis[0])


# ---------------------------------------------------------------- still refused


def test_fuse_of_a_data_and_a_reduce_axis_is_refused():
    # TVM fuses them into one reduction loop (test_reduction_and_dummy_fuse_split)
    X = ts.placeholder((10,), dtype="int32", name="X")
    k = ts.reduce_axis((0, 10), name="k")
    Y = ts.compute((10,), lambda i: ts.sum(X[k], axis=k), name="Y")
    s = ts.create_schedule(Y.op)
    with pytest.raises(ts.ScheduleError, match="cannot fuse a data axis with a reduce axis"):
        s[Y].fuse(Y.op.axis[0], k)


def test_shared_stage_without_thread_axes_is_refused():
    # TVM's test_schedule_cache lowers a shared cache in a kernel without threads (for LLVM)
    A = ts.placeholder((13, 11), name="A")
    B = ts.placeholder((13, 11), name="B")
    C = ts.compute((13, 11), lambda i, j: A[i, j] * B[i, j], name="C")
    s = ts.create_schedule(C.op)
    AA = s.cache_read(A, "shared", readers=[C])
    CC = s.cache_write(C, "shared")
    s[AA].compute_at(s[CC], CC.op.axis[0])
    with pytest.raises(ts.LoweringError, match="did you forget to bind"):
        ts.lower(s, [A, B, C])
