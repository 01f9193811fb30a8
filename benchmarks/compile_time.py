"""Time from schedule to lowered IR, and to OpenCL source, for the seed conv (kernel 3, VGG
56x56x256 3x3) and a tiled GEMM 1024, beside TVM's figures measured on this machine.

    python benchmarks/compile_time.py [--repeat 20]
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

import gemm_schedule  # noqa: E402
import seed_conv  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.codegen.opencl import emit_opencl  # noqa: E402

TVM_MS = {"GEMM 1024 (tiled)": 21.5, "seed conv kernel 3": 45.0}  # TVM C++: lower + build source


def cases():
    def gemm():
        A, B, C = gemm_schedule.gemm(1024, 1024, 1024)
        return gemm_schedule.schedule(A, B, C), [A, B, C]

    def conv():
        t = seed_conv.declare()
        return seed_conv.schedule(t, 3), [t[0], t[1], t[-1]]

    return {"GEMM 1024 (tiled)": gemm, "seed conv kernel 3": conv}


def median_ms(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=20)
    args = p.parse_args()
    rows = []
    for name, make in cases().items():
        lower_ms = median_ms(lambda: ts.lower(*make()), args.repeat)
        source_ms = median_ms(lambda: emit_opencl(ts.lower(*make())), args.repeat)
        rows.append((name, lower_ms, source_ms, TVM_MS[name], TVM_MS[name] / source_ms))
    print(f"median of {args.repeat} runs, schedule construction included")
    print(
        f"{'workload':<22} | {'to lowered IR':>13} | {'to OpenCL C':>11} | {'TVM (C++)':>9} | "
        f"{'TVM / ours':>10}"
    )
    print("-" * 78)
    for name, lo, src, tvm, ratio in rows:
        print(f"{name:<22} | {lo:>10.1f} ms | {src:>8.1f} ms | {tvm:>6.1f} ms | {ratio:>9.2f}x")


if __name__ == "__main__":
    main()
