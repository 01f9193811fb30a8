"""Where a split-K GEMM's time goes: for each log given, the fastest logged config of every
``split_k`` rebuilt, checked against float64 numpy and timed kernel by kernel (profiling
events, median of 30 on device arrays), with cuBLAS (timed as ``bench.py`` times it) and the
profiled duration of a one-element kernel, the floor of any kernel's time on the device:

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/splitk_probe.py LOG.jsonl ...

Per config it prints the logged time, the sum of the kernels' times now, the span from the
first kernel's start to the last one's end, and each kernel's time (``*_rf``: the partial
products; the other: their sum); then the time a call takes when 50 are enqueued back to back.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench import cuda_time, load_torch  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.runtime.numerics import relative_error  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402


def cublas_us(M: int, N: int, K: int) -> float:
    """cuBLAS's microseconds a call as ``bench.py`` measures them (torch, TF32 off, CUDA
    events around back-to-back calls), or NaN without torch or CUDA."""
    torch, _ = load_torch()
    if torch is None:
        return float("nan")
    a, b = torch.rand(M, K, device="cuda"), torch.rand(K, N, device="cuda")
    opts = SimpleNamespace(warmup=5, repeat=7, min_seconds=0.01)
    return cuda_time(torch, lambda: a @ b, opts) * 1e6


def best_per_split(path: str) -> tuple[Task, dict[int, dict]]:
    records = [json.loads(line) for line in open(path) if line.strip()]
    ok = [r for r in records if r.get("status") == "ok"]
    best: dict[int, dict] = {}
    for r in ok:
        sk = r["config"].get("split_k", 1)
        if sk not in best or r["device_ms"] < best[sk]["device_ms"]:
            best[sk] = r
    return Task.from_dict(ok[0]["task"]), best


def probe(path: str) -> None:
    import pyopencl.array as cla

    q = current_device().queue
    task, best = best_per_split(path)
    M, N, K = task.shape
    print(f"\n{task}  cuBLAS {cublas_us(M, N, K):.1f} us")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    ref = a.astype(np.float64) @ b
    for sk, rec in sorted(best.items()):
        s, args, _ = task.instantiate(rec["config"])
        mod = ts.build(s, args, target="opencl", name="g")
        out = np.full((M, N), np.nan, np.float32)
        mod(a, b, out)
        err = relative_error(out, ref)
        arrays = [cla.to_device(q, a), cla.to_device(q, b), cla.empty(q, (M, N), np.float32)]
        t = mod.time_evaluator(number=1, repeat=30, warmup=5)(*arrays)
        bufs, _ = mod._device_args(arrays)
        spans, b2b = [], []
        for _ in range(30):
            events = mod._launch(bufs, None)
            q.finish()
            spans.append((events[-1].profile.end - events[0].profile.start) * 1e-3)
        for _ in range(7):
            events = []
            for _ in range(50):
                events += mod._launch(bufs, None)
            q.finish()
            b2b.append((events[-1].profile.end - events[0].profile.start) * 1e-3 / 50)
        kernels = ", ".join(f"{k}: {v * 1e6:.1f}" for k, v in t.kernel_means().items())
        print(
            f"  split_k={sk:2d} logged {rec['device_ms'] * 1e3:6.1f} us  now sum-of-kernels "
            f"{t.device_median * 1e6:6.1f} us  span {statistics.median(spans):6.1f} us  "
            f"err {err:.1e}  kernels {{{kernels}}}  back-to-back "
            f"{statistics.median(b2b):6.1f} us/call"
        )


def floor_us() -> float:
    import pyopencl as cl

    dev = current_device()
    src = "__kernel void one(__global float* x) { if (get_global_id(0) == 0) x[0] = 1.0f; }"
    kernel = cl.Kernel(cl.Program(dev.context, src).build(), "one")
    buf = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, 4096)
    durations = []
    for _ in range(200):
        ev = cl.enqueue_nd_range_kernel(dev.queue, kernel.set_args(buf) or kernel, (256,), (256,))
        ev.wait()
        durations.append((ev.profile.end - ev.profile.start) * 1e-3)
    return statistics.median(durations[20:])


def main() -> None:
    print(current_device())
    for path in sys.argv[1:]:
        probe(path)
    print(f"\none-element kernel: median profiled duration {floor_us():.2f} us")


if __name__ == "__main__":
    main()
