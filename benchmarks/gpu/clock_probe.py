"""Does the way ``bench.py`` warms up explain why its times of small GEMMs differ from the
tuner's? For each log given, its fastest config is timed by profiling events as ``bench.py``
does (``time_evaluator``, 20 repeats after 2 warm-up runs): after 1 s idle, at once again,
after 0.3 s of launches, over 200 repeats, and after cuBLAS ran back to back; then its time
per kernel:

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/clock_probe.py LOG.jsonl ...

(``gpu/results/unseen4_2026-11-26/clock_probe.txt`` was made by a first version whose cuBLAS
line timed cuBLAS's first call, set-up included; here cuBLAS is timed as ``bench.py`` times it.)
"""

import os
import sys
import time
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pyopencl.array as cla  # noqa: E402
import torch  # noqa: E402
from bench import cuda_time  # noqa: E402
from kernel_variants import fastest  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
q = current_device().queue
for path in sys.argv[1:]:
    r = fastest(path)
    task = Task.from_dict(r["task"])
    M, N, K = task.shape
    s, args, _ = task.instantiate(r["config"])
    mod = ts.build(s, args, target="opencl")
    rng = np.random.default_rng(0)
    arrs = [
        cla.to_device(q, rng.random((M, K), dtype=np.float32)),
        cla.to_device(q, rng.random((K, N), dtype=np.float32)),
        cla.empty(q, (M, N), np.float32),
    ]

    def ours(repeat: int = 20) -> float:
        return mod.time_evaluator(number=1, repeat=repeat, warmup=2)(*arrs).device_median * 1e6

    a, b = torch.rand(M, K, device="cuda"), torch.rand(K, N, device="cuda")

    def cublas() -> float:
        opts = SimpleNamespace(warmup=5, repeat=7, min_seconds=0.01)
        return cuda_time(torch, lambda: a @ b, opts) * 1e6

    print(task, f"logged {r['device_ms'] * 1000:.1f} us", r["config"])
    time.sleep(1.0)
    print(f"  after 1 s idle, as bench: {ours():.1f} us")
    print(f"  right after:             {ours():.1f} us")
    t0 = time.time()
    while time.time() - t0 < 0.3:
        mod(*arrs)
    q.finish()
    print(f"  after 0.3 s of runs:     {ours():.1f} us")
    print(f"  200 repeats:             {ours(200):.1f} us")
    print(f"  cuBLAS back to back      {cublas():.1f} us")
    print(f"  then ours:               {ours(50):.1f} us")
    t = mod.time_evaluator(number=1, repeat=50, warmup=2)(*arrs)
    print("  per kernel (means):", {k: round(v * 1e6, 1) for k, v in t.kernel_means().items()})
