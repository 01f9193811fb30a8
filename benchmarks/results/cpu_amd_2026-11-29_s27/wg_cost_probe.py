"""PoCL's cost of a work-group: a kernel that does nothing (one test of its index), launched
with 1 to 100000 work-groups of 1 or 4 work-items and waited for, median of 20 calls.

    .venv/bin/python wg_cost_probe.py
"""

import statistics
import time

import pyopencl as cl

SOURCE = "__kernel void k(__global float* a) { if (get_global_id(0) == 1u << 30) a[0] = 1; }"

ctx = cl.create_some_context(interactive=False)
q = cl.CommandQueue(ctx)
kernel = cl.Kernel(cl.Program(ctx, SOURCE).build(), "k")
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)
for wg in (1, 4):
    for groups in (1, 100, 1000, 10000, 100000):

        def run() -> None:
            kernel(q, (groups * wg,), (wg,), buf)
            q.finish()

        for _ in range(5):
            run()
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        m = statistics.median(times)
        print(f"wg {wg} groups {groups:6d}: {m * 1e6:9.1f} us, {m / groups * 1e9:8.1f} ns/group")
