"""Symbolic shapes (issue 17, part 1): ``ts.var`` / ``ts.size_var`` in shapes, extents and split
factors; the printed IR names the sizes; a kernel built once runs for any size, on the python
target and on the CPU OpenCL device, checked against numpy with poisoned outputs."""

import numpy as np
import pytest

import tensorsched as ts
from tensorsched.runtime.module import OpenCLModule
from tensorsched.runtime.numerics import compare, poisoned, random_array

TARGETS = ["python", "opencl"]


@pytest.fixture(scope="module")
def has_device():
    try:
        from tensorsched.runtime.device import current_device

        current_device()
    except Exception as exc:  # noqa: BLE001 - no driver, no device, no pyopencl
        return str(exc)
    return None


def build(s, args, target, has_device):
    if target == "opencl" and has_device is not None:
        pytest.skip(f"no OpenCL device: {has_device}")
    return ts.build(s, args, target=target)


def run(mod, shapes, dtypes, n_out, ref, seed=0):
    """Random inputs of ``shapes[:-n_out]``, poisoned outputs, the module, and numpy."""
    rng = np.random.default_rng(seed)
    ins = [random_array(sh, dt, rng) for sh, dt in zip(shapes[:-n_out], dtypes)]
    outs = [poisoned(sh, "float32") for sh in shapes[-n_out:]]
    mod(*ins, *outs)
    expected = ref(*[a.astype(np.float64) for a in ins])
    for out, e in zip(outs, expected if n_out > 1 else (expected,)):
        compare(out, e, "float32")


def vector_add(n, factor):
    A = ts.placeholder((n,), name="A")
    B = ts.placeholder((n,), name="B")
    C = ts.compute((n,), lambda i: A[i] + B[i], name="C")
    s = ts.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=factor)
    s[C].bind(xo, ts.thread_axis("blockIdx.x"))
    s[C].bind(xi, ts.thread_axis("threadIdx.x"))
    return s, [A, B, C]


def test_var_and_size_var():
    n = ts.var("n")
    m = ts.size_var("m")
    assert n.name == "n" and n.dtype == "int32" and not n.nonneg
    assert m.nonneg
    assert ts.var("k", dtype="int64").dtype == "int64"
    with pytest.raises(ts.ComputeError, match="int32 or int64"):
        ts.var("x", dtype="float32")
    A = ts.placeholder((n, m + 1), name="A")
    assert A.shape[0] is n and str(A.shape[1]) == "m + 1"


def test_lower_prints_sizes_as_names():
    n = ts.size_var("n")
    s, args = vector_add(n, 32)
    text = str(ts.lower(s, args))
    assert "thread_extent = (n + 31)//32\n" in text
    assert "if (blockIdx.x*32 + threadIdx.x < n)" in text
    script = ts.lower(s, args).script()
    assert script.startswith("func default_function(A: float32[n], B: float32[n], C: float32[n])")
    # a plain loop over a symbolic extent
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: A[i] * 2.0, name="B")
    assert "for (i, 0, n) {" in str(ts.lower(ts.create_schedule(B.op), [A, B]))


def test_divisible_split_has_no_guard():
    m = ts.size_var("m")
    A = ts.placeholder((m * 32,), name="A")
    W = ts.placeholder((m,), name="W")
    B = ts.compute((m * 32,), lambda i: A[i] * W[i // 32], name="B")
    s = ts.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=32)
    text = str(ts.lower(s, [A, W, B]))
    assert "if" not in text and "for (i.outer, 0, m)" in text
    mod = ts.build(s, [A, W, B], target="python")
    for mm in (1, 3):
        run(
            mod,
            [(32 * mm,), (mm,), (32 * mm,)],
            ["float32"] * 2,
            1,
            lambda a, w: a * np.repeat(w, 32),
        )


@pytest.mark.parametrize("target", TARGETS)
def test_vector_add_any_size(target, has_device):
    n = ts.size_var("n")
    mod = build(*vector_add(n, 32), target, has_device)
    for nn in (0, 1, 5, 31, 32, 33, 100):  # 32 divides some, not others; 0: nothing to do
        run(mod, [(nn,), (nn,), (nn,)], ["float32"] * 2, 1, lambda a, b: a + b, seed=nn)


@pytest.mark.parametrize("target", TARGETS)
def test_gemm_tiled_symbolic(target, has_device):
    M, N, K = ts.size_var("M"), ts.size_var("N"), ts.var("K")
    A = ts.placeholder((M, K), name="A")
    B = ts.placeholder((K, N), name="B")
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    bx, by, tx, ty = s[C].tile(i, j, 4, 8)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(bx, by, tx, ty, ko, ki)
    s[C].bind(bx, ts.thread_axis("blockIdx.y"))
    s[C].bind(by, ts.thread_axis("blockIdx.x"))
    s[C].bind(tx, ts.thread_axis("threadIdx.y"))
    s[C].bind(ty, ts.thread_axis("threadIdx.x"))
    s[C].unroll(ki)
    mod = build(s, [A, B, C], target, has_device)
    for mm, nn, kk in ((1, 1, 1), (9, 13, 7), (8, 16, 8), (5, 3, 12)):
        run(mod, [(mm, kk), (kk, nn), (mm, nn)], ["float32"] * 2, 1, lambda a, b: a @ b)


@pytest.mark.parametrize("target", TARGETS)
def test_gemm_shared_tiles_symbolic(target, has_device):
    """Work-group tiles of constant size over symbolic sizes: bound inference keeps the tile's
    constant extent and the domain guards fill what lies past the tensor with zeros."""
    M, N, K = ts.size_var("M"), ts.size_var("N"), ts.size_var("K")
    A = ts.placeholder((M, K), name="A")
    B = ts.placeholder((K, N), name="B")
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    BB = s.cache_read(B, "shared", [C])
    i, j = s[C].op.axis
    bx, by, tx, ty = s[C].tile(i, j, 4, 4)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(bx, by, tx, ty, ko, ki)
    s[C].bind(bx, ts.thread_axis("blockIdx.y"))
    s[C].bind(by, ts.thread_axis("blockIdx.x"))
    s[C].bind(tx, ts.thread_axis("threadIdx.y"))
    s[C].bind(ty, ts.thread_axis("threadIdx.x"))
    for T in (AA, BB):
        s[T].compute_at(s[C], ko)
        a0, a1 = s[T].op.axis
        s[T].bind(a0, ts.thread_axis("threadIdx.y"))
        s[T].bind(a1, ts.thread_axis("threadIdx.x"))
    text = str(ts.lower(s, [A, B, C]))
    assert "allocate A.shared[float32 * 4 * 4], shared" in text
    mod = build(s, [A, B, C], target, has_device)
    for mm, nn, kk in ((1, 2, 3), (6, 5, 9), (8, 8, 8)):
        run(mod, [(mm, kk), (kk, nn), (mm, nn)], ["float32"] * 2, 1, lambda a, b: a @ b)


@pytest.mark.parametrize("target", TARGETS)
def test_two_kernels_and_temporary(target, has_device):
    """A stage computed at the root between two kernels: its temporary buffer is sized at
    each call."""
    n, m = ts.size_var("n"), ts.size_var("m")
    A = ts.placeholder((n, m), name="A")
    T = ts.compute((n, m), lambda i, j: A[i, j] * 2.0, name="T")
    k = ts.reduce_axis((0, m), name="k")
    R = ts.compute((n,), lambda i: ts.sum(T[i, k], axis=k), name="R")
    s = ts.create_schedule(R.op)
    for st in (T, R):
        xo, xi = s[st].split(s[st].op.axis[0], factor=4)
        s[st].bind(xo, ts.thread_axis("blockIdx.x"))
        s[st].bind(xi, ts.thread_axis("threadIdx.x"))
    mod = build(s, [A, R], target, has_device)
    for nn, mm in ((3, 2), (9, 7), (1, 1)):
        run(mod, [(nn, mm), (nn,)], ["float32"], 1, lambda a: 2 * a.sum(axis=1))


def test_shape_mismatch_is_a_clear_error():
    n = ts.size_var("n")
    mod = ts.build(*vector_add(n, 32), target="python")
    a = np.zeros(5, "float32")
    with pytest.raises(ts.RuntimeCallError, match=r"argument 'B' has shape \(4,\), expected"):
        mod(a, np.zeros(4, "float32"), np.zeros(5, "float32"))
    with pytest.raises(ts.RuntimeCallError, match="n = 5"):
        mod(a, a, np.zeros(6, "float32"))


def test_size_in_no_argument_shape():
    n, m = ts.size_var("n"), ts.size_var("m")
    A = ts.placeholder((n,), name="A")
    k = ts.reduce_axis((0, m), name="k")
    B = ts.compute((n,), lambda i: ts.sum(A[i] * 1.0, axis=k), name="B")
    s = ts.create_schedule(B.op)
    with pytest.raises(ts.LoweringError, match="size 'm'.*no dimension of an argument"):
        ts.lower(s, [A, B])


def test_symbolic_private_buffer_is_refused():
    n = ts.size_var("n")
    A = ts.placeholder((n, n), name="A")
    B = ts.compute((n, n), lambda i, j: A[i, j] + 1.0, name="B")
    k = ts.reduce_axis((0, n), name="k")
    C = ts.compute((n,), lambda i: ts.sum(B[i, k], axis=k), name="C")
    s = ts.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].bind(xo, ts.thread_axis("blockIdx.x"))
    s[C].bind(xi, ts.thread_axis("threadIdx.x"))
    s[B].compute_at(s[C], xi)  # one row of B per work-item: n elements in private memory
    with pytest.raises(ts.CodegenError, match="symbolic size n"):
        ts.build(s, [A, C], target="opencl").get_source()


@pytest.mark.parametrize("target", TARGETS)
def test_size_read_in_a_body(target, has_device):
    """A compute may read a size as a value (reversal: A[n - 1 - i])."""
    n = ts.size_var("n")
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: A[n - 1 - i] * n.astype("float32"), name="B")
    mod = build(ts.create_schedule(B.op), [A, B], target, has_device)
    for nn in (1, 6):
        run(mod, [(nn,), (nn,)], ["float32"], 1, lambda a: a[::-1] * len(a))
    k = ts.size_var("k")
    C = ts.compute((4,), lambda i: A[i] * k.astype("float32"), name="C")
    with pytest.raises(ts.LoweringError, match="size 'k'"):
        ts.lower(ts.create_schedule(C.op), [A, C])


def test_domain_guard_below_a_symbolic_loop_end_is_dropped():
    """``i < m`` inside ``for (i, 0, m)`` is known: a stage computed at its consumer's loop over
    symbolic extents needs no domain guard there (TVM's simplifier drops it too)."""
    n, m = ts.var("n"), ts.var("m")
    A = ts.placeholder((m, n), name="A")
    C = ts.compute((m, n), lambda i, j: A[i, j] * 2.0, name="C")
    k = ts.reduce_axis((0, n), "k")
    D = ts.compute((m,), lambda i: ts.sum(C[i, k], axis=k), name="D")
    s = ts.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[0])
    text = str(ts.lower(s, [A, D]))
    assert "if" not in text and "for (j, 0, n) {" in text
    mod = ts.build(s, [A, D], target="python")
    run(mod, [(3, 4), (3,)], ["float32"], 1, lambda a: 2 * a.sum(axis=1))


def test_a_size_among_the_arguments_is_bound_from_the_shapes():
    n = ts.size_var("n")
    s, args = vector_add(n, 32)
    func = ts.lower(s, [*args, n])  # as TVM programs often list it
    assert [b.name for b in func.args] == ["A", "B", "C"]
    mod = ts.build(s, [*args, n], target="python")
    run(mod, [(7,), (7,), (7,)], ["float32"] * 2, 1, lambda a, b: a + b)


@pytest.mark.parametrize("target", TARGETS)
def test_int64_size(target, has_device):
    n = ts.var("n", dtype="int64")
    s, args = vector_add(n, 8)
    assert "A: float32[int64 n]" in ts.lower(s, args).script()  # and it parses back
    mod = build(s, args, target, has_device)
    if target == "opencl":
        assert "const long n" in mod.get_source()
    for nn in (3, 17):
        run(mod, [(nn,), (nn,), (nn,)], ["float32"] * 2, 1, lambda a, b: a + b)


@pytest.mark.parametrize("target", ["python", "opencl"])
def test_a_size_listed_among_the_arguments_is_given_by_the_call(target):
    # TVM's test_dependent_output_shape: build(s, [A, B, x]) and f(a, b, 2), where no shape
    # has x alone (without the value the call cannot bind x)
    if target == "opencl":
        pytest.importorskip("pyopencl")
    n, m, x = ts.size_var("n"), ts.size_var("m"), ts.size_var("x")
    A = ts.placeholder((n, m), name="A")
    B = ts.compute((m, n // x), lambda i, j: A[i, j] + 1.0, name="B")
    f = ts.build(ts.create_schedule(B.op), [A, B, x], target=target)
    a = np.random.default_rng(4).standard_normal((6, 6)).astype(np.float32)
    for size, cols in ((2, 3), (3, 2), (6, 1)):
        b = np.full((6, cols), np.nan, np.float32)
        f(a, b, size)
        np.testing.assert_allclose(b, a[:, :cols] + 1.0, rtol=1e-6)
    with pytest.raises(ts.RuntimeCallError, match="give its value as argument 2 of the call"):
        f(a, b)
    for bad in (2.0, -2, True):
        with pytest.raises(ts.RuntimeCallError, match="argument 2 is the size 'x', an int"):
            f(a, b, bad)
    with pytest.raises(ts.RuntimeCallError, match="or those and the sizes x where lower's"):
        f(a, b, 2, 2)
    with pytest.raises(ts.RuntimeCallError, match=r"B.*expected \(m, n//x\) = \(6, 2\)"):
        f(a, np.zeros((6, 3), np.float32), 3)
    if target == "opencl":  # an exported module keeps where its sizes go
        g = OpenCLModule.from_artifact(f.export().dumps())
        b = np.full((6, 3), np.nan, np.float32)
        g(a, b, 2)
        np.testing.assert_allclose(b, a[:, :3] + 1.0, rtol=1e-6)
