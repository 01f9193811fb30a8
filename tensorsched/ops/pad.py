"""``pad``: a border around a tensor, as a compute stage (usually inlined). ``mode``
``"constant"`` fills it with ``pad_value``; ``"reflect"`` mirrors the tensor about its edge
(the edge element not repeated: numpy's and ONNX's ``reflect``); ``"edge"`` repeats the edge
element. With ``crop``, a negative width crops that many elements from that side first
(ONNX's ``Pad``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ComputeError
from ..ir import expr as E
from ..ir import intrin as I
from ..ir.intrin import all as all_of
from ..ir.intrin import if_then_else
from ..ir.tensor import Tensor, compute

PAD_MODES = ("constant", "reflect", "edge")


def pad_plan(shape: Sequence[int], pads: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """Per axis of ``shape``: ``(first kept, count kept, border before, border after)`` of
    ONNX's ``pads`` (the begins, then the ends; a negative one crops that side first)."""
    rank = len(shape)
    return [
        (max(-b, 0), d - max(-b, 0) - max(-a, 0), max(b, 0), max(a, 0))
        for d, b, a in zip(shape, pads[:rank], pads[rank:])
    ]


def pad(
    data: Tensor,
    pad_before: Sequence[int],
    pad_after: Sequence[int] | None = None,
    pad_value: float = 0.0,
    name: str = "PadInput",
    mode: str = "constant",
    crop: bool = False,
) -> Tensor:
    """``data`` with ``pad_before[d]`` elements before and ``pad_after[d]`` after each dim
    (with ``crop``, a negative width crops). ``reflect`` needs each width below the
    (cropped) dim."""
    if not isinstance(data, Tensor):
        raise ComputeError(f"pad: expected a tensor, got {data!r}")
    if mode not in PAD_MODES:
        raise ComputeError(f"pad '{name}': mode {mode!r} must be one of {PAD_MODES}")
    n = data.ndim
    pad_after = pad_before if pad_after is None else pad_after
    pad_before, pad_after = list(pad_before), list(pad_after)
    if len(pad_before) != n or len(pad_after) != n:
        raise ComputeError(
            f"pad '{name}': give one pad width per dimension ({n}), got "
            f"{len(pad_before)} before and {len(pad_after)} after"
        )
    if any(not isinstance(p, int) or (p < 0 and not crop) for p in pad_before + pad_after):
        raise ComputeError(f"pad '{name}': pad widths must be non-negative ints")
    # per dim: the first element kept, how many are kept, the border before and after
    kept = pad_plan(data.shape, pad_before + pad_after)
    for d, (_, count, b, a) in enumerate(kept):
        if count < 1:
            raise ComputeError(f"pad '{name}': the widths crop all of dim {d} of '{data.name}'")
        if mode == "reflect" and max(b, a) >= count:
            raise ComputeError(
                f"pad '{name}': reflect pads of dim {d} must be below its size {count}, got "
                f"{b} before and {a} after"
            )
    shape = tuple(count + b + a for _, count, b, a in kept)

    def source(i: Any, first: int, count: int, b: int, a: int) -> Any:
        """The index into ``data`` that output index ``i`` reads (constant mode: the border's
        is out of range, selected away)."""
        j = i - b if b else i
        if mode != "constant" and (b or a):
            last = count - 1
            if last == 0:
                return first
            if mode == "reflect":
                j = last - I.abs(last - I.abs(j))
            else:
                j = I.max(I.min(j, last), 0)
        return j + first if first else j

    def body(*idx: Any) -> Any:
        src = tuple(source(i, *k) for i, k in zip(idx, kept))
        value = data[src]
        if mode != "constant":
            return value
        conds = []
        for i, (_, count, b, a) in zip(idx, kept):
            if b:
                conds.append(i >= b)
            if a:
                conds.append(i < count + b)
        if not conds:
            return value
        return if_then_else(all_of(*conds), value, E.const(pad_value, data.dtype))

    return compute(shape, body, name=name)
