"""Cores kept awake between a CPU device's kernels.

PoCL's worker threads sleep between kernels, and so does a core with nothing to run. On a
virtual machine the hypervisor may then give that core's time to someone else: on a 2-core
AMD EPYC VM (PoCL 3.1), a kernel of pure FMAs ran at 225-232 GFLOP/s or at exactly half of
that, 116-118, for stretches of tens to hundreds of calls back to back, and a 1023x769x333
GEMM at 2.5-5.0 ms a call (numpy, whose OpenBLAS threads spin between calls, held 2.6 ms).
``awake_cores`` starts one process per core that spins at ``SCHED_IDLE`` priority: it runs
only when nothing else wants the core, so the kernels lose next to nothing to it, and the
core never halts. With them the FMA kernel held 213-229 GFLOP/s in every call
(``benchmarks/README.md``). onnxruntime's and
OpenBLAS's thread pools spin between calls for the same reason; PoCL's cannot be told to.

The cost is the cores' idle time, burnt: use it around latency-critical loops, tuning and
benchmarks, not for a whole program's life. Linux only (elsewhere it does nothing).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from ..errors import RuntimeCallError

# each spinner: pinned to its core, at SCHED_IDLE; it leaves when its parent does
_SPIN = """
import os, sys, time
core, parent = int(sys.argv[1]), int(sys.argv[2])
os.sched_setaffinity(0, {core})
os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
while os.getppid() == parent:
    end = time.monotonic() + 0.1
    while time.monotonic() < end:
        pass
"""


def supported() -> bool:
    """Whether this platform can pin a process and run it at idle priority (Linux)."""
    return all(hasattr(os, n) for n in ("sched_setaffinity", "sched_setscheduler", "SCHED_IDLE"))


@contextmanager
def awake_cores(cpus: Iterable[int] | None = None) -> Iterator[list[int]]:
    """Keep ``cpus`` (default: every core this process may run on) from halting while the
    block runs, by a spinning process at idle priority on each; yields the cores (none where
    the platform cannot, see ``supported``). The spinners are killed when the block ends and
    leave by themselves if this process dies.

        with ts.runtime.awake_cores():
            for batch in batches:
                module(batch, out)
    """
    if not supported():
        yield []
        return
    allowed = os.sched_getaffinity(0)
    chosen = sorted(allowed) if cpus is None else sorted({int(c) for c in cpus})
    outside = [c for c in chosen if c not in allowed]
    if outside:
        raise RuntimeCallError(
            f"awake_cores: cores {outside} are not among those this process may run on "
            f"({sorted(allowed)}); pass some of those, or None for all of them"
        )
    procs: list[subprocess.Popen] = []
    try:
        for core in chosen:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", _SPIN, str(core), str(os.getpid())],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        yield chosen
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
