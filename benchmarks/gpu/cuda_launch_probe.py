"""Our OpenCL kernels launched through CUDA, so that Nsight Compute can profile them: for
each log given, the fastest config is built by NVIDIA's OpenCL, the PTX it returns is loaded
with the CUDA driver (``cuModuleLoadData``) and launched on torch's buffers with the
OpenCL NDRange; the result is checked against float64, then it and cuBLAS (torch, TF32
off) are timed alternately by CUDA events, each over back-to-back launches:

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/cuda_launch_probe.py LOG.jsonl ...

ncu sees both kernels this way (``ncu`` does not see OpenCL's):

    /usr/local/cuda/bin/ncu --target-processes all --section SchedulerStats \\
        --section WarpStateStats --section SourceCounters --print-details all \\
        --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio \\
        -k regex:'tsg|gemm' --launch-skip 2 --launch-count 2 \\
        python benchmarks/gpu/cuda_launch_probe.py --profile LOG.jsonl

(``--launch-skip 2``: past the check's launch and the first of the loop).

``--profile`` launches each kernel a few times only. ``KNOBS='name=value;...'`` changes
knobs of the logged config before it is built.
"""

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from cuda_kernels import CudaKernels  # noqa: E402
from kernel_variants import fastest  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402


def timed(fn, n: int) -> float:
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / n * 1000  # us


def main(argv: list[str]) -> None:
    profile = "--profile" in argv
    paths = [a for a in argv if not a.startswith("--")]
    knobs = {}
    for kv in filter(None, os.environ.get("KNOBS", "").split(";")):
        k, v = kv.split("=")
        knobs[k] = json.loads(v) if v[:1] in "[0123456789" else v
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.zeros(1, device="cuda")
    for path in paths:
        r = fastest(path)
        task = Task.from_dict(r["task"])
        M, N, K = task.shape
        config = {**r["config"], **knobs}
        s, args, cfg = task.instantiate(config)
        if not cfg.valid:
            print(task, "invalid:", cfg.constraints)
            continue
        mod = ts.build(s, args, target="opencl", name="tsg")
        kern = CudaKernels(mod, torch)
        g = torch.Generator(device="cuda").manual_seed(0)
        a = torch.rand(M, K, device="cuda", generator=g) - 0.5
        b = torch.rand(K, N, device="cuda", generator=g) - 0.5
        out = torch.full((M, N), float("nan"), device="cuda")
        bufs = kern.buffers({args[0].name: a, args[1].name: b, args[2].name: out})
        kern(bufs)
        torch.cuda.synchronize()
        ref = (a.double() @ b.double()).float()
        err = float((bufs[args[2].name] - ref).abs().max() / ref.abs().max())
        print(f"{task} logged {r['device_ms'] * 1000:.1f} us  config {config}")
        print(f"  grid/block {[(g, bl) for _, g, bl, _ in kern.launches]}  max rel err {err:.1e}")
        if err > 1e-4:
            print("  WRONG RESULT, not timed")
            continue
        if profile:
            for _ in range(8):
                kern(bufs)
                a @ b
            torch.cuda.synchronize()
            continue
        ours, blas = [], []
        for _ in range(15):
            ours.append(timed(lambda: kern(bufs), 20))
            blas.append(timed(lambda: a @ b, 20))
        o, c = statistics.median(ours), statistics.median(blas)
        print(f"  CUDA launch {o:.1f} us, cuBLAS {c:.1f} us: {c / o:.3f}x cuBLAS")


if __name__ == "__main__":
    main(sys.argv[1:])
