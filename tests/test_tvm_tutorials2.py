"""TVM's classic ``te`` tutorials that ``examples/tvm_tutorials/`` does not hold, ported as a
user would port them (``import tensorsched as ts`` for ``tvm`` / ``te``, ``target="opencl"``
for ``"cuda"``): "How to optimize convolution on GPU" (``opt_conv_cuda.py``: its schedule as
written, at smaller sizes), "Schedule Primitives in TVM" (every lowering the tutorial prints),
"Compute and Reduce with Tuple Inputs", "Intrinsics and Math Functions" (``call_pure_extern``
of the functions OpenCL C has; CUDA's ``__expf`` and the intrinsic-rule registry refused with
their errors), "Working with Operators Using Tensor Expression" (vector add, its CPU and GPU
schedules, the matmul optimisations) and the parts of "Reduction" that
``tests/test_tvm_tutorials.py`` does not run (convolution as a 2D reduction, the tutorial's
128 x 128 cross-thread check). Every kernel runs on the python target and the OpenCL device
against numpy on random data, into NaN-poisoned outputs, at sizes no split factor divides
where the tutorial's schedule allows it."""

import warnings

import numpy as np
import pytest
from ts_check import INT_POISON, TARGETS, build

import tensorsched as ts

te = ts.te  # the tutorials' `from tvm import te`
tvm = ts


def run(s, args, target, ins, wants, rtol=1e-5):
    """Build ``s`` for ``target``, run it on ``ins`` into poisoned outputs, compare."""
    f = build(s, args, target)
    outs = [
        np.full(w.shape, np.nan if np.dtype(t.dtype).kind == "f" else INT_POISON, t.dtype)
        for w, t in zip(wants, args[len(ins) :])
    ]
    f(*ins, *outs)
    for out, want in zip(outs, wants):
        np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol)
    return f


def rand(shape, seed=0, dtype="float32"):
    return np.random.default_rng(seed).uniform(size=shape).astype(dtype)


# ---------------------------------------------------------------- opt_conv_cuda.py


def conv_hwcn(batch, in_channel, out_channel, in_size):
    """The tutorial's algorithm and schedule, line for line (HWCN layout, 3x3, pad 1)."""
    kernel, pad, stride = 3, 1, 1
    A = te.placeholder((in_size, in_size, in_channel, batch), name="A")
    W = te.placeholder((kernel, kernel, in_channel, out_channel), name="W")
    out_size = (in_size - kernel + 2 * pad) // stride + 1
    Apad = te.compute(
        (in_size + 2 * pad, in_size + 2 * pad, in_channel, batch),
        lambda yy, xx, cc, nn: tvm.tir.if_then_else(
            tvm.tir.all(yy >= pad, yy - pad < in_size, xx >= pad, xx - pad < in_size),
            A[yy - pad, xx - pad, cc, nn],
            tvm.tir.const(0.0, "float32"),
        ),
        name="Apad",
    )
    rc = te.reduce_axis((0, in_channel), name="rc")
    ry = te.reduce_axis((0, kernel), name="ry")
    rx = te.reduce_axis((0, kernel), name="rx")
    B = te.compute(
        (out_size, out_size, out_channel, batch),
        lambda yy, xx, ff, nn: te.sum(
            Apad[yy * stride + ry, xx * stride + rx, rc, nn] * W[ry, rx, rc, ff],
            axis=[ry, rx, rc],
        ),
        name="B",
    )

    s = te.create_schedule(B.op)
    s[Apad].compute_inline()
    AA = s.cache_read(Apad, "shared", [B])
    WW = s.cache_read(W, "shared", [B])
    AL = s.cache_read(AA, "local", [B])
    WL = s.cache_read(WW, "local", [B])
    BL = s.cache_write(B, "local")

    tile, num_thread, step, vthread = 8, 8, 8, 2
    block_factor = tile * num_thread
    block_x = te.thread_axis("blockIdx.x")
    block_y = te.thread_axis("blockIdx.y")
    block_z = te.thread_axis("blockIdx.z")
    thread_x = te.thread_axis((0, num_thread), "threadIdx.x")
    thread_y = te.thread_axis((0, num_thread), "threadIdx.y")
    thread_xz = te.thread_axis((0, vthread), "vthread", name="vx")
    thread_yz = te.thread_axis((0, vthread), "vthread", name="vy")

    hi, wi, fi, ni = s[B].op.axis
    bz = s[B].fuse(hi, wi)
    by, fi = s[B].split(fi, factor=block_factor)
    bx, ni = s[B].split(ni, factor=block_factor)
    s[B].bind(bz, block_z)
    s[B].bind(by, block_y)
    s[B].bind(bx, block_x)

    tyz, fi = s[B].split(fi, nparts=vthread)  # virtual thread split
    txz, ni = s[B].split(ni, nparts=vthread)
    ty, fi = s[B].split(fi, nparts=num_thread)
    tx, ni = s[B].split(ni, nparts=num_thread)
    s[B].reorder(bz, by, bx, tyz, txz, ty, tx, fi, ni)
    s[B].bind(tyz, thread_yz)
    s[B].bind(txz, thread_xz)
    s[B].bind(ty, thread_y)
    s[B].bind(tx, thread_x)

    s[BL].compute_at(s[B], tx)
    yi, xi, fi, ni = s[BL].op.axis
    ry, rx, rc = s[BL].op.reduce_axis
    rco, rci = s[BL].split(rc, factor=step)
    s[BL].reorder(rco, ry, rx, rci, fi, ni)
    s[AA].compute_at(s[BL], rx)
    s[WW].compute_at(s[BL], rx)
    s[AL].compute_at(s[BL], rci)
    s[WL].compute_at(s[BL], rci)

    yi, xi, ci, ni = s[AA].op.axis
    ty, ci = s[AA].split(ci, nparts=num_thread)
    tx, ni = s[AA].split(ni, nparts=num_thread)
    _, ni = s[AA].split(ni, factor=4)
    s[AA].reorder(ty, tx, yi, xi, ci, ni)
    s[AA].bind(ty, thread_y)
    s[AA].bind(tx, thread_x)
    s[AA].vectorize(ni)

    yi, xi, ci, fi = s[WW].op.axis
    ty, ci = s[WW].split(ci, nparts=num_thread)
    tx, fi = s[WW].split(fi, nparts=num_thread)
    _, fi = s[WW].split(fi, factor=4)
    s[WW].reorder(ty, tx, yi, xi, ci, fi)
    s[WW].bind(ty, thread_y)
    s[WW].bind(tx, thread_x)
    s[WW].vectorize(fi)
    return s, [A, W, B]


def conv_hwcn_ref(a, w):
    out_size = a.shape[0]
    ap = np.pad(a.astype(np.float64), ((1, 1), (1, 1), (0, 0), (0, 0)))
    out = np.zeros((out_size, out_size, w.shape[3], a.shape[3]))
    for y in range(3):
        for x in range(3):
            window = ap[y : y + out_size, x : x + out_size]
            out += np.einsum("hwcn,cf->hwfn", window, w[y, x].astype(np.float64))
    return out


# (batch, in_channel, out_channel, in_size): the tutorial's is (256, 256, 512, 14); the python
# target runs a small one, the device one the 64-wide tiles do not divide as well
CONV_SIZES = {
    "python": [(16, 8, 12, 3), (64, 8, 64, 2)],
    "opencl": [(64, 16, 64, 5), (40, 12, 72, 6)],
}


@pytest.mark.parametrize("target", TARGETS)
def test_opt_conv_gpu(target):
    for batch, in_channel, out_channel, in_size in CONV_SIZES[target]:
        s, args = conv_hwcn(batch, in_channel, out_channel, in_size)
        text = str(tvm.lower(s, args, simple_mode=True))
        assert "Apad.shared" in text and "W.shared.local" in text and "B.local" in text
        a = rand((in_size, in_size, in_channel, batch), seed=1)
        w = rand((3, 3, in_channel, out_channel), seed=2)
        f = run(s, args, target, [a, w], [conv_hwcn_ref(a, w)])
        if target == "opencl":
            src = f.imported_modules[0].get_source()
            assert "__local" in src and "barrier(" in src


# ---------------------------------------------------------------- schedule_primitives.py


def prim_elementwise(m, n):
    A = te.placeholder((m, n), name="A")
    B = te.placeholder((m, n), name="B")
    C = te.compute((m, n), lambda i, j: A[i, j] * B[i, j], name="C")
    return te.create_schedule([C.op]), [A, B, C]


def prim_split_factor(m, n):
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=32)
    return s, [A, B]


def prim_split_nparts(m, n):
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i], name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], nparts=32)
    return s, [A, B]


def _copy2d(m, n):
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j], name="B")
    return A, B, te.create_schedule(B.op)


def prim_tile(m, n):
    A, B, s = _copy2d(m, n)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
    return s, [A, B]


def prim_fuse(m, n):
    A, B, s = _copy2d(m, n)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
    s[B].fuse(xi, yi)
    return s, [A, B]


def prim_reorder(m, n):
    A, B, s = _copy2d(m, n)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
    s[B].reorder(xi, yo, xo, yi)
    return s, [A, B]


def prim_bind(m, n):
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B]


def _two_stages(m):
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] + 1, name="B")
    C = te.compute((m,), lambda i: B[i] * 2, name="C")
    return A, B, C, te.create_schedule(C.op)


def prim_two_stages(m, n):
    A, B, C, s = _two_stages(m)
    return s, [A, B, C]


def prim_compute_at(m, n):
    A, B, C, s = _two_stages(m)
    s[B].compute_at(s[C], C.op.axis[0])
    return s, [A, B, C]


def prim_compute_inline(m, n):
    A, B, C, s = _two_stages(m)
    s[B].compute_inline()
    return s, [A, B, C]


def prim_compute_root(m, n):
    A, B, C, s = _two_stages(m)
    s[B].compute_at(s[C], C.op.axis[0])
    s[B].compute_root()
    return s, [A, B, C]


PRIMITIVES = {
    "elementwise": (prim_elementwise, lambda a, b: a * b),
    "split_factor": (prim_split_factor, lambda a: a * 2),
    "split_nparts": (prim_split_nparts, lambda a: a),
    "tile": (prim_tile, lambda a: a),
    "fuse": (prim_fuse, lambda a: a),
    "reorder": (prim_reorder, lambda a: a),
    "bind": (prim_bind, lambda a: a * 2),
    "two_stages": (prim_two_stages, None),
    "compute_at": (prim_compute_at, None),
    "compute_inline": (prim_compute_inline, None),
    "compute_root": (prim_compute_root, None),
}
EXPECT = {  # a mark of each primitive in the printed lowering
    "split_factor": "i.outer",
    "split_nparts": "i.inner",
    "tile": "j.inner",
    "fuse": "i.inner.j.inner.fused",
    "bind": "blockIdx.x",
    "compute_at": "produce B",
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(PRIMITIVES))
def test_schedule_primitives(name, target):
    make, ref = PRIMITIVES[name]
    m, n = te.var("m"), te.var("n")
    s, args = make(m, n)
    text = str(tvm.lower(s, args, simple_mode=True))
    assert EXPECT.get(name, "produce") in text
    shapes = {m: 37, n: 23} if name != "bind" else {n: 150}
    ins = [rand(tuple(shapes[d] for d in t.shape), seed=k) for k, t in enumerate(args[:-1])]
    if ref is None:  # A -> B = A + 1 -> C = 2 B; B is an output too, unless inlined
        a = ins[0]
        b = a.astype(np.float64) + 1
        f = build(s, args, target)
        outs = [np.full(37, np.nan, "float32") for _ in range(2)]
        f(a, *outs)
        np.testing.assert_allclose(outs[1], b * 2, rtol=1e-6)
        if name != "compute_inline":  # an inlined stage's array is left unwritten, as in TVM
            np.testing.assert_allclose(outs[0], b, rtol=1e-6)
        return
    ins = ins[: len(args) - 1]
    run(s, args, target, ins, [ref(*(x.astype(np.float64) for x in ins))])


# ---------------------------------------------------------------- tuple_inputs.py


@pytest.mark.parametrize("target", TARGETS)
def test_tuple_inputs_batchwise(target):
    n, m = te.var("n"), te.var("m")
    A0 = te.placeholder((m, n), name="A0")
    A1 = te.placeholder((m, n), name="A1")
    B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] + 2, A1[i, j] * 3), name="B")
    s = te.create_schedule(B0.op)
    assert "B.v1" in str(tvm.lower(s, [A0, A1, B0, B1], simple_mode=True))
    a0, a1 = rand((9, 14), 1), rand((9, 14), 2)
    run(s, [A0, A1, B0, B1], target, [a0, a1], [a0 + 2.0, a1 * 3.0])


def argmax_reducer():
    def fcombine(x, y):
        lhs = tvm.tir.Select((x[1] >= y[1]), x[0], y[0])
        rhs = tvm.tir.Select((x[1] >= y[1]), x[1], y[1])
        return lhs, rhs

    def fidentity(t0, t1):
        return tvm.tir.const(-1, t0), tvm.te.min_value(t1)

    return te.comm_reducer(fcombine, fidentity, name="argmax")


@pytest.mark.parametrize("target", TARGETS)
def test_tuple_inputs_argmax(target):
    argmax = argmax_reducer()
    m, n = te.var("m"), te.var("n")
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val", dtype="int32")
    k = te.reduce_axis((0, n), "k")
    T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    tvm.lower(s, [idx, val, T0, T1], simple_mode=True)
    rng = np.random.default_rng(3)
    iv = rng.integers(-1000, 1000, (11, 17)).astype("int32")
    vv = rng.integers(-20, 20, (11, 17)).astype("int32")  # ties: the first index wins
    first = vv.argmax(axis=1)
    want = [iv[np.arange(11), first], vv.max(axis=1)]
    run(s, [idx, val, T0, T1], target, [iv, vv], want)


@pytest.mark.parametrize("target", TARGETS)
def test_tuple_inputs_schedule_multi_output_op(target):
    n, m = te.var("n"), te.var("m")
    A0 = te.placeholder((m, n), name="A0")
    B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] + 2, A0[i, j] * 3), name="B")
    A1 = te.placeholder((m, n), name="A1")
    C = te.compute((m, n), lambda i, j: A1[i, j] + B0[i, j], name="C")
    s = te.create_schedule(C.op)
    s[B0].compute_at(s[C], C.op.axis[0])
    assert s[B0] is s[B1]  # the stage is the op's: both outputs move together
    text = str(tvm.lower(s, [A0, A1, C], simple_mode=True))
    assert text.index("produce B") > text.index("produce C")
    a0, a1 = rand((7, 12), 1), rand((7, 12), 2)
    run(s, [A0, A1, C], target, [a0, a1], [a1 + (a0 + 2.0)])


# ---------------------------------------------------------------- intrin_math.py


def exp_schedule(fexp, dtype="float32"):
    n = te.var("n")
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.compute(A.shape, lambda i: fexp(A[i]), name="B")
    s = te.create_schedule(B.op)
    num_thread = 64
    bx, tx = s[B].split(B.op.axis[0], factor=num_thread)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B]


INTRIN_CALLS = {
    "te.exp": te.exp,
    "call_pure_extern expf": lambda x: tvm.tir.call_pure_extern("float32", "expf", x),
    "call_pure_extern exp": lambda x: tvm.tir.call_pure_extern("float32", "exp", x),
    "call_intrin tir.exp": lambda x: tvm.tir.call_intrin(x.dtype, "tir.exp", x),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("how", list(INTRIN_CALLS))
def test_intrin_exp(how, target):
    s, args = exp_schedule(INTRIN_CALLS[how])
    a = rand((150,), 4) * 4 - 2
    f = run(s, args, target, [a], [np.exp(a.astype(np.float64))])
    if target == "opencl":
        assert "exp(A[" in f.imported_modules[0].get_source()


@pytest.mark.parametrize("target", TARGETS)
def test_intrin_exp_float64(target):
    # "the same te.exp can also be used for float64 data types"
    s, args = exp_schedule(te.exp, "float64")
    a = np.random.default_rng(5).uniform(-2, 2, 150)
    run(s, args, target, [a], [np.exp(a)], rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_intrin_own_log_as_a_function(target):
    # the tutorial's `mylog`, written as tensorsched takes it: a function of intrinsics
    def mylog(x):
        return tvm.tir.op.log(x)

    s, args = exp_schedule(mylog)
    a = rand((150,), 6) + 0.1
    run(s, args, target, [a], [np.log(a.astype(np.float64))])


def test_intrin_refusals():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    with pytest.raises(ts.ComputeError, match="'__expf'.*ts.exp"):  # CUDA's fast exp
        te.compute(A.shape, lambda i: tvm.tir.call_pure_extern("float32", "__expf", A[i]), name="B")
    with pytest.raises(ts.ComputeError, match="no function 'tir.mylog'"):
        tvm.tir.call_intrin("float32", "tir.mylog", A[0])
    with pytest.raises(ts.ComputeError, match="register_op_attr.*no registry"):
        tvm.ir.register_op_attr("tir.mylog", "TCallEffectKind", tvm.tir.CallEffectKind.Pure)

    def my_math_rule(op):
        assert isinstance(op, tvm.tir.Call)
        return tvm.tir.call_pure_extern("float32", f"{op.name}f", op.args[0])

    with pytest.raises(ts.ComputeError, match="register_intrin_lowering.*def mylog"):
        tvm.ir.register_intrin_lowering("tir.exp", target="opencl", f=my_math_rule, level=99)


# ---------------------------------------------------------------- tensor_expr_get_started.py


def vector_add():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    return A, B, C, te.create_schedule(C.op)


def vadd_default():
    A, B, C, s = vector_add()
    return s, [A, B, C]


def vadd_parallel():
    A, B, C, s = vector_add()
    s[C].parallel(C.op.axis[0])
    return s, [A, B, C]


def vadd_vector():
    A, B, C, s = vector_add()
    factor = 4
    outer, inner = s[C].split(C.op.axis[0], factor=factor)
    s[C].parallel(outer)
    s[C].vectorize(inner)
    return s, [A, B, C]


def vadd_gpu():
    A, B, C, s = vector_add()
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B, C]


VADD = {"naive": vadd_default, "parallel": vadd_parallel, "vector": vadd_vector}
VADD["gpu"] = vadd_gpu


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(VADD))
def test_get_started_vector_add(name, target):
    s, args = VADD[name]()
    text = str(tvm.lower(s, args, simple_mode=True))
    assert {"parallel": "parallel", "vector": "vectorized", "gpu": "threadIdx.x"}.get(
        name, "produce C"
    ) in text
    for n in (1024, 1027):  # the tutorial's n, and one that 4 and 64 do not divide
        a, b = rand((n,), 1), rand((n,), 2)
        run(s, args, target, [a, b], [a.astype(np.float64) + b])


def test_get_started_llvm_target_and_nd_arrays():
    # the tutorial's own calls: Target("llvm"), tvm.device(kind), tvm.nd, assert_allclose
    pytest.importorskip("pyopencl")
    from tensorsched.runtime.device import DeviceError
    from tensorsched.runtime.tvm_api import TargetNote, cpu_opencl_device

    try:
        cpu_opencl_device()
    except DeviceError as exc:
        pytest.skip(f"'llvm' builds for the CPU OpenCL device: {exc}")
    tgt = tvm.target.Target(target="llvm", host="llvm")
    s, args = vadd_vector()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TargetNote)  # 'llvm' is built for the CPU device
        fadd = tvm.build(s, args, tgt, name="myadd")
    dev = tvm.device(tgt.kind.name, 0)
    n = 1024
    a = tvm.nd.array(np.random.uniform(size=n).astype(args[0].dtype), dev)
    b = tvm.nd.array(np.random.uniform(size=n).astype(args[1].dtype), dev)
    c = tvm.nd.array(np.full(n, np.nan, dtype=args[2].dtype), dev)
    fadd(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())


M, K, N, BN = 50, 36, 64, 32  # the tutorial's 1024^3 at a size the python target runs


def matmul():
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = te.compute((M, N), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name="C")
    return A, B, C, k


def mm_none():
    A, B, C, _ = matmul()
    return te.create_schedule(C.op), [A, B, C]


def mm_blocking(vectorize=False):
    A, B, C, _ = matmul()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], BN, BN)
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(xo, yo, ko, ki, xi, yi)
    if vectorize:
        s[C].vectorize(yi)
    return s, [A, B, C]


def mm_permutation():
    A, B, C, _ = matmul()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], BN, BN)
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].vectorize(yi)
    return s, [A, B, C]


def packed():
    A, B, _, k = matmul()
    # N / bn: the tutorial's true division, a float that is a whole number
    packedB = te.compute((N / BN, K, BN), lambda x, y, z: B[y, x * BN + z], name="packedB")
    C = te.compute(
        (M, N),
        lambda x, y: te.sum(A[x, k] * packedB[y // BN, k, tvm.tir.indexmod(y, BN)], axis=k),
        name="C",
    )
    return A, B, C, packedB


def mm_packing():
    A, B, C, packedB = packed()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], BN, BN)
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].vectorize(yi)
    x, y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)
    return s, [A, B, C]


def mm_caching(parallel=False):
    A, B, C, packedB = packed()
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], BN, BN)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    (k,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(k, factor=4)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)
    if parallel:
        s[C].parallel(xo)
    x, y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)
    return s, [A, B, C]


MATMUL = {
    "none": mm_none,
    "blocking": mm_blocking,
    "vectorization": lambda: mm_blocking(vectorize=True),
    "loop permutation": mm_permutation,
    "array packing": mm_packing,
    "block caching": mm_caching,
    "parallelization": lambda: mm_caching(parallel=True),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(MATMUL))
def test_get_started_matmul(name, target):
    s, args = MATMUL[name]()
    tvm.lower(s, args, simple_mode=True)
    a, b = rand((M, K), 1), rand((K, N), 2)
    run(s, args, target, [a, b], [a.astype(np.float64) @ b])


# ---------------------------------------------------------------- reduction.py


@pytest.mark.parametrize("target", TARGETS)
def test_reduction_convolution_as_2d_reduction(target):
    n = te.var("n")
    Input = te.placeholder((n, n), name="Input")
    Filter = te.placeholder((3, 3), name="Filter")
    di = te.reduce_axis((0, 3), name="di")
    dj = te.reduce_axis((0, 3), name="dj")
    Output = te.compute(
        (n - 2, n - 2),
        lambda i, j: te.sum(Input[i + di, j + dj] * Filter[di, dj], axis=[di, dj]),
        name="Output",
    )
    s = te.create_schedule(Output.op)
    tvm.lower(s, [Input, Filter, Output], simple_mode=True)
    x, w = rand((13, 13), 1), rand((3, 3), 2)
    x64 = x.astype(np.float64)
    want = sum(x64[i : i + 11, j : j + 11] * w[i, j] for i in range(3) for j in range(3))
    run(s, [Input, Filter, Output], target, [x, w], [want])


@pytest.mark.parametrize("target", TARGETS)
def test_reduction_cross_thread_at_the_tutorials_size(target):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    assert "B.rf" in str(tvm.lower(s, [A, B], simple_mode=True))
    assert s[B].op.body  # "the scheduled operator of B": a sum over B.rf's first axis
    xo, xi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var.equal(0))
    nn = 128
    a = rand((nn, nn), 7)
    run(s, [A, B], target, [a], [a.astype(np.float64).sum(axis=1)], rtol=1e-4)
