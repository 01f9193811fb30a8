"""What a synchronous call of an OpenCL kernel that does nothing costs on tensorsched's
default device (PoCL here), by the wall clock: one work-group of one work-item, and 64 of them, each
enqueued through pyopencl and waited for with ``finish``, or with ``flush`` and a spin on the
event's status (does the host thread's wake-up cost?); 10th percentile and median of 2000.

    .venv/bin/python benchmarks/results/cpu_amd_2026-11-29_s28/pocl_floor.py
"""

import statistics
import time

import pyopencl as cl

from tensorsched.runtime.device import resolve_device

ctx = resolve_device(None).context
queue = cl.CommandQueue(ctx)
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
kernel = cl.Program(ctx, "__kernel void k(__global float *a) { a[get_global_id(0)] = 1; }")
kernel = kernel.build().k
kernel.set_args(buf)
COMPLETE = cl.command_execution_status.COMPLETE


def finish(groups: int) -> None:
    cl.enqueue_nd_range_kernel(queue, kernel, (groups,), (1,))
    queue.finish()


def spin(groups: int) -> None:
    event = cl.enqueue_nd_range_kernel(queue, kernel, (groups,), (1,))
    queue.flush()
    while event.command_execution_status != COMPLETE:
        pass


def percentiles(fn, groups: int, n: int = 2000) -> str:
    for _ in range(50):
        fn(groups)
    runs = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn(groups)
        runs.append(time.perf_counter() - t0)
    runs.sort()
    return f"p10 {runs[n // 10] * 1e6:.1f} us, median {statistics.median(runs) * 1e6:.1f} us"


print(ctx.devices[0].name)
for groups in (1, 64):
    for name, fn in (("finish", finish), ("flush + spin", spin)):
        print(f"{groups:3d} work-groups, {name:12s}: {percentiles(fn, groups)}")

# the same launches timed by the device's profiling events (what the tuner ranks by)
pqueue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
for groups in (1, 64, 256):
    spans = []
    for _ in range(2000):
        event = cl.enqueue_nd_range_kernel(pqueue, kernel, (groups,), (1,))
        event.wait()
        spans.append((event.profile.end - event.profile.start) * 1e-3)
    print(f"{groups:3d} work-groups, by events: median {statistics.median(spans):.1f} us")
