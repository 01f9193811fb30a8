"""TVM classic ``te`` tests ported in the tenth round: ``unittest/test_tir_intrin.py``
(``clz``, the binary float intrinsics ``nextafter`` / ``hypot`` / ``copysign`` / ``atan2``,
``ldexp``, ``nearbyint``, the rounding functions of integers), ``integration/test_ewise.py``
(``popcount``, ``log`` then ``power``, vector add of int64 and float64),
``unittest/test_tir_nodes.py`` (the bitwise operators, ``tir.Cast``), the ``isnan`` /
``isinf`` / ``isfinite`` tests of TOPI's math, ``unittest/test_te_tensor.py`` (``conv1d`` on a
shape ``n + 2``, a tuple reduction with a condition on integers, the tensor intrinsic
declaration), ``unittest/test_te_schedule_ops.py`` (mixed inlining and ``compute_at``, the
bound condition of a padded stage under a ``local`` ``cache_read``, two-state scans with
inlined bodies, ``test_local_stage_predicate2``), ``integration/test_reduce.py`` (the warp
reductions: a tuple reducer and a max across threads with thread ranges),
``unittest/test_codegen_llvm.py::test_llvm_div`` (truncated and floor division and modulo over
every sign combination, operands clipped so the simplifier knows their ranges),
``unittest/test_tir_transform_storage_flatten.py`` (``storage_align`` of an intermediate), and
schedule primitives in the combinations TVM's tests and tutorials use: chains of ``compute_inline``,
``compute_at`` at an outer and an inner loop, a fuse split again, ``reorder`` after ``fuse``,
``cache_read`` for several readers, ``set_scope``, ``rfactor`` with ``factor_axis`` bound to
threads, ``comm_reducer`` with an identity that is not zero, and symbolic sizes.

Fixed in this round: ``&``, ``|``, ``^`` and ``~`` of integer expressions were taken as
logical operators (``A[i] & 3`` computed a bool: wrong numbers) and ``<<`` / ``>>`` were a
TypeError; they are TVM's ``bitwise_and`` ... ``shift_right`` calls now (logical still on
conditions, a ComputeError on floats), with ``ts.tir.bitwise_*`` and ``shift_*``;
``ts.tir.popcount``, ``clz``, ``isnan``, ``isinf``, ``isfinite``, ``nearbyint``, ``hypot``,
``copysign``, ``nextafter``, ``ldexp`` and ``tir.Cast`` (they did not exist); ``floor``,
``ceil``, ``round``, ``trunc`` of an integer return it, as in TVM (a ComputeError before).
Refused with their errors: ``Stage.tensorize`` / ``te.decl_tensor_intrin`` and ``te.extern``
(no tensor intrinsics or packed functions in an OpenCL C kernel). Also fixed: tensors that
share a name (``test_nearbyint`` names its input and output ``A``) get distinct buffer names,
so the lowered IR text parses back. Every kernel runs on the
python target and the CPU OpenCL device against numpy on random data, at sizes no split factor
divides, into NaN-poisoned (integers: sentinel-filled) outputs."""

import numpy as np
import pytest
from ts_check import TARGETS, build, rand

import tensorsched as ts

te = ts.te
tvm = ts


def thr(tag):
    return ts.thread_axis(tag)


def run(s, args, target, ins, wants, rtol=1e-5, atol=1e-6):
    """Build ``s``, call it on ``ins`` and poisoned outputs (the last ``len(wants)`` of
    ``args``), compare with ``wants``."""
    f = build(s, args, target)
    outs = []
    for t in args[len(args) - len(wants) :]:
        kind = np.dtype(t.dtype).kind
        poison = np.nan if kind == "f" else (-77 if kind == "i" else False)
        outs.append(np.full(tuple(int(x) for x in wants[len(outs)].shape), poison, t.dtype))
    f(*ins, *outs)
    for t, out, want in zip(args[len(args) - len(wants) :], outs, wants):
        if out.dtype.kind == "f":
            np.testing.assert_allclose(out, want, rtol=rtol, atol=atol, err_msg=t.name)
        else:
            np.testing.assert_array_equal(out, want, err_msg=t.name)
    return f


def ints(shape, dtype, lo, hi, seed=0):
    return np.random.default_rng(seed).integers(lo, hi, size=shape, dtype=dtype)


def gpu_1d(T, factor):
    """TVM's GPU schedule of an elementwise test: the axis split, outer to blockIdx.x and
    inner to threadIdx.x."""
    s = te.create_schedule(T.op)
    bx, tx = s[T].split(T.op.axis[0], factor=factor)
    s[T].bind(bx, thr("blockIdx.x"))
    s[T].bind(tx, thr("threadIdx.x"))
    return s


# ---------------------------------------------------------------- integration/test_ewise.py


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_popcount(target, dtype):
    # TVM tests uint32 / uint64 (unsigned types are refused here); negative values count the
    # bits of their two's complement
    n = te.size_var("n")
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.compute(A.shape, lambda *i: tvm.tir.popcount(A(*i)), name="B")
    s = gpu_1d(B, 8)
    bits = np.iinfo(dtype).bits
    a = ints(1021, dtype, -(2**20), 2**20, seed=1)
    a[:3] = [-1, np.iinfo(dtype).min, np.iinfo(dtype).max]
    want = np.array([bin(int(x) & ((1 << bits) - 1)).count("1") for x in a], dtype)
    run(s, [A, B], target, [a], [want])


@pytest.mark.parametrize("target", TARGETS)
def test_log_pow(target):
    n = te.size_var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda *i: te.power(te.log(A(*i)), 2.0), name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=32)
    s[B].parallel(bx)  # TVM's llvm schedule; here the loop runs in one work-item
    a = np.random.default_rng(2).uniform(0.1, 3.0, 1027).astype("float32")
    run(s, [A, B], target, [a], [np.power(np.log(a.astype("float64")), 2.0)])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float64", "int64", "int32"])
def test_add_vectorized_per_thread(target, dtype):
    # test_ewise.py::test_add: split by num_thread * 4, threads, then 4-wide vectors
    n = te.var("n")
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    C = te.compute(A.shape, lambda *i: A(*i) + B(*i), name="C")
    s = te.create_schedule(C.op)
    num_thread = 16
    bx, x = s[C].split(C.op.axis[0], factor=num_thread * 4)
    tx, x = s[C].split(x, nparts=num_thread)
    _, x = s[C].split(x, factor=4)
    s[C].bind(bx, thr("blockIdx.x"))
    s[C].bind(tx, thr("threadIdx.x"))
    s[C].vectorize(x)
    if dtype.startswith("float"):
        a, b = rand(1001, seed=1).astype(dtype), rand(1001, seed=2).astype(dtype)
    else:
        a, b = ints(1001, dtype, -(10**9), 10**9, 1), ints(1001, dtype, -(10**9), 10**9, 2)
    run(s, [A, B, C], target, [a, b], [a + b])


# ---------------------------------------------------------------- unittest/test_tir_intrin.py


def clz_ref(x, dtype):
    bits = np.iinfo(dtype).bits
    return np.array([bits - int(v).bit_length() for v in x], dtype)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_clz(target, dtype):
    n = 301
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.compute(A.shape, lambda *i: tvm.tir.clz(A(*i)), name="B")
    s = te.create_schedule(B.op) if target == "python" else gpu_1d(B, 64)
    a = ints(n, dtype, 1, np.iinfo(dtype).max, seed=3)
    a[:4] = [1, 2, 3, np.iinfo(dtype).max]
    a[4:20] >>= np.arange(16, dtype=dtype) * (np.iinfo(dtype).bits // 16)  # short ones too
    run(s, [A, B], target, [a], [clz_ref(a, dtype)])


BINARY = [
    ("atan2", np.arctan2),
    ("nextafter", np.nextafter),
    ("hypot", np.hypot),
    ("copysign", np.copysign),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_binary_intrin(target, dtype):
    m = te.var("m")
    A = te.placeholder((m,), name="A", dtype=dtype)
    B = te.placeholder((m,), name="B", dtype=dtype)
    rng = np.random.default_rng(4)
    a = rng.uniform(-10, 10, 97).astype(dtype)
    b = rng.uniform(-10, 10, 97).astype(dtype)
    for name, ref in BINARY:
        fn = getattr(tvm.tir, name)
        C = te.compute((m,), lambda *i: fn(A(*i), B(*i)), name="C")  # noqa: B023
        want = ref(a, b)  # in the dtype: nextafter's step is the dtype's
        f = build(te.create_schedule(C.op), [A, B, C], target)
        c = np.full(97, np.nan, dtype)
        f(a, b, c)
        np.testing.assert_allclose(c, want, rtol=1e-6 if dtype == "float32" else 1e-12)
        if name == "nextafter":
            np.testing.assert_array_equal(c, want)  # exactly one step of the dtype


@pytest.mark.parametrize("target", TARGETS)
def test_ldexp(target):
    m = te.var("m")
    A = te.placeholder((m,), name="A")
    B = te.placeholder((m,), name="B", dtype="int32")
    C = te.compute((m,), lambda *i: tvm.tir.ldexp(A(*i), B(*i)), name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    a = np.random.default_rng(5).uniform(-10, 10, 61).astype("float32")
    b = ints(61, "int32", -20, 20, seed=6)
    run(s, [A, B, C], target, [a, b], [np.ldexp(a, b)], rtol=0)


@pytest.mark.parametrize("target", TARGETS)
def test_nearbyint(target):
    m = te.var("m")
    A = te.placeholder((m,), name="A")
    A_rounded = te.compute((m,), lambda *i: tvm.tir.nearbyint(A(*i)), name="A")
    s = te.create_schedule(A_rounded.op)
    a = np.random.default_rng(7).uniform(-100, 100, 203).astype("float32")
    a[:6] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5]  # halves go to the even neighbour
    run(s, [A, A_rounded], target, [a], [np.rint(a)], rtol=0, atol=0)


def test_round_intrinsics_on_int():
    i = tvm.te.var("i", "int32")
    for op in [tvm.tir.round, tvm.tir.trunc, tvm.tir.ceil, tvm.tir.floor, tvm.tir.nearbyint]:
        assert op(tvm.tir.const(10, "int32")).value == 10
        assert op(tvm.tir.const(True, "bool")).value == 1
        assert op(i) is i
    assert tvm.tir.isnan(tvm.tir.const(10, "int32")).value == 0
    assert tvm.tir.isfinite(tvm.tir.const(10, "int64")).value == 1


# ---------------------------------------------------------------- isnan, isinf, isfinite


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_isnan_isinf_isfinite(target, dtype):
    # TOPI's test_isnan / test_isinf / test_isfinite, at te level: the tests as masks, and
    # NaN replaced by zero in a select (the usual use); 4-wide vectors on the device
    n = 131
    A = te.placeholder((n,), name="A", dtype=dtype)
    masks = [te.compute((n,), lambda i: f(A[i]), name=f.__name__) for f in (te.isnan, te.isinf)]
    fin = te.compute((n,), lambda i: tvm.tir.isfinite(A[i]), name="fin")
    clean = te.compute(
        (n,), lambda i: te.if_then_else(te.isnan(A[i]), tvm.tir.const(0, dtype), A[i]), name="c"
    )
    outs = [*masks, fin, clean]
    s = te.create_schedule([t.op for t in outs])
    _, xi = s[clean].split(clean.op.axis[0], factor=4)
    s[clean].vectorize(xi)
    a = np.random.default_rng(8).uniform(-5, 5, n).astype(dtype)
    a[::7], a[3::11], a[5::13] = np.nan, np.inf, -np.inf
    wants = [np.isnan(a), np.isinf(a), np.isfinite(a), np.where(np.isnan(a), 0, a).astype(dtype)]
    run(s, [A, *outs], target, [a], wants)


# ---------------------------------------------------------------- test_tir_nodes.py: bitwise


def test_bitwise_nodes():
    x, y = te.var("x"), te.var("y")
    for e, name in [
        (x << y, "shift_left"),
        (x >> y, "shift_right"),
        (x & y, "bitwise_and"),
        (x | y, "bitwise_or"),
        (x ^ y, "bitwise_xor"),
        (10 & x, "bitwise_and"),
        (10 | x, "bitwise_or"),
        (10 ^ x, "bitwise_xor"),
        (10 >> x, "shift_right"),
        (10 << x, "shift_left"),
        (~x, "bitwise_not"),
    ]:
        assert isinstance(e, tvm.tir.Call) and e.name == name and e.dtype == "int32"
    assert (te.var("z", "int64") & 3).dtype == "int64"
    assert tvm.tir.Cast("float32", x).dtype == "float32"
    # on conditions they stay logical
    c = (x < 3) & (y > 2)
    assert c.dtype == "bool" and not isinstance(c, tvm.tir.Call)
    assert (~(x < 3)).dtype == "bool"
    f = te.placeholder((1,), name="F")[0]  # a float expression (a var is an integer here)
    with pytest.raises(ts.ComputeError, match="bitwise operators take integers"):
        f & 1.0  # noqa: B018
    with pytest.raises(ts.ComputeError, match="bitwise_not.*float32"):
        ~f  # noqa: B018
    with pytest.raises(ts.ComputeError, match="needs an integer argument"):
        tvm.tir.popcount(f)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_bitwise_kernel(target, dtype):
    n = 203
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    C = te.compute(
        (n,),
        lambda i: (
            ((A[i] & B[i]) | (A[i] ^ 0x5A))
            + (~B[i] >> 2)
            - (B[i] << 3)
            + tvm.tir.bitwise_xor(A[i], tvm.tir.shift_right(B[i], 1))
        ),
        name="C",
    )
    # a gather through bitwise indices: the even elements' mirror
    D = te.compute((n // 2,), lambda i: A[(i << 1) | 1] + A[i & 7], name="D")
    s = te.create_schedule([C.op, D.op])
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].vectorize(xi)  # integer intrinsics stay scalar inside
    if target == "opencl":
        s[D].bind(s[D].split(D.op.axis[0], factor=16)[1], thr("threadIdx.x"))
    a, b = ints(n, dtype, -(2**24), 2**24, 9), ints(n, dtype, -(2**24), 2**24, 10)
    want_c = ((a & b) | (a ^ 0x5A)) + (~b >> 2) - (b << 3) + (a ^ (b >> 1))
    i = np.arange(n // 2)
    run(s, [A, B, C, D], target, [a, b], [want_c, a[(i << 1) | 1] + a[i & 7]])


@pytest.mark.parametrize("target", TARGETS)
def test_cast_and_float_to_int_truncation(target):
    n = 77
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: tvm.tir.Cast("int32", A[i] * 10.0), name="B")
    C = te.compute((n,), lambda i: tvm.tir.Cast("float64", B[i]) / 3.0, name="C")
    s = te.create_schedule(C.op)
    a = np.random.default_rng(11).uniform(-5, 5, n).astype("float32")
    b = (a.astype("float64") * 10).astype("int32")  # toward zero, as C casts
    f = build(s, [A, B, C], target)
    out_b, out_c = np.full(n, -77, "int32"), np.full(n, np.nan)
    f(a, out_b, out_c)
    np.testing.assert_array_equal(out_b, b)
    np.testing.assert_allclose(out_c, b / 3.0, rtol=1e-12)


# ---------------------------------------------------------------- unittest/test_te_tensor.py


@pytest.mark.parametrize("target", TARGETS)
def test_conv1d(target):
    n = te.var("n")
    A = te.placeholder((n + 2,), name="A")

    def computeB(ii):
        i = ii + 1
        return A[i - 1] + A[i] + A[i + 1]

    B = te.compute((n,), computeB, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    if target == "opencl":
        s[B].bind(xo, thr("blockIdx.x"))
        s[B].bind(xi, thr("threadIdx.x"))
    a = rand(45, seed=12)
    run(s, [A, B], target, [a], [a[:-2] + a[1:-1] + a[2:]])


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_reduce_multiout_with_cond(target):
    def fcombine(x, y):
        return x[0] + y[0], x[1] + y[1]

    def fidentity(t0, t1):
        return tvm.tir.const(0, t0), tvm.tir.const(1, t1)

    mysum = te.comm_reducer(fcombine, fidentity, name="mysum")
    m, n = te.var("m"), te.var("n")
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val", dtype="int32")
    k = te.reduce_axis((0, n), "k")
    cond = te.floormod(k, 2) == 0
    T0, T1 = te.compute((m,), lambda i: mysum((idx[i, k], val[i, k]), axis=k, where=cond), name="T")
    s = te.create_schedule(T0.op)
    ko, ki = s[T0].split(k, factor=4)
    s[T0].reorder(ko, T0.op.axis[0], ki)  # the reduction loop outside the data loop
    a, b = ints((9, 13), "int32", -50, 50, 13), ints((9, 13), "int32", -50, 50, 14)
    run(s, [idx, val, T0, T1], target, [a, b], [a[:, ::2].sum(1), b[:, ::2].sum(1) + 1])


def test_tensor_intrinsics_are_refused():
    # test_te_tensor.py::test_tensor_intrin / test_tensor_compute1 and the tensorize tests
    n = 16
    x = te.placeholder((n,), name="x")
    y = te.placeholder((n,), name="y")
    z = te.compute(x.shape, lambda i: x[i] + y[i], name="z")
    with pytest.raises(ts.ComputeError, match="decl_tensor_intrin.*compute 'z'.*not supported"):
        te.decl_tensor_intrin(z.op, lambda ins, outs: None)
    A = te.placeholder((37, n), name="A")
    B = te.compute((37, n), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[1], factor=4)
    with pytest.raises(ts.ScheduleError, match="tensorize: stage 'B', axis 'j.inner'.*vectorize"):
        s[B].tensorize(xi, None)
    s[B].vectorize(xi)  # what to do instead
    run(s, [A, B], "python", [rand(37, n)], [rand(37, n).astype("float64") * 2])


def test_extern_is_refused():
    A = te.placeholder((10,), name="A")
    with pytest.raises(ts.ComputeError, match="te.extern.*'C'.*write the computation"):
        te.extern((10,), [A], lambda ins, outs: None, name="C")


# ---------------------------------------------------------------- test_te_schedule_ops.py


@pytest.mark.parametrize("target", TARGETS)
def test_inline_mixed(target):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    A1 = te.compute(A.shape, lambda *i: A(*i) + 1, name="A1")
    A2 = te.compute(A.shape, lambda *i: A1(*i) + 2, name="A2")
    C = te.compute((n,), lambda i: A2[i] + A1[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[A1].compute_at(s[C], xo)
    s[A2].compute_inline()
    text = str(ts.lower(s, [A, C], simple_mode=True))
    assert "A2" not in text and "A1" in text
    a = rand(29, seed=15)
    run(s, [A, C], target, [a], [(a + 3.0) + (a + 1.0)])


@pytest.mark.parametrize("target", TARGETS)
def test_schedule_bound_condition(target):
    A = te.placeholder((64,), name="A")
    Apad = te.compute(
        (66,),
        lambda i: tvm.tir.if_then_else(
            tvm.tir.all(i > 0, i < 65), A[i - 1], tvm.tir.const(0.0, "float32")
        ),
        name="Apad",
    )
    Apad2 = te.compute((66,), lambda i: Apad[i] * 2, name="Apad2")
    s = te.create_schedule(Apad2.op)
    AL1 = s.cache_read(Apad, "local", [Apad2])
    xo, xi = s[Apad2].split(Apad2.op.axis[0], factor=5)
    s[AL1].compute_at(s[Apad2], xo)
    s = s.normalize()
    a = rand(64, seed=16)
    run(s, [A, Apad2], target, [a], [np.pad(a, 1) * 2])


@pytest.mark.parametrize("target", TARGETS)
def test_storage_align_of_an_intermediate(target):
    # test_tir_transform_storage_flatten.py::test_flatten_storage_align, run: the row stride
    # of A1 padded to 2k + 1, at sizes where it matters (16 -> 17)
    m, l = 8, 16  # noqa: E741
    A = te.placeholder((m, l), name="A")
    A1 = te.compute((m, l), lambda i, j: A[i, j], name="A1")
    A2 = te.compute((m, l), lambda i, j: A1[i, j] + 3, name="A2")
    s = te.create_schedule(A2.op)
    s[A1].storage_align(A1.op.axis[0], 2, 1)
    text = str(ts.lower(s, [A, A2], simple_mode=True))
    assert "17" in text  # the padded stride
    a = rand(m, l, seed=17)
    run(s, [A, A2], target, [a], [a + 3])


@pytest.mark.parametrize("target", TARGETS)
def test_storage_align_of_a_shared_tile(target):
    # the GEMM tutorials' use: a shared tile's rows padded against bank conflicts
    A, B = te.placeholder((45, 37), name="A"), te.placeholder((37, 29), name="B")
    k = te.reduce_axis((0, 37), "k")
    C = te.compute((45, 29), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    bi, ti = s[C].split(C.op.axis[0], factor=8)
    bj, tj = s[C].split(C.op.axis[1], factor=8)
    s[C].reorder(bi, bj, ti, tj)
    s[C].bind(bi, thr("blockIdx.y"))
    s[C].bind(bj, thr("blockIdx.x"))
    s[C].bind(ti, thr("threadIdx.y"))
    s[C].bind(tj, thr("threadIdx.x"))
    ko, ki = s[C].split(k, factor=6)
    s[AA].compute_at(s[C], bj)
    s[AA].storage_align(AA.op.axis[0], 8, 1)
    s[AA].bind(s[AA].split(AA.op.axis[0], nparts=8)[0], thr("threadIdx.y"))
    a, b = rand(45, 37, seed=18), rand(37, 29, seed=19)
    run(s, [A, B, C], target, [a, b], [a.astype("float64") @ b])


# ---------------------------------------------------------------- primitives in combination


@pytest.mark.parametrize("target", TARGETS)
def test_compute_inline_chain(target):
    # four elementwise stages into one reduction, the three producers inlined one after the
    # other (the last first): one loop nest remains
    n = te.size_var("n")
    A = te.placeholder((n, 11), name="A")
    B = te.compute(A.shape, lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute(A.shape, lambda i, j: te.exp(B[i, j] - 1.0), name="C")
    D = te.compute(A.shape, lambda i, j: te.if_then_else(C[i, j] > 1.5, C[i, j], -C[i, j]), "D")
    k = te.reduce_axis((0, 11), "k")
    E = te.compute((n,), lambda i: te.max(D[i, k], axis=k), name="E")
    s = te.create_schedule(E.op)
    for T in (D, C, B):
        s[T].compute_inline()
    text = str(ts.lower(s, [A, E], simple_mode=True))
    assert "produce B" not in text and "produce C" not in text and "produce D" not in text
    a = rand(13, 11, seed=20)
    c = np.exp(a.astype("float64") * 2 - 1)
    run(s, [A, E], target, [a], [np.where(c > 1.5, c, -c).max(1)])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("level", ["outer", "inner"])
def test_compute_at_different_levels(target, level):
    # the same producer computed at the consumer's outer tile loop (a block of rows) or at
    # its innermost loop (one element): the same numbers, differently sized tiles
    A = te.placeholder((23, 19), name="A")
    B = te.compute((23, 19), lambda i, j: A[i, j] * A[i, j], name="B")
    C = te.compute((21, 19), lambda i, j: B[i, j] + B[i + 1, j] + B[i + 2, j], name="C")
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 5)
    s[B].compute_at(s[C], yo if level == "outer" else yi)
    a = rand(23, 19, seed=21).astype("float64")
    b = a * a
    run(s, [A, C], target, [a.astype("float32")], [b[:-2] + b[1:-1] + b[2:]])


@pytest.mark.parametrize("target", TARGETS)
def test_fuse_then_split_then_compute_at(target):
    # test_te_schedule.py's fuse_with_split, and a producer computed at the split's loops
    m, n = 9, 11  # a shared tile in the kernel needs a constant size
    A, B = te.placeholder((m,), name="A"), te.placeholder((n,), name="B")
    P = te.compute((m, n), lambda i, j: A[i] - B[j], name="P")
    T = te.compute((m, n), lambda i, j: P[i, j] * P[i, j], name="T")
    s = te.create_schedule(T.op)
    fused = s[T].fuse(*T.op.axis)
    fo, fi = s[T].split(fused, factor=7)
    s[P].compute_at(s[T], fo)
    if target == "opencl":
        s[T].bind(fo, thr("blockIdx.x"))
        s[T].bind(fi, thr("threadIdx.x"))
    a, b = rand(9, seed=22), rand(11, seed=23)
    d = a.astype("float64")[:, None] - b[None, :]
    run(s, [A, B, T], target, [a, b], [d * d])


@pytest.mark.parametrize("target", TARGETS)
def test_reorder_after_fuse(target):
    # test_fuse_with_out_of_order_axis_with_reorder: reorder, fuse the adjacent pair, then
    # reorder the fused loop inside the third axis
    A = te.placeholder((7, 9, 5), name="A")
    T = te.compute((7, 9, 5), lambda i, j, k: A[i, j, k] + i * 100 + j * 10 + k, name="T")
    s = te.create_schedule(T.op)
    i, j, k = T.op.axis
    jo, ji = s[T].split(j, factor=4)
    s[T].reorder(k, i, jo, ji)
    f = s[T].fuse(i, jo)
    s[T].reorder(ji, f, k)
    with pytest.raises(ts.ScheduleError, match="not adjacent"):
        s[T].fuse(ji, k)
    assert [iv.var.name for iv in s[T].leaf_iter_vars] == [ji.var.name, f.var.name, k.var.name]
    a = rand(7, 9, 5, seed=24)
    ii, jj, kk = np.meshgrid(np.arange(7), np.arange(9), np.arange(5), indexing="ij")
    run(s, [A, T], target, [a], [a + ii * 100 + jj * 10 + kk])


@pytest.mark.parametrize("target", TARGETS)
def test_cache_read_for_several_readers(target):
    # one "local" copy read by two consumers of different shapes, computed at the root;
    # and a second cache of the same input for a third reader, attached inside it
    n = 29
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((n - 1,), lambda i: A[i] * A[i + 1], name="C")
    D = te.compute((n,), lambda i: A[n - 1 - i] - B[i], name="D")
    s = te.create_schedule([C.op, D.op])
    AG = s.cache_read(A, "global", [B, C])
    AL = s.cache_read(A, "local", [D])
    xo, xi = s[D].split(D.op.axis[0], factor=6)
    s[AL].compute_at(s[D], xo)
    s[B].compute_at(s[D], xo)
    assert AG.op.name == "A.global" and AL.op.name == "A.local"
    a = rand(n, seed=25).astype("float64")
    run(s, [A, C, D], target, [a.astype("float32")], [a[:-1] * a[1:], a[::-1] - (a + 1)])


@pytest.mark.parametrize("target", TARGETS)
def test_set_scope_of_an_attached_stage(target):
    # test_local_stage_predicate's shape: a stage given "local" and "shared" by set_scope,
    # computed at the consumer's block axis and spread over its threads
    for scope in ("local", "shared"):
        A = te.placeholder((3, 37), name="A")
        B = te.compute((3, 37), lambda i, j: A[i, j] * 3.0, name="B")
        C = te.compute((3, 37), lambda i, j: B[i, j] + 1.0, name="C")
        s = te.create_schedule(C.op)
        s[B].set_scope(scope)
        s[C].bind(C.op.axis[0], thr("blockIdx.x"))
        jo, ji = s[C].split(C.op.axis[1], factor=8)
        s[C].bind(ji, thr("threadIdx.x"))
        s[B].compute_at(s[C], jo if scope == "local" else C.op.axis[0])
        if scope == "shared":
            s[B].bind(s[B].split(B.op.axis[1], factor=8)[1], thr("threadIdx.x"))
        a = rand(3, 37, seed=26)
        run(s, [A, C], target, [a], [a.astype("float64") * 3 + 1])


@pytest.mark.parametrize("target", TARGETS)
def test_rfactor_factor_axis_bound_to_threads(target):
    # integration/test_reduce.py::test_rfactor_factor_axis, with the factored axis (moved
    # last by factor_axis=1) bound to threadIdx.x and the rows to blockIdx.x
    m, n = 17, 101
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), "k")
    B = te.compute((m,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    kf, ki = s[B].split(k, nparts=8)
    BF = s.rfactor(B, kf, factor_axis=1)
    assert tuple(int(x) for x in BF.shape) == (m, 8)
    s[B].bind(s[B].op.axis[0], thr("blockIdx.x"))
    s[B].bind(s[B].op.reduce_axis[0], thr("threadIdx.x"))
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    a = rand(m, n, seed=27)
    run(s, [A, B], target, [a], [a.astype("float64").sum(1)])


@pytest.mark.parametrize("target", TARGETS)
def test_comm_reducer_with_an_identity_not_zero(target):
    # a product (identity 1) with where=, rfactor-ed, and a minimum written as a
    # comm_reducer (identity max_value), across threads, on symbolic sizes
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: tvm.tir.const(1, dtype=t), name="prod")
    mymin = te.comm_reducer(lambda x, y: te.min(x, y), lambda t: te.max_value(t), name="mymin")
    m, n = te.size_var("m"), te.size_var("n")
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), "k")
    P = te.compute((m,), lambda i: prod(A[i, k], axis=k, where=k % 3 != 1), name="P")
    k2 = te.reduce_axis((0, n), "k2")
    M = te.compute((m,), lambda i: mymin(A[i, k2] * 2.0, axis=k2), name="M")
    s = te.create_schedule([P.op, M.op])
    ko, _ = s[P].split(P.op.reduce_axis[0], factor=4)
    s.rfactor(P, ko)
    s[M].bind(M.op.axis[0], thr("blockIdx.x"))
    s[M].bind(s[M].split(M.op.reduce_axis[0], nparts=4)[0], thr("threadIdx.x"))
    a = rand(6, 14, seed=28).astype("float64") * np.where(np.arange(14) % 2, -1, 1)
    keep = np.arange(14) % 3 != 1
    run(s, [A, P, M], target, [a.astype("float32")], [a[:, keep].prod(1), a.min(1) * 2])


@pytest.mark.parametrize("target", TARGETS)
def test_select_variants_and_typed_constants(target):
    # te.select / if_then_else nested, on int64 and float16 constants, min_value / max_value
    n = 53
    A = te.placeholder((n,), name="A")
    I = te.placeholder((n,), name="I", dtype="int64")  # noqa: E741
    B = te.compute(
        (n,),
        lambda i: tvm.tir.Select(
            A[i] > 0.5,
            tvm.tir.if_then_else(
                I[i] % 2 == 0, I[i] * tvm.tir.const(3, "int64"), te.max_value("int64")
            ),
            te.min_value("int64"),
        ),
        name="B",
    )
    H = te.compute((n,), lambda i: A[i].astype("float16") * tvm.tir.const(0.5, "float16"), name="H")
    s = te.create_schedule([B.op, H.op])
    a = np.random.default_rng(29).uniform(0, 1, n).astype("float32")
    ii = ints(n, "int64", -(2**40), 2**40, 30)
    big, small = np.iinfo("int64").max, np.iinfo("int64").min
    want_b = np.where(a > 0.5, np.where(ii % 2 == 0, ii * 3, big), small)
    f = build(s, [A, I, B, H], target)
    b, h = np.full(n, -77, "int64"), np.full(n, np.nan, "float16")
    f(a, ii, b, h)
    np.testing.assert_array_equal(b, want_b)
    np.testing.assert_allclose(h, a.astype("float16") * np.float16(0.5), rtol=1e-3)


# ---------------------------------------------------------------- scans with inlined bodies


def two_state_scan(m, n, inline_shared):
    """``test_scan_inline1`` / ``test_scan_inline2``: two states whose updates read stages
    between them and the states; returns ``(x, res1, res2, stages)``."""
    x = te.compute((m, n), lambda i, j: tvm.tir.const(1, "float32"), name="x")
    s_state1, s_state2 = te.placeholder((m, n)), te.placeholder((m, n))
    s_init1 = te.compute((1, n), lambda _, i: x[0, i])
    s_init2 = te.compute((1, n), lambda _, i: x[0, i])
    if inline_shared:  # one stage read by both updates' stages
        s_xx = te.compute((m, n), lambda t, i: s_state1[t - 1, i] + s_state2[t - 1, i], "xx")
        s_x1 = te.compute((m, n), lambda t, i: s_xx[t, i] + x[t, i], name="x1")
        s_x2 = te.compute((m, n), lambda t, i: s_xx[t, i] + s_state2[t - 1, 2], name="x2")
        stages = [s_xx, s_x1, s_x2]
    else:
        s_x1 = te.compute((m, n), lambda t, i: s_state1[t - 1, i] + x[t, i], name="x1")
        s_x2 = te.compute((m, n), lambda t, i: s_state2[t - 1, i] + 1, name="x2")
        stages = [s_x1]
    s_update1 = te.compute((m, n), lambda t, i: s_x1[t, i], "u1")
    s_update2 = te.compute((m, n), lambda t, i: s_x2[t, i], "u2")
    res1, res2 = tvm.te.scan([s_init1, s_init2], [s_update1, s_update2], [s_state1, s_state2])
    return x, res1, res2, stages


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("inline_shared", [False, True])
def test_scan_inline(target, inline_shared):
    m, n = te.var("m"), te.var("n")
    x, res1, res2, stages = two_state_scan(m, n, inline_shared)
    s = te.create_schedule(res1.op)
    for st in stages:
        s[st].compute_inline()
    M, N = 6, 5
    r1, r2 = np.ones((M, N)), np.ones((M, N))
    for t in range(1, M):
        if inline_shared:
            xx = r1[t - 1] + r2[t - 1]
            r1[t], r2[t] = xx + 1, xx + r2[t - 1, 2]
        else:
            r1[t], r2[t] = r1[t - 1] + 1, r2[t - 1] + 1
    f = build(s, [x, res1, res2], target)
    xs, o1, o2 = (np.full((M, N), np.nan, "float32") for _ in range(3))
    f(xs, o1, o2)
    np.testing.assert_allclose(o1, r1, rtol=1e-6)
    np.testing.assert_allclose(o2, r2, rtol=1e-6)
    np.testing.assert_array_equal(xs, np.ones((M, N)))  # x is an argument: computed too


# ---------------------------------------------------------------- more of test_te_schedule_ops.py


@pytest.mark.parametrize("target", TARGETS)
def test_local_stage_predicate2(target):
    # a "local" cache computed at the block axis and spread over the threads, and a "shared"
    # stage at a serial loop between the block and thread axes, both bound to one thread
    # axis of a given range (150: none of the splits divide it)
    n = 150
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda bi: A[bi] + 1, name="B")
    C = te.compute((n,), lambda ci: B[ci] + 2, name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [B])
    s[B].set_scope("shared")
    block_x = thr("blockIdx.x")
    thread_x = te.thread_axis((0, 32), "threadIdx.x")
    oc, ic = s[C].split(s[C].op.axis[0], factor=64)
    ooc, ioc = s[C].split(oc, factor=2)
    oic, iic = s[C].split(ic, factor=32)
    s[C].bind(ooc, block_x)
    s[C].bind(iic, thread_x)
    s[B].compute_at(s[C], ioc)
    ob, ib = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(ib, thread_x)
    s[AA].compute_root()
    s[AA].compute_at(s[C], ooc)
    oaa, iaa = s[AA].split(s[AA].op.axis[0], factor=32)
    s[AA].bind(iaa, thread_x)
    a = rand(n, seed=31)
    run(s, [A, C], target, [a], [a.astype("float64") + 3])


# ---------------------------------------------------------------- integration/test_reduce.py


@pytest.mark.parametrize("target", TARGETS)
def test_warp_reduction_of_a_tuple(target):
    # test_warp_reduction2: an (add, multiply) tuple reducer across 32 work-items of
    # threadIdx.x, rows on threadIdx.y (thread axes with ranges) and blockIdx.x
    def fcombine(x, y):
        return x[0] + y[0], x[1] * y[1]

    def fidentity(t0, t1):
        return tvm.tir.const(0, t0), tvm.tir.const(1, t1)

    add_mul_reducer = te.comm_reducer(fcombine, fidentity, name="add_mul_reducer")
    m, n = 15, 101
    A0 = te.placeholder((m, n), name="A0", dtype="float32")
    A1 = te.placeholder((m, n), name="A1", dtype="float32")
    k = te.reduce_axis((0, n), "k")
    T0, T1 = te.compute((m,), lambda i: add_mul_reducer((A0[i, k], A1[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    ko, _ = s[T0].split(k, nparts=32)
    xo, xi = s[T0].split(s[T0].op.axis[0], factor=2)
    s[T0].bind(ko, te.thread_axis((0, 32), "threadIdx.x"))
    s[T0].bind(xi, te.thread_axis((0, 2), "threadIdx.y"))
    s[T0].bind(xo, thr("blockIdx.x"))
    a0 = rand(m, n, seed=32)
    a1 = (1 + (rand(m, n, seed=33) - 1) * 0.02).astype("float32")  # a product near 1
    wants = [a0.astype("float64").sum(1), a1.astype("float64").prod(1)]
    run(s, [A0, A1, T0, T1], target, [a0, a1], wants)


@pytest.mark.parametrize("target", TARGETS)
def test_warp_reduction_max_with_thread_ranges(target):
    # test_warp_reduction1 at its odd size (m = 10, n = 20): more work-items than elements
    nthx, nthy = 32, 4
    m, n = 10, 20
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n))
    B = te.compute((m,), lambda i: te.max(A[i][k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, _ = s[B].split(s[B].op.reduce_axis[0], nparts=nthx)
    s[B].bind(ko, te.thread_axis((0, nthx), "threadIdx.x"))
    xo, xi = s[B].split(s[B].op.axis[0], factor=nthy)
    s[B].bind(xi, te.thread_axis((0, nthy), "threadIdx.y"))
    s[B].bind(xo, thr("blockIdx.x"))
    a = rand(m, n, seed=34) - 2.0  # all negative: an identity of 0 would show
    run(s, [A, B], target, [a], [a.max(1)])


# ---------------------------------------------------------------- test_codegen_llvm.py


DIVIDENDS = [(-12, -12), (-11, -1), (-11, 0), (0, 0), (12, 12), (1, 11), (0, 11), (-11, 11)]
DIVISORS = [(-11, -1), (-11, 1), (-4, -4), (-2, -2), (1, 11), (0, 11), (4, 4), (2, 2), (-11, 11)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_div_and_mod_semantics(target, dtype):
    # test_llvm_div: truncdiv/truncmod and floordiv/floormod of every sign combination, the
    # operands clipped with min/max so that the simplifier knows their ranges (its
    # bound-aware rules for // and % must keep the semantics); every case is a stage of one
    # schedule, built once
    args, wants = [], []
    for start, end in DIVIDENDS:
        for dstart, dend in DIVISORS:
            for floor_div in (False, True):
                A = te.placeholder((end - start + 1,), name="A", dtype=dtype)
                B = te.placeholder((dend - dstart + 1,), name="B", dtype=dtype)

                def clip(x, lo, hi):
                    if lo == hi:  # a single point: the constant itself
                        return tvm.tir.const(lo, dtype)
                    return te.min(tvm.tir.const(hi, dtype), te.max(tvm.tir.const(lo, dtype), x))

                div = te.floordiv if floor_div else tvm.tir.truncdiv
                mod = te.floormod if floor_div else tvm.tir.truncmod
                D, M = te.compute(
                    (end - start + 1, dend - dstart + 1),
                    lambda i, j: (  # noqa: B023 (called here)
                        div(clip(A[i], start, end), clip(B[j], dstart, dend)),  # noqa: B023
                        mod(clip(A[i], start, end), clip(B[j], dstart, dend)),  # noqa: B023
                    ),
                    name="DM",
                )
                a = np.arange(start, end + 1, dtype=dtype)
                b = np.arange(dstart, dend + 1, dtype=dtype)
                if dstart <= 0 <= dend:
                    b[-dstart] = 1  # no division by zero
                x, y = a[:, None].astype(np.int64), b[None, :].astype(np.int64)
                q = x // y if floor_div else np.trunc(x / y).astype(np.int64)
                args += [(A, a), (B, b), (D, None), (M, None)]
                wants += [q.astype(dtype), (x - q * y).astype(dtype)]
    s = te.create_schedule([t.op for t, v in args if v is None][::2])
    f = build(s, [t for t, _ in args], target)
    outs = [np.full(w.shape, -77, dtype) for w in wants]
    it = iter(outs)
    f(*[v if v is not None else next(it) for _, v in args])
    for out, want in zip(outs, wants):
        np.testing.assert_array_equal(out, want)
