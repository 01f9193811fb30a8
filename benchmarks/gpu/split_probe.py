"""Split-K factors on logged configs: for each shape of each log given, its ``TOP`` fastest
``gpu_tiled`` configs rebuilt with every factor of ``SPLITS`` (default 1-16 with 3, 5, 6 and 12
in between, which the template does not offer: the probe adds them to its candidates here
only), each checked against float64 numpy, then timed alternately by profiling events (the
median of 7 rounds of ``time_evaluator`` medians); printed as microseconds and as speed-up
over the logged factor:

    . benchmarks/gpu/gpu_env.sh && [SPLITS=1,2,4,8,16] [TOP=2] \\
        python benchmarks/gpu/split_probe.py LOG.jsonl ...

(``gpu/results/data_shapes_2026-11-26/split_probe.txt``: ten shapes of the shipped H200 log.)
"""

import json
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernel_variants import gemm_operands  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.ops.templates import gemm_gpu  # noqa: E402
from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

SPLITS = tuple(int(s) for s in os.environ.get("SPLITS", "1,2,3,4,5,6,8,12,16").split(","))
TOP = int(os.environ.get("TOP", "2"))
gemm_gpu.SPLIT_K = tuple(dict.fromkeys(gemm_gpu.SPLIT_K + SPLITS))  # this process only


def by_shape(path: str) -> dict[tuple[int, ...], list[dict]]:
    out: dict[tuple[int, ...], list[dict]] = {}
    for line in open(path):
        r = json.loads(line)
        if r["status"] == "ok" and r["task"]["template"] == "gpu_tiled":
            out.setdefault(tuple(r["task"]["shape"]), []).append(r)
    return out


def probe(record: dict, queue) -> None:
    task = Task.from_dict(record["task"])
    _, _, ref, arrs = gemm_operands(*task.shape, queue)
    mods = {}
    for split in SPLITS:
        s, args, cfg = task.instantiate(dict(record["config"], split_k=split))
        if not cfg.valid:
            continue
        mod = ts.build(s, args, target="opencl")
        arrs[2].fill(np.nan)
        mod(*arrs)
        err = np.abs(arrs[2].get() - ref).max() / np.abs(ref).max()
        if not err < 1e-5:
            print(f"  split {split}: WRONG, error {err:.1e}")
            continue
        mods[split] = mod
    times: dict[int, list[float]] = {split: [] for split in mods}
    for _ in range(7):
        for split, mod in mods.items():
            t = mod.time_evaluator(number=1, repeat=15, warmup=2)(*arrs)
            times[split].append(t.device_median * 1e6)
    med = {split: statistics.median(v) for split, v in times.items()}
    base = med[record["config"]["split_k"]]
    cfg = record["config"]
    tiles = {k: cfg[k] for k in ("tile_y", "tile_x", "tile_k")}
    print(task, f"logged {record['device_ms'] * 1e3:.1f} us, split {cfg['split_k']}", tiles)
    cells = (f"{k}:{med[k]:.1f}({base / med[k]:.2f})" for k in sorted(med))
    print("   ", "  ".join(cells), flush=True)


def main() -> None:
    queue = current_device().queue
    for path in sys.argv[1:]:
        for records in by_shape(path).values():
            records.sort(key=lambda r: r["device_ms"])
            for record in records[:TOP]:
                probe(record, queue)


if __name__ == "__main__":
    main()
