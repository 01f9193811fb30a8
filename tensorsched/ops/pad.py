"""``pad``: a constant border around a tensor, as a compute stage (usually inlined)."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ComputeError
from ..ir import expr as E
from ..ir.intrin import all as all_of
from ..ir.intrin import if_then_else
from ..ir.tensor import Tensor, compute


def pad(
    data: Tensor,
    pad_before: Sequence[int],
    pad_after: Sequence[int] | None = None,
    pad_value: float = 0.0,
    name: str = "PadInput",
) -> Tensor:
    """``data`` with ``pad_before[d]`` elements before and ``pad_after[d]`` after each dim."""
    if not isinstance(data, Tensor):
        raise ComputeError(f"pad: expected a tensor, got {data!r}")
    n = data.ndim
    pad_after = pad_before if pad_after is None else pad_after
    pad_before, pad_after = list(pad_before), list(pad_after)
    if len(pad_before) != n or len(pad_after) != n:
        raise ComputeError(
            f"pad '{name}': give one pad width per dimension ({n}), got "
            f"{len(pad_before)} before and {len(pad_after)} after"
        )
    if any(not isinstance(p, int) or p < 0 for p in pad_before + pad_after):
        raise ComputeError(f"pad '{name}': pad widths must be non-negative ints")
    shape = tuple(d + b + a for d, b, a in zip(data.shape, pad_before, pad_after))

    def body(*idx):
        conds = []
        for i, d, b, a in zip(idx, data.shape, pad_before, pad_after):
            if b:
                conds.append(i >= b)
            if a:
                conds.append(i < d + b)
        value = data[tuple(i - b if b else i for i, b in zip(idx, pad_before))]
        if not conds:
            return value
        return if_then_else(all_of(*conds), value, E.const(pad_value, data.dtype))

    return compute(shape, body, name=name)
