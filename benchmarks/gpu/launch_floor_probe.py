"""What sets NVIDIA's OpenCL cost of a kernel (about 5 us by its profiling events, 1 us for
the same PTX launched through CUDA; ``floor_probe.py``)? Near-empty kernels are timed by their
profiling events (median of 200 launches, each waited for) while one thing changes at a time:
the number and kind of arguments, the NDRange's size, a local size given or not, an in-order
or out-of-order queue, and launches enqueued back to back before one wait::

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/launch_floor_probe.py

An experiment: it says whether anything a code generator or runtime controls moves the floor.
"""

from __future__ import annotations

import statistics

import numpy as np
import pyopencl as cl

SOURCE = """
__kernel void none() { }
__kernel void one(__global float *a) { }
__kernel void three(__global float *a, __global const float *b, __global const float *c) { }
__kernel void three_ints(__global float *a, __global const float *b, __global const float *c,
                         int m, int n, int k) { }
__kernel void store(__global float *a) { if (get_global_id(0) == 0) a[0] = 1.0f; }
__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void store_reqd(__global float *a) {
  if (get_global_id(0) == 0) a[0] = 1.0f;
}
"""


def nvidia() -> cl.Device:
    for p in cl.get_platforms():
        if "NVIDIA" in p.name:
            return p.get_devices()[0]
    raise SystemExit("no NVIDIA OpenCL device")


def event_us(queue, kernel, gsize, lsize, n=200, batch=1) -> float:
    """Median microseconds between the profiling start and end of ``kernel``'s launches,
    ``batch`` enqueued before each wait (every launch of a batch timed)."""
    times = []
    for _ in range(5):
        cl.enqueue_nd_range_kernel(queue, kernel, gsize, lsize).wait()
    for _ in range(n // batch):
        evs = [cl.enqueue_nd_range_kernel(queue, kernel, gsize, lsize) for _ in range(batch)]
        evs[-1].wait()
        for ev in evs:
            times.append((ev.profile.end - ev.profile.start) * 1e-3)
    return statistics.median(times)


def main() -> None:
    dev = nvidia()
    ctx = cl.Context([dev])
    prof = cl.command_queue_properties.PROFILING_ENABLE
    q = cl.CommandQueue(ctx, properties=prof)
    ooo = cl.CommandQueue(
        ctx, properties=prof | cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    )
    prg = cl.Program(ctx, SOURCE).build()
    buf = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 << 20) for _ in range(3)]
    k = {n: getattr(prg, n) for n in ("none", "one", "three", "three_ints", "store", "store_reqd")}
    k["one"].set_args(buf[0])
    k["three"].set_args(*buf)
    k["three_ints"].set_args(*buf, np.int32(1), np.int32(2), np.int32(3))
    k["store"].set_args(buf[0])
    k["store_reqd"].set_args(buf[0])
    print(f"# {dev.name}, {dev.platform.name} {dev.driver_version}")
    rows = [
        ("no argument, 1 work-item", q, "none", (1,), None, 1),
        ("1 buffer", q, "one", (1,), None, 1),
        ("3 buffers", q, "three", (1,), None, 1),
        ("3 buffers, 3 ints", q, "three_ints", (1,), None, 1),
        ("1 store, 1 work-item", q, "store", (1,), None, 1),
        ("1 store, 256 work-items, local 256", q, "store", (256,), (256,), 1),
        ("1 store, 132 x 256 work-items", q, "store", (132 * 256,), (256,), 1),
        ("1 store, 1024 x 256 work-items", q, "store", (1024 * 256,), (256,), 1),
        ("1 store, 132 x 256, reqd_work_group_size", q, "store_reqd", (132 * 256,), (256,), 1),
        ("1 store, 132 x 256, local size left to the driver", q, "store", (132 * 256,), None, 1),
        ("no argument, out-of-order queue", ooo, "none", (1,), None, 1),
        ("no argument, 10 enqueued before a wait", q, "none", (1,), None, 10),
        ("1 store 132 x 256, 10 enqueued before a wait", q, "store", (132 * 256,), (256,), 10),
    ]
    for rep in range(2):
        for name, queue, kern, g, lsz, batch in rows if rep == 0 else rows[::-1]:
            us = event_us(queue, k[kern], g, lsz, batch=batch)
            print(f"  run {rep + 1}  {name:52s} {us:6.2f} us", flush=True)


if __name__ == "__main__":
    main()
