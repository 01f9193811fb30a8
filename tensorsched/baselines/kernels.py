"""OpenCL C of the ACL-style GEMM baseline, written by hand and specialised by a GEMMConfig.

Every matrix is float32 and row-major: A is M x K, B is K x N, C is M x N, each batch item
after the previous one. A GEMM work-item computes one M0 x N0 block of C, at columns
``get_global_id(0) * N0`` and rows ``get_global_id(1) * M0`` of batch item ``get_global_id(2)``.
Its M0 x N0 accumulators live in registers, as M0 vectors of N0 floats. Blocks that stick out of
C at the bottom or right edge read clamped rows of A, zero columns of B, and store only what lies
inside C.

The kernels are text. Their structure (loop over K, loads, stores) is written out literally below.
Python unrolls the per-row and per-vector statements, because OpenCL C cannot index the
components of a vector with a loop variable. Block sizes and layout constants are ``#define``s
of the program; M, N, K and the batch strides are kernel arguments, so one build serves every
shape.

- ``native``: A and B are read as they are; the K loop steps by K0 and a scalar loop takes the
  last K % K0.
- ``reshaped_rhs_only``: ``reshape_rhs`` first copies B into N0 x K0 blocks (``BlockLayout`` in
  ``configs.py``), zero-padded, so that the GEMM reads each block with whole vector loads (or
  ``read_imagef`` from an image2d_t when the config exports it). A K tail is read as a
  zero-padded partial vector of A.
- ``reshaped``: ``reshape_lhs`` also copies A into M0 x K0 blocks. Both operands are padded, so
  the K loop has no tail. With ``transpose_rhs=1`` the blocks are rows of K0 on both sides and the
  kernel accumulates dot products; with ``transpose_rhs=0`` the LHS blocks are stored transposed,
  and the kernel accumulates outer products of an M0-vector of A and an N0-vector of B.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from .configs import GEMMConfig, lhs_layout, rhs_layout

# the OpenCL expression of vector (or row) ``i`` of an operand block
Operand = Callable[[int], str]

LANES = "0123456789abcdef"
SAMPLER = (
    "__constant sampler_t SAMPLER = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE "
    "| CLK_FILTER_NEAREST;"
)


def vec(n: int) -> str:
    """The OpenCL type of ``n`` floats."""
    return "float" if n == 1 else f"float{n}"


def lane(x: str, n: int, i: int) -> str:
    """Component ``i`` of the ``n``-wide value ``x``."""
    return x if n == 1 else f"{x}.s{LANES[i]}"


def vload(n: int, ptr: str) -> str:
    return f"*({ptr})" if n == 1 else f"vload{n}(0, {ptr})"


def splat(n: int, scalar: str) -> str:
    return scalar if n == 1 else f"({vec(n)})({scalar})"


def zero(n: int) -> str:
    return "0.0f" if n == 1 else f"({vec(n)})(0.0f)"


def read_image(n: int, img: str, x: str, y: str) -> str:
    """``n`` floats (4, 8 or 16) from the RGBA float texels ``x``, ``x+1``, ... of row ``y``."""
    texels = [
        f"read_imagef({img}, SAMPLER, (int2)({x}{f' + {t}' if t else ''}, {y}))"
        for t in range(n // 4)
    ]
    return texels[0] if n == 4 else f"({vec(n)})({', '.join(texels)})"


def indent(lines: Sequence[str], depth: int) -> list[str]:
    return [("    " * depth + line) if line else "" for line in lines]


# ---- helpers every program may need


def partial_helpers(widths: Iterable[int]) -> list[str]:
    """``load_partial_W`` / ``store_partial_W``: the first ``n`` of W floats, the rest zero
    (loads) or left alone (stores); for the blocks at the right edge of a matrix."""
    out: list[str] = []
    for w in sorted(set(widths) - {1}):
        out += [
            f"// The first n (< {w}) of {w} floats at p; the other lanes are zero.",
            f"inline float{w} load_partial_{w}(__global const float* p, int n)",
            "{",
            f"    float t[{w}];",
            f"    for (int i = 0; i < {w}; ++i)",
            "        t[i] = i < n ? p[i] : 0.0f;",
            f"    return vload{w}(0, t);",
            "}",
            "",
            f"// Stores the first n (< {w}) lanes of v at p.",
            f"inline void store_partial_{w}(float{w} v, __global float* p, int n)",
            "{",
            f"    float t[{w}];",
            f"    vstore{w}(v, 0, t);",
            f"    for (int i = 0; i < n && i < {w}; ++i)",
            "        p[i] = t[i];",
            "}",
            "",
        ]
    return out


DOT_HELPERS = """\
inline float dot8(float8 a, float8 b) { return dot(a.lo, b.lo) + dot(a.hi, b.hi); }
inline float dot16(float16 a, float16 b) { return dot8(a.lo, b.lo) + dot8(a.hi, b.hi); }
"""


def dot(n: int, a: str, b: str) -> str:
    """The dot product of two ``n``-wide values (OpenCL's ``dot`` stops at 4)."""
    if n == 1:
        return f"{a} * {b}"
    return f"dot{n}({a}, {b})" if n > 4 else f"dot({a}, {b})"


def header(title: str, cfg: GEMMConfig, defines: Mapping[str, int]) -> list[str]:
    lines = [
        f"// {title}",
        f"// GEMMConfig ({cfg.strategy}): {cfg.label}",
        "// written for tensorsched's ACL-style baseline (tensorsched/baselines/kernels.py)",
        "",
    ]
    lines += [f"#define {k} {v}" for k, v in defines.items()]
    return lines + [""]


# ---- block arithmetic shared by the GEMM kernels


def accumulate_outer(m0: int, n0: int, k0: int, a: Operand, b: Operand) -> list[str]:
    """c_i += a_i[kk] * b_kk for every row i and kk < K0 (a_i: K0-vector of row i of A,
    b_kk: N0-vector of row kk of B)."""
    return [
        f"c{i} = mad({splat(n0, lane(a(i), k0, kk))}, {b(kk)}, c{i});"
        for kk in range(k0)
        for i in range(m0)
    ]


def accumulate_outer_lhs_t(m0: int, n0: int, k0: int, a: Operand, b: Operand) -> list[str]:
    """c_i += a_kk[i] * b_kk (a_kk: M0-vector of column kk of the A block)."""
    return [
        f"c{i} = mad({splat(n0, lane(a(kk), m0, i))}, {b(kk)}, c{i});"
        for kk in range(k0)
        for i in range(m0)
    ]


def accumulate_dot(m0: int, n0: int, k0: int, a: Operand, b: Operand) -> list[str]:
    """c_i[j] += dot(a_i, b_j) (a_i: K0-vector of row i of A, b_j: K0-vector of column j of B)."""
    return [
        f"{lane(f'c{i}', n0, j)} += {dot(k0, a(i), b(j))};" for i in range(m0) for j in range(n0)
    ]


def store_block(m0: int, n0: int) -> list[str]:
    """Store the accumulators into C; rows past M are dropped, a block at the right edge stores
    its first ``n_valid`` columns."""
    lines: list[str] = []
    for i in range(m0):
        ptr = f"C + (y + {i}) * N + x"
        if n0 == 1:
            lines.append(f"if (y + {i} < M) *({ptr}) = c{i};")
            continue
        lines += [
            f"if (y + {i} < M) {{",
            f"    if (n_valid >= N0) vstore{n0}(c{i}, 0, {ptr});",
            f"    else store_partial_{n0}(c{i}, {ptr}, n_valid);",
            "}",
        ]
    return lines


def block_prologue(m0: int, n0: int) -> list[str]:
    return [
        "const int x = get_global_id(0) * N0;      // first column of this work-item's block of C",
        "const int y = get_global_id(1) * M0;      // first row",
        "const int z = get_global_id(2);           // batch item",
        "const int n_valid = N - x;                // columns of the block inside C: N0 or "
        "more, but at the right edge",
        "C += z * c_batch;",
    ] + [f"{vec(n0)} c{i} = {zero(n0)};" for i in range(m0)]


def a_rows(m0: int) -> list[str]:
    """Row pointers of A; rows past the bottom edge repeat row M - 1 (never stored)."""
    return ["A += z * a_batch;"] + [
        f"__global const float* a{i} = A + min(y + {i}, M - 1) * K;" for i in range(m0)
    ]


# ---- native


def native_source(cfg: GEMMConfig) -> str:
    m0, n0, k0 = cfg.m0, cfg.n0, cfg.k0
    b_row = (
        (lambda p: vload(n0, p))
        if n0 == 1
        else (lambda p: f"(n_valid >= N0 ? {vload(n0, p)} : load_partial_{n0}({p}, n_valid))")
    )
    body = (
        block_prologue(m0, n0)
        + a_rows(m0)
        + [
            "B += z * b_batch + x;",
            "int k = 0;",
            "for (; k + K0 <= K; k += K0) {",
        ]
    )
    loop = [f"const {vec(k0)} a{i}v = {vload(k0, f'a{i} + k')};" for i in range(m0)]
    loop += [f"const {vec(n0)} b{kk} = {b_row(f'B + (k + {kk}) * N')};" for kk in range(k0)]
    loop += accumulate_outer(m0, n0, k0, lambda i: f"a{i}v", lambda kk: f"b{kk}")
    body += indent(loop, 1) + ["}", "for (; k < K; ++k) {                       // K % K0 left"]
    tail = [f"const {vec(n0)} b = {b_row('B + k * N')};"]
    tail += [f"c{i} = mad({splat(n0, f'a{i}[k]')}, b, c{i});" for i in range(m0)]
    body += indent(tail, 1) + ["}"] + store_block(m0, n0)
    return "\n".join(
        header(
            "native GEMM: C = A * B, A and B read as they are", cfg, {"M0": m0, "N0": n0, "K0": k0}
        )
        + partial_helpers([n0])
        + [
            "__kernel void gemm_native(__global const float* restrict A,",
            "                          __global const float* restrict B,",
            "                          __global float* restrict C,",
            "                          const int M, const int N, const int K,",
            "                          const int a_batch, const int b_batch, const int c_batch)",
            "{",
        ]
        + indent(body, 1)
        + ["}", ""]
    )


# ---- reshape kernels

RESHAPE_RHS = """\
// Copies the K0 x N0 block (kb, j) of B (K x N), zero past the edges, into the reshaped RHS:
// block j lies in row j / H0, at place j % H0 of the H0 blocks of that row.
__kernel void reshape_rhs(__global const float* restrict B, DST_PARAM,
                          const int K, const int N, const int b_batch, const int dst_batch)
{
    const int j = get_global_id(0), kb = get_global_id(1), z = get_global_id(2);
    const int n = j * N0, k = kb * K0;
    B += z * b_batch;
    float blk[K0][N0];
    for (int kk = 0; kk < K0; ++kk)
        for (int nn = 0; nn < N0; ++nn)
            blk[kk][nn] = (k + kk < K && n + nn < N) ? B[(k + kk) * N + n + nn] : 0.0f;
    const int row_stride = ((K + K0 - 1) / K0) * RHS_KBLOCK_STEP;
    const int row = j / H0;
    const int offset = kb * RHS_KBLOCK_STEP + (j % H0) * RHS_BLOCK_OFFSET;
#if RHS_TRANSPOSED
#define ELEMENT(v, l) blk[l][v]
#else
#define ELEMENT(v, l) blk[v][l]
#endif
    for (int v = 0; v < RHS_NVEC; ++v) {
#if EXPORT_TO_IMAGE
        for (int t = 0; t < RHS_VLEN / 4; ++t)
            write_imagef(dst, (int2)((offset + v * RHS_VECTOR_STRIDE) / 4 + t, z * dst_batch + row),
                         (float4)(ELEMENT(v, 4 * t), ELEMENT(v, 4 * t + 1),
                                  ELEMENT(v, 4 * t + 2), ELEMENT(v, 4 * t + 3)));
#else
        __global float* d = dst + z * dst_batch + row * row_stride + offset
                            + v * RHS_VECTOR_STRIDE;
        for (int l = 0; l < RHS_VLEN; ++l)
            d[l] = ELEMENT(v, l);
#endif
    }
#undef ELEMENT
}
"""

RESHAPE_LHS = """\
// Copies the M0 x K0 block (i, kb) of A (M x K), zero past the edges, into the reshaped LHS:
// block i lies in row i / V0, at place i % V0 of the V0 blocks of that row.
__kernel void reshape_lhs(__global const float* restrict A, __global float* restrict dst,
                          const int M, const int K, const int a_batch, const int dst_batch)
{
    const int kb = get_global_id(0), i = get_global_id(1), z = get_global_id(2);
    const int m = i * M0, k = kb * K0;
    A += z * a_batch;
    float blk[M0][K0];
    for (int mm = 0; mm < M0; ++mm)
        for (int kk = 0; kk < K0; ++kk)
            blk[mm][kk] = (m + mm < M && k + kk < K) ? A[(m + mm) * K + k + kk] : 0.0f;
    const int row_stride = ((K + K0 - 1) / K0) * LHS_KBLOCK_STEP;
    __global float* d = dst + z * dst_batch + (i / V0) * row_stride + kb * LHS_KBLOCK_STEP
                        + (i % V0) * LHS_BLOCK_OFFSET;
    for (int v = 0; v < LHS_NVEC; ++v)
        for (int l = 0; l < LHS_VLEN; ++l)
#if LHS_TRANSPOSED
            d[v * LHS_VECTOR_STRIDE + l] = blk[l][v];
#else
            d[v * LHS_VECTOR_STRIDE + l] = blk[v][l];
#endif
}
"""


def rhs_defines(cfg: GEMMConfig) -> dict[str, int]:
    lay = rhs_layout(cfg, 1, 1)  # the constants do not depend on N and K
    return {
        "H0": cfg.h0,
        "RHS_TRANSPOSED": int(cfg.transpose_rhs),
        "RHS_NVEC": lay.nvec,
        "RHS_VLEN": lay.vlen,
        "RHS_KBLOCK_STEP": lay.kblock_step,
        "RHS_BLOCK_OFFSET": lay.block_offset,
        "RHS_VECTOR_STRIDE": lay.vector_stride,
        "EXPORT_TO_IMAGE": int(cfg.export_to_cl_image_rhs),
    }


def lhs_defines(cfg: GEMMConfig) -> dict[str, int]:
    lay = lhs_layout(cfg, 1, 1)
    return {
        "V0": cfg.v0,
        "LHS_TRANSPOSED": int(cfg.lhs_transposed),
        "LHS_NVEC": lay.nvec,
        "LHS_VLEN": lay.vlen,
        "LHS_KBLOCK_STEP": lay.kblock_step,
        "LHS_BLOCK_OFFSET": lay.block_offset,
        "LHS_VECTOR_STRIDE": lay.vector_stride,
    }


def reshape_rhs_kernel(cfg: GEMMConfig) -> str:
    dst = (
        "__write_only image2d_t dst"
        if cfg.export_to_cl_image_rhs
        else "__global float* restrict dst"
    )
    return RESHAPE_RHS.replace("DST_PARAM", dst)


# ---- the reshaped RHS as the GEMM kernels read it


def rhs_reader(cfg: GEMMConfig) -> tuple[list[str], Operand, str, str]:
    """``(setup lines, load(v), advance line, parameter)`` for reading the reshaped RHS: vector
    ``v`` of the current K-block of this work-item's column block."""
    vlen = cfg.k0 if cfg.transpose_rhs else cfg.n0
    setup = [
        "const int rhs_row = get_global_id(0) / H0;   // the reshaped row of this block",
        "const int rhs_place = get_global_id(0) % H0; // its place among the row's H0 blocks",
    ]
    if cfg.export_to_cl_image_rhs:
        setup += [
            "const int rhs_y = z * rhs_batch + rhs_row;",
            "int rhs_x = rhs_place * RHS_BLOCK_OFFSET / 4;  // in texels of 4 floats",
        ]
        return (
            setup,
            lambda v: read_image(vlen, "Brs", f"rhs_x + {v} * RHS_VECTOR_STRIDE / 4", "rhs_y"),
            "rhs_x += RHS_KBLOCK_STEP / 4;",
            "__read_only image2d_t Brs",
        )
    setup += [
        "const int rhs_row_stride = ((K + K0 - 1) / K0) * RHS_KBLOCK_STEP;",
        "__global const float* rhs = Brs + z * rhs_batch + rhs_row * rhs_row_stride"
        " + rhs_place * RHS_BLOCK_OFFSET;",
    ]
    return (
        setup,
        lambda v: vload(vlen, f"rhs + {v} * RHS_VECTOR_STRIDE"),
        "rhs += RHS_KBLOCK_STEP;",
        "__global const float* restrict Brs",
    )


def rhs_block(cfg: GEMMConfig, a: Operand) -> list[str]:
    """Loads one RHS block and accumulates it against the A vectors ``a(i)`` (K0 wide)."""
    m0, n0, k0 = cfg.m0, cfg.n0, cfg.k0
    _, load, _, _ = rhs_reader(cfg)
    if cfg.transpose_rhs:  # N0 vectors of K0: one per column of the block
        lines = [f"const {vec(k0)} b{j} = {load(j)};" for j in range(n0)]
        return lines + accumulate_dot(m0, n0, k0, a, lambda j: f"b{j}")
    lines = [f"const {vec(n0)} b{kk} = {load(kk)};" for kk in range(k0)]
    return lines + accumulate_outer(m0, n0, k0, a, lambda kk: f"b{kk}")


def reshaped_rhs_only_source(cfg: GEMMConfig) -> str:
    m0, n0, k0 = cfg.m0, cfg.n0, cfg.k0
    setup, _, advance, rhs_param = rhs_reader(cfg)
    body = (
        block_prologue(m0, n0)
        + a_rows(m0)
        + setup
        + ["int k = 0;", "for (; k + K0 <= K; k += K0) {"]
    )
    loop = [f"const {vec(k0)} a{i}v = {vload(k0, f'a{i} + k')};" for i in range(m0)]
    loop += rhs_block(cfg, lambda i: f"a{i}v") + [advance]
    body += indent(loop, 1) + ["}"]
    if k0 > 1:
        body += ["if (k < K) {                               // the last K % K0: A zero-padded"]
        tail = [f"const {vec(k0)} a{i}v = load_partial_{k0}(a{i} + k, K - k);" for i in range(m0)]
        body += indent(tail + rhs_block(cfg, lambda i: f"a{i}v"), 1) + ["}"]
    body += store_block(m0, n0)
    defines = {"M0": m0, "N0": n0, "K0": k0, **rhs_defines(cfg)}
    return "\n".join(
        header("reshaped-only-RHS GEMM: B reshaped by reshape_rhs, A read as it is", cfg, defines)
        + ([SAMPLER, ""] if cfg.export_to_cl_image_rhs else [])
        + partial_helpers([n0, k0])
        + DOT_HELPERS.splitlines()
        + [""]
        + reshape_rhs_kernel(cfg).splitlines()
        + [""]
        + [
            "__kernel void gemm_reshaped_rhs_only(__global const float* restrict A,",
            f"                                     {rhs_param},",
            "                                     __global float* restrict C,",
            "                                     const int M, const int N, const int K,",
            "                                     const int a_batch, const int rhs_batch,",
            "                                     const int c_batch)",
            "{",
        ]
        + indent(body, 1)
        + ["}", ""]
    )


def reshaped_source(cfg: GEMMConfig) -> str:
    m0, n0, k0 = cfg.m0, cfg.n0, cfg.k0
    setup, _, advance, rhs_param = rhs_reader(cfg)
    lhs_vlen = m0 if cfg.lhs_transposed else k0
    body = (
        block_prologue(m0, n0)
        + [
            "const int lhs_row = get_global_id(1) / V0;   // the reshaped row of this block",
            "const int lhs_place = get_global_id(1) % V0; // its place among the row's V0 blocks",
            "const int kblocks = (K + K0 - 1) / K0;",
            "__global const float* lhs = Ars + z * lhs_batch + lhs_row * kblocks * LHS_KBLOCK_STEP"
            " + lhs_place * LHS_BLOCK_OFFSET;",
        ]
        + setup
        + ["for (int kb = 0; kb < kblocks; ++kb) {"]
    )
    nvec = k0 if cfg.lhs_transposed else m0
    loop = [
        f"const {vec(lhs_vlen)} a{v}v = {vload(lhs_vlen, f'lhs + {v} * LHS_VECTOR_STRIDE')};"
        for v in range(nvec)
    ]
    _, load, _, _ = rhs_reader(cfg)
    if cfg.lhs_transposed:  # outer products: a_kk (M0) x b_kk (N0)
        loop += [f"const {vec(n0)} b{kk} = {load(kk)};" for kk in range(k0)]
        loop += accumulate_outer_lhs_t(m0, n0, k0, lambda kk: f"a{kk}v", lambda kk: f"b{kk}")
    else:
        loop += rhs_block(cfg, lambda i: f"a{i}v")
    loop += ["lhs += LHS_KBLOCK_STEP;", advance]
    body += indent(loop, 1) + ["}"] + store_block(m0, n0)
    defines = {"M0": m0, "N0": n0, "K0": k0, **lhs_defines(cfg), **rhs_defines(cfg)}
    return "\n".join(
        header("reshaped GEMM: A reshaped by reshape_lhs, B by reshape_rhs", cfg, defines)
        + ([SAMPLER, ""] if cfg.export_to_cl_image_rhs else [])
        + partial_helpers([n0])
        + DOT_HELPERS.splitlines()
        + [""]
        + RESHAPE_LHS.splitlines()
        + [""]
        + reshape_rhs_kernel(cfg).splitlines()
        + [""]
        + [
            "__kernel void gemm_reshaped(__global const float* restrict Ars,",
            f"                            {rhs_param},",
            "                            __global float* restrict C,",
            "                            const int M, const int N, const int K,",
            "                            const int lhs_batch, const int rhs_batch,",
            "                            const int c_batch)",
            "{",
        ]
        + indent(body, 1)
        + ["}", ""]
    )


def gemm_source(cfg: GEMMConfig) -> str:
    """The OpenCL program of a strategy's kernels (reshapes included) for ``cfg``."""
    return {
        "native": native_source,
        "reshaped_rhs_only": reshaped_rhs_only_source,
        "reshaped": reshaped_source,
    }[cfg.strategy](cfg)


# ---- the GEMM method of convolution

CONV_SOURCE = """\
// The GEMM method of an NCHW convolution, around an ACL-style GEMM (tensorsched baseline):
// im2col -> GEMM (M = OH*OW, N = CO, K = CI*KH*KW) -> col2im back to NCHW.
#define KH {KH}
#define KW {KW}
#define STRIDE_H {SH}
#define STRIDE_W {SW}
#define PAD_H {PH}
#define PAD_W {PW}

// One work-item writes the KH*KW values of input channel ci under output position m: a run of
// the im2col row m (M x K, K = CI*KH*KW ordered ci, kh, kw), zero where the window is in the pad.
__kernel void im2col(__global const float* restrict in, __global float* restrict col,
                     const int CI, const int H, const int W, const int OH, const int OW)
{{
    const int m = get_global_id(0), ci = get_global_id(1), n = get_global_id(2);
    const int ih0 = (m / OW) * STRIDE_H - PAD_H, iw0 = (m % OW) * STRIDE_W - PAD_W;
    in += (n * CI + ci) * H * W;
    col += ((n * OH * OW) + m) * (CI * KH * KW) + ci * KH * KW;
    for (int kh = 0; kh < KH; ++kh) {{
        const int ih = ih0 + kh;
        for (int kw = 0; kw < KW; ++kw) {{
            const int iw = iw0 + kw;
            col[kh * KW + kw] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? in[ih * W + iw] : 0.0f;
        }}
    }}
}}

// The GEMM's output (per image: M = OH*OW rows of CO channels) back to NCHW.
__kernel void col2im(__global const float* restrict gemm_out, __global float* restrict out,
                     const int M, const int CO)
{{
    const int m = get_global_id(0), co = get_global_id(1), n = get_global_id(2);
    out[(n * CO + co) * M + m] = gemm_out[(n * M + m) * CO + co];
}}
"""


def conv_source(kh: int, kw: int, stride: tuple[int, int], pad: tuple[int, int]) -> str:
    """The ``im2col`` and ``col2im`` kernels of a KH x KW convolution."""
    return CONV_SOURCE.format(KH=kh, KW=kw, SH=stride[0], SW=stride[1], PH=pad[0], PW=pad[1])
