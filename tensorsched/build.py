"""``ts.build``: from a schedule (or a lowered function) to a callable module."""
from __future__ import annotations

import numpy as np

from .errors import RuntimeCallError, TensorschedError
from .ir import dtype as dt
from .ir.stmt import LoweredFunc
from .schedules.lower import lower
from .schedules.schedule import Schedule

TARGETS = ("opencl", "python")


def check_call_args(func, arrays):
    """Check a call's arrays against the function's arguments before anything runs."""
    if len(arrays) != len(func.args):
        names = ", ".join(b.name for b in func.args)
        raise RuntimeCallError(f"{func.name}: expected {len(func.args)} arrays ({names}), got "
                               f"{len(arrays)}")
    for a, b in zip(arrays, func.args):
        shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
        if shape is None or dtype is None:
            raise RuntimeCallError(f"{func.name}: argument '{b.name}' must be an array, got "
                                   f"{type(a).__name__}")
        if tuple(shape) != tuple(b.shape):
            raise RuntimeCallError(f"{func.name}: argument '{b.name}' has shape {tuple(shape)}, "
                                   f"expected {tuple(b.shape)}")
        if np.dtype(dtype) != np.dtype(dt.NUMPY[b.dtype]):
            raise RuntimeCallError(f"{func.name}: argument '{b.name}' has dtype {np.dtype(dtype)}, "
                                   f"expected {b.dtype}")
        flags = getattr(a, "flags", None)
        if b in func.outputs and isinstance(a, np.ndarray) and not flags.writeable:
            raise RuntimeCallError(f"{func.name}: output '{b.name}' is a read-only array; pass a "
                                   "writeable one (np.empty(...)) to receive the result")


class PythonModule:
    """A lowered function run by the Python backend (exact and slow: for tests and debugging)."""

    def __init__(self, func):
        from .codegen.python import compile_python
        self.func = func
        self._fn, self._source = compile_python(func)

    def get_source(self):
        return self._source

    def __call__(self, *arrays):
        check_call_args(self.func, arrays)
        flat = []
        for a, b in zip(arrays, self.func.args):
            values = np.asarray(a).ravel().tolist()
            flat.append(values)
        self._fn(*flat)
        for a, b, values in zip(arrays, self.func.args, flat):
            if b in self.func.outputs:
                a[...] = np.asarray(values, dtype=np.float64 if dt.is_float(b.dtype)
                                    else None).reshape(a.shape).astype(a.dtype)


def build(sch, args=None, target="opencl", name="default_function", **options):
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
        from .runtime.module import OpenCLModule
        return OpenCLModule(func, **options)
    raise TensorschedError(f"build: unknown target {target!r}; use one of {', '.join(TARGETS)}")
