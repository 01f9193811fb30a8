"""From how many rows is a dense layer (``data[N, K]`` times ``weight[O, K]``) faster as a GEMM?
For each ``N``, the matrix-vector template of the device type (``cpu`` / ``gpu``) against the
GEMM one (``gemm_cpu`` / ``gemm_gpu``: the GEMM template's schedule, the weight transposed by
a kernel of its own, which a network runs once at build time), each at the config
``ts.tune.instantiate`` would take (the logged best, else the one predicted from the shipped
logs, else the defaults), checked against numpy into a NaN-poisoned output, timed by
profiling events on device arrays (median of ``--repeat``). The GEMM template's time is shown
without its transposition kernel, which is given apart::

    .venv/bin/python benchmarks/dense_rows.py --rows 1,4,8,16,32,128 --out 1024 --inputs 256
    . benchmarks/gpu/gpu_env.sh && python benchmarks/dense_rows.py ...   (the GPU host)

``graph.tasks.DENSE_GEMM_ROWS`` is chosen from its output.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pyopencl.array as cla  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.runtime.numerics import relative_error  # noqa: E402
from tensorsched.tune.dispatch import predicted_config  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402


def measure(template: str, n: int, o: int, k: int, repeat: int) -> tuple[float, float, str]:
    """``(ms without the transposition, the transposition's ms, where the config came from)``."""
    task = Task("dense", template, (n, o, k), "float32", ())
    config = predicted_config(task)
    s, args, _ = task.instantiate(config)
    mod = ts.build(s, args, target="opencl", name=f"dense_{template}")
    rng = np.random.default_rng(n)
    d, w = (rng.standard_normal(shape).astype(np.float32) for shape in ((n, k), (o, k)))
    out = np.full((n, o), np.nan, np.float32)
    mod(d, w, out)
    err = relative_error(out, d.astype(np.float64) @ w.T.astype(np.float64))
    if not err <= 1e-5:
        raise SystemExit(f"dense {template} {n}x{o}x{k}: error {err:.1e}")
    q = current_device().queue
    arrays = [cla.to_device(q, d), cla.to_device(q, w), cla.empty(q, (n, o), np.float32)]
    t = mod.time_evaluator(number=1, repeat=repeat)(*arrays)
    transpose = [v for name, v in t.kernel_times.items() if "weight_t" in name]
    apart = float(np.median(np.sum(transpose, axis=0))) if transpose else 0.0
    source = "logged or predicted" if config else "defaults"
    return (t.device_median - apart) * 1e3, apart * 1e3, source


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default="1,4,8,16,32,128")
    p.add_argument("--out", type=int, default=1024)
    p.add_argument("--inputs", type=int, default=256)
    p.add_argument("--repeat", type=int, default=20)
    a = p.parse_args(argv)
    dev = current_device()
    vector, gemm = ("cpu", "gemm_cpu") if dev.is_cpu else ("gpu", "gemm_gpu")
    print(f"# {dev.name}; O = {a.out}, K = {a.inputs}; ms by profiling events")
    print(f"{'N':>5} | {vector:>14} | {gemm:>14} | transpose | {gemm} / {vector}")
    for n in (int(x) for x in a.rows.split(",")):
        v, _, v_from = measure(vector, n, a.out, a.inputs, a.repeat)
        g, t, g_from = measure(gemm, n, a.out, a.inputs, a.repeat)
        print(f"{n:>5} | {v:14.4f} | {g:14.4f} | {t:9.4f} | {v / g:5.2f}x faster"
              f"  ({vector}: {v_from}; {gemm}: {g_from})", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
