"""TVM classic ``te`` behaviour found missing by a port of TVM's tests, written from TVM's
documentation and tests: a reduction's ``init=`` (also after ``rfactor`` and across threads),
reducers called on expressions (``_reduce_directly``), shapes affine in a size (``8*m``)
bound from the arrays at a call, ``ts.schedule.AutoInlineBroadcast`` and ``cache_write`` of a
multi-output stage. Every kernel runs on the python target and the CPU OpenCL device against
numpy on random data, at sizes no split factor divides, into poisoned outputs."""

import numpy as np
import pytest
from ts_check import TARGETS, build, rand

import tensorsched as ts
from tensorsched.runtime.module import load_module


def poison(*shape, dtype="float32"):
    return np.full(shape, np.nan if dtype.startswith("float") else -77, dtype)


# ---------------------------------------------------------------- init= of a reduction


def matmul_init(n, m, l):
    A = ts.placeholder((n, l), name="A")
    B = ts.placeholder((l, m), name="B")
    I = ts.placeholder((n, m), name="I")  # noqa: E741  (TVM's test names it so)
    k = ts.reduce_axis((0, l), name="k")
    C = ts.compute((n, m), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k, init=I[i, j]), name="C")
    return A, B, I, C


@pytest.mark.parametrize("target", TARGETS)
def test_sum_init_tensor(target):
    # TVM's test_reduce_init / te.sum(..., init=I[i, j])
    n, m, l = 7, 5, 9
    A, B, I, C = matmul_init(n, m, l)
    s = ts.create_schedule(C.op)
    text = str(ts.lower(s, [A, B, I, C]))
    assert "C[i*5 + j] = I[i*5 + j]" in text
    a, b, i = rand(n, l), rand(l, m, seed=1), rand(n, m, seed=2)
    c = poison(n, m)
    build(s, [A, B, I, C], target)(a, b, i, c)
    np.testing.assert_allclose(c, i + a @ b, rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_init_with_data_loop_inside_the_reduction(target):
    # the init loop runs over the data loops reordered inside the reduction (fresh variables)
    n, m, l = 7, 5, 9
    A, B, I, C = matmul_init(n, m, l)
    s = ts.create_schedule(C.op)
    i, j = C.op.axis
    jo, ji = s[C].split(j, factor=3)
    s[C].reorder(i, jo, C.op.reduce_axis[0], ji)
    a, b, ii = rand(n, l), rand(l, m, seed=1), rand(n, m, seed=2)
    c = poison(n, m)
    build(s, [A, B, I, C], target)(a, b, ii, c)
    np.testing.assert_allclose(c, ii + a @ b, rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_max_and_min_init_constant_and_tensor(target):
    n, m = 6, 11
    A = ts.placeholder((n, m), name="A")
    B = ts.placeholder((n,), name="B")
    k = ts.reduce_axis((0, m), name="k")
    mx = ts.compute((n,), lambda i: ts.max(A[i, k], axis=k, init=B[i]), name="mx")
    k2 = ts.reduce_axis((0, m), name="k2")
    mn = ts.compute((n,), lambda i: ts.min(A[i, k2], axis=k2, init=0.75), name="mn")
    s = ts.create_schedule([mx.op, mn.op])
    a, b = rand(n, m), rand(n, seed=3) * 1.2
    rmx, rmn = poison(n), poison(n)
    build(s, [A, B, mx, mn], target)(a, b, rmx, rmn)
    np.testing.assert_array_equal(rmx, np.maximum(a.max(1), b))
    np.testing.assert_array_equal(rmn, np.minimum(a.min(1), np.float32(0.75)))


@pytest.mark.parametrize("target", TARGETS)
def test_rfactor_init(target):
    # TVM's test_rfactor_init: the result is I + A @ C, the init counted once
    n, m, l = 7, 5, 23
    A, B, I, C = matmul_init(n, m, l)
    s = ts.create_schedule(C.op)
    kf, _ = s[C].split(C.op.reduce_axis[0], nparts=4)
    CF = s.rfactor(C, kf, 1)
    s[CF].parallel(CF.op.axis[0])
    a, b, i = rand(n, l), rand(l, m, seed=1), rand(n, m, seed=2)
    c = poison(n, m)
    build(s, [A, B, I, C], target)(a, b, i, c)
    np.testing.assert_allclose(c, i + a @ b, rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_init_across_threads(target):
    n, m = 5, 37
    A = ts.placeholder((n, m), name="A")
    B = ts.placeholder((n,), name="B")
    k = ts.reduce_axis((0, m), name="k")
    C = ts.compute((n,), lambda i: ts.sum(A[i, k], axis=k, init=B[i]), name="C")
    s = ts.create_schedule(C.op)
    _, ki = s[C].split(k, factor=8)
    s[C].bind(C.op.axis[0], ts.thread_axis("blockIdx.x"))
    s[C].bind(ki, ts.thread_axis("threadIdx.x"))
    assert "C[blockIdx.x] = B[blockIdx.x] + C.red_buf[0]" in str(ts.lower(s, [A, B, C]))
    a, b = rand(n, m), rand(n, seed=4)
    c = poison(n)
    build(s, [A, B, C], target)(a, b, c)
    np.testing.assert_allclose(c, a.sum(1) + b, rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_comm_reducer_init_and_cache_write(target):
    n, m = 6, 9
    prod = ts.comm_reducer(lambda x, y: x * y, lambda t: ts.const(1, dtype=t), name="prod")
    A = ts.placeholder((n, m), name="A")
    B = ts.placeholder((n,), name="B")
    k = ts.reduce_axis((0, m), name="k")
    C = ts.compute((n,), lambda i: prod(A[i, k], axis=k, init=B[i]), name="C")
    s = ts.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    s[CL].compute_at(s[C], C.op.axis[0])
    a, b = rand(n, m), rand(n, seed=5)
    c = poison(n)
    build(s, [A, B, C], target)(a, b, c)
    np.testing.assert_allclose(c, a.prod(1) * b, rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_tuple_reducer_init(target):
    # argmax over (index, value), starting from (-1, B[i]): rows whose max is below B keep -1
    def fcombine(x, y):
        take = x[1] >= y[1]
        return ts.tir.Select(take, x[0], y[0]), ts.tir.Select(take, x[1], y[1])

    argmax = ts.comm_reducer(
        fcombine, lambda t0, t1: (ts.const(-1, t0), ts.min_value(t1)), name="argmax"
    )
    n, m = 9, 7
    idx = ts.placeholder((n, m), name="idx", dtype="int32")
    val = ts.placeholder((n, m), name="val")
    B = ts.placeholder((n,), name="B")
    k = ts.reduce_axis((0, m), name="k")
    T0, T1 = ts.compute(
        (n,),
        lambda i: argmax((idx[i, k], val[i, k]), axis=k, init=(ts.const(-1, "int32"), B[i])),
        name="T",
    )
    s = ts.create_schedule(T0.op)
    v = rand(n, m)
    b = np.where(np.arange(n) % 2 == 0, np.float32(2.0), np.float32(0.0)).astype("float32")
    ix = np.tile(np.arange(m, dtype="int32"), (n, 1))
    t0, t1 = poison(n, dtype="int32"), poison(n)
    build(s, [idx, val, B, T0, T1], target)(ix, v, b, t0, t1)
    np.testing.assert_array_equal(t0, np.where(b > v.max(1), -1, v.argmax(1)))
    np.testing.assert_array_equal(t1, np.maximum(v.max(1), b))


def test_init_errors():
    A = ts.placeholder((4, 5), name="A")
    k = ts.reduce_axis((0, 5), name="k")
    with pytest.raises(ts.ComputeError, match="init uses the reduce axis 'k'"):
        ts.compute((4,), lambda i: ts.sum(A[i, k], axis=k, init=A[i, k]))
    with pytest.raises(ts.ComputeError, match="init is int32 but the reduction is float32"):
        ts.compute((4,), lambda i: ts.sum(A[i, k], axis=k, init=i))
    argmax = ts.comm_reducer(lambda x, y: (x[0], y[1]), lambda a, b: (ts.const(0, a), 0.0))
    idx = ts.placeholder((4, 5), name="idx", dtype="int32")
    with pytest.raises(ts.ComputeError, match="must be a 2-tuple of initial values"):
        argmax((idx[0, k], A[0, k]), axis=k, init=A[0, 0])


# ---------------------------------------------------------------- reducers on expressions


def test_reducers_called_on_expressions():
    # TVM's reducer form 2 (_reduce_directly): te.max(a, b, c), mysum(a, b)
    A = ts.placeholder((3,), name="A")
    a, b, c = A[0], A[1], A[2]
    assert str(ts.max(a, b)) == "max(A[0], A[1])"
    assert str(ts.max(a, b, c)) == "max(max(A[0], A[1]), A[2])"
    assert str(ts.min(a, b, None)) == "min(A[0], A[1])"  # an unused where=None is dropped
    assert str(ts.sum(a, b, c)) == "A[0] + A[1] + A[2]"
    mysum = ts.comm_reducer(lambda x, y: x + y, lambda t: ts.const(0, dtype=t), name="mysum")
    assert str(mysum(a, b)) == "A[0] + A[1]"
    assert str(mysum(a, 2.0)) == "A[0] + 2f"
    assert str(ts.max(ts.size_var("m"), ts.size_var("n"))) == "max(m, n)"
    # TVM's positional convention (expr, axis, where, init) still reduces
    k = ts.reduce_axis((0, 3), name="k")
    r = ts.sum(A[k], k, A[k] > 0.5, 2.0)
    assert isinstance(r, ts.ir.expr.Reduce) and str(r.init) == "2f" and r.condition is not None
    with pytest.raises(ts.ComputeError, match="give a reduce axis"):
        ts.sum(a)
    with pytest.raises(ts.ComputeError, match="axis must be a reduce_axis"):
        ts.sum(a, axis=ts.var("i"))  # by keyword, axis must be one
    with pytest.raises(ts.ComputeError, match="give the reduce axis"):
        mysum(a, where=a > 0)


@pytest.mark.parametrize("target", TARGETS)
def test_direct_reducer_in_compute(target):
    # fidentity as TVM's own functions of a dtype (ts.max_value), fcombine called directly
    mymin = ts.comm_reducer(lambda x, y: ts.min(x, y), ts.max_value, name="mymin")
    n, m = 7, 5
    A = ts.placeholder((n, m), name="A")
    B = ts.placeholder((n, m), name="B")
    k = ts.reduce_axis((0, m), name="k")
    C = ts.compute((n, m), lambda i, j: mymin(A[i, j], B[i, j], A[i, j] * 0.5), name="C")
    D = ts.compute((n,), lambda i: mymin(C[i, k], axis=k), name="D")
    E = ts.compute((n, m), lambda i, j: ts.sum(A[i, j], B[i, j], 1.0), name="E")
    s = ts.create_schedule([D.op, E.op])
    a, b = rand(n, m), rand(n, m, seed=6)
    c, d, e = poison(n, m), poison(n), poison(n, m)
    build(s, [A, B, C, D, E], target)(a, b, c, d, e)
    ref = np.minimum(np.minimum(a, b), a * np.float32(0.5))
    np.testing.assert_array_equal(c, ref)
    np.testing.assert_array_equal(d, ref.min(1))
    np.testing.assert_allclose(e, a + b + 1, rtol=1e-6)


# ---------------------------------------------------------------- composite shapes


@pytest.mark.parametrize("target", TARGETS)
def test_shape_affine_in_one_size(target):
    m, l = ts.var("m"), ts.var("l")
    A = ts.placeholder((8 * m, l), name="A")
    B = ts.compute((8 * m, l), lambda i, j: A[i, j] * 2 + 1, name="B")
    s = ts.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=5)
    mod = build(s, [A, B], target)
    for mm, ll in ((3, 5), (1, 7)):
        a, b = rand(8 * mm, ll, seed=mm), poison(8 * mm, ll)
        mod(a, b)
        np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
    with pytest.raises(ts.RuntimeCallError, match=r"no size m >= 0 makes dimension 0 \(m\*8\)"):
        mod(rand(13, 5), poison(13, 5))


@pytest.mark.parametrize("target", TARGETS)
def test_shapes_solved_one_after_another(target):
    # m from m*4 alone, then n from n + m + 1 (n known only once m is)
    m, n = ts.var("m"), ts.var("n")
    A = ts.placeholder((m * 4, n + m + 1), name="A")
    B = ts.compute((m, n + m + 1), lambda i, j: A[i * 4 + 3, j] - A[i * 4, j], name="B")
    s = ts.create_schedule(B.op)
    mod = build(s, [A, B], target)
    a, b = rand(12, 9), poison(3, 9)
    mod(a, b)
    np.testing.assert_allclose(b, a[3::4] - a[0::4], rtol=1e-6)
    with pytest.raises(ts.RuntimeCallError, match=r"'A' has shape \(12, 9\), expected \(m\*4"):
        mod(a, poison(2, 9))


def test_shape_given_with_a_size_argument_and_export(tmp_path):
    pytest.importorskip("pyopencl")
    m = ts.size_var("m")
    A = ts.placeholder((2 * m + 1,), name="A")
    B = ts.compute((2 * m + 1,), lambda i: A[i] * 3, name="B")
    s = ts.create_schedule(B.op)
    mod = ts.build(s, [A, B, m], target="opencl", name="odd")
    a, b = rand(11), poison(11)
    mod(a, b, 5)
    np.testing.assert_allclose(b, a * 3, rtol=1e-6)
    path = str(tmp_path / "odd.tsmod")
    mod.export_library(path)
    again = load_module(path)
    b2 = poison(11)
    again(a, b2)  # m bound from 2*m + 1 = 11
    np.testing.assert_array_equal(b2, b)
    with pytest.raises(ts.RuntimeCallError, match="no size m >= 0"):
        again(rand(10), poison(10))
    with pytest.raises(ts.RuntimeCallError, match="expected"):
        mod(a, b, 4)  # the given size disagrees with the arrays


# ---------------------------------------------------------------- AutoInlineBroadcast


@pytest.mark.parametrize("target", TARGETS)
def test_auto_inline_broadcast(target):
    n, m = 5, 7
    A = ts.placeholder((m,), name="A")
    R = ts.placeholder((n, 1), name="R")
    X = ts.placeholder((m, n), name="X")
    Bc = ts.compute((n, m), lambda i, j: A[j] * 2 + R[i, 0], name="Bc")  # a broadcast
    T = ts.compute((n, m), lambda i, j: X[j, i], name="T")  # a transpose: not one
    C = ts.compute((n, m), lambda i, j: Bc[i, j] + T[i, j], name="C")
    s = ts.create_schedule(C.op)
    ts.schedule.AutoInlineBroadcast(s)
    assert s[Bc].attach_type == "inline" and s[T].attach_type == "root"
    assert s[C].attach_type == "root"  # an output stays
    a, r, x, c = rand(m), rand(n, 1, seed=7), rand(m, n, seed=8), poison(n, m)
    build(s, [A, R, X, C], target)(a, r, x, c)
    np.testing.assert_allclose(c, a[None, :] * 2 + r + x.T, rtol=1e-6)


# ---------------------------------------------------------------- cache_write, several outputs


@pytest.mark.parametrize("target", TARGETS)
def test_cache_write_of_all_outputs(target):
    n, m = 5, 7
    A = ts.placeholder((n, m), name="A")
    T0, T1 = ts.compute((n, m), lambda i, j: (A[i, j] + 1, A[i, j] * 2), name="T")
    s = ts.create_schedule(T0.op)
    C0, C1 = s.cache_write([T0, T1], "local")
    assert (C0.name, C1.name) == ("T.local.v0", "T.local.v1")
    _, ji = s[T0].split(T0.op.axis[1], factor=3)
    s[C0].compute_at(s[T0], ji)
    a, t0, t1 = rand(n, m), poison(n, m), poison(n, m)
    build(s, [A, T0, T1], target)(a, t0, t1)
    np.testing.assert_allclose(t0, a + 1, rtol=1e-6)
    np.testing.assert_allclose(t1, a * 2, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_cache_write_of_a_tuple_reduction(target):
    def fcombine(x, y):
        take = x[1] >= y[1]
        return ts.tir.Select(take, x[0], y[0]), ts.tir.Select(take, x[1], y[1])

    argmax = ts.comm_reducer(
        fcombine, lambda t0, t1: (ts.const(-1, t0), ts.min_value(t1)), name="argmax"
    )
    n, m = 6, 11
    idx = ts.placeholder((n, m), name="idx", dtype="int32")
    val = ts.placeholder((n, m), name="val")
    k = ts.reduce_axis((0, m), name="k")
    R0, R1 = ts.compute((n,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="R")
    s = ts.create_schedule(R0.op)
    with pytest.raises(
        ts.ScheduleError, match=r"give them all as a list, s.cache_write\(\[R.v0, R.v1\]"
    ):
        s.cache_write(R1, "local")
    cache, _ = s.cache_write([R1, R0], "local")  # in the order given
    assert cache.name == "R.local.v1"
    s[cache].compute_at(s[R0], R0.op.axis[0])
    v, ix = rand(n, m), np.tile(np.arange(m, dtype="int32"), (n, 1))
    r0, r1 = poison(n, dtype="int32"), poison(n)
    build(s, [idx, val, R0, R1], target)(ix, v, r0, r1)
    np.testing.assert_array_equal(r0, v.argmax(1))
    np.testing.assert_array_equal(r1, v.max(1))


def test_cache_write_errors():
    A = ts.placeholder((4,), name="A")
    T0, T1 = ts.compute((4,), lambda i: (A[i] + 1, A[i] * 2), name="T")
    U = ts.compute((4,), lambda i: T0[i] + T1[i], name="U")
    s = ts.create_schedule(U.op)
    with pytest.raises(ts.ScheduleError, match="not an output of stage 'T'"):
        s.cache_write([T0, U], "local")
    with pytest.raises(ts.ScheduleError, match="expected a tensor or a list of them"):
        s.cache_write([], "local")
