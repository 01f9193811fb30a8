"""TVM's "getting started with tensor expressions" tutorial, redone for tensorsched: a vector
addition of symbolic length, driven through TVM's runtime names.

It declares C = A + B over ``n = ts.var("n")``, builds it for TVM's CPU target ``"llvm"`` (the
CPU OpenCL device here) and for ``"opencl"`` with the work split over work-groups, runs both on
``ts.nd`` arrays, times them with ``time_evaluator(f.entry_name, dev, ...)``, prints the OpenCL
C, and saves and loads the module (``export_library`` / ``ts.runtime.load_module``).

    python examples/tvm_tutorials/get_started.py [--n 1024] [--quiet]
"""

import argparse
import os
import tempfile

import numpy as np

import tensorsched as ts


def declare():
    n = ts.var("n")
    A = ts.placeholder((n,), name="A")
    B = ts.placeholder((n,), name="B")
    C = ts.compute(A.shape, lambda i: A[i] + B[i], name="C")
    return A, B, C


def evaluate(func, dev, n, rng, label):
    """Run ``func`` on nd arrays of length ``n`` on ``dev``, check it, time it; returns the
    arrays."""
    a = ts.nd.array(rng.random(n, dtype=np.float32), dev)
    b = ts.nd.array(rng.random(n, dtype=np.float32), dev)
    c = ts.nd.array(np.zeros(n, dtype=np.float32), dev)
    func(a, b, c)  # the result lands in c
    np.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy(), rtol=1e-6)
    evaluator = func.time_evaluator(func.entry_name, dev, number=10, repeat=3)
    result = evaluator(a, b, c)
    print(
        f"{label:<34} on {dev}: mean {result.mean * 1e6:8.2f} us over {len(result.results)} repeats"
    )
    return a, b, c


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1024, help="the vector length to run")
    p.add_argument("--quiet", action="store_true", help="leave out the IR and the source")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    A, B, C = declare()

    # 1. the default schedule, built for a CPU: one loop over n
    s = ts.create_schedule(C.op)
    if not args.quiet:
        print(ts.lower(s, [A, B, C], simple_mode=True))
    fadd = ts.build(s, [A, B, C], target="llvm", name="myadd")
    evaluate(fadd, ts.cpu(0), args.n, rng, "default schedule ('llvm')")

    # 2. split by 64, the outer loop over work-groups, the inner over their work-items
    s = ts.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[C].bind(tx, ts.thread_axis("threadIdx.x"))
    if not args.quiet:
        print(ts.lower(s, [A, B, C], simple_mode=True))
    fadd = ts.build(s, [A, B, C], target="opencl", name="myadd")
    dev = ts.opencl(0)
    print(f"the OpenCL device: {dev.device_name} (exists: {dev.exist})")
    evaluate(fadd, dev, args.n, rng, "split and bound ('opencl')")
    evaluate(fadd, dev, args.n + 37, rng, "... at a length 64 does not divide")
    if not args.quiet:
        print(fadd.imported_modules[0].get_source())

    # 3. save the module and load it back (the OpenCL C is built again on loading)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "myadd.so")
        fadd.export_library(path)
        loaded = ts.runtime.load_module(path)
        evaluate(loaded, dev, args.n, rng, "loaded from export_library")


if __name__ == "__main__":
    main()
