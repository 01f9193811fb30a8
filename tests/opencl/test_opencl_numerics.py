"""Every schedule primitive and every storage scope, built for OpenCL, run on the device and
compared with numpy on random data (never zeros), outputs poisoned with NaN before the run.

Sizes are mostly primes so that no split factor divides them and the guards are exercised.
"""

import re

import numpy as np
import pytest
from ocl_util import (
    assert_close,
    conv_ref,
    gemm,
    gemm_shared_schedule,
    make_arrays,
    poisoned,
    random_array,
    run_check,
)

import tensorsched as ts
from tensorsched.codegen.opencl import emit_opencl
from tensorsched.runtime.module import LaunchError, build_program

pytestmark = [pytest.mark.opencl, pytest.mark.usefixtures("ocl_device")]

M, N, K = 37, 29, 23  # primes: no factor below divides them


def gemm_ref(a, b):
    return a @ b


def ew(shape=(M, N), name="B", fn=lambda x: x * 2.0 + 1.0):
    A = ts.placeholder(shape, name="A")
    B = ts.compute(shape, lambda *i: fn(A[i]), name=name)
    return A, B


# ---------------------------------------------------------------- split / tile / fuse / reorder


@pytest.mark.parametrize(
    "how",
    [
        "factor_divides",
        "factor_positional",
        "nparts",
        "factor_not_dividing",
        "nparts_not_dividing",
        "factor_too_big",
    ],
)
def test_split(how, rng):
    shape = (40, 29) if how == "factor_divides" else (M, N)
    A, B, C = gemm(*shape, K)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    if how == "factor_divides":
        io, ii = s[C].split(i, factor=8)
    elif how == "factor_positional":
        io, ii = s[C].split(i, 5)
    elif how == "nparts":
        io, ii = s[C].split(j, nparts=4)
    elif how == "factor_not_dividing":
        io, ii = s[C].split(i, factor=8)
        jo, ji = s[C].split(j, factor=3)
        ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=4)
    elif how == "nparts_not_dividing":
        io, ii = s[C].split(i, nparts=5)
    else:
        io, ii = s[C].split(i, factor=64)
    run_check(s, [A, B, C], gemm_ref, rng, name="split")


def test_tile_non_dividing(rng):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    xo, yo, xi, yi = s[C].tile(i, j, x_factor=8, y_factor=4)
    assert s[C].leaf_iter_vars[:4] == [xo, yo, xi, yi]
    run_check(s, [A, B, C], gemm_ref, rng, name="tile")


def test_fuse_then_split(rng):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    f = s[C].fuse(i, j)
    fo, fi = s[C].split(f, factor=16)  # 37*29 = 1073 is prime to 16
    run_check(s, [A, B, C], gemm_ref, rng, name="fuse")


def test_fuse_split_axes(rng):
    A, B = ew((M, N, 3))
    s = ts.create_schedule(B.op)
    i, j, c = s[B].op.axis
    jo, ji = s[B].split(j, factor=4)
    s[B].fuse(i, jo)
    run_check(s, [A, B], lambda a: a * 2 + 1, rng, name="fuse3")


def test_reorder_with_reduction_outermost(rng):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, ii = s[C].split(i, factor=8)
    ko, ki = s[C].split(k, factor=5)
    s[C].reorder(io, ko, j, ki, ii)
    run_check(s, [A, B, C], gemm_ref, rng, name="reorder")


# ---------------------------------------------------------------- unroll


def test_unroll_explicit_default(rng):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    jo, ji = s[C].split(j, factor=4)
    s[C].unroll(ji)
    mod = run_check(s, [A, B, C], gemm_ref, rng, name="unroll")
    src = mod.get_source()
    assert "#pragma unroll" not in src
    assert not re.search(r"for \(int j_inner", src), "the unrolled loop must be written out"
    assert all(f"j_outer * 4 + {c}]" in src for c in (1, 2, 3)), src


def test_unroll_pragma_unroll_explicit_0(rng):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, factor=4)
    s[C].unroll(ki)
    s[C].pragma(ki, "unroll_explicit", 0)
    mod = run_check(s, [A, B, C], gemm_ref, rng, name="unroll_pragma")
    src = mod.get_source()
    assert re.search(r"#pragma unroll\n\s*for \(int k_inner", src), src


def test_unroll_long_loop_keeps_pragma(rng):
    """An unrolled loop longer than the explicit limit stays a loop with ``#pragma unroll``."""
    A, B = ew((3, 97))
    s = ts.create_schedule(B.op)
    s[B].unroll(s[B].op.axis[1])
    mod = run_check(s, [A, B], lambda a: a * 2 + 1, rng, name="unroll_long")
    assert "#pragma unroll" in mod.get_source()


# ---------------------------------------------------------------- vectorize


def test_vectorize_to_vload_vstore(rng):
    A = ts.placeholder((M, 32), name="A")
    Bt = ts.placeholder((M, 32), name="Bt")
    C = ts.compute((M, 32), lambda i, j: A[i, j] * Bt[i, j] + A[i, j], name="C")
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    jo, ji = s[C].split(j, factor=4)
    s[C].vectorize(ji)
    mod = run_check(s, [A, Bt, C], lambda a, b: a * b + a, rng, name="vec")
    src = mod.get_source()
    assert "vload4(" in src and "vstore4(" in src, src


def test_vectorize_gemm_inner_axis(rng):
    A, B, C = gemm(M, 32, K)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    jo, ji = s[C].split(j, factor=8)
    s[C].reorder(i, jo, k, ji)
    s[C].vectorize(ji)
    mod = run_check(s, [A, B, C], gemm_ref, rng, name="vec_gemm")
    src = mod.get_source()
    assert "vload8(" in src and "vstore8(" in src, src


def test_vectorize_falls_back_under_guard(rng):
    """29 is not a multiple of 4: the split leaves a guard on the vector lane, so the loop
    cannot become vector code; it must still compute the right numbers."""
    A, B = ew((M, N))
    s = ts.create_schedule(B.op)
    i, j = s[B].op.axis
    jo, ji = s[B].split(j, factor=4)
    s[B].vectorize(ji)
    mod = run_check(s, [A, B], lambda a: a * 2 + 1, rng, name="vec_guard")
    src = mod.get_source()
    assert "vstore4" not in src and "vload4" not in src


def test_vectorize_odd_width_falls_back(rng):
    A, B = ew((M, 30))
    s = ts.create_schedule(B.op)
    i, j = s[B].op.axis
    jo, ji = s[B].split(j, factor=5)  # not an OpenCL vector width
    s[B].vectorize(ji)
    mod = run_check(s, [A, B], lambda a: a * 2 + 1, rng, name="vec_odd")
    assert "vstore" not in mod.get_source()


def test_vectorize_strided_read(rng):
    """A transposed read is gathered lane by lane; the store is still a vstore."""
    A = ts.placeholder((32, M), name="A")
    B = ts.compute((M, 32), lambda i, j: A[j, i] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    jo, ji = s[B].split(s[B].op.axis[1], factor=4)
    s[B].vectorize(ji)
    mod = run_check(s, [A, B], lambda a: a.T + 1, rng, name="vec_strided")
    assert "vstore4(" in mod.get_source()


# ---------------------------------------------------------------- parallel


def test_parallel(rng):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    io, ii = s[C].split(i, factor=8)
    s[C].parallel(io)
    run_check(s, [A, B, C], gemm_ref, rng, name="par")


# ---------------------------------------------------------------- bind


def test_bind_uneven_extents(rng):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    bx, tx = s[C].split(i, factor=8)  # 37 = 4*8 + 5: the last group is partial
    by, ty = s[C].split(j, factor=4)
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[C].bind(tx, ts.thread_axis("threadIdx.x"))
    s[C].bind(by, ts.thread_axis("blockIdx.y"))
    s[C].bind(ty, ts.thread_axis("threadIdx.y"))
    mod = run_check(s, [A, B, C], gemm_ref, rng, name="bind")
    (k,) = mod.source.kernels
    assert k.local_size == (8, 4)
    assert k.global_size == (40, 32)
    src = mod.get_source()
    assert "get_group_id(0)" in src and "get_local_id(1)" in src
    assert "reqd_work_group_size(8, 4, 1)" in src


def test_bind_3d(rng):
    A, B = ew((5, 7, 11))
    s = ts.create_schedule(B.op)
    z, y, x = s[B].op.axis
    for ax, d in ((z, "z"), (y, "y"), (x, "x")):
        o, i = s[B].split(ax, factor=2)
        s[B].bind(o, ts.thread_axis(f"blockIdx.{d}"))
        s[B].bind(i, ts.thread_axis(f"threadIdx.{d}"))
    mod = run_check(s, [A, B], lambda a: a * 2 + 1, rng, name="bind3")
    assert mod.source.kernels[0].local_size == (2, 2, 2)
    assert mod.source.kernels[0].global_size == (12, 8, 6)


def test_bind_only_threads_one_group(rng):
    A, B = ew((M,))
    s = ts.create_schedule(B.op)
    s[B].bind(s[B].op.axis[0], ts.thread_axis("threadIdx.x"))
    mod = run_check(s, [A, B], lambda a: a * 2 + 1, rng, name="bind_tx")
    assert mod.source.kernels[0].local_size == (M,)


def test_bind_only_blocks(rng):
    A, B = ew((M, N))
    s = ts.create_schedule(B.op)
    i, j = s[B].op.axis
    s[B].bind(i, ts.thread_axis("blockIdx.y"))
    s[B].bind(j, ts.thread_axis("blockIdx.x"))
    mod = run_check(s, [A, B], lambda a: a * 2 + 1, rng, name="bind_bx")
    assert mod.source.kernels[0].global_size == (N, M)
    assert mod.source.kernels[0].local_size == (1, 1)


def test_stage_at_root_without_binding_runs_as_one_work_item(rng):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    mod = run_check(s, [A, B, C], gemm_ref, rng, name="single")
    (k,) = mod.source.kernels
    assert k.global_size == (1,) and k.local_size == (1,)
    assert "get_group_id" not in mod.get_source() and "get_local_id" not in mod.get_source()


# ---------------------------------------------------------------- compute_at / inline / pipelines


def test_compute_at_serial_loop(rng):
    """A producer computed inside a serial loop of its consumer (a temporary buffer)."""
    A = ts.placeholder((M, N), name="A")
    T = ts.compute((M, N), lambda i, j: A[i, j] * 3.0, name="T")
    B = ts.compute((M, N - 2), lambda i, j: T[i, j] + T[i, j + 2], name="B")
    s = ts.create_schedule(B.op)
    i, j = s[B].op.axis
    s[T].compute_at(s[B], i)
    run_check(s, [A, B], lambda a: 3 * a[:, :-2] + 3 * a[:, 2:], rng, name="cat")


def test_compute_at_serial_loop_vectorized(rng):
    """Producer and consumer both vectorized, the producer's buffer a global temporary."""
    A = ts.placeholder((7, 8), name="A")
    T = ts.compute((7, 8), lambda i, j: A[i, j] + 1.0, name="T")
    B = ts.compute((7, 8), lambda i, j: T[i, j] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    i, j = s[B].op.axis
    s[T].compute_at(s[B], i)
    jo, ji = s[B].split(j, 4)
    s[B].vectorize(ji)
    s[T].vectorize(s[T].op.axis[1])
    mod = run_check(s, [A, B], lambda a: (a + 1) * 2, rng, name="catv")
    assert "vstore4(" in mod.get_source() and "vstore8(" in mod.get_source()
    assert [t.name for t in mod.source.temps] == ["T"]


def test_global_scope_under_threads_is_refused(ocl_device):
    """A global buffer inside a work-item loop would be shared by every work-item."""
    A = ts.placeholder((8, 8), name="A")
    T = ts.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="T")
    B = ts.compute((8, 8), lambda i, j: T[i, j] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    i, j = s[B].op.axis
    s[B].bind(i, ts.thread_axis("threadIdx.x"))
    s[T].compute_at(s[B], i)
    s[T].set_scope("global")
    with pytest.raises(ts.CodegenError, match="'T'.*threadIdx.x.*'local'"):
        ts.build(s, [A, B], target="opencl", name="bad")


def test_compute_at_under_threads_is_private(rng):
    A = ts.placeholder((M, N), name="A")
    T = ts.compute((M, N), lambda i, j: ts.exp(A[i, j]), name="T")
    B = ts.compute((M, N - 1), lambda i, j: T[i, j] * T[i, j + 1], name="B")
    s = ts.create_schedule(B.op)
    i, j = s[B].op.axis
    bx, tx = s[B].split(i, factor=8)
    s[B].bind(bx, ts.thread_axis("blockIdx.x"))
    s[B].bind(tx, ts.thread_axis("threadIdx.x"))
    jo, ji = s[B].split(j, factor=5)
    s[T].compute_at(s[B], jo)
    mod = run_check(s, [A, B], lambda a: np.exp(a[:, :-1]) * np.exp(a[:, 1:]), rng, name="cat2")
    src = mod.get_source()
    assert re.search(r"\n\s+float T\[\d+\];", src), src  # private (register) array
    assert len(mod.source.kernels) == 1


def test_compute_at_under_blocks_is_local_memory(rng):
    A = ts.placeholder((M, N), name="A")
    T = ts.compute((M, N), lambda i, j: A[i, j] + 1.0, name="T")
    B = ts.compute((M, N), lambda i, j: T[i, j] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    i, j = s[B].op.axis
    s[B].bind(i, ts.thread_axis("blockIdx.x"))
    s[T].compute_at(s[B], i)
    mod = run_check(s, [A, B], lambda a: (a + 1) * 2, rng, name="cat3")
    assert "__local float T[" in mod.get_source()


def test_compute_inline(rng):
    A = ts.placeholder((M, N), name="A")
    T = ts.compute((M, N), lambda i, j: A[i, j] * A[i, j], name="T")
    U = ts.compute((M, N), lambda i, j: T[i, j] + 1.0, name="U")
    B = ts.compute((M, N), lambda i, j: U[i, j] - T[i, j] * 0.5, name="B")
    s = ts.create_schedule(B.op)
    s[T].compute_inline()
    s[U].compute_inline()
    mod = run_check(s, [A, B], lambda a: a * a + 1 - 0.5 * a * a, rng, name="inl")
    assert len(mod.source.kernels) == 1 and not mod.source.temps


def test_multi_kernel_pipeline_with_global_temps(rng):
    A = ts.placeholder((M, N), name="A")
    T1 = ts.compute((M, N), lambda i, j: A[i, j] * 2.0, name="T1")
    T2 = ts.compute((M, N), lambda i, j: T1[i, j] + A[i, j], name="T2")
    T3 = ts.compute((N, M), lambda i, j: T2[j, i] - 1.0, name="T3")
    B = ts.compute((M, N), lambda i, j: T3[j, i] * T1[i, j], name="B")
    s = ts.create_schedule(B.op)
    for t in (T1, T2, B):
        i, j = s[t].op.axis
        bx, tx = s[t].split(i, factor=8)
        s[t].bind(bx, ts.thread_axis("blockIdx.x"))
        s[t].bind(tx, ts.thread_axis("threadIdx.x"))
    # T3 stays unbound: a single work-item kernel between bound ones
    mod = run_check(s, [A, B], lambda a: (3 * a - 1) * 2 * a, rng, name="pipe")
    names = [k.name for k in mod.source.kernels]
    assert names == ["pipe_T1", "pipe_T2", "pipe_T3", "pipe_B"]
    assert {t.name for t in mod.source.temps} == {"T1", "T2", "T3"}
    assert mod.source.kernels[2].global_size == (1,)
    # run twice: the temporaries are reused and fully rewritten
    arrays, ins, outs = make_arrays([A, B], rng)
    mod(*arrays)
    assert_close(outs[0][1], (3 * ins[0].astype(np.float64) - 1) * 2 * ins[0], "float32")


def test_two_outputs(rng):
    A = ts.placeholder((M, N), name="A")
    B = ts.compute((M, N), lambda i, j: A[i, j] + 1.0, name="B")
    C = ts.compute((M, N), lambda i, j: A[i, j] * 3.0, name="C")
    s = ts.create_schedule([B.op, C.op])
    run_check(s, [A, B, C], lambda a: (a + 1, 3 * a), rng, name="two")


# ---------------------------------------------------------------- cache_read / cache_write


def test_cache_read_shared_cooperative(rng):
    s, (A, B, C) = gemm_shared_schedule(M, N, K)
    mod = run_check(s, [A, B, C], gemm_ref, rng, name="gemm_shared")
    src = mod.get_source()
    assert "__local float A_shared[" in src and "__local float B_shared[" in src
    assert src.count("barrier(CLK_LOCAL_MEM_FENCE);") >= 2
    (k,) = mod.source.kernels
    assert k.local_size == (4, 4)


def test_cache_read_shared_divisible(rng):
    s, (A, B, C) = gemm_shared_schedule(32, 32, 16)
    mod = run_check(s, [A, B, C], gemm_ref, rng, name="gemm_shared32")
    assert "barrier(CLK_LOCAL_MEM_FENCE);" in mod.get_source()


def test_cache_read_local(rng):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    AL = s.cache_read(A, "local", [C])
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    bx, tx = s[C].split(i, factor=8)
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[C].bind(tx, ts.thread_axis("threadIdx.x"))
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(bx, tx, ko, j, ki)
    s[AL].compute_at(s[C], ko)
    mod = run_check(s, [A, B, C], gemm_ref, rng, name="cr_local")
    src = mod.get_source()
    assert re.search(r"\n\s+float A_local\[\d+\];", src), src
    assert "__local" not in src


def test_cache_write_local(rng):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    i, j = s[C].op.axis
    bx, by, tx, ty = s[C].tile(i, j, 8, 4)
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[C].bind(by, ts.thread_axis("blockIdx.y"))
    s[C].bind(tx, ts.thread_axis("threadIdx.x"))
    s[CL].compute_at(s[C], tx)
    mod = run_check(s, [A, B, C], gemm_ref, rng, name="cw_local")
    assert re.search(r"\n\s+float C_local\[\d+\];", mod.get_source())


def test_cache_write_local_with_shared_reads_and_epilogue(rng):
    """GEMM + bias + ReLU: the epilogue inlined into the copy-out of the local accumulator."""
    A, B, C = gemm(M, N, K)
    bias = ts.placeholder((N,), name="bias")
    D = ts.compute(
        (M, N), lambda i, j: ts.max(C[i, j] + bias[j], ts.const(0.0, "float32")), name="D"
    )
    s = ts.create_schedule(D.op)
    CL = s.cache_write(C, "local")
    i, j = s[D].op.axis
    bx, by, tx, ty = s[D].tile(i, j, 8, 8)
    s[D].bind(bx, ts.thread_axis("blockIdx.x"))
    s[D].bind(by, ts.thread_axis("blockIdx.y"))
    s[D].bind(tx, ts.thread_axis("threadIdx.x"))
    s[D].bind(ty, ts.thread_axis("threadIdx.y"))
    s[C].compute_at(s[D], ty)
    s[CL].compute_at(s[C], s[C].op.axis[1])
    run_check(s, [A, B, bias, D], lambda a, b, c: np.maximum(a @ b + c, 0), rng, name="epi")


# ---------------------------------------------------------------- dtypes and intrinsics


def test_float16_storage(rng):
    A = ts.placeholder((M, N), name="A", dtype="float16")
    Bt = ts.placeholder((M, N), name="Bt", dtype="float16")
    C = ts.compute((M, N), lambda i, j: A[i, j] * Bt[i, j] + A[i, j], name="C")
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    bx, tx = s[C].split(i, factor=8)
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[C].bind(tx, ts.thread_axis("threadIdx.x"))
    mod = run_check(s, [A, Bt, C], lambda a, b: a * b + a, rng, name="half")
    src = mod.get_source()
    assert "vload_half(" in src and "vstore_half(" in src
    assert "__global const half*" in src and "__global half*" in src


def test_float16_storage_vectorized(rng):
    A = ts.placeholder((M, 16), name="A", dtype="float16")
    B = ts.compute(
        (M, 16),
        lambda i, j: A[i, j] * 2.0 + 0.5,
        name="B",
    )
    s = ts.create_schedule(B.op)
    jo, ji = s[B].split(s[B].op.axis[1], factor=4)
    s[B].vectorize(ji)
    mod = run_check(s, [A, B], lambda a: a * 2 + 0.5, rng, name="half4")
    src = mod.get_source()
    assert "vload_half4(" in src and "vstore_half4(" in src


def test_float16_gemm_float32_accumulate(rng):
    A, B, _ = gemm(M, N, K, dtype="float16")
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute(
        (M, N),
        lambda i, j: ts.sum(A[i, k].astype("float32") * B[k, j].astype("float32"), axis=k),
        name="C",
    )
    s = ts.create_schedule(C.op)
    bx, tx = s[C].split(s[C].op.axis[0], factor=8)
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[C].bind(tx, ts.thread_axis("threadIdx.x"))
    mod = run_check(s, [A, B, C], gemm_ref, rng, name="hgemm", rtol=1e-5)
    assert "vload_half(" in mod.get_source()


def test_float16_through_shared_and_local_caches(rng):
    """half inputs copied into ``__local`` and private tiles (as float), accumulated in float."""
    A, B, _ = gemm(19, 13, 11, dtype="float16")
    k = ts.reduce_axis((0, 11), name="k")
    C = ts.compute(
        (19, 13),
        lambda i, j: ts.sum(A[i, k].astype("float32") * B[k, j].astype("float32"), axis=k),
        name="C",
    )
    s = ts.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    BL = s.cache_read(B, "local", [C])
    i, j = s[C].op.axis
    bx, tx = s[C].split(i, 4)
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[C].bind(tx, ts.thread_axis("threadIdx.x"))
    ko, ki = s[C].split(s[C].op.reduce_axis[0], 4)
    s[C].reorder(bx, tx, ko, j, ki)
    s[AA].compute_at(s[C], ko)
    s[BL].compute_at(s[C], ko)
    s[AA].bind(s[AA].op.axis[0], ts.thread_axis("threadIdx.x"))
    mod = run_check(s, [A, B, C], gemm_ref, rng, name="hcache", rtol=1e-5)
    src = mod.get_source()
    assert "__local float A_shared[" in src and "vload_half(" in src
    assert "barrier(CLK_LOCAL_MEM_FENCE);" in src


def test_float16_native_text_enables_cl_khr_fp16(ocl_device, rng):
    """``fp16="native"`` computes in half: the source enables cl_khr_fp16; a device without
    it refuses the build with a BuildError that says what to use instead."""
    A = ts.placeholder((7, 8), name="A", dtype="float16")
    B = ts.compute((7, 8), lambda i, j: A[i, j] * A[i, j] + ts.const(0.5, "float16"), name="B")
    s = ts.create_schedule(B.op)
    jo, ji = s[B].split(s[B].op.axis[1], factor=4)
    s[B].vectorize(ji)
    text = emit_opencl(ts.lower(s, [A, B], name="hn"), fp16="native").text
    assert "#pragma OPENCL EXTENSION cl_khr_fp16 : enable" in text
    assert "half4" in text and "vload_half" not in text
    storage = emit_opencl(ts.lower(s, [A, B], name="hs")).text
    assert "cl_khr_fp16" not in storage
    if ocl_device.has_fp16:
        run_check(s, [A, B], lambda a: a * a + 0.5, rng, name="hn", fp16="native")
    else:
        with pytest.raises(ts.BuildError, match="fp16='storage'"):
            ts.build(s, [A, B], target="opencl", name="hn", fp16="native")


def test_float64(ocl_device, rng):
    if "cl_khr_fp64" not in ocl_device.cl_device.extensions:
        pytest.skip("the device has no cl_khr_fp64")
    A = ts.placeholder((7, 5), name="A", dtype="float64")
    B = ts.compute((7, 5), lambda i, j: ts.exp(A[i, j]) * 1e-10 + A[i, j], name="B")
    s = ts.create_schedule(B.op)
    mod = run_check(s, [A, B], lambda a: np.exp(a) * 1e-10 + a, rng, name="dbl")
    assert "cl_khr_fp64" in mod.get_source()


def test_names_that_are_c_keywords(rng):
    A = ts.placeholder((7, 5), name="int")
    T = ts.compute((7, 5), lambda i, j: A[i, j] + 1.0, name="float")
    B = ts.compute((7, 5), lambda i, j: T[i, j] * 2.0, name="for")
    s = ts.create_schedule(B.op)
    run_check(s, [A, B], lambda a: (a + 1) * 2, rng, name="kernel")


def test_names_of_builtin_functions(rng):
    """Tensors named like the OpenCL built-ins the kernel calls (``tanh``, ``max``,
    ``vload4``) get other identifiers, so the calls still reach the built-ins."""
    A = ts.placeholder((7, 5), name="tanh")
    T = ts.compute((7, 5), lambda i, j: ts.tanh(A[i, j]), name="max")
    B = ts.compute((7, 5), lambda i, j: ts.max(T[i, j], 0.25), name="vload4")
    s = ts.create_schedule(B.op)
    run_check(s, [A, B], lambda a: np.maximum(np.tanh(a), 0.25), rng, name="exp")


def test_int32_negative_floor_division_and_modulo(rng):
    A = ts.placeholder((M, N), name="A", dtype="int32")
    B = ts.compute(
        (M, N), lambda i, j: A[i, j] // 3 + A[i, j] % 4 * 10 + (A[i, j] - 5) // (-2), name="B"
    )
    s = ts.create_schedule(B.op)
    inputs = {"A": rng.integers(-50, 50, size=(M, N)).astype("int32")}
    assert (inputs["A"] < 0).any()
    mod = run_check(
        s,
        [A, B],
        lambda a: a // 3 + a % 4 * 10 + (a - 5) // (-2),
        rng,
        name="ifloor",
        inputs=inputs,
    )
    src = mod.get_source()
    assert "ts_floordiv" in src and "ts_floormod" in src


def test_int32_index_floor_division(rng):
    """``//`` and ``%`` on (non-negative) loop indices print as C ``/`` and ``%``."""
    A = ts.placeholder((M * 6,), name="A")
    B = ts.compute((M, 6), lambda i, j: A[(i * 6 + j) // 6 * 6 + (i * 6 + j) % 6] + 1.0, name="B")
    s = ts.create_schedule(B.op)
    f = s[B].fuse(*s[B].op.axis)
    fo, fi = s[B].split(f, factor=7)
    s[B].bind(fo, ts.thread_axis("blockIdx.x"))
    s[B].bind(fi, ts.thread_axis("threadIdx.x"))
    run_check(s, [A, B], lambda a: a.reshape(M, 6) + 1, rng, name="idiv")


def test_intrinsics(rng):
    A = ts.placeholder((M, N), name="A")
    Bt = ts.placeholder((M, N), name="Bt")
    C = ts.compute(
        (M, N),
        lambda i, j: (
            ts.exp(A[i, j])
            + ts.sigmoid(Bt[i, j])
            + ts.sqrt(A[i, j] * A[i, j] + 1.0)
            + ts.max(A[i, j], Bt[i, j]) * 2.0
            - ts.min(A[i, j], Bt[i, j])
            + ts.if_then_else(A[i, j] > Bt[i, j], A[i, j], ts.const(-3.0, "float32"))
        ),
        name="C",
    )
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    s[C].bind(i, ts.thread_axis("blockIdx.x"))
    s[C].bind(j, ts.thread_axis("threadIdx.x"))

    def ref(a, b):
        return (
            np.exp(a)
            + 1 / (1 + np.exp(-b))
            + np.sqrt(a * a + 1)
            + np.maximum(a, b) * 2
            - np.minimum(a, b)
            + np.where(a > b, a, -3.0)
        )

    mod = run_check(s, [A, Bt, C], ref, rng, name="intrin")
    src = mod.get_source()
    for fn in ("exp(", "sqrt(", "fmax(", "fmin("):
        assert fn in src


def test_intrinsics_vectorized(rng):
    A = ts.placeholder((M, 8), name="A")
    B = ts.compute((M, 8), lambda i, j: ts.sigmoid(A[i, j]) * ts.sqrt(ts.exp(A[i, j])), name="B")
    s = ts.create_schedule(B.op)
    jo, ji = s[B].split(s[B].op.axis[1], factor=8)
    s[B].vectorize(ji)
    mod = run_check(
        s, [A, B], lambda a: 1 / (1 + np.exp(-a)) * np.sqrt(np.exp(a)), rng, name="intrin_vec"
    )
    assert "vstore8(" in mod.get_source()


def test_max_min_reductions(rng):
    A = ts.placeholder((M, N), name="A")
    k1 = ts.reduce_axis((0, N), name="k1")
    k2 = ts.reduce_axis((0, N), name="k2")
    Mx = ts.compute((M,), lambda i: ts.max(A[i, k1], axis=k1), name="Mx")
    Mn = ts.compute((M,), lambda i: ts.min(A[i, k2], axis=k2), name="Mn")
    s = ts.create_schedule([Mx.op, Mn.op])
    for t in (Mx, Mn):
        bx, tx = s[t].split(s[t].op.axis[0], factor=8)
        s[t].bind(bx, ts.thread_axis("blockIdx.x"))
        s[t].bind(tx, ts.thread_axis("threadIdx.x"))
    run_check(s, [A, Mx, Mn], lambda a: (a.max(axis=1), a.min(axis=1)), rng, name="red")


@pytest.mark.parametrize("inline", [True, False])
def test_pad(inline, rng):
    A = ts.placeholder((2, 5, 7), name="A")
    P = ts.pad(A, [0, 1, 2], [0, 3, 1], pad_value=-2.5, name="P")
    B = ts.compute(P.shape, lambda n, h, w: P[n, h, w] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    if inline:
        s[P].compute_inline()
    n, h, w = s[B].op.axis
    s[B].reorder(h, w, n)
    s[B].bind(h, ts.thread_axis("blockIdx.x"))
    s[B].bind(w, ts.thread_axis("threadIdx.x"))
    mod = run_check(
        s,
        [A, B],
        lambda a: 2 * np.pad(a, ((0, 0), (1, 3), (2, 1)), constant_values=-2.5),
        rng,
        name="pad",
    )
    assert len(mod.source.kernels) == (1 if inline else 2)


# ---------------------------------------------------------------- the seed tutorial's conv


@pytest.mark.parametrize(
    "sizes",
    [dict(CI=3, IH=6, IW=8, CO=8), dict(CI=16, IH=14, IW=16, CO=16)],
    ids=["small", "medium"],
)
def test_seed_conv_kernel3(sizes, rng):
    import seed_conv

    t = seed_conv.declare(**sizes)
    s = seed_conv.schedule(t, 3)
    data, kernel, out = t[0], t[1], t[-1]
    mod = run_check(s, [data, kernel, out], conv_ref, rng, name="conv")
    src = mod.get_source()
    assert "vstore4(" in src and "vload4(" in src
    assert [k.name for k in mod.source.kernels] == [
        "conv_data_vec",
        "conv_kernel_vec",
        "conv_conv",
        "conv_output_unpack",
    ]


@pytest.mark.parametrize("kernel_no", [1, 2])
def test_seed_conv_kernels_1_2(kernel_no, rng):
    import seed_conv

    t = seed_conv.declare(CI=3, IH=6, IW=8, CO=8)
    s = seed_conv.schedule(t, kernel_no)
    run_check(s, [t[0], t[1], t[-1]], conv_ref, rng, name="conv")


# ---------------------------------------------------------------- runtime behaviour


def test_work_group_too_large_raises_launch_error(ocl_device):
    A, B = ew((2 * 8192,))
    s = ts.create_schedule(B.op)
    bx, tx = s[B].split(s[B].op.axis[0], factor=8192)
    s[B].bind(bx, ts.thread_axis("blockIdx.x"))
    s[B].bind(tx, ts.thread_axis("threadIdx.x"))
    limit = ocl_device.max_work_group_size
    if 8192 <= limit:
        pytest.skip(f"the device allows work-groups of {limit}")
    with pytest.raises(LaunchError, match="threadIdx") as info:
        ts.build(s, [A, B], target="opencl", name="big")
    assert str(limit) in str(info.value)


def test_work_group_too_large_in_3d_raises_launch_error(ocl_device):
    limit = ocl_device.max_work_group_size
    n = 1
    while n**3 <= limit:
        n *= 2
    if any(n > m for m in ocl_device.max_work_item_sizes[:3]):
        pytest.skip("each dimension limit is below the cube root of the group limit")
    A, B = ew((n, n, n))
    s = ts.create_schedule(B.op)
    for ax, d in zip(s[B].op.axis, "zyx"):
        s[B].bind(ax, ts.thread_axis(f"threadIdx.{d}"))
    with pytest.raises(LaunchError, match="threadIdx") as info:
        ts.build(s, [A, B], target="opencl", name="big3")
    assert isinstance(info.value, ts.TensorschedError)


def test_wrong_shape_or_dtype_raises_before_running(rng):
    A, B = ew((M, N))
    s = ts.create_schedule(B.op)
    mod = ts.build(s, [A, B], target="opencl", name="chk")
    a = random_array((M, N), "float32", rng)
    out = poisoned((M, N), "float32")
    with pytest.raises(ts.RuntimeCallError, match="shape"):
        mod(a[:, :-1].copy(), out)
    with pytest.raises(ts.RuntimeCallError, match="dtype"):
        mod(a.astype(np.float64), out)
    with pytest.raises(ts.RuntimeCallError, match="expected 2 arrays"):
        mod(a)
    with pytest.raises(ts.RuntimeCallError, match="shape"):
        mod(a, poisoned((N, M), "float32"))
    assert np.isnan(out).all(), "nothing may run when the arguments are wrong"
    mod(a, out)
    assert_close(out, a.astype(np.float64) * 2 + 1, "float32")


def test_device_arrays(ocl_device, rng):
    import pyopencl.array as cla

    s, (A, B, C) = gemm_shared_schedule(M, N, K)
    mod = ts.build(s, [A, B, C], target="opencl", name="gemm_dev")
    assert mod.device is ocl_device
    q = ocl_device.queue
    a = random_array((M, K), "float32", rng)
    b = random_array((K, N), "float32", rng)
    a_d, b_d = cla.to_device(q, a), cla.to_device(q, b)
    c_d = cla.to_device(q, poisoned((M, N), "float32"))
    mod(a_d, b_d, c_d)
    assert_close(c_d.get(), a.astype(np.float64) @ b, "float32")
    # device and host arrays mixed in one call
    c = poisoned((M, N), "float32")
    mod(a_d, b, c)
    assert_close(c, a.astype(np.float64) @ b, "float32")
    with pytest.raises(ts.RuntimeCallError):
        mod(cla.to_device(q, b), a_d, c_d)


def test_time_evaluator(rng):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    bx, tx = s[C].split(s[C].op.axis[0], factor=8)
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[C].bind(tx, ts.thread_axis("threadIdx.x"))
    mod = ts.build(s, [A, B, C], target="opencl", name="timed")
    arrays, ins, outs = make_arrays([A, B, C], rng)
    t = mod.time_evaluator(repeat=3)(*arrays)
    assert len(t.device_times) == 3 and len(t.host_times) == 3
    assert all(x > 0 for x in t.device_times) and all(x > 0 for x in t.host_times)
    assert t.device_median > 0 and t.host_median > 0 and t.mean > 0
    assert_close(outs[0][1], ins[0].astype(np.float64) @ ins[1], "float32")


def test_bad_source_raises_build_error_with_log_and_saved_file(ocl_device):
    src = "__kernel void broken(__global float* x) {\n  x[0] = undeclared_thing + ;\n}\n"
    with pytest.raises(ts.BuildError) as info:
        build_program(ocl_device, src, ("-cl-std=CL1.2",))
    err = info.value
    msg = str(err)
    assert err.source_path and err.source_path.endswith(".cl")
    assert err.source_path in msg
    with open(err.source_path) as f:
        assert f.read() == src
    assert err.log and err.log.strip() in msg
    assert "undeclared_thing" in err.log or "error" in err.log.lower()


def test_build_is_cached_per_source_and_device(ocl_device):
    A, B = ew((M, N))
    s = ts.create_schedule(B.op)
    m1 = ts.build(s, [A, B], target="opencl", name="cache")
    m2 = ts.build(s, [A, B], target="opencl", name="cache")
    assert m1.program is m2.program


def test_emit_matches_module_source(ocl_device):
    s, (A, B, C) = gemm_shared_schedule(M, N, K)
    mod = ts.build(s, [A, B, C], target="opencl", name="g")
    assert mod.get_source() == emit_opencl(ts.lower(s, [A, B, C], name="g")).text


def test_build_from_lowered_function(rng):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    func = ts.lower(s, [A, B, C], name="from_func")
    mod = ts.build(func, target="opencl")
    arrays, ins, outs = make_arrays([A, B, C], rng)
    mod(*arrays)
    assert_close(outs[0][1], ins[0].astype(np.float64) @ ins[1], "float32")


def test_non_contiguous_numpy_arrays(rng):
    """A transposed input and an output that is a strided view are read and written right."""
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    mod = ts.build(s, [A, B, C], target="opencl", name="strided")
    a = random_array((K, M), "float32", rng).T  # (M, K), Fortran order
    b = random_array((K, N), "float32", rng)
    big = poisoned((M, 2 * N), "float32")
    c = big[:, ::2]  # every other column
    assert not a.flags.c_contiguous and not c.flags.c_contiguous
    mod(a, b, c)
    assert_close(c, a.astype(np.float64) @ b, "float32")
    assert np.isnan(big[:, 1::2]).all(), "only the view may be written"
