"""Tuning on a Dask cluster (the ``distributed`` extra): the driver's side (``Cluster``) and the
functions its workers run.

A worker advertises each OpenCL device of its host as a Dask *resource* named
``resource_name(device)`` (``opencl:`` and the device's name with every run of characters
other than letters, digits and ``_.:/+-`` made one ``_``, so that ``dask worker --resources``
parses it: ``"NVIDIA H200"`` is ``opencl:NVIDIA_H200``), its quantity the number of such devices
it holds. Builds (``remote_build``: instantiate, lower, generate, filter and, on a worker that
holds the device, compile) go to any worker; measurements (``remote_measure``) ask for one unit
of the device's resource, so they run only on workers holding it, one at a time per device, in
the same ``Runner`` as the single-process tuner (a worker process with a timeout, on inputs
that stay on the device). The driver alone writes the log (``tuner.ClusterSearch``).

Nothing here imports dask until a ``Cluster`` is made: ``import tensorsched`` and a plain
``tune`` never do.
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import TensorschedError
from ..runtime.device import (
    CHECKING_PLATFORMS,
    Device,
    DeviceError,
    DeviceLimits,
    all_devices,
    current_device,
    find_device,
)
from .measure import Runner, prebuild
from .workers import import_modules

RESOURCE_PREFIX = "opencl:"
# a worker process's environment: pyopencl's notice that a build logged something (NVIDIA's
# and PoCL's do) is left out, as the command line leaves it out
WORKER_ENV = {"PYTHONWARNINGS": "ignore:Non-empty compiler output encountered"}
HOLDER_WAIT_S = 120.0  # how long measurements wait for a worker holding their device
CONNECT_TIMEOUT_S = 30.0


class ClusterError(TensorschedError):
    """The cluster cannot be reached, holds no worker with the device, or lost all of them."""


def resource_name(device_name: str) -> str:
    """The Dask resource that stands for an OpenCL device named ``device_name``."""
    return RESOURCE_PREFIX + re.sub(r"[^A-Za-z0-9_.:/+\-]+", "_", device_name.strip())


def host_devices(spec: Iterable[str] = ()) -> list[tuple[str, str]]:
    """``(P:D, name)`` of this host's OpenCL devices a worker advertises: those ``spec`` names
    (``P:D`` or part of a name, as ``TS_DEVICE``), or by default every device but the
    checking simulators (Oclgrind)."""
    wanted = list(spec)
    out = []
    for pd, name, platform in _host_table():
        if wanted:
            hit = any(
                w == pd or (":" not in w and w.lower() in f"{platform} {name}".lower())
                for w in wanted
            )
        else:
            hit = not any(c in platform.lower() for c in CHECKING_PLATFORMS)
        if hit:
            out.append((pd, name))
    if wanted and not out:
        listing = "; ".join(f"{pd} {name}" for pd, name, _ in _host_table())
        raise ClusterError(
            f"no OpenCL device of this host matches {', '.join(wanted)}; devices are: "
            f"{listing or 'none'}"
        )
    return out


@functools.cache
def _host_table() -> tuple[tuple[str, str, str], ...]:
    """``(P:D, device name, platform name)`` of every OpenCL device of this host (read once)."""
    return tuple(
        (f"{d.platform_index}:{d.device_index}", d.name, d.platform_name) for d in all_devices()
    )


@functools.cache
def _host_device(pd: str) -> Device:
    """This host's device ``pd`` (``P:D``), one per process (it holds the device's context)."""
    return find_device(pd)


def _limits_name(pd: str) -> str:
    """The device name a log records (``DeviceLimits.name``) of this host's device ``pd``."""
    return DeviceLimits.of(_host_device(pd)).name


def device_resources(devices: Iterable[tuple[str, str]]) -> dict[str, float]:
    """The worker resources that advertise ``devices`` (``host_devices``' pairs)."""
    out: dict[str, float] = {}
    for _, name in devices:
        res = resource_name(name)
        out[res] = out.get(res, 0.0) + 1.0
    return out


# ---------------------------------------------------------------------------- worker side

_LOCK = threading.Lock()
_FREE: dict[str, queue.Queue[str]] = {}  # resource -> this process's idle devices (P:D)
_TAKEN_OUT: set[str] = set()  # devices (P:D) of this process taken out of the pool
_RUNNERS: dict[str, Runner] = {}  # device (P:D) -> its measuring process


def _slots(resource: str) -> queue.Queue[str]:
    with _LOCK:
        if resource not in _FREE:
            _FREE[resource] = queue.Queue()
            for pd, name, _ in _host_table():
                if resource_name(name) == resource and pd not in _TAKEN_OUT:
                    _FREE[resource].put(pd)
        return _FREE[resource]


def remote_limits(resource: str) -> tuple[DeviceLimits, bool]:
    """On a worker: the limits of its device that ``resource`` stands for, and whether it is a
    GPU."""
    for pd, name, _ in _host_table():
        if resource_name(name) == resource:
            dev = _host_device(pd)
            return DeviceLimits.of(dev), bool(dev.is_gpu)
    raise ClusterError(f"worker on {socket.gethostname()} holds no device {resource}")


def local_device_name() -> str | None:
    """This host's device name, if it has one (the device a cluster tunes for by default)."""
    try:
        return current_device().name
    except (DeviceError, ImportError):
        return None


def remote_build(
    task_dict: dict, config: dict, limits: DeviceLimits, modules: tuple[str | bytes, ...]
) -> tuple[str, str, bytes | None]:
    """On a worker: ``prebuild``'s ``(status, error, artifact)``, its program compiled where
    this host has the device of ``limits`` (a cache hit for the measuring worker), else the
    source only."""
    try:
        import_modules(modules)
    except Exception as exc:  # noqa: BLE001
        return "error", f"worker on {socket.gethostname()}: {type(exc).__name__}: {exc}", None
    here = [_host_device(pd) for pd, _, _ in _host_table() if _limits_name(pd) == limits.name]
    return prebuild(task_dict, config, here[0] if here else None, limits, compile=bool(here))


def remote_measure(
    task_dict: dict,
    config: dict,
    artifact: bytes | None,
    repeat: int,
    budget_ms: float | None,
    timeout: float,
    limits: DeviceLimits,
    modules: tuple[str | bytes, ...],
    specs: tuple | None,
    resource: str,
) -> dict[str, Any]:
    """On a worker holding ``resource``: measure one candidate on an idle device of it, in that
    device's ``Runner`` (kept from one trial to the next); the result says where: ``_host``,
    ``_worker`` (its address) and ``_device`` (``P:D`` there)."""
    from distributed import get_worker

    free = _slots(resource)
    try:
        slot = free.get(timeout=HOLDER_WAIT_S)
    except queue.Empty:
        raise ClusterError(f"no idle device {resource} on {socket.gethostname()}") from None
    try:
        runner = _RUNNERS.get(slot)
        if runner is None or (runner.timeout, runner.modules) != (timeout, modules):
            if runner is not None:  # another tuning run's: one measuring process per device
                runner.close()
            runner = _RUNNERS[slot] = Runner(slot, timeout, task_dict, specs, limits, modules)
        res = runner.measure(task_dict, config, repeat, artifact, budget_ms)
    finally:
        if slot not in _TAKEN_OUT:
            free.put(slot)
    res.update(_host=socket.gethostname(), _device=slot, _worker=get_worker().address)
    return res


async def _take_out(resource: str, slot: str, dask_worker: Any = None) -> float:
    """On a worker: stop measuring on device ``slot`` (``P:D``): one unit less of
    ``resource``. Returns what is left of it."""
    free = _slots(resource)
    with _LOCK:
        _TAKEN_OUT.add(slot)
        kept = []
        while not free.empty():
            pd = free.get_nowait()
            if pd != slot:
                kept.append(pd)
        for pd in kept:
            free.put(pd)
    left = max(0.0, dask_worker.state.total_resources.get(resource, 0.0) - 1.0)
    await dask_worker.set_resources(**{resource: left})
    return left


# ---------------------------------------------------------------------------- driver side


class Cluster:
    """The driver's connection to a Dask cluster: ``Cluster("tcp://host:8786")`` joins a
    running scheduler; ``Cluster("local")`` starts one here with ``workers`` processes
    (default: one per core), the first ``device_workers`` of which hold this host's OpenCL
    devices (each one measurement at a time), the others only build. Use it as a context
    manager, or ``close()`` it; ``tune(..., cluster=...)`` takes one (or an address)."""

    def __init__(
        self,
        address: str = "local",
        workers: int | None = None,
        device_workers: int = 1,
        devices: Iterable[str] = (),
    ):
        try:
            import dask
            from distributed import Client
        except ImportError:
            raise ClusterError(
                "tuning on a cluster needs Dask distributed: pip install 'tensorsched[distributed]'"
            ) from None
        # workers start a measuring process of their own (the Runner): they cannot be daemons
        dask.config.set({"distributed.worker.daemon": False})
        self.address = address
        self._local: Any = None
        if address == "local":
            self._local = _start_local(workers, device_workers, devices)
            self.client = Client(self._local, set_as_default=False)
        else:
            try:
                _check_address(address)  # a Client made from a bad one lingers at exit
                self.client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
            except (OSError, TimeoutError, ValueError) as exc:
                raise ClusterError(
                    f"cannot reach the Dask scheduler at {address} ({exc}); start one with "
                    "'dask scheduler' and workers with 'tensorsched worker ADDRESS'"
                ) from None
        self.address = self.client.scheduler.address
        self._threads = threading.local()  # each thread's event, set as its futures finish
        self._gpu: dict[str, bool] = {}  # device resource -> whether it is a GPU

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()
        if self._local is not None:
            self._local.close()

    # ---- the workers and their devices

    def workers(self) -> dict[str, dict]:
        """The live workers: address -> the scheduler's info (``host``, ``resources`` ...)."""
        return dict(self.client.scheduler_info(n_workers=-1)["workers"])

    def holders(self) -> dict[str, list[str]]:
        """Device resource -> the addresses of the live workers holding some of it."""
        out: dict[str, list[str]] = {}
        for addr, info in self.workers().items():
            for res, n in (info.get("resources") or {}).items():
                if res.startswith(RESOURCE_PREFIX) and n > 0:
                    out.setdefault(res, []).append(addr)
        return out

    def slots(self) -> int:
        """Worker threads in all (builds and measurements in flight at once)."""
        return sum(int(w.get("nthreads", 1)) for w in self.workers().values()) or 1

    def target(self, device: str | None) -> tuple[str, DeviceLimits]:
        """``(resource, limits)`` of the device to tune for: the one ``device`` names (part of
        a name), else the only kind the cluster holds, else this host's device where the
        cluster holds it."""
        held = self._wait_for_devices()
        local_name = None if device or len(held) == 1 else local_device_name()
        if device:
            want = resource_name(device)[len(RESOURCE_PREFIX) :].lower()
            hits = [r for r in held if want in r.lower()]
        elif len(held) == 1:
            hits = list(held)
        else:
            hits = [r for r in held if local_name and r == resource_name(local_name)]
        if len(hits) != 1:
            kinds = ", ".join(sorted(held))
            what = f"device '{device}'" if device else "which device to tune for"
            raise ClusterError(
                f"the cluster at {self.address} holds the devices {kinds}: "
                f"{'no single match for ' if device else 'say '}{what} (device=..., --device)"
            )
        res = hits[0]
        fut = self.client.submit(remote_limits, res, workers=held[res], pure=False)
        limits, self._gpu[res] = fut.result(timeout=HOLDER_WAIT_S)
        return res, limits

    def is_gpu(self, device: str | None) -> bool:
        """Whether the device ``target(device)`` picks is a GPU."""
        res, _ = self.target(device)
        return self._gpu[res]

    def _wait_for_devices(self) -> dict[str, list[str]]:
        t0 = time.time()
        while True:
            held = self.holders()
            if held:
                return held
            if time.time() - t0 > CONNECT_TIMEOUT_S:
                raise ClusterError(
                    f"no worker of the cluster at {self.address} holds an OpenCL device (a "
                    f"resource {RESOURCE_PREFIX}NAME); start one with 'tensorsched worker "
                    f"{self.address}' on a host with the device"
                )
            time.sleep(0.2)

    def check_holders(self, resource: str, since: float) -> None:
        """``ClusterError`` when no live worker has held ``resource`` for ``HOLDER_WAIT_S``
        since ``since`` (measurements would wait forever)."""
        if resource in self.holders() or time.time() - since < HOLDER_WAIT_S:
            return
        raise ClusterError(
            f"no worker of the cluster at {self.address} has held the device {resource} for "
            f"{HOLDER_WAIT_S:.0f} s (its workers died or it was taken out); start 'tensorsched "
            f"worker {self.address}' on a host with it and rerun with --resume"
        )

    # ---- tasks

    def build(
        self, task_dict: dict, config: dict, limits: DeviceLimits, modules: tuple[str | bytes, ...]
    ) -> Any:
        """The future of a candidate's build, on any worker."""
        fut = self.client.submit(remote_build, task_dict, config, limits, modules, pure=False)
        return self._watch(fut)

    def measure(self, resource: str, *args: Any) -> Any:
        """The future of a candidate's measurement (``remote_measure``'s arguments after
        ``resource``) on a worker holding ``resource``; measurements go before builds."""
        fut = self.client.submit(
            remote_measure, *args, resource, pure=False, resources={resource: 1}, priority=10
        )
        return self._watch(fut)

    def _event(self) -> threading.Event:
        """This thread's event (searches in several threads share a cluster)."""
        if not hasattr(self._threads, "event"):
            self._threads.event = threading.Event()
        return self._threads.event

    def _watch(self, fut: Any) -> Any:
        event = self._event()
        fut.add_done_callback(lambda _: event.set())
        return fut

    def wait(self, futures: Iterable[Any], timeout: float) -> list[Any]:
        """The futures of ``futures`` (submitted by this thread) that are done, waiting up to
        ``timeout`` s for one."""
        futures, event = list(futures), self._event()
        event.clear()  # before looking: a future done after this sets it again
        done = [f for f in futures if f.done()]
        if not done:
            event.wait(timeout)
            done = [f for f in futures if f.done()]
        return done

    def outcome(self, fut: Any) -> tuple[str, Any]:
        """``("ok", result)``, ``("killed", why)`` (its task killed the workers that ran it),
        ``("lost", why)`` (cancelled, or its worker vanished: run it again) or
        ``("raised", why)`` of a finished future."""
        from distributed import KilledWorker

        if fut.status == "finished":
            return "ok", fut.result()
        if fut.status == "cancelled":
            return "lost", "the scheduler cancelled it"
        exc = fut.exception()
        if isinstance(exc, KilledWorker):
            return "killed", f"it killed the workers that ran it ({exc})"
        if isinstance(exc, (OSError, TimeoutError)):
            return "lost", f"{type(exc).__name__}: {exc}"
        return "raised", f"{type(exc).__name__}: {exc}"[:2000]

    def cancel(self, futures: Iterable[Any]) -> None:
        futures = list(futures)
        if futures:
            self.client.cancel(futures)

    def take_out(self, resource: str, worker: str, pd: str) -> set[str]:
        """Stop measuring on the device ``pd`` (``P:D``) of the worker ``worker``; returns the
        keys of the tasks the scheduler had sent it already (they wait there for the device
        now: send them again)."""
        try:
            self.client.run(_take_out, resource, pd, workers=[worker])
            return set(self.client.processing([worker]).get(worker, ()))
        except (OSError, TimeoutError, KeyError, ValueError):
            return set()  # the worker is gone already: the scheduler sends its tasks elsewhere


def _check_address(address: str) -> None:
    """``ValueError`` for an address Dask cannot connect to (no port, say)."""
    from distributed.comm.addressing import parse_address, parse_host_port

    scheme, location = parse_address(address)
    if scheme in ("tcp", "tls"):
        parse_host_port(location)


def _start_local(workers: int | None, device_workers: int, devices: Iterable[str]) -> Any:
    """A Dask cluster of worker processes on this host (a scheduler and nannies in this
    process); the first ``device_workers`` hold the OpenCL devices."""
    from distributed import Nanny, Scheduler, SpecCluster

    n = workers or os.cpu_count() or 2
    if not 1 <= device_workers <= n:
        raise ClusterError(
            f"device_workers must be between 1 and workers ({n}), not {device_workers}"
        )
    resources = device_resources(host_devices(devices))
    if not resources:
        raise ClusterError("this host has no OpenCL device to measure on")
    spec = {
        f"tensorsched-{i}": {
            "cls": Nanny,
            "options": {
                "nthreads": 2 if i < device_workers else 1,
                "resources": resources if i < device_workers else {},
                "silence_logs": logging.ERROR,
                "env": WORKER_ENV,
            },
        }
        for i in range(n)
    }
    scheduler = {
        "cls": Scheduler,
        "options": {"host": "127.0.0.1", "port": 0, "dashboard": False, "dashboard_address": ":0"},
    }
    return SpecCluster(workers=spec, scheduler=scheduler, silence_logs=logging.ERROR)


def cluster_of(cluster: str | Cluster | Any) -> tuple[Cluster, Callable[[], None]]:
    """A ``Cluster`` for ``tune``'s ``cluster=`` (an address, ``"local"`` or a ``Cluster``)
    and what to call when the tuning is done (closing it if ``tune`` made it)."""
    if isinstance(cluster, Cluster):
        return cluster, lambda: None
    if not isinstance(cluster, str) or not cluster:
        raise ClusterError(
            f"cluster must be a scheduler's address, 'local' or a Cluster, not {cluster!r}"
        )
    made = Cluster(cluster)
    return made, made.close
