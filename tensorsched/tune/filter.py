"""The early filter: whether a candidate can run on a device at all, decided from its lowered
IR and its kernels' launch shapes, before anything is built (work-group size and extents,
``__local`` memory, private arrays per work-item).

The tuner runs it in its build workers, on the function they lower anyway; ``early_filter``
does the whole thing (instantiate, lower, generate, check) for one config.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..codegen.opencl import KernelSource, emit_opencl
from ..errors import TensorschedError
from ..ir.dtype import itemsize
from ..ir.stmt import LoweredFunc
from ..ir.visitor import Visitor
from ..runtime.device import DeviceLimits
from ..schedules.lower import lower
from .task import Task

PRIVATE_BYTES = 16 * 1024  # per work-item private arrays above this are filtered out


def check_limits(
    func: LoweredFunc,
    source: KernelSource,
    limits: DeviceLimits,
    private_bytes: int = PRIVATE_BYTES,
) -> str | None:
    """``None`` when the lowered ``func`` with its generated ``source`` (a ``KernelSource``)
    fits a device with ``limits``, else why not."""
    for k in source.kernels:
        n = int(np.prod(k.local_size))
        if n > limits.max_work_group_size:
            return f"work-group of {n} over the device's {limits.max_work_group_size}"
        for d, e in enumerate(k.local_size):
            if e > limits.max_work_item_sizes[d]:
                return (
                    f"threadIdx.{'xyz'[d]} = {e} over the device's {limits.max_work_item_sizes[d]}"
                )
    sizes = {"shared": 0, "local": 0}

    class _Alloc(Visitor):
        def visit_Allocate(self, a):
            if a.buffer.scope in sizes:
                sizes[a.buffer.scope] += a.buffer.size * itemsize(a.buffer.dtype)
            self.generic_visit(a)

    _Alloc().visit(func.body)
    if sizes["shared"] > limits.local_mem_size:
        return (
            f"{sizes['shared']} bytes of __local memory over the device's {limits.local_mem_size}"
        )
    if sizes["local"] > private_bytes:
        return f"{sizes['local']} bytes of private memory per work-item over {private_bytes}"
    return None


def early_filter(
    task: Task,
    config: dict[str, Any] | None,
    limits: DeviceLimits,
    private_bytes: int = PRIVATE_BYTES,
) -> str | None:
    """``None`` when the candidate may run on a device with ``limits``, else why not; decided
    from the lowered IR and the kernels' launch shapes, without building anything."""
    try:
        s, args, cfg = task.instantiate(config)
        if not cfg.valid:
            return "; ".join(cfg.constraints) or "constraint"
        func = lower(s, args)
        src = emit_opencl(func)
    except TensorschedError as exc:
        return f"{type(exc).__name__}: {exc}"
    return check_limits(func, src, limits, private_bytes)
