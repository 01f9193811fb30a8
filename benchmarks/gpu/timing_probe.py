"""How the two sides of the cuBLAS ratio are timed, compared on the same kernels. bench.py
times tensorsched by each launch's profiling event (start to end, one launch at a time) and
cuBLAS by CUDA events around back-to-back calls. For the fastest config of each log given,
and for a kernel of one work-item, this prints:

- ``event``: median profiled time of single launches (bench.py's tensorsched measure);
- ``b2b``: back-to-back launches, first event's start to last event's end over the count
  (the measure bench.py applies to cuBLAS, on the OpenCL queue);
- ``wall``: back-to-back launches, host wall clock around them and one ``finish``;
- cuBLAS (torch, TF32 off) by CUDA events around back-to-back calls, as bench.py does, and
  by each call's own CUDA events.

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/timing_probe.py LOG.jsonl ...
"""

import os
import statistics
import sys
import time
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pyopencl as cl  # noqa: E402
import pyopencl.array as cla  # noqa: E402
from bench import cuda_call_times, cuda_time, load_torch  # noqa: E402
from kernel_variants import fastest  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

dev = current_device()
q = dev.queue
torch, _ = load_torch()
COUNT = 50


def opencl_times(launch) -> tuple[float, float, float]:
    """(event, b2b, wall) in microseconds, medians of 7 blocks of COUNT launches."""
    for _ in range(5):
        launch()
    q.finish()
    ev1, b2b, wall = [], [], []
    for _ in range(7):
        evs = []
        for _ in range(COUNT):
            e = launch()
            e[-1].wait()
            evs.append(e)
        ev1.append(statistics.median(sum(x.profile.end - x.profile.start for x in e) for e in evs))
        q.finish()
        t0 = time.perf_counter()
        evs = [launch() for _ in range(COUNT)]
        q.finish()
        wall.append((time.perf_counter() - t0) / COUNT * 1e9)
        b2b.append((evs[-1][-1].profile.end - evs[0][0].profile.start) / COUNT)
    return tuple(statistics.median(v) * 1e-3 for v in (ev1, b2b, wall))


def cublas_times(M, N, K) -> tuple[float, float]:
    if torch is None:
        return float("nan"), float("nan")
    a = torch.rand(M, K, device="cuda")
    b = torch.rand(K, N, device="cuda")
    opts = SimpleNamespace(warmup=5, repeat=7, min_seconds=0.01)
    b2b = cuda_time(torch, lambda: a @ b, opts) * 1e6
    return b2b, statistics.median(cuda_call_times(torch, lambda: a @ b, 50)) * 1e6


print(f"# {dev.name}; microseconds; COUNT={COUNT}")
one = cl.Program(dev.context, "__kernel void one(__global float* x) { x[0] += 1.0f; }").build()
buf = cla.zeros(q, 1, np.float32)
k_one = one.one
ev, b2b, wall = opencl_times(lambda: [k_one(q, (1,), (1,), buf.data)])
print(f"one work-item: event {ev:.1f}  b2b {b2b:.1f}  wall {wall:.1f}")


def launch_rate(queue, call) -> float:
    """Wall-clock microseconds a launch over 200 back-to-back launches, median of 5."""
    out = []
    for _ in range(6):
        queue.finish()
        t0 = time.perf_counter()
        for _ in range(200):
            call()
        queue.finish()
        out.append((time.perf_counter() - t0) / 200 * 1e6)
    return statistics.median(out[1:])


plain = cl.CommandQueue(dev.context)
k_one.set_args(buf.data)
for qname, queue in (("profiling queue", q), ("plain queue", plain)):
    a = launch_rate(queue, lambda: k_one(queue, (1,), (1,), buf.data))
    b = launch_rate(queue, lambda: cl.enqueue_nd_range_kernel(queue, k_one, (1,), (1,)))
    print(
        f"one work-item, {qname}: kernel(queue, ...) {a:.1f} us a launch; "
        f"args set once, enqueue_nd_range_kernel {b:.1f}"
    )
for path in sys.argv[1:]:
    r = fastest(path)
    task = Task.from_dict(r["task"])
    M, N, K = task.shape
    s, args, _ = task.instantiate(r["config"])
    mod = ts.build(s, args, target="opencl", name="tsg")
    arrs = [
        cla.to_device(q, np.random.rand(M, K).astype(np.float32)),
        cla.to_device(q, np.random.rand(K, N).astype(np.float32)),
        cla.empty(q, (M, N), np.float32),
    ]
    bufs = mod._device_args(arrs, {})[0]
    launch = lambda: mod._launch(bufs)  # noqa: E731
    ev, b2b, wall = opencl_times(launch)
    cb, cs = cublas_times(M, N, K)
    print(
        f"{M}x{N}x{K} split_k={r['config'].get('split_k')}: tensorsched event {ev:.1f}  "
        f"b2b {b2b:.1f}  wall {wall:.1f} | cuBLAS b2b {cb:.1f}  single {cs:.1f} | "
        f"ratio event {cb / ev:.3f}  b2b {cb / b2b:.3f}"
    )
