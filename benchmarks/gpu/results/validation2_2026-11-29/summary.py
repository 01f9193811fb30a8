"""Ratios to cuBLAS / cuDNN of ``bench.py`` outputs, untuned (the first glob) and tuned (the
second), from their TFLOP/s columns; geomeans over all, over the shapes that cuBLAS runs in
10 us or more and under; the shapes named in ``EXCLUDE`` (comma-separated, as ``66x819x1175``)
left out of a second set of geomeans. From the project root, after unpacking the .tgz:

    EXCLUDE=12x189x473 python benchmarks/gpu/results/validation2_2026-11-29/summary.py \\
        "runs/predict_gpu*.txt" "runs/tuned_gpu*.txt"
"""

import glob
import math
import os
import re
import sys


def parse(pattern: str) -> dict[str, tuple[float, float, float]]:
    """Workload -> (ours TFLOP/s, cuBLAS TFLOP/s, cuBLAS us)."""
    out = {}
    for path in sorted(glob.glob(pattern)):
        for block in re.split(r"\n(?=(?:GEMM|conv) [^\n|]+ \()", open(path).read()):
            name = re.match(r"(?:GEMM|conv) (.+?) \(", block)
            ours = re.search(r"tensorsched\s+([\d.]+) TFLOP/s", block)
            theirs = re.search(r"cuBLAS/cuDNN\s+([\d.]+) TFLOP/s\s+([\d.]+) ms", block)
            if name and ours and theirs:
                out[name.group(1)] = (
                    float(ours.group(1)),
                    float(theirs.group(1)),
                    float(theirs.group(2)) * 1e3,
                )
    return out


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main() -> None:
    untuned, tuned = parse(sys.argv[1]), parse(sys.argv[2])
    excluded = {x for x in os.environ.get("EXCLUDE", "").split(",") if x}
    rows = []
    for name, (ours, theirs, us) in untuned.items():
        t_ours, t_theirs, _ = tuned.get(name, (math.nan, 1.0, 0.0))
        rows.append((name, us, ours / theirs, t_ours / t_theirs))
        print(f"{name:26s} cuBLAS {us:6.0f} us  untuned {ours / theirs:5.2f}x  "
              f"tuned {t_ours / t_theirs:5.2f}x")  # fmt: skip
    groups = {
        "all": lambda r: True,
        "cuBLAS >= 10 us": lambda r: r[1] >= 10,
        "cuBLAS < 10 us": lambda r: r[1] < 10,
    }
    for label, keep in groups.items():
        for drop in (set(), excluded) if excluded else (set(),):
            rs = [r for r in rows if keep(r) and r[0] not in drop]
            tag = f" without {','.join(sorted(drop))}" if drop else ""
            print(f"{label}{tag}: n={len(rs)} untuned {geomean([r[2] for r in rs]):.2f}x "
                  f"tuned {geomean([r[3] for r in rs]):.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
