"""``ts.build``: from a schedule (or a lowered function) to a callable module."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..codegen.python import compile_python, run_generated
from ..errors import TensorschedError
from ..ir import dtype as dt
from ..ir.simplify import size_vars
from ..ir.stmt import LoweredFunc
from ..ir.tensor import Tensor
from ..schedules.lower import lower
from ..schedules.schedule import Schedule
from .module import OpenCLModule, check_call_args

TARGETS = ("opencl", "python")


class PythonModule:
    """A lowered function run by the Python backend (exact and slow: for tests and debugging)."""

    def __init__(self, func: LoweredFunc) -> None:
        self.func = func
        self._fn, self._source = compile_python(func)

    def get_source(self) -> str:
        """The Python source the lowered function was compiled to."""
        return self._source

    def __call__(self, *arrays: Any) -> None:
        sizes = check_call_args(self.func, arrays)
        flat = [np.asarray(a).ravel().tolist() for a in arrays]
        scalars = [sizes[v] for v in size_vars(tuple(b.shape for b in self.func.args))]
        run_generated(self._fn, self.func.name, flat + scalars)
        for a, b, values in zip(arrays, self.func.args, flat):
            if b in self.func.outputs:
                a[...] = (
                    np.asarray(values, dtype=np.float64 if dt.is_float(b.dtype) else None)
                    .reshape(a.shape)
                    .astype(a.dtype)
                )


def build(
    sch: Schedule | LoweredFunc,
    args: Sequence[Tensor] | None = None,
    target: str = "opencl",
    name: str = "default_function",
    **options: Any,
) -> PythonModule | OpenCLModule:
    """Compile a schedule with its argument tensors, or a lowered function, for ``target``.

    ``target="opencl"`` gives an OpenCL module (see ``tensorsched.runtime``); ``"python"`` runs
    the lowered IR in Python without any device.
    """
    if isinstance(sch, LoweredFunc):
        func = sch
    elif isinstance(sch, Schedule):
        if args is None:
            raise TensorschedError("build: give the argument tensors: ts.build(s, [A, B, C])")
        func = lower(sch, args, name=name)
    else:
        raise TensorschedError(f"build: expected a schedule or a lowered function, got {sch!r}")
    if target == "python":
        return PythonModule(func)
    if target == "opencl" or (isinstance(target, str) and target.startswith("opencl")):
        return OpenCLModule(func, **options)
    raise TensorschedError(f"build: unknown target {target!r}; use one of {', '.join(TARGETS)}")
