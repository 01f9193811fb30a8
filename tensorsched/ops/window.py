"""Sliding-window geometry shared by the convolutions and the pools: strides, dilations and
paddings as ONNX writes them, normalised to explicit (h, w) pairs and (top, left, bottom, right)
paddings, and the output size they give."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ComputeError
from ..ir.dtype import to_int

IntOrSeq = int | Sequence[int]


def _ints(value: IntOrSeq, where: str, what: str) -> list[int]:
    seq = list(value) if isinstance(value, (tuple, list)) else [value]
    ints = [to_int(v) for v in seq]
    if not ints or any(v is None for v in ints):
        raise ComputeError(f"{where}: {what} must be an int or a tuple of ints, got {value!r}")
    return [v for v in ints if v is not None]


def pair(value: IntOrSeq, where: str, what: str, minimum: int = 1) -> tuple[int, int]:
    """``value`` (an int or an (h, w) pair) as ``(h, w)``, each at least ``minimum``."""
    v = _ints(value, where, what)
    if len(v) not in (1, 2) or min(v) < minimum:
        raise ComputeError(
            f"{where}: {what} must be an int or an (h, w) pair of ints >= {minimum}, got {value!r}"
        )
    return (v[0], v[-1])


def paddings(padding: IntOrSeq, where: str) -> tuple[int, int, int, int]:
    """``padding`` as ``(top, left, bottom, right)``: an int pads every side, ``(ph, pw)``
    pads top and bottom by ``ph`` and left and right by ``pw``, and four ints are ONNX's
    ``pads`` of a 2-d window, ``(top, left, bottom, right)``."""
    p = _ints(padding, where, "padding")
    if len(p) not in (1, 2, 4) or min(p) < 0:
        raise ComputeError(
            f"{where}: padding must be an int, (ph, pw) or (top, left, bottom, right) of "
            f"non-negative ints, got {padding!r}"
        )
    if len(p) == 1:
        return (p[0], p[0], p[0], p[0])
    if len(p) == 2:
        return (p[0], p[1], p[0], p[1])
    return (p[0], p[1], p[2], p[3])


def output_size(
    size: int, kernel: int, stride: int, before: int, after: int, dilation: int = 1
) -> int:
    """Window positions along one dimension of ``size`` inputs padded by ``before`` and
    ``after``, for a ``kernel``-wide window (dilated) moved by ``stride``."""
    return (size + before + after - dilation * (kernel - 1) - 1) // stride + 1


def check_fits(
    where: str,
    size: tuple[int, int],
    kernel: tuple[int, int],
    stride: tuple[int, int],
    pads: tuple[int, int, int, int],
    dilation: tuple[int, int] = (1, 1),
) -> tuple[int, int]:
    """``(OH, OW)``; a ``ComputeError`` when the window does not fit the padded input."""
    top, left, bottom, right = pads
    oh = output_size(size[0], kernel[0], stride[0], top, bottom, dilation[0])
    ow = output_size(size[1], kernel[1], stride[1], left, right, dilation[1])
    if oh <= 0 or ow <= 0:
        raise ComputeError(
            f"{where}: the {kernel[0]}x{kernel[1]} window (dilation {dilation[0]}x{dilation[1]}) "
            f"does not fit the {size[0]}x{size[1]} input padded by {pads} "
            "(top, left, bottom, right); pad more or use a smaller window"
        )
    return oh, ow


class WindowFields:
    """``stride`` and ``pads`` of a shape dataclass whose fields include ``stride_h``,
    ``stride_w``, ``pad_top``, ``pad_left``, ``pad_bottom`` and ``pad_right`` (its fields stay
    flat ints, as tuning logs store shapes)."""

    stride_h: int
    stride_w: int
    pad_top: int
    pad_left: int
    pad_bottom: int
    pad_right: int

    @property
    def stride(self) -> tuple[int, int]:
        return (self.stride_h, self.stride_w)

    @property
    def pads(self) -> tuple[int, int, int, int]:
        return (self.pad_top, self.pad_left, self.pad_bottom, self.pad_right)
