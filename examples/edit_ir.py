"""Edit a kernel's IR as text: print a scheduled GEMM's lowered IR, change it the way one would by
hand (swap two loops, unroll one more loop), parse the edit with ``ts.parse_ir``, build it, run
it on the default OpenCL device and check it against numpy.

    python examples/edit_ir.py [--size M N K] [--python]
"""

import argparse

import numpy as np

import tensorsched as ts


def schedule(M, N, K):
    """A GEMM with 8-row work-groups of N/4 work-items, each computing a 1x4 strip per row."""
    A = ts.placeholder((M, K), name="A")
    B = ts.placeholder((K, N), name="B")
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    io, ii = s[C].split(i, factor=8)
    jo, ji = s[C].split(j, factor=4)
    s[C].reorder(io, jo, ii, k, ji)
    s[C].bind(io, ts.thread_axis("blockIdx.x"))
    s[C].bind(jo, ts.thread_axis("threadIdx.x"))
    return s, [A, B, C]


def swap_loops(text, outer, inner):
    """Swap the header lines of loop ``outer`` and the loop ``inner`` right inside it."""
    lines = text.split("\n")
    a = next(n for n, line in enumerate(lines) if line.lstrip().startswith(f"for ({outer},"))
    if not lines[a + 1].lstrip().startswith(f"for ({inner},"):
        raise SystemExit(f"loop {inner} is not the only statement of loop {outer}")
    pad_a = lines[a][: len(lines[a]) - len(lines[a].lstrip())]
    pad_b = lines[a + 1][: len(lines[a + 1]) - len(lines[a + 1].lstrip())]
    lines[a], lines[a + 1] = pad_a + lines[a + 1].lstrip(), pad_b + lines[a].lstrip()
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, nargs=3, default=[64, 48, 32], metavar=("M", "N", "K"))
    p.add_argument("--python", action="store_true", help="run with the Python backend instead")
    args = p.parse_args()
    M, N, K = args.size
    s, tensors = schedule(M, N, K)
    text = ts.lower(s, tensors, name="gemm").script()
    print("== the IR as lowered ==")
    print(text)

    # the hand edits: k inside the 4-wide column loop (k was outside it), and the 8 rows of a
    # work-item written out (unrolled) instead of looped over
    edited = swap_loops(text, "k", "j.inner")
    edited = edited.replace("for (i.inner, 0, 8) {", "unrolled (i.inner, 0, 8) {")
    print("\n== the IR as edited ==")
    print(edited)

    func = ts.parse_ir(edited)
    mod = ts.build(func, target="python" if args.python else "opencl")
    print("\n== generated source ==")
    print(mod.get_source())
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = np.full((M, N), np.nan, dtype=np.float32)  # poisoned: unwritten elements show
    mod(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.max(np.abs(c - ref)) / np.max(np.abs(ref)))
    where = "Python backend" if args.python else f"OpenCL device: {mod.device.name}"
    print(f"== the edited kernel ran on {where}; max relative error vs numpy: {err:.2e} ==")
    if not err < 1e-5:
        raise SystemExit("result does not match numpy")


if __name__ == "__main__":
    main()
