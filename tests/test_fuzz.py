"""The schedule fuzzer (``tests/fuzzing``): random legal schedules of GEMM, conv2d
(direct and spatially packed), a softmax chain and an elementwise chain must match numpy;
random illegal ones must raise a ``TensorschedError`` and nothing else. A failing case is
shrunk by hypothesis and reported as the Python code that reproduces it.

The normal suite runs a few hundred examples with the exact Python target (and a few dozen
on the OpenCL device); ``pytest tests/test_fuzz.py --fuzz-long`` runs thousands and prints the
counts at the end of the session (the root conftest's ``fuzz_stats``; ``scripts/fuzz.py`` does
the same outside pytest).
"""

from collections import Counter

import fuzzing as fuzz
import pytest
from hypothesis import HealthCheck, given, settings

import tensorsched as ts

LONG = 20  # --fuzz-long multiplies the example counts by this


def examples(request, n):
    return n * LONG if request.config.getoption("--fuzz-long", default=False) else n


def fuzz_run(
    n, mode, workloads=fuzz.WORKLOADS, target="python", stats=None, max_steps=8, small=True
):
    @settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )
    @given(case=fuzz.cases(workloads, mode=mode, max_steps=max_steps, small=small))
    def run(case):
        fuzz.run_case(case, target=target, stats=stats)

    run()


@pytest.mark.parametrize("workload", fuzz.WORKLOADS)
def test_legal_schedules_match_numpy(request, workload, fuzz_stats):
    fuzz_run(
        examples(request, 40),
        "legal",
        [workload],
        stats=fuzz_stats,
        small=not request.config.getoption("--fuzz-long", default=False),
    )


def test_illegal_sequences_raise_tensorsched_errors_only(request, fuzz_stats):
    fuzz_run(examples(request, 100), "illegal", stats=fuzz_stats)


def test_random_primitive_calls_raise_or_compute_right(request, fuzz_stats):
    fuzz_run(examples(request, 60), "random", stats=fuzz_stats)


@pytest.fixture(scope="module")
def ocl_device():
    from tensorsched.runtime.device import DeviceError, current_device

    try:
        return current_device()
    except (DeviceError, ImportError) as exc:
        pytest.skip(f"no OpenCL device: {exc}")


@pytest.mark.opencl
def test_legal_schedules_on_the_opencl_device(request, ocl_device, fuzz_stats):
    """On the device the vectorize and unroll passes and the OpenCL code generator run too."""
    fuzz_run(examples(request, 20), "legal", target="opencl", stats=fuzz_stats)


# ---------------------------------------------------------------------------- the fuzzer itself


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=fuzz.cases(mode="legal"))
def test_printed_case_is_the_code_that_runs(case):
    """``to_python`` is a standalone script: executing it does what ``run_case`` did."""
    stats = Counter()
    outcome = fuzz.run_case(case, stats=stats)
    code = fuzz.to_python(case)
    compile(code, "<case>", "exec")
    if outcome.status == "passed":
        exec(code, {})
    else:
        with pytest.raises(ts.TensorschedError):
            exec(code, {})


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=fuzz.cases(mode="illegal"))
def test_printed_illegal_case_raises(case):
    if any(st.expect == "error" for st in case.steps):
        with pytest.raises(ts.TensorschedError):
            exec(fuzz.to_python(case), {})


def test_a_planted_bug_is_found_and_shrunk_to_code(monkeypatch):
    """Bound inference that rounds the outer extent of a split down (a classic bug) computes
    too few iterations: the fuzzer finds it and prints a short script with one split."""
    from tensorsched.config import config
    from tensorsched.schedules import relations

    monkeypatch.setattr(relations, "ceil_div", lambda a, b: a // b)
    monkeypatch.setattr(config, "roundtrip", False)  # one bug at a time
    with pytest.raises(fuzz.FuzzFailure) as info:
        fuzz_run(300, "legal", ["elementwise"], stats=Counter(), max_steps=3)
    msg = str(info.value)
    assert "--- reproduce with ---" in msg and "never written" in msg
    code = msg.split("--- reproduce with ---\n")[1].split("--- traceback ---")[0]
    body = code.split("func = ts.lower")[0].rsplit("    return ", 1)[1].splitlines()[1:]
    steps = [
        ln for ln in body if ln.strip() and ".op.axis" not in ln and ".op.reduce_axis" not in ln
    ]
    splits = [ln for ln in steps if ".split(" in ln or ".tile(" in ln]
    assert len(splits) == 1 and len(steps) <= 5, code  # a split, maybe bound (GPU style)
    compile(code, "<shrunk>", "exec")


def test_an_internal_exception_is_a_failure_not_a_rejection(monkeypatch):
    """A primitive that leaks a KeyError is reported as a bug with the code of the case."""
    from tensorsched.schedules.schedule import Stage

    real = Stage.unroll

    def leaky(self, iv):
        real(self, iv)
        raise KeyError("planted")

    monkeypatch.setattr(Stage, "unroll", leaky)
    case = fuzz.Case(
        "gemm",
        (("M", 3), ("N", 2), ("K", 5)),
        (fuzz.Step("unroll", "C", (fuzz.Ax("C", "j", ("axis", ("i", "j"))),)),),
    )
    with pytest.raises(fuzz.FuzzFailure, match="KeyError") as info:
        fuzz.run_case(case, stats=Counter())
    assert "s[C].unroll(C_j)" in str(info.value)
    assert "C_i, C_j = s[C].op.axis" in str(info.value)


def test_illegal_case_that_is_accepted_is_a_failure():
    case = fuzz.Case(
        "gemm",
        (("M", 3), ("N", 2), ("K", 5)),
        (
            fuzz.Step(
                "split",
                "C",
                (fuzz.Ax("C", "i", ("axis", ("i", "j"))),),
                (("factor", 2),),
                expect="error",
            ),
        ),
        mode="illegal",
    )
    with pytest.raises(fuzz.FuzzFailure, match="illegal schedule was accepted"):
        fuzz.run_case(case, stats=Counter())


@settings(max_examples=80, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(case=fuzz.cases(["gemm", "conv2d"], mode="legal", max_steps=12))
def _draw_legal(case, seen):
    for st in case.steps:
        seen[st.prim] += 1
        seen["vthread"] += st.prim == "bind" and "vthread" in repr(st.args)
        seen["blockIdx.z"] += st.prim == "bind" and "blockIdx.z" in repr(st.args)


def test_legal_cases_use_the_gpu_primitives():
    """Legal cases draw virtual threads, storage layouts, double buffers and split-K
    (generation only: cheap)."""
    from hypothesis import seed

    seen = Counter()
    seed(0)(_draw_legal)(seen=seen)
    for prim in (
        "vthread",
        "transform_layout",
        "storage_align",
        "double_buffer",
        "rfactor",
        "blockIdx.z",
    ):
        assert seen[prim], (prim, seen)


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(case=fuzz.cases(["gemm", "elementwise"], mode="illegal"))
def _draw_illegal(case, seen):
    bad = [st for st in case.steps if st.expect == "error"]
    if bad:
        seen[bad[-1].prim] += 1


def test_illegal_cases_misuse_the_gpu_primitives():
    from hypothesis import seed

    seen = Counter()
    seed(0)(_draw_illegal)(seen=seen)
    assert seen["transform_layout"] + seen["storage_align"] + seen["double_buffer"], seen


# ---------------------------------------------------------------------------- bugs it found


def test_storage_align_of_the_innermost_dimension_is_refused():
    """Found by the fuzzer (split-K + storage_align): aligning the innermost storage dimension,
    whose stride is 1, allocated too few elements; lowering now refuses it."""
    A = ts.placeholder((3, 1), name="A")
    k = ts.reduce_axis((0, 1), name="k")
    B = ts.compute((3,), lambda i: ts.sum(A[i, k], axis=k), name="B")
    C = ts.compute((3,), lambda i: B[i] + 1.0, name="C")
    s = ts.create_schedule(C.op)
    (i,) = s[B].op.axis
    s[B].storage_align(i, 2, 0)
    with pytest.raises(ts.LoweringError, match="innermost dimension of its storage"):
        ts.lower(s, [A, C])


def test_two_shared_stages_of_one_name_keep_their_own_memory(monkeypatch):
    """Found by the fuzzer: ``cache_read(T2, "shared")`` twice makes two stages named
    ``T2.shared``; the Python backend kept a work-group's ``__local`` memory by buffer name,
    so the two tiles shared one list and the output was wrong."""
    import numpy as np

    from tensorsched.config import config
    from tensorsched.runtime.numerics import check_numerics

    monkeypatch.setattr(config, "roundtrip", False)  # the IR text cannot tell them apart yet
    M, N = 5, 3
    A = ts.placeholder((M, N), name="A")
    T2 = ts.compute((M, N), lambda i, j: A[i, j] * 2.0 - 0.5, name="T2")
    out = ts.compute((M, N), lambda i, j: T2[i, j] * A[M - 1 - i, j] + T2[i, N - 1 - j], name="out")
    s = ts.create_schedule(out.op)
    outer = s.cache_read(T2, "shared", [out])
    inner = s.cache_read(T2, "shared", [outer])
    assert s[outer].op.name == s[inner].op.name == "T2.shared"
    io, ii = s[out].split(s[out].op.axis[0], 2)
    s[out].bind(io, ts.thread_axis("blockIdx.x"))
    s[out].bind(ii, ts.thread_axis("threadIdx.x"))
    s[outer].compute_at(s[out], io)
    s[inner].compute_at(s[outer], s[outer].op.axis[0])

    def ref(a):
        t2 = 2 * a - 0.5
        return t2 * a[::-1] + t2[:, ::-1]

    check_numerics(s, [A, out], ref, target="python")
    assert np.isfinite(ref(np.ones((M, N)))).all()


def test_reduction_in_a_work_group_tile_is_computed_once():
    """Found by the fuzzer: a reduction computed at a block axis (so in ``__local`` memory)
    but not spread over the work-items was computed by every work-item of the group, all
    adding into the same tile. With a cooperative fill inside its reduction loop (barriers
    between the iterations) the Python backend summed it once per work-item; on a device the
    read-modify-writes race (Oclgrind: "Read-write data race"). Now work-item 0 along each
    threadIdx the stage does not bind writes it."""
    from tensorsched.runtime.numerics import check_numerics

    A = ts.placeholder((5, 7), name="A")
    B = ts.placeholder((7, 3), name="B")
    k = ts.reduce_axis((0, 7), name="k")
    C = ts.compute((5, 3), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = ts.compute((5, 3), lambda i, j: C[i, j] + 1.0, name="D")
    s = ts.create_schedule(D.op)
    i, j = s[D].op.axis
    s[D].bind(i, ts.thread_axis("blockIdx.x"))
    s[D].bind(j, ts.thread_axis("threadIdx.x"))
    s[C].compute_at(s[D], i)  # a tile of C per work-group
    AA = s.cache_read(A, "shared", [C])
    s[AA].compute_at(s[C], s[C].op.reduce_axis[0])  # refilled inside C's reduction loop
    text = str(ts.lower(s, [A, B, D]))
    assert "allocate C[float32 * 1 * 3], shared" in text and "threadIdx.x == 0" in text
    check_numerics(s, [A, B, D], lambda a, b: a @ b + 1, target="python")


def test_unrolled_loop_holding_an_allocation_declares_one_buffer_per_copy():
    """Found by the fuzzer on the OpenCL target: a cache stage computed inside an unrolled
    loop was declared once per written-out iteration under one name ("redefinition of
    'data_local'" from the OpenCL compiler). Each copy now owns its buffer."""
    import re

    from tensorsched.codegen.opencl import emit_opencl

    A = ts.placeholder((3, 4), name="A")
    B = ts.compute((3, 4), lambda i, j: A[i, j] * 2.0, name="B")
    s = ts.create_schedule(B.op)
    AL = s.cache_read(A, "local", [B])
    i, j = s[B].op.axis
    s[B].unroll(j)
    s[AL].compute_at(s[B], j)
    text = emit_opencl(ts.lower(s, [A, B], name="k")).text
    decls = re.findall(r"^\s*float (\w+)\[", text, re.M)
    assert len(decls) == 4 and len(set(decls)) == 4, text


def test_a_wrong_device_result_is_the_devices_only_where_oclgrind_computes_it_right():
    """A case wrong on the OpenCL device is re-run under Oclgrind's checks: right there (and
    against numpy) makes it the device compiler's miscompile; wrong there too, ours."""
    from fuzzing.run import _right_under_oclgrind

    from tensorsched.runtime.oclgrind import available

    if not available():
        pytest.skip("Oclgrind is not installed")
    A, B = ts.placeholder((5, 7), name="A"), ts.placeholder((7, 3), name="B")
    k = ts.reduce_axis((0, 7), name="k")
    C = ts.compute((5, 3), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    s[C].bind(C.op.axis[0], ts.thread_axis("threadIdx.y"))
    s[C].bind(C.op.axis[1], ts.thread_axis("threadIdx.x"))
    func = ts.lower(s, [A, B, C], name="k")
    assert _right_under_oclgrind(func, {"args": [A, B, C], "ref": lambda a, b: a @ b}, 0)
    assert not _right_under_oclgrind(func, {"args": [A, B, C], "ref": lambda a, b: a @ b + 1}, 0)


def test_kernels_with_a_barrier_in_a_loop_are_checked_in_a_child_process(monkeypatch):
    """PoCL 3.1 aborts the process on some legal kernels with barriers inside loops
    (``benchmarks/results/cpu_amd_2026-11-29_s30/pocl_abort.py``): the OpenCL fuzz test runs
    such cases in a child process, and a child killed by a signal is the device's fault
    where Oclgrind computes the case right."""
    import subprocess

    from fuzzing import run as fuzz_run_module

    from tensorsched.ops.templates import TEMPLATES
    from tensorsched.runtime.numerics import NumericsMismatch

    s, args = TEMPLATES["gemm"]["gpu_tiled"](ts.ops.space.Config(), 40, 72, 40)
    assert fuzz_run_module._barrier_in_a_loop(ts.build(s, args, target="opencl").get_source())
    A = ts.placeholder((8,), name="A")
    B = ts.compute((8,), lambda i: A[i] + 1, name="B")
    plain = ts.create_schedule(B.op)
    assert not fuzz_run_module._barrier_in_a_loop(
        ts.build(plain, [A, B], target="opencl").get_source()
    )

    monkeypatch.setattr(fuzz_run_module, "to_python", lambda case, target: "pass")
    for code, err, want in (
        (0, "", None),
        (-6, "python: ParallelRegion.cc:427: Assertion failed.", "signal 6"),
        (1, "tensorsched.runtime.numerics.NumericsMismatch: C differs", NumericsMismatch),
    ):
        done = subprocess.CompletedProcess([], code, "", err)
        monkeypatch.setattr(subprocess, "run", lambda *a, done=done, **k: done)
        if isinstance(want, type):
            with pytest.raises(want):
                fuzz_run_module._check_in_a_child(None, 0)
        elif want is None:
            assert fuzz_run_module._check_in_a_child(None, 0) is None
        else:
            assert want in fuzz_run_module._check_in_a_child(None, 0)
