"""One task at one config, built with every pass and without the named ones, timed side by
side on the OpenCL device (alternating, medians of the repeats); both results checked
against the task's float64 reference first.

    .venv/bin/python benchmarks/pass_ablation.py gemm cpu 1000,1000,1000 \
        --config '{"tail": "guard"}' --without specialize_interior
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import tensorsched as ts  # noqa: E402
from tensorsched.passes import pipeline  # noqa: E402
from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.runtime.numerics import compare  # noqa: E402
from tensorsched.tune import Task  # noqa: E402


def build(task: Task, config: dict, without: set[str]) -> tuple:
    """``(module, build seconds, source lines)`` with the passes ``without`` left out."""
    full = pipeline.PIPELINE
    pipeline.PIPELINE = tuple(p for p in full if p.name not in without)
    try:
        s, args, cfg = task.instantiate(config)
        if not cfg.valid:
            raise SystemExit(f"config {config} is not valid for {task}: {cfg.constraints}")
        t0 = time.perf_counter()
        mod = ts.build(s, args, target="opencl")
        lines = mod.source.text.count("\n")
        return mod, args, time.perf_counter() - t0, lines
    finally:
        pipeline.PIPELINE = full


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("kind")
    p.add_argument("template")
    p.add_argument("shape", help="comma-separated, as the task's shape")
    p.add_argument("--epilogue", default="", help="comma-separated, e.g. bias,relu6")
    p.add_argument("--config", default="{}", help="JSON knob values (others: defaults)")
    p.add_argument("--without", default="specialize_interior", help="comma-separated pass names")
    p.add_argument("--repeat", type=int, default=15)
    a = p.parse_args(argv)
    epilogue = tuple(e for e in a.epilogue.split(",") if e)
    task = Task(a.kind, a.template, tuple(int(x) for x in a.shape.split(",")), epilogue=epilogue)
    config, without = json.loads(a.config), set(a.without.split(","))
    unknown = without - {q.name for q in pipeline.PIPELINE}
    if unknown:
        raise SystemExit(f"no pass named {sorted(unknown)}; see tensorsched/passes/pipeline.py")
    import pyopencl.array as cla

    rows, sources = [], []
    for label, leave_out in (("every pass", set()), (f"without {a.without}", without)):
        mod, args, seconds, lines = build(task, config, leave_out)
        ins = task.inputs(args, seed=0)
        dev = [cla.to_device(mod.device.queue, x) for x in ins]
        out = cla.empty(mod.device.queue, tuple(int(d) for d in args[-1].shape), np.float32)
        out.fill(np.nan)
        mod(*dev, out)
        compare(out.get(), task.reference(ins), "float32", name=f"{task} ({label})")
        rows.append([label, mod.time_evaluator(repeat=1), (dev, out), seconds, lines, []])
        sources.append(mod.source.text)
    for _ in range(a.repeat):  # alternating, so that both see the same machine
        for row in rows:
            dev, out = row[2]
            row[5].append(row[1](*dev, out).median * 1e3)
    print(f"{task}, config {config}, on {current_device().name}")
    for label, _, _, seconds, lines, ms in rows:
        print(
            f"  {label:40s} {np.median(ms):9.3f} ms  {task.flop / np.median(ms) / 1e6:7.1f} "
            f"GFLOP/s  built in {seconds:.1f} s, {lines} lines of OpenCL"
        )
    if sources[0] == sources[1]:
        print("  the same OpenCL source both ways: the passes left out change nothing here")


if __name__ == "__main__":
    main()
