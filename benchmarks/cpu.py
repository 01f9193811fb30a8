"""CPU OpenCL device (PoCL) against numpy (OpenBLAS), side by side in one run.

For GEMM 1024^3 and 3136x256x2304 (the VGG layer as im2col) the best of a handful of
hand-picked configs of the CPU templates is compared with ``numpy.matmul``; for the VGG layer
56x56x256 3x3 the best spatially packed conv is compared with numpy's im2col + matmul. Every
result is checked against numpy before it is timed. Times are medians of ``--repeat`` runs.

    python benchmarks/cpu.py [--repeat 5] [--quick]
"""

import argparse
import statistics
import time

import numpy as np

import tensorsched as ts
from tensorsched.ops.conv2d import ConvShape, conv2d_ref
from tensorsched.ops.space import Config
from tensorsched.ops.templates import TEMPLATES
from tensorsched.runtime.numerics import TOL, random_array, relative_error
from tensorsched.runtime.table import print_table

GEMM_CONFIGS = [
    ("cpu", dict(tile_y=(1, 16), tile_x=(2, 64), vec=16, tile_k=(4,))),
    ("cpu", dict(tile_y=(2, 8), tile_x=(2, 32), vec=16, tile_k=(2,))),
    ("cpu", dict(tile_y=(1, 8), tile_x=(1, 64), vec=16, tile_k=(4,))),
    ("cpu", dict(tile_y=(2, 16), tile_x=(2, 16), vec=16, tile_k=(4,))),
    ("block2x2", dict(layout="blocked", work_group=(8, 8))),
]
CONV_CONFIGS = [
    ("spatial_pack", dict(VH=2, VW=8, VC=8, num_thread=4, accumulate="local")),
    ("spatial_pack", dict(VH=1, VW=8, VC=8, num_thread=8, accumulate="local")),
    ("spatial_pack", dict(VH=2, VW=4, VC=8, num_thread=8, accumulate="local")),
    ("spatial_pack", dict(VH=1, VW=4, VC=4, num_thread=8, accumulate="global")),
    ("im2col", {}),
]


def median_time(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def best_of(kind, configs, shape_args, inputs, ref, repeat, flop):
    rows = []
    for name, knobs in configs:
        s, args = TEMPLATES[kind][name](Config(knobs), *shape_args)
        mod = ts.build(s, args, target="opencl")
        out = np.full(args[-1].shape, np.nan, np.float32)
        mod(*inputs, out)
        err = relative_error(out, ref)
        if not err <= TOL["float32"]:
            raise SystemExit(f"{name} {knobs}: wrong result (relative error {err:.1e})")
        t = mod.time_evaluator(repeat=repeat)(*inputs, out).device_median
        rows.append((t, name, knobs))
        print(f"  {name:<13} {str(knobs):<72} {t * 1e3:8.2f} ms {flop / t / 1e9:7.1f} GFLOP/s")
    return min(rows, key=lambda r: r[0])


def im2col(d, KH, KW, pad):
    n, c, h, w = d.shape
    p = np.pad(d, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - KH + 1, w + 2 * pad - KW + 1
    cols = np.lib.stride_tricks.sliding_window_view(p, (KH, KW), axis=(2, 3))[:, :, :oh, :ow]
    return cols.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * KH * KW)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="two configs per workload")
    args = ap.parse_args()
    gemm_configs = GEMM_CONFIGS[:2] if args.quick else GEMM_CONFIGS
    conv_configs = CONV_CONFIGS[:2] if args.quick else CONV_CONFIGS
    rng = np.random.default_rng(0)
    table = []
    for M, N, K in [(1024, 1024, 1024), (3136, 256, 2304)]:
        a = random_array((M, K), np.float32, rng)
        b = random_array((K, N), np.float32, rng)
        ref = a.astype(np.float64) @ b
        flop = 2 * M * N * K
        print(f"GEMM {M}x{N}x{K}")
        t, name, knobs = best_of("gemm", gemm_configs, (M, N, K), [a, b], ref, args.repeat, flop)
        tn = median_time(lambda: a @ b, args.repeat)
        table.append((f"GEMM {M}x{N}x{K}", f"{name} {knobs}", t, tn, flop))

    sh = ConvShape(1, 256, 56, 56, 256, 3, 3, 1, 1)
    d = random_array((1, 256, 56, 56), np.float32, rng)
    w = random_array((256, 256, 3, 3), np.float32, rng)
    wmat = w.reshape(256, -1).T

    def numpy_conv():
        return (im2col(d, 3, 3, 1) @ wmat).T.reshape(1, 256, 56, 56)

    ref = conv2d_ref(d, w, 1, 1)
    print("conv2d VGG 56x56x256 3x3")
    t, name, knobs = best_of("conv2d", conv_configs, (sh,), [d, w], ref, args.repeat, sh.flop)
    tn = median_time(numpy_conv, args.repeat)
    table.append(("conv2d VGG 56x56x256 3x3", f"{name} {knobs}", t, tn, sh.flop))

    print(
        "\nmedian device time of the best tensorsched config vs numpy (im2col + matmul for the "
        "conv), same run"
    )
    rows = [
        (wl, f"{flop / t / 1e9:.1f} GF/s", f"{flop / tn / 1e9:.1f} GF/s", f"{tn / t:.2f}x", cfg)
        for wl, cfg, t, tn, flop in table
    ]
    print_table(["workload", "tensorsched", "numpy", "ratio", "best config"], rows, "<>>>")


if __name__ == "__main__":
    main()
