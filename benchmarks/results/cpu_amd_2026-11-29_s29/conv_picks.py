"""Two lists of untuned CPU conv picks (``template (shape) {config}`` a line), timed side by
side where they differ: each config checked against the task's reference into a
NaN-poisoned output, then three rounds of ``timed`` (session 27's ``side_by_side``: the median
of 10 calls on device-resident arrays after a pause), medians, in GFLOP/s.

    .venv/bin/python benchmarks/results/cpu_amd_2026-11-29_s29/conv_picks.py before.txt after.txt
"""

import ast
import os
import statistics
import sys

import numpy as np
import pyopencl.array as cla

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu_amd_2026-11-29_s27")
)
from side_by_side import timed  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.numerics import relative_error  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402


def picks(path: str) -> dict[tuple, dict]:
    out = {}
    for line in open(path):
        template, rest = line.split(" ", 1)
        shape, config = rest.split(") ", 1)
        out[(template, ast.literal_eval(shape + ")"))] = ast.literal_eval(config)
    return out


old, new = picks(sys.argv[1]), picks(sys.argv[2])
for key in old:
    if old[key] == new[key]:
        continue
    task = Task("conv2d", key[0], key[1])
    got: dict[str, list[float]] = {"old": [], "new": []}
    mods = {}
    for name, config in (("old", old[key]), ("new", new[key])):
        s, args, _ = task.instantiate(config)
        mods[name] = (ts.build(s, args, target="opencl"), args)
    inputs = task.inputs(mods["old"][1])
    ref = task.reference(inputs)
    q = mods["old"][0].device.queue
    dev_in = [cla.to_device(q, x) for x in inputs]
    out = cla.empty(q, ref.shape, np.float32)
    for _ in range(3):
        for name, (mod, _) in mods.items():
            out.fill(np.nan)
            mod(*dev_in, out)
            if not relative_error(out.get(), ref) < 1e-4:
                raise SystemExit(f"{key} {name}: wrong result")
            got[name].append(task.flop / 1e9 / timed(lambda m=mod: m(*dev_in, out)))
    o, n = (statistics.median(got[k]) for k in ("old", "new"))
    print(f"{key[0]} {key[1]}: old {o:.1f}  new {n:.1f} GFLOP/s", flush=True)
