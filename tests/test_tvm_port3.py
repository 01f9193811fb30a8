"""TVM classic ``te`` behaviour found missing by a port of TVM's tests (the third round),
written as TVM's tests write it: ``rfactor`` of any reduction, a tuple one (argmax) included,
and a tuple reduction across threads (``test_rfactor_argmax``); a reduction bound to
threadIdx.x computed at a consumer's threadIdx.y axis; ``cache_write`` after a split (an
error then, laid out by the split since the seventh round) and ``rfactor`` after a data-axis
split (an error); a size variable used only as a split factor
(``build(s, [A, C, f])``), which the IR text forms declare. Every kernel runs on the python
target and the CPU OpenCL device against numpy on random data, at sizes no split factor
divides, into poisoned outputs."""

import numpy as np
import pytest
from ts_check import TARGETS, build, rand

import tensorsched as ts
from tensorsched.errors import RuntimeCallError


def poison(*shape, dtype="float32"):
    return np.full(shape, np.nan if dtype.startswith("float") else -77, dtype)


# ---------------------------------------------------------------- argmax: rfactor, threads


def argmax_reducer():
    # TVM's test_rfactor_argmax / test_argmax: a comm_reducer over (index, value)
    def fcombine(x, y):
        lhs = ts.if_then_else(x[1] >= y[1], x[0], y[0])
        rhs = ts.if_then_else(x[1] >= y[1], x[1], y[1])
        return lhs, rhs

    def fidentity(t0, t1):
        return ts.const(-1, t0), ts.min_value(t1)

    return ts.comm_reducer(fcombine, fidentity, name="argmax")


def argmax_compute(m, n):
    argmax = argmax_reducer()
    A0 = ts.placeholder((m, n), name="A0", dtype="int32")
    A1 = ts.placeholder((m, n), name="A1", dtype="float32")
    k = ts.reduce_axis((0, n), name="k")
    B0, B1 = ts.compute((m,), lambda i: argmax((A0[i, k], A1[i, k]), axis=k), name="B")
    return A0, A1, B0, B1


def check_argmax(mod, m, n, seed=0):
    a0 = np.random.default_rng(seed).integers(-1000, 1000, (m, n)).astype("int32")
    a1 = rand(m, n, seed=seed + 1)
    b0, b1 = poison(m, dtype="int32"), poison(m)
    mod(a0, a1, b0, b1)
    at = a1.argmax(axis=1)
    np.testing.assert_array_equal(b0, a0[np.arange(m), at])
    np.testing.assert_array_equal(b1, a1.max(axis=1))


@pytest.mark.parametrize("target", TARGETS)
def test_rfactor_argmax_across_threads(target):
    # TVM's test_rfactor_argmax: rfactor of a tuple reduction returns its tensors, and the
    # final reduction runs across threadIdx.x (2-D work-groups with threadIdx.y)
    m, n = 10, 103
    A0, A1, B0, B1 = argmax_compute(m, n)
    s = ts.create_schedule(B0.op)
    nthread = 16
    _, kf = s[B0].split(B0.op.reduce_axis[0], factor=nthread)
    BF = s.rfactor(B0, kf)
    assert isinstance(BF, list) and len(BF) == 2
    BF0, BF1 = BF
    assert (BF0.dtype, BF1.dtype) == ("int32", "float32") and BF0.op is BF1.op
    bx, ty = s[B0].split(s[B0].op.axis[0], factor=4)
    s[B0].bind(bx, ts.thread_axis("blockIdx.x"))
    s[B0].bind(ty, ts.thread_axis("threadIdx.y"))
    tx = s[B0].op.reduce_axis[0]
    thread_x = ts.thread_axis("threadIdx.x")
    s[B0].bind(tx, thread_x)
    s[BF0.op].compute_at(s[B0], tx)
    s[B0].set_store_predicate(thread_x.var.equal(0))
    text = str(ts.lower(s, [A0, A1, B0, B1]))
    assert "B.red_buf0" in text and "B.red_buf1" in text  # a __local array per value
    check_argmax(build(s, [A0, A1, B0, B1], target), m, n)


@pytest.mark.parametrize("target", TARGETS)
def test_argmax_reduce_axis_bound_to_threads(target):
    m, n = 7, 45
    A0, A1, B0, B1 = argmax_compute(m, n)
    s = ts.create_schedule(B0.op)
    _, ki = s[B0].split(B0.op.reduce_axis[0], factor=8)
    s[B0].bind(B0.op.axis[0], ts.thread_axis("blockIdx.x"))
    s[B0].bind(ki, ts.thread_axis("threadIdx.x"))
    check_argmax(build(s, [A0, A1, B0, B1], target), m, n, seed=3)


@pytest.mark.parametrize("target", TARGETS)
def test_rfactor_argmax_serial_with_init(target):
    # rfactor of a tuple reduction with init=: the final reduction starts from it
    m, n = 6, 29
    argmax = argmax_reducer()
    A0 = ts.placeholder((m, n), name="A0", dtype="int32")
    A1 = ts.placeholder((m, n), name="A1", dtype="float32")
    I1 = ts.placeholder((m,), name="I1", dtype="float32")
    k = ts.reduce_axis((0, n), name="k")
    B0, B1 = ts.compute(
        (m,),
        lambda i: argmax((A0[i, k], A1[i, k]), axis=k, init=(ts.const(-5, "int32"), I1[i])),
        name="B",
    )
    s = ts.create_schedule(B0.op)
    ko, _ = s[B0].split(k, factor=4)
    BF0, BF1 = s.rfactor(B0, ko, factor_axis=1)
    assert BF0.shape == BF1.shape == (m, 8)  # ko became data axis 1
    a0 = np.random.default_rng(5).integers(0, 1000, (m, n)).astype("int32")
    a1 = rand(m, n, seed=6)
    i1 = rand(m, seed=7) + np.where(np.arange(m) % 2 == 0, 1.0, 0.0).astype("float32")
    b0, b1 = poison(m, dtype="int32"), poison(m)
    build(s, [A0, A1, I1, B0, B1], target)(a0, a1, i1, b0, b1)
    best = a1.max(axis=1)
    from_init = i1 >= best  # the init is the left operand of the final combine
    np.testing.assert_array_equal(b1, np.maximum(i1, best))
    np.testing.assert_array_equal(b0, np.where(from_init, -5, a0[np.arange(m), a1.argmax(1)]))


def reduce_rows(A, red, name):
    k = ts.reduce_axis((0, A.shape[1]), name=f"k{name}")
    return ts.compute(A.shape[:1], lambda i: red(A[i, k], axis=k), name=name)


@pytest.mark.parametrize("target", TARGETS)
def test_rfactor_max_min_and_comm_reducer(target):
    # rfactor is no longer sum-only: max, min and a user's product factor too
    m, n = 5, 23
    A = ts.placeholder((m, n), name="A")
    prod = ts.comm_reducer(lambda x, y: x * y, lambda t: ts.const(1, t), name="prod")
    outs, refs = [], []
    a = rand(m, n, seed=11) * 0.5 + 0.75
    for name, red, ref in (
        ("mx", ts.max, a.max(1)),
        ("mn", ts.min, a.min(1)),
        ("pr", prod, a.astype("float64").prod(1)),
    ):
        outs.append(reduce_rows(A, red, name))
        refs.append(ref)
    s = ts.create_schedule([t.op for t in outs])
    for t in outs:
        _, ki = s[t].split(t.op.reduce_axis[0], factor=4)
        tf = s.rfactor(t, ki)
        assert not isinstance(tf, list)  # one output: one tensor
        s[tf].compute_at(s[t], t.op.axis[0])
    res = [poison(m) for _ in outs]
    build(s, [A, *outs], target)(a, *res)
    for r, ref in zip(res, refs):
        np.testing.assert_allclose(r, ref, rtol=1e-5)


# ---------------------------------------------------------------- reductions with threadIdx.y


@pytest.mark.parametrize("target", TARGETS)
def test_rfactor_threads_with_thread_y(target):
    # TVM's test_rfactor_threads: bx/ty over the rows, the factored axis across threadIdx.x
    m, n = 13, 101
    A = ts.placeholder((m, n), name="A")
    k = ts.reduce_axis((0, n), name="k")
    B = ts.compute((m,), lambda i: ts.sum(A[i, k], axis=k, where=(i > 1)), name="B")
    s = ts.create_schedule(B.op)
    _, kf = s[B].split(k, factor=16)
    BF = s.rfactor(B, kf)
    bx, ty = s[B].split(s[B].op.axis[0], factor=4)
    s[B].bind(bx, ts.thread_axis("blockIdx.x"))
    s[B].bind(ty, ts.thread_axis("threadIdx.y"))
    tx = s[B].op.reduce_axis[0]
    thread_x = ts.thread_axis("threadIdx.x")
    s[B].bind(tx, thread_x)
    s[BF].compute_at(s[B], tx)
    s[B].set_store_predicate(thread_x.var.equal(0))
    a, b = rand(m, n, seed=2), poison(m)
    build(s, [A, B], target)(a, b)
    ref = np.where(np.arange(m) > 1, a.sum(1), 0).astype("float32")
    np.testing.assert_allclose(b, ref, rtol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("reducer", ["sum", "max"])
def test_reduction_across_thread_x_computed_at_thread_y(target, reducer):
    # a reduction computed at the consumer's threadIdx.y axis, its reduce axis bound to
    # threadIdx.x: it lives in private memory, and every work-item keeps the whole result
    # (TVM's all-reduce), so the consumer reads it in every work-item along threadIdx.x
    m, n = 11, 37
    A = ts.placeholder((m, n), name="A")
    k = ts.reduce_axis((0, n), name="k")
    red = ts.sum if reducer == "sum" else ts.max
    B = ts.compute((m,), lambda i: red(A[i, k], axis=k), name="B")
    C = ts.compute((m,), lambda i: B[i] * 2 + 1, name="C")
    s = ts.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].bind(xo, ts.thread_axis("blockIdx.x"))
    s[C].bind(xi, ts.thread_axis("threadIdx.y"))
    s[B].compute_at(s[C], xi)
    _, ki = s[B].split(k, factor=8)
    s[B].bind(ki, ts.thread_axis("threadIdx.x"))
    text = str(ts.lower(s, [A, C]))
    assert "allocate B[float32 * 1], local" in text
    a, c = rand(m, n, seed=4), poison(m)
    build(s, [A, C], target)(a, c)
    ref = a.sum(1) if reducer == "sum" else a.max(1)
    np.testing.assert_allclose(c, ref * 2 + 1, rtol=1e-5)


# ---------------------------------------------------------------- cache_write / rfactor order


def test_cache_write_after_split_relayouts_as_in_tvm():
    # refused here until tests/test_tvm_port7.py lifted it: as TVM >= 0.6
    # (CacheWriteWithReLayout), the cache is laid out by the split and the stage gets its
    # original axis back; a bound axis stays refused (TVM would drop the binding silently)
    A = ts.placeholder((13,), name="A")
    C = ts.compute((13,), lambda i: A[i] + 1, name="C")
    s = ts.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    CL = s.cache_write(C, "local")
    assert CL.shape == (4, 4) and s[C].leaf_iter_vars == list(C.op.axis)
    s = ts.create_schedule(C.op)
    xo, _ = s[C].split(C.op.axis[0], factor=4)
    s[C].bind(xo, ts.thread_axis("blockIdx.x"))
    with pytest.raises(ts.ScheduleError, match="call cache_write before binding"):
        s.cache_write(C, "local")


def test_rfactor_after_a_data_axis_split_is_refused():
    # TVM's rfactor resets the stage's relations, dropping a data-axis split silently; here
    # it is an error that says to split after rfactor
    A = ts.placeholder((13, 37), name="A")
    k = ts.reduce_axis((0, 37), name="k")
    B = ts.compute((13,), lambda i: ts.sum(A[i, k], axis=k), name="B")
    s = ts.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    _, ki = s[B].split(k, factor=8)
    with pytest.raises(ts.ScheduleError, match="call rfactor before splitting or binding"):
        s.rfactor(B, ki)


# ---------------------------------------------------------------- a size only as a split factor


def split_by_var(n):
    A = ts.placeholder((n,), name="A")
    C = ts.compute((n,), lambda i: A[i] * 3 + 1, name="C")
    s = ts.create_schedule(C.op)
    f = ts.var("f")
    s[C].split(C.op.axis[0], factor=f)
    return A, C, f, s


@pytest.mark.parametrize("target", TARGETS)
def test_size_used_only_as_split_factor(target):
    n = 37
    A, C, f, s = split_by_var(n)
    func = ts.lower(s, [A, C, f])
    assert func.script().startswith(
        "func default_function(A: float32[37], C: float32[37], f: int32) {"
    )
    back = ts.parse_ir(func.script())
    assert [(k, v.name) for k, v in back.size_args] == [(2, "f")]
    mod = build(s, [A, C, f], target)
    a = rand(n, seed=9)
    for factor in (1, 5, 8, 37, 50):
        c = poison(n)
        mod(a, c, factor)
        np.testing.assert_allclose(c, a * 3 + 1, rtol=1e-6)
    with pytest.raises(ts.TensorschedError, match="the size 'f' is in no argument's shape"):
        mod(a, poison(n))


@pytest.mark.parametrize("target", TARGETS)
def test_split_factor_size_before_the_arrays_and_with_a_shape_size(target):
    # the size in the signature at its position, next to a size of the shapes
    n = ts.var("n")
    A = ts.placeholder((n, 3), name="A")
    C = ts.compute((n, 3), lambda i, j: A[i, j] - j, name="C")
    s = ts.create_schedule(C.op)
    f = ts.var("f")
    xo, _ = s[C].split(C.op.axis[0], factor=f)
    s[C].bind(xo, ts.thread_axis("blockIdx.x"))
    head = ts.lower(s, [f, A, C]).script().splitlines()[0]
    assert head == "func default_function(f: int32, A: float32[n, 3], C: float32[n, 3]) {"
    mod = build(s, [f, A, C], target)
    for rows, factor in ((7, 3), (11, 4)):
        a, c = rand(rows, 3, seed=rows), poison(rows, 3)
        mod(factor, a, c)
        np.testing.assert_allclose(c, a - np.arange(3, dtype="float32"), rtol=1e-6)


def test_split_factor_size_not_listed_is_refused():
    A, C, f, s = split_by_var(9)
    with pytest.raises(ts.LoweringError, match=r"list 'f' among the arguments"):
        ts.lower(s, [A, C])


def test_size_param_text_forms():
    text = (
        "func g(A: float32[10], k: int64, B: float32[10]) {\n"
        "  for (i, 0, 10) {\n"
        "    B[i] = A[i]\n"
        "  }\n"
        "}"
    )
    func = ts.parse_ir(text)
    assert [(p, v.name, v.dtype) for p, v in func.size_args] == [(1, "k", "int64")]
    assert func.script() == text
    with pytest.raises(ts.ParseError, match="a size is int32 or int64"):
        ts.parse_ir(text.replace("k: int64", "k: float32"))
    with pytest.raises(ts.ParseError, match="declared twice"):
        ts.parse_ir(text.replace("k: int64", "A: int32"))


@pytest.mark.parametrize("target", ["python", pytest.param("opencl", marks=pytest.mark.opencl)])
def test_a_split_factor_size_of_zero_is_refused(target):
    """A size only a split factor uses divides the loops: the call must give at least 1."""
    n = 37
    A = ts.placeholder((n,), name="A")
    C = ts.compute((n,), lambda i: A[i] * 2, name="C")
    f = ts.var("f")
    s = ts.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=f)
    m = ts.build(s, [A, C, f], target=target)
    a = np.random.default_rng(3).random(n).astype("float32")
    c = np.full(n, np.nan, "float32")
    with pytest.raises(RuntimeCallError, match="'f' .* must be at least 1"):
        m(a, c, 0)
    m(a, c, 4)
    np.testing.assert_allclose(c, 2 * a)
