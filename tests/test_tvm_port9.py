"""TVM classic ``te`` tests ported in the ninth round: ``te/test_te_tag.py`` (``tag_scope``
as a ``with`` block and a decorator, nested scopes refused with a ValueError, as in TVM),
``te/test_te_verify_compute.py``, ``unittest/test_te_group.py`` (the scan's group of
update stages, ``Group.attach_stage``, ``num_child_stages``, ``s.groups``),
``unittest/test_target_codegen_opencl.py`` (ternary, inf/nan, max, erf, the vectorized
select of ``test_opencl_type_casting``, ``ceil(log2)`` in double), the te-level schedules
of ``unittest/test_target_codegen_cuda.py`` that OpenCL can run (cross-thread reductions,
``test_rfactor_predicates``, vectorized floordiv/floormod and intrinsics, the padded
permute, vectorized cooperative fetching, unrolled vectorization, half constants) and
``integration/test_gemm.py``. Fixed in this round: ``ts.te.tag_scope``; ``ts.scan(...,
inputs=x)`` with one tensor; a stage between a scan's state and its update (TVM's scan
group: it was computed before the scan, reading rows not yet written) is computed at each
step, inside the update; ``Group.attach_stage`` / ``num_child_stages`` and
``Schedule.groups``. Every kernel runs on the python target and the CPU OpenCL device
against numpy on random data, at sizes no split factor divides, into poisoned outputs. What
stays refused is checked for its error: 8- and 16-bit integers, two reduce axes bound to two
thread tags, and a reduction loop outside a blockIdx-bound loop."""

import re

import numpy as np
import pytest
from ts_check import TARGETS, build, rand

import tensorsched as ts
from tensorsched.ir.tensor import TagScopeError

te = ts.te
tvm = ts


def thr(tag):
    return ts.thread_axis(tag)


def check(s, args, target, ins, wants, rtol=1e-5):
    f = build(s, args, target)
    outs = [np.full(w.shape, np.nan, "float32") for w in wants]
    f(*ins, *outs)
    for out, want in zip(outs, wants):
        np.testing.assert_allclose(out, want, rtol=rtol, atol=1e-5)
    return f


# ---------------------------------------------------------------- test_te_tag.py


@tvm.te.tag_scope(tag="conv")
def compute_conv(data, weight):
    N, IC, H, W = data.shape
    OC, IC, KH, KW = weight.shape
    ic = te.reduce_axis((0, IC), name="ic")
    dh = te.reduce_axis((0, KH), name="dh")
    dw = te.reduce_axis((0, KW), name="dw")
    return te.compute(
        (N, OC, H - KH + 1, W - KW + 1),
        lambda i, oc, h, w: te.sum(
            data[i, ic, h + dh, w + dw] * weight[oc, ic, dh, dw], axis=[ic, dh, dw]
        ),
    )


def test_tag_with():
    n, m, l = te.size_var("n"), te.size_var("m"), te.size_var("l")  # noqa: E741
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((m, l), name="B")
    with tvm.te.tag_scope(tag="gemm"):
        k = te.reduce_axis((0, l), name="k")
        C = te.compute(
            (n, m),
            lambda i, j: te.sum(A[i, k] * B[j, k], axis=k),
            attrs={"hello": 1, "arr": [10, 12]},
        )
    assert C.op.tag == "gemm"
    assert "hello" in C.op.attrs and "xx" not in C.op.attrs
    assert C.op.attrs["hello"] == 1 and list(C.op.attrs["arr"]) == [10, 12]
    D = te.compute((n,), lambda i: A[i, 0], name="D")  # after the scope: no tag
    assert D.op.tag == ""


@pytest.mark.parametrize("target", TARGETS)
def test_tag_decorator(target):
    A = te.placeholder((2, 3, 9, 8), name="A")
    B = te.placeholder((3, 3, 3, 2), name="B")
    C = compute_conv(A, B)
    assert C.op.tag == "conv" and len(C.op.attrs) == 0
    a, b = rand(2, 3, 9, 8, seed=1), rand(3, 3, 3, 2, seed=2)
    want = np.zeros((2, 3, 7, 7))
    for dh in range(3):
        for dw in range(2):
            want += np.einsum("nchw,oc->nohw", a[:, :, dh : dh + 7, dw : dw + 7], b[:, :, dh, dw])
    check(ts.create_schedule(C.op), [A, B, C], target, [a, b], [want])


def test_tag_nested_is_a_value_error():
    A = te.placeholder((1, 2, 5, 5), name="A")
    B = te.placeholder((2, 2, 3, 3), name="B")
    with pytest.raises(ValueError, match="do not nest"):
        with te.tag_scope(tag="conv"):
            compute_conv(A, B)
    with pytest.raises(TagScopeError, match="tag='x' given inside tag_scope"):
        with te.tag_scope(tag="conv"):
            te.compute((5,), lambda i: A[0, 0, i, 0], tag="x")
    C = compute_conv(A, B)  # the failed scopes left nothing behind
    assert C.op.tag == "conv"
    assert te.compute((5,), lambda i: A[0, 0, i, 0]).op.tag == ""


# ---------------------------------------------------------------- test_te_verify_compute.py


def test_verify_compute():
    n, m = te.size_var("n"), te.size_var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    k_ = te.reduce_axis((0, m - 1), "k_")
    te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    te.compute((n,), lambda i: A[i, 0] + 1, name="B")
    bad = [
        lambda i: te.sum(A[i, k], axis=k) + 1,
        lambda i: A[i, 0] * (te.sum(A[i, k], axis=k) + 1),
        lambda i: (te.sum(A[i, k], axis=k), A[i, 0] + 1),
        lambda i: (te.sum(A[i, k], axis=k), te.sum(A[i, k_], axis=k_)),
    ]
    for f in bad:
        with pytest.raises(ts.ComputeError, match="compute 'B'"):
            te.compute((n,), f, name="B")


@pytest.mark.parametrize("target", TARGETS)
def test_verify_compute_valid_kernels_run(target):
    n, m = te.size_var("n"), te.size_var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B1 = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B1")
    B2 = te.compute((n,), lambda i: A[i, 0] + 1, name="B2")
    a = rand(7, 5)
    check(ts.create_schedule(B1.op), [A, B1], target, [a], [a.sum(1)])
    check(ts.create_schedule(B2.op), [A, B2], target, [a], [a[:, 0] + 1])


# ---------------------------------------------------------------- test_te_group.py


def scan_with_body(m, n):
    x = te.compute((m, n), lambda i, j: tvm.tir.const(1, "float32"), name="x")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: x[0, i])
    s_update1 = te.compute((m, n), lambda t, i: s_state[t - 1, i] + x[t, i])
    s_update2 = te.compute((m, n), lambda t, i: s_update1[t, i] + 1)
    s_update3 = te.compute((m, n), lambda t, i: s_update2[t, i] + 1)
    res = tvm.te.scan(s_init, s_update3, s_state, inputs=x)
    return x, s_init, s_update1, s_update2, s_update3, res


def scan_body_ref(m, n):
    want = np.ones((m, n))
    for t in range(1, m):
        want[t] = want[t - 1] + 3
    return want


@pytest.mark.parametrize("target", TARGETS)
def test_scan_group(target):
    m, n = te.size_var("m"), te.size_var("n")
    x, s_init, s_update1, s_update2, s_update3, res = scan_with_body(m, n)
    s = te.create_schedule(res.op)
    assert s[s_update1].group is not None
    assert s[s_update2].group == s[s_update1].group
    # assign within group, is valid
    s[s_update1].compute_at(s[s_update2], s_update2.op.axis[1])
    # create a new group, for [s_update2 and s_update1]
    g2 = s.create_group(outputs=s_update2, inputs=[s.outputs[0].states[0], x])
    assert g2.group is not None
    assert g2.group == s[s_update3].group
    assert s[s_update2].group == g2
    assert s[s_update1].group == g2
    g2.compute_at(s[s_update3], s_update3.op.axis[1])
    assert g2.attach_stage == s[s_update3]
    with pytest.raises(ts.ScheduleError, match="does not read"):  # outside the group
        s[s_update2].compute_at(s[s_init], s_init.op.axis[0])
    check(s, [res], target, [], [scan_body_ref(7, 5)])


@pytest.mark.parametrize("target", TARGETS)
def test_scan_body_stages_are_computed_at_each_step(target):
    # the stages between the state and the update, left where the schedule puts them: TVM
    # computes them in the scan's step (its scan group); they were computed before the scan
    m, n = te.size_var("m"), te.size_var("n")
    *_, s_update3, res = scan_with_body(m, n)
    s = te.create_schedule(res.op)
    xo, xi = s[s_update3].split(s_update3.op.axis[1], factor=4)
    s[s_update3].bind(xi, thr("threadIdx.x"))
    check(s, [res], target, [], [scan_body_ref(6, 13)])


def test_scan_body_stage_outside_the_step_is_an_error():
    m, n = te.size_var("m"), te.size_var("n")
    _, _, s_update1, s_update2, _, res = scan_with_body(m, n)
    s = te.create_schedule(res.op)
    s[s_update1].compute_root()
    with pytest.raises(ts.ScheduleError, match="reads the state of scan 'scan'"):
        ts.lower(s, [res])


def test_compute_group():
    m, n = te.size_var("m"), te.size_var("n")
    x = te.compute((m, n), lambda i, j: tvm.tir.const(1, "float32"), name="x")
    x1 = te.compute(x.shape, lambda *i: x(*i) + 1, name="x1")
    x2 = te.compute(x.shape, lambda *i: x1(*i) + 2, name="x2")
    s = te.create_schedule(x2.op)
    g = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert s[x1].group == g and s[x].group == g
    g.compute_at(s[x2], x2.op.axis[1])
    assert g.attach_stage == s[x2]
    assert g.num_child_stages == 2
    for target in TARGETS:
        check(s, [x2], target, [], [np.full((7, 5), 4.0)])


def test_nest_group():
    m, n = te.size_var("m"), te.size_var("n")
    x = te.compute((m, n), lambda i, j: tvm.tir.const(1, "float32"), name="x")
    x1 = te.compute(x.shape, lambda *i: x(*i) + 1, name="x1")
    x2 = te.compute(x.shape, lambda *i: x1(*i) + 2, name="x2")
    s = te.create_schedule(x2.op)
    g1 = s.create_group(outputs=x1, inputs=x)
    g2 = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert set(s.groups) == {g1, g2}
    assert s[x].group == g2 and s[x1].group == g1 and g1.group == g2
    assert g2.num_child_stages == 2 and g1.num_child_stages == 1


# ---------------------------------------------------------------- test_target_codegen_opencl.py


def one_thread(C):
    s = te.create_schedule(C.op)
    s[C].bind(s[C].op.axis[0], thr("threadIdx.x"))
    return s


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("select", [tvm.tir.if_then_else, tvm.tir.Select])
def test_opencl_ternary_expression(target, dtype, select):
    A = te.placeholder((1,), name="A", dtype=dtype)
    rhs = select(A[0] > 0, tvm.tir.const(1, dtype), tvm.tir.const(3, dtype))
    C = te.compute((1,), lambda i: tvm.te.max(tvm.tir.const(2, dtype), rhs), name="C")
    f = build(one_thread(C), [A, C], target)
    for a, want in [(5, 2), (-5, 3)]:
        c = np.zeros(1, dtype)
        f(np.array([a], dtype), c)
        assert c[0] == want


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16"])
def test_opencl_narrow_integers_are_refused(dtype):
    with pytest.raises(ts.ComputeError, match=f"unknown dtype '{dtype}'"):
        te.placeholder((1,), name="A", dtype=dtype)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_opencl_inf_nan(target, dtype):
    for value in (-float("inf"), float("inf"), float("nan")):
        A = te.placeholder((1,), name="A", dtype=dtype)
        C = te.compute((1,), lambda i: tvm.tir.const(value, dtype=dtype), name="C")
        f = build(one_thread(C), [A, C], target)
        c = np.zeros(1, dtype)
        f(np.zeros(1, dtype), c)
        np.testing.assert_equal(c, np.array([value], dtype))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["int32", "int64", "float16", "float32", "float64"])
def test_opencl_max(target, dtype):
    A = te.placeholder((1,), name="A", dtype=dtype)
    one, zero = tvm.tir.const(1, dtype=dtype), tvm.tir.const(0, dtype=dtype)
    C = te.compute((1,), lambda i: tvm.te.max(A[0] + one, zero), name="C")
    f = build(one_thread(C), [A, C], target)
    for a, want in [(-3, 0), (3, 4)]:
        c = np.zeros(1, dtype)
        f(np.array([a], dtype), c)
        assert c[0] == want


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_opencl_erf(dtype):
    A = te.placeholder((1,), name="A", dtype=dtype)
    C = te.compute(A.shape, lambda *i: te.erf(A(*i)), name="C")
    f = build(one_thread(C), [A, C], "opencl")
    src = f.imported_modules[0].get_source()
    assert len(re.findall("erf", src)) == 1 and len(re.findall("erff", src)) == 0
    c = np.full(1, np.nan, dtype)
    f(np.array([0.5], dtype), c)
    np.testing.assert_allclose(c, [0.5204998778130465], rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype,n", [("float32", 32), ("float32", 30), ("float16", 18)])
def test_opencl_type_casting(target, dtype, n):
    # a select of an all() of integer comparisons, on a vectorized loop (30 and 18: the
    # split by 4 does not divide)
    C = te.compute(
        (n,),
        lambda i: tvm.tir.Select(
            tvm.tir.all(*[i // 4 == tvm.tir.const(3, "int32"), i % 3 == tvm.tir.const(1, "int32")]),
            tvm.tir.const(1, dtype),
            tvm.tir.const(0, dtype),
        ),
        name="C",
    )
    s = te.create_schedule(C.op)
    tx, vx = s[C].split(s[C].op.axis[0], factor=4)
    s[C].vectorize(vx)
    s[C].bind(tx, thr("threadIdx.x"))
    f = build(s, [C], target)
    c = np.full((n,), np.nan, dtype)
    f(c)
    i = np.arange(n)
    np.testing.assert_equal(c, ((i // 4 == 3) & (i % 3 == 1)).astype(dtype))


@pytest.mark.parametrize("target", TARGETS)
def test_opencl_ceil_log2(target):
    n = 32  # TVM's topi.ceil_log2 of the index, computed in double (from 1: log2(0) is -inf)
    C = te.compute(
        (n,), lambda i: te.ceil(te.log2((i + 1).astype("float64"))).astype("int32"), name="C"
    )
    f = build(one_thread(C), [C], target)
    c = np.full((n,), -77, "int32")
    f(c)
    np.testing.assert_equal(c, np.ceil(np.log2(np.arange(1, n + 1))).astype("int32"))
    if target == "opencl":
        assert "double" in f.get_source()


# ---------------------------------------------------------------- test_target_codegen_cuda.py


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("nthd", [16, 32])
def test_crossthread_reduction1(target, nthd):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "m")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, _ = s[B].split(B.op.reduce_axis[0], nparts=nthd)
    s[B].bind(ko, thr("threadIdx.x"))
    s[B].bind(B.op.axis[0], thr("blockIdx.x"))
    f = build(s, [A, B], target)
    for kk in (nthd - 1, nthd, nthd + 1):  # the three typical cases
        a, b = rand(3, kk, seed=kk), np.full(3, np.nan, "float32")
        f(a, b)
        np.testing.assert_allclose(b, a.sum(1), rtol=1e-5)


def test_crossthread_reduction2_two_thread_tags_is_refused():
    n, k0, k1 = te.var("n"), te.var("k0"), te.var("k1")
    A = te.placeholder((n, k0, k1), name="A")
    k0, k1 = te.reduce_axis((0, k0), "k0"), te.reduce_axis((0, k1), "k1")
    B = te.compute((n,), lambda i: te.sum(A[i, k0, k1], axis=(k0, k1)), name="B")
    s = te.create_schedule(B.op)
    k0o, _ = s[B].split(B.op.reduce_axis[0], nparts=4)
    k1o, _ = s[B].split(B.op.reduce_axis[1], nparts=8)
    with pytest.raises(ts.ScheduleError, match="both bound to threads.*fuse them first"):
        s[B].bind(k0o, thr("threadIdx.x"))
        s[B].bind(k1o, thr("threadIdx.y"))
        s[B].bind(B.op.axis[0], thr("blockIdx.x"))
        ts.lower(s, [A, B])


def test_cuda_reduction_binding_is_refused():
    k = te.reduce_axis((0, 30), "k")
    A = te.placeholder((97, 30), name="A")
    B = te.compute((97,), lambda m: te.sum(A[m, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].reorder(B.op.reduce_axis[0], B.op.axis[0])
    mo, _ = s[B].split(B.op.axis[0], 32)
    s[B].bind(mo, thr("blockIdx.x"))
    with pytest.raises(ts.ScheduleError, match="reduction loop 'k' is outside it"):
        ts.lower(s, [A, B])


@pytest.mark.parametrize("target", TARGETS)
def test_rfactor_predicates(target):
    tx, bx = thr("threadIdx.x"), thr("blockIdx.x")
    n = te.reduce_axis((0, 129), "n")
    A = te.placeholder((129,), name="A")
    B = te.compute((1,), lambda b: te.sum(A[n], axis=n), name="B")
    s = te.create_schedule(B.op)
    _, ni = s[B].split(s[B].op.reduce_axis[0], factor=8)
    BF = s.rfactor(B, ni, 0)
    s[B].set_store_predicate(tx.var.equal(0))
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[B].bind(s[B].op.axis[0], bx)
    s[BF].compute_at(s[B], s[B].op.axis[0])
    _, noi = s[BF].split(s[BF].op.reduce_axis[0], factor=2)
    BF2 = s.rfactor(BF, noi, 0)
    s[BF].bind(s[BF].op.axis[0], tx)
    s[BF2].compute_at(s[BF], s[BF].op.axis[1])
    a = rand(129)
    check(s, [A, B], target, [a], [np.array([a.astype("float64").sum()])])


@pytest.mark.parametrize("target", TARGETS)
def test_cuda_const_float_to_half(target):
    shape = (2, 3, 5)
    a = te.placeholder(shape, dtype="float16", name="a")
    half = tvm.tir.const(0.5, dtype="float16")
    c = te.compute(shape, lambda i, j, k: a[i, j, k] > half, name="c")
    s = te.create_schedule(c.op)
    bo, to = s[c].split(s[c].fuse(*c.op.axis), factor=8)
    s[c].bind(bo, thr("blockIdx.x"))
    s[c].bind(to, thr("threadIdx.x"))
    f = build(s, [a, c], target)
    a_np = np.random.default_rng(0).uniform(size=shape).astype("float16")
    out = np.zeros(shape, c.dtype)
    f(a_np, out)
    np.testing.assert_equal(out, a_np > np.float16(0.5))


@pytest.mark.parametrize("target", TARGETS)
def test_cuda_mix_threaded_and_normal_reduction(target):
    m, n = 30, 33
    a = te.placeholder((m, n), name="a")
    r0, r1 = te.reduce_axis((0, m), "r0"), te.reduce_axis((0, n), "r1")
    b = te.compute((), lambda: te.sum(a[r0, r1], axis=[r0, r1]), name="b")  # topi.sum(a)
    s = te.create_schedule(b.op)
    s[b].bind(b.op.reduce_axis[0], thr("threadIdx.x"))
    an = rand(m, n)
    check(s, [a, b], target, [an], [np.array(an.astype("float64").sum())])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", ["floordiv", "floormod"])
def test_cuda_floordiv_floormod_with_vectorization(target, op):
    n, k = 254, 37
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[getattr(tvm.tir, op)(i, k)], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], nparts=1)
    xio, xii = s[B].split(xi, factor=4)
    s[B].vectorize(xii)
    s[B].bind(xo, thr("blockIdx.x"))
    s[B].bind(xio, thr("threadIdx.x"))
    a, i = rand(n), np.arange(n)
    check(s, [A, B], target, [a], [a[i // k if op == "floordiv" else i % k]])


def vector_sched(B):
    s = te.create_schedule(B.op)
    io, ii = s[B].split(s[B].op.axis[0], nparts=1)
    iio, iii = s[B].split(ii, nparts=32)
    _, iiii = s[B].split(iii, factor=4)
    s[B].vectorize(iiii)
    s[B].bind(io, thr("blockIdx.x"))
    s[B].bind(iio, thr("threadIdx.x"))
    return s


INTRIN1 = [
    ("floor", np.floor),
    ("ceil", np.ceil),
    ("trunc", np.trunc),
    ("abs", np.fabs),
    ("round", np.round),
    ("exp", np.exp),
    ("exp2", np.exp2),
    ("exp10", lambda x: np.power(10, x)),
    ("log", np.log),
    ("log2", np.log2),
    ("log10", np.log10),
    ("tan", np.tan),
    ("cos", np.cos),
    ("cosh", np.cosh),
    ("sin", np.sin),
    ("sinh", np.sinh),
    ("atan", np.arctan),
    ("tanh", np.tanh),
    ("sqrt", np.sqrt),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_vectorized_intrin1(target, dtype):
    n = 150  # 32 work-items of 4-wide vectors do not divide it
    a = np.random.default_rng(3).uniform(0, 1, n).astype(dtype)
    tol = 1e-5 if dtype == "float32" else 1e-2
    for name, ref in INTRIN1:
        A = te.placeholder((n,), dtype=dtype, name="A")
        intrin = getattr(tvm.tir, name)
        B = te.compute((n,), lambda *i: intrin(A(*i)), name="B")  # noqa: B023 (built here)
        f = build(vector_sched(B), [A, B], target)
        b = np.full(n, np.nan, dtype)
        f(a, b)
        want = ref(a.astype("float64"))
        np.testing.assert_allclose(b, want, rtol=tol, atol=tol, err_msg=name)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["power", "fmod"])
def test_vectorized_intrin2(target, name):
    c2 = tvm.tir.const(2, dtype="float32")
    n = 150
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: getattr(tvm.tir, name)(A[i], c2), name="B")
    a = np.random.default_rng(4).uniform(0, 1, n).astype("float32")
    ref = np.power(a, 2.0) if name == "power" else np.fmod(a, 2.0)
    check(vector_sched(B), [A, B], target, [a], [ref])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "dtype,l,lanes", [("int32", 16, 4), ("float32", 13, 4), ("float32", 16, 2), ("float16", 11, 4)]
)
def test_cuda_vectorize_load_permute_pad(target, dtype, l, lanes):  # noqa: E741
    n, padding = 64, 3
    A = te.placeholder((n, l), name="A", dtype=dtype)
    B = te.compute(
        (n // lanes, l + 2 * padding, lanes),
        lambda i, j, k: te.if_then_else(
            te.any(j < padding, j >= l + padding),
            ts.const(0, dtype),
            A[i * lanes + k, j - padding],
        ),
        name="B",
    )
    s = te.create_schedule(B.op)
    block, thread, vectorize = s[B].op.axis
    s[B].bind(block, thr("blockIdx.x"))
    s[B].bind(thread, thr("threadIdx.x"))
    s[B].vectorize(vectorize)
    f = build(s, [A, B], target, name="vector_load_permute_pad")
    np_a = np.random.default_rng(5).integers(-128, 127, size=(n, l)).astype(dtype)
    ref = np.pad(np_a.reshape(n // lanes, lanes, l).transpose(0, 2, 1), ((0, 0), (3, 3), (0, 0)))
    b = np.full(ref.shape, -77, dtype)
    f(np_a, b)
    np.testing.assert_equal(b, ref)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("xy", [False, True])
def test_vectorized_cooperative_fetching(target, xy):
    N = 100  # TVM's 512: no split of the schedule divides 100
    A = te.placeholder((N, N), name="A")
    B = te.placeholder((N, N), name="B")
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k))
    s = te.create_schedule(C.op)
    i, j = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    AA = s.cache_read(A, "shared", [C])
    BB = s.cache_read(B, "shared", [C])
    i3, i4 = s[C].split(i, factor=4)
    i2, i3 = s[C].split(i3, factor=2)
    i1, i2 = s[C].split(i2, factor=8)
    i0, i1 = s[C].split(i1, factor=1)
    j3, j4 = s[C].split(j, factor=4)
    j2, j3 = s[C].split(j3, factor=2)
    j1, j2 = s[C].split(j2, factor=8)
    j0, j1 = s[C].split(j1, factor=2)
    k1, k2 = s[C].split(k, factor=8)
    k0, k1 = s[C].split(k1, factor=8)
    s[C].reorder(i0, j0, i1, j1, i2, j2, k0, k1, i3, j3, k2, i4, j4)
    s[C].bind(s[C].fuse(i0, j0), thr("blockIdx.x"))
    s[C].bind(s[C].fuse(i1, j1), thr("vthread"))
    if xy:
        s[C].bind(i2, thr("threadIdx.y"))
        s[C].bind(j2, thr("threadIdx.x"))
    else:
        s[C].bind(s[C].fuse(i2, j2), thr("threadIdx.x"))
    s[C].vectorize(j4)
    for X in (AA, BB):
        s[X].compute_at(s[C], k0)
        fused = s[X].fuse(*s[X].op.axis)
        if xy:
            x2, x3 = s[X].split(fused, factor=4)
            x1, x2 = s[X].split(x2, factor=8)
            x0, x1 = s[X].split(x1, factor=8)
            s[X].bind(x1, thr("threadIdx.y"))
            s[X].bind(x2, thr("threadIdx.x"))
            s[X].vectorize(x3)
        else:
            x1, x2 = s[X].split(fused, factor=4)
            x0, x1 = s[X].split(x1, factor=64)
            s[X].bind(x1, thr("threadIdx.x"))
            s[X].vectorize(x2)
    a, b = rand(N, N, seed=1), rand(N, N, seed=2)
    check(s, [A, B, C], target, [a, b], [a.astype("float64") @ b])


@pytest.mark.parametrize("target", TARGETS)
def test_unrolled_vectorization(target):
    N = 30
    A = te.placeholder((N, N), name="A")
    B = te.placeholder((N, N), name="B")
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.sum(A[i][k] * B[k][j], axis=[k]), name="C")
    s = te.create_schedule([C.op])
    CC = s.cache_write(C, "local")
    i, j = s[C].op.axis
    bx, tx, ii, ji = s[C].tile(i, j, 1, 2)
    s[C].bind(bx, thr("blockIdx.x"))
    s[C].bind(tx, thr("threadIdx.x"))
    s[C].vectorize(ji)
    s[CC].compute_at(s[C], tx)
    i, j = s[CC].op.axis
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], 2)
    s[CC].unroll(ki)
    s[CC].vectorize(j)
    a, b = rand(N, N, seed=1), rand(N, N, seed=2)
    check(s, [A, B, C], target, [a, b], [a.astype("float64") @ b])


# ---------------------------------------------------------------- integration/test_gemm.py


@pytest.mark.parametrize("target", TARGETS)
def test_gemm(target):
    n = 100  # TVM's 1024; the block of 32 does not divide 100
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda ii, jj: te.sum(A[ii, k] * B[jj, k], axis=k), name="CC")
    s = te.create_schedule(C.op)
    scale, num_thread = 4, 8
    block_factor = scale * num_thread
    block_x, thread_x = thr("blockIdx.x"), thr("threadIdx.x")
    block_y, thread_y = thr("blockIdx.y"), thr("threadIdx.y")
    CL = s.cache_write(C, "local")
    AA = s.cache_read(A, "shared", [CL])
    BB = s.cache_read(B, "shared", [CL])
    by, yi = s[C].split(C.op.axis[0], factor=block_factor)
    bx, xi = s[C].split(C.op.axis[1], factor=block_factor)
    s[C].reorder(by, bx, yi, xi)
    s[C].bind(by, block_y)
    s[C].bind(bx, block_x)
    ty, yi = s[C].split(yi, nparts=num_thread)
    tx, xi = s[C].split(xi, nparts=num_thread)
    s[C].reorder(ty, tx, yi, xi)
    s[C].bind(ty, thread_y)
    s[C].bind(tx, thread_x)
    yo, xo = CL.op.axis
    s[CL].reorder(k, yo, xo)
    s[CL].compute_at(s[C], tx)
    s[AA].compute_at(s[CL], k)
    s[BB].compute_at(s[CL], k)
    s[AA].double_buffer()
    s[BB].double_buffer()
    for X in (AA, BB):
        ty2, xi2 = s[X].split(s[X].op.axis[0], nparts=num_thread)
        tx2, xi2 = s[X].split(xi2, nparts=num_thread)
        s[X].bind(ty2, thread_y)
        s[X].bind(tx2, thread_x)
    s = s.normalize()
    a, b = rand(n, n, seed=1), rand(n, n, seed=2)
    check(s, [A, B, C], target, [a, b], [a.astype("float64") @ b.T.astype("float64")])
