"""``ts.build``: from a schedule (or a lowered function) to a callable module."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..codegen.python import compile_python, run_generated
from ..errors import TensorschedError
from ..ir import dtype as dt
from ..ir.simplify import func_size_vars
from ..ir.stmt import LoweredFunc
from ..ir.tensor import Tensor
from ..schedules.lower import lower
from ..schedules.schedule import Schedule
from .module import OpenCLModule, Timing, check_call_args, take_sizes, timing_of_runs
from .target import Target, resolve_target
from .tvm_api import ModuleNames, Run, TimerOptions, benchmark


class PythonModule(ModuleNames):
    """A lowered function run by the Python backend (exact and slow: for tests and debugging)."""

    type_key = "python"

    def __init__(self, func: LoweredFunc) -> None:
        self.func = func
        self._fn, self._source = compile_python(func)

    def get_source(self) -> str:
        """The Python source the lowered function was compiled to."""
        return self._source

    def __call__(self, *args: Any) -> None:
        arrays, given = take_sizes(self.func, args)
        sizes = check_call_args(self.func, arrays, given)
        flat = [np.asarray(a).ravel().tolist() for a in arrays]
        scalars = [sizes[v] for v in func_size_vars(self.func.args, self.func.size_args)]
        run_generated(self._fn, self.func.name, flat + scalars)
        for a, b, values in zip(arrays, self.func.args, flat):
            if b in self.func.outputs:
                a[...] = (
                    np.asarray(values, dtype=np.float64 if dt.is_float(b.dtype) else None)
                    .reshape(a.shape)
                    .astype(a.dtype)
                )

    def time_evaluator(
        self,
        func_name: str,
        dev: Any = None,
        number: int = 10,
        repeat: int = 1,
        min_repeat_ms: float = 0.0,
        **tvm_options: Any,
    ) -> Callable[..., Timing]:
        """TVM's ``time_evaluator``: wall-clock seconds of the Python backend a call."""
        self.get_function(func_name)
        self.check_device(dev)
        opts = TimerOptions.of(number, repeat, min_repeat_ms, **tvm_options)

        def run(*arrays: Any) -> Timing:
            self(*arrays)

            def measure(n: int) -> Run:
                t0 = time.perf_counter()
                for _ in range(n):
                    self(*arrays)
                took = (time.perf_counter() - t0) / n
                return took, {self.func.name: took}, took

            return timing_of_runs(benchmark(measure, number, repeat, opts))

        return run


def build(
    sch: Schedule | LoweredFunc,
    args: Sequence[Tensor] | None = None,
    target: str | Target | None = None,
    name: str = "default_function",
    target_host: str | Target | None = None,
    **options: Any,
) -> PythonModule | OpenCLModule:
    """Compile a schedule with its argument tensors, or a lowered function, for ``target``.

    ``target="opencl"`` (the default, or the target of an enclosing ``with
    ts.target.Target(...):`` block, as in TVM) gives an OpenCL module (see
    ``tensorsched.runtime``); ``"python"`` runs the lowered IR in Python without any device.
    TVM's CPU targets (``"llvm"``, ``"c"``, or a
    ``ts.target.Target`` of them) build for the CPU OpenCL device, with a ``TargetNote``;
    ``"cuda"``, ``"rocm"``, ``"metal"`` and ``"vulkan"`` are a ``TargetError`` naming
    ``"opencl"``. ``target_host`` is accepted for TVM's sake: the host code is Python here.
    """
    backend, device = resolve_target(target)
    if isinstance(sch, LoweredFunc):
        func = sch
    elif isinstance(sch, Schedule):
        if args is None:
            raise TensorschedError("build: give the argument tensors: ts.build(s, [A, B, C])")
        func = lower(sch, args, name=name)
    else:
        raise TensorschedError(f"build: expected a schedule or a lowered function, got {sch!r}")
    if backend == "python":
        return PythonModule(func)
    if device is not None and "device" not in options:
        options["device"] = device
    return OpenCLModule(func, **options)
