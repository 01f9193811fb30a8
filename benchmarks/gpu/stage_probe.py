"""Operands read straight from global memory (``gpu_tiled``'s ``stage`` knob) against the
``__local`` tiles: for each GEMM shape the logs given hold, the fastest ``gpu_tiled`` record
of each log (named by the log's file name) and the fastest of each ``stage`` value over all
of them, plus, from the overall fastest, the same tiles with ``stage="none"`` (no
``__local`` tile, no barrier: ``double_buffer="none"``, a whole K step's operands in
registers) and with ``stage="a"`` (B from global): each checked against float64 numpy, then
timed alternately by profiling events (``kernel_variants.time_configs``), printed as
microseconds and as speed-up over the first::

    . benchmarks/gpu/gpu_env.sh && [MAXM=16] python benchmarks/gpu/stage_probe.py LOG.jsonl ...

Only shapes with at most ``MAXM`` rows (default 1: matrix-vector products) are probed.
``GRID=1`` adds a grid of one-row configs with no ``__local`` tile (``stage="none"``, a whole
K step's operands in registers): 32 or 64 work-items of 1, 2 or 4 columns, K steps of 8, 16
or 32, split-K 4, 8 or 16 added by a second kernel or by the last work-group (``g``).
"""

import itertools
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernel_variants import time_configs  # noqa: E402

from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

MAXM = int(os.environ.get("MAXM", "1"))
GRID = bool(os.environ.get("GRID"))
DIRECT = dict(stage="none", double_buffer="none", a_pad=0, a_layout="col", fetch_vec=1, reg_fetch=2)


def records(path: str) -> list[dict]:
    out = []
    for line in open(path):
        r = json.loads(line)
        if (
            r["status"] == "ok"
            and r["task"]["template"] == "gpu_tiled"
            and r["task"]["kind"] == "gemm"
        ):
            out.append(r)
    return out


def main() -> None:
    queue = current_device().queue
    by_log = {os.path.basename(p).removesuffix(".jsonl"): records(p) for p in sys.argv[1:]}
    shapes = sorted(
        {
            tuple(r["task"]["shape"])
            for rs in by_log.values()
            for r in rs
            if r["task"]["shape"][0] <= MAXM
        }
    )
    for shape in shapes:
        mine = {
            name: [r for r in rs if tuple(r["task"]["shape"]) == shape]
            for name, rs in by_log.items()
        }
        every = [r for rs in mine.values() for r in rs]
        configs: dict[str, dict] = {}
        for name, rs in mine.items():
            if rs:
                configs[name] = min(rs, key=lambda r: r["device_ms"])["config"]
        for stage in ("both", "a", "none"):
            of = [r for r in every if r["config"].get("stage", "both") == stage]
            if of:
                configs[f"best-{stage}"] = min(of, key=lambda r: r["device_ms"])["config"]
        best = min(every, key=lambda r: r["device_ms"])["config"]
        configs["as-best-a"] = dict(best, stage="a")
        configs["as-best-none"] = dict(best, **DIRECT)
        if GRID:
            for tx, wx, k, split, how in itertools.product(
                (32, 64), (1, 2, 4), (8, 16, 32), (4, 8, 16), ("kernel", "group")
            ):
                name = f"{tx}x{wx}k{k}s{split}{how[0]}"
                configs[name] = dict(
                    DIRECT,
                    tile_y=[1, 1, 1],
                    tile_x=[1, tx, wx],
                    tile_k=[k],
                    split_k=split,
                    split_sum=how,
                    unroll_k=1,
                    tail="shift" if shape[1] % (tx * wx) else "guard",
                )
        task = Task.from_dict(every[0]["task"])
        med = time_configs(task, configs, queue)
        first = next(iter(med.values()))
        named = {n: c for n, c in configs.items() if n in med and n[0].isalpha()}
        knobs = ("stage", "tile_y", "tile_x", "tile_k", "split_k", "split_sum")
        print(task, {n: tuple(c.get(k) for k in knobs) for n, c in named.items()})
        ranked = sorted(med.items(), key=lambda kv: kv[1])
        shown = [kv for kv in med.items() if kv[0] in named] + ranked[:8]
        print("   ", "  ".join(f"{k}:{v:.1f}({first / v:.2f})" for k, v in dict(shown).items()))
        print("    of", len(med), "timed", flush=True)


if __name__ == "__main__":
    main()
