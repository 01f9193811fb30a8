"""Schedules of ``ops.dense`` (``data[N, K]`` times ``weight[O, K]``), shaped for batch 1,
where the layer is a matrix-vector product bound by reading the weight once.

``dense_cpu(cfg, shape, dtype, epilogue)`` (CPU device): each work-item computes ``tile_o``
outputs; K is read ``vec`` at a time as vectors of partial sums (``rfactor``), summed at the
end. Knobs: ``vec``, ``tile_o``, ``threads``.

``dense_gpu(cfg, ...)`` (desktop GPU, split-K): a first kernel where ``split_k`` work-items per
output read consecutive K elements (coalesced) into partial sums, a second that adds them
(and applies the epilogue). Knobs: ``split_k``, ``threads`` (of the second kernel).

``dense_gemm_gpu`` / ``dense_gemm_cpu``: a layer of many rows (a transformer's tokens, a
batch) is a GEMM: the GPU or CPU GEMM template's schedule and knobs (``gemm_gpu`` /
``gemm_cpu``: their logs teach these, ``templates.GEMM_VIEWS``) on ``data`` times the weight
transposed to ``K x O`` by a kernel that reads only the weight (run once when a network is
built); the epilogue in the GEMM's output stage.

All take a ``DenseShape`` and return ``(schedule, [data, weight, *epilogue inputs, output])``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.tensor import Tensor, thread_axis
from ...schedules.schedule import Schedule
from ..dense import DenseShape, declare, declare_gemm
from ..space import Config, split_axis
from .common import bind_1d, inline_epilogue
from .gemm_cpu import schedule_gemm_cpu
from .gemm_gpu import schedule_gemm_gpu
from .injective import with_epilogue


def dense_cpu(
    cfg: Config, shape: DenseShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    data, weight, D = declare(shape, dtype)
    s, O, args = with_epilogue(D, epilogue, [data, weight])
    vec = cfg.define_knob("vec", (8, 4, 16, 1))
    tile_o = cfg.define_knob("tile_o", (4, 1, 2, 8))
    threads = cfg.define_knob("threads", (4, 1, 8, 16, 32, 64))
    limit = cfg.limits.max_work_group_size
    cfg.constrain(threads <= limit, f"work-group over the device's {limit} work-items")

    if O is not D:
        inline_epilogue(s, O)
    (k,) = s[D].op.reduce_axis
    _, ki = s[D].split(k, vec)
    partial = s.rfactor(D, ki, factor_axis=2)  # partial[n, o, v]: vec partial sums
    n, o = s[O].op.axis
    bx, tx, oi = split_axis(s[O], o, (threads, tile_o))
    s[O].reorder(n, bx, tx, oi)
    s[O].bind(n, thread_axis("blockIdx.y"))
    s[O].bind(bx, thread_axis("blockIdx.x"))
    s[O].bind(tx, thread_axis("threadIdx.x"))
    s[O].unroll(oi)
    if O is not D:
        s[D].compute_at(s[O], tx)
        _, do = s[D].op.axis
        (dv,) = s[D].op.reduce_axis
        s[D].reorder(do, dv)
        s[D].unroll(do)
        s[D].unroll(dv)
    else:
        s[O].unroll(s[O].op.reduce_axis[0])
    s[partial].compute_at(s[O], tx)
    _, po, pv = s[partial].op.axis
    (pk,) = s[partial].op.reduce_axis
    s[partial].reorder(pk, po, pv)
    s[partial].unroll(po)
    if vec > 1:
        s[partial].vectorize(pv)
    return s, args


def dense_gpu(
    cfg: Config, shape: DenseShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    data, weight, D = declare(shape, dtype)
    s, O, args = with_epilogue(D, epilogue, [data, weight])
    split = cfg.define_knob("split_k", (64, 32, 128, 256, 16))
    threads = cfg.define_knob("threads", (64, 32, 128, 256))
    limit = cfg.limits.max_work_group_size
    cfg.constrain(max(split, threads) <= limit, f"work-group over the device's {limit} work-items")

    if O is not D:
        inline_epilogue(s, O)
    (k,) = s[D].op.reduce_axis
    _, ki = s[D].split(k, split)
    partial = s.rfactor(D, ki)  # partial[kk, n, o]: work-item kk reads k = kk, kk + split, ...
    comp = s.cache_write(partial, "local")
    kk, n, o = s[partial].op.axis
    f = s[partial].fuse(n, o)
    s[partial].reorder(f, kk)
    s[partial].bind(f, thread_axis("blockIdx.x"))
    s[partial].bind(kk, thread_axis("threadIdx.x"))
    s[comp].compute_at(s[partial], kk)

    f = s[O].fuse(*s[O].op.axis)
    _, fi = bind_1d(s, O, f, threads)
    if O is not D:
        s[D].compute_at(s[O], fi)
    return s, args


def dense_gemm_gpu(
    cfg: Config, shape: DenseShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    s, data, weight_t, O, args = _as_gemm(shape, dtype, epilogue)
    schedule_gemm_gpu(cfg, s, O, data, weight_t, shape.N, shape.O, shape.K)
    return s, args


def dense_gemm_cpu(
    cfg: Config, shape: DenseShape, dtype: str = "float32", epilogue: Sequence[str] = ()
) -> tuple[Schedule, list[Tensor]]:
    s, _, _, O, args = _as_gemm(shape, dtype, epilogue)
    schedule_gemm_cpu(cfg, s, O, shape.N, shape.O, shape.K)
    return s, args


def _as_gemm(
    shape: DenseShape, dtype: str, epilogue: Sequence[str]
) -> tuple[Schedule, Tensor, Tensor, Tensor, list[Tensor]]:
    """``(schedule, data, weight_t, O, args)`` of ``declare_gemm``, the transposition a kernel
    of its own."""
    data, weight, weight_t, D = declare_gemm(shape, dtype)
    s, O, args = with_epilogue(D, epilogue, [data, weight])
    bind_1d(s, weight_t, s[weight_t].fuse(*s[weight_t].op.axis), 64)
    return s, data, weight_t, O, args
