# ruff: noqa: E402
"""How run.sh's 16 GEMM shapes were drawn (seed 20261129 + 31): as session 22's
``validation_2026-11-27/gen_shapes.py`` (M, N log-uniform 8-8192, K 16-8192, 2 MFLOP-120 GFLOP),
kept 0.5 log2 away from every shape the shipped H200 log holds, from ``../shared/data`` and from
the 28 unseen GEMMs of ``coverage2_2026-11-27/run.sh``; prints their median log2-distance to the
shipped log's nearest shape and the four sets. Run from the project root:
``python benchmarks/gpu/results/validation2_2026-11-29/gen_shapes.py`` (at 2041ceb). The 12
held-out shapes of ``predict.sh``: ``gen_shapes.py 32 12`` (seed 20261129 + 32) after the 16 were
shipped, so they are kept away from those too."""

import csv
import glob
import random
import re
import sys

import numpy as np

sys.path.insert(0, ".")
sys.path.insert(0, "benchmarks/gpu")  # run from the project root
import cover_shapes as C

run = open("benchmarks/gpu/results/coverage2_2026-11-27/run.sh").read()
avoid = [
    tuple(map(int, g.split(",")))
    for i in range(4)
    for g in re.findall(
        r"gemm:([\d,]+?)(?=,gemm|,conv|$)", re.search(rf"^P{i}=(.*)$", run, re.M).group(1)
    )
]
for p in glob.glob("../shared/data/*.acl_format.csv"):
    for row in csv.reader(open(p)):
        try:
            avoid.append(tuple(int(x) for x in row[:3]))
        except ValueError:
            pass
logged = [
    s for s in C.logged_shapes("tensorsched/tune/logs/nvidia-cuda-nvidia-h200.jsonl") if len(s) == 3
]
far = np.log2(np.array(avoid + logged, float) + 1)
OFFSET, COUNT = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (31, 16)
rng = random.Random(20261129 + OFFSET)
out: list[tuple[int, int, int]] = []
while len(out) < COUNT:
    m, n, k = (round(2 ** rng.uniform(lo, hi)) for lo, hi in C.LOG2_RANGES)
    if not 2e6 <= 2 * m * n * k <= 1.2e11:
        continue
    x = np.log2(np.array((m, n, k), float) + 1)
    if np.min(np.linalg.norm(far - x, axis=1)) < 0.5:
        continue
    out.append((m, n, k))
near = np.log2(np.array(logged, float) + 1)
d = [np.min(np.linalg.norm(near - np.log2(np.array(s, float) + 1), axis=1)) for s in out]
print("median d", round(float(np.median(d)), 2), np.round(sorted(d), 2))
for i in range(4):
    print(f"V{i}=" + ",".join(f"gemm:{m},{n},{k}" for m, n, k in out[i::4]))
print("gflop", [round(2 * m * n * k / 1e9, 3) for m, n, k in out])
