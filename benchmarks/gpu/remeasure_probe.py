"""The winner's curse of a tuning log: its ``TOP`` fastest ``gpu_tiled`` configs of each shape
measured again in one process, alternately (7 rounds of ``time_evaluator`` medians of 15 runs
each, by profiling events), each checked against float64 numpy first; printed as the logged
and the re-measured microseconds, fastest re-measured first, with cuBLAS's time (torch, CUDA
events, the median of 7 rounds of 15) on the same shape:

    . benchmarks/gpu/gpu_env.sh && [TOP=20] python benchmarks/gpu/remeasure_probe.py LOG.jsonl ...

A config that one measurement among thousands put first is often there by luck: on small
kernels (10-20 us) single measurements spread by 10-30%.
"""

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernel_variants import time_configs  # noqa: E402

from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

TOP = int(os.environ.get("TOP", "20"))


def cublas_us(M: int, N: int, K: int) -> float:
    """cuBLAS's median microseconds (torch) on an ``M x N x K`` GEMM; nan without CUDA."""
    try:
        import torch
    except ImportError:
        return float("nan")
    if not torch.cuda.is_available():
        return float("nan")
    a = torch.randn(M, K, device="cuda")
    b = torch.randn(K, N, device="cuda")
    rounds = []
    for _ in range(7):
        times = []
        for _ in range(15):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(a, b)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        rounds.append(statistics.median(times))
    return statistics.median(rounds)


def probe(records: list[dict], queue) -> None:
    task = Task.from_dict(records[0]["task"])
    med = time_configs(task, {str(i): r["config"] for i, r in enumerate(records)}, queue)
    rows = sorted(((us, records[int(i)]) for i, us in med.items()), key=lambda x: x[0])
    logged_best = min(r["device_ms"] for _, r in rows) * 1e3
    print(f"{task}: cuBLAS {cublas_us(*task.shape):.1f} us; logged best {logged_best:.1f} us")
    order = sorted(r["device_ms"] for _, r in rows)
    for us, r in rows:
        logged_rank = order.index(r["device_ms"]) + 1
        print(f"  {us:6.1f} us  logged {r['device_ms'] * 1e3:6.1f} (#{logged_rank})", flush=True)


def main() -> None:
    queue = current_device().queue
    for path in sys.argv[1:]:
        shapes: dict[tuple[int, ...], list[dict]] = {}
        for line in open(path):
            r = json.loads(line)
            if r["status"] == "ok" and r["task"]["template"] == "gpu_tiled":
                shapes.setdefault(tuple(r["task"]["shape"]), []).append(r)
        for records in shapes.values():
            records.sort(key=lambda r: r["device_ms"])
            seen, top = set(), []
            for r in records:
                key = json.dumps(r["config"], sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    top.append(r)
            probe(top[:TOP], queue)


if __name__ == "__main__":
    main()
