"""Tuning throughput on Dask distributed: configs measured per minute by the single-process tuner
against ``tune(..., cluster=...)`` on a cluster of this host with N worker processes (the first
holds every OpenCL device of the kind tuned for, the others only build), for the same task and
the same random configs (``--seed``), each run from an empty log and empty kernel caches.

    python benchmarks/distributed.py --device NVIDIA --workers 4,16
    python benchmarks/distributed.py --device pthread --workers 2 --trials 24 --shape 128,128,128
    python benchmarks/distributed.py --scheduler tcp://10.0.0.1:8786 --device H200

``--scheduler ADDRESS`` adds a row for a cluster already running (a ``dask scheduler`` and
``tensorsched worker`` processes, as README's "Tuning on a cluster" starts them); its workers
keep the kernel caches of their own environment, so a second run of the same configs there
mostly hits the driver's cache (on an H200: 300 configs in 20.1 s, then 3.5 s): give each
run a fresh ``--seed``, or restart the workers with fresh ``CUDA_CACHE_PATH``. A run's time
is ``tune()``'s wall time: the measuring processes' start and the task's inputs included, the
local cluster's own start (printed apart) not. On a host with two GPUs of one kind the cluster
measures on both at once while the single process uses one: that is the point of the table's
last column. Nothing here needs a network beyond the host's loopback.
"""

import argparse
import os
import sys
import tempfile
import time
import warnings

from tensorsched.runtime.device import current_device, find_device
from tensorsched.runtime.table import print_table
from tensorsched.tune.distributed import Cluster, resource_name
from tensorsched.tune.log import read_log
from tensorsched.tune.task import Task
from tensorsched.tune.tuner import tune


def keep_dask_importable() -> None:
    """This file's name is Dask's package's: take its folder (which ``python FILE`` puts first)
    off the path, so that ``import distributed`` finds Dask's."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]


def fresh_caches(workdir: str) -> str:
    """A fresh folder for one run, with the kernel caches pointed into it (worker processes
    started after this inherit them)."""
    run_dir = tempfile.mkdtemp(dir=workdir)
    os.environ["POCL_CACHE_DIR"] = os.path.join(run_dir, "pocl-cache")
    os.environ["CUDA_CACHE_PATH"] = os.path.join(run_dir, "cuda-cache")
    return run_dir


def one_run(task, args, run_dir, device, cluster=None):
    log = os.path.join(run_dir, "log.jsonl")
    t0 = time.perf_counter()
    res = tune(
        task,
        log,
        strategy=args.strategy,
        trials=args.trials,
        seed=args.seed,
        repeat=args.repeat,
        timeout=args.timeout,
        device=device,
        progress=False,
        cluster=cluster,
        verify=0,  # the rate of trials alone, on the cluster and in one process alike
    )
    seconds = time.perf_counter() - t0
    records = read_log(log)
    assert len(records) == res.measured == args.trials, (len(records), res.counts)
    return seconds, res


def devices_held(cluster, resource):
    return int(sum(w["resources"].get(resource, 0) for w in cluster.workers().values()))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", help="part of the device's name (default: this host's default)")
    p.add_argument(
        "--workers", default=f"2,{os.cpu_count()}", help="local cluster sizes, e.g. 4,16"
    )
    p.add_argument("--device-workers", type=int, default=1, help="of them, those holding devices")
    p.add_argument("--scheduler", help="also time a running cluster at this address")
    p.add_argument("--template", help="default: gpu_tiled on a GPU, cpu otherwise")
    p.add_argument("--shape", help="M,N,K (default 1024^3 on a GPU, 256^3 otherwise)")
    p.add_argument("--trials", type=int, default=60)
    p.add_argument("--strategy", default="random", choices=["random", "model", "grid"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=3, help="timed runs per candidate, at most")
    p.add_argument("--timeout", type=float, default=60.0)
    args = p.parse_args(argv)
    keep_dask_importable()
    # pyopencl's notice that a build logged something (NVIDIA's and PoCL's do), as the CLI
    warnings.filterwarnings("ignore", message="Non-empty compiler output encountered")

    dev = find_device(args.device) if args.device else current_device()
    spec = f"{dev.platform_index}:{dev.device_index}"
    template = args.template or ("gpu_tiled" if dev.is_gpu else "cpu")
    shape = args.shape or ("1024,1024,1024" if dev.is_gpu else "256,256,256")
    task = Task("gemm", template, tuple(int(x) for x in shape.split(",")))
    print(f"{task} on {dev.name}: {args.trials} {args.strategy} configs (seed {args.seed}) a run")

    workdir = tempfile.mkdtemp(prefix="ts-bench-distributed-")
    rows = []
    seconds, res = one_run(task, args, fresh_caches(workdir), spec)
    base = res.measured / seconds * 60
    rows.append(["single process", "-", "1", f"{seconds:.1f}", f"{base:.1f}", "1.00x"])
    print(f"single process: {seconds:.1f} s", file=sys.stderr)

    clusters = [("local", int(n)) for n in args.workers.split(",") if n]
    if args.scheduler:
        clusters.append((args.scheduler, 0))
    for address, n in clusters:
        run_dir = fresh_caches(workdir)
        t0 = time.perf_counter()
        if address == "local":
            cluster = Cluster("local", workers=n, device_workers=args.device_workers)
        else:
            cluster = Cluster(address)
        start = time.perf_counter() - t0
        with cluster:
            held = devices_held(cluster, resource_name(dev.name))
            seconds, res = one_run(task, args, run_dir, dev.name, cluster)
            n = n or len(cluster.workers())
        rate = res.measured / seconds * 60
        label = f"cluster ({'local' if address == 'local' else address})"
        rows.append(
            [label, str(n), str(held), f"{seconds:.1f}", f"{rate:.1f}", f"{rate / base:.2f}x"]
        )
        print(
            f"{label}, {n} workers: {seconds:.1f} s (cluster start {start:.1f} s)", file=sys.stderr
        )
    print()
    print_table(
        ["tuner", "workers", "devices", "seconds", "configs/min", "vs single process"], rows
    )


if __name__ == "__main__":
    main()
