"""How good is the untuned prediction, measured without a GPU? For each shape of some full
tuning logs (every config a search measured there), the config ``predict_from_shapes`` picks
from the shipped log as it was before that shape was tuned is looked up in the shape's own log
(the median of its measurements) and compared with the log's best. The same for each
candidate the prediction ranks (``model.shape_candidates``: the nearest logged shapes'
bests, carried, and their split-K variants), so that other ranking rules can be compared
offline; ``oracle`` is the best measured candidate. No device is opened: the limits are
the H200's as NVIDIA's OpenCL reports them (132 compute units, 48 KiB ``__local``, 1024
work-items).

    python benchmarks/gpu/predict_loo.py \\
        --batch benchmarks/gpu/results/coverage_2026-11-27/tuned60_logs.tgz \\
        --batch benchmarks/gpu/results/coverage2_2026-11-27/tuned65_logs.tgz

Each ``--batch`` is a tgz of logs (``logs/*.jsonl``) tuned together: their shapes are left out
of the shipped log for their own predictions, with those of the batches given after it (which
were shipped later). A pick the search never measured is reported as such.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from tensorsched.runtime.device import DeviceLimits  # noqa: E402
from tensorsched.tune import model as M  # noqa: E402
from tensorsched.tune.log import ranked_configs, read_log  # noqa: E402
from tensorsched.tune.record import config_key  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

SHIPPED = os.path.join(
    os.path.dirname(os.path.abspath(__file__)),
    "..", "..", "tensorsched", "tune", "logs", "nvidia-cuda-nvidia-h200.jsonl",
)  # fmt: skip
H200 = DeviceLimits(
    "NVIDIA CUDA / NVIDIA H200", 1024, (1024, 1024, 64), 49152, 132, group_ordering=True, gpu=True
)


RULES = {
    "rescaled_ms * e^(0.25 d) (today's)": lambda d, ms, src, new: (
        M.rescaled_ms(ms, src, new, H200) * math.exp(M.DISTRUST * d)
    ),
    "rescaled_ms": lambda d, ms, src, new: M.rescaled_ms(ms, src, new, H200),
    "rescaled_ms * e^d": lambda d, ms, src, new: M.rescaled_ms(ms, src, new, H200) * math.exp(d),
    "nearest shape": lambda d, ms, src, new: d,
}


def full(task: Task, config: dict) -> dict:
    """``config`` with every knob it does not name at its default (given the others)."""
    return {**(M.defaults_with(task, config) or {}), **config}


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", action="append", required=True, help="a tgz of logs/*.jsonl")
    p.add_argument("--shipped", default=SHIPPED)
    p.add_argument(
        "--shapes",
        type=int,
        default=M.PREDICT_SHAPES,
        help="the nearest logged shapes whose bests are candidates (model.PREDICT_SHAPES)",
    )
    a = p.parse_args(argv)
    M.PREDICT_SHAPES = a.shapes
    shipped = read_log(a.shipped)
    tmp = tempfile.mkdtemp(prefix="predict_loo_")
    batches = []
    for n, path in enumerate(a.batch):
        dest = os.path.join(tmp, str(n))
        with tarfile.open(path) as tar:
            members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".jsonl")]
            tar.extractall(dest, members=members, filter="data")
        logs = [os.path.join(r, f) for r, _, fs in os.walk(dest) for f in fs]
        batches.append({Task.from_dict(read_log(f)[0].task).key(): f for f in sorted(logs)})
    per_rule: dict[str, list[float]] = {name: [] for name in RULES}
    oracle, picks, missing = [], [], 0
    for n, batch in enumerate(batches):
        later = {k for b in batches[n:] for k in b}
        before = [r for r in shipped if r.task_key() not in later]
        for key, path in batch.items():
            recs = read_log(path)
            task = Task.from_dict(recs[0].task)
            ranked = ranked_configs(recs, key)
            best = ranked[0].device_ms
            # a log older than a knob lacks it: its configs keyed with that knob's default
            ms = {config_key(full(task, r.config)): r.device_ms for r in ranked}
            pick = M.predict_from_shapes(task, before, H200)
            got = ms.get(config_key(pick)) if pick else None
            family = M._family_records(task, before)
            cands = [(*x, ms.get(config_key(x[3]))) for x in M.shape_candidates(task, family, H200)]
            measured = [x for x in cands if x[5]]
            shape = "x".join(map(str, task.shape))
            note = f"{got * 1e3:8.1f} us, {best / got:.2f}x the best" if got else "not measured"
            print(f"{shape:16s} best {best * 1e3:8.1f} us; pick {note}; "
                  f"{len(measured)} of {len(cands)} candidates measured")  # fmt: skip
            if got:
                picks.append(best / got)
            else:
                missing += 1
            if measured:
                oracle.append(best / min(x[5] for x in measured))
                for name, rule in RULES.items():
                    chosen = min(measured, key=lambda x: rule(x[0], x[1], x[2], x[4]))
                    per_rule[name].append(best / chosen[5])
    print(f"\nthe prediction: {geomean(picks):.3f}x the logged best over {len(picks)} shapes "
          f"({missing} picks not measured)")  # fmt: skip
    print("among the measured candidates of each shape, the one each rule ranks first:")
    for name, rs in per_rule.items():
        print(f"  {name:36s} {geomean(rs):.3f}x (worst {min(rs):.2f}x)")
    print(f"  {'oracle (the fastest candidate)':36s} {geomean(oracle):.3f}x")


if __name__ == "__main__":
    main()
