# ruff: noqa: E402, E702
"""How run.sh's 24 shapes were drawn (seed 20261127 + 22): GEMMs log-uniform as
``cover_shapes.py``'s pool (2 MFLOP-120 GFLOP), kept 0.5 log2 away from the 28 unseen GEMMs of
``coverage2_2026-11-27/run.sh``, the GEMM views of its 10 unseen convs and ``../shared/data``;
prints their median log2-distance to the shipped log's nearest shape (1.35 with the log
before e34cb13; the 28 unseen GEMMs' 1.25) and the four sets. Run from the project root:
``python benchmarks/gpu/results/validation_2026-11-27/gen_shapes.py``."""

import csv
import glob
import random
import re

import numpy as np

run = open("benchmarks/gpu/results/coverage2_2026-11-27/run.sh").read()
W = []
for i in range(4):
    line = re.search(rf"^P{i}=(.*)$", run, re.M).group(1)
    W += [
        tuple(map(int, g.split(","))) for g in re.findall(r"gemm:([\d,]+?)(?=,gemm|,conv|$)", line)
    ]
import sys

sys.path.insert(0, ".")
sys.path.insert(0, "benchmarks/gpu")  # run from the project root
import cover_shapes as C

avoid = list(W)
for p in glob.glob("../shared/data/*.acl_format.csv"):
    for row in csv.reader(open(p)):
        try:
            avoid.append(tuple(int(x) for x in row[:3]))
        except ValueError:
            pass
# conv GEMM views
convs = re.findall(r"conv:([\d,]+?)(?=,gemm|,conv|$)", run)
from tensorsched.ops.conv2d import ConvShape

for c in convs:
    s = ConvShape(*map(int, c.split(",")))
    avoid.append((s.CO, s.N * s.OH * s.OW, s.CI * s.KH * s.KW))
far = np.log2(np.array(avoid, float) + 1)
rng = random.Random(20261127 + 22)
out = []
while len(out) < 24:
    m, n, k = (round(2 ** rng.uniform(lo, hi)) for lo, hi in C.LOG2_RANGES)
    if not 2e6 <= 2 * m * n * k <= 1.2e11:
        continue
    x = np.log2(np.array((m, n, k), float) + 1)
    if np.min(np.linalg.norm(far - x, axis=1)) < 0.5:
        continue
    out.append((m, n, k))
logged = np.log2(
    np.array(
        [
            s
            for s in C.logged_shapes("tensorsched/tune/logs/nvidia-cuda-nvidia-h200.jsonl")
            if len(s) == 3
        ]
    )
    + 1
)
d = [np.min(np.linalg.norm(logged - np.log2(np.array(s, float) + 1), axis=1)) for s in out]
print("median d", np.median(d), np.round(sorted(d), 2))
unseen = [np.min(np.linalg.norm(logged - np.log2(np.array(w, float) + 1), axis=1)) for w in W]
print("the 28 unseen GEMMs' median d", np.median(unseen))
for i in range(4):
    print(f"V{i}=" + ",".join(f"gemm:{m},{n},{k}" for m, n, k in out[i::4]))
print("gflop", [round(2 * m * n * k / 1e9, 2) for m, n, k in out])
