"""The untuned prediction on the CPU device under several distance penalties: for each shape,
the config ``predicted_config`` picks with ``model.DISTRUST`` set to each of
``--distrust`` (a rank of e^(distrust * distance) times ``rescaled_ms``), every distinct pick
built, checked against numpy into a NaN-poisoned output and timed by the wall clock beside
numpy: three rounds, 10 calls a block after a pause, medians (GFLOP/s).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python predict_probe.py \\
        --distrust 1 0.5 0.25 0 --shapes 2047,129,511 ...
"""

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from side_by_side import side_by_side  # noqa: E402

from tensorsched.tune import model  # noqa: E402
from tensorsched.tune.dispatch import predicted_config  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--distrust", type=float, nargs="+", default=[1.0, 0.5, 0.25, 0.0])
p.add_argument("--shapes", nargs="+", required=True)
a = p.parse_args()
ratios: dict[float, list[float]] = {d: [] for d in a.distrust}
print("shape: GFLOP/s of each distrust's pick | numpy", flush=True)
for arg in a.shapes:
    task = Task("gemm", "cpu", tuple(int(v) for v in arg.split(",")))
    picks = {}
    for d in a.distrust:
        model.DISTRUST = d
        picks[d] = json.dumps(predicted_config(task) or {}, sort_keys=True)
    med = side_by_side(arg, {c: json.loads(c) for c in dict.fromkeys(picks.values())})
    for d in a.distrust:
        ratios[d].append(med[picks[d]] / med["numpy"])
    cols = "  ".join(f"{d:g}: {med[picks[d]]:5.0f}" for d in a.distrust)
    print(f"{arg:>14}  {cols} | numpy {med['numpy']:5.0f}", flush=True)
    for c in dict.fromkeys(picks.values()):
        cfg = json.loads(c)
        short = {k: cfg[k] for k in ("tile_y", "tile_x", "tile_k", "pad_a", "pad_b") if k in cfg}
        print(f"{'':16}{[d for d in a.distrust if picks[d] == c]} {short}", flush=True)
print("geomean ratio to numpy by distrust:")
for d, rs in ratios.items():
    g = math.exp(sum(map(math.log, rs)) / len(rs))
    print(f"  {d:g}: {g:.3f}x (worst {min(rs):.2f}x)")
