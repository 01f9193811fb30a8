"""Read what ``predict_study.py`` measured and print, per shape and as geomeans over the shapes,
cuBLAS against: the config an untuned prediction picked when the study ran, the one
``predict_config`` picks now from the shipped logs (looked up among the measured candidates;
``--compute-units``: the study device's), the template's defaults, the best of the
candidates measured first by a search (the nearest ``N`` logged shapes' best ``R`` configs),
and the best candidate there was.

    python benchmarks/gpu/predict_report.py benchmarks/gpu/results/predict_study_2026-11-25/*.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tensorsched.runtime.device import DeviceLimits  # noqa: E402
from tensorsched.tune.model import history, predict_config, shipped_logs  # noqa: E402
from tensorsched.tune.record import config_key  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402


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


def predicted_now(row: dict, compute_units: int) -> float | None:
    """The measured ms of the config ``predict_config`` picks now for ``row``'s shape from the
    shipped log the study used, on a device like the study's (None: not among the measured)."""
    task = Task("gemm", "gpu_tiled", tuple(row["shape"]))
    device = row["log_device"]
    limits = DeviceLimits(row["device"], 1024, (1024, 1024, 64), 48 * 1024, compute_units, gpu=True)
    config = predict_config(task, history(task, device, shipped_logs(device)), limits)
    found = [c for c in row["candidates"] if config_key(c["config"]) == config_key(config or {})]
    return found[0].get("ms") if found else None


def main(paths: list[str], compute_units: int) -> None:
    rows = [json.loads(line) for p in paths for line in open(p) if line.strip()]
    print("shape            | predicted then | predicted now | defaults | best candidate")
    cols: dict[str, list[float]] = {"then": [], "now": [], "defaults": [], "best": []}
    for r in rows:
        v, ok = r["cublas_ms"], [c for c in r["candidates"] if c.get("ms")]
        then = next((c["ms"] for c in ok if c.get("predicted")), None)
        now = predicted_now(r, compute_units)
        dflt = next((c["ms"] for c in ok if c.get("default")), None)
        best = min(c["ms"] for c in ok)
        got = {"then": then, "now": now, "defaults": dflt, "best": best}
        for k, x in got.items():
            if x:
                cols[k].append(v / x)
        shape = "x".join(map(str, r["shape"]))
        print(f"{shape:16} | " + " | ".join(f"{v / got[k] if got[k] else 0:.2f}x" for k in cols))
    print(
        f"geomean over {len(rows)} shapes (device {rows[0]['device']}): "
        + ", ".join(f"{k} {geomean(x):.3f}x ({len(x)})" for k, x in cols.items())
        + " cuBLAS"
    )
    print("\nbest of the search's first measurements (nearest N shapes' best R configs):")
    print("N shapes | R configs | geomean vs cuBLAS")
    for n, r_ in ((3, 2), (3, 4), (5, 4), (8, 2), (8, 4), (99, 4)):
        seeds = [best_of_seeds(r, n, r_) for r in rows]
        ratios = [r["cublas_ms"] / g for r, g in zip(rows, seeds) if g]
        print(f"{n:8} | {r_:9} | {geomean(ratios):.3f}x ({len(ratios)} shapes)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("studies", nargs="+")
    ap.add_argument("--compute-units", type=int, default=132, help="the study device's (H100: 132)")
    opts = ap.parse_args()
    main(opts.studies, opts.compute_units)
