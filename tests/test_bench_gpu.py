"""``benchmarks/gpu/bench.py`` end to end on the local OpenCL device with tiny workloads (tune a
few trials into a temporary log folder, measure, check, print the table), then again from the
logs without tuning; and its table and goals on made-up figures."""

import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "gpu"))
from clblast_lib import ClBlast, ClBlastError  # noqa: E402  (the benchmark's, not the package's)

WORKLOADS = "gemm:64,48,40,conv:1,4,8,8,16,3,3,1,1"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "bench_gpu", os.path.join(ROOT, "benchmarks", "gpu", "bench.py")
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ocl_device():
    from tensorsched.runtime.device import DeviceError, current_device

    try:
        return current_device()
    except (DeviceError, ImportError) as exc:
        pytest.skip(f"no OpenCL device: {exc}")


def clblast_loads():
    try:
        ClBlast.load(debs_dir=os.path.join(ROOT, ".whl"))
        return True
    except (ClBlastError, OSError):
        return False


def test_tiny_run_tunes_checks_and_prints_the_table(ocl_device, bench, tmp_path, capsys):
    logs, out = tmp_path / "logs", tmp_path / "bench.txt"
    argv = [
        "--workloads",
        WORKLOADS,
        "--trials",
        "3",
        "--acl-configs",
        "1",
        "--quick",
        "--log-dir",
        str(logs),
        "--out",
        str(out),
    ]
    assert bench.main(argv) == 0  # 0: every check passed, nothing failed
    text = capsys.readouterr().out
    assert "# command: python " in text and "--trials 3" in text
    assert "configs/min" in text  # tuning throughput, tensorsched and ACL
    assert (logs / "gemm_64x48x40.jsonl").exists()
    assert (logs / "conv_1x4x8x8x16x3x3x1x1.jsonl").exists()
    assert (logs / "acl" / "acl_best.json").exists()
    table = text[text.index("TFLOP/s (median)") :]
    assert "ts/ACL-style" in table
    gemm_row = next(line for line in table.splitlines() if line.startswith("GEMM 64x48x40"))
    conv_row = next(line for line in table.splitlines() if line.startswith("conv 8x8x4->16"))
    for row in (gemm_row, conv_row):
        assert "WRONG" not in row
        cells = [c.strip() for c in row.split("|")]
        assert cells[1] not in ("-", "n/a") and cells[2] not in ("-", "n/a")  # ts, ACL
    if clblast_loads():
        assert "ts/CLBlast" in table and "CLBlast" in text
        assert gemm_row.split("|")[3].strip() not in ("-", "n/a")
    else:
        assert "CLBlast skipped" in text
    assert out.read_text() == text  # --out holds everything printed

    # from the logs alone: nothing is tuned, the same kernels are checked and timed again
    assert bench.main(argv[:2] + ["--quick", "--skip", "clblast", "--log-dir", str(logs)]) == 0
    again = capsys.readouterr().out
    assert "configs/min" not in again
    assert "no correct trial" not in again and "not tuned" not in again


def test_workload_names(bench):
    ws = bench.parse_workloads("gemm4096,gemm:64,48,40,conv:1x4x8x8x16x3x3x1x1,conv_vgg")
    assert [w.name for w in ws] == [
        "gemm4096",
        "gemm_64x48x40",
        "conv_1x4x8x8x16x3x3x1x1",
        "conv_vgg",
    ]
    assert ws[0].flop == 2 * 4096**3 and ws[3].acl_shape == (3136, 256, 2304, 1)
    with pytest.raises(SystemExit):
        bench.parse_workloads("gemm:1,2")


def test_table_and_goals_from_made_up_figures(bench, capsys):
    R = bench.Result
    ws = [bench.STANDARD["gemm4096"], bench.STANDARD["conv_vgg"]]
    flop = {w.name: w.flop for w in ws}

    def at(name, tflops):  # a checked result of this many TFLOP/s
        return R(seconds=flop[name] / (tflops * 1e12), error=1e-6)

    results = {
        "gemm4096": {
            bench.TS: at("gemm4096", 20.0),
            bench.CLBT: at("gemm4096", 16.0),
            bench.CLB: at("gemm4096", 10.0),
            bench.VENDOR: at("gemm4096", 25.0),
            bench.ACL: R(error=0.5),
        },  # a wrong result
        "conv_vgg": {
            bench.TS: at("conv_vgg", 12.0),
            bench.ACL: at("conv_vgg", 5.0),
            bench.VENDOR: at("conv_vgg", 20.0),
        },
    }
    bench.print_table(ws, results)
    bench.print_goals(ws, results)
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.startswith("GEMM 4096^3"))
    assert "WRONG" in row and "1.25x" in row and "2.00x" in row and "0.80x" in row
    assert "tensorsched / CLBlast tuned >= 1.1: 1.25 -> met" in text
    assert "tensorsched / cuBLAS >= 0.9: 0.80 -> not met" in text
    assert "tensorsched / cuDNN >= 0.8: 0.60 -> not met" in text
    assert "tensorsched / GEMM method >= 2: 2.40 -> met" in text


def test_kernels_launched_through_cuda_get_their_own_ratio_to_cublas(bench, capsys):
    """The ``ts via CUDA`` column (NVIDIA only) is compared with cuBLAS, not with
    tensorsched's own OpenCL figure: ``via CUDA/cuBLAS`` beside ``ts/cuBLAS/cuDNN``."""
    R = bench.Result
    w = bench.STANDARD["gemm4096"]
    results = {
        "gemm4096": {
            bench.TS: R(seconds=w.flop / 40e12, error=1e-6),
            bench.VENDOR: R(seconds=w.flop / 50e12, error=1e-6),
            bench.TSC: R(seconds=w.flop / 55e12, error=1e-6),
        }
    }
    bench.print_table([w], results)
    head, _, row = capsys.readouterr().out.splitlines()[:3]
    cells = dict(zip([c.strip() for c in head.split("|")], [c.strip() for c in row.split("|")]))
    assert cells["ts/cuBLAS/cuDNN"] == "0.80x" and cells["via CUDA/cuBLAS"] == "1.10x"
    assert "ts/ts via CUDA" not in head
