"""Old against new untuned picks of ``run.sh``: per shape the geomean over both rounds of the
ratio to cuBLAS (each round's cuBLAS) of each side, and geomeans over the shapes whose pick
changed (the config names differ), split at cuBLAS's 10 us. From the unpacked folder:
``python compare.py runs``."""

import glob
import math
import os
import re
import sys


def parse(path: str) -> dict[str, tuple[float, float, str]]:
    """Workload -> (ratio to cuBLAS, cuBLAS us, our config)."""
    out = {}
    for block in re.split(r"\n(?=GEMM \S+ \()", open(path).read()):
        name = re.match(r"GEMM (\S+) \(", block)
        ours = re.search(r"tensorsched\s+([\d.]+) TFLOP/s.*?(gpu_tiled.*)", block)
        theirs = re.search(r"cuBLAS/cuDNN\s+([\d.]+) TFLOP/s\s+([\d.]+) ms", block)
        if name and ours and theirs:
            out[name.group(1)] = (
                float(ours.group(1)) / float(theirs.group(1)),
                float(theirs.group(2)) * 1e3,
                ours.group(2).strip(),
            )
    return out


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main() -> None:
    folder = sys.argv[1]
    sides: dict[str, dict[str, list[tuple[float, float, str]]]] = {"old": {}, "new": {}}
    for path in sorted(glob.glob(os.path.join(folder, "*_gpu*.txt"))):
        side = os.path.basename(path).split("_")[0]
        for name, row in parse(path).items():
            sides[side].setdefault(name, []).append(row)
    rows = []
    for name in sides["old"]:
        old, new = sides["old"][name], sides["new"].get(name, [])
        if not new:
            continue
        changed = old[0][2] != new[0][2]
        o, n = geomean([r[0] for r in old]), geomean([r[0] for r in new])
        us = min(r[1] for r in old + new)
        rows.append((name, us, o, n, changed))
        mark = "" if changed else "  (same pick: a shipped log's own best)"
        print(f"{name:16s} cuBLAS {us:6.1f} us  old {o:5.2f}x  new {n:5.2f}x  {n / o:5.2f}{mark}")
    for label, keep in (
        ("changed picks", lambda r: r[4]),
        ("changed, cuBLAS >= 10 us", lambda r: r[4] and r[1] >= 10),
        ("changed, cuBLAS < 10 us", lambda r: r[4] and r[1] < 10),
    ):
        rs = [r for r in rows if keep(r)]
        print(f"{label}: n={len(rs)} old {geomean([r[2] for r in rs]):.3f}x "
              f"new {geomean([r[3] for r in rs]):.3f}x")  # fmt: skip


if __name__ == "__main__":
    main()
