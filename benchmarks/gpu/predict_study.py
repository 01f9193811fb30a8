"""What an untuned prediction could pick: for GEMM shapes that no shipped log holds, every
candidate the shipped logs offer (the best configs of each logged shape, carried to the new
shape as ``predict_config`` carries them) measured on the device, beside cuBLAS and the
config ``predict_config`` picks today. The JSON it writes lets a prediction rule be judged
offline (``predict_report.py``) against the best candidate there was.

Run on the GPU host, from the project root (``.whl`` carried, see ``gpu_env.sh``)::

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/predict_study.py \\
        --shapes 1000,1000,1000 2048,333,777 --out $OUT/study.jsonl

Each candidate is checked against a float64 reference before it is timed (device arrays,
median of ``--repeat``); cuBLAS is timed with CUDA events (fp32, TF32 off).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import json
import math
import multiprocessing as mp
import os
import sys
import time
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.device import DeviceLimits  # noqa: E402
from tensorsched.tune.features import Lowering  # noqa: E402
from tensorsched.tune.model import (  # noqa: E402
    carry_config,
    history,
    logged_shapes,
    predict_config,
    shipped_logs,
    sibling_logs,
)
from tensorsched.tune.record import config_key  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402


def _build(item: tuple[dict, dict]) -> str:
    """Build one candidate (NVIDIA's driver keeps it by its source, so the measuring process
    builds it again from that cache); '' or the error."""
    task_dict, config = item
    try:
        s, args, _ = Task.from_dict(task_dict).instantiate(config)
        ts.build(s, args, target="opencl", name="gemm")
        return ""
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {str(exc)[:200]}"


def candidates(task: Task, records: list, per_shape: int, splits: int = 0) -> list[dict]:
    """Every logged shape's ``per_shape`` best configs carried to ``task``, with provenance;
    the best ``splits`` of each also with every other ``split_k`` of the space (a source's
    ``split`` says which it was given)."""
    space = task.space()
    knob = space.space.get("split_k")
    options = [v for v in knob.candidates if isinstance(v, int)] if knob else []
    out, seen = [], {}
    for d, there, recs in logged_shapes(task, space, records):
        carried = []
        for rank, r in enumerate(recs[:per_shape]):
            c = carry_config(r.config, there, task, space)
            carried.append((rank, r, c, None))
            if rank < splits:
                carried += [
                    (rank, r, {**c, "split_k": v}, v) for v in options if v != c.get("split_k")
                ]
        for rank, r, c, split in carried:
            src = {
                "shape": list(there.shape),
                "distance": d,
                "rank": rank,
                "ms": r.device_ms,
                "best_ms": recs[0].device_ms,
                "config": r.config,
                "split": split,
            }
            key = config_key(c)
            if key in seen:
                seen[key]["sources"].append(src)
                continue
            seen[key] = {"config": c, "sources": [src]}
            out.append(seen[key])
    return out


def cublas_ms(torch, a, b, repeat):
    x, y = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    out = torch.empty((a.shape[0], b.shape[1]), device="cuda")
    for _ in range(5):
        torch.matmul(x, y, out=out)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeat):
        start.record()
        for _ in range(20):
            torch.matmul(x, y, out=out)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 20)
    return float(np.median(times))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", nargs="+", required=True, help="M,N,K ...")
    ap.add_argument("--out", required=True)
    ap.add_argument("--per-shape", type=int, default=4)
    ap.add_argument(
        "--splits", type=int, default=0,
        help="the best N configs of each logged shape also with every other split_k",
    )  # fmt: skip
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--log", help="a log to take candidates from (default: the shipped ones)")
    ap.add_argument("--workers", type=int, default=max(2, (os.cpu_count() or 2) - 1))
    opts = ap.parse_args()
    limits = DeviceLimits.of()
    device = limits.name
    paths = [opts.log] if opts.log else shipped_logs(device)
    if opts.log:
        with open(opts.log) as f:
            device = json.loads(f.readline())["device"]
    elif not paths:
        sib = sibling_logs(device)
        if sib is None:
            sys.exit(f"no shipped log for {device} or its platform")
        device, paths = sib
    try:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
    except ImportError:
        torch = None
    lowering = Lowering(limits)
    rng = np.random.default_rng(0)
    pool = cf.ProcessPoolExecutor(opts.workers, mp_context=mp.get_context("spawn"))
    with open(opts.out, "w") as out:
        for text in opts.shapes:
            M, N, K = (int(v) for v in text.split(","))
            task = Task("gemm", "gpu_tiled", (M, N, K))
            records = history(task, device, paths)
            cands = candidates(task, records, opts.per_shape, opts.splits)
            default = {"config": {}, "sources": [], "default": True}
            picked = predict_config(task, records, limits) or {}
            cands = [default] + cands
            if config_key(picked) not in {config_key(c["config"]) for c in cands}:
                cands.append({"config": picked, "sources": []})
            for c in cands:
                c["predicted"] = config_key(c["config"]) == config_key(picked)
            valid = []
            for c in cands:
                _, why = lowering(task, c["config"])
                c["why"] = why
                if why is None:
                    valid.append(c)
            t0 = time.time()
            errs = list(pool.map(_build, [(dataclasses.asdict(task), c["config"]) for c in valid]))
            build_s = time.time() - t0
            a = (rng.uniform(0.25, 1, (M, K)) * rng.choice([-1, 1], (M, K))).astype(np.float32)
            b = (rng.uniform(0.25, 1, (K, N)) * rng.choice([-1, 1], (K, N))).astype(np.float32)
            ref = a.astype(np.float64) @ b.astype(np.float64)
            import pyopencl.array as cla

            from tensorsched.runtime.device import current_device

            q = current_device().queue
            da, db = cla.to_device(q, a), cla.to_device(q, b)
            for c, err in zip(valid, errs):
                c["error"] = err
                if err:
                    continue
                s, args, _ = task.instantiate(c["config"])
                mod = ts.build(s, args, target="opencl", name="gemm")
                dc = cla.to_device(q, np.full((M, N), np.nan, np.float32))
                mod(da, db, dc)
                got = dc.get().astype(np.float64)
                rel = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
                c["rel_err"] = rel if math.isfinite(rel) else 1e9
                if not (c["rel_err"] < 1e-4):
                    c["error"] = f"wrong result, rel err {rel:.2e}"
                    continue
                t = mod.time_evaluator(number=1, repeat=opts.repeat, warmup=2)(da, db, dc)
                c["ms"] = t.device_median * 1e3
            vendor = cublas_ms(torch, a, b, opts.repeat) if torch is not None else None
            row = {
                "shape": [M, N, K],
                "device": limits.name,
                "log_device": device,
                "cublas_ms": vendor,
                "build_s": build_s,
                "candidates": cands,
            }
            out.write(json.dumps(row, default=str) + "\n")
            out.flush()
            ok = [c for c in cands if c.get("ms")]
            best = min(ok, key=lambda c: c["ms"]) if ok else None
            pred = next((c for c in cands if c["predicted"] and c.get("ms")), None)
            say = SimpleNamespace(
                n=len(cands), valid=len(valid), ok=len(ok), vendor=vendor,
                best=best["ms"] if best else None, pred=pred["ms"] if pred else None,
            )  # fmt: skip
            print(
                f"{M}x{N}x{K}: {say.n} candidates, {say.valid} valid, {say.ok} timed in "
                f"{build_s:.0f} s build; best {say.best} ms, predicted {say.pred} ms, cuBLAS "
                f"{say.vendor} ms",
                flush=True,
            )


if __name__ == "__main__":
    main()
