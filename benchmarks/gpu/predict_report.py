"""Read what ``predict_study.py`` measured and print, per shape and as geomeans over the shapes,
cuBLAS against: the config an untuned prediction picks (``predict_config``), the template's
defaults, the best of the candidates measured first by a search (the nearest ``N`` logged
shapes' best ``R`` configs), and the best candidate there was.

    python benchmarks/gpu/predict_report.py benchmarks/gpu/results/predict_study_2026-11-25/*.jsonl
"""

from __future__ import annotations

import json
import math
import sys


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def best_of_seeds(row: dict, shapes: int, per_shape: int) -> float | None:
    """The fastest measured candidate among the nearest ``shapes`` logged shapes' best
    ``per_shape`` (the search's first measurements), in ms."""
    near = sorted({s["distance"] for c in row["candidates"] for s in c["sources"]})[:shapes]
    got = [
        c["ms"]
        for c in row["candidates"]
        if c.get("ms")
        and any(s["rank"] < per_shape and s["distance"] in near for s in c["sources"])
    ]
    return min(got) if got else None


def main(paths: list[str]) -> None:
    rows = [json.loads(line) for p in paths for line in open(p) if line.strip()]
    print("shape            | predicted | defaults | best candidate | candidates timed")
    cols: dict[str, list[float]] = {"predicted": [], "defaults": [], "best": []}
    for r in rows:
        v, ok = r["cublas_ms"], [c for c in r["candidates"] if c.get("ms")]
        pred = next((c["ms"] for c in ok if c.get("predicted")), None)
        dflt = next((c["ms"] for c in ok if c.get("default")), None)
        best = min(c["ms"] for c in ok)
        for k, x in (("predicted", pred), ("defaults", dflt), ("best", best)):
            if x:
                cols[k].append(v / x)
        shape = "x".join(map(str, r["shape"]))
        print(
            f"{shape:16} | {v / pred if pred else 0:8.2f}x | {v / dflt if dflt else 0:7.2f}x | "
            f"{v / best:13.2f}x | {len(ok)} of {len(r['candidates'])}"
        )
    print(
        f"geomean over {len(rows)} shapes (device {rows[0]['device']}): predicted "
        f"{geomean(cols['predicted']):.3f}x, defaults {geomean(cols['defaults']):.3f}x, best "
        f"candidate {geomean(cols['best']):.3f}x cuBLAS"
    )
    print("\nbest of the search's first measurements (nearest N shapes' best R configs):")
    print("N shapes | R configs | geomean vs cuBLAS")
    for n, r_ in ((3, 2), (3, 4), (5, 4), (8, 2), (8, 4), (99, 4)):
        got = [best_of_seeds(r, n, r_) for r in rows]
        ratios = [r["cublas_ms"] / g for r, g in zip(rows, got) if g]
        print(f"{n:8} | {r_:9} | {geomean(ratios):.3f}x ({len(ratios)} shapes)")


if __name__ == "__main__":
    main(sys.argv[1:])
