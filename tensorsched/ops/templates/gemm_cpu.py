"""CPU-device GEMM (PoCL): a large register tile per work-item, tiny work-groups, wide vectors,
no ``__local`` staging (a CPU's caches do that job).

Knobs: ``tile_y`` / ``tile_x`` = (work-items, outputs per work-item; more than 64 columns
walk a row in a loop instead of a register tile, for skinny GEMMs), ``vec`` (vector width of
the columns), ``tile_k`` (K step, unrolled; for a convolution read through its image rows, the
step over input channels, each with its kernel columns unrolled), and the tail strategies of
splits that do not divide the shape: ``tail`` for M and N ("shift": the last work-group's tile
moves inwards, so the register tile stays guard-free), ``tail_k`` for K ("peel": the last K step
is written out after the loop). "guard" is TVM's per-element check. ``group_order`` says
which work-groups the device runs one after another: ``"cols"``, those along N (they share
A's rows), or ``"rows"``, those along M (they share B's column slice, K by the tile's
columns, which then stays in the core's cache instead of coming from memory for each
work-group: at 1000^3 on PoCL, 172 -> 263 GFLOP/s at best). ``pad_b`` (where the template
gives its B operand, ``padded``): B is first copied by a kernel of its own, and the GEMM
reads the copy. A work-item walks down K rows of its columns of B; where B's rows are a
multiple of 2 KiB apart they fall into a few of the cache's sets and evict each other, and
where K is large each row is on a page of its own, past the TLB's reach. Where the
work-group tiles divide N and a work-item's columns are a multiple of 16, the copy packs B
into panels of 16 columns, each contiguous over K (``ops.gemm``'s ``b_panel``), which fixes
both; elsewhere it pads B's rows (``storage_align``: a row stride of 80 more than a multiple
of 256 elements), which fixes the first. On PoCL (Intel Xeon VM), one config: 1024^3 166 ->
362 GFLOP/s with padded rows; 2048^3 100 -> 230 with padded rows on huge pages, 328-360 with
panels (numpy: 336-356). ``pad_a`` (the plain GEMM, A's rows along K): A is copied the
same way into padded rows, where a work-item's rows of A would fill an L1 set
(``rows_share_a_set``): 16 rows 8 KiB apart ran at half speed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...ir.dtype import itemsize
from ...ir.tensor import ComputeOp, IterVar, Tensor, thread_axis
from ...schedules.schedule import Schedule
from ..space import Config, split_axis
from .common import bind_2d, declare_gemm, reduction_and_epilogue


def gemm_cpu(
    cfg: Config,
    M: int,
    N: int,
    K: int,
    layout: str = "NN",
    dtype: str = "float32",
    epilogue: Sequence[str] = (),
) -> tuple[Schedule, list[Tensor]]:
    # the knobs that decide the declaration, read as schedule_gemm_cpu will define them (it
    # defines every knob, in the order that every GEMM view shares)
    tile = chosen(cfg, "tile_x", TILE_X_DEFAULT)
    ok = isinstance(tile, tuple) and len(tile) == 2 and all(type(v) is int for v in tile)
    tx, wx = tile if ok else TILE_X_DEFAULT  # (a bad value: the definition refuses it)
    b_shape = (N, K) if layout == "NT" else (K, N)
    pad_b = chosen(cfg, "pad_b", pad_pays(b_shape, M)) is True
    panels = pad_b and N % (tx * wx) == 0 and wx % PANEL == 0
    s, C, O, args = declare_gemm(M, N, K, layout, dtype, epilogue, PANEL if panels else 0)
    panel = next((t for t in C.op.input_tensors if t.name == "B_panel"), None)
    a_rows = args[0] if layout != "TN" else None  # A's rows run along K
    schedule_gemm_cpu(cfg, s, O, M, N, K, padded=args[1], panel=panel, a_rows=a_rows)
    return s, args


# B packed into panels of this many columns (a cache line of float32), each contiguous over K
PANEL = 16


# B copied with padded rows: their stride becomes PAD_OFFSET more than a multiple of PAD_FACTOR
# elements. Offsets 16-176 measured alike at 1024^3, 1024x1536x1024 and 512x512x2048; at
# 1024x2048x1024, 80 (5 cache lines) was best: 255 GFLOP/s against 215 with 16 (PoCL, Intel)
PAD_FACTOR, PAD_OFFSET = 256, 80


def pad_pays(b_shape: Sequence[int], rows: int) -> bool:
    """The default of ``pad_b`` for a GEMM's B, read by ``rows`` rows of A (M): B's rows are a
    multiple of 512 elements long (2 KiB of float32: the stride at which they share cache
    sets), it holds at least 2^19 elements, and at least ``PAD_ROWS`` rows read it. Measured
    on PoCL (Intel Xeon VM, each shape's predicted config with and without the copy, panels
    where they apply): gains at 1024^3 (2.2x), 256x2048x2048 (2.7x), 512x1024x512 (1.55x),
    128x4096x1024 (1.45x), 256x1024x1024 (1.17x); 1024x1024x256 gains 1.13x and 2048x512x512
    1.03x, but 512^3 loses 6% (B of 2^18 elements: the copy is not repaid). With padded rows
    only (before panels), small M lost: 256x1024x1024 0.8x, 128x4096x1024 0.9x."""
    row, size = b_shape[-1], math.prod(b_shape)
    return row % 512 == 0 and size >= 1 << 19 and rows >= PAD_ROWS


# B is copied (``pad_pays``) only for at least this many rows of A: fewer read B about once,
# so the copy's extra pass over it is not repaid. On PoCL (AMD EPYC VM, the untuned pick with
# and without the copy, x4096x4096): M = 1 3.9 -> 12.3 GFLOP/s without it, 4 12.0 -> 17.1,
# 8 33.1 -> 59.3 (8x1024x1024 49 -> 82); M = 16 40.9 against 34.6 without (16x2048x2048 77
# against 63), 64 71 against 36, 256 125 against 40
PAD_ROWS = 16


# a CPU's L1 data cache maps addresses this many bytes apart to the same set (64 sets of
# 64-byte lines: the L1s of the Intel and AMD x86 cores of this decade), and holds this many
# lines a set (the fewest ways of those L1s)
L1_SET_SPAN, L1_WAYS = 4096, 8


def rows_share_a_set(rows: int, stride: int) -> bool:
    """The default of ``pad_a``: as many of a work-item's ``rows`` of A (``stride`` bytes
    apart) fall into one L1 set as the set holds lines, so that the rows evict one another
    while B streams past. On PoCL (AMD EPYC VM), each shape's untuned config with A's rows
    padded against without: 16 rows 8 KiB apart (512x512x2048) 2.1x, 256x256x1024 2.0x; 8
    rows 4-8 KiB apart 1.0-1.4x (256x2048x2048, 128x4096x1024, 1024^3, 2048^3); 8 rows 2 KiB
    apart (four a set) 0.96-1.01x, so left unpadded."""
    return rows * math.gcd(stride, L1_SET_SPAN) // L1_SET_SPAN >= L1_WAYS


TILE_X_DEFAULT = (2, 16)

# Columns a work-item may hold in registers: its register tile is unrolled. The WIDE widths
# are for skinny GEMMs (a matrix-vector product at M = 1): each work-item walks a long
# stretch of B's rows, the K step's rows together, in a loop over its vectors of sums, which
# the compiler keeps in memory (L1), at most WIDE_OUTPUTS of them. Streaming 4-8 KiB of each
# row is what feeds a core: on PoCL (AMD EPYC VM), 1x4096x4096 at 0.57x numpy with the best
# tile of 64 columns, 0.82x-0.89x with 1024-2048 columns and 4-8 rows a K step.
REGISTER_COLUMNS = 64
WIDE = (256, 1024, 2048)
WIDE_OUTPUTS = 4096


def chosen(cfg: Config, name: str, default: Any) -> Any:
    """The value ``cfg`` gives knob ``name`` before it is defined (else ``default``)."""
    value = cfg.values.get(name, default)
    return tuple(value) if isinstance(value, list) else value


def schedule_panel_copy(s: Schedule, panel: Tensor) -> None:
    """The kernel packing B into ``B_panel[column // 16, k, column % 16]``: 32 rows of B a
    work-group, a row's panels one after another, 16-wide vectors (a line of each)."""
    jo, k, ji = s[panel].op.axis
    ko, ki = s[panel].split(k, 32)
    s[panel].reorder(ko, ki, jo, ji)
    s[panel].vectorize(ji)
    s[panel].bind(ko, thread_axis("blockIdx.x"))


def schedule_padded_copy(s: Schedule, copy: Tensor) -> None:
    """The copy kernel of a padded operand: 32 rows a work-group (one row each is slower: on
    PoCL, 1024^3's GEMM with the copy 334 -> 362 GFLOP/s), each row in 16-wide vectors, the
    last of a row that 16 does not divide shifted inwards (it copies some elements twice)."""
    *outer, j = s[copy].op.axis
    rows = s[copy].fuse(*outer) if len(outer) > 1 else outer[0]
    ro, _ = s[copy].split(rows, 32)
    row = int(copy.shape[-1])
    _, jv = s[copy].split(j, 16, tail="shift" if row > 16 and row % 16 else "guard")
    s[copy].vectorize(jv)
    s[copy].bind(ro, thread_axis("blockIdx.x"))


def schedule_gemm_cpu(
    cfg: Config,
    s: Schedule,
    O: Tensor,
    M: int,
    N: int,
    K: int,
    axes: tuple[IterVar, IterVar] | None = None,
    k_unroll: int = 1,
    rows_fastest: bool = False,
    padded: Tensor | None = None,
    panel: Tensor | None = None,
    a_rows: Tensor | None = None,
) -> None:
    """Schedule the GEMM (plus elementwise epilogue) producing ``O``; ``axes``: the output
    stage's loops that play M and N (default: its last two axes; any before them, a batch,
    stay outermost for the caller to bind). A GEMM with the three reduction
    axes (channel, kernel row, kernel column) of ``conv2d_nchw_row_gemm`` steps through the
    channels (``K`` of them here) and unrolls each step's ``k_unroll`` kernel columns.
    ``rows_fastest``: the default of the ``group_order`` knob is ``"rows"``: the work-groups
    along M are OpenCL's first dimension, so consecutive ones share a column slice of B (a
    channels-last conv's weights stay in cache; in MobileNet-v1 on PoCL its 7x7 layers 0.82
    -> 0.62 ms); by default those along N are. ``padded``: the B operand whose rows knob
    ``pad_b`` pads: a placeholder (a GEMM's B, its rows along N or K) is copied into padded
    rows by a kernel of its own each call; a stage computed from weights alone (a
    channels-last conv's repacked kernel, ``CI x KH x KW x CO``, which a network computes
    once at build time) is stored with them. Without one, ``pad_b`` is refused (the knob
    stays, so that every GEMM view has the same knobs and teaches one model)."""
    ty, wy = cfg.define_split(
        "tile_y",
        M,
        3,
        policy="candidates",
        default=(2, 16),
        candidates=[(t, w) for t in (1, 2, 4) for w in (1, 2, 4, 8, 16, 32)],
    )
    tx, wx = cfg.define_split(
        "tile_x",
        N,
        3,
        policy="candidates",
        default=TILE_X_DEFAULT,
        candidates=[(t, w) for t in (1, 2, 4) for w in (8, 16, 32, 64, *WIDE)],
    )
    vec = cfg.define_knob("vec", (16, 8, 4))
    group_order = cfg.define_knob(
        "group_order", ("cols", "rows"), default="rows" if rows_fastest else "cols"
    )
    (kstep,) = cfg.define_split(
        "tile_k", K, 2, policy="candidates", default=(4,), candidates=[(k,) for k in (1, 2, 4, 8)]
    )
    # by default, tiles that do not divide the shape shift (peel) rather than guard
    ragged = M % (ty * wy) != 0 or N % (tx * wx) != 0
    tail = cfg.define_knob("tail", ("guard", "shift"), default="shift" if ragged else "guard")
    tail_k = cfg.define_knob("tail_k", ("guard", "peel"), default="peel" if K % kstep else "guard")
    b_shape = [int(e) for e in padded.shape] if padded is not None else []
    # a repacked weight's rows are padded only where the search finds it pays: in VGG-16,
    # ResNet-18 and MobileNet-v1 (channels-last convs) on PoCL, the rule above gained nothing
    copied = padded is not None and not isinstance(padded.op, ComputeOp)
    pad_b = cfg.define_knob("pad_b", (False, True), default=copied and pad_pays(b_shape, M))
    cfg.constrain(not pad_b or padded is not None, "this template has no B operand to pad")
    rows_alias = a_rows is not None and rows_share_a_set(wy, K * itemsize(a_rows.dtype))
    pad_a = cfg.define_knob("pad_a", (False, True), default=rows_alias)
    cfg.constrain(not pad_a or a_rows is not None, "this template has no A operand to pad")
    cfg.constrain(wx % vec == 0, "columns per work-item not a multiple of the vector width")
    cfg.constrain(
        wx <= REGISTER_COLUMNS or wy * wx <= WIDE_OUTPUTS,
        f"a row of more than {REGISTER_COLUMNS} columns a work-item holds at most "
        f"{WIDE_OUTPUTS} outputs in all (rows x columns)",
    )
    if k_unroll > 1:
        cfg.constrain(kstep * k_unroll <= 24, "unrolls more than 24 reduction steps")
    cfg.constrain(
        tail == "guard" or M % (ty * wy) != 0 or N % (tx * wx) != 0,
        "the tiles divide M and N: tail='shift' is the same kernel as 'guard'",
    )
    # a guarded last tile whose edge splits a vector computes its columns one by one under
    # an if each (2047 x 129 x 511, 128 columns a tile, on PoCL: 22 GFLOP/s, 72 shifted);
    # where the tile fits in N, "shift" keeps it whole, so "guard" is refused there
    cfg.constrain(
        tail == "shift" or N % (tx * wx) == 0 or N % vec == 0 or N < tx * wx,
        "tail='guard' would make the last tile's columns guarded scalar code (N is not a "
        "multiple of the vector width); tail='shift' keeps the tile whole",
    )
    cfg.constrain(
        tail_k == "guard" or K % kstep != 0,
        "the K step divides K: tail_k='peel' is the same kernel as 'guard'",
    )

    comp, out = reduction_and_epilogue(s, O)
    if pad_b and panel is not None:
        schedule_panel_copy(s, panel)
    elif pad_b and padded is not None:
        stored = s.cache_read(padded, "global", [comp]) if copied else padded
        s[stored].storage_align(s[stored].op.axis[-2], PAD_FACTOR, PAD_OFFSET)
        if copied:
            schedule_padded_copy(s, stored)
    if pad_a and a_rows is not None:
        a_copy = s.cache_read(a_rows, "global", [comp])
        s[a_copy].storage_align(s[a_copy].op.axis[-2], PAD_FACTOR, PAD_OFFSET)
        schedule_padded_copy(s, a_copy)
    i, j = axes if axes is not None else s[out].op.axis[-2:]  # leading axes: a batch
    by, tyy, wyy = split_axis(s[out], i, (ty, wy), tail)
    bx, txx, wxx = split_axis(s[out], j, (tx, wx), tail)
    s[out].reorder(by, bx, tyy, txx, wyy, wxx)
    if group_order == "rows":
        bind_2d(s, out, bx, by, txx, tyy)
    else:
        bind_2d(s, out, by, bx, tyy, txx)
    xo, xv = s[out].split(wxx, vec)
    s[out].vectorize(xv)

    s[comp].compute_at(s[out], txx)
    *_, ci, cj = s[comp].op.axis
    cjo, cjv = s[comp].split(cj, vec)
    if len(s[comp].op.reduce_axis) == 3:
        # a convolution's (channel, kernel row, kernel column): the channels step by
        # ``tile_k``; one step's channels and kernel columns are unrolled
        rc, rh, rw = s[comp].op.reduce_axis
        ko, ki = s[comp].split(rc, kstep, tail=tail_k)
        s[comp].reorder(ko, rh, ki, rw, ci, cjo, cjv)
        s[comp].unroll(rw)
    else:
        (ck,) = s[comp].op.reduce_axis
        ko, ki = s[comp].split(ck, kstep, tail=tail_k)
        if wx > REGISTER_COLUMNS:  # each vector of sums takes the K step's rows in turn
            s[comp].reorder(ko, ci, cjo, ki, cjv)
        else:
            s[comp].reorder(ko, ki, ci, cjo, cjv)
    s[comp].unroll(ki)
    s[comp].unroll(ci)
    if wx <= REGISTER_COLUMNS:  # wider: a loop over the row's vectors, its sums in memory
        s[comp].unroll(cjo)
    s[comp].vectorize(cjv)
