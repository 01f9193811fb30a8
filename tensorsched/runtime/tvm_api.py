"""TVM's runtime names over tensorsched's OpenCL runtime: device handles (``ts.opencl(0)``,
``ts.cpu(0)``, ``ts.device("opencl", 0)``), the names a built module answers to
(``entry_name``, ``mod[name]``, ``imported_modules``) and TVM's ``time_evaluator`` loop;
the target kinds that ``target.py`` maps to OpenCL devices.

tensorsched writes OpenCL C only. A CPU target (``"llvm"``, ``"c"``) builds for the CPU OpenCL
device with a note (``TargetNote``); a GPU target of another API (``"cuda"``, ``"rocm"``,
``"metal"``, ``"vulkan"``) is a ``TargetError`` naming ``"opencl"``. ``ts.cpu(0)`` stands for the
host: its arrays live in host memory, as TVM's do, and a module on any device takes them
(copying them in and the outputs back); ``ts.opencl(i)``'s arrays live on that OpenCL device.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import RuntimeCallError, TensorschedError
from .device import CHECKING_PLATFORMS, Device, DeviceError, all_devices, current_device


class TargetError(TensorschedError):
    """A target or device that tensorsched cannot compile for or run on."""


class TargetNote(UserWarning):
    """A TVM target was mapped to an OpenCL device (``"llvm"`` -> the CPU OpenCL device)."""


# TVM's DLPack device type codes, for ``DeviceHandle.device_type``
DEVICE_TYPES = {"cpu": 1, "cuda": 2, "opencl": 4, "vulkan": 7, "metal": 8, "rocm": 10}
# other spellings TVM accepts for a device or a target kind
KIND_ALIASES = {
    "llvm": "cpu",
    "c": "cpu",
    "stackvm": "cpu",
    "cl": "opencl",
    "gpu": "cuda",
    "nvptx": "cuda",
    "spirv": "vulkan",
    "mtl": "metal",
}
CPU_TARGETS = ("llvm", "c", "stackvm")
OTHER_GPU_APIS = ("cuda", "rocm", "metal", "vulkan")
TARGETS = ("opencl", "python", *CPU_TARGETS)


def _usable_devices() -> list[Device]:
    """The OpenCL devices in TVM's numbering: the device in use first (``TS_DEVICE``,
    ``set_device`` or the default), then the others in ``tensorsched devices`` order;
    simulators (Oclgrind) only where they are the device in use."""
    first = current_device()
    out = [first]
    for dev in all_devices():
        if dev.cl_device == first.cl_device:
            continue
        if any(c in dev.platform_name.lower() for c in CHECKING_PLATFORMS):
            continue
        out.append(_CACHE.setdefault((dev.platform_index, dev.device_index), dev))
    return out


# one Device object (and so one OpenCL context) per (platform, device) that is not in use
_CACHE: dict[tuple[int, int], Device] = {}


def _is_cpu(dev: Device) -> bool:
    import pyopencl

    return bool(dev.cl_device.type & pyopencl.device_type.CPU)


def cpu_opencl_device(index: int = 0) -> Device:
    """The ``index``-th CPU OpenCL device (the device in use first, if it is one); a
    ``DeviceError`` saying what to use instead where there is none."""
    devices = _usable_devices()
    cpus = [d for d in devices if _is_cpu(d)]
    if index < len(cpus):
        return cpus[index]
    listing = ", ".join(f"opencl({i}) '{d.name}'" for i, d in enumerate(devices)) or "none"
    raise DeviceError(
        f"there is no CPU OpenCL device number {index} here (OpenCL devices: {listing}); "
        "install one ('apt-get install pocl-opencl-icd'), or build with target='opencl' for "
        "the device in use, or target='python' to run without a device"
    )


class DeviceHandle:
    """A TVM-style device: ``kind`` (``"cpu"``, ``"opencl"``, or another API's name, which
    never exists here) and ``index``. ``ts.cpu(0)`` is the host (its OpenCL device, where
    one is needed, is the first CPU OpenCL device); ``ts.opencl(i)`` the ``i``-th OpenCL
    device, the device in use being ``opencl(0)``."""

    def __init__(self, kind: str, index: int = 0) -> None:
        kind = KIND_ALIASES.get(kind, kind)
        if kind not in DEVICE_TYPES:
            raise TargetError(
                f"unknown device '{kind}'; tensorsched runs on 'opencl' devices "
                "(ts.opencl(i)) and on the host, 'cpu' (ts.cpu(0))"
            )
        if not isinstance(index, int) or index < 0:
            raise TargetError(f"{kind}: device index must be an int >= 0, got {index!r}")
        self.kind, self.index = kind, index

    @property
    def device_type(self) -> int:
        return DEVICE_TYPES[self.kind]

    @property
    def device_id(self) -> int:
        return self.index

    @property
    def exist(self) -> bool:
        """Whether the device is there: the host always; an OpenCL device when there are
        more than ``index`` of them; another API's device never."""
        if self.kind == "cpu":
            return True
        if self.kind != "opencl":
            return False
        try:
            return self.index < len(_usable_devices())
        except (DeviceError, ImportError):
            return False

    @property
    def opencl_device(self) -> Device:
        """The OpenCL device that runs this device's kernels (for ``cpu``: the CPU OpenCL
        device); a ``TargetError`` for another API's device."""
        if self.kind == "cpu":
            return cpu_opencl_device(self.index)
        if self.kind != "opencl":
            raise self.other_api_error()
        devices = _usable_devices()
        if self.index >= len(devices):
            listing = ", ".join(f"opencl({i}) '{d.name}'" for i, d in enumerate(devices))
            raise DeviceError(f"there is no {self}; the OpenCL devices are: {listing}")
        return devices[self.index]

    def other_api_error(self) -> TargetError:
        """The error for using a device of an API tensorsched does not generate code for."""
        return TargetError(
            f"{self}: tensorsched writes OpenCL C only and has no {self.kind} runtime; "
            f"use ts.opencl({self.index}) (GPUs of every vendor have OpenCL drivers) and "
            "target='opencl'"
        )

    @property
    def device_name(self) -> str:
        return self.opencl_device.name

    @property
    def max_threads_per_block(self) -> int:
        return int(self.opencl_device.max_work_group_size)

    @property
    def max_shared_memory_per_block(self) -> int:
        return int(self.opencl_device.local_mem_size)

    @property
    def multi_processor_count(self) -> int:
        return int(self.opencl_device.cl_device.max_compute_units)

    def sync(self) -> None:
        """Wait for everything queued on the device (the host has nothing to wait for)."""
        if self.kind == "opencl":
            self.opencl_device.queue.finish()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeviceHandle) and (self.kind, self.index) == (
            other.kind,
            other.index,
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.index))

    def __repr__(self) -> str:
        return f"{self.kind}({self.index})"


def device(name: str | int, index: int = 0) -> DeviceHandle:
    """``ts.device("opencl", 0)``, ``ts.device("cpu")``, ``ts.device("llvm")`` (the host),
    ``ts.device("opencl -device=mali")`` (the first word names it) or a TVM device type code
    (``ts.device(4, 0)``)."""
    if isinstance(name, int):
        codes = {code: kind for kind, code in DEVICE_TYPES.items()}
        if name not in codes:
            raise TargetError(f"unknown device type code {name}; known: {codes}")
        return DeviceHandle(codes[name], index)
    words = str(name).split()
    return DeviceHandle(words[0] if words else "", index)


def cpu(index: int = 0) -> DeviceHandle:
    """The host (TVM's ``tvm.cpu``); kernels built for ``"llvm"`` run on its CPU OpenCL device."""
    return DeviceHandle("cpu", index)


def opencl(index: int = 0) -> DeviceHandle:
    """The ``index``-th OpenCL device; ``opencl(0)`` is the device in use (``TS_DEVICE``)."""
    return DeviceHandle("opencl", index)


cl = opencl  # TVM's alias


def cuda(index: int = 0) -> DeviceHandle:
    """A CUDA device: it never exists here (``exist`` is False); use ``opencl``."""
    return DeviceHandle("cuda", index)


def rocm(index: int = 0) -> DeviceHandle:
    """A ROCm device: it never exists here (``exist`` is False); use ``opencl``."""
    return DeviceHandle("rocm", index)


def metal(index: int = 0) -> DeviceHandle:
    """A Metal device: it never exists here (``exist`` is False); use ``opencl``."""
    return DeviceHandle("metal", index)


def vulkan(index: int = 0) -> DeviceHandle:
    """A Vulkan device: it never exists here (``exist`` is False); use ``opencl``."""
    return DeviceHandle("vulkan", index)


class ModuleNames:
    """The names a TVM runtime module answers to, for modules with a lowered ``func``:
    ``entry_name``, ``mod[name]`` / ``get_function(name)`` (the module itself: it holds one
    function), ``imported_modules`` (the module itself, whose ``get_source()`` is the
    kernel source, as a TVM host module's device module is)."""

    func: Any
    type_key: str = "opencl"

    @property
    def entry_name(self) -> str:
        return str(self.func.name)

    def get_function(self, name: str) -> Any:
        """The module's function ``name``: the module itself, which holds one."""
        if name != self.entry_name:
            raise RuntimeCallError(
                f"module has no function '{name}'; its one function is '{self.entry_name}' "
                "(the name given to ts.build(..., name=...))"
            )
        return self

    def __getitem__(self, name: str) -> Any:
        return self.get_function(name)

    @property
    def imported_modules(self) -> list[Any]:
        return [self]

    def check_device(self, dev: Any) -> None:
        """``time_evaluator``'s ``dev``: a device handle (``ts.opencl(0)``, ``ts.cpu(0)``)
        or None."""
        if dev is not None and not isinstance(dev, DeviceHandle):
            raise RuntimeCallError(
                f"time_evaluator: dev must be a device such as ts.opencl(0), got {dev!r}"
            )
        if isinstance(dev, DeviceHandle) and dev.kind not in ("cpu", "opencl"):
            raise dev.other_api_error()


# what a measurement of ``number`` calls gives: mean device seconds a call, per kernel, and
# mean host (wall clock) seconds a call
Run = tuple[float, dict[str, float], float]


@dataclass(frozen=True)
class TimerOptions:
    """TVM's ``time_evaluator`` options beyond ``number`` and ``repeat`` that tensorsched
    honours (``cache_flush_bytes`` and ``f_preproc`` only at their defaults)."""

    min_repeat_ms: float = 0.0
    limit_zero_time_iterations: int = 100
    cooldown_interval_ms: float = 0.0
    repeats_to_cooldown: int = 1

    @classmethod
    def of(
        cls, number: int, repeat: int, min_repeat_ms: float = 0.0, **options: Any
    ) -> TimerOptions:
        """Check ``time_evaluator``'s arguments when it is called, not when it measures."""
        if number < 1 or repeat < 1:
            raise RuntimeCallError(
                f"time_evaluator: number ({number}) and repeat ({repeat}) must be >= 1"
            )
        kept = {}
        for key, value in options.items():
            if key in ("limit_zero_time_iterations", "cooldown_interval_ms", "repeats_to_cooldown"):
                kept[key] = value
            elif (key, value) not in (("cache_flush_bytes", 0), ("f_preproc", "")):
                raise RuntimeCallError(
                    f"time_evaluator: {key}={value!r} is not supported; it takes number, "
                    "repeat, min_repeat_ms, limit_zero_time_iterations, cooldown_interval_ms "
                    "and repeats_to_cooldown"
                )
        return cls(float(min_repeat_ms), **kept)


def benchmark(
    measure: Callable[[int], Run], number: int, repeat: int, opts: TimerOptions
) -> list[Run]:
    """TVM's ``time_evaluator`` loop: ``repeat`` measurements of ``number`` calls each
    (``measure(number)``). With ``min_repeat_ms``, a measurement whose calls took less than
    that on the device is taken again with more calls (as many as its time suggests, at
    least 1.6 times as many; after ``limit_zero_time_iterations`` measurements of zero time,
    as when the kernels have nothing to compute, it is kept), and later measurements keep
    the larger number. After every ``repeats_to_cooldown`` measurements, it sleeps
    ``cooldown_interval_ms``."""
    runs: list[Run] = []
    zero_times = 0
    for r in range(repeat):
        run = measure(number)
        while run[0] * number * 1e3 < opts.min_repeat_ms:
            if run[0] <= 0:
                zero_times += 1
                if zero_times >= opts.limit_zero_time_iterations:
                    break
            per_call_ms = max(run[0] * 1e3, 1e-6)
            number = max(int(opts.min_repeat_ms / per_call_ms) + 1, int(number * 1.618) + 1)
            run = measure(number)
        runs.append(run)
        if opts.cooldown_interval_ms > 0 and (r + 1) % max(opts.repeats_to_cooldown, 1) == 0:
            time.sleep(opts.cooldown_interval_ms * 1e-3)
    return runs
