"""Seed 003 step by step: the spatially packed conv2d of the TVM Mali tutorial, kernel 1 (bind),
kernel 2 (+ unroll), kernel 3 (+ vectorize), against the GEMM method, on the OpenCL device.

    python examples/mali_conv2d_tutorial.py [--full] [--layer CI H W CO] [--out FILE] [--plot PNG]

The declaration and the three schedules are the tutorial's lines with ``ts`` for ``tvm``
(``tests/seed_conv.py``). The default layer is small so that the script runs in seconds on a
CPU OpenCL device; ``--full`` runs the tutorial's VGG-16 layer (56x56x256 -> 256, 3x3, pad 1).
Each kernel's result is checked against numpy; the script exits with status 1 on a mismatch.
"""

import argparse
import os
import sys

import numpy as np

import tensorsched as ts
from tensorsched.ops.conv2d import ConvShape
from tensorsched.ops.space import Config
from tensorsched.ops.templates import TEMPLATES
from tensorsched.runtime.numerics import TOL, random_array, relative_error
from tensorsched.runtime.table import print_table

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import seed_conv  # noqa: E402  (tests/seed_conv.py: the tutorial's declaration and schedules)

VW = VC = 4  # the tutorial's tiling factors (VH = 1)
# the seed's table on a Mali-T860 MP4, VGG-16 56x56x256: (cost in seconds, GFLOPS, speedup)
SEED = {
    "gemm": (0.1821, 20.3111, "1x"),
    1: (5.6154, 0.6588, "0.03x"),
    2: (0.3707, 9.9796, "0.49x"),
    3: (0.1304, 28.3679, "1.40x"),
}


def conv_ref(d, w, pad):
    """NCHW conv2d, stride 1, in float64."""
    _, _, H, W = d.shape
    CO, _, KH, KW = w.shape
    dp = np.pad(d.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    OH, OW = H + 2 * pad - KH + 1, W + 2 * pad - KW + 1
    out = np.zeros((d.shape[0], CO, OH, OW))
    for kh in range(KH):
        for kw in range(KW):
            out += np.einsum("nchw,oc->nohw", dp[:, :, kh : kh + OH, kw : kw + OW], w[:, :, kh, kw])
    return out


def produce_block(ir_text, stage):
    """The ``produce <stage> { ... }`` block of a printed lowered function."""
    lines = ir_text.splitlines()
    for n, line in enumerate(lines):
        if line.strip() == f"produce {stage} {{":
            depth, out = 0, []
            for ln in lines[n:]:
                out.append(ln)
                depth += ln.count("{") - ln.count("}")
                if depth == 0:
                    return "\n".join(out)
    return f"(no 'produce {stage}' block)"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--full",
        action="store_true",
        help="the tutorial's VGG-16 layer 56x56x256 -> 256 (default: a small layer)",
    )
    p.add_argument(
        "--layer",
        type=int,
        nargs=4,
        metavar=("CI", "H", "W", "CO"),
        help="input channels, height, width, output channels (3x3, pad 1, stride 1)",
    )
    p.add_argument("--repeat", type=int, default=5, help="timed runs per kernel (median kept)")
    p.add_argument(
        "--out",
        default="mali_conv2d_kernel3.cl",
        help="file for kernel 3's OpenCL C (default: %(default)s)",
    )
    p.add_argument("--plot", metavar="PNG", help="also draw the GFLOPS of each kernel")
    args = p.parse_args()
    CI, H, W, CO = args.layer or ((256, 56, 56, 256) if args.full else (32, 28, 28, 32))
    if W % VW or CO % VC:
        p.error(
            f"the tutorial's declaration tiles the output width by VW={VW} and the output "
            f"channels by VC={VC} with floor division: W and CO must be multiples of 4"
        )
    shape = ConvShape(1, CI, H, W, CO, 3, 3, stride=1, pad=1)
    flop = shape.flop

    rng = np.random.default_rng(0)
    data = random_array((1, CI, H, W), np.float32, rng)
    kernel = random_array((CO, CI, 3, 3), np.float32, rng)
    ref = conv_ref(data, kernel, 1)

    dev = None
    rows, failures = [], []

    def measure(label, s, tensors, key=None):
        nonlocal dev
        mod = ts.build(s, tensors, target="opencl", name="conv")
        dev = mod.device
        out = np.full(ref.shape, np.nan, np.float32)  # poisoned: unwritten elements show
        mod(data, kernel, out)
        err = relative_error(out, ref)
        ok = err <= TOL["float32"]  # NaN fails too
        if not ok:
            failures.append(
                f"{label}: max relative error {err:.2e}, {int(np.isnan(out).sum())} NaN outputs"
            )
        t = mod.time_evaluator(repeat=args.repeat)(data, kernel, out)
        rows.append((label, t.device_median, t.host_median, key, ok))
        return mod

    print(
        f"conv2d layer {H}x{W}x{CI} -> {CO}, 3x3, pad 1, stride 1 "
        f"({flop / 1e9:.3f} GFLOP per run)\n"
    )

    # the baseline: the GEMM method (im2col + GEMM)
    s, targs = TEMPLATES["conv2d"]["im2col"](Config(), shape)
    measure("GEMM method (im2col + GEMM)", s, targs, "gemm")

    # the tutorial's kernels 1, 2, 3: print the conv stage of each lowered function
    tensors = seed_conv.declare(1, CI, H, W, CO)
    data_t, kernel_t, output_t = tensors[0], tensors[1], tensors[-1]
    titles = {
        1: "Kernel 1: simple bind",
        2: "Kernel 2: + unrolling",
        3: "Kernel 3: + vectorization",
    }
    for no in (1, 2, 3):
        s = seed_conv.schedule(tensors, no)
        text = str(ts.lower(s, [data_t, kernel_t, output_t], name="conv"))
        print(f"== {titles[no]}: the conv stage of ts.lower(s, [data, kernel, output]) ==")
        print(produce_block(text, "conv"))
        print()
        mod = measure(titles[no], s, [data_t, kernel_t, output_t], no)
        if no == 3:
            with open(args.out, "w") as f:
                f.write(mod.get_source())
            print(f"(kernel 3's OpenCL C written to {args.out})\n")

    # kernel 3 with each work-item's VH x VW x VC tile accumulated in registers
    s, targs = TEMPLATES["conv2d"]["spatial_pack"](
        Config({"accumulate": "local", "VH": 1, "VW": VW, "VC": VC, "num_thread": 8}), shape
    )
    measure("Kernel 3 + register accumulation", s, targs)

    base = rows[0][1]
    print(f"OpenCL device: {dev.name} ({dev.platform_name})")
    print(
        "Cost = median device time of all the module's kernels (packing, conv, unpacking); "
        "host = wall clock of the call, transfers included.\n"
    )
    head = (
        "Kernel",
        "Cost (second)",
        "GFLOPS",
        "speedup",
        "host (second)",
        "seed: Mali-T860 cost / speedup",
    )
    table = []
    for label, dt, ht, key, ok in rows:
        seed = f"{SEED[key][0]:.4f} / {SEED[key][2]}" if key in SEED else "-"
        table.append(
            (
                label + ("" if ok else "  MISMATCH"),
                f"{dt:.6f}",
                f"{flop / dt / 1e9:.4f}",
                f"{base / dt:.2f}x",
                f"{ht:.6f}",
                seed,
            )
        )
    print_table(head, table)
    print(
        "\nThe baseline row stands in for the seed's 'GEMM method in ARMComputeLib': it is "
        "tensorsched's im2col template\n(TEMPLATES['conv2d']['im2col'], default knobs); the "
        "ACL-style baseline GEMM will replace it when that baseline exists."
    )
    if not args.full and not args.layer:
        print("The seed's column is for the VGG-16 layer: compare it with --full.")

    if args.plot:
        plot(args.plot, rows, flop, f"conv2d {H}x{W}x{CI} -> {CO} on {dev.name}")
    if failures:
        print("\nMISMATCH against numpy:\n  " + "\n  ".join(failures))
        sys.exit(1)


def plot(path, rows, flop, title):
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
    fig, ax = plt.subplots(figsize=(8, 4))
    labels = [r[0].replace(": ", ":\n", 1) for r in rows]
    ax.barh(labels[::-1], [flop / r[1] / 1e9 for r in rows][::-1])
    ax.set_xlabel("GFLOPS (device time)")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nplot written to {path}")


if __name__ == "__main__":
    main()
