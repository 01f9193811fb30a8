"""Types in the generated OpenCL C (bugs found by porting TVM's tests).

- int64 arithmetic keeps int64 constants through lowering: the simplifier rebuilds the nodes it
  opens into linear form, and an int32 constant beside an int64 operand printed as an ``int``
  that OpenCL's overloaded ``min``/``max`` cannot match with a ``long`` ("call to '_cl_max' is
  ambiguous" on PoCL).
- A vector conversion is ``convert_<type><n>(x)``: OpenCL C has no C casts between vector
  types, so ``(float4)(int4 x)`` does not compile.

The source and IR checks need no device; the numerical ones run on the OpenCL device and under
Oclgrind (random non-zero inputs, poisoned outputs, compared with numpy).
"""

import numpy as np
import pytest

import tensorsched as ts
from tensorsched.codegen.opencl import emit_opencl
from tensorsched.ir import dtype as dt
from tensorsched.ir.visitor import Visitor
from tensorsched.runtime.numerics import compare, make_arrays
from tensorsched.runtime.oclgrind import available as oclgrind_available
from tensorsched.runtime.oclgrind import run_checked

N = 16


def long(v):
    return ts.const(v, "int64")


# int64 expressions of A[i] (values 1..9, random signs) with int64 constants: (body, numpy)
INT64_CASES = {
    "clip": (
        lambda A, i: ts.min(long(5), ts.max(long(-5), A[i])),
        lambda a: np.clip(a, -5, 5),
    ),
    "select_max": (
        lambda A, i: ts.if_then_else(A[i] > long(2), long(-7), ts.max(A[i], long(-3))),
        lambda a: np.where(a > 2, -7, np.maximum(a, -3)),
    ),
    "floordiv_mod": (
        lambda A, i: (A[i] * long(3) - long(5)) // long(4) + A[i] % long(3),
        lambda a: (a * 3 - 5) // 4 + a % 3,
    ),
    "index_min": (
        lambda A, i: ts.min(i.astype("int64") - long(7), A[i]),
        lambda a: np.minimum(np.arange(N) - 7, a),
    ),
}
MIN_MAX_CASES = ["clip", "select_max"]  # an int beside a long in min/max: not built


def int64_kernel(case):
    body, ref = INT64_CASES[case]
    A = ts.placeholder((N,), name="A", dtype="int64")
    B = ts.compute((N,), lambda i: body(A, i), name="B")
    return ts.create_schedule(B.op), [A, B], ref


# float vectors computed from the (int32) index of a vectorized axis, and float vectors
# converted to integers: (body, output dtype, numpy of the input and the column index)
CAST_CASES = {
    "float_plus_index": (
        lambda B, i, j: B[i, j] + j,
        "float32",
        lambda b, j: b + j,
    ),
    "float_times_index_astype": (
        lambda B, i, j: B[i, j] * j.astype("float32"),
        "float32",
        lambda b, j: b * j,
    ),
    "float_to_int32": (
        lambda B, i, j: (B[i, j] * 8.0).astype("int32"),
        "int32",
        lambda b, j: (b * np.float32(8)).astype("int32"),
    ),
    "float_to_int64": (
        lambda B, i, j: (B[i, j] * 8.0).astype("int64"),
        "int64",
        lambda b, j: (b * np.float32(8)).astype("int64"),
    ),
}


def cast_kernel(case):
    body, out_dtype, ref = CAST_CASES[case]
    B = ts.placeholder((5, 4), name="B")
    C = ts.compute((5, 4), lambda i, j: body(B, i, j), name="C")
    assert C.dtype == out_dtype
    s = ts.create_schedule(C.op)
    s[C].vectorize(C.op.axis[1])
    return s, [B, C], lambda b: ref(b, np.arange(4))


def source(s, args):
    return emit_opencl(ts.lower(s, args)).text


def check_on_opencl(s, args, ref, rng):
    """Build for OpenCL, run on random inputs into poisoned outputs, compare with numpy."""
    mod = ts.build(s, args, target="opencl")
    arrays, ins, outs = make_arrays(args, rng)
    mod(*arrays)
    ((t, out),) = outs
    compare(out, ref(*ins), t.dtype, name=t.name)


# ---------------------------------------------------------------- int64 constants


@pytest.mark.parametrize("case", list(INT64_CASES))
def test_int64_arithmetic_keeps_int64_operands_after_lowering(case):
    """Every integer node of the lowered IR has operands of its own type: the simplifier gives
    the constants and nodes it rebuilds the type of the expression they came from."""
    s, args, _ = int64_kernel(case)
    mixed = []

    class _Operands(Visitor):
        def visit_BinOp(self, e):
            if dt.is_int(e.dtype) and {e.a.dtype, e.b.dtype} != {e.dtype}:
                mixed.append(f"{e.op}: {e.a.dtype}, {e.b.dtype} -> {e.dtype}")
            self.generic_visit(e)

    _Operands().visit(ts.lower(s, args).body)
    assert not mixed


def test_int64_constants_print_as_long():
    s, args, _ = int64_kernel("clip")
    assert "B[i] = min(5L, max((-5L), A[i]));" in source(s, args)


@pytest.mark.opencl
@pytest.mark.parametrize("case", MIN_MAX_CASES)
def test_int64_min_max_with_constants_run_on_opencl(case, device, rng):
    s, args, ref = int64_kernel(case)
    check_on_opencl(s, args, ref, rng)


# ---------------------------------------------------------------- vector conversions


def test_vector_cast_is_a_convert_call():
    s, args, _ = cast_kernel("float_plus_index")
    text = source(s, args)
    assert "convert_float4(((int4)(0, 1, 2, 3)))" in text
    assert "(float4)(((int4)" not in text


@pytest.mark.opencl
@pytest.mark.parametrize("case", list(CAST_CASES))
def test_vectorized_casts_run_on_opencl(case, device, rng):
    s, args, ref = cast_kernel(case)
    check_on_opencl(s, args, ref, rng)


# ---------------------------------------------------------------- under Oclgrind


@pytest.mark.opencl
@pytest.mark.skipif(not oclgrind_available(), reason="the Oclgrind OpenCL platform is missing")
@pytest.mark.parametrize(
    "kernel",
    [lambda: int64_kernel("clip"), lambda: cast_kernel("float_plus_index")],
    ids=["int64_clip", "vector_cast"],
)
def test_kernels_are_clean_under_oclgrind(kernel, rng):
    """Oclgrind's compiler accepts both kernels and reports nothing while they run."""
    s, args, ref = kernel()
    arrays, ins, outs = make_arrays(args, rng)
    result = run_checked(ts.lower(s, args), arrays)
    assert result.log.strip() == ""
    ((t, out),) = outs
    compare(out, ref(*ins), t.dtype, name=t.name)


def test_a_kernel_reading_back_its_output_takes_its_inputs_without_restrict_on_nvidia():
    """NVIDIA's OpenCL compiler dropped every store to the int output of TVM's argmin (a tuple
    reducer summed into its outputs in global memory) where its inputs were ``const restrict``
    (H200, driver 580; right without ``restrict`` on them or with -cl-opt-disable). Such a
    kernel's read-only buffers are ``TS_RESTRICT_IN``: nothing on NVIDIA, ``restrict`` on
    every other device. A kernel that keeps its sums in registers keeps ``restrict``."""

    def argmin_combine(x, y):
        keep = x[1] <= y[1]
        return ts.if_then_else(keep, x[0], y[0]), ts.if_then_else(keep, x[1], y[1])

    def argmin_identity(t0, t1):
        return ts.const(-1, t0), ts.max_value(t1)

    argmin = ts.comm_reducer(argmin_combine, argmin_identity, name="argmin")
    idx = ts.placeholder((9, 31), name="idx", dtype="int32")
    val = ts.placeholder((9, 31), name="val")
    k = ts.reduce_axis((0, 31), name="k")
    t0, t1 = ts.compute((9,), lambda i: argmin((idx[i, k], val[i, k]), axis=k), name="T")
    s = ts.create_schedule(t0.op)
    text = emit_opencl(ts.lower(s, [idx, val, t0, t1], name="f")).text
    assert "#ifdef __NV_CL_C_VERSION\n#define TS_RESTRICT_IN\n#else" in text
    assert "const int* TS_RESTRICT_IN idx" in text and "const float* TS_RESTRICT_IN val" in text
    assert "int* restrict T_v0" in text and "float* restrict T_v1" in text

    A = ts.placeholder((16, 16), name="A")
    B = ts.placeholder((16, 16), name="B")
    r = ts.reduce_axis((0, 16), name="r")
    C = ts.compute((16, 16), lambda i, j: ts.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = ts.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    i, j = s[C].op.axis
    s[C].bind(i, ts.thread_axis("blockIdx.x"))
    s[C].bind(j, ts.thread_axis("threadIdx.x"))
    s[CL].compute_at(s[C], j)
    text = emit_opencl(ts.lower(s, [A, B, C], name="g")).text
    assert "TS_RESTRICT_IN" not in text and "const float* restrict A" in text
