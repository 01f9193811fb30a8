"""The untuned CPU GEMM picks (``dispatch.predicted_config``, from the shipped log of the
device this runs on) for every distinct M,N,K of ``../shared/data/*.acl_format.csv`` and the
shapes given: ``M,N,K {config}`` a line.

    .venv/bin/python benchmarks/results/cpu_amd_2026-11-29_s29/picks.py 1000,1000,1000 ... \\
        > picks.txt
"""

import csv
import glob
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
from tensorsched.tune.dispatch import predicted_config  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

shapes: list[tuple[int, ...]] = []
for path in sorted(glob.glob(os.path.join(ROOT, "..", "shared", "data", "*.acl_format.csv"))):
    for row in csv.reader(open(path)):
        try:
            shape = tuple(int(x) for x in row[:3])
        except ValueError:
            continue
        if shape not in shapes:
            shapes.append(shape)
shapes += [tuple(int(x) for x in s.split(",")) for s in sys.argv[1:]]
for shape in shapes:
    print(",".join(map(str, shape)), predicted_config(Task("gemm", "cpu", shape)), flush=True)
