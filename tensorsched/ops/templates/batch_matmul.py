"""Schedules of ``ops.batch_matmul`` (``Z`` products of ``M x K`` by ``K x N``): the GEMM
templates' schedules over each product's (M, N), with the batch ``z`` outermost and bound
to ``blockIdx.z``, so each work-group computes one tile of one product.

``batch_matmul_cpu(cfg, shape)``: ``gemm_cpu``'s register tiles (CPU devices);
``batch_matmul_gpu(cfg, shape)``: ``gemm_gpu_tiled``'s ``__local`` and register tiles
(split-K and slice-K off: their partial products are two-dimensional). Both take the GEMM
template's knobs; ``small_tiles(shape, gpu)`` is a config whose tiles fit small products
(attention's are tokens x tokens or tokens x head size), where the GEMM templates'
defaults, made for large matrices, would compute mostly guarded-off or shifted elements.
Both return ``(schedule, [A, B, output])``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...ir.tensor import Tensor, thread_axis
from ...schedules.schedule import Schedule, create_schedule
from ..batch_matmul import BatchMatmulShape, declare
from ..space import Config
from .gemm_cpu import schedule_gemm_cpu
from .gemm_gpu import schedule_gemm_gpu


def _bind_batch(s: Schedule, out: Tensor) -> None:
    s[out].bind(s[out].op.axis[0], thread_axis("blockIdx.z"))


def batch_matmul_cpu(
    cfg: Config, shape: BatchMatmulShape, dtype: str = "float32"
) -> tuple[Schedule, list[Tensor]]:
    A, B, O = declare(shape, dtype)
    s = create_schedule(O.op)
    schedule_gemm_cpu(cfg, s, O, shape.M, shape.N, shape.K)
    _bind_batch(s, O)
    return s, [A, B, O]


def batch_matmul_gpu(
    cfg: Config, shape: BatchMatmulShape, dtype: str = "float32"
) -> tuple[Schedule, list[Tensor]]:
    A, B, O = declare(shape, dtype)
    s = create_schedule(O.op)
    cfg.values.setdefault("split_k", 1)
    cfg.values.setdefault("slice_k", 1)
    schedule_gemm_gpu(cfg, s, O, A, B, shape.M, shape.N, shape.K)
    cfg.constrain(cfg["split_k"] == 1 and cfg["slice_k"] == 1, "K split: batched operands")
    _bind_batch(s, O)
    return s, [A, B, O]


def _fit(extent: int, options: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """The largest tile of ``options`` covering at most ``extent``, else the smallest."""
    fitting = [o for o in options if math.prod(o) <= extent]
    return max(fitting or [min(options, key=math.prod)], key=math.prod)


def small_tiles(shape: BatchMatmulShape, gpu: bool) -> dict[str, object]:
    """Knob values whose tiles suit ``shape`` (see the module docstring)."""
    ty: list[tuple[int, ...]]
    tx: list[tuple[int, ...]]
    if gpu:
        ty = [(1, t, w) for t in (4, 8, 16) for w in (1, 2, 4, 8)]
        tx = [(1, t, w) for t in (8, 16) for w in (1, 2, 4)]
        kstep = 16 if shape.K >= 16 else 8 if shape.K >= 8 else 4
        tile_y = _fit(shape.M, ty)
        return {
            "tile_y": tile_y,
            "tile_x": _fit(shape.N, tx),
            "tile_k": (kstep,),
            "a_pad": 4 if math.prod(tile_y) > 4 else 0,  # the padding must be under the tile
        }
    ty = [(t, w) for t in (1, 2) for w in (4, 8, 16)]
    tx = [(t, w) for t in (1, 2) for w in (8, 16)]
    return {
        "tile_y": _fit(shape.M, ty),
        "tile_x": _fit(shape.N, tx),
        "vec": 8 if _fit(shape.N, tx)[1] == 8 else 16,
    }
