"""Integers (issue 15 items 5 and 10): numpy integers wherever Python ints are taken, sizes
checked against int64, and 64-bit OpenCL indexing chosen where a kernel needs it. No device:
the OpenCL tests of the wide form are in tests/opencl/test_wide_index.py."""

import numpy as np
import pytest

import tensorsched as ts
from tensorsched.codegen.opencl import emit_opencl
from tensorsched.errors import ComputeError, ScheduleError
from tensorsched.ir import expr as E

NUMPY_INTS = [np.int64, np.int32, np.int16, np.uint8]


def python_int(x) -> bool:
    """A Python int (TVM's IntImm-like ``IntValue`` of a Range included), not numpy's."""
    return isinstance(x, int) and not isinstance(x, (bool, np.integer))


def elementwise(n=37):
    A = ts.placeholder((n,), name="A")
    B = ts.compute((n,), lambda i: A[i] * 2.0, name="B")
    return A, B


def plain(s, args):
    return str(ts.lower(s, list(args)))


# ---------------------------------------------------------------- numpy integers accepted


@pytest.mark.parametrize("np_int", NUMPY_INTS)
def test_numpy_split_factor_and_nparts(np_int):
    for kw in ("factor", "nparts"):
        A, B = elementwise()
        s = ts.create_schedule(B.op)
        s[B].split(B.op.axis[0], **{kw: np_int(4)})
        s2 = ts.create_schedule(B.op)
        s2[B].split(B.op.axis[0], **{kw: 4})
        assert plain(s, [A, B]) == plain(s2, [A, B])


def test_numpy_tile_factors_and_shapes():
    M, N = np.int64(20), np.int32(12)
    A = ts.placeholder((M, N), name="A")
    B = ts.compute((M, N), lambda i, j: A[i, j] + 1.0, name="B")
    assert A.shape == (20, 12) and all(python_int(d) for d in A.shape + B.shape)
    s = ts.create_schedule(B.op)
    i, j = s[B].op.axis
    s[B].tile(i, j, np.int64(8), np.int32(4))
    assert "for (i.outer, 0, 3)" in plain(s, [A, B])


def test_numpy_reduce_axis_and_const():
    k = ts.reduce_axis((np.int64(0), np.int32(5)), name="k")
    assert (k.dom.min, k.dom.extent) == (0, 5) and python_int(k.dom.extent)
    assert ts.reduce_axis(np.int64(7)).dom.extent == 7
    c = ts.const(np.int64(2))
    assert isinstance(c, E.IntImm) and c.dtype == "int32" and type(c.value) is int
    assert ts.const(np.int32(3), "int64") == E.IntImm(3, "int64")
    assert ts.const(np.int64(2), "float32") == E.FloatImm(2.0, "float32")
    assert ts.const(np.float64(2.5)) == E.FloatImm(2.5, "float32")
    assert ts.const(2**40) == E.IntImm(2**40, "int64")  # beyond int32: int64, as TVM does


def test_numpy_integers_in_expressions_and_storage_align():
    A, B = elementwise(16)
    C = ts.compute((16,), lambda i: A[i + np.int64(0)] * np.float32(3.0), name="C")
    assert C.op.body[0].a.indices[0].b == E.IntImm(0)
    X = ts.placeholder((16, 16), name="X")
    Y = ts.compute((16, 16), lambda i, j: X[i, j] + 1.0, name="Y")
    s = ts.create_schedule(Y.op)
    XX = s.cache_read(X, "shared", [Y])
    s[XX].storage_align(XX.op.axis[0], np.int64(32), np.int32(1))
    assert s[XX].align == {0: (32, 1)}


@pytest.mark.parametrize("bad", [np.float64(2.0), 2.0, True, np.bool_(True), "4", 0, -3])
def test_split_factor_not_a_positive_int(bad):
    A, B = elementwise()
    s = ts.create_schedule(B.op)
    with pytest.raises(ScheduleError, match="must be a positive int"):
        s[B].split(B.op.axis[0], bad)


@pytest.mark.parametrize("bad", [np.float64(4.5), 4.5, True, 0])
def test_shape_not_positive_ints(bad):
    with pytest.raises(ComputeError, match="shape must be positive ints"):
        ts.placeholder((bad, 3))


def test_reduce_axis_not_ints():
    with pytest.raises(ComputeError, match="dom must be"):
        ts.reduce_axis((0, np.float64(4.5)))


def test_thread_axis_with_a_range_of_numpy_ints():
    tx = ts.thread_axis((0, np.int64(64)), "threadIdx.x")
    assert tx.dom is not None and tx.dom.extent == 64 and python_int(tx.dom.extent)
    with pytest.raises(ScheduleError, match="must be \\(0, n\\)"):
        ts.thread_axis((np.int64(1), 64), "threadIdx.x")


# ---------------------------------------------------------------- what the index type holds


def test_huge_split_factor_gets_the_extent():
    """``split(i, 2**40)`` used to emit an int loop to 2^40 (a kernel that never ends)."""
    A, B = elementwise(100)
    s = ts.create_schedule(B.op)
    s[B].split(B.op.axis[0], 2**40)
    text = plain(s, [A, B])
    assert "for (i.inner, 0, 100)" in text and "1099511627776" not in text
    s = ts.create_schedule(B.op)
    s[B].split(B.op.axis[0], nparts=np.int64(2**40))
    assert "for (i.outer, 0, 100)" in plain(s, [A, B])
    src = emit_opencl(ts.lower(s, [A, B])).text
    assert "for (int i_outer = 0; i_outer < 100; ++i_outer)" in src


def test_factor_larger_than_extent_as_tvm_infers_it():
    """As TVM's bound inference does, a factor larger than the extent gives the inner loop the
    extent, unless the inner loop is bound to a thread: a work-group keeps the size it was
    split for and the extra work-items are guarded (templates rely on it)."""
    A, B = elementwise(10)
    s = ts.create_schedule(B.op)
    s[B].split(B.op.axis[0], 16)
    text = plain(s, [A, B])
    assert "for (i.inner, 0, 10)" in text and "if" not in text
    s = ts.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], 16)
    s[B].bind(xi, ts.thread_axis("threadIdx.x"))
    text = plain(s, [A, B])
    assert "thread_extent = 16" in text and "if (threadIdx.x < 10)" in text


@pytest.mark.parametrize("kw", ["factor", "nparts"])
def test_split_beyond_int64_refused(kw):
    A, B = elementwise()
    s = ts.create_schedule(B.op)
    with pytest.raises(ScheduleError, match="does not fit in int64"):
        s[B].split(B.op.axis[0], **{kw: 2**63})


def test_shapes_beyond_int64_refused():
    assert ts.placeholder((2**40,), name="x").shape == (2**40,)  # long indexing holds it
    with pytest.raises(ComputeError, match="more than int64"):
        ts.placeholder((2**40, 2**40), name="x")
    with pytest.raises(ComputeError, match="more than int64"):
        ts.compute((2**32, 2**32), lambda i, j: E.FloatImm(0.0), name="y")
    with pytest.raises(ComputeError, match="does not fit in int64"):
        ts.reduce_axis((0, 2**64))


def test_fused_extent_beyond_int64_refused():
    A = ts.placeholder((4,), name="A")
    k1, k2 = ts.reduce_axis((0, 2**40), "k1"), ts.reduce_axis((0, 2**40), "k2")
    B = ts.compute((4,), lambda i: ts.sum(A[i] + 0.0 * k1 * k2, axis=[k1, k2]), name="B")
    s = ts.create_schedule(B.op)
    s[B].fuse(k1, k2)
    with pytest.raises(ScheduleError, match="more than int64"):
        ts.lower(s, [A, B])


def test_const_beyond_its_dtype_refused():
    with pytest.raises(ComputeError, match="does not fit in int32"):
        ts.const(2**40, "int32")
    with pytest.raises(ComputeError, match="does not fit in int64"):
        ts.const(2**64)


@pytest.mark.parametrize(
    "value, dtype, message",
    [
        (
            10**400,
            "float32",
            r"const: 10000000000000000000\.\.\. \(401 characters\) is beyond float32",
        ),
        (-(10**400), "float64", "is beyond float64"),
        (10**39, "float32", "is beyond float32 .* use a smaller value or dtype float64"),
        (1e300, "float32", "const: 1e\\+300 is beyond float32"),
        (np.float64(1e39), "float32", "is beyond float32"),
        (70000.0, "float16", "is beyond float16 \\(largest 65504\\)"),
    ],
)
def test_const_beyond_its_float_dtype_refused(value, dtype, message):
    """A finite value a float type would round to infinity is refused, never an OverflowError
    nor a silent inf; inf and nan themselves stay constants."""
    with pytest.raises(ComputeError, match=message):
        ts.const(value, dtype)


def test_float_const_at_its_limits_and_inf_kept():
    assert ts.const(3.4e38, "float32").value == 3.4e38
    assert ts.const(65504, "float16").value == 65504.0
    assert ts.const(10**300, "float64").value == 1e300
    assert ts.const(float("inf"), "float32").value == float("inf")
    assert ts.const(float("-inf"), "float16").value == float("-inf")


def test_python_numbers_beyond_a_float_in_expressions_refused():
    A = ts.placeholder((4,), name="A")
    with pytest.raises(ComputeError, match="is beyond float32"):
        A[0] * 10**400
    with pytest.raises(ComputeError, match="is beyond float32"):
        ts.compute((4,), lambda i: A[i] + 1e39, name="B")
    B64 = ts.placeholder((4,), "float64", name="B64")
    assert "1e+39" in str(B64[0] * 1e39)


# ---------------------------------------------------------------- 64-bit indexing


def tiled(N):
    A = ts.placeholder((N, N), name="A")
    B = ts.compute((N, N), lambda i, j: A[i, j] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    i, j = s[B].op.axis
    io, jo, ii, ji = s[B].tile(i, j, 16, 16)
    for ax, tag in zip(
        (io, jo, ii, ji), ("blockIdx.y", "blockIdx.x", "threadIdx.y", "threadIdx.x")
    ):
        s[B].bind(ax, ts.thread_axis(tag))
    return emit_opencl(ts.lower(s, [A, B], name="f")).text


def test_big_tensor_indexed_with_long():
    """65536 x 65536 floats: 2^32 elements, past int32; the work-item indices are long."""
    text = tiled(65536)
    assert "const long blockIdx_y = (long)get_group_id(1);" in text
    assert "const long threadIdx_x = (long)get_local_id(0);" in text
    assert "const int" not in text
    assert "B[blockIdx_y * 1048576 + threadIdx_y * 65536 + blockIdx_x * 16 + threadIdx_x]" in text


def test_small_tensor_keeps_int():
    text = tiled(1024)
    assert "const int blockIdx_y = get_group_id(1);" in text and "long" not in text


def test_serial_loops_long_and_floor_helpers():
    """Loops of a wide kernel are long, and so are the floor division helpers it calls."""
    N = 65536
    A = ts.placeholder((N, N), name="A")
    B = ts.compute((N, N), lambda i, j: A[i, (j - i) % N], name="B")
    s = ts.create_schedule(B.op)
    text = emit_opencl(ts.lower(s, [A, B], name="g")).text
    assert "for (long i = 0; i < 65536; ++i)" in text
    assert "for (long j = 0; j < 65536; ++j)" in text
    assert "long ts_floormod_long(long a, long b)" in text
    assert "ts_floormod_long(j - i, 65536)" in text and "int ts_floormod(" not in text


def test_a_long_loop_alone_makes_the_kernel_wide():
    """A reduction of 2^33 steps over a small tensor: its loop variable must be long."""
    A = ts.placeholder((16,), name="A")
    k = ts.reduce_axis((0, 2**33), "k")
    B = ts.compute((1,), lambda i: ts.sum(A[k % 16], axis=k), name="B")
    text = emit_opencl(ts.lower(ts.create_schedule(B.op), [A, B], name="r")).text
    assert "for (long k = 0; k < 8589934592; ++k)" in text
