"""TVM's schedule-primitives tutorial, redone for tensorsched.

One computation can be scheduled in many ways; each section below declares a small one over
symbolic sizes (``ts.var``), applies one primitive, prints the lowered loop nest, builds it,
and runs it at sizes that no split factor divides, checking the result against numpy:
split (by a factor and into parts), tile, fuse, reorder, bind, compute_at, compute_inline and
compute_root.

    python examples/tvm_tutorials/schedule_primitives.py [--target opencl|python|llvm] [--quiet]
"""

import argparse

import numpy as np

import tensorsched as ts

SIZES = [(13, 37), (64, 32)]  # (m, n) pairs the kernels run at, built once


def elementwise():
    """B = A * 2 over an m x n matrix of symbolic size."""
    m, n = ts.var("m"), ts.var("n")
    A = ts.placeholder((m, n), name="A")
    B = ts.compute((m, n), lambda i, j: A[i, j] * 2, name="B")
    return A, B


def split_by_factor():
    A, B = elementwise()
    s = ts.create_schedule(B.op)
    # the inner loop has 32 iterations; the outer one ceil(m / 32), with a guard
    xo, xi = s[B].split(B.op.axis[0], factor=32)
    return s, [A, B]


def split_into_parts():
    A, B = elementwise()
    s = ts.create_schedule(B.op)
    # the outer loop has 4 iterations; the inner one ceil(m / 4)
    xo, xi = s[B].split(B.op.axis[0], nparts=4)
    return s, [A, B]


def tile():
    A, B = elementwise()
    s = ts.create_schedule(B.op)
    # two splits and a reorder at once: xo, yo, xi, yi with 10 x 5 tiles
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
    return s, [A, B]


def fuse():
    A, B = elementwise()
    s = ts.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
    # one loop over the 10 x 5 tile's elements
    s[B].fuse(xi, yi)
    return s, [A, B]


def reorder():
    A, B = elementwise()
    s = ts.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
    # any order of the leaf loops
    s[B].reorder(xi, yo, xo, yi)
    return s, [A, B]


def bind():
    """One output a work-item: the outer loop becomes the work-groups, the inner one the
    work-items of a group (TVM's blockIdx / threadIdx)."""
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    B = ts.compute(A.shape, lambda i: A[i] * 2, name="B")
    s = ts.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, ts.thread_axis("blockIdx.x"))
    s[B].bind(tx, ts.thread_axis("threadIdx.x"))
    return s, [A, B]


def two_stages():
    """B = A + 1, then C = B * 2: two stages, each its own loop nest by default."""
    m = ts.var("m")
    A = ts.placeholder((m,), name="A")
    B = ts.compute((m,), lambda i: A[i] + 1, name="B")
    C = ts.compute((m,), lambda i: B[i] * 2, name="C")
    return A, B, C


def compute_at():
    A, B, C = two_stages()
    s = ts.create_schedule(C.op)
    # B's element is computed inside C's loop, just before it is used
    s[B].compute_at(s[C], C.op.axis[0])
    return s, [A, C]


def compute_inline():
    A, B, C = two_stages()
    s = ts.create_schedule(C.op)
    # B's expression is substituted into C: no B at all
    s[B].compute_inline()
    return s, [A, C]


def compute_root():
    A, B, C = two_stages()
    s = ts.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    # ... and moved back: B gets its own loop nest again
    s[B].compute_root()
    return s, [A, B, C]


SECTIONS = [
    ("split by a factor", split_by_factor),
    ("split into parts", split_into_parts),
    ("tile", tile),
    ("fuse", fuse),
    ("reorder", reorder),
    ("bind", bind),
    ("compute_at", compute_at),
    ("compute_inline", compute_inline),
    ("compute_root", compute_root),
]


def reference(name, inputs):
    a = inputs[0].astype(np.float64)
    if name in ("compute_at", "compute_inline"):
        return [(a + 1) * 2]
    if name == "compute_root":
        return [a + 1, (a + 1) * 2]
    return [a * 2]


def check(name, s, args, target, rng):
    """Build once, run at each of ``SIZES`` (poisoned outputs), compare with numpy."""
    func = ts.build(s, args, target=target, name=name.replace(" ", "_"))
    dev = ts.opencl(0) if target == "opencl" else ts.cpu(0)
    worst = 0.0
    for m, n in SIZES:
        # every argument's shape is made of the sizes m and n
        shapes = [tuple({"m": m, "n": n}[d.name] for d in t.shape) for t in args]
        a = rng.random(shapes[0], dtype=np.float32)
        outs = [ts.nd.array(np.full(sh, np.nan, np.float32), dev) for sh in shapes[1:]]
        func(ts.nd.array(a, dev), *outs)  # results land in the output arrays
        for got, want in zip(outs, reference(name, [a])):
            worst = max(worst, float(np.max(np.abs(got.numpy() - want) / np.abs(want))))
    return worst


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="opencl", help="opencl, llvm (CPU OpenCL) or python")
    p.add_argument("--quiet", action="store_true", help="leave out the lowered IR")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    failed = []
    for title, make in SECTIONS:
        s, targs = make()
        if not args.quiet:
            print(f"== {title} ==")
            print(ts.lower(s, targs, simple_mode=True))
        err = check(title, s, targs, args.target, rng)
        print(f"-- {title}: max error against numpy at (m, n) in {SIZES}: {err:.1e}\n")
        if not err <= 1e-6:
            failed.append(title)
    if failed:
        raise SystemExit(f"results differ from numpy: {', '.join(failed)}")


if __name__ == "__main__":
    main()
