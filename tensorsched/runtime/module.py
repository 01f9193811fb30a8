"""A built OpenCL module: the source, the program, and launching it on numpy or device arrays.

A module can be exported as a ``ModuleArtifact`` (plain, picklable data: the generated source,
its kernels' launch table and the argument buffers; optionally the program binary) and loaded
again, in another process, with ``OpenCLModule.from_artifact`` -- without lowering or
generating code again. The tuner builds candidates in a pool of processes and measures them in
another one this way.
"""

from __future__ import annotations

import glob
import hashlib
import os
import pickle
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..codegen.opencl import INDEX_LIMIT, KernelInfo, KernelSource, emit_opencl
from ..errors import BuildError, RuntimeCallError, TensorschedError
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir.simplify import evaluate_extent, size_vars
from ..ir.stmt import Buffer, LoweredFunc
from .device import Device, DeviceLimits, resolve_device
from .nd import NDArray, unwrap
from .tvm_api import ModuleNames, Run, TimerOptions, benchmark

# pyopencl is imported inside the functions that use it, so that ``import tensorsched`` works
# without an OpenCL driver (and skips pyopencl's ~0.17 s import) until a kernel runs.


# What a module is called with: numpy arrays, pyopencl.array.Array, or a pyopencl.Image for an
# argument read through an image.
Array = Any
# (array, buffer) pairs whose buffer is copied back into the array after a run
CopyBack = list[tuple[Array, Any]]


def take_sizes(
    func: LoweredFunc | ModuleArtifact, arrays: Sequence[Any]
) -> tuple[tuple[Array, ...], dict[E.Var, int]]:
    """A call's arguments split into its arrays and the sizes it gives at the positions of
    the function's ``size_args`` (TVM's ``f(a, b, 8)`` for ``lower(s, [A, B, n])``), where it
    gives them; else all of them are arrays."""
    sizes = getattr(func, "size_args", ())
    if not sizes or len(arrays) != len(func.args) + len(sizes):
        return tuple(arrays), {}
    at = dict(sizes)
    given: dict[E.Var, int] = {}
    for k, v in sizes:
        n = arrays[k]
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
            raise RuntimeCallError(
                f"{func.name}: argument {k} is the size '{v.name}', an int of at least 0, got {n!r}"
            )
        given[v] = int(n)  # (bind_sizes checks that it fits the size's dtype)
    return tuple(a for k, a in enumerate(arrays) if k not in at), given


def check_call_args(
    func: LoweredFunc | ModuleArtifact,
    arrays: Sequence[Array],
    given: Mapping[E.Var, int] | None = None,
) -> dict[E.Var, int]:
    """Check a call's arrays against the function's arguments before anything runs; returns
    the value of each size variable of a symbolic shape: the sizes ``given`` (``take_sizes``),
    then bound from the arrays' shapes."""
    if len(arrays) != len(func.args):
        names = ", ".join(b.name for b in func.args)
        sizes = [v.name for _, v in getattr(func, "size_args", ())]
        also = (
            f", or those and the sizes {', '.join(sizes)} where lower's arguments list them"
            if sizes
            else ""
        )
        raise RuntimeCallError(
            f"{func.name}: expected {len(func.args)} arrays ({names}){also}; got {len(arrays)}"
        )
    for a, b in zip(arrays, func.args):
        shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
        if shape is None or dtype is None:
            raise RuntimeCallError(
                f"{func.name}: argument '{b.name}' must be an array, got {type(a).__name__}"
            )
        if len(tuple(shape)) != len(b.shape) or (
            all(isinstance(d, int) for d in b.shape) and tuple(shape) != tuple(b.shape)
        ):
            raise RuntimeCallError(
                f"{func.name}: argument '{b.name}' has shape {tuple(shape)}, "
                f"expected {_shape_text(b.shape)}"
            )
        if np.dtype(dtype) != np.dtype(dt.NUMPY[b.dtype]):
            raise RuntimeCallError(
                f"{func.name}: argument '{b.name}' has dtype {np.dtype(dtype)}, expected {b.dtype}"
            )
        if b in func.outputs and isinstance(a, np.ndarray) and not a.flags.writeable:
            raise RuntimeCallError(
                f"{func.name}: output '{b.name}' is a read-only array; pass a "
                "writeable one (np.empty(...)) to receive the result"
            )
    values = bind_sizes(func, arrays, given)
    size_args = getattr(func, "size_args", ())
    shaped = set(size_vars(tuple(b.shape for b in func.args))) if size_args else set()
    for k, v in size_args:
        if v not in values:  # a size no shape has (a split factor): only the call gives it
            raise RuntimeCallError(
                f"{func.name}: the size '{v.name}' is in no argument's shape, so the call "
                f"must give it: pass its value as argument {k}"
            )
        if v not in shaped and values[v] < 1:  # a split factor: the loops divide by it
            raise RuntimeCallError(
                f"{func.name}: the size '{v.name}' (argument {k}) is {values[v]}; it is in no "
                "argument's shape, only a loop's split factor, and must be at least 1"
            )
    return values


def static_signature(
    func: LoweredFunc | ModuleArtifact,
) -> tuple[tuple[tuple[int, ...], np.dtype], ...] | None:
    """Each argument's shape and numpy dtype where every shape is static and the call has
    no size arguments and no image (what a call's arrays must match exactly), else None."""
    if getattr(func, "size_args", ()) or any(b.image for b in func.args):
        return None
    if not all(isinstance(d, int) for b in func.args for d in b.shape):
        return None
    return tuple((tuple(b.shape), np.dtype(dt.NUMPY[b.dtype])) for b in func.args)


def _shape_text(shape: Sequence[Any]) -> str:
    return f"({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"


def bind_sizes(
    func: LoweredFunc | ModuleArtifact,
    arrays: Sequence[Array],
    given: Mapping[E.Var, int] | None = None,
) -> dict[E.Var, int]:
    """The size variables of the arguments' symbolic shapes, bound to the arrays' shapes: a
    dimension that is a size variable takes the array's length there (the first argument that
    has it decides, unless the call ``given`` it); every dimension must then equal its
    expression, or ``RuntimeCallError``."""
    values: dict[E.Var, int] = dict(given or {})
    first: dict[E.Var, str] = {v: "the call's sizes" for v in values}
    if all(isinstance(d, int) for b in func.args for d in b.shape):
        return values
    composite = False
    for a, b in zip(arrays, func.args):
        for d, n in zip(b.shape, a.shape):
            if isinstance(d, E.Var):
                if d not in values:
                    values[d], first[d] = int(n), b.name
            elif not isinstance(d, (int, E.IntImm)):
                composite = True
    if composite:
        _solve_sizes(func, arrays, values, first)
    for a, b in zip(arrays, func.args):
        try:
            expected = tuple(evaluate_extent(d, values) for d in b.shape)
        except KeyError as exc:
            missing = exc.args[0]  # the size's name
            at = [k for k, v in getattr(func, "size_args", ()) if v.name == missing]
            how = (
                f"give its value as argument {at[0]} of the call"
                if at
                else "give some tensor a dimension of just that size"
            )
            raise RuntimeCallError(
                f"{func.name}: argument '{b.name}' has shape {_shape_text(b.shape)}, and no "
                f"argument's dimension is the size {missing} alone or a*{missing} + b, "
                f"which the call could bind it to; {how}"
            ) from None
        if expected != tuple(a.shape):
            bound = ", ".join(f"{v.name} = {values[v]} (from '{first[v]}')" for v in values)
            raise RuntimeCallError(
                f"{func.name}: argument '{b.name}' has shape {tuple(a.shape)}, expected "
                f"{_shape_text(b.shape)} = {expected} with {bound}"
            )
    for v, n in values.items():
        if not dt.fits(n, v.dtype):
            raise RuntimeCallError(
                f"{func.name}: size {v.name} = {n} does not fit its dtype {v.dtype}; declare "
                f"it with ts.var('{v.name}', dtype='int64')"
            )
    return values


def _solve_sizes(
    func: LoweredFunc | ModuleArtifact,
    arrays: Sequence[Array],
    values: dict[E.Var, int],
    first: dict[E.Var, str],
) -> None:
    """Bind the sizes that only dimensions affine in them give (``8*m``, ``m*4 + 1``, or
    ``n + m`` once ``n`` is known): each such dimension with one unknown size decides it,
    until none is left; ``RuntimeCallError`` where the array's length is not of that form."""
    progress = True
    while progress:
        progress = False
        for a, b in zip(arrays, func.args):
            for axis, (d, n) in enumerate(zip(b.shape, a.shape)):
                if isinstance(d, (int, E.IntImm, E.Var)):
                    continue
                unknown = [v for v in size_vars(d) if v not in values]
                if len(unknown) != 1:
                    continue
                v = unknown[0]
                solved = _solve_affine(d, v, int(n), values)
                if solved is None:
                    continue  # not affine in v (m // 2): another dimension may give it
                if solved < 0:
                    raise RuntimeCallError(
                        f"{func.name}: argument '{b.name}' has shape {tuple(a.shape)}, expected "
                        f"{_shape_text(b.shape)}: no size {v.name} >= 0 makes dimension "
                        f"{axis} ({d}) equal {n}; check the array's shape"
                    )
                values[v], first[v] = solved, b.name
                progress = True


def _solve_affine(d: E.Expr, v: E.Var, n: int, values: Mapping[E.Var, int]) -> int | None:
    """The ``v`` at which ``d`` (affine in ``v``: ``a*v + b``, the other sizes set to
    ``values``) equals ``n``: -1 where none is an integer, None where ``d`` is not affine in
    ``v``."""
    try:
        at = [evaluate_extent(d, {**values, v: x}) for x in (0, 1, 2, 3)]
    except (ValueError, ArithmeticError):
        return None
    b, a = at[0], at[1] - at[0]
    if a == 0 or any(at[x] != b + a * x for x in (2, 3)):
        return None
    m, rest = divmod(n - b, a)
    return m if rest == 0 and m >= 0 else -1


DEFAULT_OPTIONS: tuple[str, ...] = ("-cl-std=CL1.2",)
_PROGRAMS: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Any] = {}  # -> built cl.Program


class LaunchError(TensorschedError):
    """A kernel's work-group does not fit the device."""


def build_program(device: Device, source: str, options: Sequence[str], cache: bool = True) -> Any:
    """Build (or take from this process's cache) the program for ``source`` on ``device``.
    ``cache=False`` neither looks in the cache nor keeps the program there (for processes
    that build many programs once each, like the tuner's workers)."""
    import pyopencl as cl

    key = (source, tuple(options), device.key)
    if cache and key in _PROGRAMS:
        return _PROGRAMS[key]
    started = time.time()
    try:
        with warnings.catch_warnings():
            # a successful build's log (NVIDIA: "overriding noinline attribute") is noise here;
            # PYOPENCL_COMPILER_OUTPUT=1 prints it, and a failed build's log is in BuildError
            warnings.simplefilter("ignore", cl.CompilerWarning)
            prg = cl.Program(device.context, source).build(options=list(options))
    except cl.RuntimeError as exc:
        _move_pocl_dumps(device, source, started)
        path = save_source(source)
        # pyopencl's _ErrorRecord: exc.what.what() is the build log
        what = getattr(getattr(exc, "what", None), "what", None)
        log = what() if callable(what) else str(exc)
        raise BuildError(
            f"the OpenCL compiler of '{device.name}' rejected the generated code",
            log=str(log),
            source_path=path,
            options=options,
        ) from None
    _move_pocl_dumps(device, source, started)
    if cache:
        _PROGRAMS[key] = prg
    return prg


def _move_pocl_dumps(device: Device, source: str, since: float) -> None:
    """Move the control-flow graphs PoCL wrote into the current directory while building
    ``source`` into the folder of saved kernels (``save_source``'s).

    PoCL (3.1) writes ``<kernel>.dot`` into the working directory when its work-group pass
    finds a parallel region it cannot verify (``ParallelRegion::Verify``); no environment
    variable or build option turns that off, so the files are moved away after each build."""
    if "portable computing language" not in device.platform_name.lower():
        return
    names = set(re.findall(r"__kernel\s+void\s+(\w+)", source))
    folder = saved_kernels_folder()
    for name in names:
        for path in glob.glob(glob.escape(name) + ".dot*"):
            try:
                if os.path.getmtime(path) >= since - 1:
                    os.makedirs(folder, exist_ok=True)
                    shutil.move(path, os.path.join(folder, os.path.basename(path)))
            except OSError:
                pass  # another process moved it, or the folder is not writable


def load_binary(device: Device, binary: bytes, options: Sequence[str]) -> Any:
    """The program of a binary that ``device``'s driver made (``OpenCLModule.binary()``), or
    ``None`` when the driver does not take it back."""
    import pyopencl as cl

    try:
        return cl.Program(device.context, [device.cl_device], [binary]).build(options=list(options))
    except cl.Error:
        return None


def caches_source_builds(device: Device) -> bool:
    """Whether ``device``'s driver keeps built programs by their source (NVIDIA, PoCL): then
    building the same source again, in any process, is a cache hit."""
    try:
        from pyopencl.characterize import has_src_build_cache

        return bool(has_src_build_cache(device.cl_device))
    except Exception:  # noqa: BLE001
        return False


def saved_kernels_folder() -> str:
    """Where rejected sources (``save_source``) and PoCL's ``.dot`` dumps are kept."""
    return os.path.join(tempfile.gettempdir(), "tensorsched-kernels")


def save_source(source: str) -> str:
    """Write ``source`` to ``saved_kernels_folder()`` (named by its hash); returns the path."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    folder = saved_kernels_folder()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"kernel_{digest}.cl")
    with open(path, "w") as f:
        f.write(source)
    return path


@dataclass(frozen=True)
class Timing:
    """Per-repeat times in seconds: ``device_times`` (the profiling events of all the kernels
    of one call), ``host_times`` (wall clock of the whole call, transfers of numpy arrays
    included; empty where not taken) and ``kernel_times`` (kernel name -> its per-repeat
    device times). ``time_evaluator`` and the ACL-style baseline both return one."""

    device_times: tuple[float, ...]
    host_times: tuple[float, ...] = ()
    kernel_times: Mapping[str, tuple[float, ...]] = field(default_factory=dict)

    @property
    def device_median(self) -> float:
        return float(np.median(self.device_times))

    @property
    def host_median(self) -> float:
        return float(np.median(self.host_times)) if self.host_times else float("nan")

    @property
    def mean(self) -> float:  # TVM's time_evaluator(...)(...).mean; ACL's reported figure
        return float(np.mean(self.device_times))

    # TVM's BenchmarkResult: per-repeat device seconds and their statistics
    @property
    def results(self) -> list[float]:
        return list(self.device_times)

    @property
    def median(self) -> float:
        return self.device_median

    @property
    def min(self) -> float:
        return float(np.min(self.device_times))

    @property
    def max(self) -> float:
        return float(np.max(self.device_times))

    @property
    def std(self) -> float:
        return float(np.std(self.device_times))

    def kernel_mean(self, name: str) -> float:
        """Mean device time of kernel ``name`` in one call (0.0 for a kernel that never ran)."""
        times = self.kernel_times.get(name, ())
        return float(np.mean(times)) if times else 0.0

    def kernel_means(self) -> dict[str, float]:
        return {k: self.kernel_mean(k) for k in self.kernel_times}


def event_times(events: Sequence[tuple[str, Any]]) -> tuple[float, dict[str, float]]:
    """``(total, per kernel name)`` device seconds of ``[(name, profiled event)]``."""
    per: dict[str, float] = {}
    for name, ev in events:
        per[name] = per.get(name, 0.0) + (ev.profile.end - ev.profile.start) * 1e-9
    return sum(per.values()), per


def timing_of_runs(runs: Sequence[tuple[float, dict[str, float], float]]) -> Timing:
    """A ``Timing`` of measured runs, each ``(device seconds, per kernel, host seconds)``
    (host seconds ``nan`` where not taken)."""
    names = sorted({n for _, per, _ in runs for n in per})
    host = tuple(h for _, _, h in runs if h == h)
    return Timing(
        tuple(d for d, _, _ in runs),
        host,
        {n: tuple(per.get(n, 0.0) for _, per, _ in runs) for n in names},
    )


@dataclass(frozen=True)
class ModuleArtifact:
    """A module as plain data, to load it in another process (``OpenCLModule.from_artifact``)
    without lowering or generating code again: the function's name, its argument buffers in
    call order and which of them it writes (shapes and dtypes), the generated source with the
    launch table of its kernels (names, parameters, NDRange and work-group sizes) and its
    temporary buffers, the build options, and optionally the program binary of the device it
    was built on (``device_key``). Picklable: ``dumps()`` / ``ModuleArtifact.loads(data)``."""

    name: str
    args: tuple[Buffer, ...]
    outputs: tuple[Buffer, ...]
    source: KernelSource
    options: tuple[str, ...] = DEFAULT_OPTIONS
    device_key: tuple[str, ...] = ()
    binary: bytes | None = None
    size_args: tuple[tuple[int, E.Var], ...] = ()  # LoweredFunc.size_args

    @classmethod
    def from_func(
        cls, func: LoweredFunc, options: Sequence[str] = (), fp16: str = "storage"
    ) -> ModuleArtifact:
        """The artifact of a lowered function: its OpenCL C generated, nothing built yet."""
        return cls(
            func.name,
            tuple(func.args),
            tuple(func.outputs),
            emit_opencl(func, fp16),
            tuple(DEFAULT_OPTIONS) + tuple(options),
            size_args=tuple(func.size_args),
        )

    def with_binary(self, device_key: Sequence[str], binary: bytes) -> ModuleArtifact:
        return replace(self, device_key=tuple(device_key), binary=binary)

    def dumps(self) -> bytes:
        return pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def loads(data: bytes) -> ModuleArtifact:
        art = pickle.loads(data)
        if not isinstance(art, ModuleArtifact):
            raise TensorschedError(f"not a module artifact: {type(art).__name__}")
        return art


class OpenCLModule(ModuleNames):
    """``mod(*arrays)`` runs the kernels; outputs land in the output arrays (numpy arrays,
    ``pyopencl.array.Array`` or ``ts.nd`` arrays).

    ``func`` is the lowered function, or for a module loaded with ``from_artifact`` the
    artifact (which has the function's ``name``, ``args`` and ``outputs``, not its body)."""

    def __init__(
        self,
        func: LoweredFunc,
        device: Device | str | None = None,
        options: Sequence[str] = (),
        fp16: str = "storage",
    ) -> None:
        device = resolve_device(device)
        if fp16 == "native" and not device.has_fp16:
            raise BuildError(
                f"fp16='native' needs cl_khr_fp16, which '{device.name}' does "
                "not have; use fp16='storage' (half in memory, float arithmetic)"
            )
        self._load(func, ModuleArtifact.from_func(func, options, fp16), device)

    @classmethod
    def from_artifact(
        cls,
        artifact: ModuleArtifact | bytes,
        device: Device | str | None = None,
        cache: bool = True,
    ) -> OpenCLModule:
        """Load an exported module (a ``ModuleArtifact`` or its ``dumps()`` bytes): its
        program is built from the source (a hit in the driver's cache where the driver keeps
        one), or taken from the artifact's binary when that was made for this device."""
        if isinstance(artifact, (bytes, bytearray)):
            artifact = ModuleArtifact.loads(artifact)
        mod = cls.__new__(cls)
        mod._load(artifact, artifact, resolve_device(device), cache)
        return mod

    def _load(
        self,
        func: LoweredFunc | ModuleArtifact,
        artifact: ModuleArtifact,
        device: Device,
        cache: bool = True,
    ) -> None:
        self.func, self.device, self.artifact = func, device, artifact
        self.source = artifact.source
        self.options = tuple(artifact.options)
        self._check_work_groups()
        self.program: Any = None
        if artifact.binary is not None and tuple(artifact.device_key) == tuple(device.key):
            self.program = load_binary(device, artifact.binary, self.options)
        if self.program is None:
            self.program = build_program(device, self.source.text, self.options, cache)
        import pyopencl as cl  # cl.Kernel: a cached program's kernels are fetched anew

        self.kernels = [cl.Kernel(self.program, k.name) for k in self.source.kernels]
        self._temps: dict[Buffer, Any] | None = None
        self._temps_key: tuple[tuple[str, int], ...] = ()
        self._signature = static_signature(func)

    def warm(self) -> bool:
        """Launch each kernel once, as one work-group over zero-filled scratch buffers of
        its arguments' sizes, so that a driver that compiles a kernel for its work-group size
        at the first launch, and keeps it by the program's source (PoCL: 0.1-0.6 s a GEMM
        kernel on the AMD EPYC VM, a disk cache any process then hits), has done so. Zeros
        keep every index read from a buffer in bounds, and one work-group keeps the run
        short whatever the kernel's speed. Returns whether it ran: not for a module of
        symbolic sizes or images, or a kernel that leaves its work-group size to the
        driver."""

        infos = self.source.kernels
        if any(b.image for b in self.func.args) or any(
            k.scalars or not k.local_size or not all(isinstance(n, int) for n in k.local_size)
            for k in infos
        ):
            return False
        import pyopencl as cl

        # a queue of its own, on the program's context: a worker that measures on the
        # device's queue in another thread (a cluster's) may hold a context of its own
        ctx = self.program.get_info(cl.program_info.CONTEXT)
        q = cl.CommandQueue(ctx, self.program.get_info(cl.program_info.DEVICES)[0])
        bufs: dict[Buffer, Any] = {}
        for b in self.func.args:
            size = evaluate_extent(b.size, {}) * dt.itemsize(b.dtype)
            bufs[b] = temp_buffer(ctx, size, zeroed=True)
        for t in self.source.temps:
            bufs[t] = temp_buffer(ctx, evaluate_extent(t.size, {}) * dt.itemsize(t.dtype), True)
        for kern, info in zip(self.kernels, infos):
            kern(q, info.local_size, info.local_size, *[bufs[b] for b in info.params])
        q.finish()
        return True

    def _resident(self, args: Sequence[Any]) -> dict[Buffer, Any] | None:
        """The buffers of a call whose arguments are all device arrays that this module takes
        as they are (``_arguments`` and ``_device_args`` would accept each unchanged: its
        static shape and dtype, this module's context, C-contiguous from the start of its
        buffer), its temporaries made by an earlier call; else None (the full path). On
        PoCL a small GEMM's call costs 50-90 us (an empty kernel's, 26-31); the full path's
        checks spent 8 of them, this one 2."""
        import pyopencl.array as cla

        sig = self._signature
        if sig is None or len(args) != len(sig) or (self.source.temps and self._temps is None):
            return None
        ctx, out = self.device.context, []
        for a, (shape, dtype) in zip(args, sig):
            if type(a) is NDArray:
                a = a.data
            if (
                type(a) is not cla.Array
                or a.shape != shape
                or a.dtype != dtype
                or a.offset
                or a.context != ctx
                or not a.flags.c_contiguous
            ):
                return None
            out.append(a.data)
        bufs = dict(zip(self.func.args, out))
        bufs.update(self._temps or {})
        return bufs

    def export(self, binary: bool = False) -> ModuleArtifact:
        """This module as a ``ModuleArtifact``; ``binary=True`` adds the program binary of this
        module's device."""
        if not binary:
            return self.artifact
        return self.artifact.with_binary(self.device.key, self.binary())

    def export_library(self, file_name: str) -> None:
        """TVM's ``export_library``: write this module to ``file_name`` (its ``ModuleArtifact``:
        the OpenCL C and its launch table, built again on loading, as TVM's OpenCL modules
        are); ``ts.runtime.load_module(file_name)`` loads it, in any process."""
        with open(file_name, "wb") as f:
            f.write(self.export().dumps())

    def binary(self) -> bytes:
        """The program binary the driver made for this module's device."""
        return self.program.binaries[0]

    def get_source(self) -> str:
        return self.source.text

    def weight_only_kernels(self, constants: Iterable[Buffer]) -> frozenset[str]:
        """The kernels that read only ``constants`` (weights) and what such kernels wrote
        before them, and write none of the outputs: the weight repacking that a network runs
        once at build time (``graph.executor``) and the tuner leaves out of its times."""
        static = set(constants)
        names = set()
        for info in self.source.kernels:
            reads = set(info.params) - set(info.writes)
            if reads <= static and not set(info.writes) & set(self.func.outputs):
                static |= set(info.writes)
                names.add(info.name)
        return frozenset(names)

    def _check_work_groups(self) -> None:
        dev = self.device
        for b in self.func.args:
            if b.image:
                width, height = b.shape[1] // 4, b.shape[0]
                if not dev.cl_device.image_support:
                    raise LaunchError(
                        f"input '{b.name}' is read through an image but "
                        f"'{dev.name}' has no image support; drop use_image"
                    )
                if (
                    width > dev.cl_device.image2d_max_width
                    or height > dev.cl_device.image2d_max_height
                ):
                    raise LaunchError(
                        f"input '{b.name}' needs a {width}x{height} image but "
                        f"'{dev.name}' allows at most "
                        f"{dev.cl_device.image2d_max_width}x"
                        f"{dev.cl_device.image2d_max_height}; drop use_image"
                    )
        for k in self.source.kernels:
            if all(isinstance(n, int) for n in k.local_size):
                self._check_work_group(k.name, k.local_size)
        if self.source.zeroed and not DeviceLimits.of(dev).group_ordering:
            warnings.warn(
                f"{self.func.name}: its kernels hand work from one work-group to another "
                f"(last_group), relying on an ordering that OpenCL 1.2 does not promise and "
                f"'{dev.name}' is not known to give (DeviceLimits.group_ordering); its results "
                "may be wrong at times. Keep the K split's sum in a kernel of its own there.",
                stacklevel=3,
            )

    def _check_work_group(self, name: str, local_size: Sequence[int]) -> None:
        dev = self.device
        size = int(np.prod(local_size))
        dims = ", ".join(f"threadIdx.{'xyz'[d]}={n}" for d, n in enumerate(local_size))
        if size > dev.max_work_group_size:
            raise LaunchError(
                f"kernel {name}: the work-group ({dims}) has {size} "
                f"work-items but '{dev.name}' allows at most "
                f"{dev.max_work_group_size}; split the threadIdx axes smaller"
            )
        for d, n in enumerate(local_size):
            if n > dev.max_work_item_sizes[d]:
                raise LaunchError(
                    f"kernel {name}: threadIdx.{'xyz'[d]} has extent {n} but "
                    f"'{dev.name}' allows at most {dev.max_work_item_sizes[d]}"
                )

    # ---- running

    def _device_args(
        self, arrays: Sequence[Array], sizes: Mapping[E.Var, int] | None = None
    ) -> tuple[dict[Buffer, Any], CopyBack]:
        import pyopencl as cl
        import pyopencl.array as cla

        ctx, mf = self.device.context, cl.mem_flags
        bufs: dict[Buffer, Any] = {}
        copies: CopyBack = []
        for a, b in zip(arrays, self.func.args):
            if b.image:
                bufs[b] = a if isinstance(a, cl.Image) else _image(ctx, a)
            elif isinstance(a, cla.Array):
                bufs[b] = self._device_array(a, b, copies)
            elif getattr(a, "size", 1) == 0:  # a size of 0: nothing to copy in or out
                bufs[b] = cl.Buffer(ctx, mf.READ_WRITE, 4)
            else:
                host = np.ascontiguousarray(a)
                bufs[b] = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host)
                if b in self.func.outputs:
                    copies.append((a, bufs[b]))
        key = tuple(sorted((v.name, n) for v, n in (sizes or {}).items()))
        if self._temps is None or self._temps_key != key:
            self._temps_key = key
            src = self.source
            values = sizes or {}
            nbytes = {t: evaluate_extent(t.size, values) * dt.itemsize(t.dtype) for t in src.temps}
            self._temps = {t: temp_buffer(ctx, n, t in src.zeroed) for t, n in nbytes.items()}
        bufs.update(self._temps)
        return bufs, copies

    def _device_array(self, a: Any, b: Buffer, copies: CopyBack) -> Any:
        """The buffer to pass for device array ``a`` (argument ``b``): its own where it is
        C-contiguous from the start of its buffer; a contiguous copy where it starts at an
        offset (copied back after the run if ``b`` is an output); refused where it is strided
        (a transposed view, a step slice), whose elements the kernel would read in the wrong
        order."""
        import pyopencl as cl

        name = f"{self.func.name}: argument '{b.name}'"
        if a.context != self.device.context:
            raise RuntimeCallError(
                f"{name} is a device array of another OpenCL context; create it on "
                f"module.device.queue (pyopencl.array.to_device(mod.device.queue, x))"
            )
        if not a.flags.c_contiguous:
            raise RuntimeCallError(
                f"{name} is a device array that is not C-contiguous (strides {a.strides}, "
                "a transposed or strided view); pass a contiguous one, e.g. "
                "pyopencl.array.to_device(queue, np.ascontiguousarray(x.get())), or a numpy array"
            )
        if not a.offset:
            return a.data
        q = self.device.queue
        buf = cl.Buffer(self.device.context, cl.mem_flags.READ_WRITE, max(a.nbytes, 4))
        if a.nbytes:
            cl.enqueue_copy(q, buf, a.base_data, src_offset=a.offset, byte_count=a.nbytes)
        if b in self.func.outputs:
            copies.append((a, buf))
        return buf

    def _launch(
        self, bufs: Mapping[Buffer, Any], sizes: Mapping[E.Var, int] | None = None
    ) -> list[Any]:
        q = self.device.queue
        events = []
        for kern, info in zip(self.kernels, self.source.kernels):
            args = [bufs[b] for b in info.params]
            if not info.scalars and sizes is None:
                events.append(kern(q, info.global_size, info.local_size, *args))
                continue
            values = sizes or {}
            ndrange = self._ndrange(info, values)
            if ndrange is None:
                continue  # a size of 0: nothing to compute
            args += [np.dtype(dt.NUMPY[v.dtype]).type(values[v]) for v in info.scalars]
            events.append(kern(q, ndrange[0], ndrange[1], *args))
        return events

    def _ndrange(
        self, info: KernelInfo, sizes: Mapping[E.Var, int]
    ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The NDRange of ``info`` at these sizes (None when it is empty); an ``int``-indexed
        kernel whose sizes would pass ``INDEX_LIMIT`` is refused."""
        gsize = tuple(evaluate_extent(n, sizes) for n in info.global_size)
        lsize = tuple(evaluate_extent(n, sizes) for n in info.local_size)
        if min(gsize) <= 0:
            return None
        if not all(isinstance(n, int) for n in info.local_size):
            self._check_work_group(info.name, lsize)
        if info.index_type == "int":
            largest = max(
                [*gsize, *(evaluate_extent(b.size, sizes) for b in info.params)], default=0
            )
            if largest > INDEX_LIMIT:
                raise RuntimeCallError(
                    f"kernel {info.name} indexes with int, but at these sizes "
                    f"({', '.join(f'{v.name} = {n}' for v, n in sizes.items())}) a buffer "
                    f"or the NDRange has {largest} elements, past {INDEX_LIMIT}; declare the "
                    "sizes with ts.var(name, dtype='int64') for a long-indexed kernel"
                )
        return gsize, lsize

    def _finish(self, copies: CopyBack) -> None:
        import pyopencl as cl
        import pyopencl.array as cla

        q = self.device.queue
        for a, buf in copies:
            if isinstance(a, cla.Array):  # a device array at an offset: copy its part back
                base: Any = a.base_data
                if a.nbytes:
                    cl.enqueue_copy(q, base, buf, dst_offset=a.offset, byte_count=a.nbytes)
            else:
                copy_to_host(q, a, buf)
        q.finish()

    def _unwrap(self, arrays: Sequence[Array]) -> tuple[Array, ...]:
        names = [b.name for b in self.func.args]
        return tuple(unwrap(arrays, self.device, self.func.name, names))

    def _arguments(self, args: Sequence[Any]) -> tuple[tuple[Array, ...], dict[E.Var, int]]:
        """A call's arrays (unwrapped) and its sizes, checked."""
        arrays, given = take_sizes(self.func, args)
        arrays = self._unwrap(arrays)
        return arrays, check_call_args(self.func, arrays, given)

    def __call__(self, *arrays: Array) -> None:
        bufs = self._resident(arrays)
        if bufs is not None:
            self._launch(bufs)
            self.device.queue.finish()
            return
        arrays, sizes = self._arguments(arrays)
        bufs, copies = self._device_args(arrays, sizes)
        self._launch(bufs, sizes or None)
        self._finish(copies)

    def time_evaluator(
        self,
        func_name: str | None = None,
        dev: Any = None,
        number: int | None = None,
        repeat: int | None = None,
        min_repeat_ms: float = 0.0,
        warmup: int = 1,
        budget_ms: float | None = None,
        min_repeat: int = 3,
        **tvm_options: Any,
    ) -> Callable[..., Timing]:
        """A function of the same arrays returning a ``Timing`` of ``repeat`` measurements,
        each the mean of ``number`` runs, after ``warmup`` unmeasured runs.

        TVM's form, ``time_evaluator(mod.entry_name, dev, number=10, repeat=1,
        min_repeat_ms=0)``, measures as TVM does (``number`` defaults to 10, ``repeat`` to 1;
        with ``min_repeat_ms`` a measurement too short is taken again with more runs); the
        ``Timing`` has TVM's ``.mean``, ``.median``, ``.results`` ... in device seconds.

        tensorsched's form (no name; ``number`` defaults to 1, ``repeat`` to 5): with
        ``budget_ms``, repeating stops early once the measured runs took that long on the
        device in all, after at least ``min(min_repeat, repeat)`` measurements (slow kernels
        need fewer repeats for a stable median). Pass device arrays (``pyopencl.array.Array``
        or ``ts.nd`` arrays on the module's device) to time the kernels without host
        transfers; numpy arrays are copied in (and outputs out) on every run, which the host
        times then include."""
        if func_name is not None:
            self.get_function(func_name)
            self.check_device(dev)
            tvm_number = 10 if number is None else number
            tvm_repeat = 1 if repeat is None else repeat
            opts = TimerOptions.of(tvm_number, tvm_repeat, min_repeat_ms, **tvm_options)

            def run_tvm(*args: Array) -> Timing:
                arrays, sizes = self._arguments(args)
                for _ in range(warmup):
                    self(*args)
                measure = lambda n: self._measure(arrays, sizes, n)  # noqa: E731
                return timing_of_runs(benchmark(measure, tvm_number, tvm_repeat, opts))

            return run_tvm
        if tvm_options or min_repeat_ms:
            raise RuntimeCallError(
                "time_evaluator: min_repeat_ms and TVM's other options need TVM's form, "
                "time_evaluator(mod.entry_name, dev, number=..., repeat=..., min_repeat_ms=...)"
            )
        number, repeat = 1 if number is None else number, 5 if repeat is None else repeat

        def run(*args: Array) -> Timing:
            arrays, sizes = self._arguments(args)
            for _ in range(warmup):
                self(*args)
            runs: list[Run] = []
            least = min(min_repeat, repeat)
            for n in range(repeat):
                spent = sum(r[0] for r in runs) * number * 1e3
                if budget_ms is not None and n >= least and spent >= budget_ms:
                    break
                runs.append(self._measure(arrays, sizes, number))
            return timing_of_runs(runs)

        return run

    def _measure(self, arrays: Sequence[Array], sizes: Mapping[E.Var, int], number: int) -> Run:
        """``number`` runs: mean device seconds a run (all kernels), per kernel, and mean
        host seconds a run (transfers of numpy arrays included)."""
        d, per = 0.0, dict[str, float]()
        t0 = time.perf_counter()
        for _ in range(number):
            bufs, copies = self._device_args(arrays, sizes)
            events = self._launch(bufs, sizes or None)
            self._finish(copies)
            names = [k.name for k in self.source.kernels]
            total, kernels = event_times(list(zip(names, events)))
            d += total
            for k, v in kernels.items():
                per[k] = per.get(k, 0.0) + v
        host = (time.perf_counter() - t0) / number
        return d / number, {k: v / number for k, v in per.items()}, host


def load_module(path: str, device: Device | str | None = None) -> OpenCLModule:
    """TVM's ``tvm.runtime.load_module``: the module ``export_library`` wrote to ``path``,
    built for ``device`` (default: the device in use). The file is a pickle, which runs code
    as it loads, as a TVM library does: load only files you trust."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise TensorschedError(f"load_module: cannot read '{path}': {exc.strerror}") from None
    try:
        artifact = ModuleArtifact.loads(data)
    except Exception:  # noqa: BLE001  (not a pickle, or another object)
        raise TensorschedError(
            f"load_module: '{path}' is not a module written by export_library"
        ) from None
    return OpenCLModule.from_artifact(artifact, device)


def copy_to_host(queue: Any, array: np.ndarray, buf: Any) -> None:
    """Copy ``buf`` into the numpy ``array``, through a contiguous copy where ``array`` is a
    strided view (the copy blocks until it is done)."""
    import pyopencl as cl

    host = array if array.flags.c_contiguous else np.empty(array.shape, array.dtype)
    cl.enqueue_copy(queue, host, buf)
    if host is not array:
        array[...] = host


def _image(ctx: Any, array: np.ndarray) -> Any:
    """A read-only RGBA float image holding a (rows, cols) float32 array, 4 columns a texel."""
    import pyopencl as cl

    rows, cols = array.shape
    texels = np.ascontiguousarray(array, dtype=np.float32).reshape(rows, cols // 4, 4)
    return cl.image_from_array(ctx, texels, num_channels=4, mode="r")


HUGE_PAGE = 2 << 20  # bytes: Linux's transparent huge pages on x86-64 and arm64


def temp_buffer(context: Any, nbytes: int, zeroed: bool = False) -> Any:
    """A device buffer of ``nbytes`` (at least 4) for a temporary: uninitialised, or zero
    where ``zeroed`` (``KernelSource.zeroed``: counters that the kernels leave at zero). On a
    CPU device, one of a huge page or more lives in host memory asked for on huge pages
    (``huge_page_host_buffer``)."""
    import pyopencl as cl

    nbytes = max(4, nbytes)
    if nbytes >= HUGE_PAGE and all(d.type & cl.device_type.CPU for d in context.devices):
        buf = huge_page_host_buffer(context, nbytes)
        if buf is not None:
            return buf  # (anonymous memory starts zeroed)
    if not zeroed:
        return cl.Buffer(context, cl.mem_flags.READ_WRITE, nbytes)
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    return cl.Buffer(context, flags, hostbuf=np.zeros(nbytes, np.uint8))


def huge_page_host_buffer(context: Any, nbytes: int) -> Any | None:
    """A buffer over private anonymous memory advised onto transparent huge pages
    (``MADV_HUGEPAGE``), which a CPU device uses in place (``USE_HOST_PTR``); None where the
    system has no such advice. A kernel that walks down a large buffer's rows, each on a page
    of its own (the CPU GEMM's padded copy of B at 2048^3: 2048 pages a work-item), misses
    the TLB at every row on 4 KiB pages: on PoCL (Intel Xeon VM), 2048^3 188 -> 230 GFLOP/s
    and 1024x1024x2048 225 -> 286 on huge pages. The buffer keeps its memory alive
    (pyopencl holds the host array of a ``USE_HOST_PTR`` buffer)."""
    import mmap

    import pyopencl as cl

    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    private = getattr(mmap, "MAP_PRIVATE", None)
    if advice is None or private is None:
        return None
    size = -(-nbytes // HUGE_PAGE) * HUGE_PAGE
    memory = mmap.mmap(-1, size, flags=private | mmap.MAP_ANONYMOUS)
    try:
        memory.madvise(advice)
    except OSError:  # transparent huge pages off
        memory.close()
        return None
    host = np.frombuffer(memory, np.uint8)
    return cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR, hostbuf=host)
