"""Fully connected layer: ``dense(data[N, K], weight[O, K], bias=None)`` is
``data @ weight.T (+ bias)``, ONNX's ``Gemm`` with ``transB=1`` (a ``MatMul`` by ``W`` is the same
with ``weight = W.T``), with its numpy reference.

The product is one reduction stage (``dense``); a bias is a ``bias_add`` stage after it, which
a template fuses as an epilogue. ``DenseShape`` holds one workload as plain ints;
``declare(shape)`` makes its placeholders and output.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ComputeError
from ..ir import intrin as I
from ..ir.tensor import Tensor, compute, placeholder, reduce_axis
from .nn import bias_add


@dataclass(frozen=True)
class DenseShape:
    """``N`` rows of ``K`` inputs times an ``O x K`` weight."""

    N: int
    O: int  # noqa: E741
    K: int

    @property
    def flop(self) -> int:
        return 2 * self.N * self.O * self.K

    def astuple(self) -> tuple[int, ...]:
        return astuple(self)


def dense(
    data: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    out_dtype: str | None = None,
    name: str = "dense",
) -> Tensor:
    """``out[n, o] = sum_k data[n, k] * weight[o, k]`` (``+ bias[o]`` given a 1-d ``bias``)."""
    for what, t in (("data", data), ("weight", weight)):
        if not isinstance(t, Tensor) or t.ndim != 2:
            raise ComputeError(f"dense: {what} must be a 2-d tensor, got {t!r}")
    if data.shape[1] != weight.shape[1]:
        raise ComputeError(
            f"dense: data '{data.name}' {data.shape} and weight '{weight.name}' {weight.shape} "
            "must have the same K (data is N x K, weight O x K; transpose a K x O weight)"
        )
    out_dtype = out_dtype or data.dtype
    k = reduce_axis((0, data.shape[1]), name="k")
    out = compute(
        (data.shape[0], weight.shape[0]),
        lambda n, o: I.sum(data[n, k].astype(out_dtype) * weight[o, k].astype(out_dtype), axis=k),
        name=name,
        tag="dense",
    )
    if bias is not None:
        out, _ = bias_add(out, bias, axis=1)
    return out


def declare(shape: DenseShape, dtype: str = "float32") -> tuple[Tensor, Tensor, Tensor]:
    """``(data, weight, output)`` of ``shape``, without bias (pass it as an epilogue)."""
    data = placeholder((shape.N, shape.K), dtype, name="data")
    weight = placeholder((shape.O, shape.K), dtype, name="weight")
    return data, weight, dense(data, weight)


def declare_gemm(
    shape: DenseShape, dtype: str = "float32"
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(data, weight, weight_t, output)``: the product reads the weight transposed to
    ``K x O`` (``weight_t``, a stage that reads only the weight: a network runs its kernel once,
    at build time), so that a GEMM template reads ``data`` and ``weight_t`` as its ``A`` and
    ``B``, each in its own memory order."""
    data = placeholder((shape.N, shape.K), dtype, name="data")
    weight = placeholder((shape.O, shape.K), dtype, name="weight")
    weight_t = compute((shape.K, shape.O), lambda k, o: weight[o, k], name="weight_t")
    k = reduce_axis((0, shape.K), name="k")
    out = compute(
        (shape.N, shape.O),
        lambda n, o: I.sum(data[n, k] * weight_t[k, o], axis=k),
        name="dense",
        tag="dense",
    )
    return data, weight, weight_t, out


def dense_ref(
    d: NDArray[Any], w: NDArray[Any], b: NDArray[Any] | None = None
) -> NDArray[np.float64]:
    """``d @ w.T (+ b)`` in float64."""
    out = np.asarray(d, np.float64) @ np.asarray(w, np.float64).T
    return out if b is None else out + np.asarray(b, np.float64)
