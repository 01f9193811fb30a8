"""CPU GEMM configs at one shape timed side by side with numpy (``side_by_side`` of session
27: each checked against numpy into a NaN-poisoned output, then three rounds of 10 calls on
device-resident arrays after a pause, wall clock, medians).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python \\
        benchmarks/results/cpu_amd_2026-11-29_s28/configs.py 1,4096,4096 '{"tile_x": [1, 2048]}' ...
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cpu_amd_2026-11-29_s27"))
from side_by_side import side_by_side  # noqa: E402

shape, texts = sys.argv[1], sys.argv[2:]
configs = {}
for text in texts:
    config = json.loads(text)
    configs[text] = {k: tuple(v) if isinstance(v, list) else v for k, v in config.items()}
g = side_by_side(shape, configs)
print(f"{shape}: numpy {g['numpy']:.1f} GFLOP/s")
for text in texts:
    print(f"  {g[text]:6.1f} GFLOP/s  {g[text] / g['numpy']:.2f}x  {text}")
