"""The best logged GEMM configs rebuilt with other OpenCL build options, against cuBLAS, side by
side: does the compiler's register budget or contraction change what the kernel reaches?

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/options_probe.py [--top 3]

For 4096^3 and 8192^3, the ``--top`` fastest configs of ``benchmarks/gpu/logs`` are each built
with every option set below, checked against numpy (poisoned output) and timed by events on
device-resident arrays (median of 20); cuBLAS (torch, TF32 off) is timed in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench import cuda_call_times  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.numerics import random_array, relative_error  # noqa: E402
from tensorsched.runtime.table import print_table  # noqa: E402
from tensorsched.tune.log import read_log  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

OPTION_SETS = {
    "default": (),
    "mad": ("-cl-mad-enable",),
    "regs96": ("-cl-nv-maxrregcount=96",),
    "regs128": ("-cl-nv-maxrregcount=128",),
    "regs168": ("-cl-nv-maxrregcount=168",),
    "regs255": ("-cl-nv-maxrregcount=255",),
    "mad+regs128": ("-cl-mad-enable", "-cl-nv-maxrregcount=128"),
}
LOGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "logs")


def cublas_tflops(M: int, N: int, K: int) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.rand(M, K, device="cuda")
    b = torch.rand(K, N, device="cuda")
    times = cuda_call_times(torch, lambda: a @ b, 20)
    return 2 * M * N * K / statistics.median(times) / 1e12


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--top", type=int, default=3)
    a = p.parse_args()
    import pyopencl.array as cla

    rows = []
    for name, (M, N, K) in (("gemm4096", (4096,) * 3), ("gemm8192", (8192,) * 3)):
        task = Task("gemm", "gpu_tiled", (M, N, K))
        recs = [r for r in read_log(os.path.join(LOGS, name + ".jsonl")) if r.status == "ok"]
        recs = sorted(recs, key=lambda r: r.device_ms or 1e9)[: a.top]
        cub = cublas_tflops(M, N, K)
        rng = np.random.default_rng(0)
        x, y = random_array((M, K), "float32", rng), random_array((K, N), "float32", rng)
        ref = None
        for rank, r in enumerate(recs):
            s, args, _ = task.instantiate(r.config)
            for label, opts in OPTION_SETS.items():
                try:
                    mod = ts.build(s, args, target="opencl", options=opts)
                except Exception as exc:  # an option the driver refuses
                    rows.append([name, rank, label, f"build failed: {str(exc)[:40]}", "", ""])
                    continue
                q = mod.device.queue
                dx, dy = cla.to_device(q, x), cla.to_device(q, y)
                dz = cla.to_device(q, np.full((M, N), np.nan, np.float32))
                mod(dx, dy, dz)
                if ref is None:
                    ref = x.astype(np.float64)[:512] @ y.astype(np.float64)
                err = relative_error(dz.get()[:512], ref)
                t = mod.time_evaluator(repeat=20)(dx, dy, dz)
                tf = 2 * M * N * K / t.device_median / 1e12
                rows.append(
                    [
                        name,
                        rank,
                        label,
                        f"{tf:.2f}",
                        f"{tf / cub:.3f}x" if cub else "-",
                        f"{err:.1e}",
                    ]
                )
                print(rows[-1], flush=True)
        rows.append([name, "-", "cuBLAS", f"{cub:.2f}" if cub else "-", "1.000x", ""])
    print_table(["workload", "config rank", "options", "TFLOP/s", "vs cuBLAS", "error"], rows)


if __name__ == "__main__":
    main()
