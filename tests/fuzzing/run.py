"""Running a case as its code prints it, and counting the outcomes."""

from __future__ import annotations

import traceback
from collections import Counter

from tensorsched.codegen.opencl import emit_opencl
from tensorsched.errors import CodegenError, TensorschedError
from tensorsched.runtime.numerics import NumericsMismatch

from .model import FuzzFailure, Outcome
from .render import Case, Renderer, header, to_python
from .workloads import PRELUDE


class FuzzStats(Counter):
    """How many cases of each mode ended how (``"legal:passed"`` ...): ``run_case`` adds to
    the one it is given; ``lines()`` says it in words."""

    def count(self, case: Case, outcome: Outcome) -> Outcome:
        return _count(self, case, outcome)

    def lines(self) -> list[str]:
        return summary_lines(self)


def _fail(case, what, target, exc=None):
    tb = "".join(traceback.format_exception(exc)) if exc is not None else ""
    raise FuzzFailure(
        f"{what}\n\n--- reproduce with ---\n{to_python(case, target)}"
        + (f"--- traceback ---\n{tb}" if tb else "")
    ) from exc


def _is_user_error(exc):
    return isinstance(exc, TensorschedError) and not isinstance(exc, AssertionError)


def run_case(case, target="python", seed=0, stats=None):
    """Run ``case`` as ``to_python`` prints it; return an ``Outcome`` or raise
    ``FuzzFailure``. ``target``: ``"python"`` (exact, bounds-checked), ``"opencl"`` (the
    default device), or ``"oclgrind"`` (the OpenCL kernels under Oclgrind with its race,
    bounds and uninitialised-value checks). The outcome is counted in ``stats`` (default:
    a throwaway ``FuzzStats`` when none is given)."""
    stats = FuzzStats() if stats is None else stats

    import tensorsched as ts
    from tensorsched.runtime.numerics import check_numerics

    ns = {}
    exec(compile(PRELUDE + header(case), f"<fuzz {case.workload}>", "exec"), ns)
    r = Renderer()
    first_bad = next((n for n, st in enumerate(case.steps) if st.expect == "error"), None)

    def status(n):
        return "handled" if first_bad is not None and n >= first_bad else "rejected"

    for n, step in enumerate(case.steps):
        code = r.step(step)
        try:
            exec(compile(code, f"<fuzz step {n}>", "exec"), ns)
        except Exception as exc:  # noqa: BLE001
            if not _is_user_error(exc):
                _fail(
                    case,
                    f"step {n} raised {type(exc).__name__} (not a TensorschedError): {exc}",
                    target,
                    exc,
                )
            return _count(stats, case, Outcome(status(n), n, f"{type(exc).__name__}: {exc}"))
    try:
        func = ts.lower(ns["s"], ns["args"], name="fuzzed")
    except Exception as exc:  # noqa: BLE001
        if not _is_user_error(exc):
            _fail(
                case,
                f"ts.lower raised {type(exc).__name__} (not a TensorschedError): {exc}",
                target,
                exc,
            )
        return _count(
            stats,
            case,
            Outcome(status(len(case.steps)), len(case.steps), f"{type(exc).__name__}: {exc}"),
        )
    if first_bad is not None:
        _fail(
            case,
            f"an illegal schedule was accepted: step "
            f"{[i for i, st in enumerate(case.steps) if st.expect == 'error']} should have "
            "raised a TensorschedError, and lowering did not either",
            target,
        )
    try:
        if target == "oclgrind":
            _check_under_oclgrind(func, ns, seed)
        elif target == "opencl" and _barrier_in_a_loop(emit_opencl(func).text):
            aborted = _check_in_a_child(case, seed)
            if aborted is not None:
                if not _right_under_oclgrind(func, ns, seed):
                    _fail(case, f"the OpenCL device aborted, and Oclgrind too: {aborted}", target)
                return _count(stats, case, Outcome("miscompiled", None, aborted, func))
        else:
            check_numerics(func, ns["args"], ns["ref"], target=target, seed=seed)
    except CodegenError as exc:
        # the target cannot express this legal schedule: reported, not a wrong answer
        return _count(stats, case, Outcome("rejected", len(case.steps), f"CodegenError: {exc}"))
    except NumericsMismatch as exc:
        if target == "opencl" and _right_under_oclgrind(func, ns, seed):
            return _count(stats, case, Outcome("miscompiled", None, f"{exc}", func))
        _fail(
            case,
            f"the lowered schedule failed on target {target!r}: {type(exc).__name__}: {exc}",
            target,
            exc,
        )
    except Exception as exc:  # noqa: BLE001
        _fail(
            case,
            f"the lowered schedule failed on target {target!r}: {type(exc).__name__}: {exc}",
            target,
            exc,
        )
    return _count(stats, case, Outcome("passed", None, "", func))


def _barrier_in_a_loop(source: str) -> bool:
    """Whether a kernel of the OpenCL C ``source`` has a barrier inside a ``for`` loop."""
    blocks: list[bool] = []  # open blocks, True for a loop's
    for line in source.splitlines():
        text = line.strip()
        if "barrier(" in text and any(blocks):
            return True
        blocks = blocks[: len(blocks) - text.count("}")] if text.startswith("}") else blocks
        if text.endswith("{"):
            blocks.append(text.startswith("for ("))
    return False


def _check_in_a_child(case, seed):
    """Check the case on the OpenCL device in a child process, as ``to_python`` prints it:
    None where it matched numpy; the device's last words where the process was killed by a
    signal. PoCL 3.1's work-group compiler aborts the process on some legal kernels with
    barriers inside loops (``benchmarks/results/cpu_amd_2026-11-29_s30/pocl_abort.py``),
    which would end the test run. A wrong result raises ``NumericsMismatch`` here as it
    would have in this process."""
    import subprocess
    import sys

    code = to_python(case, "opencl").replace("target='opencl')", f"target='opencl', seed={seed})")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if p.returncode == 0:
        return None
    last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
    if p.returncode < 0:
        return f"the device's compiler killed the process (signal {-p.returncode}): {last}"
    if "NumericsMismatch" in p.stderr:
        raise NumericsMismatch(last)
    raise RuntimeError(f"the case's child process failed (exit {p.returncode}): {last}")


def _check_under_oclgrind(func, ns, seed):
    """Run ``func`` under Oclgrind with its checkers and compare its outputs with the case's
    numpy reference; raise ``OclgrindError`` or ``NumericsMismatch``."""
    import numpy as np

    from tensorsched.runtime.numerics import compare, make_arrays
    from tensorsched.runtime.oclgrind import run_checked

    arrays, ins, outs = make_arrays(ns["args"], seed)
    run_checked(func, arrays)
    expected = ns["ref"](*[a.astype(np.float64) for a in ins])
    expected = expected if isinstance(expected, tuple) else (expected,)
    for (t, a), e in zip(outs, expected):
        compare(a, e, t.dtype, name=t.name)


def _right_under_oclgrind(func, ns, seed):
    """Whether ``func``'s kernels, whose results on the OpenCL device were wrong, run right
    under Oclgrind with its checkers (no race, out-of-bounds access, uninitialised read or
    divergent barrier) and match numpy: then the device's compiler miscompiled correct code
    (PoCL 3.1 does: ``benchmarks/results/cpu_amd_2026-11-29_s29/pocl_miscompile.py``). False
    where Oclgrind is not installed."""
    from tensorsched.runtime.oclgrind import OclgrindError, available

    if not available():
        return False
    try:
        _check_under_oclgrind(func, ns, seed)
    except (OclgrindError, NumericsMismatch):
        return False
    return True


def _count(stats, case, outcome):
    stats[f"{case.mode}:{outcome.status}"] += 1
    return outcome


def summary_lines(stats):
    """The counts of ``stats`` in words (failures raise, so every counted case passed)."""
    g = stats.get
    out = []
    n = g("legal:passed", 0) + g("legal:rejected", 0) + g("legal:miscompiled", 0)
    if n:
        out.append(
            f"legal schedules fuzzed: {n}; lowered and matched numpy: "
            f"{g('legal:passed', 0)}; refused with a TensorschedError: "
            f"{g('legal:rejected', 0)}"
            + (
                f"; wrong on the OpenCL device, or aborted by its compiler, but right under "
                f"Oclgrind's checks (the device's compiler): {g('legal:miscompiled', 0)}"
                if g("legal:miscompiled", 0)
                else ""
            )
        )
    n = g("illegal:handled", 0) + g("illegal:rejected", 0) + g("illegal:passed", 0)
    if n:
        out.append(
            f"illegal sequences tried: {n}; raised a TensorschedError: "
            f"{g('illegal:handled', 0)}"
            + (
                f" (+{g('illegal:rejected', 0) + g('illegal:passed', 0)} whose legal "
                "prefix already stopped or that found no misuse to add)"
                if g("illegal:rejected", 0) + g("illegal:passed", 0)
                else ""
            )
        )
    n = g("random:passed", 0) + g("random:rejected", 0)
    if n:
        out.append(
            f"random primitive sequences: {n}; raised a TensorschedError: "
            f"{g('random:rejected', 0)}; lowered and matched numpy: "
            f"{g('random:passed', 0)}"
        )
    return out
