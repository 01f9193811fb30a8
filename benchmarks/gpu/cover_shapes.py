"""GEMM shapes that fill the gaps of a tuning log: of random shapes, log-uniform in M, N
(8 to 8192) and K (16 to 8192), between 2 MFLOP and 120 GFLOP, and not within ``--keep-off``
(log2-distance) of any shape to leave unseen, the ``--count`` farthest from the logged
shapes, chosen one at a time (each chosen one counts as logged for the next): a
space-filling design for what an untuned prediction carries from (``predict_config``: the
nearest logged shapes' bests) and what a search measures first. Prints them as
``bench.py --workloads`` takes them, farthest first.

    python benchmarks/gpu/cover_shapes.py tensorsched/tune/logs/nvidia-cuda-nvidia-h200.jsonl \\
        --avoid gemm:19,4277,1104,... --avoid-csv ../shared/data/*.acl_format.csv --count 28
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tensorsched.tune.features import shape_vector  # noqa: E402
from tensorsched.tune.log import read_log  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

POOL = 20000  # random shapes to choose from
LOG2_RANGES = ((3, 13), (3, 13), (4, 13))  # M, N, K
FLOP = (2e6, 1.2e11)


def logged_shapes(path: str) -> list[tuple[float, ...]]:
    """The GEMM views of the tasks in ``path`` (a conv at its GEMM's M, N, K)."""
    return sorted({shape_vector(Task.from_dict(r.task)) for r in read_log(path)})


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("log")
    p.add_argument("--avoid", default="", help="gemm:M,N,K,... shapes to leave unseen")
    p.add_argument("--avoid-csv", nargs="*", default=[], help="M,N,K,... rows to leave unseen")
    p.add_argument("--keep-off", type=float, default=0.5)
    p.add_argument("--count", type=int, default=28)
    p.add_argument("--seed", type=int, default=20261127)
    p.add_argument(
        "--gflop",
        default=f"{FLOP[0] * 1e-9},{FLOP[1] * 1e-9}",
        help="LO,HI: the shapes' range of work (2 M N K), in GFLOP",
    )
    p.add_argument(
        "--log2",
        default=";".join(f"{lo},{hi}" for lo, hi in LOG2_RANGES),
        help="LO,HI;LO,HI;LO,HI: the log2 ranges of M, N and K",
    )
    a = p.parse_args(argv)
    ranges = [tuple(float(v) for v in r.split(",")) for r in a.log2.split(";")]
    avoid = [
        tuple(int(x) for x in w.strip(",").split(","))
        for w in a.avoid.split("gemm:")
        if w.strip(",")
    ]
    for path in a.avoid_csv:
        for row in csv.reader(open(path)):
            try:
                avoid.append(tuple(int(x) for x in row[:3]))
            except ValueError:
                continue
    logged = [s for s in logged_shapes(a.log) if len(s) == 3]
    lo, hi = (float(v) * 1e9 for v in a.gflop.split(","))
    rng = random.Random(a.seed)
    far = np.log2(np.array(avoid, dtype=float) + 1) if avoid else np.zeros((0, 3))
    pool: list[tuple[int, int, int]] = []
    while len(pool) < POOL:
        m, n, k = (round(2 ** rng.uniform(lo, hi)) for lo, hi in ranges)
        if not lo <= 2 * m * n * k <= hi:
            continue
        x = np.log2(np.array((m, n, k), dtype=float) + 1)
        if len(far) and np.min(np.linalg.norm(far - x, axis=1)) < a.keep_off:
            continue
        pool.append((m, n, k))
    P = np.log2(np.array(pool, dtype=float) + 1)
    ref = np.log2(np.array(logged, dtype=float) + 1)
    chosen = []
    for _ in range(a.count):
        d = np.min(np.linalg.norm(P[:, None, :] - ref[None, :, :], axis=2), axis=1)
        j = int(np.argmax(d))
        chosen.append(pool[j])
        ref = np.vstack([ref, P[j]])
    print(",".join(f"gemm:{m},{n},{k}" for m, n, k in chosen))


if __name__ == "__main__":
    main()
