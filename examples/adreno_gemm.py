"""Seed 004's Adreno GEMM: B read through an image2d_t, each work-item an 8x4 micro-tile of
float4 rows, over several work-group shapes, with the seed's work-group heuristic and its
``-cl-fast-relaxed-math`` build option.

    python examples/adreno_gemm.py [--full] [--repeat N] [--plot PNG]

The kernel is ``TEMPLATES["gemm"]["adreno"]`` (knobs ``work_group``, ``rows``, ``k_step``);
N must be a multiple of 4 (a texel holds 4 floats of a row of B). A work-group of (y, x)
work-items covers a macro-tile of (8*y) x (4*x) outputs. The heuristic follows the seed:
"minimize the number of partially occupied work-groups", and among equals prefer the bigger
work-group ("it is generally better to use bigger work-groups"), then the fewest idle
work-items. The table shows what it picks beside what measured fastest. Results are checked
against numpy; the script exits with status 1 on a mismatch.
"""

import argparse
import sys

import numpy as np

import tensorsched as ts
from tensorsched.ops.space import Config
from tensorsched.ops.templates import TEMPLATES, space
from tensorsched.runtime.device import current_device
from tensorsched.runtime.numerics import TOL, random_array, relative_error
from tensorsched.runtime.table import format_table

FAST_MATH = ["-cl-fast-relaxed-math"]
ROWS, COLS = 8, 4  # the micro-tile of one work-item (knob rows = 8)


def ceil_div(a, b):
    return -(-a // b)


def occupancy(M, N, wg):
    """(partially occupied work-groups, all work-groups, idle work-items) for work-group wg."""
    th, tw = wg[0] * ROWS, wg[1] * COLS
    gy, gx = ceil_div(M, th), ceil_div(N, tw)
    full = (M // th) * (N // tw)
    idle = gy * gx * wg[0] * wg[1] - ceil_div(M, ROWS) * ceil_div(N, COLS)
    return gy * gx - full, gy * gx, idle


def heuristic(M, N, work_groups):
    """Seed 004: fewest partially occupied work-groups, then the biggest, then fewest idle."""
    return min(
        work_groups, key=lambda wg: (occupancy(M, N, wg)[0], -wg[0] * wg[1], occupancy(M, N, wg)[2])
    )


def print_table(head, rows):
    print(format_table(head, rows) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--full",
        action="store_true",
        help="sizes up to 1024 (default: small sizes that run in seconds)",
    )
    p.add_argument("--repeat", type=int, default=5, help="timed runs per point (median kept)")
    p.add_argument("--plot", metavar="PNG", help="also plot GFLOPS per work-group and size")
    args = p.parse_args()
    sizes = (
        [(1024, 1024, 1024), (1000, 1024, 1024), (520, 2048, 1024)]
        if args.full
        else [(256, 256, 256), (200, 256, 128), (72, 512, 128)]
    )
    dev = current_device()
    print(
        f"OpenCL device: {dev.name} ({dev.platform_name}); max work-group size "
        f"{dev.max_work_group_size}; image support: {bool(dev.cl_device.image_support)}\n"
    )
    if not dev.cl_device.image_support:
        print("skipped: the device cannot read images (the kernel reads B as an image2d_t)")
        return
    tmpl = TEMPLATES["gemm"]["adreno"]
    rng = np.random.default_rng(0)
    failures, rows, picks, results = [], [], [], {}

    def run(M, N, K, wg, options):
        s, targs = tmpl(Config({"work_group": wg}), M, N, K)
        mod = ts.build(s, targs, target="opencl", name="gemm", options=options)
        a = random_array((M, K), np.float32, rng)
        b = random_array((K, N), np.float32, rng)
        c = np.full((M, N), np.nan, np.float32)  # poisoned: unwritten elements show
        mod(a, b, c)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        err = relative_error(c, ref)
        ok = err <= 10 * TOL["float32"]  # -cl-fast-relaxed-math: 10x float32's; NaN fails
        if not ok:
            failures.append(f"{M}x{N}x{K} work-group {wg} {options}: max relative error {err:.2e}")
        return mod.time_evaluator(repeat=args.repeat)(a, b, c), ok

    for M, N, K in sizes:
        flop = 2 * M * N * K
        wgs = [
            wg
            for wg in space(tmpl, M, N, K).space["work_group"].candidates
            if wg[0] * wg[1] <= dev.max_work_group_size
        ]
        best, best_t = None, None
        for wg in wgs:
            t, ok = run(M, N, K, wg, FAST_MATH)
            partial, total, idle = occupancy(M, N, wg)
            results[(M, N, K, wg)] = flop / t.device_median / 1e9
            if best_t is None or t.device_median < best_t:
                best, best_t = wg, t.device_median
            rows.append(
                (
                    f"{M}x{N}x{K}",
                    f"{wg[0]}x{wg[1]}",
                    f"{wg[0] * ROWS}x{wg[1] * COLS}",
                    f"{partial}/{total}",
                    idle,
                    f"{t.device_median * 1e3:.3f}",
                    f"{flop / t.device_median / 1e9:.2f}" + ("" if ok else "  MISMATCH"),
                )
            )
        picks.append((M, N, K, heuristic(M, N, wgs), best, best_t))

    print("== GEMM C = A @ B, B as image2d_t, 8x4 micro-tiles, built with -cl-fast-relaxed-math ==")
    print_table(
        (
            "M x N x K",
            "work-group (y x x)",
            "macro-tile",
            "partial/all groups",
            "idle work-items",
            "device ms",
            "GFLOPS",
        ),
        rows,
    )

    print("== Work-group heuristic (fewest partially occupied groups, then biggest) ==")
    hrows = []
    for M, N, K, pick, best, best_t in picks:
        pick_gf = results[(M, N, K, pick)]
        hrows.append(
            (
                f"{M}x{N}x{K}",
                f"{pick[0]}x{pick[1]}",
                f"{pick_gf:.2f}",
                f"{best[0]}x{best[1]}",
                f"{2 * M * N * K / best_t / 1e9:.2f}",
                f"{pick_gf / (2 * M * N * K / best_t / 1e9):.2f}",
            )
        )
    print_table(
        (
            "M x N x K",
            "heuristic picks",
            "its GFLOPS",
            "measured fastest",
            "its GFLOPS",
            "heuristic / fastest",
        ),
        hrows,
    )

    frows = []
    for M, N, K, pick, _, _ in picks:
        t_fast, ok1 = run(M, N, K, pick, FAST_MATH)
        t_plain, ok2 = run(M, N, K, pick, [])
        frows.append(
            (
                f"{M}x{N}x{K}",
                f"{pick[0]}x{pick[1]}",
                f"{t_plain.device_median * 1e3:.3f}",
                f"{t_fast.device_median * 1e3:.3f}",
                f"{t_plain.device_median / t_fast.device_median:.2f}"
                + ("" if ok1 and ok2 else "  MISMATCH"),
            )
        )
    print(
        "== Build option -cl-fast-relaxed-math (the seed recommends it), heuristic's work-group =="
    )
    print_table(
        (
            "M x N x K",
            "work-group",
            "device ms, plain",
            "device ms, fast-relaxed-math",
            "plain / fast",
        ),
        frows,
    )

    if args.plot:
        plot(args.plot, results, sizes, dev.name)
    if failures:
        print("\nMISMATCH against numpy:\n  " + "\n  ".join(failures))
        sys.exit(1)


def plot(path, results, sizes, device):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(
            f"\n--plot: matplotlib is not installed (pip install 'tensorsched[plot]'); "
            f"{path} not written"
        )
        return
    fig, ax = plt.subplots(figsize=(9, 4))
    wgs = sorted({k[3] for k in results}, key=lambda wg: (wg[0] * wg[1], wg))
    width = 0.8 / len(sizes)
    for n, (M, N, K) in enumerate(sizes):
        xs = [i + n * width for i in range(len(wgs))]
        ax.bar(xs, [results.get((M, N, K, wg), 0) for wg in wgs], width, label=f"{M}x{N}x{K}")
    ax.set_xticks([i + width * (len(sizes) - 1) / 2 for i in range(len(wgs))])
    ax.set_xticklabels([f"{y}x{x}" for y, x in wgs])
    ax.set_xlabel("work-group (y x x)")
    ax.set_ylabel("GFLOPS (device time)")
    ax.set_title(f"seed 004's image2d GEMM on {device}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1, 1))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nplot written to {path}")


if __name__ == "__main__":
    main()
