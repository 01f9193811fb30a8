"""The rest of classic te (issue 17, part 1, step 2), written from TVM's documentation:
calling a tensor, indexdiv/indexmod/truncdiv/truncmod, thread_axis with a range,
min_value/max_value, fuse() of no axes, s.normalize(), float extents of integral value, and a
split factor (nparts) larger than the extent as TVM's bound inference treats it."""

import numpy as np
import pytest
from ts_check import check

import tensorsched as ts


def plain(s, args):
    return str(ts.lower(s, args))


def test_calling_a_tensor_is_indexing_it():
    A = ts.placeholder((4, 5), name="A")
    S = ts.placeholder((), name="S")  # rank 0: A() reads it
    idx = (1, 2)
    B = ts.compute((4, 5), lambda i, j: A(i, j) * S() + A(*idx), name="B")
    s = ts.create_schedule(B.op)
    check(s, [A, S, B], lambda a, sc: a * sc + a[1, 2])
    with pytest.raises(ts.ComputeError, match="has 2 dimensions but was called with 1"):
        A(0)


def test_rank_0_compute():
    A = ts.placeholder((3,), name="A")
    R = ts.compute((), lambda: A[0] + A[2], name="R")
    s = ts.create_schedule(R.op)
    check(s, [A, R], lambda a: a[0] + a[2])


@pytest.mark.parametrize("d", [3, -3])
def test_index_division_functions(d):
    A = ts.placeholder((12,), name="A", dtype="int32")
    B = ts.compute(
        (12, 4),
        lambda i, f: ts.if_then_else(
            f.equal(0),
            ts.indexdiv(A[i], d),
            ts.if_then_else(
                f.equal(1),
                ts.indexmod(A[i], d),
                ts.if_then_else(f.equal(2), ts.truncdiv(A[i], d), ts.truncmod(A[i], d)),
            ),
        ),
        name="B",
    )
    s = ts.create_schedule(B.op)
    a = np.arange(-6, 6, dtype="int32")
    trunc = np.trunc(a / d).astype("int32")
    ref = np.stack([a // d, a % d, trunc, a - trunc * d], axis=1)
    check(s, [A, B], lambda x: ref, inputs={A: a})


def test_truncdiv_of_indices_is_floor_division():
    A = ts.placeholder((16,), name="A")
    B = ts.compute((8,), lambda i: A[ts.truncdiv(i * 4, 2) + ts.truncmod(i, 2)], name="B")
    text = plain(ts.create_schedule(B.op), [A, B])
    assert "select" not in text  # i >= 0: the simplifier drops the sign correction


def test_min_value_and_max_value():
    assert ts.min_value("float32").value == -np.finfo(np.float32).max
    assert ts.max_value("int32").value == np.iinfo(np.int32).max
    assert ts.min_value("int64").dtype == "int64"
    A = ts.placeholder((6,), name="A")
    k = ts.reduce_axis((0, 6), name="k")
    B = ts.compute((1,), lambda i: ts.max(A[k], axis=k), name="B")
    C = ts.compute(
        (6,), lambda i: ts.if_then_else(A[i] > 0.0, A[i], ts.min_value("float32")), name="C"
    )
    check(ts.create_schedule(B.op), [A, B], lambda a: a.max(keepdims=True))
    lowest = float(-np.finfo(np.float32).max)
    check(ts.create_schedule(C.op), [A, C], lambda a: np.where(a > 0, a, lowest))


def test_thread_axis_with_a_range_guards_a_shorter_axis():
    A = ts.placeholder((50,), name="A")
    B = ts.compute((50,), lambda i: A[i] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=30)
    s[B].bind(xo, ts.thread_axis("blockIdx.x"))
    s[B].bind(xi, ts.thread_axis((0, 32), "threadIdx.x"))
    text = plain(s, [A, B])
    assert "// attr [threadIdx.x] thread_extent = 32" in text and "if (threadIdx.x < 30)" in text
    check(s, [A, B], lambda a: a + 1)
    tx = ts.thread_axis((0, 16), "threadIdx.x")
    s = ts.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=30)
    s[B].bind(xo, ts.thread_axis("blockIdx.x"))
    s[B].bind(xi, tx)
    with pytest.raises(ts.ScheduleError, match="has 30 iterations but is bound to"):
        ts.lower(s, [A, B])


def test_thread_axis_forms():
    assert ts.thread_axis("threadIdx.x").dom is None
    assert ts.thread_axis(tag="blockIdx.y").tag == "blockIdx.y"
    assert ts.thread_axis("vthread", "vx").var.name == "vx"  # tensorsched's (tag, name) form
    assert ts.thread_axis((0, 8), "threadIdx.y", name="ty").var.name == "ty"


def test_fuse_of_no_axes_is_a_singleton_to_bind():
    A = ts.placeholder((7,), name="A")
    k = ts.reduce_axis((0, 7), name="k")
    B = ts.compute((1,), lambda i: ts.sum(A[k], axis=k), name="B")
    s = ts.create_schedule(B.op)
    one = s[B].fuse()
    assert s[B].leaf_iter_vars[0] is one
    text = plain(s, [A, B])
    assert "singleton" not in text  # a loop of one iteration goes
    s[B].bind(one, ts.thread_axis("blockIdx.x"))
    text = plain(s, [A, B])
    assert "// attr [blockIdx.x] thread_extent = 1" in text
    check(s, [A, B], lambda a: a.sum(keepdims=True))


def test_normalize_returns_the_schedule():
    A = ts.placeholder((8,), name="A")
    k = ts.reduce_axis((2, 8), name="k")
    B = ts.compute((1,), lambda i: ts.sum(A[k], axis=k), name="B")
    s = ts.create_schedule(B.op)
    assert s.normalize() is s
    check(s, [A, B], lambda a: a[2:].sum(keepdims=True))


def test_float_extents_of_integral_value():
    N, bn = 64, 32
    A = ts.placeholder((N / bn, bn), name="A")  # TVM's opt_gemm packs with N / bn
    k = ts.reduce_axis((0.0, N / bn), name="k")
    B = ts.compute((bn,), lambda j: ts.sum(A[k, j], axis=k), name="B")
    assert A.shape == (2, 32) and type(A.shape[0]) is int
    check(ts.create_schedule(B.op), [A, B], lambda a: a.sum(axis=0))
    with pytest.raises(ts.ComputeError, match="positive ints"):
        ts.placeholder((2.5,), name="X")


def test_split_larger_than_the_extent_takes_the_extent():
    A = ts.placeholder((10, 6), name="A")
    B = ts.compute((10, 6), lambda i, j: A[i, j] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=16)
    jo, ji = s[B].split(B.op.axis[1], nparts=8)
    text = plain(s, [A, B])
    assert "for (j.outer, 0, 6)" in text and "if" not in text
    check(s, [A, B], lambda a: 2 * a)
    # bound to a thread: the work-group keeps the size asked for, the extra items are guarded
    s = ts.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=16)
    s[B].bind(ii, ts.thread_axis("threadIdx.x"))
    text = plain(s, [A, B])
    assert "thread_extent = 16" in text and "if (threadIdx.x < 10)" in text
    check(s, [A, B], lambda a: 2 * a)


@pytest.mark.parametrize("nn", [1, 7, 40])
def test_split_by_a_symbolic_factor(nn):
    n, f = ts.size_var("n"), ts.size_var("f")
    A = ts.placeholder((n,), name="A")
    F = ts.placeholder((f,), name="F")  # binds f
    B = ts.compute((n,), lambda i: A[i] + F[0], name="B")
    s = ts.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=f)
    mod = ts.build(s, [A, F, B], target="python")
    for ff in (1, 3, 64):
        a, fv = np.random.rand(nn).astype("float32"), np.random.rand(ff).astype("float32")
        b = np.full(nn, np.nan, "float32")
        mod(a, fv, b)
        np.testing.assert_allclose(b, a + fv[0], rtol=1e-6)


def lower_triangle_sum(N):
    A = ts.placeholder((N, N), name="A")

    def row(i):
        k = ts.reduce_axis((0, i + 1), "k")  # the range depends on the outer index
        return ts.sum(A[i, k], axis=k)

    return A, ts.compute((N,), row, name="B")


@pytest.mark.parametrize("target", ["python", "opencl"])
def test_triangular_reduction(target):
    n = ts.size_var("n")
    A, B = lower_triangle_sum(n)
    s = ts.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    s[B].split(B.op.reduce_axis[0], factor=2)
    assert "for (k.outer, 0, i.outer*2 + i.inner//2 + 1)" in plain(s, [A, B])
    if target == "opencl":
        pytest.importorskip("pyopencl")
    mod = ts.build(s, [A, B], target=target)
    for nn in (1, 5, 8):
        a = np.random.default_rng(nn).random((nn, nn), dtype=np.float32)
        b = np.full(nn, np.nan, "float32")
        mod(a, b)
        np.testing.assert_allclose(b, np.tril(a).sum(axis=1), rtol=1e-5)


def test_triangular_reduction_outside_its_index_is_refused():
    A, B = lower_triangle_sum(6)
    s = ts.create_schedule(B.op)
    s[B].reorder(B.op.reduce_axis[0], B.op.axis[0])
    with pytest.raises(ts.LoweringError, match="loop variable 'i' is used outside its loop"):
        ts.lower(s, [A, B])


@pytest.mark.parametrize("target", ["python", "opencl"])
def test_comm_reducer_product(target):
    product = ts.comm_reducer(lambda x, y: x * y, lambda t: ts.const(1, dtype=t), name="product")
    n, m = ts.size_var("n"), ts.size_var("m")
    A = ts.placeholder((n, m), name="A")
    k = ts.reduce_axis((0, m), "k")
    B = ts.compute((n,), lambda i: product(A[i, k], axis=k), name="B")
    s = ts.create_schedule(B.op)
    s[B].split(k, factor=3)
    text = plain(s, [A, B])
    assert "B[i] = 1f" in text and "B[i] = B[i]*A[" in text
    if target == "opencl":
        pytest.importorskip("pyopencl")
    mod = ts.build(s, [A, B], target=target)
    for nn, mm in ((4, 7), (2, 3)):
        a = np.random.default_rng(mm).uniform(0.5, 1.5, (nn, mm)).astype("float32")
        b = np.full(nn, np.nan, "float32")
        mod(a, b)
        np.testing.assert_allclose(b, a.prod(axis=1), rtol=1e-5)


def test_comm_reducer_with_where_and_its_errors():
    absmax = ts.comm_reducer(
        lambda x, y: ts.max(ts.fabs(x), ts.fabs(y)), lambda t: ts.const(0, t), name="absmax"
    )
    A = ts.placeholder((4, 7), name="A")
    k = ts.reduce_axis((0, 7), "k")
    C = ts.compute((4,), lambda i: absmax(A[i, k], axis=k, where=k > 0), name="C")
    check(ts.create_schedule(C.op), [A, C], lambda a: np.abs(a[:, 1:]).max(axis=1))
    with pytest.raises(ts.ComputeError, match="cannot use tuple"):  # fcombine takes values
        absmax((A[0, k], A[1, k]), axis=k)
    bad = ts.comm_reducer(lambda x, y: x < y, lambda t: ts.const(0, t), name="bad")
    with pytest.raises(ts.ComputeError, match="must keep the type"):
        bad(A[0, k], axis=k)


def row_sum(n, m):
    A = ts.placeholder((n, m), name="A")
    k = ts.reduce_axis((0, m), "k")
    return A, ts.compute((n,), lambda i: ts.sum(A[i, k], axis=k), name="B")


def cross_thread_plain():
    """TVM's reduction tutorial: the reduce axis split by 16 and its inner part bound to
    threadIdx.x, rows over blockIdx.x / threadIdx.y."""
    A, B = row_sum(ts.var("n"), ts.var("m"))
    s = ts.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    xo, xi = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(xo, ts.thread_axis("blockIdx.x"))
    s[B].bind(xi, ts.thread_axis("threadIdx.y"))
    tx = ts.thread_axis("threadIdx.x")
    s[B].bind(ki, tx)
    s[B].set_store_predicate(tx.var.equal(0))
    return s, [A, B]


def cross_thread_rfactor():
    """The same tutorial's rfactor variant: the partial sums in a stage computed at the
    reduce axis bound to threadIdx.x."""
    A, B = row_sum(ts.var("n"), ts.var("m"))
    s = ts.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(xo, ts.thread_axis("blockIdx.x"))
    s[B].bind(xi, ts.thread_axis("threadIdx.y"))
    tx = ts.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var.equal(0))
    return s, [A, B]


@pytest.mark.parametrize("target", ["python", "opencl"])
@pytest.mark.parametrize("make", [cross_thread_plain, cross_thread_rfactor])
def test_cross_thread_reduction(make, target):
    s, args = make()
    text = plain(s, args)
    assert "allocate B.red_buf[float32 * 512], shared" in text
    assert text.count("barrier(shared)") == 5  # 4 tree steps, and after the result is read
    assert "if (threadIdx.x == 0 && blockIdx.x*32 + threadIdx.y < n)" in text
    if target == "opencl":
        pytest.importorskip("pyopencl")
    mod = ts.build(s, args, target=target)
    for nn, mm in ((3, 5), (33, 40), (1, 16)):
        a = np.random.default_rng(mm).random((nn, mm), dtype=np.float32)
        b = np.full(nn, np.nan, "float32")
        mod(a, b)
        np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)


def test_cross_thread_max_over_12_work_items():
    A = ts.placeholder((5, 50), name="A")
    k = ts.reduce_axis((0, 50), "k")
    C = ts.compute((5,), lambda i: ts.max(A[i, k], axis=k), name="C")
    s = ts.create_schedule(C.op)
    ko, ki = s[C].split(k, factor=12)
    s[C].bind(C.op.axis[0], ts.thread_axis("blockIdx.x"))
    s[C].bind(ki, ts.thread_axis("threadIdx.x"))
    assert "if (threadIdx.x < 8 && threadIdx.x + 8 < 12)" in plain(s, [A, C])
    check(s, [A, C], lambda a: a.max(axis=1))


def test_cross_thread_reduction_errors():
    A, B = row_sum(8, 64)
    s = ts.create_schedule(B.op)
    with pytest.raises(ts.ScheduleError, match="not to blockIdx.x: use rfactor"):
        s[B].bind(B.op.reduce_axis[0], ts.thread_axis("blockIdx.x"))
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    s[B].reorder(ko, B.op.axis[0], ki)
    s[B].bind(ki, ts.thread_axis("threadIdx.x"))
    with pytest.raises(ts.ScheduleError, match="data axis 'i' is inside the reduction loops"):
        ts.lower(s, [A, B])
    with pytest.raises(ts.ScheduleError, match="must be a condition"):
        s[B].set_store_predicate(B.op.axis[0] + 1)


def argmax_reducer():
    """TVM's reduction tutorial: argmax over (index, value) pairs."""

    def fcombine(x, y):
        lhs = ts.if_then_else(x[1] >= y[1], x[0], y[0])
        rhs = ts.if_then_else(x[1] >= y[1], x[1], y[1])
        return lhs, rhs

    def fidentity(t0, t1):
        return ts.const(-1, t0), ts.min_value(t1)

    return ts.comm_reducer(fcombine, fidentity, name="argmax")


@pytest.mark.parametrize("target", ["python", "opencl"])
def test_argmax_tuple_reduction(target):
    argmax = argmax_reducer()
    m, n = ts.var("m"), ts.var("n")
    idx = ts.placeholder((m, n), name="idx", dtype="int32")
    val = ts.placeholder((m, n), name="val", dtype="int32")
    k = ts.reduce_axis((0, n), "k")
    T0, T1 = ts.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    assert T0.op is T1.op and (T0.name, T1.name) == ("T.v0", "T.v1")
    assert T0.op.num_outputs == 2 and T1.value_index == 1
    s = ts.create_schedule(T0.op)
    s[T0].split(T0.op.reduce_axis[0], factor=4)
    text = plain(s, [idx, val, T0, T1])
    assert "T.v0[i] = (-1)" in text and "T.v1[i] = (-2147483648)" in text
    if target == "opencl":
        pytest.importorskip("pyopencl")
    mod = ts.build(s, [idx, val, T0, T1], target=target)
    rng = np.random.default_rng(0)
    for mm, nn in ((3, 5), (4, 9)):
        iv = np.arange(mm * nn, dtype="int32").reshape(mm, nn)
        vv = rng.integers(-50, 50, (mm, nn)).astype("int32")
        t0, t1 = np.zeros(mm, "int32"), np.zeros(mm, "int32")
        mod(iv, vv, t0, t1)
        np.testing.assert_array_equal(t1, vv.max(axis=1))
        np.testing.assert_array_equal(t0, iv[np.arange(mm), vv.argmax(axis=1)])  # first max


def test_multi_output_compute_computed_at_its_consumer():
    m, n = ts.size_var("m"), ts.size_var("n")
    A = ts.placeholder((m, n), name="A")
    B0, B1 = ts.compute((m, n), lambda i, j: (A[i, j] + 1.0, A[i, j] * 2.0), name="B")
    C = ts.compute((m, n), lambda i, j: B0[i, j] * B1[i, j], name="C")
    s = ts.create_schedule(C.op)
    xo, _ = s[C].split(C.op.axis[1], factor=4)
    s[B0].compute_at(s[C], xo)
    text = plain(s, [A, C])
    assert "allocate B.v0[float32 * 1 * 4]" in text and "allocate B.v1[float32 * 1 * 4]" in text
    mod = ts.build(s, [A, C], target="python")
    for mm, nn in ((3, 7), (1, 4)):
        a = np.random.default_rng(nn).random((mm, nn), dtype=np.float32)
        c = np.full((mm, nn), np.nan, "float32")
        mod(a, c)
        np.testing.assert_allclose(c, (a + 1) * (a * 2), rtol=1e-6)


def test_multi_output_errors():
    A = ts.placeholder((6,), name="A")
    k = ts.reduce_axis((0, 6), "k")
    with pytest.raises(ts.ComputeError, match="one tuple reduction"):
        ts.compute((1,), lambda i: (ts.sum(A[k], axis=k), A[i]), name="D")
    B0, B1 = ts.compute((6,), lambda i: (A[i] + 1.0, A[i] - 1.0), name="B")
    s = ts.create_schedule(B0.op)
    with pytest.raises(ts.LoweringError, match="output 'B.v1' is not among the arguments"):
        ts.lower(s, [A, B0])
    with pytest.raises(ts.ScheduleError, match="2 outputs"):
        s.cache_write(B0, "local")
    with pytest.raises(ts.ComputeError, match="has 2 output"):
        B0.op.output(2)


def cumsum_scan(m, n):
    """TVM's scan tutorial: a cumulative sum over the rows."""
    X = ts.placeholder((m, n), name="X")
    s_state = ts.placeholder((m, n))
    s_init = ts.compute((1, n), lambda _, i: X[0, i])
    s_update = ts.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
    return X, s_init, s_update, ts.scan(s_init, s_update, s_state, inputs=[X])


@pytest.mark.parametrize("target", ["python", "opencl"])
@pytest.mark.parametrize("threads", [False, True])
def test_scan_cumulative_sum(target, threads):
    X, s_init, s_update, s_scan = cumsum_scan(ts.var("m"), ts.var("n"))
    s = ts.create_schedule(s_scan.op)
    if threads:
        for part in (s_init, s_update):
            xo, xi = s[part].split(part.op.axis[1], factor=4)
            s[part].bind(xo, ts.thread_axis("blockIdx.x"))
            s[part].bind(xi, ts.thread_axis("threadIdx.x"))
    text = plain(s, [X, s_scan])
    assert "for (scan.idx, 1, m - 1) {" in text
    assert "scan[(scan.idx - 1)*n + " in text
    if target == "opencl":
        pytest.importorskip("pyopencl")
    mod = ts.build(s, [X, s_scan], target=target)
    for mm, nn in ((1, 3), (5, 9)):
        x = np.random.default_rng(nn).random((mm, nn), dtype=np.float32)
        out = np.full((mm, nn), np.nan, "float32")
        mod(x, out)
        np.testing.assert_allclose(out, np.cumsum(x, axis=0), rtol=1e-5)


@pytest.mark.parametrize("target", ["python", "opencl"])
def test_scan_update_reading_a_cached_input(target):
    # TVM's test_bound_scan: a cache_read of X for the update (which rebinds the update's
    # body), computed at a loop of it, leaves the update one row a step of the scan
    X, s_init, s_update, s_scan = cumsum_scan(ts.var("m"), ts.var("n"))
    s = ts.create_schedule(s_scan.op)
    XX = s.cache_read(X, "local", s_update)
    xo, _ = s[s_update].split(s_update.op.axis[1], factor=4)
    s[XX].compute_at(s[s_update], xo)
    text = plain(s, [X, s_scan])
    assert "X[scan.idx*n + " in text and "for (t, " not in text
    if target == "opencl":
        pytest.importorskip("pyopencl")
    x = np.random.default_rng(3).random((5, 10), dtype=np.float32)
    out = np.full((5, 10), np.nan, "float32")
    ts.build(s, [X, s_scan], target=target)(x, out)
    np.testing.assert_allclose(out, np.cumsum(x, axis=0), rtol=1e-5)


def test_scan_errors():
    X, s_init, s_update, s_scan = cumsum_scan(6, 4)
    assert s_scan.op.scan_axis.dom.min == 1 and s_scan.shape == (6, 4)
    s = ts.create_schedule(s_scan.op)
    with pytest.raises(ts.ScheduleError, match="init or update of scan 'scan'"):
        s[s_update].compute_inline()
    s[s_update].split(s_update.op.axis[0], factor=2)
    with pytest.raises(ts.ScheduleError, match="is the scan's step"):
        ts.lower(s, [X, s_scan])
    state = s_update.op.body[0].a.tensor  # s_state, read by the update
    with pytest.raises(ts.LoweringError, match="is the state of scan 'scan'"):
        ts.lower(ts.create_schedule(s_scan.op), [X, state, s_scan])
    with pytest.raises(ts.ComputeError, match="must be a ts.placeholder"):
        ts.scan(s_init, s_update, s_update)
    with pytest.raises(ts.ComputeError, match="share their trailing dimensions"):
        ts.scan(s_init, s_update, ts.placeholder((6, 5)))
