"""Add tuning logs to the logs tensorsched ships (``tensorsched/tune/logs/<device slug>.jsonl``).

Of each task in the given logs it keeps the ``--best`` fastest configs (each at the median of
its measurements, with all of them), every ``--every``-th of the other valid ones and every
fifth failed record (the model learns from failures too), for the
device the records name; records already shipped are not added twice. Each record is read
and checked by the log reader (nothing in a log is executed).

    python scripts/ship_logs.py benchmarks/gpu/logs/*.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from dataclasses import asdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tensorsched.tune.log import ranked_configs, read_log  # noqa: E402
from tensorsched.tune.model import device_slug  # noqa: E402
from tensorsched.tune.record import jsonable  # noqa: E402

SHIPPED = os.path.join(os.path.dirname(__file__), "..", "tensorsched", "tune", "logs")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("logs", nargs="+")
    p.add_argument("--best", type=int, default=60)
    p.add_argument("--every", type=int, default=10)
    a = p.parse_args(argv)
    by_task: dict[tuple[str, str], list] = defaultdict(list)
    for path in a.logs:
        for r in read_log(path):
            by_task[(r.device, r.task_key())].append(r)
    added: dict[str, int] = defaultdict(int)
    for (device, _), recs in sorted(by_task.items()):
        # configs ranked at the median of their measurements; a kept config keeps them all
        ranked = [r.config_key() for r in ranked_configs(recs)]
        chosen = set(ranked[: a.best] + ranked[a.best :: a.every])
        ok = [r for r in recs if r.status == "ok" and r.config_key() in chosen]
        bad = [r for r in recs if r.status not in ("ok", "skipped")]
        keep = ok + bad[::5]
        out = os.path.join(SHIPPED, device_slug(device) + ".jsonl")
        have = set()
        if os.path.exists(out):
            with open(out) as f:
                have = {line.strip() for line in f}
        with open(out, "a") as f:
            for r in keep:
                d = asdict(r)
                d["config"] = jsonable(r.config)
                if not r.remeasure:  # as the tuner writes it
                    del d["remeasure"]
                line = json.dumps(d, sort_keys=True)
                if line not in have:
                    f.write(line + "\n")
                    have.add(line)
                    added[out] += 1
    for out, n in added.items():
        print(f"{os.path.normpath(out)}: {n} records added")


if __name__ == "__main__":
    main()
