"""Elementwise epilogues (seed 002): bias add, ReLU, sigmoid. Each is its own compute stage;
a schedule template fuses it into the GEMM or conv that feeds it."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ComputeError
from ..ir import intrin as I
from ..ir.expr import const
from ..ir.tensor import Tensor, compute, placeholder


def bias_add(
    data: Tensor, bias: Tensor | None = None, axis: int = -1, name: str = "bias_add"
) -> tuple[Tensor, Tensor]:
    """``data + bias`` with the 1-d ``bias`` along ``axis``; returns ``(out, bias)``."""
    axis = axis % data.ndim
    if bias is None:
        bias = placeholder((data.shape[axis],), data.dtype, name="bias")
    if not isinstance(bias, Tensor) or bias.shape != (data.shape[axis],):
        raise ComputeError(
            f"bias_add: bias must have shape ({data.shape[axis]},), the size of "
            f"axis {axis} of '{data.name}'"
        )
    out = compute(data.shape, lambda *i: data[i] + bias[i[axis]], name=name, tag="elemwise")
    return out, bias


def relu(data: Tensor, name: str = "relu") -> Tensor:
    return compute(
        data.shape, lambda *i: I.max(data[i], const(0, data.dtype)), name=name, tag="elemwise"
    )


def sigmoid(data: Tensor, name: str = "sigmoid") -> Tensor:
    return compute(data.shape, lambda *i: I.sigmoid(data[i]), name=name, tag="elemwise")


EPILOGUES = {"relu": relu, "sigmoid": sigmoid}


def epilogue(
    data: Tensor, kinds: Sequence[str], bias_axis: int = -1
) -> tuple[Tensor, list[Tensor]]:
    """Apply a chain like ``("bias", "relu")`` to ``data``; returns ``(out, extra_inputs)``."""
    out, extra = data, list[Tensor]()
    for kind in kinds:
        if kind == "bias":
            out, b = bias_add(out, axis=bias_axis)
            extra.append(b)
        elif kind in EPILOGUES:
            out = EPILOGUES[kind](out)
        else:
            raise ComputeError(f"unknown epilogue '{kind}'; use bias, relu or sigmoid")
    return out, extra
