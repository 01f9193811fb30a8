"""Where a small GEMM's time goes on NVIDIA's OpenCL: for each log given, the fastest config
is built, checked against float64, and timed alternately in one process by

- its OpenCL profiling events (``time_evaluator``, what ``bench.py`` and the tuner use);
- the wall clock of back-to-back launches on a queue without profiling (what a caller sees);
- its PTX (from NVIDIA's OpenCL) launched through CUDA, replayed from a CUDA graph of 20
  calls, as ``bench.py`` times cuBLAS (the kernel's own time, the same launch path);
- cuBLAS (torch, TF32 off) replayed from a CUDA graph of 20 calls;

and an empty one-work-item kernel by the same OpenCL and CUDA timers (the floor of each)::

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/floor_probe.py LOG.jsonl ...
"""

import os
import statistics
import sys
import time

import numpy as np
import pyopencl as cl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from cuda_kernels import CudaKernels, cuda_graph_seconds, function, launch, load_ptx  # noqa: E402
from kernel_variants import fastest, gemm_operands  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

ROUNDS = 7


def graph_us(call) -> float:
    """Median microseconds per call of 20 calls replayed from a CUDA graph."""
    return cuda_graph_seconds(torch, call, repeat=15) * 1e6


def wall_us(enqueue, queue, n: int = 200) -> float:
    """Microseconds a launch of ``n`` back-to-back launches and one ``finish``."""
    enqueue()
    queue.finish()
    t = time.perf_counter()
    for _ in range(n):
        enqueue()
    queue.finish()
    return (time.perf_counter() - t) / n * 1e6


class Empty:
    """An empty kernel of one work-item, on OpenCL and (its PTX) on CUDA."""

    def __init__(self, ctx, queue, run_queue) -> None:
        prg = cl.Program(ctx, "__kernel void tsg_empty(__global float *x) { }").build()
        self.kernel, self.queue, self.run_queue = prg.tsg_empty, queue, run_queue
        self.buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)
        self.kernel.set_args(self.buf)

        self.fn = function(load_ptx(prg.binaries[0]), "tsg_empty")
        self.x = torch.zeros(1, device="cuda")

    def event_us(self) -> float:
        times = []
        for _ in range(15):
            ev = cl.enqueue_nd_range_kernel(self.queue, self.kernel, (1,), (1,))
            ev.wait()
            times.append((ev.profile.end - ev.profile.start) * 1e-3)
        return statistics.median(times)

    def wall(self) -> float:
        return wall_us(
            lambda: cl.enqueue_nd_range_kernel(self.run_queue, self.kernel, (1,), (1,)),
            self.run_queue,
        )

    def launch(self) -> None:
        launch(torch, self.fn, [1, 1, 1], [1, 1, 1], [self.x.data_ptr()])


def main(paths: list[str]) -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.zeros(1, device="cuda")
    dev = current_device()
    queue, run_queue = dev.queue, dev.run_queue
    print(
        f"# OpenCL: {dev.cl_device.name}; torch {torch.__version__} on "
        f"{torch.cuda.get_device_name()}"
    )
    empty = Empty(dev.context, queue, run_queue)
    e = {"event": [], "wall": [], "graph": []}
    for _ in range(ROUNDS):
        e["event"].append(empty.event_us())
        e["wall"].append(empty.wall())
        e["graph"].append(graph_us(empty.launch))
    print(
        "empty kernel, one work-item: OpenCL event {:.2f} us, OpenCL wall {:.2f} us a launch, "
        "CUDA graph {:.2f} us".format(*(statistics.median(v) for v in e.values()))
    )
    print(
        "| GEMM | OpenCL event | OpenCL wall | our PTX, CUDA graph | cuBLAS, CUDA graph | "
        "event ratio | graph ratio |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for path in paths:
        r = fastest(path)
        task = Task.from_dict(r["task"])
        M, N, K = task.shape
        s, args, cfg = task.instantiate(r["config"])
        mod = ts.build(s, args, target="opencl", name="tsg")
        _, _, ref, arrs = gemm_operands(M, N, K, queue)
        arrs[2].fill(np.nan)
        mod(*arrs)
        err = np.abs(arrs[2].get() - ref).max() / np.abs(ref).max()
        kern = CudaKernels(mod, torch)
        a = torch.from_numpy(arrs[0].get()).cuda()
        b = torch.from_numpy(arrs[1].get()).cuda()
        out = torch.full((M, N), float("nan"), device="cuda")
        bufs = kern.buffers({args[0].name: a, args[1].name: b, args[2].name: out})
        kern(bufs)
        torch.cuda.synchronize()
        cerr = float(np.abs(out.double().cpu().numpy() - ref).max() / np.abs(ref).max())
        if not (err < 1e-5 and cerr < 1e-5):
            print(f"| {task} | WRONG: OpenCL {err:.1e}, CUDA {cerr:.1e} | | | | | |")
            continue
        bufs_cl, _ = mod._device_args(arrs)
        launches = [
            (k, i.global_size, i.local_size, [bufs_cl[b] for b in i.params])
            for k, i in zip(mod.kernels, mod.source.kernels)
        ]

        def enqueue() -> None:  # the module's kernels on the queue without profiling
            for k, g, l, kargs in launches:
                k(run_queue, g, l, *kargs)

        t = {"event": [], "wall": [], "graph": [], "blas": []}
        for _ in range(ROUNDS):
            t["event"].append(
                mod.time_evaluator(number=1, repeat=15, warmup=2)(*arrs).device_median * 1e6
            )
            t["wall"].append(wall_us(enqueue, run_queue))
            t["graph"].append(graph_us(lambda: kern(bufs)))
            t["blas"].append(graph_us(lambda: a @ b))
        m = {k: statistics.median(v) for k, v in t.items()}
        arrs[2].fill(np.nan)
        mod(*arrs)
        err = np.abs(arrs[2].get() - ref).max() / np.abs(ref).max()
        bad = "" if err < 1e-5 else f" (WRONG after timing: {err:.1e})"
        print(
            f"| {task} | {m['event']:.2f} | {m['wall']:.2f} | {m['graph']:.2f} | "
            f"{m['blas']:.2f} | {m['blas'] / m['event']:.2f}x | "
            f"{m['blas'] / m['graph']:.2f}x |{bad}"
        )
        print(f"  config {r['config']}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
