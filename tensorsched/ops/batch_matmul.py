"""Batched matrix product with numpy's ``matmul`` semantics, for two computed tensors
(attention's ``Q @ K^T`` and ``softmax(..) @ V``), with its numpy reference.

``matmul_shape(a, b)`` is numpy's rule: the last two axes multiply (``(..., M, K) @ (...,
K, N)``), the leading (batch) axes broadcast; a 1-d ``a`` is a row (``(K,)`` as ``(1, K)``,
the 1 dropped from the result), a 1-d ``b`` a column. ``BatchMatmulShape.of(a, b)`` folds
that into one kernel's view: three dims ``out[z, i, j] = sum_k A[za, i, k] * B[zb, k, j]``,
where the output's batch axes are flattened into ``z`` and the operands' flat batch
indices ``za`` / ``zb`` come from ``z`` by the broadcast (``//`` and ``%`` by constants
only where an operand repeats along some batch axis and not others). Where ``b`` has no
batch axes of its own (``(2, 3, 5, 7) @ (7, 9)``), the batch is folded into ``M``: one
GEMM of ``(30, 7) @ (7, 9)``. Every view reads the operands' and writes the output's
memory in their own row-major order, so the kernel's arguments are the graph's tensors
reshaped, never copied.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ComputeError
from ..ir import intrin as I
from ..ir.tensor import Tensor, compute, placeholder, reduce_axis


def _promote(a: Sequence[int], b: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The operands' shapes with numpy's 1-d promotions (a row, a column)."""
    a, b = tuple(a), tuple(b)
    if not a or not b:
        raise ComputeError("matmul: an operand has no dims (a scalar); use mul")
    return (a if len(a) > 1 else (1, *a)), (b if len(b) > 1 else (*b, 1))


def matmul_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The shape of ``numpy.matmul`` of operands of shapes ``a`` and ``b``, or a
    ``ComputeError`` saying which dims disagree."""
    pa, pb = _promote(a, b)
    if pa[-1] != pb[-2]:
        raise ComputeError(
            f"matmul: the inner dims differ: {tuple(a)} @ {tuple(b)} multiplies {pa[-1]} "
            f"columns by {pb[-2]} rows"
        )
    try:
        batch = tuple(int(d) for d in np.broadcast_shapes(pa[:-2], pb[:-2]))
    except ValueError:
        raise ComputeError(
            f"matmul: the batch dims {pa[:-2]} of {tuple(a)} and {pb[:-2]} of {tuple(b)} do "
            "not broadcast"
        ) from None
    out = (*batch, pa[-2], pb[-1])
    if len(a) == 1:
        out = (*out[:-2], out[-1])
    if len(b) == 1:
        out = out[:-1]
    return out


@dataclass(frozen=True)
class BatchMatmulShape:
    """One kernel's view of a matmul: ``Z`` products of ``M x K`` by ``K x N``; operand A
    holds ``ZA`` matrices and B ``ZB``. ``dims``: the output's batch axes after merging
    neighbours that broadcast alike, each ``(extent, a_has_it, b_has_it)``, outermost
    first (their extents multiply to ``Z``)."""

    Z: int
    M: int
    N: int
    K: int
    dims: tuple[tuple[int, bool, bool], ...] = ()

    @property
    def ZA(self) -> int:
        return math.prod(e for e, a, _ in self.dims if a)

    @property
    def ZB(self) -> int:
        return math.prod(e for e, _, b in self.dims if b)

    @property
    def flop(self) -> int:
        return 2 * self.Z * self.M * self.N * self.K

    @classmethod
    def of(cls, a: Sequence[int], b: Sequence[int]) -> BatchMatmulShape:
        """The view of ``numpy.matmul`` of operands of shapes ``a`` and ``b``."""
        matmul_shape(a, b)  # checks
        pa, pb = _promote(a, b)
        M, K, N = pa[-2], pa[-1], pb[-1]
        rank = max(len(pa), len(pb)) - 2
        ab = (1,) * (rank - len(pa) + 2) + pa[:-2]
        bb = (1,) * (rank - len(pb) + 2) + pb[:-2]
        if math.prod(bb) == 1:  # B one matrix: the batch is more rows of one GEMM
            return cls(1, math.prod(ab) * M, N, K)
        dims: list[tuple[int, bool, bool]] = []
        for da, db in zip(ab, bb):
            e = max(da, db)
            if e == 1:
                continue
            entry = (e, da == e, db == e)
            if dims and dims[-1][1:] == entry[1:]:
                entry = (dims[-1][0] * e, *entry[1:])
                dims.pop()
            dims.append(entry)
        return cls(math.prod(e for e, _, _ in dims), M, N, K, tuple(dims))

    def operand_index(self, z: Any, which: int) -> Any:
        """The flat batch index into operand ``which`` (0: A, 1: B) of the output's ``z``:
        ``z`` itself where the operand has every batch axis, 0 where it has none."""
        if (self.ZA, self.ZB)[which] == self.Z:
            return z
        index: Any = None
        stride = self.Z
        for extent, *has in self.dims:
            stride //= extent
            if has[which]:
                part = z // stride if stride > 1 else z
                part = part % extent if stride * extent < self.Z else part
                index = part if index is None else index * extent + part
        return 0 if index is None else index


def batch_matmul(
    A: Tensor, B: Tensor, shape: BatchMatmulShape, name: str = "batch_matmul"
) -> Tensor:
    """``out[z, i, j] = sum_k A[za, i, k] * B[zb, k, j]`` over the view ``shape`` (``A`` is
    ``(ZA, M, K)``, ``B`` ``(ZB, K, N)``)."""
    want = ((shape.ZA, shape.M, shape.K), (shape.ZB, shape.K, shape.N))
    for what, t, w in (("A", A, want[0]), ("B", B, want[1])):
        if not isinstance(t, Tensor) or tuple(int(d) for d in t.shape) != w:
            raise ComputeError(f"batch_matmul: {what} must be a tensor of shape {w}, got {t!r}")
    k = reduce_axis((0, shape.K), name="k")
    return compute(
        (shape.Z, shape.M, shape.N),
        lambda z, i, j: I.sum(
            A[shape.operand_index(z, 0), i, k] * B[shape.operand_index(z, 1), k, j], axis=k
        ),
        name=name,
        tag="batch_matmul",
    )


def declare(shape: BatchMatmulShape, dtype: str = "float32") -> tuple[Tensor, Tensor, Tensor]:
    """``(A, B, output)`` of the view ``shape``."""
    A = placeholder((shape.ZA, shape.M, shape.K), dtype, name="A")
    B = placeholder((shape.ZB, shape.K, shape.N), dtype, name="B")
    return A, B, batch_matmul(A, B, shape)


def batch_matmul_ref(a: NDArray[Any], b: NDArray[Any]) -> NDArray[np.float64]:
    """``numpy.matmul`` in float64."""
    return np.matmul(np.asarray(a, np.float64), np.asarray(b, np.float64))
