"""ts.runtime.awake_cores: a spinner at idle priority on each core, gone with the block or its
parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tensorsched as ts
from tensorsched.errors import RuntimeCallError
from tensorsched.runtime.awake import supported

pytestmark = pytest.mark.skipif(not supported(), reason="needs Linux's SCHED_IDLE")


def children(pid: int) -> list[int]:
    path = f"/proc/{pid}/task/{pid}/children"
    with open(path) as f:
        return [int(p) for p in f.read().split()]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_each_core_gets_a_pinned_idle_priority_spinner_until_the_block_ends() -> None:
    before = set(children(os.getpid()))
    with ts.runtime.awake_cores() as cores:
        assert cores == sorted(os.sched_getaffinity(0))
        spinners = [p for p in children(os.getpid()) if p not in before]
        assert len(spinners) == len(cores)
        time.sleep(0.3)  # each has pinned itself and lowered its priority by now
        assert sorted(next(iter(os.sched_getaffinity(p))) for p in spinners) == cores
        assert all(len(os.sched_getaffinity(p)) == 1 for p in spinners)
        assert all(os.sched_getscheduler(p) == os.SCHED_IDLE for p in spinners)
    assert not any(alive(p) for p in spinners)


def test_a_kernel_run_among_the_spinners_is_correct() -> None:
    A = ts.placeholder((67, 45), name="A")
    B = ts.compute((67, 45), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s = ts.create_schedule(B.op)
    f = ts.build(s, [A, B], target="opencl")
    a = np.random.default_rng(1).standard_normal((67, 45)).astype(np.float32)
    out = np.full((67, 45), np.nan, np.float32)
    with ts.runtime.awake_cores([min(os.sched_getaffinity(0))]) as cores:
        assert len(cores) == 1
        f(a, out)
    np.testing.assert_allclose(out, a * 2 + 1, rtol=1e-6)


def test_a_core_this_process_may_not_use_is_refused() -> None:
    outside = max(os.sched_getaffinity(0)) + 1
    with pytest.raises(RuntimeCallError, match=r"not among those this process may run on"):
        with ts.runtime.awake_cores([outside]):
            pass


def test_the_spinners_leave_when_their_parent_is_killed() -> None:
    code = textwrap.dedent(
        """
        import os, sys, time
        import tensorsched as ts
        with ts.runtime.awake_cores():
            time.sleep(0.2)
            with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as f:
                print(f.read().strip(), flush=True)
            time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    spinners = [int(p) for p in proc.stdout.readline().split()]
    assert spinners
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 5
    while any(alive(p) for p in spinners) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in spinners)


@pytest.mark.opencl
def test_tune_awake_tunes_with_the_spinners_running_and_leaves_none(tmp_path, monkeypatch) -> None:
    import tensorsched.cli as cli_module

    seen: list[int] = []  # the idle-priority children while the tasks are tuned
    real = cli_module._tune_tasks

    def spy(*args, **kwargs):
        time.sleep(0.3)
        kids = children(os.getpid())
        seen.extend(p for p in kids if os.sched_getscheduler(p) == os.SCHED_IDLE)
        return real(*args, **kwargs)

    monkeypatch.setattr(cli_module, "_tune_tasks", spy)
    log = tmp_path / "awake.jsonl"
    argv = ["tune", "gemm", "--shape", "16,16,16", "--template", "cpu", "--trials", "2"]
    cli_module.main([*argv, "--verify", "0", "--awake", "--log", str(log)])
    assert len(seen) == len(os.sched_getaffinity(0))
    assert log.read_text().count("\n") == 2
    assert not any(alive(p) for p in seen)
