"""Seed 000's two Android GEMM kernels, "just vectorize" and "2x2 blocking", timed on the
OpenCL device in the seed's two sweeps, with host and device GFLOPS, and in each precision the
device supports.

    python examples/android_gemm_kernels.py [--full] [--repeat N] [--plot PNG]

The kernels are templates of tensorsched's operator library:

- ``TEMPLATES["gemm"]["vec_dot"]``: one output per work-item, an 8-wide vector of partial
  sums along K (the seed's ``vload8`` kernel); B is given transposed (N x K), as the seed reads it;
- ``TEMPLATES["gemm"]["block2x2"]`` with ``layout="blocked"``: 2x2 outputs per work-item,
  float4 partial sums (the seed's ``dot`` kernel); B is packed column-major by a first kernel.

The seed names the sizes a (rows of A and C), b (the shared dimension) and c (columns of B and
C): case 1 is square matrices a = b = c, case 2 fixes a = c and changes b. Device GFLOPS count
the kernels' own time (profiling events); host GFLOPS count the whole call as the host sees it
(buffers created, A and B copied in, C copied back), the seed's distinction. Results are checked
against numpy; the script exits with status 1 on a mismatch.
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

KERNELS = {
    "just vectorize": ("vec_dot", {}),
    "2x2 blocking": ("block2x2", {"layout": "blocked"}),
}
PRECISIONS = (
    ("half", "float16", "cl_khr_fp16"),
    ("float", "float32", None),
    ("double", "float64", "cl_khr_fp64"),
)


def run(kernel, a_size, b_size, c_size, dtype, repeat, rng, failures):
    """Build, check and time one kernel on a (a x b) @ (b x c) product; returns the Timing."""
    name, knobs = KERNELS[kernel]
    M, K, N = a_size, b_size, c_size
    s, args = TEMPLATES["gemm"][name](Config(knobs), M, N, K, dtype=dtype)
    options = {"fp16": "native"} if dtype == "float16" else {}
    mod = ts.build(s, args, target="opencl", name="gemm", **options)
    a = random_array((M, K), dtype, rng)
    b = random_array((K, N), dtype, rng)
    b_in = np.ascontiguousarray(b.T) if name == "vec_dot" else b  # vec_dot reads B^T
    c = np.full((M, N), np.nan, dtype)  # poisoned: unwritten elements show
    mod(a, b_in, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = relative_error(c, ref)
    if not err <= TOL[dtype]:  # NaN fails too
        failures.append(f"{kernel} {dtype} a={M} b={K} c={N}: max relative error {err:.2e}")
    return mod.time_evaluator(repeat=repeat)(a, b_in, c), err <= TOL[dtype]


def print_table(head, rows):
    print(format_table(head, rows) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--full",
        action="store_true",
        help="the seed's sizes (up to 2048 and b up to "
        "4096 at a = c = 1024); default: small sizes that run in seconds",
    )
    p.add_argument("--repeat", type=int, default=5, help="timed runs per point (median kept)")
    p.add_argument("--plot", metavar="PNG", help="also plot GFLOPS of both sweeps")
    args = p.parse_args()
    if args.full:
        squares, fixed, bs, prec_size = (
            (128, 256, 512, 1024, 2048),
            1024,
            (128, 256, 512, 1024, 2048, 4096),
            1024,
        )
    else:
        squares, fixed, bs, prec_size = (64, 128, 256), 256, (64, 128, 256, 512), 256

    dev = current_device()
    extensions = dev.cl_device.extensions.split()
    print(f"OpenCL device: {dev.name} ({dev.platform_name})\n")
    rng = np.random.default_rng(0)
    failures, results = [], {}

    def sweep(title, points):
        rows = []
        for a_size, b_size, c_size in points:
            flop = 2 * a_size * b_size * c_size
            for kernel in KERNELS:
                t, ok = run(kernel, a_size, b_size, c_size, "float32", args.repeat, rng, failures)
                results[(title, kernel, a_size, b_size)] = (
                    flop / t.host_median / 1e9,
                    flop / t.device_median / 1e9,
                )
                rows.append(
                    (
                        a_size,
                        b_size,
                        c_size,
                        kernel + ("" if ok else "  MISMATCH"),
                        f"{t.device_median * 1e3:.3f}",
                        f"{t.host_median * 1e3:.3f}",
                        f"{flop / t.host_median / 1e9:.2f}",
                        f"{flop / t.device_median / 1e9:.2f}",
                    )
                )
        print(f"== {title} (float) ==")
        print_table(
            ("a", "b", "c", "kernel", "device ms", "host ms", "host GFLOPS", "device GFLOPS"), rows
        )

    sweep("Case 1: square matrices a = b = c", [(m, m, m) for m in squares])
    sweep(f"Case 2: fix a = c = {fixed}, change b", [(fixed, b, fixed) for b in bs])

    rows, skipped = [], []
    flop = 2 * prec_size**3
    for label, dtype, ext in PRECISIONS:
        if ext and ext not in extensions:
            skipped.append(f"{label}: skipped: device has no {ext}")
            continue
        for kernel in KERNELS:
            t, ok = run(kernel, prec_size, prec_size, prec_size, dtype, args.repeat, rng, failures)
            rows.append(
                (
                    label,
                    kernel + ("" if ok else "  MISMATCH"),
                    f"{flop / t.host_median / 1e9:.2f}",
                    f"{flop / t.device_median / 1e9:.2f}",
                )
            )
    print(f"== Precision, a = b = c = {prec_size} ==")
    print_table(("precision", "kernel", "host GFLOPS", "device GFLOPS"), rows)
    for line in skipped:
        print(line)
    print("(half computes in half only with cl_khr_fp16; double needs cl_khr_fp64)\n")

    print(
        "Seed 000 on a Mali-T760 (8 cores, 772 MHz), 2x2 blocking at a = b = c = 1024: "
        "host 15.55 GFLOPS, device 30.65 GFLOPS.\nThe device's own peak: "
        "`tensorsched peak` (clpeak-style, per vector width)."
    )
    if args.plot:
        plot(args.plot, results, squares, fixed, bs, dev.name)
    if failures:
        print("\nMISMATCH against numpy:\n  " + "\n  ".join(failures))
        sys.exit(1)


def plot(path, results, squares, fixed, bs, device):
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
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, title, xs, key in (
        (axes[0], "Case 1: square matrices a = b = c", squares, lambda x: (x, x)),
        (axes[1], f"Case 2: fix a = c = {fixed}, change b", bs, lambda x: (fixed, x)),
    ):
        for kernel in KERNELS:
            host = [results[(title, kernel) + key(x)][0] for x in xs]
            devg = [results[(title, kernel) + key(x)][1] for x in xs]
            (line,) = ax.plot(xs, devg, "o-", label=f"{kernel}, device")
            ax.plot(xs, host, "s--", color=line.get_color(), label=f"{kernel}, host")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("a = b = c" if xs is squares else "b")
        ax.set_ylabel("GFLOPS")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle(f"seed 000's GEMM kernels on {device}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nplot written to {path}")


if __name__ == "__main__":
    main()
