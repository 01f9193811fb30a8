"""``tensorsched worker SCHEDULER``: Dask workers for tuning on a cluster (the ``distributed``
extra). One worker process holds this host's OpenCL devices (all but the checking simulators,
or those ``--device`` names), each advertised as a resource ``opencl:NAME`` (one per device,
``distributed.resource_name``), and measures on them one trial at a time per device while it
also builds; ``--build-workers N`` more processes only build. They run until interrupted
(Ctrl-C, SIGTERM) or until the scheduler goes away.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import sys
from collections.abc import Sequence
from typing import Any

from ..errors import TensorschedError
from ..tune.distributed import WORKER_ENV, device_resources, host_devices


def worker_specs(
    devices: Sequence[str] = (),
    build_workers: int = 0,
    resources: str = "",
    nthreads: int = 2,
) -> list[dict[str, Any]]:
    """The options of each worker process: the first holds the devices (and ``resources``,
    ``dask worker --resources`` text such as ``"MEM=64e9"``), the others only build."""
    held = device_resources(host_devices(devices))
    if not held:
        raise TensorschedError(
            "this host has no OpenCL device to advertise (tensorsched devices lists them); "
            "start build-only workers with 'dask worker ADDRESS' instead"
        )
    for pair in resources.replace(",", " ").split():
        name, eq, amount = pair.partition("=")
        try:
            held[name] = float(amount)
        except ValueError:
            raise TensorschedError(
                f"--resources {pair!r}: write NAME=AMOUNT pairs, e.g. 'MEM=64e9 SSD=1'"
            ) from None
        if not eq or not name:
            raise TensorschedError(f"--resources {pair!r}: write NAME=AMOUNT pairs")
    me = f"{socket.gethostname()}-{os.getpid()}"  # worker names are unique in a cluster
    specs = [{"nthreads": nthreads, "resources": held, "name": f"{me}-devices"}]
    specs += [{"nthreads": 1, "name": f"{me}-build-{i}"} for i in range(build_workers)]
    return [{**spec, "env": WORKER_ENV} for spec in specs]


def run_worker(address: str, specs: Sequence[dict[str, Any]]) -> None:
    """Start a Dask nanny (and its worker process) per spec, joined to the scheduler at
    ``address``; return when they close."""
    try:
        import dask
        from distributed import Nanny
    except ImportError:
        raise TensorschedError(
            "tensorsched worker needs Dask distributed: pip install 'tensorsched[distributed]'"
        ) from None
    # a worker starts a measuring process of its own (the tuner's Runner): no daemon
    dask.config.set({"distributed.worker.daemon": False})

    async def serve() -> None:
        nannies = [Nanny(address, **spec) for spec in specs]
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(
                sig, lambda: [asyncio.ensure_future(n.close(reason="signal")) for n in nannies]
            )
        try:
            await asyncio.wait_for(asyncio.gather(*nannies), timeout=60)
        except (OSError, asyncio.TimeoutError) as exc:
            for n in nannies:
                await n.close(reason="start failed")
            raise TensorschedError(
                f"cannot join the Dask scheduler at {address} ({exc or 'timed out'}); start one "
                "with 'dask scheduler' and give its address (tcp://HOST:8786)"
            ) from None
        held = specs[0]["resources"]
        print(
            f"tensorsched worker: {len(nannies)} worker process(es) joined {address}; "
            f"devices: {', '.join(f'{k}={v:g}' for k, v in held.items())}",
            file=sys.stderr,
            flush=True,
        )
        await asyncio.gather(*(n.finished() for n in nannies))

    asyncio.run(serve())


def add_worker_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "worker",
        help="a Dask worker for tuning on a cluster: it advertises this host's OpenCL devices",
    )
    p.add_argument("scheduler", help="the Dask scheduler's address, e.g. tcp://10.0.0.1:8786")
    p.add_argument(
        "--device",
        action="append",
        metavar="SPEC",
        help="advertise only this device: P:D or part of its name (repeatable; default: all "
        "but Oclgrind)",
    )
    p.add_argument(
        "--build-workers",
        type=int,
        default=0,
        metavar="N",
        help="N more worker processes that only build (e.g. one per spare core)",
    )
    p.add_argument(
        "--resources",
        default="",
        help="more resources for the device worker, as dask worker takes them: 'MEM=64e9'",
    )
    p.add_argument("--nthreads", type=int, default=2, help="threads of the device worker")
    return p


def cmd_worker(args: argparse.Namespace) -> None:
    if args.build_workers < 0 or args.nthreads < 1:
        raise TensorschedError("--build-workers must be >= 0 and --nthreads >= 1")
    specs = worker_specs(args.device or (), args.build_workers, args.resources, args.nthreads)
    run_worker(args.scheduler, specs)
