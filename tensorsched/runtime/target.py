"""``ts.target``: TVM's targets as text (``ts.target.Target("llvm")``) and what each one
means to ``ts.build``: OpenCL on the device in use, OpenCL on the CPU device (TVM's CPU
targets, with a ``TargetNote``), or the Python backend."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from .device import Device
from .tvm_api import (
    CPU_TARGETS,
    KIND_ALIASES,
    OTHER_GPU_APIS,
    TARGETS,
    TargetError,
    TargetNote,
    cpu_opencl_device,
)


@dataclass(frozen=True)
class TargetKind:
    name: str


class Target:
    """TVM's target as text: ``Target("llvm -mcpu=skylake")``, ``Target("opencl")``. Only its
    kind (the first word) matters to ``ts.build``; the options are kept for ``str()``.

    As in TVM, ``with Target("llvm"):`` makes it the current target (``Target.current()``):
    ``ts.build`` without a target builds for it, and ``ts.autotvm`` templates look up their
    tuned configs for its device."""

    def __init__(self, target: str | Target, host: str | Target | None = None) -> None:
        text = str(target).strip()
        if not text:
            raise TargetError("Target: empty target string; use 'opencl' or 'llvm'")
        self.text, self.host = text, host
        self.kind = TargetKind(text.split()[0])

    @property
    def keys(self) -> tuple[str, ...]:
        kind = KIND_ALIASES.get(self.kind.name, self.kind.name)
        return ("cpu",) if kind == "cpu" else (kind, "gpu")

    def __enter__(self) -> Target:
        _CURRENT.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if _CURRENT and _CURRENT[-1] is self:
            _CURRENT.pop()

    @staticmethod
    def current(allow_none: bool = True) -> Target | None:
        """The innermost target of a ``with Target(...):`` block; ``None`` outside one (a
        ``TargetError`` with ``allow_none=False``)."""
        if _CURRENT:
            return _CURRENT[-1]
        if not allow_none:
            raise TargetError("there is no current target: use 'with ts.target.Target(...):'")
        return None

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Target({self.text!r})"


_CURRENT: list[Target] = []  # the ``with Target(...)`` blocks entered, innermost last

# the (target, device) pairs already noted: the note is given once a process
_NOTED: set[tuple[str, str]] = set()


def resolve_target(target: str | Target | None) -> tuple[str, Device | None]:
    """``(backend, device)`` for a TVM target (``None``: the current ``with Target(...)``
    block's, else ``"opencl"``): ``("opencl", None)`` for the device in use,
    ``("opencl", cpu device)`` for a CPU target (with a ``TargetNote``, once a process),
    ``("python", None)``; a ``TargetError`` naming ``"opencl"`` for another API's target or
    an unknown one."""
    if target is None:
        target = Target.current()
    text = "opencl" if target is None else str(target).strip()
    kind = text.split()[0] if text else ""
    if kind in ("opencl", "cl", "python"):
        return ("python" if kind == "python" else "opencl"), None
    if kind in CPU_TARGETS:
        dev = cpu_opencl_device()
        if (text, dev.name) in _NOTED:
            return "opencl", dev
        _NOTED.add((text, dev.name))
        warnings.warn(
            f"target '{text}': tensorsched writes OpenCL C only, so this module is built for "
            f"the CPU OpenCL device '{dev.name}' (silence this note with "
            "warnings.simplefilter('ignore', tensorsched.runtime.tvm_api.TargetNote))",
            TargetNote,
            stacklevel=3,
        )
        return "opencl", dev
    if KIND_ALIASES.get(kind, kind) in OTHER_GPU_APIS:
        raise TargetError(
            f"build: target '{text}' is not supported: tensorsched writes OpenCL C only; use "
            "target='opencl' (NVIDIA, AMD, Intel, Arm and Qualcomm GPUs all have OpenCL "
            "drivers) with arrays on ts.opencl(0)"
        )
    raise TargetError(f"build: unknown target {text!r}; use one of {', '.join(TARGETS)}")
