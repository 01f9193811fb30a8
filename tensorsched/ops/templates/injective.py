"""The generic schedule of an elementwise / injective stage, and what the network templates
share: inlining a chain of elementwise stages, and declaring an operator with its epilogue.

``schedule_injective(cfg, s, out)`` schedules any stage whose body has no reduction (``add``,
``relu6``, ``clip``, ``flatten``, ``reshape``, ``concat``, a bias ...): every elementwise or
injective stage feeding ``out`` is inlined into it, its axes are fused into one, split into
(work-groups, work-items, outputs per work-item) and bound. Knobs: ``threads`` (work-items per
work-group), ``per_item`` (consecutive outputs per work-item, unrolled). Reductions feeding
``out`` are left alone (each stays a stage of its own, which the caller schedules).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.expr import IntImm
from ...ir.tensor import ComputeOp, IterVar, Tensor, thread_axis
from ...schedules.schedule import Schedule, create_schedule
from ..nn import epilogue as make_epilogue
from ..space import Config

THREADS = (64, 32, 128, 256, 16, 1)


def inline_injective(s: Schedule, out: Tensor) -> None:
    """Inline every stage without a reduction that feeds ``out`` (``out`` excepted), up to
    the reductions and placeholders."""
    seen, todo = set[int](), list(out.op.input_tensors)
    while todo:
        t = todo.pop()
        if id(t.op) in seen or not isinstance(t.op, ComputeOp) or t.op.reduce_axis:
            continue
        seen.add(id(t.op))
        s[t].compute_inline()
        todo += t.op.input_tensors


def schedule_injective(cfg: Config, s: Schedule, out: Tensor) -> None:
    """Schedule ``out`` (a stage without reduction) as one flat NDRange; see the module."""
    threads = cfg.define_knob("threads", THREADS)
    per_item = cfg.define_knob("per_item", (1, 2, 4))
    limit = cfg.limits.max_work_group_size
    cfg.constrain(threads <= limit, f"work-group over the device's {limit} work-items")
    inline_injective(s, out)
    bind_flat(s, out, threads, per_item)


def bind_flat(s: Schedule, out: Tensor, threads: int = 64, per_item: int = 1) -> None:
    """``out``'s axes fused, split into (work-groups, ``threads`` work-items, ``per_item``
    outputs each, unrolled) and bound: a stage of its own kernel, without knobs."""
    axes = list(s[out].op.axis)
    f = s[out].fuse(*axes) if len(axes) > 1 else axes[0]
    fo, fi = s[out].split(f, per_item)
    bx, tx = s[out].split(fo, threads)
    s[out].bind(bx, thread_axis("blockIdx.x"))
    s[out].bind(tx, thread_axis("threadIdx.x"))
    if per_item > 1:
        s[out].unroll(fi)


def bind_rows(s: Schedule, t: Tensor, threads: int = 16) -> None:
    """``t``'s axes but the last fused and bound (``threads`` work-items per work-group), each
    work-item a loop over one row: a stage of its own kernel, without knobs, whose index
    arithmetic is per row rather than per element (the padded copy of an image)."""
    axes = list(s[t].op.axis)
    if len(axes) < 2:
        bind_flat(s, t, threads)
        return
    f = s[t].fuse(*axes[:-1]) if len(axes) > 2 else axes[0]
    bx, tx = s[t].split(f, threads)
    s[t].bind(bx, thread_axis("blockIdx.x"))
    s[t].bind(tx, thread_axis("threadIdx.x"))


ROW_GROUP_MIN = 64  # elements a row from which a work-group a row pays (fewer: a work-item)


def _elements(axes: Sequence[IterVar]) -> int:
    """The points of ``axes`` together; 0 where an extent is symbolic."""
    n = 1
    for v in axes:
        extent = v.domain.extent
        if isinstance(extent, IntImm):
            extent = extent.value
        if not isinstance(extent, int):
            return 0
        n *= extent
    return n


def row_threads(n: int, limit: int = 256) -> int:
    """Work-items of a work-group that reduces rows of ``n`` elements: the largest power of
    two not above ``n``, from 32 (a warp) to ``limit``."""
    t = 32
    while t * 2 <= min(n, limit):
        t *= 2
    return t


def schedule_row_groups(
    s: Schedule, out: Tensor, reductions: Sequence[Tensor], limit: int = 256
) -> bool:
    """One work-group a row, in one kernel: each reduction of ``reductions`` (one value a row:
    a softmax's max and sum, a layer norm's sum and squared deviations) computed at the
    work-group's row by all its work-items together (a cross-thread reduction through
    ``__local`` memory), then ``out``'s row spread over the same work-items. ``out`` may itself
    be the reduction (``reductions`` empty): its reduced axes are the row. Otherwise the
    caller guarantees that the reductions run over ``out``'s trailing axes (as many as each
    has reduce axes; their data axes being ``out``'s leading ones, which this checks by shape
    only). False, with ``s`` untouched, where that does not hold, there are no row axes
    to give the work-groups, or a row has fewer than ``ROW_GROUP_MIN`` elements (a work-item a
    row is then the better kernel)."""
    axes = list(s[out].op.axis)
    if out.op.reduce_axis:
        if reductions:
            return False
        width = _elements(s[out].op.reduce_axis)
        if not axes or width < ROW_GROUP_MIN:
            return False
        threads = row_threads(width, limit)
        row = s[out].fuse(*axes) if len(axes) > 1 else axes[0]
        ks = list(s[out].op.reduce_axis)
        k = s[out].fuse(*ks) if len(ks) > 1 else ks[0]
        _, ki = s[out].split(k, threads)
        s[out].bind(row, thread_axis("blockIdx.x"))
        s[out].bind(ki, thread_axis("threadIdx.x"))
        return True
    if not reductions:
        return False
    n_red = len(reductions[0].op.reduce_axis)
    rows, inner = axes[:-n_red], axes[-n_red:]
    width = _elements(inner)
    for t in reductions:
        if len(t.op.reduce_axis) != n_red or tuple(t.shape) != tuple(out.shape[:-n_red]):
            return False
    if not rows or width < ROW_GROUP_MIN:
        return False
    threads = row_threads(width, limit)
    row = s[out].fuse(*rows) if len(rows) > 1 else rows[0]
    c = s[out].fuse(*inner) if len(inner) > 1 else inner[0]
    _, ci = s[out].split(c, threads)
    s[out].bind(row, thread_axis("blockIdx.x"))
    s[out].bind(ci, thread_axis("threadIdx.x"))
    for t in reductions:
        ks = list(s[t].op.reduce_axis)
        k = s[t].fuse(*ks) if len(ks) > 1 else ks[0]
        _, ki = s[t].split(k, threads)
        s[t].bind(ki, thread_axis("threadIdx.x"))
        s[t].compute_at(s[out], row)
    return True


def padding_stage(out: Tensor) -> Tensor | None:
    """The padded input an operator reads (its stage named ``data_pad`` or ``pool_pad``),
    found through the stages that feed ``out``."""
    todo, seen = [out], set[int]()
    while todo:
        t = todo.pop()
        if id(t.op) in seen or not isinstance(t.op, ComputeOp):
            continue
        seen.add(id(t.op))
        if t.name in ("data_pad", "pool_pad"):
            return t
        todo += t.op.input_tensors
    return None


def with_epilogue(
    out: Tensor, epilogue: Sequence[str], inputs: Sequence[Tensor], inline_pad: bool = True
) -> tuple[Schedule, Tensor, list[Tensor]]:
    """``(schedule, O, [*inputs, *epilogue inputs, O])``: ``out`` followed by the elementwise
    ``epilogue`` (bias along axis 1) whose last stage is ``O``; the operator's padding stage is
    inlined, or with ``inline_pad=False`` made a kernel of its own (``bind_rows``)."""
    O, extra = make_epilogue(out, epilogue, bias_axis=1)
    s = create_schedule(O.op)
    padded = padding_stage(out)
    if padded is not None:
        if inline_pad:
            s[padded].compute_inline()
        else:
            bind_rows(s, padded)
    return s, O, [*inputs, *extra, O]
