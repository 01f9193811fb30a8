"""Seed 002: ARM's blocked-vectorized 2x2 GEMM against the same kernel on hybrid Morton-order
packed matrices, alone and with the bias + sigmoid and bias + ReLU epilogues fused in.

    python examples/mali_gemm_morton.py [--full] [--repeat N] [--plot PNG]

Both are ``TEMPLATES["gemm"]["block2x2"]``; the knob ``layout`` picks the memory layout:

- ``"blocked"``: ARM's kernel, A row-major and B packed column-major (a first kernel writes B^T);
- ``"morton"``: A and B^T packed first so that each work-item's 2 rows x 4 k-values are
  8 consecutive floats (the seed's hybrid Morton layout: one cache miss pattern per iteration).

Each work-item computes a 2x2 patch of C with float4 partial sums. ``epilogue=("bias",
"sigmoid")`` adds a bias per column and applies the activation before C is written. Times are
the device time of all the module's kernels (packing included). Results are checked against
numpy; the script exits with status 1 on a mismatch.
"""

import argparse
import sys

import numpy as np

import tensorsched as ts
from tensorsched.ops.space import Config
from tensorsched.ops.templates import TEMPLATES
from tensorsched.runtime.device import current_device
from tensorsched.runtime.numerics import TOL, random_array, relative_error
from tensorsched.runtime.table import format_table

EPILOGUES = {"none": (), "bias + sigmoid": ("bias", "sigmoid"), "bias + ReLU": ("bias", "relu")}
LAYOUTS = ("blocked", "morton")


def reference(a, b, bias, epilogue):
    out = a.astype(np.float64) @ b.astype(np.float64)
    for kind in epilogue:
        if kind == "bias":
            out = out + bias.astype(np.float64)
        elif kind == "relu":
            out = np.maximum(out, 0)
        elif kind == "sigmoid":
            out = 1 / (1 + np.exp(-out))
    return out


def print_table(head, rows):
    print(format_table(head, rows) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--full",
        action="store_true",
        help="sizes 256 to 2048 (default: small sizes that run in seconds)",
    )
    p.add_argument("--repeat", type=int, default=5, help="timed runs per point (median kept)")
    p.add_argument("--plot", metavar="PNG", help="also plot the Morton / blocked time ratio")
    args = p.parse_args()
    sizes = (256, 512, 1024, 2048) if args.full else (128, 256)
    dev = current_device()
    print(f"OpenCL device: {dev.name} ({dev.platform_name})\n")
    rng = np.random.default_rng(0)
    failures, rows, ratios = [], [], {}

    for n in sizes:
        M = N = K = n
        flop = 2 * M * N * K
        a = random_array((M, K), np.float32, rng)
        b = random_array((K, N), np.float32, rng)
        bias = random_array((N,), np.float32, rng)
        for ep_name, epilogue in EPILOGUES.items():
            ref = reference(a, b, bias, epilogue)
            times = {}
            for layout in LAYOUTS:
                s, targs = TEMPLATES["gemm"]["block2x2"](
                    Config({"layout": layout}), M, N, K, epilogue=epilogue
                )
                mod = ts.build(s, targs, target="opencl", name="gemm")
                ins = [a, b] + ([bias] if "bias" in epilogue else [])
                c = np.full((M, N), np.nan, np.float32)  # poisoned: unwritten elements show
                mod(*ins, c)
                err = relative_error(c, ref)
                if not err <= TOL["float32"]:  # NaN fails too
                    failures.append(f"{layout} {n}^3 {ep_name}: max relative error {err:.2e}")
                times[layout] = mod.time_evaluator(repeat=args.repeat)(*ins, c).device_median
            ratio = times["morton"] / times["blocked"]
            ratios[(n, ep_name)] = ratio
            rows.append(
                (
                    f"{n}x{n}x{n}",
                    ep_name,
                    f"{times['blocked'] * 1e3:.3f}",
                    f"{times['morton'] * 1e3:.3f}",
                    f"{flop / times['blocked'] / 1e9:.2f}",
                    f"{flop / times['morton'] / 1e9:.2f}",
                    f"{ratio:.3f}",
                )
            )

    print("== 2x2 blocked GEMM: ARM's layout against hybrid Morton packing (float) ==")
    print_table(
        (
            "M=N=K",
            "epilogue",
            "blocked ms",
            "morton ms",
            "blocked GFLOPS",
            "morton GFLOPS",
            "morton / blocked",
        ),
        rows,
    )
    print(
        "Seed 002 on a Mali-T628 (ODROID XU3): Morton 12% faster than ARM's blocked kernel, "
        "a time ratio of about 0.89."
    )
    if failures:
        print("\nMISMATCH against numpy:\n  " + "\n  ".join(failures))
    if args.plot:
        plot(args.plot, ratios, sizes, dev.name)
    if failures:
        sys.exit(1)


def plot(path, ratios, sizes, device):
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
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(EPILOGUES)
    for n, ep in enumerate(EPILOGUES):
        ax.bar(
            [i + n * width for i in range(len(sizes))],
            [ratios[(s, ep)] for s in sizes],
            width,
            label=ep,
        )
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(1 / 1.12, color="gray", linestyle="--", linewidth=0.8, label="seed 002 (0.89)")
    ax.set_xticks([i + width * (len(EPILOGUES) - 1) / 2 for i in range(len(sizes))])
    ax.set_xticklabels([f"{s}^3" for s in sizes])
    ax.set_ylabel("Morton time / blocked time")
    ax.set_title(f"seed 002's layouts on {device}", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nplot written to {path}")


if __name__ == "__main__":
    main()
