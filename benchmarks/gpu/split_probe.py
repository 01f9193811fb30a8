"""Split-K factors on logged configs: for each shape of each log given, its ``TOP`` fastest
``gpu_tiled`` configs rebuilt with every factor of ``SPLITS`` (default 1-16 with 3, 5, 6 and 12
in between, which the template does not offer: the probe adds them to its candidates here
only), and with K sliced within the work-group by every factor of ``SLICES`` instead (split
1, or with split-K that many times coarser, marked ``s<split>x<slices>``; as logged, marked
``/`` with that many times fewer work-items along M, marked ``h`` with work-group tiles half as
tall and half as wide), each checked
against float64 numpy, then timed alternately by profiling events (the median of 7 rounds of
``time_evaluator`` medians); printed as microseconds and as speed-up over the logged config:

    . benchmarks/gpu/gpu_env.sh && [SPLITS=1,2,4,8,16] [SLICES=2,4] [GROUP=1] [TOP=2] \\
        python benchmarks/gpu/split_probe.py LOG.jsonl ...

``GROUP=1`` adds each split above 1 with its partial products added by the last work-group of
each tile in the same kernel (``split_sum="group"``, marked ``group<split>``); every variant
is checked again after its timing runs.

(``gpu/results/data_shapes_2026-11-26/split_probe.txt``: ten shapes of the shipped H200 log,
before ``slice_k``.)
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernel_variants import time_configs  # noqa: E402

from tensorsched.ops.templates import gemm_gpu  # noqa: E402
from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

SPLITS = tuple(int(s) for s in os.environ.get("SPLITS", "1,2,3,4,5,6,8,12,16").split(","))
SLICES = tuple(int(s) for s in os.environ.get("SLICES", "").split(",") if s)
TOP = int(os.environ.get("TOP", "2"))
GROUP = bool(os.environ.get("GROUP"))
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
    logged = record["config"]
    splits = dict.fromkeys((*SPLITS, logged["split_k"]))
    variants = {f"split{split}": dict(logged, split_k=split) for split in splits}
    if GROUP:
        for split in splits:
            if split > 1:
                group = dict(logged, split_k=split, split_sum="group", slice_k=1)
                variants[f"group{split}"] = group
    vy, ty, wy = logged["tile_y"]
    small = {}  # the work-group tile halved along M and N (fewer virtual threads or outputs)
    for axis in ("tile_y", "tile_x"):
        v, t, w = logged[axis]
        small[axis] = [1, t, w] if v == 2 else [v, t, max(w // 2, 1)]
    pad = logged.get("a_pad", 0)
    for n in SLICES:
        # slice_k=n instead of split-K, or with split-K n times coarser ("s<split>x<n>")
        for split in dict.fromkeys((1, max(logged["split_k"] // n, 1))):
            name = f"slice{n}" if split == 1 else f"s{split}x{n}"
            sliced = dict(logged, split_k=split, slice_k=n, tail_k="guard")
            variants[name + "h"] = dict(sliced, **small)
            variants[name] = sliced
            if ty % n == 0:
                fewer = [vy, ty // n, wy]
                warp = logged.get("warp", 0)
                warp = warp if (ty // n) % max(warp, 1) == 0 else 0
                fewer_pad = pad if vy * ty // n * wy > pad else 0
                variants[name + "/"] = dict(sliced, tile_y=fewer, a_pad=fewer_pad, warp=warp)
    med = time_configs(task, variants, queue)
    base = med[f"split{logged['split_k']}"]
    tiles = {k: logged[k] for k in ("tile_y", "tile_x", "tile_k")}
    print(task, f"logged {record['device_ms'] * 1e3:.1f} us, split {logged['split_k']}", tiles)
    cells = (f"{k}:{v:.1f}({base / v:.2f})" for k, v in med.items())
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
