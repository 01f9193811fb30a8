"""TVM's "how to optimize GEMM on CPU" tutorial, redone for tensorsched on a CPU OpenCL device.

The same matrix product is scheduled seven ways, each one step further than the last: the
plain triple loop, cache blocking, vectorizing the innermost block loop, moving the reduction
outwards, packing B so the inner loop reads it contiguously, accumulating each block in a
write cache, and finally spreading the blocks over the cores. Each step prints its GFLOP/s,
and its result is checked against numpy.

    python examples/tvm_tutorials/opt_gemm.py [--size N] [--block 32] [--show-ir] [--target T]

The target is TVM's ``"llvm"`` by default, which tensorsched builds for the CPU OpenCL device
(saying so once); ``--target opencl`` uses the device in use instead. Unlike TVM's LLVM
backend, ``parallel`` here only marks a loop (an OpenCL kernel that binds no axis runs on a
single work-item); the last step therefore binds the outer block loop to ``blockIdx.x``,
which spreads the blocks over the work-groups, and so over the CPU's cores.
"""

import argparse
import time

import numpy as np

import tensorsched as ts


def declare(n, block, packed):
    """C = A @ B for n x n matrices; with ``packed``, B is first rearranged into
    ``(n / block, n, block)`` panels, so that the block's columns are contiguous."""
    k = ts.reduce_axis((0, n), name="k")
    A = ts.placeholder((n, n), name="A")
    B = ts.placeholder((n, n), name="B")
    if not packed:
        C = ts.compute((n, n), lambda x, y: ts.sum(A[x, k] * B[k, y], axis=k), name="C")
        return A, B, None, C
    # n / block is a float in Python; an extent that is a float of integral value is accepted
    pB = ts.compute((n / block, n, block), lambda x, y, z: B[y, x * block + z], name="packedB")
    C = ts.compute(
        (n, n),
        lambda x, y: ts.sum(A[x, k] * pB[y // block, k, ts.indexmod(y, block)], axis=k),
        name="C",
    )
    return A, B, pB, C


def plain(n, block):
    A, B, _, C = declare(n, block, packed=False)
    return ts.create_schedule(C.op), [A, B, C]


def blocking(n, block, kfactor=4):
    """Tiles of block x block outputs, so that a tile of C and the rows of A and B it reads
    stay in the cache; the reduction is split by ``kfactor``."""
    A, B, _, C = declare(n, block, packed=False)
    s = ts.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], block, block)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=kfactor)
    s[C].reorder(xo, yo, ko, ki, xi, yi)
    return s, [A, B, C], (xo, yo, ko, ki, xi, yi)


def vectorized(n, block):
    s, args, (xo, yo, ko, ki, xi, yi) = blocking(n, block)
    s[args[2]].vectorize(yi)
    return s, args


def permuted(n, block, kfactor=4):
    """The row loop of the tile moves outside the inner reduction loop: the innermost loops
    now walk a row of B and a row of C together."""
    s, args, (xo, yo, ko, ki, xi, yi) = blocking(n, block, kfactor)
    C = args[2]
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].vectorize(yi)
    return s, args


def packed(n, block, kfactor=4):
    """B is packed into panels first (its own kernel), so the vectorized loop reads it
    contiguously."""
    A, B, pB, C = declare(n, block, packed=True)
    s = ts.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], block, block)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=kfactor)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].vectorize(yi)
    x, y, z = s[pB].op.axis
    s[pB].vectorize(z)
    s[pB].parallel(x)
    return s, [A, B, C], (C, pB, xo, yo)


def write_cache(n, block, kfactor=4):
    """Each tile of C is accumulated in a block x block write cache (private memory), then
    stored once."""
    A, B, pB, C = declare(n, block, packed=True)
    s = ts.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], block, block)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=kfactor)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)
    s[C].vectorize(yi)
    x, y, z = s[pB].op.axis
    s[pB].vectorize(z)
    return s, [A, B, C], (C, pB, xo, yo)


def parallel(n, block):
    """The write-cache schedule with its outer block loops bound to work-groups: one
    work-group per tile row (and one per packed panel), run by the device's cores."""
    s, args, (C, pB, xo, yo) = write_cache(n, block)
    # TVM writes s[C].parallel(xo); on OpenCL that loop would still run in one work-item
    s[C].bind(xo, ts.thread_axis("blockIdx.x"))
    s[pB].bind(s[pB].op.axis[0], ts.thread_axis("blockIdx.x"))
    return s, args


STEPS = [
    ("baseline", plain),
    ("blocking", lambda n, b: blocking(n, b)[:2]),
    ("vectorization", vectorized),
    ("loop permutation", permuted),
    ("array packing", lambda n, b: packed(n, b)[:2]),
    ("write cache", lambda n, b: write_cache(n, b)[:2]),
    ("parallel", parallel),
]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=256, help="M = N = K (a multiple of --block)")
    p.add_argument("--block", type=int, default=32)
    p.add_argument("--target", default="llvm", help="llvm (the CPU OpenCL device) or opencl")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--show-ir", action="store_true", help="print each step's lowered IR")
    args = p.parse_args()
    n, block = args.size, args.block
    if n % block:
        raise SystemExit(f"--size {n} must be a multiple of --block {block}")

    rng = np.random.default_rng(0)
    a_np = rng.random((n, n), dtype=np.float32)
    b_np = rng.random((n, n), dtype=np.float32)
    ref = a_np.astype(np.float64) @ b_np.astype(np.float64)
    flops = 2.0 * n**3

    dev = ts.cpu(0) if args.target.split()[0] in ("llvm", "c") else ts.opencl(0)
    a, b = ts.nd.array(a_np, dev), ts.nd.array(b_np, dev)
    failed = []
    # the 'llvm' note (a TargetNote) shows once: Python's default warning filter
    for title, make in STEPS:
        s, targs = make(n, block)
        if args.show_ir:
            print(f"== {title} ==\n{ts.lower(s, targs, simple_mode=True)}")
        func = ts.build(s, targs, target=args.target, name="gemm")
        c = ts.nd.array(np.full((n, n), np.nan, np.float32), dev)  # poisoned
        func(a, b, c)
        err = float(np.max(np.abs(c.numpy() - ref)) / np.max(np.abs(ref)))
        ok = err < 1e-5
        evaluator = func.time_evaluator(func.entry_name, dev, number=1, repeat=args.repeat)
        mean = evaluator(a, b, c).mean
        print(
            f"{title:<17} {mean * 1e3:9.3f} ms {flops / mean / 1e9:8.2f} GFLOP/s"
            f"  max error {err:.1e} {'ok' if ok else 'WRONG'}"
        )
        if not ok:
            failed.append(title)
    print(f"(numpy: {_numpy_gflops(a_np, b_np, flops):.2f} GFLOP/s on the host)")
    if failed:
        raise SystemExit(f"results differ from numpy: {', '.join(failed)}")


def _numpy_gflops(a, b, flops):
    a @ b
    t0 = time.perf_counter()
    a @ b
    return flops / (time.perf_counter() - t0) / 1e9


if __name__ == "__main__":
    main()
