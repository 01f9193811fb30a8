"""Declare a GEMM, schedule it for a GPU-style device, print the lowered IR and the OpenCL C,
then run it on the default OpenCL device and check it against numpy.

    python examples/gemm_schedule.py [--size M N K] [--python]
"""

import argparse

import numpy as np

import tensorsched as ts
from tensorsched.runtime.numerics import TOL, random_array, relative_error


def gemm(M, N, K):
    A = ts.placeholder((M, K), name="A")
    B = ts.placeholder((K, N), name="B")
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def schedule(A, B, C, tile=16, work=4, kstep=8):
    """Work-group tiles of tile x tile outputs staged through __local memory; each work-item
    accumulates a work x work register tile and vectorizes its columns."""
    s = ts.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    BB = s.cache_read(B, "shared", [C])
    CL = s.cache_write(C, "local")
    i, j = s[C].op.axis
    bi, bj, ii, ji = s[C].tile(i, j, tile, tile)
    ti, wi = s[C].split(ii, work)
    tj, wj = s[C].split(ji, work)
    s[C].reorder(bi, bj, ti, tj, wi, wj)
    s[C].bind(bi, ts.thread_axis("blockIdx.y"))
    s[C].bind(bj, ts.thread_axis("blockIdx.x"))
    s[C].bind(ti, ts.thread_axis("threadIdx.y"))
    s[C].bind(tj, ts.thread_axis("threadIdx.x"))
    s[C].vectorize(wj)
    s[CL].compute_at(s[C], tj)
    ci, cj = s[CL].op.axis
    (ck,) = s[CL].op.reduce_axis
    ko, ki = s[CL].split(ck, kstep)
    s[CL].reorder(ko, ki, ci, cj)
    s[CL].unroll(ki)
    s[CL].vectorize(cj)
    for T in (AA, BB):
        s[T].compute_at(s[CL], ko)
        r, c = s[T].op.axis
        ro, ri = s[T].split(r, nparts=tile // work)
        co, cl = s[T].split(c, nparts=tile // work)
        s[T].reorder(ro, co, ri, cl)
        s[T].bind(ro, ts.thread_axis("threadIdx.y"))
        s[T].bind(co, ts.thread_axis("threadIdx.x"))
    return s


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, nargs=3, default=[100, 75, 61], metavar=("M", "N", "K"))
    p.add_argument("--python", action="store_true", help="run with the Python backend instead")
    args = p.parse_args()
    M, N, K = args.size
    A, B, C = gemm(M, N, K)
    s = schedule(A, B, C)
    print(f"== lowered IR of GEMM {M}x{N}x{K} ==")
    print(ts.lower(s, [A, B, C], name="gemm"))
    mod = ts.build(s, [A, B, C], target="python" if args.python else "opencl", name="gemm")
    print("\n== generated source ==")
    print(mod.get_source())
    rng = np.random.default_rng(0)
    a = random_array((M, K), np.float32, rng)
    b = random_array((K, N), np.float32, rng)
    c = np.full((M, N), np.nan, dtype=np.float32)  # poisoned: unwritten elements show
    mod(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = relative_error(c, ref)
    where = "Python backend" if args.python else f"OpenCL device: {mod.device.name}"
    print(f"== ran on {where}; max relative error vs numpy: {err:.2e} ==")
    if not err <= TOL["float32"]:
        raise SystemExit("result does not match numpy")
    if not args.python:
        t = mod.time_evaluator(repeat=5)(a, b, c)
        print(
            f"device time {t.device_median * 1e3:.3f} ms, host time {t.host_median * 1e3:.3f} ms, "
            f"{2 * M * N * K / t.device_median / 1e9:.2f} GFLOP/s"
        )


if __name__ == "__main__":
    main()
