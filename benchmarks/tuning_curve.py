"""Tuning curves: the best GFLOP/s found against trials and against seconds, for the grid,
random, model and model-with-transfer strategies, on GEMM shapes that no log contains.

    python benchmarks/tuning_curve.py --shapes 196,144,512 169,128,1729 --trials 40
    python benchmarks/tuning_curve.py --trials 40 --plot curves.png   # the plot extra

Each (shape, strategy) tunes into a fresh log in ``--out`` (a temporary folder by default).
``model+transfer`` first tunes the ``--sources`` shapes with the model strategy (their logs
are its only transfer logs; the evaluated shapes are in no log), then tunes each shape with
``transfer=`` those logs. The table gives the best GFLOP/s after 10, 20 and all trials, the
seconds the whole run took, and how many trials each strategy needed to reach the best that
random search found in all its trials (``-``: not reached).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tensorsched.runtime.table import format_table  # noqa: E402
from tensorsched.tune.log import read_log  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402
from tensorsched.tune.tuner import tune  # noqa: E402

STRATEGIES = ("grid", "random", "model", "model+transfer")
SHAPES = ("196,144,512", "169,128,1729", "784,96,192")  # in no committed log
SOURCES = ("196,128,512", "784,128,256")  # the transfer logs' shapes


def shape_of(text: str) -> tuple[int, int, int]:
    m, n, k = (int(x) for x in text.split(","))
    return m, n, k


def curve(log: str) -> list[tuple[int, float, float]]:
    """``(trial, seconds since the first trial's start, best GFLOP/s so far)`` per trial."""
    recs = read_log(log)
    out, best = [], 0.0
    start = min((r.timestamp for r in recs), default=0.0)
    for i, r in enumerate(recs, 1):
        if r.status == "ok" and r.gflops:
            best = max(best, r.gflops)
        out.append((i, r.timestamp - start, best))
    return out


def at(c: list[tuple[int, float, float]], n: int) -> str:
    return f"{c[min(n, len(c)) - 1][2]:.1f}" if c else "-"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", nargs="+", default=list(SHAPES), help="M,N,K ...")
    p.add_argument("--sources", nargs="+", default=list(SOURCES), help="transfer logs' shapes")
    p.add_argument("--trials", type=int, default=40)
    p.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES)
    p.add_argument("--template", default="cpu")
    p.add_argument("--device", help="P:D or part of a device name")
    p.add_argument("--out", help="folder for the logs (default: a temporary one)")
    p.add_argument("--plot", help="write a PNG of the curves here (needs matplotlib)")
    args = p.parse_args(argv)
    out = args.out or tempfile.mkdtemp(prefix="tuning_curve_")
    os.makedirs(out, exist_ok=True)
    # the trials alone (no measuring the fastest again): the curves are of trials
    common = {"trials": args.trials, "device": args.device, "repeat": 3, "timeout": 60.0}
    common["verify"] = 0

    transfer = []
    if "model+transfer" in args.strategies:
        for src in args.sources:
            log = os.path.join(out, f"source_{src.replace(',', 'x')}.jsonl")
            if not os.path.exists(log):
                tune(Task("gemm", args.template, shape_of(src)), log, strategy="model", **common)
            transfer.append(log)

    curves: dict[tuple[str, str], list] = {}
    seconds: dict[tuple[str, str], float] = {}
    for shape in args.shapes:
        task = Task("gemm", args.template, shape_of(shape))
        for strategy in args.strategies:
            log = os.path.join(out, f"{shape.replace(',', 'x')}_{strategy}.jsonl")
            if os.path.exists(log):
                os.remove(log)
            t = time.time()
            tune(
                task,
                log,
                strategy=strategy.split("+")[0],
                transfer=transfer if strategy == "model+transfer" else (),
                **common,
            )
            seconds[shape, strategy] = time.time() - t
            curves[shape, strategy] = curve(log)

    rows = []
    for shape in args.shapes:
        target = curves[shape, "random"][-1][2] if (shape, "random") in curves else None
        for strategy in args.strategies:
            c = curves[shape, strategy]
            reach = "-"
            if target:
                hit = [i for i, _, b in c if b >= target]
                reach = str(hit[0]) if hit else "-"
            rows.append(
                [
                    shape.replace(",", "x"),
                    strategy,
                    at(c, 10),
                    at(c, 20),
                    at(c, args.trials),
                    f"{seconds[shape, strategy]:.0f}",
                    reach,
                ]
            )
    head = ["shape", "strategy", "best@10", "best@20", f"best@{args.trials}", "s", "reach rnd"]
    print(format_table(head, rows, "<<>>>>>"))
    print(f"\nlogs: {out}")

    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(len(args.shapes), 2, figsize=(10, 3.2 * len(args.shapes)))
        axes = axes.reshape(len(args.shapes), 2)
        for row, shape in enumerate(args.shapes):
            for strategy in args.strategies:
                c = curves[shape, strategy]
                axes[row, 0].plot([x[0] for x in c], [x[2] for x in c], label=strategy)
                axes[row, 1].plot([x[1] for x in c], [x[2] for x in c], label=strategy)
            axes[row, 0].set(title=f"gemm {shape}", xlabel="trials", ylabel="best GFLOP/s")
            axes[row, 1].set(title=f"gemm {shape}", xlabel="seconds", ylabel="best GFLOP/s")
        axes[0, 0].legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=100)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
