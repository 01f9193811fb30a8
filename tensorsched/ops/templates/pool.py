"""Schedules of pooling (``ops.pool``) and softmax (``ops.nn.softmax``).

``pool_direct(cfg, shape, dtype, epilogue)`` takes a ``PoolShape`` (max, average, global
average as a window the size of the input) and returns ``(schedule, [data, *epilogue inputs,
output])``: one output element per loop step, the window unrolled (up to 16 elements). Knobs:
``rows=0``: the output's axes fused and split over work-items, ``per_item`` consecutive outputs
each (desktop GPU: consecutive work-items read consecutive inputs); ``rows=1``: each work-item
a row of outputs in steps of ``per_item``, its index arithmetic per row (the CPU device's
choice, ``pool_cpu``'s default); ``threads``: work-items per work-group.

``softmax_rows(cfg, shape, dtype, epilogue)`` takes a ``SoftmaxShape`` (rows x cols, softmax
along each row) and returns ``(schedule, [data, *epilogue inputs, output])``.
``one_kernel=1`` with ``row_threads=1``: one work-item per row computes its max, its sum and
its outputs (one kernel); with ``row_threads > 1``: a work-group per row, each work-item a part
of the max and of the sum in ``__local`` memory, then the totals, then the outputs (one kernel);
``one_kernel=0``: the max, the sum and the division are three kernels, the last one over every
element. Knobs: ``row_threads``, ``one_kernel``, ``threads`` (work-items per work-group where a
work-item has a row or an element). ``softmax_rows_gpu``: the same, a work-group per row by
default.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.tensor import Tensor, placeholder, thread_axis
from ...schedules.schedule import Schedule, create_schedule
from ..conv2d import stages_by_name
from ..nn import SoftmaxShape, softmax
from ..nn import epilogue as make_epilogue
from ..pool import PoolShape, declare
from ..space import Config
from .common import bind_1d, reduction_and_epilogue
from .injective import THREADS, inline_injective, with_epilogue

POOL_DEFAULTS = {"threads": 64, "per_item": 1, "rows": 0}
POOL_CPU_DEFAULTS = {"threads": 1, "per_item": 1, "rows": 1}


def pool_direct(
    cfg: Config,
    shape: PoolShape,
    dtype: str = "float32",
    epilogue: Sequence[str] = (),
    defaults: dict[str, int] | None = None,
) -> tuple[Schedule, list[Tensor]]:
    defaults = defaults or POOL_DEFAULTS
    data, out = declare(shape, dtype)
    s, O, args = with_epilogue(out, epilogue, [data])
    threads = cfg.define_knob("threads", THREADS, defaults["threads"])
    per_item = cfg.define_knob("per_item", (1, 2, 4), defaults["per_item"])
    rows = cfg.define_knob("rows", (0, 1), defaults["rows"])
    limit = cfg.limits.max_work_group_size
    cfg.constrain(threads <= limit, f"work-group over the device's {limit} work-items")

    comp, o = reduction_and_epilogue(s, O)
    axes = list(s[o].op.axis)
    if rows:  # a work-item per output row: the index arithmetic once per row
        f = s[o].fuse(*axes[:-1])
        bind_1d(s, o, f, threads)
        wo, wi = s[o].split(axes[-1], per_item)
        inner = wi
    else:  # consecutive outputs on consecutive work-items
        f = s[o].fuse(*axes)
        fo, inner = s[o].split(f, per_item)
        bind_1d(s, o, fo, threads)
    s[o].unroll(inner)
    s[comp].compute_at(s[o], inner)
    for r in s[comp].op.reduce_axis:
        if shape.KH * shape.KW <= 16:
            s[comp].unroll(r)
    return s, args


def pool_cpu(
    cfg: Config, shape: PoolShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    return pool_direct(cfg, shape, dtype, epilogue, POOL_CPU_DEFAULTS)


ROWS_DEFAULTS = {"row_threads": 1, "one_kernel": 1, "threads": 64}
ROWS_GPU_DEFAULTS = {"row_threads": 128, "one_kernel": 1, "threads": 64}


def softmax_rows(
    cfg: Config,
    shape: SoftmaxShape,
    dtype: str = "float32",
    epilogue: Sequence[str] = (),
    defaults: dict[str, int] | None = None,
) -> tuple[Schedule, list[Tensor]]:
    defaults = defaults or ROWS_DEFAULTS
    if shape.rows < defaults["threads"]:  # idle work-items would repeat a row's max and sum
        defaults = {**defaults, "threads": 1}
    row_threads = cfg.define_knob("row_threads", (1, 32, 64, 128, 256), defaults["row_threads"])
    one_kernel = cfg.define_knob("one_kernel", (1, 0), defaults["one_kernel"])
    threads = cfg.define_knob("threads", THREADS, defaults["threads"])
    limit = cfg.limits.max_work_group_size
    cfg.constrain(max(threads, row_threads) <= limit, f"work-group over the device's {limit}")
    cfg.constrain(one_kernel or row_threads == 1, "work-items per row need one kernel")
    parts = row_threads if one_kernel else 1

    data = placeholder((shape.rows, shape.cols), dtype, name="data")
    out = softmax(data, parts=parts)
    O, extra = make_epilogue(out, epilogue, bias_axis=1)
    s = create_schedule(O.op)
    st = stages_by_name(out)
    mx, ex, sm = st["softmax_max"], st["softmax_exp"], st["softmax_sum"]
    s[ex].compute_inline()
    if O is not out:
        inline_injective(s, O)  # the division and the epilogue's inner stages
    if not one_kernel:
        for t in (mx, sm):
            bind_1d(s, t, s[t].op.axis[0], threads)
        bind_1d(s, O, s[O].fuse(*s[O].op.axis), threads)
    elif parts == 1:  # a work-item per row: its max, its sum, its outputs
        r, _ = s[O].op.axis
        _, ri = bind_1d(s, O, r, threads)
        s[mx].compute_at(s[O], ri)
        s[sm].compute_at(s[O], ri)
    else:  # a work-group per row: a part per work-item in __local memory, then the total
        r, c = s[O].op.axis
        co, ci = s[O].split(c, parts)
        s[O].reorder(r, ci, co)
        s[O].bind(r, thread_axis("blockIdx.x"))
        s[O].bind(ci, thread_axis("threadIdx.x"))
        for total in (mx, sm):
            (part,) = total.op.input_tensors
            s[part].set_scope("shared")
            s[part].compute_at(s[O], r)
            s[part].bind(s[part].op.axis[-1], thread_axis("threadIdx.x"))
            s[total].compute_at(s[O], r)
    return s, [data, *extra, O]


def softmax_rows_gpu(
    cfg: Config, shape: SoftmaxShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    return softmax_rows(cfg, shape, dtype, epilogue, ROWS_GPU_DEFAULTS)
