"""Two lists of untuned picks (``M,N,K {config}`` a line, as ``predicted_config`` printed
them before and after the small shapes' logs were shipped), timed side by side with numpy
where they differ (``side_by_side`` of session 27: three rounds, wall clock on
device-resident arrays, medians); prints GFLOP/s and the geomean ratios to numpy.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python \\
        benchmarks/results/cpu_amd_2026-11-29_s28/picks_probe.py picks_before.txt picks_after.txt
"""

import ast
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cpu_amd_2026-11-29_s27"))
from side_by_side import side_by_side  # noqa: E402


def picks(path: str) -> dict[str, dict]:
    out = {}
    for line in open(path):
        shape, config = line.split(" ", 1)
        out[shape] = ast.literal_eval(config)
    return out


old, new = picks(sys.argv[1]), picks(sys.argv[2])
ratios: dict[str, list[float]] = {"old": [], "new": []}
for shape in old:
    if old[shape] == new[shape]:
        continue
    g = side_by_side(shape, {"old": old[shape], "new": new[shape]})
    for k in ratios:
        ratios[k].append(g[k] / g["numpy"])
    print(f"{shape}: old {g['old']:.1f}  new {g['new']:.1f}  numpy {g['numpy']:.1f}", flush=True)
for k, v in ratios.items():
    print(f"{k}: geomean {math.exp(sum(map(math.log, v)) / len(v)):.2f}x numpy over {len(v)}")
