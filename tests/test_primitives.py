"""Every schedule primitive, alone and combined, checked against numpy through the python
target. Sizes are odd and split factors do not divide them, so every guard is exercised."""

import numpy as np
import pytest
import seed_conv
from hypothesis import given, settings
from hypothesis import strategies as st
from ts_check import check, conv_ref, gemm, gemm_ref, row_sums_added

import tensorsched as ts


def thr(tag):
    return ts.thread_axis(tag)


def gemm_sched(M=13, N=11, K=7):
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    return A, B, C, s


def chain2d(M=13, N=7):
    """A -> B = 2A -> C = B + 1 -> D = C * C[.., reversed]; returns A, B, C, D."""
    A = ts.placeholder((M, N), name="A")
    B = ts.compute((M, N), lambda i, j: A[i, j] * 2.0, name="B")
    C = ts.compute((M, N), lambda i, j: B[i, j] + 1.0, name="C")
    D = ts.compute((M, N), lambda i, j: C[i, j] * C[i, N - 1 - j], name="D")
    return A, B, C, D


def chain_ref(a):
    c = 2 * a + 1
    return c * c[:, ::-1]


def softmax(M=7, N=13):
    A = ts.placeholder((M, N), name="A")
    k = ts.reduce_axis((0, N), name="k")
    mx = ts.compute((M,), lambda i: ts.max(A[i, k], axis=k), name="mx")
    ex = ts.compute((M, N), lambda i, j: ts.exp(A[i, j] - mx[i]), name="ex")
    k2 = ts.reduce_axis((0, N), name="k2")
    sm = ts.compute((M,), lambda i: ts.sum(ex[i, k2], axis=k2), name="sm")
    out = ts.compute((M, N), lambda i, j: ex[i, j] / sm[i], name="out")
    return A, mx, ex, sm, out


def softmax_ref(a):
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------- split


@pytest.mark.parametrize("factor", [1, 2, 3, 4, 5, 6, 12, 13, 20])
def test_split_factor(factor):
    A, B, C, s = gemm_sched()
    i, j = s[C].op.axis
    io, ii = s[C].split(i, factor=factor)
    check(s, [A, B, C], gemm_ref)


@pytest.mark.parametrize("nparts", [1, 2, 3, 4, 5, 11, 17])
def test_split_nparts(nparts):
    A, B, C, s = gemm_sched()
    i, j = s[C].op.axis
    jo, ji = s[C].split(j, nparts=nparts)
    check(s, [A, B, C], gemm_ref)


def test_split_factor_positional_and_larger_than_extent():
    A, B, C, s = gemm_sched(5, 3, 7)
    i, j = s[C].op.axis
    io, ii = s[C].split(i, 8)  # 8 > 5: one outer iteration, guarded
    jo, ji = s[C].split(j, 100)
    check(s, [A, B, C], gemm_ref)


def test_split_reduce_axis_uneven():
    A, B, C, s = gemm_sched(5, 3, 13)
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, 4)
    kio, kii = s[C].split(ki, 3)  # a split of a split
    check(s, [A, B, C], gemm_ref)


def test_split_twice_on_both_parts():
    A, B, C, s = gemm_sched(37, 5, 3)
    i, _ = s[C].op.axis
    io, ii = s[C].split(i, 7)
    ioo, ioi = s[C].split(io, nparts=2)
    iio, iii = s[C].split(ii, 3)
    check(s, [A, B, C], gemm_ref)


def test_tile():
    A, B, C, s = gemm_sched()
    i, j = s[C].op.axis
    xo, yo, xi, yi = s[C].tile(i, j, x_factor=4, y_factor=3)
    assert s[C].leaf_iter_vars[:4] == [xo, yo, xi, yi]
    check(s, [A, B, C], gemm_ref)


# ---------------------------------------------------------------- fuse


def test_fuse_two():
    A, B, C, s = gemm_sched()
    i, j = s[C].op.axis
    f = s[C].fuse(i, j)
    assert s[C].leaf_iter_vars[0] is f
    check(s, [A, B, C], gemm_ref)


def test_fuse_three_and_split():
    A = ts.placeholder((3, 5, 7), name="A")
    C = ts.compute((3, 5, 7), lambda i, j, k: A[i, j, k] * 2.0 + A[2 - i, j, 6 - k], name="C")
    s = ts.create_schedule(C.op)
    f = s[C].fuse(*s[C].op.axis)
    fo, fi = s[C].split(f, 8)  # 105 = 13*8 + 1: uneven
    check(s, [A, C], lambda a: 2 * a + a[::-1, :, ::-1])


def test_fuse_list_argument():
    A, B, C, s = gemm_sched()
    s[C].fuse(list(s[C].op.axis))
    check(s, [A, B, C], gemm_ref)


def test_fuse_uneven_split_parts():
    A = ts.placeholder((13, 7), name="A")
    C = ts.compute((13, 7), lambda i, j: A[i, j] - 1.0, name="C")
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    io, ii = s[C].split(i, 4)
    f = s[C].fuse(ii, j)
    fo, fi = s[C].split(f, 5)
    check(s, [A, C], lambda a: a - 1)


def test_fuse_reduce_axes():
    A = ts.placeholder((5, 7, 3), name="A")
    k1 = ts.reduce_axis((0, 7), name="k1")
    k2 = ts.reduce_axis((0, 3), name="k2")
    C = ts.compute((5,), lambda i: ts.sum(A[i, k1, k2], axis=[k1, k2]), name="C")
    s = ts.create_schedule(C.op)
    f = s[C].fuse(k1, k2)
    fo, fi = s[C].split(f, 4)
    check(s, [A, C], lambda a: a.sum(axis=(1, 2)))


# ---------------------------------------------------------------- reorder


@pytest.mark.parametrize("order", ["kij", "ikj", "jki", "jik"])
def test_reorder_root_axes(order):
    A, B, C, s = gemm_sched(7, 5, 3)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    ax = {"i": i, "j": j, "k": k}
    s[C].reorder(*[ax[c] for c in order])
    check(s, [A, B, C], gemm_ref)


def test_reorder_subset_keeps_other_positions():
    A, B, C, s = gemm_sched()
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, ii = s[C].split(i, 4)
    jo, ji = s[C].split(j, 3)
    ko, ki = s[C].split(k, 2)
    s[C].reorder(ki, io)  # only these two swap places
    assert s[C].leaf_iter_vars == [ki, ii, jo, ji, ko, io]
    check(s, [A, B, C], gemm_ref)


def test_reorder_split_reduce_between_data_axes():
    A, B, C, s = gemm_sched()
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, ii = s[C].split(i, 4)
    ko, ki = s[C].split(k, 3)
    s[C].reorder(ko, io, j, ki, ii)
    check(s, [A, B, C], gemm_ref)


# ---------------------------------------------------------------- annotations


def test_unroll_vectorize_parallel():
    A, B, C, s = gemm_sched(37, 29, 19)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, ii = s[C].split(i, 8)
    jo, ji = s[C].split(j, 4)
    ko, ki = s[C].split(k, 4)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[C].parallel(io)
    s[C].unroll(ki)
    s[C].vectorize(ji)
    text = str(ts.lower(s, [A, B, C]))
    assert "parallel (i.outer, 0, 5)" in text
    assert "unrolled (k.inner, 0, 4)" in text
    assert "vectorized (j.inner, 0, 4)" in text
    check(s, [A, B, C], gemm_ref)


def test_unroll_reduce_axis_and_vectorize_uneven():
    A = ts.placeholder((13, 7), name="A")
    k = ts.reduce_axis((0, 7), name="k")
    C = ts.compute((13,), lambda i: ts.sum(A[i, k] * A[i, 6 - k], axis=k), name="C")
    s = ts.create_schedule(C.op)
    (i,) = s[C].op.axis
    io, ii = s[C].split(i, 4)
    s[C].reorder(io, k, ii)
    s[C].unroll(k)
    s[C].vectorize(ii)
    check(s, [A, C], lambda a: (a * a[:, ::-1]).sum(axis=1))


def test_pragma_is_printed_and_keeps_numbers():
    A, B, C, s = gemm_sched(7, 5, 3)
    i, j = s[C].op.axis
    s[C].unroll(j)
    s[C].pragma(j, "unroll_explicit", 0)
    s[C].pragma(i, "auto_unroll_max_step", 16)
    text = str(ts.lower(s, [A, B, C]))
    assert "// pragma unroll_explicit = 0" in text
    assert "// pragma auto_unroll_max_step = 16" in text
    assert text.index("auto_unroll_max_step") < text.index("for (i, 0, 7)")
    check(s, [A, B, C], gemm_ref)


# ---------------------------------------------------------------- bind


def test_bind_blocks_and_threads_uneven():
    A = ts.placeholder((37,), name="A")
    C = ts.compute((37,), lambda i: A[i] * 2.0 + A[36 - i], name="C")
    s = ts.create_schedule(C.op)
    bo, to = s[C].split(C.op.axis[0], 8)
    s[C].bind(bo, thr("blockIdx.x"))
    s[C].bind(to, thr("threadIdx.x"))
    text = str(ts.lower(s, [A, C]))
    assert "// attr [blockIdx.x] thread_extent = 5" in text
    assert "// attr [threadIdx.x] thread_extent = 8" in text
    assert "< 37" in text  # the tail block is guarded
    check(s, [A, C], lambda a: 2 * a + a[::-1])


def test_bind_gemm_2d_grid_with_serial_inner():
    A, B, C, s = gemm_sched(37, 29, 7)
    i, j = s[C].op.axis
    bx, by, tx, ty = s[C].tile(i, j, 8, 4)
    txo, txi = s[C].split(tx, nparts=3)  # 8 does not split evenly into 3 parts
    s[C].reorder(bx, by, txo, ty, txi)
    s[C].bind(bx, thr("blockIdx.x"))
    s[C].bind(by, thr("blockIdx.y"))
    s[C].bind(txo, thr("threadIdx.x"))
    s[C].bind(ty, thr("threadIdx.y"))
    check(s, [A, B, C], gemm_ref)


def test_bind_all_six_tags_3d():
    A = ts.placeholder((3, 5, 7), name="A")
    C = ts.compute((3, 5, 7), lambda i, j, k: A[i, j, k] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    i, j, k = s[C].op.axis
    io, ii = s[C].split(i, 2)
    jo, ji = s[C].split(j, 2)
    ko, ki = s[C].split(k, 4)
    s[C].reorder(io, jo, ko, ii, ji, ki)
    for ax, tag in zip(
        (io, jo, ko, ii, ji, ki),
        ("blockIdx.z", "blockIdx.y", "blockIdx.x", "threadIdx.z", "threadIdx.y", "threadIdx.x"),
    ):
        s[C].bind(ax, thr(tag))
    check(s, [A, C], lambda a: a + 1)


def test_bind_fused_axes():
    A, B, C, s = gemm_sched(13, 11, 5)
    i, j = s[C].op.axis
    xo, yo, xi, yi = s[C].tile(i, j, 4, 3)
    s[C].bind(s[C].fuse(xo, yo), thr("blockIdx.x"))
    s[C].bind(s[C].fuse(xi, yi), thr("threadIdx.x"))
    check(s, [A, B, C], gemm_ref)


def test_bind_two_kernels():
    A = ts.placeholder((13,), name="A")
    B = ts.compute((13,), lambda i: A[i] * 2.0, name="B")
    C = ts.compute((13,), lambda i: B[12 - i] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    for T, n in ((B, 4), (C, 5)):
        o, i = s[T].split(T.op.axis[0], n)
        s[T].bind(o, thr("blockIdx.x"))
        s[T].bind(i, thr("threadIdx.x"))
    check(s, [A, C], lambda a: 2 * a[::-1] + 1)


def test_bind_reduction_with_serial_reduce_inside():
    A = ts.placeholder((37, 13), name="A")
    k = ts.reduce_axis((0, 13), name="k")
    C = ts.compute((37,), lambda i: ts.max(A[i, k], axis=k), name="C")
    s = ts.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], 8)
    s[C].bind(io, thr("blockIdx.x"))
    s[C].bind(ii, thr("threadIdx.x"))
    ko, ki = s[C].split(k, 4)
    s[C].unroll(ki)
    check(s, [A, C], lambda a: a.max(axis=1))


# ---------------------------------------------------------------- compute_at


def test_compute_at_elementwise_producer():
    A, B, C, D = chain2d()
    s = ts.create_schedule(D.op)
    i, j = s[D].op.axis
    io, ii = s[D].split(i, 4)
    s[C].compute_at(s[D], io)
    s[B].compute_at(s[C], s[C].op.axis[1])
    text = str(ts.lower(s, [A, D]))
    assert text.index("produce C") > text.index("for (i.outer, 0, 4)")
    check(s, [A, D], chain_ref)


def test_compute_at_stencil_halo():
    A = ts.placeholder((13,), name="A")
    B = ts.compute((13,), lambda i: A[i] * 2.0, name="B")
    C = ts.compute((11,), lambda i: B[i] + B[i + 2], name="C")
    s = ts.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], 4)
    s[B].compute_at(s[C], io)
    assert "allocate B[float32 * 6]" in str(ts.lower(s, [A, C]))  # 4 + a halo of 2
    check(s, [A, C], lambda a: 2 * a[:11] + 2 * a[2:])


def test_compute_at_strided_reads():
    A = ts.placeholder((27,), name="A")
    B = ts.compute((27,), lambda i: A[i] + 1.0, name="B")
    C = ts.compute((13,), lambda i: B[2 * i] + B[2 * i + 1], name="C")
    s = ts.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], 4)
    s[B].compute_at(s[C], io)
    check(s, [A, C], lambda a: a[0:26:2] + a[1:27:2] + 2)


def test_compute_at_reduction_producer_in_consumer_loop():
    A, B, C = gemm(13, 7, 11)
    D = ts.compute((13, 7), lambda i, j: C[i, j] * 2.0, name="D")
    s = ts.create_schedule(D.op)
    i, j = s[D].op.axis
    io, ii = s[D].split(i, 4)
    jo, ji = s[D].split(j, 3)
    s[D].reorder(io, jo, ii, ji)
    s[C].compute_at(s[D], jo)
    ci, cj = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, 4)
    s[C].reorder(ko, ci, ki, cj)
    check(s, [A, B, D], lambda a, b: 2 * (a @ b))


def test_compute_at_reduction_producer_innermost():
    A, B, C = gemm(7, 5, 13)
    D = ts.compute((7, 5), lambda i, j: C[i, j] + 1.0, name="D")
    s = ts.create_schedule(D.op)
    i, j = s[D].op.axis
    s[C].compute_at(s[D], j)
    assert "allocate C[float32 * 1 * 1]" in str(ts.lower(s, [A, B, D]))
    check(s, [A, B, D], lambda a, b: a @ b + 1)


def test_compute_at_under_threads_is_local():
    A = ts.placeholder((13, 7), name="A")
    B = ts.compute((13, 7), lambda i, j: A[i, j] * 3.0, name="B")
    C = ts.compute((13, 7), lambda i, j: B[i, j] + B[i, 6 - j], name="C")
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    s[C].bind(i, thr("blockIdx.x"))
    s[C].bind(j, thr("threadIdx.x"))
    s[B].compute_at(s[C], j)
    assert "allocate B[float32 * 1 * 7], local" in str(ts.lower(s, [A, C]))
    check(s, [A, C], lambda a: 3 * a + 3 * a[:, ::-1])


def test_compute_root_undoes_compute_at():
    A, B, C, D = chain2d()
    s = ts.create_schedule(D.op)
    s[C].compute_at(s[D], s[D].op.axis[0])
    s[C].compute_root()
    check(s, [A, D], chain_ref)


def test_softmax_compute_at_rows():
    A, mx, ex, sm, out = softmax()
    s = ts.create_schedule(out.op)
    i, j = s[out].op.axis
    for T in (mx, ex, sm):
        s[T].compute_at(s[out], i)
    check(s, [A, out], softmax_ref)


def test_softmax_default_and_inline():
    A, mx, ex, sm, out = softmax()
    check(ts.create_schedule(out.op), [A, out], softmax_ref)
    s = ts.create_schedule(out.op)
    s[ex].compute_inline()
    io, ii = s[out].split(s[out].op.axis[0], 3)
    s[mx].compute_at(s[out], io)
    s[sm].compute_at(s[out], io)
    check(s, [A, out], softmax_ref)


def test_softmax_gpu_shared_rows():
    A, mx, ex, sm, out = softmax()
    s = ts.create_schedule(out.op)
    i, j = s[out].op.axis
    s[out].bind(i, thr("blockIdx.x"))
    jo, ji = s[out].split(j, 4)
    s[out].reorder(i, ji, jo)
    s[out].bind(ji, thr("threadIdx.x"))
    for T in (mx, ex, sm):
        s[T].compute_at(s[out], i)
    _, ej = s[ex].op.axis
    ejo, eji = s[ex].split(ej, 4)
    s[ex].reorder(eji, ejo)
    s[ex].bind(eji, thr("threadIdx.x"))
    text = str(ts.lower(s, [A, out]))
    assert "allocate ex[float32 * 1 * 13], shared" in text
    # sm reads the tile that the work-items fill together: a barrier must separate them
    assert text.index("barrier(shared)", text.index("produce ex")) < text.index("produce sm")
    check(s, [A, out], softmax_ref)


def test_dependent_shared_fills_are_separated_by_a_barrier():
    # B and C are shared tiles filled cooperatively; C reads elements of B written by other
    # work-items, so C may only start after a barrier
    A = ts.placeholder((5, 13), name="A")
    B = ts.compute((5, 13), lambda i, j: A[i, j] * 2.0, name="B")
    C = ts.compute((5, 13), lambda i, j: B[i, 12 - j] + 1.0, name="C")
    D = ts.compute((5, 13), lambda i, j: C[i, j] * C[i, 12 - j], name="D")
    s = ts.create_schedule(D.op)
    i, j = s[D].op.axis
    s[D].bind(i, thr("blockIdx.x"))
    jo, ji = s[D].split(j, nparts=4)
    s[D].bind(jo, thr("threadIdx.x"))
    for T in (B, C):
        s[T].compute_at(s[D], i)
        _, b = s[T].op.axis
        bo, bi = s[T].split(b, nparts=4)
        s[T].bind(bo, thr("threadIdx.x"))
    text = str(ts.lower(s, [A, D]))
    assert text.count("barrier(shared)") == 2
    check(s, [A, D], lambda a: (2 * a[:, ::-1] + 1) * (2 * a + 1))


# ---------------------------------------------------------------- compute_inline


@pytest.mark.parametrize("order", ["BC", "CB"])
def test_compute_inline_chain_any_order(order):
    A, B, C, D = chain2d()
    s = ts.create_schedule(D.op)
    for name in order:
        s[{"B": B, "C": C}[name]].compute_inline()
    text = str(ts.lower(s, [A, D]))
    assert "produce B" not in text and "produce C" not in text
    check(s, [A, D], chain_ref)


def test_compute_inline_into_reduction():
    A = ts.placeholder((7, 13), name="A")
    B = ts.compute((7, 13), lambda i, j: A[i, j] * 2.0, name="B")
    k = ts.reduce_axis((0, 13), name="k")
    C = ts.compute((7,), lambda i: ts.sum(B[i, k] * B[i, 12 - k], axis=k), name="C")
    s = ts.create_schedule(C.op)
    s[B].compute_inline()
    check(s, [A, C], lambda a: 4 * (a * a[:, ::-1]).sum(axis=1))


def test_compute_inline_then_compute_at():
    A, B, C, D = chain2d()
    s = ts.create_schedule(D.op)
    s[B].compute_inline()
    s[C].compute_at(s[D], s[D].op.axis[0])
    check(s, [A, D], chain_ref)


def test_compute_inline_pad_into_conv_like_stencil():
    A = ts.placeholder((5, 7), name="A")
    P = ts.pad(A, [1, 1], name="P")
    C = ts.compute((5, 7), lambda i, j: P[i, j] + P[i + 1, j + 1] + P[i + 2, j + 2], name="C")
    s = ts.create_schedule(C.op)
    s[P].compute_inline()
    check(s, [A, C], lambda a: np.pad(a, 1)[:5, :7] + a + np.pad(a, 1)[2:, 2:])


# ---------------------------------------------------------------- cache_read / cache_write


def test_cache_read_global_two_readers():
    A = ts.placeholder((13, 7), name="A")
    B = ts.compute((13, 7), lambda i, j: A[i, j] * 2.0, name="B")
    C = ts.compute((13, 7), lambda i, j: A[i, j] + B[i, j], name="C")
    s = ts.create_schedule(C.op)
    s.cache_read(A, "global", [B, C])
    check(s, [A, C], lambda a: 3 * a)


def test_cache_read_local_at_reduce_axis():
    A, B, C, s = gemm_sched(7, 5, 13)
    AL = s.cache_read(A, "local", [C])
    BL = s.cache_read(B, "local", [C])
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, 4)
    s[AL].compute_at(s[C], ko)
    s[BL].compute_at(s[C], ko)
    text = str(ts.lower(s, [A, B, C]))
    assert "allocate A.local[float32 * 1 * 4], local" in text
    assert "allocate B.local[float32 * 4 * 1], local" in text
    check(s, [A, B, C], gemm_ref)


def test_cache_read_local_per_thread():
    A, B, C, s = gemm_sched(13, 11, 7)
    AL = s.cache_read(A, "local", [C])
    i, j = s[C].op.axis
    bx, by, tx, ty = s[C].tile(i, j, 4, 3)
    for ax, tag in (
        (bx, "blockIdx.x"),
        (by, "blockIdx.y"),
        (tx, "threadIdx.x"),
        (ty, "threadIdx.y"),
    ):
        s[C].bind(ax, thr(tag))
    s[AL].compute_at(s[C], ty)
    assert "allocate A.local[float32 * 1 * 7], local" in str(ts.lower(s, [A, B, C]))
    check(s, [A, B, C], gemm_ref)


def test_cache_read_of_an_intermediate():
    A = ts.placeholder((13, 7), name="A")
    B = ts.compute((13, 7), lambda i, j: A[i, j] * 2.0, name="B")
    C = ts.compute((13, 7), lambda i, j: B[i, j] + B[12 - i, j], name="C")
    s = ts.create_schedule(C.op)
    BL = s.cache_read(B, "local", [C])
    s[BL].compute_at(s[C], s[C].op.axis[0])
    check(s, [A, C], lambda a: 2 * a + 2 * a[::-1])


def test_cache_read_shared_cooperative_fetch():
    A, B, C, s = gemm_sched(13, 11, 7)
    AA = s.cache_read(A, "shared", [C])
    i, j = s[C].op.axis
    bx, by, tx, ty = s[C].tile(i, j, 4, 4)
    for ax, tag in (
        (bx, "blockIdx.x"),
        (by, "blockIdx.y"),
        (tx, "threadIdx.x"),
        (ty, "threadIdx.y"),
    ):
        s[C].bind(ax, thr(tag))
    s[AA].compute_at(s[C], by)
    a0, a1 = s[AA].op.axis
    s[AA].bind(a0, thr("threadIdx.x"))
    text = str(ts.lower(s, [A, B, C]))
    assert "allocate A.shared[float32 * 4 * 7], shared" in text
    assert "barrier(shared)" in text
    check(s, [A, B, C], gemm_ref)


@pytest.mark.parametrize("M,N,K", [(37, 29, 23), (13, 11, 7), (8, 8, 8)])
def test_gemm_shared_local_full_schedule(M, N, K):
    """The GPU GEMM of /tmp/gemm_shared_example.py: shared tiles filled cooperatively by
    threadIdx, a register block cached with cache_write, vectorized inner loop."""
    A, B, C, s = gemm_sched(M, N, K)
    AA = s.cache_read(A, "shared", [C])
    BB = s.cache_read(B, "shared", [C])
    CL = s.cache_write(C, "local")
    i, j = s[C].op.axis
    bx, by, tx, ty = s[C].tile(i, j, 8, 8)
    tyo, tyi = s[C].split(ty, nparts=4)
    txo, txi = s[C].split(tx, nparts=4)
    s[C].reorder(bx, by, txo, tyo, txi, tyi)
    s[C].bind(bx, thr("blockIdx.x"))
    s[C].bind(by, thr("blockIdx.y"))
    s[C].bind(txo, thr("threadIdx.x"))
    s[C].bind(tyo, thr("threadIdx.y"))
    s[CL].compute_at(s[C], tyo)
    ii, jj = s[CL].op.axis
    (kk,) = s[CL].op.reduce_axis
    ko, ki = s[CL].split(kk, 4)
    s[CL].reorder(ko, ki, ii, jj)
    s[CL].vectorize(jj)
    s[AA].compute_at(s[CL], ko)
    s[BB].compute_at(s[CL], ko)
    for X in (AA, BB):
        a, b = s[X].op.axis
        ao, ai = s[X].split(a, nparts=4)
        bo, bi = s[X].split(b, nparts=4)
        s[X].reorder(ao, bo, ai, bi)
        s[X].bind(ao, thr("threadIdx.x"))
        s[X].bind(bo, thr("threadIdx.y"))
    text = str(ts.lower(s, [A, B, C]))
    assert "allocate C.local[float32 * 2 * 2], local" in text
    assert "allocate A.shared[float32 * 8 * 4], shared" in text
    assert "allocate B.shared[float32 * 4 * 8], shared" in text
    # a barrier after the fills, and one closing the k.outer body (the next iteration's fills
    # must wait until every work-item has read this iteration's tiles)
    assert "barrier(shared)" in text[text.index("produce B.shared") : text.index("for (k.inner")]
    lines = text[text.index("for (k.inner") : text.index("for (i.inner.inner")].splitlines()
    closing = [ln.strip() for ln in lines if ln.strip()]
    assert closing[-3:-1] == ["barrier(shared)", "}"]
    check(s, [A, B, C], gemm_ref)


def test_cache_write_local_at_serial_loop():
    A, B, C, s = gemm_sched(7, 5, 13)
    CL = s.cache_write(C, "local")
    io, ii = s[C].split(s[C].op.axis[0], 3)
    s[CL].compute_at(s[C], io)
    check(s, [A, B, C], gemm_ref)


def test_cache_write_local_at_thread_axis_elementwise():
    A = ts.placeholder((13, 7), name="A")
    B = ts.compute((13, 7), lambda i, j: A[i, j] * 2.0 - A[12 - i, j], name="B")
    s = ts.create_schedule(B.op)
    BL = s.cache_write(B, "local")
    i, j = s[B].op.axis
    io, ii = s[B].split(i, 5)
    s[B].bind(io, thr("blockIdx.x"))
    s[B].bind(ii, thr("threadIdx.x"))
    s[BL].compute_at(s[B], ii)
    assert "allocate B.local[float32 * 1 * 7], local" in str(ts.lower(s, [A, B]))
    check(s, [A, B], lambda a: 2 * a - a[::-1])


# ---------------------------------------------------------------- build of a lowered function


def test_build_lowered_function():
    A, B, C, s = gemm_sched(7, 5, 3)
    func = ts.lower(s, [A, B, C], name="gemm")
    mod = ts.build(func, target="python")
    a = np.arange(21, dtype="float32").reshape(7, 3) - 10
    b = np.arange(15, dtype="float32").reshape(3, 5) * 0.5 - 3
    c = np.full((7, 5), np.nan, "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    assert "def gemm(" in mod.get_source()


def test_argument_order_is_call_order():
    A, B, C, s = gemm_sched(5, 7, 3)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (5, 3)).astype("float32")
    b = rng.uniform(-1, 1, (3, 7)).astype("float32")
    c = np.full((5, 7), np.nan, "float32")
    a0, b0 = a.copy(), b.copy()
    ts.build(s, [C, B, A], target="python")(c, b, a)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(a, a0)  # inputs are left alone
    np.testing.assert_array_equal(b, b0)


def test_intermediate_as_argument_is_written():
    A, B, C, D = chain2d()
    s = ts.create_schedule(D.op)
    check(s, [A, C, D], lambda a: (2 * a + 1, chain_ref(a)))


# ---------------------------------------------------------------- the seed's conv

SMALL = dict(CI=3, IH=6, IW=8, CO=8)


@pytest.fixture(scope="module")
def small_conv():
    return seed_conv.declare(**SMALL)


@pytest.mark.parametrize("kernel_no", [1, 2, 3])
def test_seed_conv_kernels_small(small_conv, kernel_no):
    t = small_conv
    s = seed_conv.schedule(t, kernel_no)
    check(s, [t[0], t[1], t[-1]], lambda d, k: conv_ref(d, k))


def test_seed_conv_default_schedule_with_inlined_pad(small_conv):
    t = small_conv
    s = ts.create_schedule(t[-1].op)
    s[t[2]].compute_inline()
    check(s, [t[0], t[1], t[-1]], lambda d, k: conv_ref(d, k))


def test_seed_conv_num_thread_and_odd_width():
    t = seed_conv.declare(CI=2, IH=5, IW=4, CO=4, VC=2)
    s = seed_conv.schedule(t, 3, num_thread=2)
    check(s, [t[0], t[1], t[-1]], lambda d, k: conv_ref(d, k))


def test_seed_conv_packed_stages_as_arguments(small_conv):
    t = small_conv
    data, kernel, data_pad, data_vec, kernel_vec, conv, output = t
    s = seed_conv.schedule(t, 2)

    def ref(d, k):
        co, ci, kh, kw = k.shape
        kv = k.reshape(co // 4, 4, ci, kh, kw).transpose(0, 2, 3, 4, 1)
        return kv, conv_ref(d, k)

    check(s, [data, kernel, kernel_vec, output], ref)


# ---------------------------------------------------------------- random schedules


@settings(max_examples=30, deadline=None)
@given(
    fi=st.integers(1, 9),
    fj=st.integers(1, 7),
    fk=st.integers(1, 11),
    order=st.permutations(range(6)),
    inner=st.sampled_from(["none", "unroll", "vectorize"]),
    use_nparts=st.booleans(),
)
def test_gemm_random_splits_and_orders(fi, fj, fk, order, inner, use_nparts):
    A, B, C, s = gemm_sched(7, 5, 9)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, ii = s[C].split(i, nparts=fi) if use_nparts else s[C].split(i, fi)
    jo, ji = s[C].split(j, fj)
    ko, ki = s[C].split(k, fk)
    leaves = [io, ii, jo, ji, ko, ki]
    s[C].reorder(*[leaves[p] for p in order])
    last = s[C].leaf_iter_vars[-1]
    if inner == "unroll":
        s[C].unroll(last)
    elif inner == "vectorize" and last.kind != "reduce":
        s[C].vectorize(last)
    check(s, [A, B, C], gemm_ref)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_stencil_random_placement(data):
    """A producer read at shifted positions, placed at a random loop of a randomly split and
    reordered consumer (or inlined, or at the root): bound inference must cover the halo."""
    M, N = data.draw(st.sampled_from([(7, 5), (13, 7), (5, 11)]))
    A = ts.placeholder((M + 2, N + 2), name="A")
    B = ts.compute((M + 2, N + 2), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    reduce = data.draw(st.booleans())
    if reduce:
        k = ts.reduce_axis((0, 3), name="k")
        C = ts.compute((M, N), lambda i, j: ts.sum(B[i + k, j + 2 - k], axis=k), name="C")

        def ref(a):
            b = 2 * a + 1
            return sum(b[q : q + M, 2 - q : 2 - q + N] for q in range(3))
    else:
        C = ts.compute((M, N), lambda i, j: B[i, j] + B[i + 2, j + 1] * B[i + 1, j + 2], name="C")

        def ref(a):
            b = 2 * a + 1
            return b[:M, :N] + b[2:, 1 : N + 1] * b[1 : M + 1, 2:]

    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    io, ii = s[C].split(i, data.draw(st.integers(1, M + 1)))
    jo, ji = s[C].split(j, data.draw(st.integers(1, N + 1)))
    s[C].reorder(*data.draw(st.permutations(s[C].leaf_iter_vars)))
    where = data.draw(st.sampled_from(["root", "at", "inline"]))
    if where == "at":
        s[B].compute_at(s[C], data.draw(st.sampled_from(s[C].leaf_iter_vars)))
        if data.draw(st.booleans()):
            s[B].split(s[B].op.axis[1], data.draw(st.integers(1, 4)))
    elif where == "inline":
        s[B].compute_inline()
    check(s, [A, C], ref)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_gemm_gpu_random_tiles_and_caches(data):
    """Random GPU GEMM schedules: tiles bound to blocks and threads, an optional register
    block (cache_write) and an optional shared/local cache of A placed at a random loop."""
    M, N, K = data.draw(st.sampled_from([(13, 11, 7), (9, 6, 5), (16, 8, 4)]))
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    scope = data.draw(st.sampled_from(["shared", "local", None]))
    AA = s.cache_read(A, scope, [C]) if scope else None
    CL = s.cache_write(C, "local") if data.draw(st.booleans()) else None
    i, j = s[C].op.axis
    bx, by, tx, ty = s[C].tile(i, j, data.draw(st.integers(1, 8)), data.draw(st.integers(1, 8)))
    for ax, tag in (
        (bx, "blockIdx.x"),
        (by, "blockIdx.y"),
        (tx, "threadIdx.x"),
        (ty, "threadIdx.y"),
    ):
        s[C].bind(ax, thr(tag))
    host = C
    if CL is not None:
        s[CL].compute_at(s[C], data.draw(st.sampled_from([by, ty])))
        host = CL
    if AA is not None:
        (k,) = s[host].op.reduce_axis
        s[host].split(k, data.draw(st.integers(1, K + 1)))
        places = [
            x
            for x in s[host].leaf_iter_vars
            if not (host is C and scope == "shared" and x in (tx, ty))
        ]
        s[AA].compute_at(s[host], data.draw(st.sampled_from(places)))
        if scope == "shared" and data.draw(st.booleans()):
            a0o, _ = s[AA].split(s[AA].op.axis[0], nparts=data.draw(st.integers(1, 4)))
            s[AA].bind(a0o, thr("threadIdx.x"))
    try:
        ts.lower(s, [A, B, C])
    except ts.LoweringError as e:
        # the cooperative fetch asked for another number of work-items than the kernel has
        assert "in the same kernel" in str(e) or "the enclosing kernel runs only" in str(e)
        return
    check(s, [A, B, C], gemm_ref)


def test_explicit_unrolling_pass_keeps_the_numbers():
    """The unroll pass used by the OpenCL code generator writes unrolled loops out; running its
    output with the python target gives the same numbers."""
    import dataclasses

    from tensorsched.passes import unroll_loops

    A, B, C, s = gemm_sched(7, 5, 11)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    jo, ji = s[C].split(j, 3)
    ko, ki = s[C].split(k, 4)
    s[C].reorder(i, jo, ko, ki, ji)
    s[C].unroll(ki)
    s[C].unroll(ji)
    func = ts.lower(s, [A, B, C])
    unrolled = dataclasses.replace(func, body=unroll_loops(func.body))
    text = str(unrolled)
    assert "unrolled" not in text and "k.inner" not in text
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (7, 11)).astype("float32")
    b = rng.uniform(-1, 1, (11, 5)).astype("float32")
    c = np.full((7, 5), np.nan, "float32")
    ts.build(unrolled, target="python")(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_a_one_group_kernel_with_a_barrier_between_its_work_item_loops():
    """A stage bound to threadIdx alone (one work-group) whose input is staged through
    ``__local`` memory at a virtual-thread axis: the ``__local`` buffer and the barrier lie
    between two loops over the work-items, outside both, and belong to the kernel on every
    target (the python target ran them as the host's and never ran the kernel; the fuzzer
    found it)."""
    A = ts.placeholder((2, 8), name="A")
    B = ts.compute((2, 8), lambda i, j: A[i, j] * 2.0, name="B")
    C = ts.compute((2, 8), lambda i, j: B[i, j] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    i, j = s[B].op.axis
    s[B].bind(i, ts.thread_axis("vthread", name="vx"))
    s[B].bind(j, ts.thread_axis("threadIdx.x"))
    AS = s.cache_read(A, "shared", [B])
    s[AS].compute_at(s[B], i)
    _, a1 = s[AS].op.axis
    s[AS].bind(a1, ts.thread_axis("threadIdx.x"))
    ci, cj = s[C].op.axis
    s[C].bind(ci, ts.thread_axis("blockIdx.x"))
    s[C].bind(cj, ts.thread_axis("threadIdx.x"))
    a = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    for target in ("python", "opencl"):
        out = np.full((2, 8), np.nan, np.float32)
        ts.build(s, [A, C], target=target)(a, out)
        np.testing.assert_allclose(out, a * 2 + 1, rtol=1e-6, err_msg=target)


def _gemm_k_split(M, N, K, parts):
    """``(A, B, C, s, P)``: a GEMM whose K is split in ``parts``, the parts ``rfactor``-ed
    into the stage of partial sums ``P``."""
    A, B, C = gemm(M, N, K)
    s = ts.create_schedule(C.op)
    ko, _ = s[C].split(C.op.reduce_axis[0], nparts=parts)
    return A, B, C, s, s.rfactor(C, ko)


def _blocks_of_64_items(s, T, tile, tags):
    """``T``'s two axes split into ``tile`` x ``tile`` blocks bound to ``tags`` (rows,
    columns), each block's points spread over 64 work-items; returns the two block axes."""
    i, j = T.op.axis
    by, ii = s[T].split(i, tile)
    bx, jj = s[T].split(j, tile)
    s[T].reorder(by, bx, ii, jj)
    rest, item = s[T].split(s[T].fuse(ii, jj), 64)
    s[T].reorder(item, rest)
    s[T].bind(by, ts.thread_axis(tags[0]))
    s[T].bind(bx, ts.thread_axis(tags[1]))
    s[T].bind(item, ts.thread_axis("threadIdx.x"))
    return by, bx


def _split_k_in_one_kernel(M, N, K, parts=4, tile=16, scope="global"):
    """``rfactor`` over a K split bound to blockIdx.z, its partial products computed at the
    output's work-group axis in ``scope`` memory, the output's tile spread over 64 work-items."""
    A, B, C, s, P = _gemm_k_split(M, N, K, parts)
    _, bx = _blocks_of_64_items(s, C, tile, ("blockIdx.y", "blockIdx.x"))
    s[P].compute_at(s[C], bx)
    s[P].set_scope(scope)
    z, pi, pj = s[P].op.axis
    s[P].bind(z, ts.thread_axis("blockIdx.z"))
    _, pitem = s[P].split(s[P].fuse(pi, pj), 64)
    s[P].bind(pitem, ts.thread_axis("threadIdx.x"))
    return s, [A, B, C]


def test_a_global_stage_spread_over_work_groups_of_its_own_is_added_by_the_last_of_them():
    """A global stage computed at a work-group axis of its consumer, with an axis bound to a
    block index that the consumer does not bind (a K split over blockIdx.z): each of its
    work-groups computes its part of the consumer's tile into the whole array, and the
    consumer's code after it is run by the last of them to arrive (``last_group`` in the IR,
    an atomic counter per tile in OpenCL): one kernel, right on both targets and on a second
    call, and the printed IR reads back as the same function."""
    from tensorsched.ir.parser import check_roundtrip

    M, N, K = 40, 48, 61
    s, args = _split_k_in_one_kernel(M, N, K)
    func = ts.lower(s, args)
    text = str(func)
    assert "allocate C.rf[float32 * 4 * 40 * 48], global" in text
    assert "last_group (C.rf.arrivals[blockIdx.y*3 + blockIdx.x], blockIdx.z, 4) {" in text
    check_roundtrip(func)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    for target in ("python", "opencl"):
        mod = ts.build(s, args, target=target)
        for _ in range(2):
            out = np.full((M, N), np.nan, np.float32)
            mod(a, b, out)
            np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    assert ts.build(s, args, target="opencl").get_source().count("__kernel") == 1


def test_a_spread_stage_leaves_a_thread_tag_it_does_not_bind_to_one_work_item():
    """The fuzzer's case: partial sums spread over work-groups whose own loops bind
    threadIdx.x but not the consumer's threadIdx.y. Each work-group's part is a work-group
    tile, as a ``shared`` stage's is: work-item 0 along threadIdx.y computes it (every one
    of them did, adding its products 16 times on the python target, racing in OpenCL)."""
    M, N, K = 40, 48, 61
    A, B, C, s, P = _gemm_k_split(M, N, K, 3)
    by, bx, ty, tx = s[C].tile(*C.op.axis, 16, 16)
    for axis, tag in (
        (by, "blockIdx.y"),
        (bx, "blockIdx.x"),
        (ty, "threadIdx.y"),
        (tx, "threadIdx.x"),
    ):
        s[C].bind(axis, ts.thread_axis(tag))
    s[P].set_scope("global")
    s[P].compute_at(s[C], bx)
    z, _, pj = s[P].op.axis
    s[P].bind(z, ts.thread_axis("blockIdx.z"))
    s[P].bind(pj, ts.thread_axis("threadIdx.x"))
    text = str(ts.lower(s, [A, B, C]))
    assert "if (threadIdx.y == 0 && " in text
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    for target in ("python", "opencl"):
        out = np.full((M, N), np.nan, np.float32)
        ts.build(s, [A, B, C], target=target)(a, b, out)
        np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_a_kernel_with_a_last_group_is_not_copied_into_interior_and_border_branches():
    """The fuzzer's case (PoCL): the output's tile overhangs it, so ``specialize_interior``
    made the kernel ``if (interior) {...} else {...}``, each copy with its own arrival (a
    barrier, an atomic counter): PoCL left the interior groups' outputs unwritten. A body with
    a ``last_group`` is left whole, as one with a barrier is."""
    M, N, K = 7, 1, 1
    A, B, C, s, P = _gemm_k_split(M, N, K, 1)
    io, jo, ii, ji = s[C].tile(*C.op.axis, 5, 1)
    iio, iii = s[C].split(ii, nparts=3)
    s[C].reorder(io, jo, iio, iii, ji)
    s[C].bind(iio, ts.thread_axis("vthread", name="vx"))
    for axis, tag in ((io, "blockIdx.y"), (jo, "blockIdx.x"), (iii, "threadIdx.y")):
        s[C].bind(axis, ts.thread_axis(tag))
    s[P].bind(s[P].op.axis[0], ts.thread_axis("blockIdx.z"))
    s[P].set_scope("global")
    s[P].compute_at(s[C], jo)
    mod = ts.build(s, [A, B, C], target="opencl")
    assert mod.get_source().count("ts_last_group =") == 1
    rng = np.random.default_rng(2)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    out = np.full((M, N), np.nan, np.float32)
    mod(a, b, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-6)


def test_a_work_group_stage_bound_to_a_block_index_of_its_own_is_refused():
    """The same schedule with the partial products in ``__local`` memory (each work-group's
    own copy) cannot spread them over work-groups: the error says so."""
    s, args = _split_k_in_one_kernel(40, 48, 61, scope="shared")
    with pytest.raises(ts.TensorschedError, match="private to one work-group"):
        ts.lower(s, args)


def test_a_stage_spread_over_work_groups_inside_a_loop_is_refused():
    """Computed inside a serial loop of its consumer, a work-group would arrive at the
    consumer's code once per iteration, overwriting its part before the others had read it:
    refused, saying where to compute it."""
    M, N, K = 40, 48, 61
    A, B, C, s, P = _gemm_k_split(M, N, K, 4)
    i, j = C.op.axis
    bx, jj = s[C].split(j, 16)
    s[C].reorder(bx, i, jj)
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[P].compute_at(s[C], i)  # a serial loop over the rows, in every work-item
    s[P].set_scope("global")
    s[P].bind(s[P].op.axis[0], ts.thread_axis("blockIdx.z"))
    with pytest.raises(ts.TensorschedError, match="inside loop 'i'"):
        ts.lower(s, [A, B, C])


def test_register_staged_tiles_of_a_short_k_loop_match_numpy_on_every_target():
    """The fuzzer's case (``--fuzz-long``): a conv whose 3-step reduction fills two
    ``__local`` tiles through registers (``double_buffer("local")``) on three work-items with
    virtual threads. PoCL 3.1 miscompiled the loop while the tiles' stores were skipped in its
    last iteration (a test of the step between its two barriers; right under Oclgrind and on
    the python target); they now run in every iteration, writing the same values again."""
    from tensorsched.ops.conv2d import ConvShape, conv2d_nchw, conv2d_ref, stages_by_name

    shape = ConvShape(N=1, CI=3, IH=1, IW=1, CO=5, KH=1, KW=1, stride=1, pad=0)
    data, kernel, conv = conv2d_nchw(shape)
    data_pad = stages_by_name(conv)["data_pad"]
    s = ts.create_schedule(conv.op)
    n, co, _, _ = s[conv].op.axis
    no, coo, ni, coi = s[conv].tile(n, co, x_factor=1, y_factor=5)
    cv, ct = s[conv].split(coi, nparts=2)
    s[conv].reorder(no, coo, cv, ni, ct)
    s[conv].bind(cv, ts.thread_axis("vthread", name="vx"))
    s[conv].bind(no, ts.thread_axis("blockIdx.y"))
    s[conv].bind(coo, ts.thread_axis("blockIdx.x"))
    s[conv].bind(ni, ts.thread_axis("threadIdx.y"))
    s[conv].bind(ct, ts.thread_axis("threadIdx.x"))
    ci, _, _ = s[conv].op.reduce_axis
    cio, _ = s[conv].split(ci, factor=1)
    for t, mode in ((data_pad, "shared"), (kernel, "local")):
        tile = s.cache_read(t, "shared", [conv])
        s[tile].compute_at(s[conv], cio)
        s[tile].double_buffer(mode)
        a0, a1, _, _ = s[tile].op.axis
        a0o, _ = s[tile].split(a0, nparts=3)
        a1o, _ = s[tile].split(a1, nparts=1)
        s[tile].reorder(a0o, a1o)
        s[tile].bind(a0o, ts.thread_axis("threadIdx.x"))
        s[tile].bind(a1o, ts.thread_axis("threadIdx.y"))
    rng = np.random.default_rng(0)
    d = rng.standard_normal((1, 3, 1, 1)).astype(np.float32)
    w = rng.standard_normal((5, 3, 1, 1)).astype(np.float32)
    want = conv2d_ref(d.astype(np.float64), w.astype(np.float64), stride=1, pad=0)
    for target in ("python", "opencl"):
        out = np.full((1, 5, 1, 1), np.nan, np.float32)
        ts.build(s, [data, kernel, conv], target=target)(d, w, out)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6, err_msg=target)


def test_a_stage_spread_over_work_groups_outside_a_block_axis_is_refused():
    """Row sums split over blockIdx.z computed at the output's blockIdx.x axis, outside its
    blockIdx.y axis: the groups along blockIdx.y would arrive at one counter too (4 x 3
    arrivals where 4 are counted): refused, saying where to compute it."""
    M, N, K = 32, 48, 64
    A, B, R, D, s, P = row_sums_added(M, N, K, parts=4)
    by, bx = _blocks_of_64_items(s, D, 16, ("blockIdx.x", "blockIdx.y"))
    s[P].compute_at(s[D], by)
    s[P].set_scope("global")
    s[P].bind(s[P].op.axis[0], ts.thread_axis("blockIdx.z"))
    s[R].compute_at(s[D], bx)
    with pytest.raises(ts.TensorschedError, match="outside the axis of 'D' bound to blockIdx.y"):
        ts.lower(s, [A, B, D])
