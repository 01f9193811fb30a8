"""Choosing the OpenCL device, by API (``set_device``) or by the environment (``TS_DEVICE``).

``TS_DEVICE`` is ``P:D`` (platform and device indices, as ``tensorsched devices`` lists them)
or a case-insensitive part of the device or platform name (``TS_DEVICE=pthread``). Without a
choice the first GPU is taken, else the first CPU device whose compiler builds a probe kernel;
a platform that fails to list its devices is skipped with a warning naming it. Oclgrind (a
checking simulator that calls itself a GPU) is used only when named. PoCL's worker threads
are pinned to cores (``POCL_AFFINITY=1``) unless the environment says otherwise.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TensorschedError

# pyopencl is imported inside the functions that use it, so that ``import tensorsched`` works
# without an OpenCL driver (and skips pyopencl's ~0.17 s import) until a kernel runs.

ENV_VAR = "TS_DEVICE"
PROBE_SOURCE = "__kernel void probe(__global float* x) { x[get_global_id(0)] *= 2.0f; }\n"


class DeviceError(TensorschedError):
    """No usable OpenCL device, or the one asked for does not exist."""


@dataclass(eq=False)
class Device:
    """An OpenCL device with its context, a profiling queue (``queue``: every timed run and
    every array ``ts.nd`` makes) and a queue without profiling (``run_queue``: a network's
    calls, whose launches cost less there)."""

    cl_device: Any  # pyopencl.Device
    platform_index: int
    device_index: int
    _ctx: Any = field(default=None, repr=False)
    _queue: Any = field(default=None, repr=False)
    _run_queue: Any = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.cl_device.name.strip()

    @property
    def platform_name(self) -> str:
        return self.cl_device.platform.name.strip()

    @property
    def key(self) -> tuple[str, str, str]:
        """(platform, device, driver version): what a built program binary is valid for."""
        return (self.platform_name, self.name, self.cl_device.driver_version)

    @property
    def context(self) -> Any:
        if self._ctx is None:
            import pyopencl as cl

            self._ctx = cl.Context([self.cl_device])
        return self._ctx

    @property
    def queue(self) -> Any:
        if self._queue is None:
            import pyopencl as cl

            self._queue = cl.CommandQueue(
                self.context, properties=cl.command_queue_properties.PROFILING_ENABLE
            )
        return self._queue

    @property
    def run_queue(self) -> Any:
        """An in-order queue without profiling, for work that is not timed and finishes
        before its results are used (``Net.__call__``). NVIDIA's OpenCL (H200, driver 580)
        takes about 12 us a launch on a profiling queue and 6 us on this one
        (benchmarks/gpu/timing_probe.py); no two queues are ordered with each other, so a
        caller drains one before the other touches the same buffers."""
        if self._run_queue is None:
            import pyopencl as cl

            self._run_queue = cl.CommandQueue(self.context)
        return self._run_queue

    @property
    def max_work_group_size(self) -> int:
        return self.cl_device.max_work_group_size

    @property
    def max_work_item_sizes(self) -> tuple[int, ...]:
        return tuple(self.cl_device.max_work_item_sizes)

    @property
    def local_mem_size(self) -> int:
        return self.cl_device.local_mem_size

    @property
    def has_fp16(self) -> bool:
        return "cl_khr_fp16" in self.cl_device.extensions

    @property
    def is_cpu(self) -> bool:
        """A CPU device: its kernels run on the cores this process and its helpers use."""
        import pyopencl as cl

        return bool(self.cl_device.type & cl.device_type.CPU)

    @property
    def is_gpu(self) -> bool:
        import pyopencl as cl

        return bool(self.cl_device.type & cl.device_type.GPU)

    def probe(self) -> str | None:
        """``None`` when a trivial kernel builds and runs correctly, else the error text."""
        import pyopencl as cl

        try:
            prg = cl.Program(self.context, PROBE_SOURCE).build()
            x = np.arange(4, dtype=np.float32)
            buf = cl.Buffer(
                self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=x
            )
            prg.probe(self.queue, (4,), None, buf)
            out = np.empty_like(x)
            cl.enqueue_copy(self.queue, out, buf)
            return None if np.array_equal(out, 2 * x) else "probe kernel computed wrong values"
        except Exception as exc:  # noqa: BLE001
            return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"


# PoCL's CPU device runs a kernel's work-groups on one worker thread a core; left to the OS,
# two of them at times share a core, and the kernel runs at half speed for a while (2-core
# VMs, AMD and Intel: the same kernel 1.9 or 3.9 ms a call, in blocks). Pinned (PoCL's
# POCL_AFFINITY=1, which it reads when its platform is first listed), they do not: GEMM
# 1500x700x300 on the Intel VM, medians of 3 x 200 calls 205/264/228 -> 262/276/270 GFLOP/s
# (its lowest tenth 129-138 -> 249-261). A user's own setting is kept.
AFFINITY_VAR = "POCL_AFFINITY"


def all_devices() -> list[Device]:
    """Every device of every platform that lists its devices, in (platform, device) order."""
    os.environ.setdefault(AFFINITY_VAR, "1")
    try:
        import pyopencl as cl

        platforms = cl.get_platforms()
    except Exception as exc:  # noqa: BLE001
        raise DeviceError(
            f"no OpenCL platform found ({exc}); install an OpenCL driver, e.g. "
            "'apt-get install pocl-opencl-icd'"
        ) from None
    out: list[Device] = []
    for p_i, p in enumerate(platforms):
        try:
            devs = p.get_devices()
        except Exception as exc:  # noqa: BLE001
            warnings.warn(f"OpenCL platform '{p.name}' skipped: {exc}", stacklevel=2)
            continue
        out += [Device(d, p_i, d_i) for d_i, d in enumerate(devs)]
    return out


def find_device(spec: str) -> Device:
    """The device ``spec`` names: ``"P:D"`` (platform and device indices) or a case-insensitive
    part of the device or platform name."""
    devices = all_devices()
    if ":" in spec and all(part.isdigit() for part in spec.split(":")):
        p, d = (int(x) for x in spec.split(":"))
        for dev in devices:
            if (dev.platform_index, dev.device_index) == (p, d):
                return dev
    else:
        for dev in devices:
            if spec.lower() in dev.name.lower() or spec.lower() in dev.platform_name.lower():
                return dev
    listing = "; ".join(f"{d.platform_index}:{d.device_index} {d.name}" for d in devices)
    raise DeviceError(f"no OpenCL device matches '{spec}'; devices are: {listing or 'none'}")


CHECKING_PLATFORMS = ("oclgrind",)  # simulators: used only when asked for by name


def default_device() -> Device:
    """The first GPU, else the first device that builds and runs a probe kernel (simulators
    such as Oclgrind are left out)."""
    devices = [
        d
        for d in all_devices()
        if not any(c in d.platform_name.lower() for c in CHECKING_PLATFORMS)
    ]
    for dev in devices:
        if dev.is_gpu:
            return dev
    for dev in devices:
        err = dev.probe()
        if err is None:
            return dev
        warnings.warn(
            f"OpenCL device '{dev.name}' on '{dev.platform_name}' skipped: {err}", stacklevel=2
        )
    raise DeviceError(
        "no OpenCL device can build a kernel; install one, e.g. 'apt-get install pocl-opencl-icd'"
    )


_current: Device | None = None


def set_device(spec: Device | str) -> Device:
    """Use the device ``spec`` (``"P:D"``, part of a name, or a ``Device``) from now on."""
    global _current
    _current = spec if isinstance(spec, Device) else find_device(spec)
    return _current


def current_device() -> Device:
    """The device in use: ``set_device``'s, else ``TS_DEVICE``'s, else the default."""
    global _current
    if _current is None:
        spec = os.environ.get(ENV_VAR)
        _current = find_device(spec) if spec else default_device()
    return _current


def resolve_device(device: Device | str | None = None) -> Device:
    """``device`` itself (a ``Device``), the device ``"P:D"`` or part of a name picks, or the
    device in use where it is ``None`` or empty."""
    if not device:
        return current_device()
    return find_device(device) if isinstance(device, str) else device


@dataclass(frozen=True)
class DeviceLimits:
    """What a device allows a kernel: read from the device (``DeviceLimits.of``), never
    hard-coded; the tuner's early filter and the templates' constraints (through
    ``Config.limits``) use it. ``PORTABLE_LIMITS`` stands in where no device can be found."""

    name: str
    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    local_mem_size: int
    compute_units: int = 1  # CL_DEVICE_MAX_COMPUTE_UNITS (1 where not read)
    # whether a work-group's global stores, a device-wide fence and an atomic increment after
    # them reach the work-group that increments last in that order (``ir.stmt.LastGroup``):
    # true of NVIDIA's GPUs (the fence there is CUDA's __threadfence()) and CPU devices
    # (coherent caches); OpenCL 1.2 does not promise it, and Oclgrind, which checks against
    # the standard, reports such a kernel's reads of other groups' stores as data races
    group_ordering: bool = False
    # a GPU (CL_DEVICE_TYPE_GPU): its compute units run several work-groups at once, as many
    # as their work-items and ``__local`` memory allow (a CPU device's cores one at a time)
    gpu: bool = False

    @classmethod
    def of(cls, device: Device | str | None = None) -> DeviceLimits:
        """The limits of ``device`` (a ``Device``, ``"P:D"`` or part of a name; default: the
        device in use)."""
        dev = resolve_device(device)
        return cls(
            f"{dev.platform_name} / {dev.name}",
            int(dev.max_work_group_size),
            tuple(int(x) for x in dev.max_work_item_sizes),
            int(dev.local_mem_size),
            max(1, int(getattr(dev.cl_device, "max_compute_units", 1))),
            group_ordering=_orders_groups(dev),
            gpu=dev.is_gpu,
        )


def _orders_groups(dev: Device) -> bool:
    import pyopencl as cl

    cl_dev, kind = dev.cl_device, cl.device_type
    cpu = cl_dev.type & kind.CPU and not cl_dev.type & kind.GPU  # Oclgrind says it is all kinds
    return bool(cpu or "nvidia" in cl_dev.platform.vendor.lower())


# What every OpenCL 1.2 device tensorsched targets allows: 256 work-items a work-group (Mali
# Midgard's maximum; the spec's minimum is 1, which no GPU has) and 32 KiB of __local memory
# (the full profile's minimum). Templates constrain against these when no device is found.
PORTABLE_LIMITS = DeviceLimits("portable OpenCL 1.2", 256, (256, 256, 256), 32 * 1024)


def current_limits() -> DeviceLimits:
    """The limits of the device in use (``set_device``, ``TS_DEVICE`` or the default), or
    ``PORTABLE_LIMITS`` where pyopencl or an OpenCL device is missing (a build worker with no
    device still instantiates templates)."""
    try:
        return DeviceLimits.of(current_device())
    except (DeviceError, ImportError):
        return PORTABLE_LIMITS
