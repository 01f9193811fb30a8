"""Compare two bench.py tables of the same GEMM workloads, shape by shape, with geomeans of the
ratio to cuBLAS over classes of shapes (shapes added to the shipped log between the two runs
are starred):

    python benchmarks/gpu/results/data_shapes_2026-11-26/compare.py BEFORE.txt AFTER.txt
"""

import math
import re
import sys

ROW = re.compile(r"GEMM (\d+)x(\d+)x(\d+)\s+\|\s+([\d.]+)\s+\|\s+([\d.]+)\s+\|\s+([\d.]+)x")
# GEMM shapes the shipped log held before (OLD) and those added between the two runs (LOGGED)
OLD = {
    (169, 384, 2305),
    (196, 512, 4608),
    (300, 3000, 700),
    (512, 768, 3072),
    (729, 128, 1201),
    (784, 128, 1152),
    (784, 512, 4608),
    (1024, 1024, 1024),
    (2048, 333, 777),
    (3025, 96, 364),
    (3136, 64, 576),
    (3136, 256, 2304),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (12544, 128, 1152),
}
LOGGED = {
    (1, 2048, 8192),
    (1, 768, 3072),
    (1, 1500, 6000),
    (1, 4000, 1000),
    (3136, 192, 576),
    (784, 128, 864),
    (3136, 256, 1152),
    (784, 512, 2304),
    (1500, 700, 900),
    (640, 2000, 512),
    (196, 320, 1440),
    (169, 192, 1729),
}


def ratios(path: str) -> dict[tuple[int, int, int], float]:
    out = {}
    for line in open(path):
        m = ROW.match(line)
        if m:
            m_, n, k = (int(g) for g in m.groups()[:3])
            out[(m_, n, k)] = float(m.group(6))
    return out


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main() -> None:
    a, b = ratios(sys.argv[1]), ratios(sys.argv[2])
    both = [k for k in sorted(a) if k in b]
    for k in both:
        print("x".join(map(str, k)), f"{a[k]:.2f} -> {b[k]:.2f}", "*" if k in LOGGED else "")
    classes = {
        "all": lambda k: True,
        "M = 1": lambda k: k[0] == 1,
        "M > 1": lambda k: k[0] > 1,
        "M > 1, >= 0.1 GFLOP": lambda k: k[0] > 1 and 2 * k[0] * k[1] * k[2] >= 1e8,
        "in no shipped log": lambda k: k not in LOGGED | OLD,
        "in no shipped log, M > 1, >= 0.1 GFLOP": lambda k: (
            k not in LOGGED | OLD and k[0] > 1 and 2 * k[0] * k[1] * k[2] >= 1e8
        ),
    }
    for name, keep in classes.items():
        ks = [k for k in both if keep(k)]
        before, after = geomean([a[k] for k in ks]), geomean([b[k] for k in ks])
        print(f"{name} ({len(ks)} shapes): geomean {before:.3f}x -> {after:.3f}x cuBLAS")


if __name__ == "__main__":
    main()
