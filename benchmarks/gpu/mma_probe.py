"""Would NVIDIA's tensor cores, used at fp32 accuracy, take GEMM past cuBLAS's fp32 kernels?

Each operand element x is split into a TF32 part and a TF32 remainder (``big = tf32(x)``,
``small = tf32(x - big)``) and each product is summed as ``small_a*big_b + big_a*small_b +
big_a*big_b`` in fp32 accumulators ("3xTF32"): about 22 bits of each operand take part, the
dropped ``small*small`` term is below fp32's rounding. The kernels are OpenCL C with inline
PTX (``mma.sync.aligned.m16n8k8`` TF32 tiles, sm_80 and later): a work-group tile of BM x BN
in ``__local`` memory, double-buffered through registers (one barrier a K step of BK), each
warp a WM x WN tile of 16x8 MMA tiles. Every variant is checked on random data against a
float64 product into a NaN-poisoned output, then timed by OpenCL events and, launched from
its PTX through CUDA, by a CUDA graph, as cuBLAS (fp32, TF32 off) is in the same process:

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/mma_probe.py [SHAPES] [--variants ...]

An experiment that decides whether a tensor-core lowering is worth building; not a feature.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys

import numpy as np
import pyopencl as cl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cuda_kernels import cuda_graph_seconds, function, launch, load_ptx  # noqa: E402

HELPERS = r"""
#define TS_TF32(out, x) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(out) : "f"(x))
#define TS_MMA(d, a0, a1, a2, a3, b0, b1) asm volatile( \
    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 " \
    "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) \
    : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))
"""


def kernel_source(
    M: int,
    N: int,
    K: int,
    BM: int,
    BN: int,
    BK: int,
    WM: int,
    WN: int,
    passes: int = 3,
    swap_a: bool = False,
    chunk: bool = False,
) -> tuple[str, int]:
    """OpenCL C of ``C = A B`` (row-major, sizes fixed) and its work-group size."""
    assert BM % WM == 0 and BN % WN == 0 and WM % 16 == 0 and WN % 8 == 0 and BK % 8 == 0
    nwm, nwn = BM // WM, BN // WN
    nt = nwm * nwn * 32
    la, lb = BM * BK // 4, BK * BN // 4
    assert la % nt == 0 and lb % nt == 0, (la, lb, nt)
    la, lb = la // nt, lb // nt
    even_m, even_n, even_k = M % BM == 0, N % BN == 0, K % BK == 0
    sa, sb = BK + 4, BN + 8
    mt, ntl = WM // 16, WN // 8
    # a1 is (g+8, t) and a2 (g, t+4) in PTX's layout; swap_a tries the other reading
    a1, a2 = ("(r0 + 8) * SA + kc", "r0 * SA + kc + 4")
    if swap_a:
        a1, a2 = a2, a1

    def a_load(i: int) -> str:
        if even_m and even_k:
            return f"ra[{i}] = vload4(0, A + (size_t)(bm + ar{i}) * K + k0 + ac{i});"
        return "\n".join(
            [f"  {{ const int r = bm + ar{i}, c = k0 + ac{i};"]
            + [
                f"    ra[{i}].s{j} = (r < M && c + {j} < K) ? A[(size_t)r * K + c + {j}] : 0.0f;"
                for j in range(4)
            ]
            + ["  }"]
        )

    def b_load(i: int) -> str:
        if even_n and even_k and N % 4 == 0:
            return f"rb[{i}] = vload4(0, B + (size_t)(k0 + br{i}) * N + bn + bc{i});"
        return "\n".join(
            [f"  {{ const int r = k0 + br{i}, c = bn + bc{i};"]
            + [
                f"    rb[{i}].s{j} = (r < K && c + {j} < N) ? B[(size_t)r * N + c + {j}] : 0.0f;"
                for j in range(4)
            ]
            + ["  }"]
        )

    split = (
        "TS_TF32(hi, x); lo_f = x - as_float(hi); TS_TF32(lo, lo_f);"
        if passes == 3
        else "TS_TF32(hi, x); lo = 0;"
    )
    lines = [
        HELPERS,
        f"#define M {M}\n#define N {N}\n#define K {K}",
        f"#define BM {BM}\n#define BN {BN}\n#define BK {BK}\n#define SA {sa}\n#define SB {sb}",
        f"__kernel __attribute__((reqd_work_group_size({nt}, 1, 1)))",
        "void gemm(__global const float* restrict A, __global const float* restrict B,",
        "          __global float* restrict C) {",
        "  __local float As[2 * BM * SA];",
        "  __local float Bs[2 * BK * SB];",
        "  const int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5;",
        "  const int g = lane >> 2, t = lane & 3;",
        f"  const int wm = warp / {nwn} * {WM}, wn = warp % {nwn} * {WN};",
        "  const int bm = get_group_id(1) * BM, bn = get_group_id(0) * BN;",
        f"  float acc[{mt}][{ntl}][4];",
        f"  for (int i = 0; i < {mt}; ++i) for (int j = 0; j < {ntl}; ++j)"
        " for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;",
        f"  float4 ra[{la}], rb[{lb}];",
    ]
    for i in range(la):
        lines.append(
            f"  const int ar{i} = (tid + {i * nt}) / {BK // 4},"
            f" ac{i} = (tid + {i * nt}) % {BK // 4} * 4;"
        )
    for i in range(lb):
        lines.append(
            f"  const int br{i} = (tid + {i * nt}) / {BN // 4},"
            f" bc{i} = (tid + {i * nt}) % {BN // 4} * 4;"
        )
    stores = [f"  vstore4(ra[{i}], 0, As + buf * BM * SA + ar{i} * SA + ac{i});" for i in range(la)]
    stores += [
        f"  vstore4(rb[{i}], 0, Bs + buf * BK * SB + br{i} * SB + bc{i});" for i in range(lb)
    ]
    loads = [a_load(i) for i in range(la)] + [b_load(i) for i in range(lb)]
    lines += ["  int k0 = 0, buf = 0;"] + ["  " + x for x in loads] + stores
    lines += [
        "  barrier(CLK_LOCAL_MEM_FENCE);",
        "  for (int kt = 0; kt < (K + BK - 1) / BK; ++kt) {",
        "    const int cur = kt & 1;",
        "    k0 = (kt + 1) * BK;",
        "    const bool more = k0 < K;",
        "    if (more) {",
    ]
    lines += ["    " + x for x in loads]
    lines += [
        "    }",
        "    __local const float* as = As + cur * BM * SA;",
        "    __local const float* bs = Bs + cur * BK * SB;",
        # chunk: each K step's products summed apart, then added to acc (the tensor cores'
        # own fp32 sums truncate; a short chain keeps that error small)
        f"    float tmp[{mt}][{ntl}][4];" if chunk else "",
        f"    for (int i = 0; i < {mt}; ++i) for (int j = 0; j < {ntl}; ++j)"
        " for (int e = 0; e < 4; ++e) tmp[i][j][e] = 0.0f;"
        if chunk
        else "",
        "    #pragma unroll",
        f"    for (int kk = 0; kk < {BK // 8}; ++kk) {{",
        "      const int kc = kk * 8 + t;",
        f"      uint ah[{mt}][4], al[{mt}][4], bh[{ntl}][2], bl[{ntl}][2];",
        "      #pragma unroll",
        f"      for (int i = 0; i < {mt}; ++i) {{",
        "        const int r0 = wm + i * 16 + g;",
        f"        const float xs[4] = {{as[r0 * SA + kc], as[{a1}], as[{a2}],"
        " as[(r0 + 8) * SA + kc + 4]};",
        "        #pragma unroll",
        "        for (int e = 0; e < 4; ++e) {",
        f"          const float x = xs[e]; uint hi, lo; float lo_f; {split}",
        "          ah[i][e] = hi; al[i][e] = lo;",
        "        }",
        "      }",
        "      #pragma unroll",
        f"      for (int j = 0; j < {ntl}; ++j) {{",
        "        const int c0 = wn + j * 8 + g;",
        "        const float xs[2] = {bs[kc * SB + c0], bs[(kc + 4) * SB + c0]};",
        "        #pragma unroll",
        "        for (int e = 0; e < 2; ++e) {",
        f"          const float x = xs[e]; uint hi, lo; float lo_f; {split}",
        "          bh[j][e] = hi; bl[j][e] = lo;",
        "        }",
        "      }",
        "      #pragma unroll",
        f"      for (int i = 0; i < {mt}; ++i) {{",
        "        #pragma unroll",
        f"        for (int j = 0; j < {ntl}; ++j) {{",
    ]
    dst = "tmp" if chunk else "acc"

    def frag(a: str, b: str) -> str:
        return ", ".join([f"{a}[i][{e}]" for e in range(4)] + [f"{b}[j][{e}]" for e in range(2)])

    if passes == 3:
        lines += [
            f"          TS_MMA({dst}[i][j], {frag('al', 'bh')});",
            f"          TS_MMA({dst}[i][j], {frag('ah', 'bl')});",
        ]
    lines += [
        f"          TS_MMA({dst}[i][j], {frag('ah', 'bh')});",
        "        }",
        "      }",
        "    }",
        f"    for (int i = 0; i < {mt}; ++i) for (int j = 0; j < {ntl}; ++j)"
        " for (int e = 0; e < 4; ++e) acc[i][j][e] += tmp[i][j][e];"
        if chunk
        else "",
        "    if (more) {",
        "      buf = cur ^ 1;",
    ]
    lines += ["    " + x for x in stores]
    lines += ["    }", "    barrier(CLK_LOCAL_MEM_FENCE);", "  }"]
    lines += _store_accumulators(mt, ntl, guarded=not (even_m and even_n))
    return "\n".join(lines), nt


def _store_accumulators(mt: int, ntl: int, guarded: bool) -> list[str]:
    """The kernel's end: each warp's MMA tiles stored to C (work-item (g, t) holds rows g and
    g + 8, columns 2t and 2t + 1 of each), element by element against M and N when
    ``guarded``, else as pairs."""
    lines = [
        "  #pragma unroll",
        f"  for (int i = 0; i < {mt}; ++i) {{",
        "    #pragma unroll",
        f"    for (int j = 0; j < {ntl}; ++j) {{",
        "      const int r = bm + wm + i * 16 + g, c = bn + wn + j * 8 + 2 * t;",
    ]
    if guarded:
        lines += [
            "      if (r < M && c < N) C[(size_t)r * N + c] = acc[i][j][0];",
            "      if (r < M && c + 1 < N) C[(size_t)r * N + c + 1] = acc[i][j][1];",
            "      if (r + 8 < M && c < N) C[(size_t)(r + 8) * N + c] = acc[i][j][2];",
            "      if (r + 8 < M && c + 1 < N) C[(size_t)(r + 8) * N + c + 1] = acc[i][j][3];",
        ]
    else:
        lines += [
            "      vstore2((float2)(acc[i][j][0], acc[i][j][1]), 0, C + (size_t)r * N + c);",
            "      vstore2((float2)(acc[i][j][2], acc[i][j][3]), 0, C + (size_t)(r + 8) * N + c);",
        ]
    return lines + ["    }", "  }", "}"]


def kernel_source_presplit(
    M: int, N: int, K: int, BM: int, BN: int, WM: int, WN: int, chunk: int = 2
) -> tuple[str, int]:
    """As ``kernel_source`` with K steps of 8, each element split once, when the tile is
    stored to ``__local`` memory (TF32 parts and remainders in two planes), A's K order
    permuted in each row so that a fragment's two elements of a row are adjacent (one 64-bit
    read); each ``chunk`` K steps' products summed apart and then added to the accumulators.
    Shapes that the tiles divide only."""
    assert M % BM == 0 and N % BN == 0 and K % 8 == 0, "tiles must divide the shape"
    nwm, nwn = BM // WM, BN // WN
    nt = nwm * nwn * 32
    assert (BM * 2) % nt == 0 and (2 * BN) % nt == 0, "loads must divide over the work-items"
    la, lb = BM * 2 // nt, 2 * BN // nt
    mt, ntl = WM // 16, WN // 8
    sb = BN + 8
    L = [
        HELPERS,
        f"#define M {M}\n#define N {N}\n#define K {K}\n#define BM {BM}\n#define BN {BN}",
        f"#define SB {sb}",
        f"__kernel __attribute__((reqd_work_group_size({nt}, 1, 1)))",
        "void gemm(__global const float* restrict A, __global const float* restrict B,",
        "          __global float* restrict C) {",
        "  __local uint Ah[2 * BM * 8], Al[2 * BM * 8], Bh[2 * 8 * SB], Bl[2 * 8 * SB];",
        "  const int tid = get_local_id(0), lane = tid & 31, warp = tid >> 5;",
        "  const int g = lane >> 2, t = lane & 3;",
        f"  const int wm = warp / {nwn} * {WM}, wn = warp % {nwn} * {WN};",
        "  const int bm = get_group_id(1) * BM, bn = get_group_id(0) * BN;",
        f"  float acc[{mt}][{ntl}][4], tmp[{mt}][{ntl}][4];",
        f"  for (int i = 0; i < {mt}; ++i) for (int j = 0; j < {ntl}; ++j)"
        " for (int e = 0; e < 4; ++e) { acc[i][j][e] = 0.0f; tmp[i][j][e] = 0.0f; }",
        f"  float4 ra[{la}], rb[{lb}];",
    ]
    for i in range(la):
        L.append(f"  const int ar{i} = (tid + {i * nt}) / 2, ac{i} = (tid + {i * nt}) % 2;")
    for i in range(lb):
        L.append(
            f"  const int br{i} = (tid + {i * nt}) / {BN // 4},"
            f" bc{i} = (tid + {i * nt}) % {BN // 4} * 4;"
        )
    loads = [
        f"ra[{i}] = vload4(0, A + (size_t)(bm + ar{i}) * K + k0 + ac{i} * 4);" for i in range(la)
    ]
    loads += [f"rb[{i}] = vload4(0, B + (size_t)(k0 + br{i}) * N + bn + bc{i});" for i in range(lb)]
    stores = []
    for i in range(la):
        for e, comp in enumerate("xyzw"):
            stores.append(
                f"{{ uint h, l; float lf; TS_TF32(h, ra[{i}].{comp});"
                f" lf = ra[{i}].{comp} - as_float(h);"
                f" TS_TF32(l, lf); const int o = buf * BM * 8 + ar{i} * 8 + {e * 2} + ac{i};"
                " Ah[o] = h; Al[o] = l; }"
            )
    for i in range(lb):
        stores.append(
            f"{{ uint4 h, l; float4 lf; TS_TF32(h.x, rb[{i}].x); TS_TF32(h.y, rb[{i}].y);"
            f" TS_TF32(h.z, rb[{i}].z); TS_TF32(h.w, rb[{i}].w); lf = rb[{i}] - as_float4(h);"
            " TS_TF32(l.x, lf.x); TS_TF32(l.y, lf.y); TS_TF32(l.z, lf.z); TS_TF32(l.w, lf.w);"
            f" const int o = buf * 8 * SB + br{i} * SB + bc{i};"
            " vstore4(h, 0, Bh + o); vstore4(l, 0, Bl + o); }"
        )
    L += ["  int k0 = 0, buf = 0;"] + ["  " + x for x in loads] + ["  " + x for x in stores]
    L += [
        "  barrier(CLK_LOCAL_MEM_FENCE);",
        "  for (int kt = 0; kt < K / 8; ++kt) {",
        "    const int cur = kt & 1;",
        "    k0 = (kt + 1) * 8;",
        "    const bool more = k0 < K;",
        "    if (more) {",
    ]
    L += ["      " + x for x in loads]
    L += [
        "    }",
        "    __local const uint* ah = Ah + cur * BM * 8;",
        "    __local const uint* al = Al + cur * BM * 8;",
        "    __local const uint* bh = Bh + cur * 8 * SB;",
        "    __local const uint* bl = Bl + cur * 8 * SB;",
        f"    uint2 fah[{mt}][2], fal[{mt}][2];",
        f"    uint fbh[{ntl}][2], fbl[{ntl}][2];",
        "    #pragma unroll",
        f"    for (int i = 0; i < {mt}; ++i) {{",
        "      const int r0 = (wm + i * 16 + g) * 8 + 2 * t;",
        "      fah[i][0] = vload2(0, ah + r0); fah[i][1] = vload2(0, ah + r0 + 64);",
        "      fal[i][0] = vload2(0, al + r0); fal[i][1] = vload2(0, al + r0 + 64);",
        "    }",
        "    #pragma unroll",
        f"    for (int j = 0; j < {ntl}; ++j) {{",
        "      const int c0 = wn + j * 8 + g;",
        "      fbh[j][0] = bh[t * SB + c0]; fbh[j][1] = bh[(t + 4) * SB + c0];",
        "      fbl[j][0] = bl[t * SB + c0]; fbl[j][1] = bl[(t + 4) * SB + c0];",
        "    }",
        "    #pragma unroll",
        f"    for (int i = 0; i < {mt}; ++i) {{",
        "      #pragma unroll",
        f"      for (int j = 0; j < {ntl}; ++j) {{",
        # a0 (g, t) a1 (g+8, t) a2 (g, t+4) a3 (g+8, t+4)
        "        TS_MMA(tmp[i][j], fal[i][0].x, fal[i][1].x, fal[i][0].y, fal[i][1].y,"
        " fbh[j][0], fbh[j][1]);",
        "        TS_MMA(tmp[i][j], fah[i][0].x, fah[i][1].x, fah[i][0].y, fah[i][1].y,"
        " fbl[j][0], fbl[j][1]);",
        "        TS_MMA(tmp[i][j], fah[i][0].x, fah[i][1].x, fah[i][0].y, fah[i][1].y,"
        " fbh[j][0], fbh[j][1]);",
        "      }",
        "    }",
        f"    if ((kt % {chunk}) == {chunk - 1} || !more) {{",
        f"      for (int i = 0; i < {mt}; ++i) for (int j = 0; j < {ntl}; ++j)"
        " for (int e = 0; e < 4; ++e) { acc[i][j][e] += tmp[i][j][e]; tmp[i][j][e] = 0.0f; }",
        "    }",
        "    if (more) {",
        "      buf = cur ^ 1;",
    ]
    L += ["      " + x for x in stores]
    L += ["    }", "    barrier(CLK_LOCAL_MEM_FENCE);", "  }"]
    L += _store_accumulators(mt, ntl, guarded=False)
    return "\n".join(L), nt


VARIANTS = {
    # name: (BM, BN, BK, WM, WN)
    "128x128k16w64x32": (128, 128, 16, 64, 32),
    "128x128k16w32x64": (128, 128, 16, 32, 64),
    "128x128k16w64x64": (128, 128, 16, 64, 64),
    "64x128k16w32x32": (64, 128, 16, 32, 32),
    "128x256k8w64x64": (128, 256, 8, 64, 64),
    "256x128k8w64x64": (256, 128, 8, 64, 64),
    "128x64k16w32x32": (128, 64, 16, 32, 32),
    "64x64k16w32x32": (64, 64, 16, 32, 32),
    # K steps of 8, split when stored (kernel_source_presplit); "k8" + "ps" + chunk
    "ps128x128w64x32c2": (128, 128, 8, 64, 32),
    "ps128x128w64x64c2": (128, 128, 8, 64, 64),
    "ps128x128w32x64c2": (128, 128, 8, 32, 64),
    "ps128x128w64x32c4": (128, 128, 8, 64, 32),
    "ps64x128w32x64c2": (64, 128, 8, 32, 64),
    "ps128x64w64x32c2": (128, 64, 8, 64, 32),
}


def nvidia_device() -> cl.Device:
    for p in cl.get_platforms():
        for d in p.get_devices():
            if "NVIDIA" in p.name:
                return d
    raise SystemExit("no NVIDIA OpenCL device")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("shapes", nargs="*", default=["1024,1024,1024", "4096,4096,4096"])
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--passes", default="3")
    ap.add_argument("--swap-a", action="store_true", help="also each variant with a1/a2 swapped")
    ap.add_argument("--repeat", type=int, default=10)
    opts = ap.parse_args()

    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    dev = nvidia_device()
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    print(f"# {dev.name}, {dev.platform.name} {dev.driver_version}; torch {torch.__version__}")
    mf = cl.mem_flags
    for shape in opts.shapes:
        M, N, K = (int(v) for v in shape.split(","))
        rng = np.random.default_rng(0)
        a = rng.standard_normal((M, K), dtype=np.float32)
        b = rng.standard_normal((K, N), dtype=np.float32)
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        ref = (ta.double() @ tb.double()).cpu().numpy()
        scale = np.abs(ref).max()
        tc = torch.empty(M, N, device="cuda")
        cub = cuda_graph_seconds(torch, lambda: torch.matmul(ta, tb, out=tc), opts.repeat)
        cub_err = np.abs(tc.cpu().numpy() - ref).max() / scale
        flop = 2.0 * M * N * K
        print(
            f"\nGEMM {M}x{N}x{K}: cuBLAS {cub * 1e6:.1f} us"
            f" {flop / cub * 1e-12:.2f} TFLOP/s err {cub_err:.1e}"
        )
        da = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
        db = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
        dc = cl.Buffer(ctx, mf.READ_WRITE, size=M * N * 4)
        for name in opts.variants.split(","):
            BM, BN, BK, WM, WN = VARIANTS[name]
            for pspec in opts.passes.split(","):
                passes, chunk = int(pspec[0]), pspec.endswith("c")
                for swap in (False, True) if opts.swap_a else (False,):
                    label = f"{name} x{pspec}{' swapA' if swap else ''}"
                    try:
                        if name.startswith("ps"):
                            src, nt = kernel_source_presplit(
                                M, N, K, BM, BN, WM, WN, int(name.rsplit("c", 1)[1])
                            )
                        else:
                            src, nt = kernel_source(
                                M, N, K, BM, BN, BK, WM, WN, passes, swap, chunk
                            )
                    except AssertionError as e:
                        print(f"  {label}: not this shape ({e})")
                        continue
                    try:
                        prg = cl.Program(ctx, src).build(options=["-cl-nv-verbose"])
                    except cl.Error as e:
                        print(f"  {label}: build failed: {str(e)[:2000]}")
                        continue
                    kern = prg.gemm
                    kern.set_args(da, db, dc)
                    gs = ((N + BN - 1) // BN * nt, (M + BM - 1) // BM)
                    ls = (nt, 1)
                    cl.enqueue_copy(q, dc, np.full((M, N), np.nan, np.float32)).wait()
                    cl.enqueue_nd_range_kernel(q, kern, gs, ls).wait()
                    out = np.empty((M, N), np.float32)
                    cl.enqueue_copy(q, out, dc).wait()
                    err = (
                        np.abs(out - ref).max() / scale if np.isfinite(out).all() else float("inf")
                    )
                    times = []
                    for _ in range(opts.repeat):
                        t = []
                        for _ in range(12):
                            ev = cl.enqueue_nd_range_kernel(q, kern, gs, ls)
                            ev.wait()
                            t.append((ev.profile.end - ev.profile.start) * 1e-9)
                        times.append(statistics.median(t[2:]))
                    ocl = statistics.median(times)
                    try:
                        fn = function(load_ptx(prg.binaries[0]), "gemm")
                        out_t = torch.full((M, N), float("nan"), device="cuda")
                        ptrs = [ta.data_ptr(), tb.data_ptr(), out_t.data_ptr()]
                        grid = [gs[0] // nt, gs[1], 1]
                        call = lambda: launch(torch, fn, grid, [nt, 1, 1], ptrs)  # noqa: E731
                        call()
                        torch.cuda.synchronize()
                        cerr = (out_t.cpu().numpy() - ref).__abs__().max() / scale
                        viacuda = cuda_graph_seconds(torch, call, opts.repeat)
                        vc = f"via CUDA {viacuda * 1e6:8.1f} us {cub / viacuda:.3f}x"
                        vc += f" (err {cerr:.1e})"
                    except Exception as e:  # the probe reports, it does not stop
                        vc = f"via CUDA failed: {e!r}"[:200]
                    log = prg.get_build_info(dev, cl.program_build_info.LOG)
                    used = re.findall(r"Used (\d+) registers", log)
                    spill = re.findall(r"(\d+) bytes spill stores", log)
                    regs = f"  regs {used[0] if used else '?'}" + (
                        f" spill {spill[0]}" if spill and spill[0] != "0" else ""
                    )
                    print(
                        f"  {label:26s} {ocl * 1e6:8.1f} us {flop / ocl * 1e-12:6.2f} TFLOP/s "
                        f"{cub / ocl:.3f}x cuBLAS  err {err:.1e}  {vc}{regs}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
