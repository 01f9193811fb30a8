"""50176x64x576's untuned pick (split-K 1, warp 4: 22.9 TFLOP/s in predicted_all82.txt)
against session 13's (split-K 2, warp 0: 31.0 TFLOP/s), with split-K 1, 2 and 4 and warp 0
and 4 each, side by side (``kernel_variants.time_configs``):

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/results/stage_2026-11-29/split_pick.py
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from kernel_variants import time_configs  # noqa: E402

from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

PICK = {"split_k": 1, "tile_y": (1, 8, 8), "tile_x": (2, 16, 4), "tile_k": (8,), "unroll_k": 1,
        "a_layout": "col", "a_pad": 4, "fetch_vec": 1, "reg_fetch": 0, "double_buffer": "local",
        "tail": "shift", "tail_k": "guard", "warp": 4}  # fmt: skip
task = Task("gemm", "gpu_tiled", (50176, 64, 576))
configs = {
    f"split{split}-warp{warp}": dict(PICK, split_k=split, warp=warp)
    for split in (1, 2, 4)
    for warp in (0, 4)
}
med = time_configs(task, configs, current_device().queue)
first = med["split1-warp4"]
print(task, "us (speed-up over the pick):")
print("  ".join(f"{k}:{v:.1f}({first / v:.2f})" for k, v in med.items()))
