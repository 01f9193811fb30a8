"""The records of a fuzz case: axes, literal arguments, steps, outcomes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

WORKLOADS = ("gemm", "conv2d", "conv2d_packed", "softmax", "elementwise")
MODES = ("legal", "illegal", "random")
TAGS_BLOCK = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
TAGS_THREAD = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


def ident(text):
    """A Python identifier for a stage or axis name ('A.shared' -> 'A_shared')."""
    name = re.sub(r"\W", "_", text)
    return name if not name[:1].isdigit() else "_" + name


@dataclass(frozen=True)
class Ax:
    """An axis, named by its stage's variable and its own name. ``origin`` is set for the
    axes of ``s[stage].op.axis`` / ``op.reduce_axis``: ``("axis", names)`` with the names of
    all of them, so the code can unpack them the first time one is used."""

    stage: str
    name: str
    origin: tuple | None = None

    @property
    def ident(self):
        return ident(f"{self.stage}_{self.name}")


@dataclass(frozen=True)
class Raw:
    """A literal argument written as given (``Raw("ts.thread_axis('blockIdx.x')")``)."""

    code: str


@dataclass(frozen=True)
class Step:
    """One primitive call. ``prim`` names it; ``stage`` is the variable of the tensor whose
    stage it schedules (or the tensor a schedule-level primitive takes); ``args``/``kw`` hold
    ``Ax``, ``Raw``, numbers, strings and tuples (lists) of them; ``out`` the axes or the
    tensor variable it returns; ``expect`` is ``"error"`` for a known misuse."""

    prim: str
    stage: str
    args: tuple = ()
    kw: tuple = ()
    out: tuple = ()
    expect: str = ""


@dataclass
class Outcome:
    status: str  # passed / rejected / handled / miscompiled (wrong or aborted on the device only)
    step: int | None = None  # index of the step that raised (len(steps): at lowering)
    error: str = ""
    func: object = field(default=None, repr=False)  # the lowered function, when passed


class FuzzFailure(AssertionError):
    """A fuzzed schedule found a bug; the message holds the code that reproduces it."""
