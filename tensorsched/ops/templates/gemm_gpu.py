"""Desktop-GPU GEMM: work-group tiles staged through ``__local`` memory by every work-item
together, a register tile per work-item spread over the work-group tile by virtual threads,
vector loads and stores.

The defaults are the fastest config found on an H200 at 4096^3 and 8192^3 (48.8 and 49.6
TFLOP/s, benchmarks/gpu/results/sweep_run8_h200.txt). Knobs:
- ``tile_y`` / ``tile_x`` = (virtual threads, work-items, outputs per work-item) along M / N.
  A work-group computes ``vthreads*work-items*outputs`` rows (columns); a work-item's outputs
  along N form one vector, and its virtual threads sit ``work-items*outputs`` apart, so that
  neighbouring work-items touch neighbouring memory. From 1 to 64 work-items along either
  axis (32 to 1024 in all): a matrix-vector product (M = 1) runs in work-groups one
  work-item tall, where a taller one would repeat the same multiply-adds on rows past the
  matrix (H200, 75 s of search: 1x2048x8192 35.9 -> 26.1 us, 1x4000x1000 16.3 -> 13.9;
  benchmarks/gpu/results/data_shapes_2026-11-26/).
- ``tile_k``: the K step staged per ``__local`` tile; ``unroll_k``: unroll the step's loop.
- ``a_layout``: the ``__local`` tile of A row-major (``"row"``, as A) or column-major
  (``"col"``: a work-item's rows of A are adjacent, read as one vector); ``a_pad``: extra
  elements per column of that tile (``storage_align``) against bank conflicts while it fills.
- ``fetch_vec``: vector width of the cooperative copies from global memory.
- ``double_buffer``: ``"shared"``: two copies of each ``__local`` tile, the next K step's
  filled while this one is used, one barrier per step; ``"local"``: the next K step's global
  loads go to registers while this one computes; ``"both"``: into registers, then into the
  other of two ``__local`` copies, one barrier per step (``double_buffer(scope)``).
- ``split_k``: split the reduction into that many slices computed by separate work-groups
  (``rfactor``; ``blockIdx.z``), then add the partial products in a second kernel: more
  work-groups for a small M x N with a long K.
- ``split_sum``: who adds ``split_k``'s partial products: ``"kernel"``, a second kernel;
  ``"group"``, the last of each tile's ``split_k`` work-groups to finish, in the same
  kernel (the partial products computed at the output's work-group, ``compute_at``, into a
  global array; ``ir.stmt.LastGroup``), which saves the second launch. It relies on an
  ordering between work-groups that OpenCL 1.2 does not promise, so it is offered only where
  ``DeviceLimits.group_ordering`` holds (NVIDIA's GPUs, CPU devices). With ``slice_k``, each
  group's part of K is sliced among its work-items as well. On an H100, the
  logged bests of 15 small shapes rebuilt with it: 0.54x-1.45x the second kernel, faster on
  matrix-vector products and some tall skinny shapes, slower where the tiles are few and
  each last group adds 16 slices alone (benchmarks/gpu/results/group_sum_2026-11-26/): the
  search chooses.
- ``slice_k``: split each K step among that many sets of work-items of one work-group (an
  ``rfactor`` over the step's slices), which add their register tiles through a ``__local``
  array before the output is written: more work-items for a small M x N without
  ``split_k``'s second kernel (4-5 us a launch on NVIDIA's OpenCL), or fewer partial
  products for it to add when both are used. On the H200 it beat the logged bests of 3 of
  14 small shapes (1x4000x1000 1.25x, 3136x64x576 1.17x, 1x1500x6000 1.06x) and ran level
  with or slower than split-K on the rest (benchmarks/gpu/results/slice_verify_2026-11-26/
  slice_probe.txt): the search chooses.
- ``tail``: what the work-group tiles do where M or N is not a multiple of them (``split``'s
  tail strategy): ``"guard"`` checks every element, ``"shift"`` moves the last row (column) of
  work-groups inwards so that every tile is whole and guard-free (the default where the
  tiles do not divide the shape: a config logged where they did carries over as ``shift``).
- ``tail_k``: where the K steps do not divide the reduction (of a work-group: ``K / split_k``),
  ``"guard"`` tests every step's index, ``"peel"`` runs the last step after the loop
  (``split(..., tail="peel")``, after double buffering), so the steps before it are
  guard-free. On an H100 neither wins in general (37 logged configs: guard / peel 0.71x-1.46x,
  geomean 0.99x; benchmarks/gpu/results/splitk_peel_2026-11-25/peel_probe.txt): the search chooses.
- ``reg_fetch``: ``1``: copy the ``__local`` tiles' slices of each K index into registers
  first (``cache_read(..., "local")`` at the K step's inner loop), as vector loads, before
  its multiply-adds; ``2``: a whole K step's slices at once, right after the barrier (at the
  outer loop; as cuBLAS's kernels hold a step's operands; at most ``MAX_REGISTER_FLOATS``
  with the register tile). On the H200 ``2`` ran 1.00x-1.04x the logged bests with ``0`` /
  ``1`` on four mid-size shapes (benchmarks/gpu/results/ptx_cuda_2026-11-26/regfetch2.txt).
- ``stage``: the operands copied into ``__local`` tiles: ``"both"``; ``"a"``, B read by each
  work-item from global memory straight into registers; ``"none"``, A as well, with no
  barrier left. For work-groups one work-item tall (``tile_y`` of 1 work-item: the rows of
  work-items would each load the same elements of B), where every element of B is used by
  one work-item only, as in a matrix-vector product. On the H200, at the logged bests' tiles,
  ``"a"`` ran 1.06x-1.10x on three small matrix-vector products (up to 16 MB of B), 0.82x on
  1x4096x4096 (64 MB) and 0.45x in work-groups two rows tall; 45 s of search with it found
  ``"a"`` 1.18x and 1.08x faster than the best staged config on 1x1024x2048 and 1x1500x6000
  (benchmarks/gpu/results/stage_2026-11-29/): the search chooses.
- ``warp``: ``0``: a two-dimensional work-group (``threadIdx.x`` along N, ``.y`` along M), a
  warp of 32 consecutive work-items being whole rows of it; ``8`` / ``4``: one dimension,
  numbered so that every 32 consecutive work-items compute an 8 x 4 / 4 x 8 block (M x N) of
  the work-items' register tiles, which read fewer distinct ``__local`` words a step, as
  cuBLAS arranges its warps. The fills of the ``__local`` tiles keep their order either way.
  On the H200 ``warp=4`` makes the defaults with ``reg_fetch=0`` 1.3-1.8% faster at 4096^3
  and 8192^3 (49.4 / 50.2 TFLOP/s, benchmarks/gpu/results/launch_2026-11-26/
  large_warp_h200.txt); on mid-size shapes neither layout wins in general, so the default
  stays ``0``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...ir.tensor import IterVar, Tensor, thread_axis
from ...schedules.schedule import Schedule
from ..space import Config, split_axis
from .common import bind_1d, bind_2d, declare_gemm, inline_epilogue, is_reduction

VTHREADS = (1, 2)
THREADS = (1, 2, 4, 8, 16, 32, 64)  # along one axis; a work-group holds 32 to 1024
PER_ITEM = (1, 2, 4, 8)
K_STEPS = (4, 8, 16, 32)
MAX_ACCUMULATORS = 128  # floats of register tile per work-item (spills beyond)
MAX_REGISTER_FLOATS = 192  # with reg_fetch=2: accumulators and a K step's operands
SPLIT_K = (1, 2, 4, 8, 16)
SLICE_K = (1, 2, 4, 8)
SUM_THREADS = 256
WARP = 32  # work-items a warp (NVIDIA; AMD's wavefronts hold 64: two of these)


def gemm_gpu_tiled(
    cfg: Config,
    M: int,
    N: int,
    K: int,
    layout: str = "NN",
    dtype: str = "float32",
    epilogue: Sequence[str] = (),
) -> tuple[Schedule, list[Tensor]]:
    s, _, O, args = declare_gemm(M, N, K, layout, dtype, epilogue)
    schedule_gemm_gpu(cfg, s, O, args[0], args[1], M, N, K)
    return s, args


def _tile_candidates() -> list[tuple[int, int, int]]:
    return [(v, t, w) for v in VTHREADS for t in THREADS for w in PER_ITEM]


def schedule_gemm_gpu(
    cfg: Config,
    s: Schedule,
    O: Tensor,
    A: Tensor,
    B: Tensor,
    M: int,
    N: int,
    K: int,
    axes: tuple[IterVar, IterVar] | None = None,
) -> None:
    """Schedule the GEMM (plus elementwise epilogue) producing ``O`` from ``A`` and ``B``;
    ``axes``: the output stage's loops that play M and N (default: its last two axes; any
    before them, a batch, stay outermost for the caller to bind; split-K and slice-K need
    two-dimensional operands)."""
    split_k = cfg.define_knob("split_k", SPLIT_K)
    vy, ty, wy = cfg.define_split(
        "tile_y", M, 4, policy="candidates", default=(1, 16, 8), candidates=_tile_candidates()
    )
    vx, tx, wx = cfg.define_split(
        "tile_x", N, 4, policy="candidates", default=(2, 16, 4), candidates=_tile_candidates()
    )
    (kstep,) = cfg.define_split(
        "tile_k", K, 2, policy="candidates", default=(16,), candidates=[(k,) for k in K_STEPS]
    )
    unroll_k = cfg.define_knob("unroll_k", (1, 0))
    a_layout = cfg.define_knob("a_layout", ("col", "row"))
    a_pad = cfg.define_knob("a_pad", (0, 4), default=4)
    fetch_vec = cfg.define_knob("fetch_vec", (4, 1), default=1)
    reg_fetch = cfg.define_knob("reg_fetch", (1, 0, 2))
    dbuf = cfg.define_knob("double_buffer", ("none", "shared", "local", "both"), default="both")
    # by default, work-group tiles that do not divide the shape shift rather than guard
    ragged = M % (vy * ty * wy) != 0 or N % (vx * tx * wx) != 0
    tail = cfg.define_knob("tail", ("guard", "shift"), default="shift" if ragged else "guard")
    k_slice = -(-K // split_k)  # the reduction's extent in one work-group
    ragged_k = k_slice % kstep != 0 or k_slice * split_k != K
    tail_k = cfg.define_knob("tail_k", ("guard", "peel"))
    warp = cfg.define_knob("warp", (0, 8, 4))
    slice_k = cfg.define_knob("slice_k", SLICE_K)
    split_sum = cfg.define_knob("split_sum", ("kernel", "group"))
    stage = cfg.define_knob("stage", ("both", "a", "none"))
    stage_a, stage_b = stage != "none", stage == "both"
    by_group = split_k > 1 and split_sum == "group"
    bm, bn = vy * ty * wy, vx * tx * wx
    threads = tx * ty * slice_k
    flat = warp or slice_k > 1 or by_group  # work-items numbered along threadIdx.x alone
    a_rows = bm + (a_pad if a_layout == "col" else 0)
    limits = cfg.limits
    cfg.constrain(threads >= 32, "work-group under 32 work-items")
    cfg.constrain(
        threads <= limits.max_work_group_size
        and tx <= limits.max_work_item_sizes[0]
        and ty <= limits.max_work_item_sizes[1],
        f"work-group over the device's {limits.max_work_group_size} work-items",
    )
    cfg.constrain(bm <= 256 and bn <= 256, "work-group tile over 256")
    cfg.constrain(vy * wy * vx * wx <= MAX_ACCUMULATORS, "register tile over 128 floats")
    cfg.constrain(
        reg_fetch != 2 or vy * wy * vx * wx + kstep * (vy * wy + vx * wx) <= MAX_REGISTER_FLOATS,
        f"register tile and a K step's operands over {MAX_REGISTER_FLOATS} floats",
    )
    cfg.constrain(
        (a_rows * stage_a + bn * stage_b) * kstep * slice_k * 4 * (1 + (dbuf in ("shared", "both")))
        + (slice_k * bm * bn * 4 if slice_k > 1 else 0)
        <= limits.local_mem_size,
        f"__local tiles over the device's {limits.local_mem_size // 1024} KiB",
    )
    cfg.constrain(
        stage_b or ty == 1,
        "B read from global memory by a work-group of more than one row of work-items: "
        "each row would load the same elements",
    )
    cfg.constrain(
        stage_a or (a_layout == "col" and a_pad == 0 and fetch_vec == 1 and dbuf == "none"),
        "stage='none': no __local tile to lay out, fill or double-buffer",
    )
    cfg.constrain(a_pad == 0 or a_layout == "col", "a_pad pads the column-major tile only")
    cfg.constrain(a_pad < bm, "a_pad pads columns of the A tile longer than a_pad")
    cfg.constrain(
        split_k * slice_k == 1 or K // split_k >= kstep * slice_k,
        "K split (among and within work-groups) finer than a step",
    )
    cfg.constrain(
        slice_k == 1 or tail_k == "guard", "K sliced within a work-group tests each step's index"
    )
    cfg.constrain(split_sum == "kernel" or split_k > 1, "no K split: nothing to add")
    cfg.constrain(
        split_sum == "kernel" or limits.group_ordering,
        "the device does not order one work-group's global stores before another's atomics",
    )
    cfg.constrain(
        tail == "guard" or M % bm != 0 or N % bn != 0,
        "the work-group tiles divide M and N: tail='shift' is the same kernel as 'guard'",
    )
    cfg.constrain(
        tail_k == "guard" or ragged_k,
        "the K steps divide K: tail_k='peel' is the same kernel as 'guard'",
    )
    cfg.constrain(
        warp == 0 or (ty % warp == 0 and tx % (WARP // warp) == 0),
        f"warps of {warp} x {WARP // max(warp, 1)} work-items do not tile {ty} x {tx}",
    )

    R = O if is_reduction(O) else inline_epilogue(s, O)
    outer: list[IterVar] = []  # bound to blockIdx.z: the K split among work-groups
    inner: list[IterVar] = []  # fused with the work-items: the K slices within one
    if split_k > 1:
        # partial products over K / split_k each (blockIdx.z), then a kernel that sums them
        (k,) = s[R].op.reduce_axis
        ko, _ = s[R].split(k, nparts=split_k)
        partial = s.rfactor(R, ko)
        if by_group:  # computed in the output's work-groups, added by the last of them
            s[partial].set_scope("global")
            _schedule_slice_sum(s, O, R, partial, axes, bm, bn, wx, threads, tail)
        else:
            _schedule_sum(s, O, R, axes)
        R, O, axes = partial, partial, None  # the rest computes the partial products
    if slice_k > 1:
        # each K step's slices computed by slice_k sets of work-items of one work-group,
        # their register tiles added through a __local array by the output stage
        (k,) = s[R].op.reduce_axis
        _, kr = s[R].split(k, factor=slice_k * kstep)
        kz, _ = s[R].split(kr, nparts=slice_k)
        sliced = s.rfactor(R, kz)
        s[sliced].set_scope("shared")
        _schedule_slice_sum(s, O, R, sliced, axes, bm, bn, wx, threads, tail, by_group)
        comp, out = s.cache_write(sliced, "local"), sliced
        kz, *_, i, j = s[out].op.axis  # (slice, [split,] i, j)
        inner = [kz]
    elif split_k > 1:
        comp, out = s.cache_write(O, "local"), O
        kz, i, j = s[out].op.axis
        outer = [kz]
    else:
        comp, out = (s.cache_write(O, "local"), O) if R is O else (R, O)
        i, j = axes if axes is not None else s[out].op.axis[-2:]  # leading axes: a batch
    # the operands the work-group shares through __local tiles; the rest read from global
    AA = s.cache_read(A, "shared", [comp]) if stage_a else A
    BB = s.cache_read(B, "shared", [comp]) if stage_b else B

    by, vyy, tyy, wyy = split_axis(s[out], i, (vy, ty, wy), tail)
    bx, vxx, txx, wxx = split_axis(s[out], j, (vx, tx, wx), tail)
    s[out].reorder(*outer, by, bx, vyy, vxx, *inner, tyy, txx, wyy, wxx)
    if flat:
        # one dimension of work-items (K slices outermost), numbered so that each warp of
        # WARP consecutive ones holds warp x WARP/warp of them (M x N); the tiles' fills keep
        # their own order
        if warp:
            ty_w, ty_l = s[out].split(tyy, warp)
            tx_w, tx_l = s[out].split(txx, WARP // warp)
            s[out].reorder(ty_w, tx_w, ty_l, tx_l)
            txx = s[out].fuse(*inner, ty_w, tx_w, ty_l, tx_l)
        else:
            txx = s[out].fuse(*inner, tyy, txx)
        s[out].bind(txx, thread_axis("threadIdx.x"))
        if not inner and not by_group:  # else its tile is placed in the sum's work-group
            s[out].bind(by, thread_axis("blockIdx.y"))
            s[out].bind(bx, thread_axis("blockIdx.x"))
    else:
        bind_2d(s, out, by, bx, tyy, txx)
    if outer:
        s[out].bind(outer[0], thread_axis("blockIdx.z"))
    s[out].bind(vyy, thread_axis("vthread", name="vy"))
    s[out].bind(vxx, thread_axis("vthread", name="vx"))
    s[out].unroll(wyy)
    s[out].vectorize(wxx)

    s[comp].compute_at(s[out], txx)
    *lead, ci, cj = s[comp].op.axis
    if slice_k > 1:  # rfactor left the steps and their K indices
        ko, ki = s[comp].op.reduce_axis
    else:
        (ck,) = s[comp].op.reduce_axis
        ko, ki = s[comp].split(ck, kstep, tail=tail_k)
    s[comp].reorder(*lead, ko, ki, ci, cj)
    if unroll_k:
        s[comp].unroll(ki)
    s[comp].unroll(ci)
    s[comp].vectorize(cj)
    if reg_fetch:  # each K step's operands: __local -> registers, as vectors
        AL = s.cache_read(AA, "local", [comp])
        BL = s.cache_read(BB, "local", [comp])
        for T in (AL, BL):
            s[T].compute_at(s[comp], ki if reg_fetch == 1 else ko)
            *_, r, c = s[T].op.axis
            s[T].vectorize(c if T is BL or a_layout == "row" or not stage_a else r)

    if stage_a and a_layout == "col":
        s[AA].transform_layout(lambda *ax: [*ax[:-2], ax[-1], ax[-2]])
        if 0 < a_pad < bm:  # columns bm + a_pad elements apart
            s[AA].storage_align(AA.op.axis[-1], bm, a_pad)
    tiles = [(AA, kstep)] * stage_a + [(BB, bn)] * stage_b
    for T, width in tiles:
        s[T].compute_at(s[comp], ko)
        vec = math.gcd(fetch_vec, width)
        fused = s[T].fuse(*s[T].op.axis)
        rest, lanes = s[T].split(fused, vec)
        if flat:
            fill_outer, fx = s[T].split(rest, threads)
        else:
            rest, fx = s[T].split(rest, tx)
            fill_outer, fy = s[T].split(rest, ty)
            s[T].bind(fy, thread_axis("threadIdx.y"))
        s[T].bind(fx, thread_axis("threadIdx.x"))
        s[T].unroll(fill_outer)
        if vec > 1:
            s[T].vectorize(lanes)
        if dbuf != "none":
            s[T].double_buffer(dbuf)


def _schedule_sum(s: Schedule, O: Tensor, R: Tensor, axes: tuple[IterVar, IterVar] | None) -> None:
    """The kernel that adds the split-K partial products (and applies the epilogue), one
    output element a work-item: the slices summed in a register by an unrolled loop, so that
    a work-item's loads of them are all in flight at once. (H100, 729x128, split 16: 7.6 us
    with the sum accumulated in global memory by a loop, 4.6 unrolled in a register; a kernel
    of one element is timed at 3.6-5.8 us there. Four adjacent outputs a work-item, as
    vectors, measured the same or slower.)"""
    acc = s.cache_write(O, "local") if R is O else R
    f = s[O].fuse(*(axes if axes is not None else s[O].op.axis))
    _, fi = bind_1d(s, O, f, SUM_THREADS)
    s[acc].compute_at(s[O], fi)
    (kz,) = s[acc].op.reduce_axis
    s[acc].unroll(kz)


def _schedule_slice_sum(
    s: Schedule,
    O: Tensor,
    R: Tensor,
    partial: Tensor,
    axes: tuple[IterVar, IterVar] | None,
    bm: int,
    bn: int,
    lanes: int,
    threads: int,
    tail: str,
    placed: bool = False,
) -> None:
    """The output stage of a K sliced within a work-group (or split among work-groups and
    added by the last of them): the ``bm x bn`` tile of ``O`` spread over all ``threads``
    work-items in vectors of ``lanes`` along N, each adding the slices' partial products of
    its outputs from ``partial`` (computed at this work-group: a ``__local`` array, or a
    global one that the K split's work-groups fill) in a register, then applying the
    epilogue."""
    acc = s.cache_write(O, "local") if R is O else R
    if R is not O:
        s[R].set_scope("local")
    lead: list[IterVar] = []  # split-K's partial products: the split (blockIdx.z)
    if axes is None:
        *lead, i, j = s[O].op.axis
    else:
        i, j = axes
    by, ii = s[O].split(i, factor=bm, tail=tail)
    bx, jj = s[O].split(j, factor=bn, tail=tail)
    jo, jv = s[O].split(jj, lanes)
    s[O].reorder(*lead, by, bx, ii, jo, jv)
    for kz in lead:
        s[O].bind(kz, thread_axis("blockIdx.z"))
    rest, item = s[O].split(s[O].fuse(ii, jo), threads)
    s[O].reorder(item, rest)
    if not placed:  # else ``O`` is computed in a work-group of its own consumer
        s[O].bind(by, thread_axis("blockIdx.y"))
        s[O].bind(bx, thread_axis("blockIdx.x"))
    s[O].bind(item, thread_axis("threadIdx.x"))
    s[O].unroll(rest)
    s[O].vectorize(jv)
    s[acc].compute_at(s[O], rest)
    *_, lane = s[acc].op.axis
    (kz,) = s[acc].op.reduce_axis
    s[acc].reorder(kz, lane)
    s[acc].unroll(kz)
    s[acc].vectorize(lane)
    s[partial].compute_at(s[O], bx)
