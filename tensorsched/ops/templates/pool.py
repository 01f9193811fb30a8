"""Schedules of pooling (``ops.pool``) and softmax (``ops.nn.softmax``).

``pool_direct(cfg, shape, dtype, epilogue)`` takes a ``PoolShape`` (max, average, global
average as a window the size of the input) and returns ``(schedule, [data, *epilogue inputs,
output])``: one output element per loop step, the window unrolled, the output's axes fused and
split over work-items (knobs ``threads``, ``per_item``, as ``schedule_injective``).

``softmax_rows(cfg, shape, dtype, epilogue)`` takes a ``SoftmaxShape`` (rows x cols, softmax
along each row) and returns ``(schedule, [data, *epilogue inputs, output])``.
``one_kernel=1``: one work-item per row computes its max, its sum and its outputs (one kernel);
``0``: the max, the sum and the division are three kernels, the last one over every element.
Knobs: ``threads``, ``one_kernel``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.tensor import Tensor, placeholder
from ...schedules.schedule import Schedule, create_schedule
from ..conv2d import stages_by_name
from ..nn import SoftmaxShape, softmax
from ..nn import epilogue as make_epilogue
from ..pool import PoolShape, declare
from ..space import Config
from .common import bind_1d, reduction_and_epilogue
from .injective import THREADS, inline_injective, with_epilogue


def pool_direct(
    cfg: Config, shape: PoolShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    data, out = declare(shape, dtype)
    s, O, args = with_epilogue(out, epilogue, [data])
    threads = cfg.define_knob("threads", THREADS)
    per_item = cfg.define_knob("per_item", (1, 2, 4))
    limit = cfg.limits.max_work_group_size
    cfg.constrain(threads <= limit, f"work-group over the device's {limit} work-items")

    comp, o = reduction_and_epilogue(s, O)
    f = s[o].fuse(*s[o].op.axis)
    fo, fi = s[o].split(f, per_item)
    bind_1d(s, o, fo, threads)
    s[o].unroll(fi)
    s[comp].compute_at(s[o], fi)
    for r in s[comp].op.reduce_axis:
        if shape.KH * shape.KW <= 16:
            s[comp].unroll(r)
    return s, args


def softmax_rows(
    cfg: Config, shape: SoftmaxShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    data = placeholder((shape.rows, shape.cols), dtype, name="data")
    out = softmax(data)
    O, extra = make_epilogue(out, epilogue, bias_axis=1)
    s = create_schedule(O.op)
    threads = cfg.define_knob("threads", THREADS)
    one_kernel = cfg.define_knob("one_kernel", (1, 0))
    limit = cfg.limits.max_work_group_size
    cfg.constrain(threads <= limit, f"work-group over the device's {limit} work-items")

    st = stages_by_name(out)
    mx, ex, sm = st["softmax_max"], st["softmax_exp"], st["softmax_sum"]
    s[ex].compute_inline()
    if O is not out:
        inline_injective(s, O)  # the division and the epilogue's inner stages
    if one_kernel:
        r, _ = s[O].op.axis
        _, ri = bind_1d(s, O, r, threads)
        s[mx].compute_at(s[O], ri)
        s[sm].compute_at(s[O], ri)
    else:
        for t in (mx, sm):
            bind_1d(s, t, s[t].op.axis[0], threads)
        bind_1d(s, O, s[O].fuse(*s[O].op.axis), threads)
    return s, [data, *extra, O]
