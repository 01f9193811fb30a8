"""TVM's tutorials as rewritten in ``examples/tvm_tutorials/`` run and match numpy (each
script exits non-zero on a mismatch): the schedule-primitives, reduction and scan tutorials
on the python target (no device) and on the OpenCL device, the get-started and opt_gemm
tutorials on the CPU OpenCL device (their ``"llvm"`` target), opt_gemm at a small size, and
the AutoTVM tutorial (``ts.autotvm``) at 64x64x64, tuning at its top level, unguarded."""

import os
import subprocess
import sys

import pytest

from tensorsched.runtime.device import DeviceError, current_device
from tensorsched.runtime.tvm_api import cpu_opencl_device

FOLDER = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "tvm_tutorials"
)
SMALL = ["schedule_primitives.py", "reduction.py", "scan.py"]
TIMEOUT = 120


@pytest.fixture(scope="module")
def device():
    try:
        return current_device()
    except DeviceError as exc:
        pytest.skip(f"no OpenCL device: {exc}")
    except ImportError as exc:
        pytest.skip(f"pyopencl cannot be imported: {exc}")


def run(script, *args, cwd):
    proc = subprocess.run(
        [sys.executable, os.path.join(FOLDER, script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, (
        f"{script} {' '.join(args)} exited with status {proc.returncode}\n"
        f"--- stdout (tail) ---\n{proc.stdout[-3000:]}\n--- stderr (tail) ---\n{proc.stderr[-3000:]}"
    )
    return proc.stdout


def test_every_tutorial_is_tested():
    found = sorted(f for f in os.listdir(FOLDER) if f.endswith(".py"))
    assert found == sorted([*SMALL, "opt_gemm.py", "get_started.py", "tune_simple_template.py"])


@pytest.mark.parametrize("script", SMALL)
def test_tutorial_on_the_python_target(script, tmp_path):
    out = run(script, "--target", "python", cwd=tmp_path)
    assert "max relative error" in out or "max error" in out


@pytest.mark.opencl
@pytest.mark.parametrize("script", SMALL)
def test_tutorial_on_the_device(device, script, tmp_path):
    out = run(script, cwd=tmp_path)
    assert "produce" in out  # the lowered IR is printed


@pytest.fixture(scope="module")
def cpu_device(device):
    try:
        return cpu_opencl_device()
    except DeviceError as exc:
        pytest.skip(f"the tutorial builds for 'llvm', the CPU OpenCL device: {exc}")


@pytest.mark.opencl
def test_get_started(cpu_device, tmp_path):
    out = run("get_started.py", cwd=tmp_path)
    assert "loaded from export_library" in out and "__kernel" in out


@pytest.mark.opencl
def test_opt_gemm(cpu_device, tmp_path):
    out = run("opt_gemm.py", "--size", "128", "--repeat", "1", cwd=tmp_path)
    steps = [line.split()[0] for line in out.splitlines() if "GFLOP/s" in line and "ok" in line]
    assert steps == ["baseline", "blocking", "vectorization", "loop", "array", "write", "parallel"]


@pytest.mark.opencl
def test_tune_simple_template(cpu_device, tmp_path):
    out = run("tune_simple_template.py", "64", cwd=tmp_path)
    assert "Split(policy=factors, product=64, num_outputs=2) len=7" in out
    assert out.count("GFLOPS:") == 10 and "the best config matches numpy" in out
    assert len((tmp_path / "matmul.log").read_text().splitlines()) >= 10
