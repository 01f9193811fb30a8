"""The GEMM schedule that reaches 0.95x cuBLAS on an NVIDIA H200 (benchmarks/README.md),
written out with schedule primitives: 128x128 work-group tiles, 16x16 work-items with 8x8
outputs each spread by virtual threads, __local tiles filled by all work-items (A's kept
column-major and padded), the next K step's loads staged in registers and stored into the
second of two __local copies. Prints the lowered IR, checks against numpy, times it.

    python examples/desktop_gpu_gemm.py [--size M N K]
"""

import argparse

import numpy as np

import tensorsched as ts
from tensorsched.runtime.numerics import TOL, random_array, relative_error


def schedule(A, B, C, kstep=16):
    s = ts.create_schedule(C.op)
    CL = s.cache_write(C, "local")  # the register tile
    AA = s.cache_read(A, "shared", [CL])  # the __local tiles
    BB = s.cache_read(B, "shared", [CL])
    i, j = s[C].op.axis
    by, i = s[C].split(i, 128)  # rows: 128 = 1 vthread x 16 x 8
    ty, wy = s[C].split(i, 8)
    bx, j = s[C].split(j, 128)  # columns: 128 = 2 vthreads x 16 x 4
    vx, j = s[C].split(j, nparts=2)
    tx, wx = s[C].split(j, 4)
    s[C].reorder(by, bx, vx, ty, tx, wy, wx)
    for ax, tag in (
        (by, "blockIdx.y"),
        (bx, "blockIdx.x"),
        (ty, "threadIdx.y"),
        (tx, "threadIdx.x"),
    ):
        s[C].bind(ax, ts.thread_axis(tag))
    s[C].bind(vx, ts.thread_axis("vthread", name="vx"))  # a work-item's columns 64 apart
    s[C].unroll(wy)
    s[C].vectorize(wx)

    s[CL].compute_at(s[C], tx)
    ci, cj = s[CL].op.axis
    (k,) = s[CL].op.reduce_axis
    ko, ki = s[CL].split(k, kstep)
    s[CL].reorder(ko, ki, ci, cj)
    s[CL].unroll(ki)
    s[CL].unroll(ci)
    s[CL].vectorize(cj)

    s[AA].transform_layout(lambda r, c: [c, r])  # a work-item's 8 rows of A adjacent
    s[AA].storage_align(AA.op.axis[1], 128, 4)  # columns 132 apart: fewer bank conflicts
    for T in (AA, BB):
        s[T].compute_at(s[CL], ko)
        f = s[T].fuse(*s[T].op.axis)  # every work-item copies its share
        f, fx = s[T].split(f, 16)
        f, fy = s[T].split(f, 16)
        s[T].bind(fy, ts.thread_axis("threadIdx.y"))
        s[T].bind(fx, ts.thread_axis("threadIdx.x"))
        s[T].unroll(f)
        s[T].double_buffer("both")  # next K step: registers, then 2nd copy
    return s


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, nargs=3, default=[300, 200, 130], metavar=("M", "N", "K"))
    args = p.parse_args()
    M, N, K = args.size
    A = ts.placeholder((M, K), name="A")
    B = ts.placeholder((K, N), name="B")
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = schedule(A, B, C)
    print(f"== lowered IR of GEMM {M}x{N}x{K} ==")
    print(ts.lower(s, [A, B, C], name="gemm"))
    mod = ts.build(s, [A, B, C], target="opencl", name="gemm")
    rng = np.random.default_rng(0)
    a = random_array((M, K), np.float32, rng)
    b = random_array((K, N), np.float32, rng)
    c = np.full((M, N), np.nan, dtype=np.float32)  # poisoned: unwritten elements show
    mod(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = relative_error(c, ref)
    print(f"== ran on {mod.device.name}; max relative error vs numpy: {err:.2e} ==")
    if not err <= TOL["float32"]:
        raise SystemExit("result does not match numpy")
    t = mod.time_evaluator(repeat=5)(a, b, c)
    print(
        f"device time {t.device_median * 1e3:.3f} ms, "
        f"{2 * M * N * K / t.device_median / 1e12:.3f} TFLOP/s"
    )


if __name__ == "__main__":
    main()
