"""Every script in ``examples/`` runs at its default size on the OpenCL device and exits with
status 0 (each checks its own results against numpy and exits non-zero on a mismatch)."""

import glob
import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
SCRIPTS = sorted(
    p for p in glob.glob(os.path.join(EXAMPLES, "*.py")) if not os.path.basename(p).startswith("_")
)
TIMEOUT = 120


def test_examples_are_found():
    assert len(SCRIPTS) >= 5, SCRIPTS


@pytest.mark.opencl
@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=os.path.basename)
def test_example_runs(device, script, tmp_path):
    try:
        proc = subprocess.run(
            [sys.executable, script], cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{os.path.basename(script)} ran over {TIMEOUT} s:\n{exc.stdout or ''}")
    if proc.returncode != 0:
        pytest.fail(
            f"{os.path.basename(script)} exited with status {proc.returncode}\n"
            f"--- stdout (tail) ---\n{proc.stdout[-4000:]}\n"
            f"--- stderr (tail) ---\n{proc.stderr[-4000:]}"
        )
