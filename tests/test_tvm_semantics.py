"""TVM's schedule semantics where tensorsched used to differ (issue 17, items 2 and 3), written
from TVM's documentation: a stage computed at or inlined into another listed among ``lower``'s
arguments, thread bindings of private stages, the ``"warp"`` scope, ``create_group``,
``iter_var_attrs``, the ``ts.schedule`` auto-inline helpers and ``fuse`` of one axis. Lowered
IR and results against numpy, on the python target and the CPU device, at sizes no split
factor divides."""

import numpy as np
import pytest

import tensorsched as ts

TARGETS = ["python", "opencl"]


def plain(s, args):
    return str(ts.lower(s, args))


def build(s, args, target):
    if target == "opencl":
        pytest.importorskip("pyopencl")
    return ts.build(s, args, target=target)


def chain(n):
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: A[i] + 1, name="B")
    C = ts.compute((n,), lambda i: B[i] * 2, name="C")
    return A, B, C, ts.create_schedule(C.op)


# ---------------------------------------------------------------- attached / inlined arguments


def test_attached_argument_writes_its_array_as_tvm_does():
    # TVM's schedule-primitives tutorial: lower(s, [A, B, C]) with B computed at C's axis
    A, B, C, s = chain(7)
    s[B].compute_at(s[C], C.op.axis[0])
    text = plain(s, [A, B, C])
    assert "B[i] = A[i] + 1f" in text and "C[i] = B[i]*2f" in text
    assert "allocate" not in text  # B is the caller's array, not a temporary


@pytest.mark.parametrize("target", TARGETS)
def test_attached_argument_with_overlapping_tiles(target):
    n = ts.size_var("n")
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n + 2,), lambda i: A[ts.min(i, n - 1)] * 3, name="B")
    C = ts.compute((n,), lambda i: B[i] + B[i + 2], name="C")
    s = ts.create_schedule(C.op)
    xo, _ = s[C].split(C.op.axis[0], 4)
    s[B].compute_at(s[C], xo)
    text = plain(s, [A, B, C])
    assert "B[i.outer*4 + i] = A[min(i.outer*4 + i, n - 1)]*3f" in text  # absolute indices
    mod = build(s, [A, B, C], target)
    for nn in (1, 7, 13):
        a = np.random.default_rng(nn).random(nn, dtype=np.float32)
        b, c = np.full(nn + 2, np.nan, "float32"), np.full(nn, np.nan, "float32")
        mod(a, b, c)
        rb = a[np.minimum(np.arange(nn + 2), nn - 1)] * 3
        np.testing.assert_allclose(b, rb, rtol=1e-6)
        np.testing.assert_allclose(c, rb[:nn] + rb[2:], rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_attached_argument_in_a_kernel(target):
    # a stage computed at the work-item's loop, listed as an argument: it goes to global memory
    A, B, C, s = chain(37)
    bx, tx = s[C].split(C.op.axis[0], 8)
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[C].bind(tx, ts.thread_axis("threadIdx.x"))
    s[B].compute_at(s[C], tx)
    text = plain(s, [A, B, C])
    assert "B[blockIdx.x*8 + threadIdx.x] = A[blockIdx.x*8 + threadIdx.x] + 1f" in text
    mod = build(s, [A, B, C], target)
    a = np.arange(37, dtype="float32")
    b, c = np.full(37, np.nan, "float32"), np.full(37, np.nan, "float32")
    mod(a, b, c)
    np.testing.assert_array_equal(b, a + 1)
    np.testing.assert_array_equal(c, (a + 1) * 2)


def test_inlined_argument_is_passed_but_not_computed_as_in_tvm():
    # TVM's tutorial: compute_inline, then lower(s, [A, B, C]) computes C alone
    A, B, C, s = chain(5)
    s[B].compute_inline()
    func = ts.lower(s, [A, B, C])
    assert "produce B" not in str(func) and "C[i] = (A[i] + 1f)*2f" in str(func)
    assert [b.name for b in func.args] == ["A", "B", "C"]
    mod = ts.build(s, [A, B, C], target="python")
    a, b, c = np.arange(5, dtype="float32"), np.full(5, -1.0, "float32"), np.zeros(5, "float32")
    mod(a, b, c)
    np.testing.assert_array_equal(b, -1.0)  # left as the caller passed it
    np.testing.assert_array_equal(c, (a + 1) * 2)


# ---------------------------------------------------------------- fuse of one axis


def test_fuse_of_one_axis_returns_it():
    A, B, C, s = chain(5)
    (i,) = s[C].op.axis
    assert s[C].fuse(i) is i and s[C].fuse([i]) is i
    with pytest.raises(ts.ScheduleError, match="already split"):
        xo, _ = s[C].split(i, 2)
        s[C].fuse(i)
