"""The seeds' mobile GEMM kernels as schedules.

- ``gemm_vec_dot`` (seed 000, "just vectorize"): B stored transposed, one output per work-item,
  a ``vec``-wide vector of partial sums along K (``rfactor``), summed at the end.
- ``gemm_block2x2`` (seed 000 / 002, ARM's blocked kernel): 2x2 outputs per work-item, float4
  partial sums along K; ``layout="morton"`` packs A and B first in seed 002's hybrid Morton
  order, so each work-item's 2 rows x 4 k-values of A (and of B^T) are contiguous.
- ``gemm_adreno`` (seed 004): B read through an ``image2d_t``, each work-item an 8x4 micro-tile
  of float4 rows, K stepped by 4 and unrolled, the work-group shape as knobs.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import ScheduleError
from ...ir import intrin as I
from ...ir.intrin import const
from ...ir.tensor import IterVar, Tensor, compute, placeholder, reduce_axis
from ...schedules.schedule import Schedule, create_schedule
from ..nn import epilogue as make_epilogue
from ..space import Config
from .common import bind_1d, bind_2d, declare_gemm, inline_epilogue, reduction_and_epilogue

WORK_GROUPS = ((1, 64), (2, 32), (4, 16), (8, 8), (16, 16), (8, 32), (4, 4))


def _rows_cols(
    s: Schedule, out: Tensor, wg: tuple[int, int], per_item: tuple[int, int] = (1, 1)
) -> tuple[IterVar, IterVar, IterVar]:
    """Split the output into work-groups x work-items x per-item tile; returns the loops."""
    i, j = s[out].op.axis
    iy, ii = s[out].split(i, per_item[0])
    jx, ji = s[out].split(j, per_item[1])
    by, ty = s[out].split(iy, wg[0])
    bx, tx = s[out].split(jx, wg[1])
    s[out].reorder(by, bx, ty, tx, ii, ji)
    bind_2d(s, out, by, bx, ty, tx)
    return tx, ii, ji


def _factored(
    s: Schedule, C: Tensor, O: Tensor, wg: tuple[int, int], per_item: tuple[int, int], vec: int
) -> None:
    """Shared by the two seed-000 kernels: C's reduction split by ``vec``, factored into
    ``vec`` partial sums held in registers, then summed per output."""
    ko, ki = s[C].split(s[C].op.reduce_axis[0], vec)
    CF = s.rfactor(C, ki, factor_axis=2)
    tx, ii, ji = _rows_cols(s, O, wg, per_item)
    if O is not C:
        # the partial sums and their total both live in registers under the work-item
        s[CF].compute_at(s[O], tx)
        s[C].compute_at(s[O], tx)
        cy, cx = s[C].op.axis
        (kv,) = s[C].op.reduce_axis
        s[C].reorder(cy, cx, kv)
        s[C].unroll(cy)
        s[C].unroll(cx)
        s[C].unroll(kv)
        s[O].unroll(ii)
        s[O].unroll(ji)
    else:
        s[O].unroll(ii)
        s[O].unroll(ji)
        s[O].unroll(s[O].op.reduce_axis[0])
        s[CF].compute_at(s[O], tx)
    fy, fx, fv = s[CF].op.axis
    (fk,) = s[CF].op.reduce_axis
    s[CF].reorder(fk, fy, fx, fv)
    s[CF].unroll(fy)
    s[CF].unroll(fx)
    s[CF].vectorize(fv)


def gemm_vec_dot(
    cfg: Config, M: int, N: int, K: int, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    """Seed 000 "just vectorize"; B is given transposed (N x K)."""
    s, C, O, args = declare_gemm(M, N, K, "NT", dtype, epilogue)
    vec = cfg.define_knob("vec", (8, 4, 16))
    wg = cfg.define_knob("work_group", WORK_GROUPS, default=(8, 8))
    inline_epilogue(s, O)
    _factored(s, C, O, wg, (1, 1), vec)
    return s, args


gemm_vec_dot.b_transposed = True  # type: ignore[attr-defined]  # its B argument is N x K


def _morton(A: Tensor, B: Tensor, M: int, N: int, K: int) -> tuple[Tensor, Tensor, Tensor]:
    """Seed 002's hybrid Morton packing: ``A_pack[io, ko, ii, ki] = A[2*io + ii, 4*ko + ki]``
    and the same for B^T, so a work-item's 2x4 block is 8 consecutive floats."""
    MB, NB, KB = -(-M // 2), -(-N // 2), -(-K // 4)

    def packed(src: Tensor, rows: int, transposed: bool, name: str) -> Tensor:
        def body(o, ko, ii, ki):
            r, c = o * 2 + ii, ko * 4 + ki
            inside = I.all(r < rows, c < K)
            rr, cc = I.min(r, rows - 1), I.min(c, K - 1)
            value = src[cc, rr] if transposed else src[rr, cc]
            return I.if_then_else(inside, value, const(0, src.dtype))

        return compute(((MB if not transposed else NB), KB, 2, 4), body, name=name)

    A_pack = packed(A, M, False, "A_pack")
    B_pack = packed(B, N, True, "B_pack")
    k = reduce_axis((0, KB * 4), name="k")
    C = compute(
        (M, N),
        lambda i, j: I.sum(
            A_pack[i // 2, k // 4, i % 2, k % 4] * B_pack[j // 2, k // 4, j % 2, k % 4], axis=k
        ),
        name="C",
        tag="gemm_morton",
    )
    return A_pack, B_pack, C


def gemm_block2x2(
    cfg: Config, M: int, N: int, K: int, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    layout = cfg.define_knob("layout", ("blocked", "morton"))
    wg = cfg.define_knob("work_group", WORK_GROUPS, default=(4, 16))
    A = placeholder((M, K), dtype, name="A")
    B = placeholder((K, N), dtype, name="B")
    packs: list[Tensor]
    if layout == "morton":
        *packs, C = _morton(A, B, M, N, K)
    else:  # ARM's: A row-major, B packed column-major (B^T)
        Bt = compute((N, K), lambda j, kk: B[kk, j], name="B_colmajor")
        k = reduce_axis((0, K), name="k")
        C = compute(
            (M, N), lambda i, j: I.sum(A[i, k] * Bt[j, k], axis=k), name="C", tag="gemm_blocked"
        )
        packs = [Bt]
    O, extra = make_epilogue(C, epilogue)
    s = create_schedule(O.op)
    inline_epilogue(s, O)
    for P in packs:
        axes = s[P].op.axis
        bind_1d(s, P, s[P].fuse(*axes[:-1]) if len(axes) > 2 else axes[0], 64)
    _factored(s, C, O, wg, (2, 2), 4)
    return s, [A, B] + extra + [O]


def gemm_adreno(
    cfg: Config, M: int, N: int, K: int, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    if N % 4:
        raise ScheduleError(
            "gemm_adreno",
            None,
            f"N = {N} is not a multiple of 4: B is read as an image of float4 texels",
        )
    s, _, O, args = declare_gemm(M, N, K, "NN", dtype, epilogue)
    rows = cfg.define_knob("rows", (8, 4))
    wg = cfg.define_knob("work_group", WORK_GROUPS, default=(8, 8))
    kstep = cfg.define_knob("k_step", (4, 8))
    s.use_image(args[1])
    comp, out = reduction_and_epilogue(s, O)
    tx, ii, ji = _rows_cols(s, out, wg, (rows, 4))
    s[out].unroll(ii)
    s[out].vectorize(ji)
    s[comp].compute_at(s[out], tx)
    ci, cj = s[comp].op.axis
    ko, ki = s[comp].split(s[comp].op.reduce_axis[0], kstep)
    s[comp].reorder(ko, ki, ci, cj)
    s[comp].unroll(ki)
    s[comp].unroll(ci)
    s[comp].vectorize(cj)
    return s, args
