"""The generated OpenCL C of a few reference schedules, compared with files in tests/golden/.

A change of the code generator that changes these texts must be looked at: if the new text is
right, rewrite the files with ``pytest tests/opencl/test_golden.py --update-golden`` and review
the diff in version control. No OpenCL device is needed: the source comes from
``emit_opencl(ts.lower(...))``, the same text that ``mod.get_source()`` returns.
"""

import difflib
import os

import pytest
from ocl_util import TESTS, gemm, gemm_shared_schedule

import tensorsched as ts
from tensorsched.codegen.opencl import emit_opencl

GOLDEN = os.path.join(TESTS, "golden")


def gemm_plain():
    """A GEMM tiled over work-groups of 8x8 work-items with an unrolled, non-dividing k split."""
    A, B, C = gemm(37, 29, 23)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    bx, by, tx, ty = s[C].tile(i, j, 8, 8)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(bx, by, tx, ty, ko, ki)
    s[C].unroll(ki)
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[C].bind(by, ts.thread_axis("blockIdx.y"))
    s[C].bind(tx, ts.thread_axis("threadIdx.x"))
    s[C].bind(ty, ts.thread_axis("threadIdx.y"))
    return ts.lower(s, [A, B, C], name="gemm")


def gemm_shared():
    s, args = gemm_shared_schedule(37, 29, 23)
    return ts.lower(s, list(args), name="gemm")


def seed_conv_kernel3():
    """The seed tutorial's kernel 3 at its full VGG size (56x56x256, 3x3)."""
    import seed_conv

    t = seed_conv.declare()
    s = seed_conv.schedule(t, 3)
    return ts.lower(s, [t[0], t[1], t[-1]], name="conv")


CASES = {
    "gemm_plain": gemm_plain,
    "gemm_shared": gemm_shared,
    "seed_conv_kernel3": seed_conv_kernel3,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_source(case, update_golden):
    text = emit_opencl(CASES[case]()).text
    path = os.path.join(GOLDEN, f"{case}.cl")
    if update_golden:
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing; create it with --update-golden")
    with open(path) as f:
        expected = f.read()
    if text != expected:
        diff = "".join(
            list(
                difflib.unified_diff(
                    expected.splitlines(True),
                    text.splitlines(True),
                    fromfile=f"golden/{case}.cl",
                    tofile="generated",
                )
            )[:80]
        )
        pytest.fail(
            f"the OpenCL C of {case} differs from {path} (rewrite it with "
            f"--update-golden if the change is intended):\n{diff}"
        )


def test_golden_is_deterministic():
    """Two lowerings of the same schedule print the same text (names, order, helpers)."""
    assert emit_opencl(gemm_shared()).text == emit_opencl(gemm_shared()).text


@pytest.mark.opencl
@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_source_builds_on_the_device(case, ocl_device):
    """The reference texts are valid OpenCL C for the device's compiler."""
    from tensorsched.runtime.module import DEFAULT_OPTIONS, build_program

    path = os.path.join(GOLDEN, f"{case}.cl")
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing")
    with open(path) as f:
        text = f.read()
    prg = build_program(ocl_device, text, DEFAULT_OPTIONS)
    names = {k.function_name for k in prg.all_kernels()}
    assert names == {k.name for k in emit_opencl(CASES[case]()).kernels}
