"""A schedule template for any tensor expression given as text (``ts.parse_expr``).

``generic(cfg, expr_text, shapes)`` schedules the last statement's stage for a GPU-style
NDRange; earlier elementwise stages are inlined into their readers, earlier reductions stay
at the root (each its own kernel).

Knobs of the last stage:

* ``tile_y`` / ``tile_x``: the two outermost data axes (of extent above 1) are each split into
  (block, thread, per work-item) loops, bound to ``blockIdx`` / ``threadIdx`` (one axis: only
  ``tile_x``);
* ``tile_k``: the first reduction axis is split; ``unroll_k`` unrolls its inner loop;
* ``reduce_inner``: reduction loops inside (1) or outside (0) the per-work-item data loops;
* ``vectorize``: the innermost data loop is vectorized (with the reduction outside).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...ir.te_text import parse_expr
from ...ir.tensor import ComputeOp, PlaceholderOp, Tensor, thread_axis
from ...schedules.schedule import Schedule, create_schedule
from ..space import Config, split_axis

THREADS = (1, 2, 4, 8, 16, 32)
PER_ITEM = (1, 2, 4, 8)
K_STEPS = (1, 2, 4, 8, 16)


def _tile_candidates(extent: int) -> tuple[list[tuple[int, int]], tuple[int, int]]:
    cands = [(t, w) for t in THREADS for w in PER_ITEM if t * w <= extent]
    default = max(((t, 1) for t, w in cands if w == 1 and t <= 16), default=(1, 1))
    return cands, default


def generic(
    cfg: Config, expr_text: str, shapes: str | Mapping[str, int], dtype: str = "float32"
) -> tuple[Schedule, list[Tensor]]:
    """``(schedule, args)`` for ``expr_text``; args are the inputs, then the last stage."""
    tensors = list(parse_expr(expr_text, shapes, dtype).values())
    out = tensors[-1]
    args = [t for t in tensors if isinstance(t.op, PlaceholderOp)] + [out]
    s = create_schedule(out.op)
    for t in tensors[:-1]:
        if isinstance(t.op, ComputeOp) and not t.op.reduce_axis:
            s[t].compute_inline()

    st = s[out]
    data = list(st.op.axis)
    wide = [a for a in data if a.domain.extent > 1] or data[:1]
    tiled = wide[:2] if len(wide) >= 2 else [None] + wide[:1]
    names = ("tile_y", "tile_x")
    outer, inner = [], []
    threads = 1
    for name, axis in zip(names, tiled):
        if axis is None:
            continue
        cands, default = _tile_candidates(axis.domain.extent)
        t, w = cfg.define_split(
            name, axis.domain.extent, 3, policy="candidates", candidates=cands, default=default
        )
        threads *= t
        b, th, wi = split_axis(st, axis, (t, w))
        outer.append((b, th))
        inner.append(wi)
    limit = cfg.limits.max_work_group_size
    cfg.constrain(threads <= limit, f"work-group over the device's {limit} work-items")
    rest = [a for a in data if a not in tiled]

    reduce_loops = []
    raxes = list(st.op.reduce_axis)
    if raxes:
        r0 = raxes[0]
        ks = [k for k in K_STEPS if k <= r0.domain.extent]
        (kstep,) = cfg.define_split(
            "tile_k",
            r0.domain.extent,
            2,
            policy="candidates",
            candidates=[(k,) for k in ks],
            default=(min(4, ks[-1]),),
        )
        ko, ki = st.split(r0, kstep)
        reduce_loops = [ko, ki] + raxes[1:]
        if cfg.define_knob("unroll_k", (0, 1)):
            st.unroll(ki)
        reduce_inner = cfg.define_knob("reduce_inner", (0, 1))
    else:
        reduce_inner = 0
    data_inner = inner + rest
    order = [b for b, _ in outer] + [th for _, th in outer]
    order += data_inner + reduce_loops if reduce_inner else reduce_loops + data_inner
    st.reorder(*order)
    for (b, th), tag in zip(outer[::-1], ("x", "y")):
        st.bind(b, thread_axis(f"blockIdx.{tag}"))
        st.bind(th, thread_axis(f"threadIdx.{tag}"))
    if cfg.define_knob("vectorize", (0, 1)):
        cfg.constrain(not reduce_inner, "vectorize needs the reduction outside the data loops")
        if not reduce_inner:
            st.vectorize(data_inner[-1])
    return s, args
