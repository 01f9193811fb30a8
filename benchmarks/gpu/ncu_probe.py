"""A target for Nsight Compute (``ncu``, in ``/usr/local/cuda/bin`` on the GPU host): of
each log given, the fastest config run three times, then cuBLAS (torch, TF32 off) three
times on the same shape. ncu does not see OpenCL kernels, so what it profiles is cuBLAS's:

    . benchmarks/gpu/gpu_env.sh && /usr/local/cuda/bin/ncu --target-processes all \\
        --section SpeedOfLight --section Occupancy --section LaunchStats \\
        --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \\
        -k regex:'tsg|gemm|sgemm|Kernel' --launch-skip 2 --launch-count 3 \\
        python benchmarks/gpu/ncu_probe.py LOG.jsonl

(``gpu/results/splitk_peel_2026-11-25/ncu_cublas_1000.txt``: the log of 1000^3.)
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import pyopencl.array as cla  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

q = current_device().queue
for path in sys.argv[1:]:
    rs = [json.loads(l) for l in open(path) if l.strip()]
    ok = [r for r in rs if r.get("status") == "ok"]
    r = min(ok, key=lambda r: r["device_ms"])
    task = Task.from_dict(r["task"])
    M, N, K = task.shape
    s, args, _ = task.instantiate(r["config"])
    mod = ts.build(s, args, target="opencl", name="tsg")
    print(task, r["config"], r["device_ms"])
    arrs = [
        cla.to_device(q, np.random.rand(M, K).astype(np.float32)),
        cla.to_device(q, np.random.rand(K, N).astype(np.float32)),
        cla.empty(q, (M, N), np.float32),
    ]
    for _ in range(3):
        mod(*arrs)
    q.finish()
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.rand(M, K, device="cuda")
    b = torch.rand(K, N, device="cuda")
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
