"""One test per error a user can cause: the exception class (a ``ts.TensorschedError``
subclass) and the key words of its message (the stage, the axis, what to do instead).

An AttributeError, KeyError, TypeError or AssertionError from deep inside would be a bug:
``raises`` fails on those with the traceback of the leak.
"""

import contextlib
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ts_check import check, gemm

import tensorsched as ts

LEAKS = (AttributeError, KeyError, AssertionError, TypeError, IndexError, ValueError, NameError)


@contextlib.contextmanager
def raises(cls, *words):
    """The block raises ``cls`` (a TensorschedError subclass) whose message holds ``words``."""
    assert issubclass(cls, ts.TensorschedError)
    try:
        yield
    except cls as e:
        msg = str(e)
        for w in words:
            assert w in msg, f"{w!r} not in message: {msg}"
        return
    except LEAKS as e:  # pragma: no cover
        raise AssertionError(f"internal {type(e).__name__} leaked to the user: {e}") from e
    raise AssertionError(f"no {cls.__name__} raised")  # pragma: no cover


def thr(tag):
    return ts.thread_axis(tag)


def gemm_s(M=7, N=5, K=3):
    A, B, C = gemm(M, N, K)
    return A, B, C, ts.create_schedule(C.op)


def chain():
    """A -> B -> C (B an intermediate stage)."""
    A = ts.placeholder((5,), name="A")
    B = ts.compute((5,), lambda i: A[i] * 2.0, name="B")
    C = ts.compute((5,), lambda i: B[i] + 1.0, name="C")
    return A, B, C, ts.create_schedule(C.op)


# ---------------------------------------------------------------- split / tile


def test_split_axis_of_another_stage():
    A, B, C, s = chain()
    with raises(
        ts.ScheduleError, "split", "stage 'C'", "'i'", "belongs to stage 'B'", "s[C].op.axis"
    ):
        s[C].split(s[B].op.axis[0], 2)


def test_split_already_split_axis():
    A, B, C, s = gemm_s()
    i, _ = s[C].op.axis
    s[C].split(i, 2)
    with raises(
        ts.ScheduleError,
        "stage 'C'",
        "axis 'i'",
        "already split",
        "use the axes that split returned",
    ):
        s[C].split(i, 3)


def test_split_already_fused_axis():
    A, B, C, s = gemm_s()
    i, j = s[C].op.axis
    s[C].fuse(i, j)
    with raises(ts.ScheduleError, "stage 'C'", "axis 'j'", "already fused"):
        s[C].split(j, 3)


@pytest.mark.parametrize("factor", [0, -2, 2.0, 2.5, True, "4"])
def test_split_bad_factor(factor):
    A, B, C, s = gemm_s()
    with raises(
        ts.ScheduleError,
        "split",
        "stage 'C'",
        "axis 'i'",
        "factor",
        "must be a positive int",
        repr(factor),
    ):
        s[C].split(s[C].op.axis[0], factor)


def test_split_bad_nparts():
    A, B, C, s = gemm_s()
    with raises(ts.ScheduleError, "stage 'C'", "nparts must be a positive int", "0"):
        s[C].split(s[C].op.axis[0], nparts=0)


def test_split_both_factor_and_nparts():
    A, B, C, s = gemm_s()
    with raises(ts.ScheduleError, "stage 'C'", "axis 'i'", "exactly one of factor= or nparts="):
        s[C].split(s[C].op.axis[0], factor=2, nparts=2)


def test_split_neither_factor_nor_nparts():
    A, B, C, s = gemm_s()
    with raises(ts.ScheduleError, "stage 'C'", "exactly one of factor= or nparts="):
        s[C].split(s[C].op.axis[0])


def test_split_not_an_axis():
    A, B, C, s = gemm_s()
    i, _ = s[C].op.axis
    with raises(ts.ScheduleError, "split", "stage 'C'", "expected an axis", "s[T].op.axis"):
        s[C].split(i + 1, 2)


def test_split_of_a_bound_axis():
    A, B, C, s = gemm_s()
    i, _ = s[C].op.axis
    s[C].bind(i, thr("blockIdx.x"))
    with raises(
        ts.ScheduleError,
        "split",
        "stage 'C'",
        "axis 'i'",
        "bound to blockIdx.x",
        "call split first",
    ):
        s[C].split(i, 2)


def test_tile_same_axis_twice():
    A, B, C, s = gemm_s()
    i, _ = s[C].op.axis
    with raises(ts.ScheduleError, "stage 'C'", "axis 'i'", "already split"):
        s[C].tile(i, i, 2, 2)


# ---------------------------------------------------------------- bind


def test_bind_one_axis_twice():
    A, B, C, s = gemm_s()
    i, _ = s[C].op.axis
    s[C].bind(i, thr("blockIdx.x"))
    with raises(ts.ScheduleError, "bind", "stage 'C'", "axis 'i'", "already bound to blockIdx.x"):
        s[C].bind(i, thr("blockIdx.y"))


def test_bind_same_tag_twice_in_a_stage():
    A, B, C, s = gemm_s()
    i, j = s[C].op.axis
    s[C].bind(i, thr("threadIdx.x"))
    with raises(
        ts.ScheduleError,
        "stage 'C'",
        "axis 'j'",
        "threadIdx.x is already bound to axis 'i'",
        "bind another tag",
    ):
        s[C].bind(j, thr("threadIdx.x"))


@pytest.mark.parametrize("tag", ["threadIdx.w", "blockidx.x", "vthread.x", "threadIdx"])
def test_unknown_thread_tag(tag):
    with raises(ts.ScheduleError, f"unknown thread tag '{tag}'", "blockIdx.x", "threadIdx.z"):
        ts.thread_axis(tag)


def test_bind_reduce_axis():
    A, B, C, s = gemm_s()
    (k,) = s[C].op.reduce_axis
    with raises(ts.ScheduleError, "bind", "stage 'C'", "axis 'k'", "reduction axis", "blockIdx.x"):
        s[C].bind(k, thr("blockIdx.x"))


def test_bind_to_a_string():
    A, B, C, s = gemm_s()
    with raises(ts.ScheduleError, "stage 'C'", "ts.thread_axis(tag)", "'blockIdx.x'"):
        s[C].bind(s[C].op.axis[0], "blockIdx.x")


def test_bind_a_vectorized_axis():
    A, B, C, s = gemm_s()
    _, j = s[C].op.axis
    s[C].vectorize(j)
    with raises(ts.ScheduleError, "bind", "stage 'C'", "axis 'j'", "vectorized"):
        s[C].bind(j, thr("threadIdx.x"))


def test_global_stage_at_a_serial_loop_outside_the_thread_axes():
    # a blockIdx axis may sit inside a serial loop since round 6 (tests/test_tvm_port6.py),
    # but a global stage computed at that loop would be filled by every work-item at once
    A, B, C, s = gemm_s()
    i, j = s[C].op.axis
    AA = s.cache_read(A, "global", [C])
    s[C].bind(j, thr("blockIdx.x"))
    s[AA].compute_at(s[C], i)
    with raises(
        ts.ScheduleError,
        "compute_at",
        "stage 'A.global'",
        "'i' of 'C'",
        "blockIdx.x",
        "give it scope 'local'",
    ):
        ts.lower(s, [A, B, C])


def test_bound_axis_inside_reduction_loop():
    A, B, C, s = gemm_s()
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, ii = s[C].split(i, 2)
    s[C].reorder(io, j, k, ii)
    s[C].bind(io, thr("blockIdx.x"))
    s[C].bind(j, thr("blockIdx.y"))
    s[C].bind(ii, thr("threadIdx.x"))
    with raises(ts.ScheduleError, "stage 'C'", "'i.inner'", "threadIdx.x"):
        ts.lower(s, [A, B, C])


def test_thread_extent_mismatch_in_one_kernel():
    A, B, C, s = gemm_s(13, 11, 7)
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
    a0, _ = s[AA].op.axis
    a0o, a0i = s[AA].split(a0, nparts=2)  # 2 work-items, but the kernel has 4
    s[AA].bind(a0o, thr("threadIdx.x"))
    with raises(
        ts.LoweringError,
        "stage 'A.shared'",
        "'ax0.outer'",
        "threadIdx.x",
        "extent 2",
        "stage 'C'",
        "'i.inner'",
        "extent 4",
        "same extent",
    ):
        ts.lower(s, [A, B, C])


def test_nested_thread_extent_larger_than_kernel():
    A = ts.placeholder((13, 7), name="A")
    B = ts.compute((13, 7), lambda i, j: A[i, j] * 3.0, name="B")
    C = ts.compute((13, 7), lambda i, j: B[i, j] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    s[C].bind(i, thr("blockIdx.x"))
    jo, ji = s[C].split(j, 2)
    s[C].reorder(i, ji, jo)
    s[C].bind(ji, thr("threadIdx.x"))
    s[B].compute_at(s[C], ji)
    s[B].set_scope("shared")
    _, bj = s[B].op.axis
    s[B].bind(bj, thr("threadIdx.x"))  # 7 work-items inside a kernel of 2
    with raises(
        ts.LoweringError,
        "stage 'B'",
        "axis 'j'",
        "threadIdx.x",
        "extent 7",
        "only 2",
        "split factor of at most 2",
    ):
        ts.lower(s, [A, C])


def test_bind_thread_axis_of_a_local_stage():
    A = ts.placeholder((8, 6), name="A")
    B = ts.compute((8, 6), lambda i, j: A[i, j] * 3.0, name="B")
    C = ts.compute((8, 6), lambda i, j: B[i, j] + B[i, 5 - j], name="C")
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    s[C].bind(i, thr("blockIdx.x"))
    s[C].bind(j, thr("threadIdx.x"))
    s[B].compute_at(s[C], j)  # under a thread axis: private memory
    s[B].bind(s[B].op.axis[1], thr("threadIdx.y"))  # a tag C does not bind (TVM allows its own)
    with raises(
        ts.ScheduleError,
        "bind",
        "stage 'B'",
        "axis 'j'",
        "threadIdx.y",
        "'local'",
        "private to one work-item",
        "scope 'shared'",
        "at a consumer that binds threadIdx.y",
    ):
        ts.lower(s, [A, C])


def test_attached_stage_binds_a_tag_its_kernel_does_not():
    A, B, C, s = gemm_s(7, 5, 6)
    AA = s.cache_read(A, "shared", [C])
    i, j = s[C].op.axis
    s[C].bind(i, thr("blockIdx.x"))
    s[AA].compute_at(s[C], i)
    s[AA].bind(s[AA].op.axis[1], thr("threadIdx.x"))  # C never binds threadIdx.x
    with raises(
        ts.ScheduleError,
        "bind",
        "stage 'A.shared'",
        "axis 'ax1'",
        "threadIdx.x",
        "stage 'C'",
        "binds no axis to threadIdx.x",
        "bind an axis of 'C'",
    ):
        ts.lower(s, [A, B, C])


def test_shared_stage_in_a_kernel_without_thread_axes():
    A, B, C, s = gemm_s(7, 5, 6)
    AA = s.cache_read(A, "shared", [C])
    s[AA].compute_at(s[C], s[C].op.axis[0])
    with raises(
        ts.LoweringError,
        "stage 'A.shared'",
        "scope 'shared'",
        "'C'",
        "forget to bind",
        "blockIdx/threadIdx",
        "scope 'local'",
    ):
        ts.lower(s, [A, B, C])


def test_bind_block_axis_of_a_shared_stage():
    A, B, C, s = gemm_s(8, 8, 4)
    AA = s.cache_read(A, "shared", [C])
    i, j = s[C].op.axis
    s[C].bind(i, thr("blockIdx.x"))
    s[C].bind(j, thr("threadIdx.x"))
    s[AA].compute_at(s[C], i)
    s[AA].bind(s[AA].op.axis[1], thr("blockIdx.y"))
    with raises(
        ts.ScheduleError,
        "stage 'A.shared'",
        "axis 'ax1'",
        "blockIdx.y",
        "'shared'",
        "work-group",
        "drop the binding",
    ):
        ts.lower(s, [A, B, C])


# ---------------------------------------------------------------- reorder / fuse


def test_reorder_repeated_axis():
    A, B, C, s = gemm_s()
    i, j = s[C].op.axis
    with raises(ts.ScheduleError, "reorder", "stage 'C'", "axis 'i'", "listed twice"):
        s[C].reorder(i, j, i)


def test_reorder_axis_of_another_stage():
    A, B, C, s = chain()
    with raises(ts.ScheduleError, "reorder", "stage 'C'", "'i'", "belongs to stage 'B'"):
        s[C].reorder(s[C].op.axis[0], s[B].op.axis[0])


def test_fuse_non_adjacent_axes():
    A, B, C, s = gemm_s()
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    s[C].reorder(i, k, j)
    with raises(
        ts.ScheduleError, "fuse", "stage 'C'", "'i' and 'j' are not adjacent", "reorder them first"
    ):
        s[C].fuse(i, j)


def test_fuse_inner_before_outer():
    A, B, C, s = gemm_s()
    i, j = s[C].op.axis
    with raises(ts.ScheduleError, "fuse", "'j' and 'i' are not adjacent (outer first)"):
        s[C].fuse(j, i)


def test_fuse_data_with_reduce_axis():
    A, B, C, s = gemm_s()
    _, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    with raises(ts.ScheduleError, "fuse", "stage 'C'", "axis 'k'", "data axis with a reduce"):
        s[C].fuse(j, k)


# ---------------------------------------------------------------- annotations


def test_vectorize_reduce_axis():
    A, B, C, s = gemm_s()
    (k,) = s[C].op.reduce_axis
    with raises(
        ts.ScheduleError,
        "vectorize",
        "stage 'C'",
        "axis 'k'",
        "reduction axis",
        "vectorize a data axis",
    ):
        s[C].vectorize(k)


def test_parallel_reduce_axis():
    A, B, C, s = gemm_s()
    (k,) = s[C].op.reduce_axis
    with raises(ts.ScheduleError, "parallel", "stage 'C'", "axis 'k'", "reduction axis"):
        s[C].parallel(k)


def test_vectorize_a_bound_axis():
    A, B, C, s = gemm_s()
    i, _ = s[C].op.axis
    s[C].bind(i, thr("blockIdx.x"))
    with raises(ts.ScheduleError, "vectorize", "stage 'C'", "axis 'i'", "bound to blockIdx.x"):
        s[C].vectorize(i)


@pytest.mark.parametrize(
    "primitive", ["unroll", "vectorize", "parallel", "split", "fuse", "reorder", "bind", "pragma"]
)
def test_primitive_on_inlined_stage(primitive):
    A, B, C, s = chain()
    s[B].compute_inline()
    ax = s[B].op.axis[0]
    call = {
        "unroll": lambda: s[B].unroll(ax),
        "vectorize": lambda: s[B].vectorize(ax),
        "parallel": lambda: s[B].parallel(ax),
        "split": lambda: s[B].split(ax, 2),
        "fuse": lambda: s[B].fuse(ax, ax),
        "reorder": lambda: s[B].reorder(ax),
        "bind": lambda: s[B].bind(ax, thr("threadIdx.x")),
        "pragma": lambda: s[B].pragma(ax, "unroll_explicit"),
    }[primitive]
    with raises(ts.ScheduleError, primitive, "stage 'B'", "inlined (compute_inline)"):
        call()


def test_pragma_key_not_a_string():
    A, B, C, s = gemm_s()
    with raises(ts.ScheduleError, "pragma", "stage 'C'", "axis 'i'", "must be a string"):
        s[C].pragma(s[C].op.axis[0], 3)


# ---------------------------------------------------------------- compute_at / compute_inline


def test_compute_at_non_consumer():
    A = ts.placeholder((5,), name="A")
    B = ts.compute((5,), lambda i: A[i] * 2.0, name="B")
    C = ts.compute((5,), lambda i: A[i] + 1.0, name="C")
    D = ts.compute((5,), lambda i: B[i] * C[i], name="D")
    s = ts.create_schedule(D.op)
    with raises(
        ts.ScheduleError,
        "compute_at",
        "stage 'B'",
        "stage 'C' does not read 'B'",
        "at a stage that consumes it",
    ):
        s[B].compute_at(s[C], s[C].op.axis[0])


def test_compute_at_an_output():
    A, B, C, s = chain()
    s = ts.create_schedule([B.op, C.op])
    with raises(ts.ScheduleError, "compute_at", "stage 'B'", "output", "at the root"):
        s[B].compute_at(s[C], s[C].op.axis[0])


def test_compute_at_axis_of_wrong_stage():
    A, B, C, s = chain()
    with raises(ts.ScheduleError, "compute_at", "stage 'C'", "'i'", "belongs to stage 'B'"):
        s[B].compute_at(s[C], s[B].op.axis[0])


def test_compute_at_tensor_instead_of_stage():
    A, B, C, s = chain()
    with raises(ts.ScheduleError, "compute_at", "stage 'B'", "must be a stage (s[T])"):
        s[B].compute_at(C, s[C].op.axis[0])


def test_compute_at_itself():
    A, B, C, s = chain()
    with raises(ts.ScheduleError, "compute_at", "stage 'B'", "inside itself"):
        s[B].compute_at(s[B], s[B].op.axis[0])


def test_compute_at_stage_of_another_schedule():
    A, B, C, s = chain()
    s2 = ts.create_schedule(C.op)
    with raises(
        ts.ScheduleError, "compute_at", "stage 'B'", "stage 'C' belongs to another schedule"
    ):
        s[B].compute_at(s2[C], s2[C].op.axis[0])


def test_compute_at_axis_fused_afterwards_as_the_outer_operand():
    # (an axis split afterwards stands for its inner loop, as in TVM: tests/test_tvm_port5.py)
    A = ts.placeholder((5, 3), name="A")
    B = ts.compute((5, 3), lambda i, j: A[i, j] * 2.0, name="B")
    C = ts.compute((5, 3), lambda i, j: B[i, j] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    s[B].compute_at(s[C], i)
    s[C].fuse(i, j)
    with raises(
        ts.ScheduleError,
        "compute_at",
        "stage 'B'",
        "axis 'i' of stage 'C' was split or fused",
        "attach to one of its current loops",
    ):
        ts.lower(s, [A, C])


def test_compute_at_with_a_second_consumer_outside():
    A = ts.placeholder((5,), name="A")
    B = ts.compute((5,), lambda i: A[i] * 2.0, name="B")
    C = ts.compute((5,), lambda i: B[i] + 1.0, name="C")
    D = ts.compute((5,), lambda i: B[i] * C[i], name="D")
    s = ts.create_schedule(D.op)
    s[B].compute_at(s[C], s[C].op.axis[0])
    with raises(
        ts.ScheduleError,
        "compute_at",
        "stage 'B'",
        "also read by stage 'D'",
        "not computed inside 'C'",
    ):
        ts.lower(s, [A, D])


def test_compute_at_stage_that_is_inlined():
    A = ts.placeholder((5,), name="A")
    B = ts.compute((5,), lambda i: A[i] * 2.0, name="B")
    C = ts.compute((5,), lambda i: B[i] + 1.0, name="C")
    D = ts.compute((5,), lambda i: C[i] * 2.0, name="D")
    s = ts.create_schedule(D.op)
    s[C].compute_inline()
    with raises(
        ts.ScheduleError,
        "compute_at",
        "stage 'B'",
        "stage 'C' was inlined",
        "attach it to a stage that has loops",
    ):
        s[B].compute_at(s[C], s[C].op.axis[0])


def test_compute_inline_a_stage_with_attached_stages():
    A = ts.placeholder((5,), name="A")
    B = ts.compute((5,), lambda i: A[i] * 2.0, name="B")
    C = ts.compute((5,), lambda i: B[i] + 1.0, name="C")
    D = ts.compute((5,), lambda i: C[i] * 2.0, name="D")
    s = ts.create_schedule(D.op)
    s[B].compute_at(s[C], s[C].op.axis[0])
    with raises(
        ts.ScheduleError, "compute_inline", "stage 'C'", "other stages are computed at its loops"
    ):
        s[C].compute_inline()


def test_compute_inline_output():
    A, B, C, s = gemm_s()
    with raises(
        ts.ScheduleError, "compute_inline", "stage 'C'", "output", "only intermediate stages"
    ):
        s[C].compute_inline()


def test_compute_inline_reduction():
    A, B, C = gemm(7, 5, 3)
    D = ts.compute((7, 5), lambda i, j: C[i, j] + 1.0, name="D")
    s = ts.create_schedule(D.op)
    with raises(ts.ScheduleError, "compute_inline", "stage 'C'", "reduction", "use compute_at"):
        s[C].compute_inline()


# ---------------------------------------------------------------- cache stages and scopes


def test_cache_write_after_binding():
    # a split alone is laid out by the cache (TVM's CacheWriteWithReLayout); an annotation
    # would be lost, as TVM loses it, so it is refused
    A, B, C, s = gemm_s()
    xo, _ = s[C].split(s[C].op.axis[0], 2)
    s[C].bind(xo, ts.thread_axis("blockIdx.x"))
    with raises(
        ts.ScheduleError,
        "cache_write",
        "stage 'C'",
        "axis 'i.outer'",
        "bound to blockIdx.x",
        "before binding",
    ):
        s.cache_write(C, "local")


@pytest.mark.parametrize("scope", ["private", "texture", "Shared"])
def test_cache_read_unknown_scope(scope):
    A, B, C, s = gemm_s()
    with raises(
        ts.ScheduleError, "cache_read", f"unknown scope '{scope}'", "global, shared, local"
    ):
        s.cache_read(A, scope, [C])


def test_cache_write_unknown_scope():
    A, B, C, s = gemm_s()
    with raises(ts.ScheduleError, "cache_write", "unknown scope 'register'"):
        s.cache_write(C, "register")


def test_set_scope_unknown():
    A, B, C, s = chain()
    with raises(ts.ScheduleError, "set_scope", "stage 'B'", "unknown scope 'foo'"):
        s[B].set_scope("foo")


def test_cache_read_for_a_stage_that_does_not_read_it():
    A, B, C, s = chain()
    with raises(
        ts.ScheduleError, "cache_read", "stage 'C'", "does not read 'A'", "only stages that read it"
    ):
        s.cache_read(A, "shared", [C])


def test_shared_stage_at_the_root():
    # never attached: computed in its consumer's kernel (tests/test_tvm_port4.py), which
    # must be spread over the same threadIdx axes
    A, B, C, s = gemm_s()
    s.cache_read(A, "shared", [C])
    s[C].bind(s[C].op.axis[1], thr("threadIdx.x"))
    with raises(
        ts.LoweringError,
        "stage 'A.shared'",
        "scope 'shared'",
        "computed at the root",
        "same threadIdx axes",
        "compute_at",
    ):
        ts.lower(s, [A, B, C])


def test_local_stage_at_the_root_read_by_two_kernels():
    A, B, C, s = chain()
    D = ts.compute(C.shape, lambda i: B[i] * C[i], name="D")
    s = ts.create_schedule(D.op)
    s[B].set_scope("local")
    with raises(ts.LoweringError, "stage 'B'", "scope 'local'", "'C', 'D'", "s[B].compute_at"):
        ts.build(s, [A, D], target="python")


# ---------------------------------------------------------------- schedule lookups


def test_schedule_of_placeholder():
    A, B, C, s = gemm_s()
    with raises(ts.ScheduleError, "'A' is a placeholder", "no loops to schedule"):
        s[A]


def test_schedule_of_tensor_of_another_schedule():
    A, B, C, s = gemm_s()
    A2, B2, C2 = gemm(7, 5, 3)
    with raises(ts.ScheduleError, "'C' is not part of this schedule"):
        s[C2]


def test_create_schedule_of_placeholder():
    A, B, C, s = gemm_s()
    with raises(ts.ScheduleError, "create_schedule", "'A' is a placeholder"):
        ts.create_schedule(A.op)


# ---------------------------------------------------------------- the compute language


def test_too_many_indices():
    A = ts.placeholder((5, 3), name="A")
    with raises(ts.ComputeError, "tensor 'A' has 2 dimensions but got 3 indices"):
        ts.compute((5,), lambda i: A[i, 0, 1], name="C")


@pytest.mark.parametrize(
    "body",
    [
        lambda A, i: A[i],
        lambda A, i: A[i] * 2.0,
        lambda A, i: 2.0 * A[i],
        lambda A, i: ts.exp(A[i]),
        lambda A, i: A[i] > 0.0,
        lambda A, i: A[i].astype("float16"),
        lambda A, i: -A[i],
    ],
)
def test_too_few_indices(body):
    A = ts.placeholder((5, 3), name="A")
    with raises(ts.ComputeError, "tensor 'A' has 2 dimensions but was used with 1 indices"):
        ts.compute((5,), lambda i: body(A, i), name="C")


def test_true_division_on_integers():
    with raises(ts.ComputeError, "'/' on integer", "write '//'"):
        ts.compute((5,), lambda i: i / 2, name="C")


def test_modulo_on_floats():
    A = ts.placeholder((5,), name="A")
    with raises(ts.ComputeError, "'%' needs integer operands", "float32"):
        ts.compute((5,), lambda i: A[i] % 2.0, name="C")


def test_reduce_axis_used_outside_a_reduction():
    A = ts.placeholder((5, 3), name="A")
    k = ts.reduce_axis((0, 3), name="k")
    with raises(
        ts.ComputeError,
        "compute 'C'",
        "variable 'k'",
        "reduce axis must be passed to ts.sum/max/min",
    ):
        ts.compute((5,), lambda i: A[i, k] * 2.0, name="C")


def test_reduction_inside_a_larger_expression():
    A = ts.placeholder((5, 3), name="A")
    k = ts.reduce_axis((0, 3), name="k")
    with raises(ts.ComputeError, "compute 'C'", "must be the whole body", "its own stage"):
        ts.compute((5,), lambda i: ts.sum(A[i, k], axis=k) * 2.0, name="C")


def test_reduction_over_a_data_axis():
    A = ts.placeholder((5, 3), name="A")
    with raises(ts.ComputeError, "ts.sum", "axis must be a reduce_axis"):
        ts.compute((5,), lambda i: ts.sum(A[i, 0], axis=i), name="C")


def test_same_reduce_axis_twice():
    A = ts.placeholder((5, 3), name="A")
    k = ts.reduce_axis((0, 3), name="k")
    with raises(ts.ComputeError, "ts.max", "listed twice"):
        ts.compute((5,), lambda i: ts.max(A[i, k], axis=[k, k]), name="C")


def test_empty_reduce_axis():
    with raises(ts.ComputeError, "reduce_axis 'k'", "empty range (3, 3)"):
        ts.reduce_axis((3, 3), name="k")


def test_float_index():
    A = ts.placeholder((5,), name="A")
    with raises(ts.ComputeError, "index of 'A' must be an integer", "float32"):
        ts.compute((5,), lambda i: A[i * 1.5], name="C")


def test_python_if_on_an_expression():
    A = ts.placeholder((5,), name="A")
    with raises(ts.ComputeError, "no truth value", "ts.if_then_else"):
        ts.compute((5,), lambda i: A[i] if i > 2 else 0.0, name="C")


def test_if_then_else_condition_not_boolean():
    A = ts.placeholder((5,), name="A")
    with raises(ts.ComputeError, "if_then_else", "must be a comparison"):
        ts.compute((5,), lambda i: ts.if_then_else(A[i], 1.0, 0.0), name="C")


def test_float_intrinsic_on_integer():
    with raises(ts.ComputeError, "ts.exp needs a float argument", "astype('float32')"):
        ts.compute((5,), lambda i: ts.exp(i), name="C")


def test_compute_arity_mismatch():
    with raises(ts.ComputeError, "compute 'C'", "takes 1 indices", "2 dimensions"):
        ts.compute((5, 3), lambda i: i, name="C")


def test_compute_returning_an_empty_list():
    with raises(ts.ComputeError, "compute 'C'", "returned no expression"):
        ts.compute((5,), lambda i: [], name="C")


@pytest.mark.parametrize("shape", [(5, 0), (-1,), (2.5,), (True,)])
def test_placeholder_bad_shape(shape):
    with raises(ts.ComputeError, "placeholder 'A'", "shape must be positive ints"):
        ts.placeholder(shape, name="A")


@pytest.mark.parametrize("dtype", ["float8", "float", "int8"])
def test_unknown_dtype(dtype):
    with raises(ts.ComputeError, "placeholder 'A'", f"unknown dtype '{dtype}'", "float32"):
        ts.placeholder((5,), dtype=dtype, name="A")
    A = ts.placeholder((5,), name="A")
    with raises(ts.ComputeError, "astype", f"unknown dtype '{dtype}'"):
        A[0].astype(dtype)


def test_const_not_integer_for_int_dtype():
    with raises(ts.ComputeError, "const", "1.5 is not an integer", "int32"):
        ts.const(1.5, "int32")


def test_pad_wrong_number_of_widths():
    A = ts.placeholder((5,), name="A")
    with raises(ts.ComputeError, "pad 'P'", "one pad width per dimension (1)"):
        ts.pad(A, [1, 1], name="P")


def test_pad_negative_width():
    A = ts.placeholder((5,), name="A")
    with raises(ts.ComputeError, "pad 'P'", "non-negative"):
        ts.pad(A, [-1], name="P")


# ---------------------------------------------------------------- lower and build


def test_lower_missing_input_argument():
    A, B, C, s = gemm_s()
    with raises(ts.LoweringError, "input 'B' is read but not among the arguments", "add it"):
        ts.lower(s, [A, C])


def test_lower_missing_output_argument():
    A, B, C, s = gemm_s()
    with raises(ts.LoweringError, "output 'C' is not among the arguments", "add it"):
        ts.lower(s, [A, B])


def test_lower_argument_not_a_tensor():
    A, B, C, s = gemm_s()
    with raises(ts.LoweringError, "arguments must be tensors", "'C'"):
        ts.lower(s, [A, B, "C"])


def test_lower_argument_twice():
    A, B, C, s = gemm_s()
    with raises(ts.LoweringError, "listed twice"):
        ts.lower(s, [A, B, C, A])


def test_lower_not_a_schedule():
    A, B, C, s = gemm_s()
    with raises(ts.LoweringError, "expected a schedule"):
        ts.lower(C, [A, B, C])


def test_build_unknown_target():
    A, B, C, s = gemm_s()
    with raises(ts.TensorschedError, "target 'cuda' is not supported", "target='opencl'"):
        ts.build(s, [A, B, C], target="cuda")


def test_build_schedule_without_arguments():
    A, B, C, s = gemm_s()
    with raises(ts.TensorschedError, "give the argument tensors"):
        ts.build(s, target="python")


@pytest.fixture
def gemm_module():
    A, B, C, s = gemm_s(7, 5, 3)
    mod = ts.build(s, [A, B, C], target="python", name="gemm")
    a, b = np.ones((7, 3), "float32"), np.ones((3, 5), "float32")
    return mod, a, b


def test_module_call_wrong_shape(gemm_module):
    mod, a, b = gemm_module
    with raises(ts.RuntimeCallError, "gemm", "argument 'C'", "shape (5, 7)", "expected (7, 5)"):
        mod(a, b, np.zeros((5, 7), "float32"))


def test_module_call_wrong_dtype(gemm_module):
    mod, a, b = gemm_module
    with raises(ts.RuntimeCallError, "argument 'A'", "dtype float64", "expected float32"):
        mod(a.astype("float64"), b, np.zeros((7, 5), "float32"))


def test_module_call_wrong_number_of_arrays(gemm_module):
    mod, a, b = gemm_module
    with raises(ts.RuntimeCallError, "expected 3 arrays (A, B, C)", "got 2"):
        mod(a, b)


def test_module_call_with_a_list(gemm_module):
    mod, a, b = gemm_module
    with raises(ts.RuntimeCallError, "argument 'A' must be an array", "list"):
        mod(a.tolist(), b, np.zeros((7, 5), "float32"))


# ---------------------------------------------------------------- the error objects


def test_schedule_error_render_marks_the_axis():
    A, B, C, s = gemm_s()
    i, j = s[C].op.axis
    s[C].bind(i, thr("blockIdx.x"))
    try:
        s[C].bind(i, thr("blockIdx.y"))
    except ts.ScheduleError as e:
        assert e.stage is s[C] and e.axis is i and e.primitive == "bind"
        text = e.render()
        assert "leaf axes of stage 'C'" in text
        assert re.search(r"^  i  <-- here$", text, re.M)
        assert re.search(r"^  j$", text, re.M)
    else:  # pragma: no cover
        raise AssertionError("no error")


def test_error_hierarchy():
    for cls in (
        ts.ComputeError,
        ts.ScheduleError,
        ts.LoweringError,
        ts.CodegenError,
        ts.BuildError,
        ts.RuntimeCallError,
        ts.ParseError,
    ):
        assert issubclass(cls, ts.TensorschedError)
    assert not issubclass(ts.InternalError, ts.TensorschedError)


# ---------------------------------------------------------------- random misuse

TAGS = ["blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y"]


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_primitive_sequences_fail_cleanly_or_compute_right(data):
    """Random primitives with random (often illegal) arguments on a three-stage pipeline: each
    call either works or raises a TensorschedError (never an internal exception), and a
    schedule that lowers computes the right numbers."""
    A = ts.placeholder((7, 6), name="A")
    Bp = ts.placeholder((6, 5), name="Bp")
    T = ts.compute((7, 6), lambda i, k: A[i, k] * 2.0, name="T")
    k = ts.reduce_axis((0, 6), name="k")
    C = ts.compute((7, 5), lambda i, j: ts.sum(T[i, k] * Bp[k, j], axis=k), name="C")
    D = ts.compute((7, 5), lambda i, j: C[i, j] + 1.0, name="D")
    s = ts.create_schedule(D.op)

    def axis():
        return data.draw(st.sampled_from([iv for x in s.stages for iv in x.all_iter_vars]))

    for _ in range(data.draw(st.integers(1, 8))):
        stage = data.draw(st.sampled_from(list(s.stages)))
        op = data.draw(
            st.sampled_from(
                [
                    "split",
                    "nparts",
                    "fuse",
                    "reorder",
                    "unroll",
                    "vectorize",
                    "parallel",
                    "pragma",
                    "bind",
                    "compute_at",
                    "compute_inline",
                    "compute_root",
                    "cache_read",
                    "cache_write",
                ]
            )
        )
        calls = {
            "split": lambda: stage.split(
                axis(), data.draw(st.sampled_from([-1, 0, 1, 2, 4, 9, 2.5]))
            ),
            "nparts": lambda: stage.split(axis(), nparts=data.draw(st.sampled_from([0, 1, 3]))),
            "fuse": lambda: stage.fuse(axis(), axis()),
            "reorder": lambda: stage.reorder(
                *[axis() for _ in range(data.draw(st.integers(0, 4)))]
            ),
            "unroll": lambda: stage.unroll(axis()),
            "vectorize": lambda: stage.vectorize(axis()),
            "parallel": lambda: stage.parallel(axis()),
            "pragma": lambda: stage.pragma(axis(), "unroll_explicit", 0),
            "bind": lambda: stage.bind(axis(), ts.thread_axis(data.draw(st.sampled_from(TAGS)))),
            "compute_at": lambda: stage.compute_at(
                data.draw(st.sampled_from(list(s.stages))), axis()
            ),
            "compute_inline": stage.compute_inline,
            "compute_root": stage.compute_root,
            "cache_read": lambda: s.cache_read(
                data.draw(st.sampled_from([A, Bp, T, C])),
                data.draw(st.sampled_from(["shared", "local", "global"])),
                [data.draw(st.sampled_from([T, C, D]))],
            ),
            "cache_write": lambda: s.cache_write(
                data.draw(st.sampled_from([T, C, D])),
                data.draw(st.sampled_from(["local", "global"])),
            ),
        }
        try:
            calls[op]()
        except ts.TensorschedError:
            pass
    try:
        ts.lower(s, [A, Bp, D])
    except ts.TensorschedError:
        return
    check(s, [A, Bp, D], lambda a, b: (2 * a) @ b + 1)
