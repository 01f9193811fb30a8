"""ACL's GEMM tuner workflow for the ACL-style baseline: benchmark, then analyse.

Inputs: a GEMMParam list (headerless CSV ``M,N,K,B``, or a list of tuples) and a GEMMConfig
search list per strategy (CSV in the column orders of ``configs.COLUMNS``). Without one, the lists
in ``tensorsched/baselines/data/<strategy>.csv`` are used.

1. ``run_benchmarks`` measures every config of every strategy on every shape. It skips invalid
   configs, recording the reason. Each result is checked against numpy first, on random
   non-zero inputs into a NaN-poisoned output; a wrong result is recorded and never chosen. Then
   it times the config with the profiling events of the kernels. A record's time is the **mean**
   of ``repeat`` runs (ACL's benchmark averages 5 runs) of every kernel of one call, reshapes
   included (``total_ms``), and of the GEMM kernel alone (``gemm_ms``). The per-run times are
   kept as well.
2. ``analyse`` picks, per shape and per strategy, the fastest config (by ``total_ms``, or by
   ``gemm_ms`` with ``rank_by="gemm"``). Configs within ``tolerance_ms`` (default 0.01 ms, as
   ACL's GemmTuner) of the fastest count as equally fast. **Tie rule**: among equally fast
   configs, the one listed first in the search list wins; among equally fast strategies, the
   simpler one wins (native, then reshaped_rhs_only, then reshaped: fewer kernels). The shapes
   are then reduced to **archetypes**. Each round picks the (strategy, config) that is equally
   fast as the best on the most shapes not yet covered (ties: simpler strategy, then earlier
   config). Those shapes form one archetype; their first shape in the input order stands for it.
   Rounds go on until every shape is covered. Per strategy, the single config that is equally
   fast as that strategy's best on the most shapes is reported too; this is ACL's "one optimal
   GEMMConfig per strategy".
3. ``save`` writes ``acl_best.json`` and ``acl_best.csv`` (shape -> strategy and config: the
   heuristics table), ``acl_archetypes.csv`` (the archetype shapes as a GEMMParam list) and
   ``acl_search_list_<strategy>.csv`` (every config that was equally fast as the best somewhere).
   The raw records go to ``acl_benchmark.jsonl`` as they are measured, so an interrupted run
   resumes where it stopped.

``tune_acl`` runs all three; ``best_acl(M, N, K, results)`` looks a shape up.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np
from numpy.typing import NDArray

from ..errors import BuildError, TensorschedError
from ..runtime.device import Device, resolve_device
from ..runtime.numerics import TOL, random_array, relative_error
from .acl_gemm import AclGemm
from .configs import (
    COLUMNS,
    STRATEGIES,
    AclConfigError,
    GEMMConfig,
    as_config,
    check_fits,
    default_config_path,
    load_config_list,
    load_gemm_params,
    strategy_name,
)

# pyopencl is imported inside the functions that use it, so that ``import tensorsched`` works
# without an OpenCL driver (and skips pyopencl's ~0.17 s import) until a kernel runs.

GemmParam = tuple[int, int, int, int]  # (M, N, K, batch)
Record = dict[str, Any]  # one measurement, as a line of acl_benchmark.jsonl
# a search list: a CSV path, or configs (GEMMConfig, CSV text or rows of values)
ConfigList = str | os.PathLike[str] | Sequence[GEMMConfig | str | Sequence[int]]

DEFAULT_TOLERANCE_MS = 0.01
BENCHMARK_FILE = "acl_benchmark.jsonl"
BEST_JSON, BEST_CSV, ARCHETYPES_CSV = "acl_best.json", "acl_best.csv", "acl_archetypes.csv"


# ---- inputs


def gemm_params(
    params: str | os.PathLike[str] | Iterable[Sequence[int]],
) -> list[GemmParam]:
    """``[(M, N, K, B)]`` from a CSV path or a list of ``(M, N, K)`` / ``(M, N, K, B)``."""
    if isinstance(params, (str, os.PathLike)):
        return load_gemm_params(params)
    out: list[GemmParam] = []
    for p in params:
        v = tuple(int(x) for x in p)
        if len(v) not in (3, 4):
            raise AclConfigError(f"a GEMMParam is (M, N, K) or (M, N, K, B), got {v}")
        out.append((v[0], v[1], v[2], v[3] if len(v) == 4 else 1))
    return out


def resolve_config_lists(
    lists: Mapping[str, ConfigList] | None = None, strategies: Sequence[str] | None = None
) -> dict[str, list[GEMMConfig]]:
    """``{strategy: [GEMMConfig]}``; ``lists`` maps a strategy to a CSV path or a list of
    configs (``GEMMConfig``, CSV text or value rows); missing strategies get the default list."""
    lists = {strategy_name(k): v for k, v in (lists or {}).items()}
    names = (
        [strategy_name(s) for s in strategies]
        if strategies
        else ([s for s in STRATEGIES if s in lists] if lists else list(STRATEGIES))
    )
    out: dict[str, list[GEMMConfig]] = {}
    for s in names:
        src = lists.get(s, default_config_path(s))
        out[s] = (
            load_config_list(s, src)
            if isinstance(src, (str, os.PathLike))
            else [as_config(s, c) for c in src]
        )
    return out


def random_inputs(
    M: int, N: int, K: int, B: int, seed: int | Sequence[int] = 0
) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """Random float32 A, B with magnitudes in [0.25, 1] and random signs (never zero)."""
    rng = np.random.default_rng(seed)
    return random_array((B, M, K), np.float32, rng), random_array((B, K, N), np.float32, rng)


# ---- 1. benchmark


def measure(
    strategy: str,
    cfg: GEMMConfig,
    shape: GemmParam,
    a: NDArray[np.float32],
    b: NDArray[np.float32],
    ref: NDArray[np.float64],
    device: Device,
    repeat: int = 5,
    warmup: int = 1,
) -> Record:
    """One record: build, check against ``ref``, time. Invalid, unbuildable and wrong configs
    are records too, with a ``status`` and a ``reason``."""
    import pyopencl as cl

    M, N, K, B = shape
    rec = {"M": M, "N": N, "K": K, "B": B, "strategy": strategy, "config": cfg.label}
    try:
        gemm = AclGemm(strategy, cfg, M, N, K, batch=B, device=device)
        out = np.full((B, M, N), np.nan, np.float32)
        gemm(a, b, out)
        err = relative_error(out, ref)
        if not err <= TOL["float32"]:  # max |C - reference| / max |reference|
            where = "unwritten (NaN) elements" if math.isinf(err) else f"relative error {err:.2e}"
            return {**rec, "status": "wrong", "reason": f"output differs from numpy: {where}"}
        t = gemm.time(a, b, out, repeat=repeat, warmup=warmup)
    except AclConfigError as exc:
        return {**rec, "status": "invalid", "reason": str(exc)}
    except BuildError as exc:
        return {**rec, "status": "build_error", "reason": str(exc)[:2000]}
    except cl.Error as exc:
        return {**rec, "status": "error", "reason": f"{type(exc).__name__}: {exc}"[:2000]}
    return {
        **rec,
        "status": "ok",
        "total_ms": t.mean * 1e3,
        "gemm_ms": t.kernel_mean(gemm.gemm_kernel) * 1e3,
        "gflops": gemm.flop / t.mean / 1e9,
        "total_ms_runs": [x * 1e3 for x in t.device_times],
        "gemm_ms_runs": [x * 1e3 for x in t.kernel_times.get(gemm.gemm_kernel, ())],
    }


def _key(rec: Record) -> tuple[Any, ...]:
    return (rec["M"], rec["N"], rec["K"], rec["B"], rec["strategy"], rec["config"])


def read_records(path: str | os.PathLike[str]) -> list[Record]:
    """The records of a benchmark JSON-lines file (or of a JSON list)."""
    with open(path) as f:
        text = f.read()
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def run_benchmarks(
    params: Sequence[GemmParam],
    lists: Mapping[str, Sequence[GEMMConfig]],
    device: Device | str | None = None,
    repeat: int = 5,
    warmup: int = 1,
    log_path: str | None = None,
    resume: bool = True,
    progress: Callable[[Record], None] | None = None,
) -> list[Record]:
    """Measure every config of every strategy on every shape; returns the records in the
    order shape, strategy, config. ``log_path``: a JSON-lines file to append each record to
    (records already there for this device are reused when ``resume``)."""
    dev = resolve_device(device)
    done: dict[tuple[Any, ...], Record] = {}
    if log_path and resume and os.path.exists(log_path):
        done = {_key(r): r for r in read_records(log_path) if r.get("device") == dev.name}
    log = open(log_path, "a") if log_path else None
    records = []
    try:
        for shape in params:
            todo = [
                (s, c) for s, cs in lists.items() for c in cs if (*shape, s, c.label) not in done
            ]
            if todo:
                a, b = random_inputs(*shape, seed=list(shape))
                ref = a.astype(np.float64) @ b.astype(np.float64)
            for s, cfgs in lists.items():
                for cfg in cfgs:
                    rec = done.get((*shape, s, cfg.label))
                    if rec is None:
                        rec = {
                            **measure(s, cfg, shape, a, b, ref, dev, repeat, warmup),
                            "device": dev.name,
                            "repeat": repeat,
                        }
                        if log:
                            log.write(json.dumps(rec) + "\n")
                            log.flush()
                        if progress:
                            progress(rec)
                    records.append(rec)
    finally:
        if log:
            log.close()
    return records


def print_progress(rec: Record, file: TextIO = sys.stderr) -> None:
    """One line per measurement: the shape, strategy, config and time (or why none)."""
    shape = "{M}x{N}x{K} B{B}".format(**rec)
    what = (
        f"{rec['total_ms']:.3f} ms {rec['gflops']:.1f} GFLOP/s"
        if rec["status"] == "ok"
        else f"{rec['status']}: {rec.get('reason', '').splitlines()[0][:100]}"
    )
    print(f"{shape:24s} {rec['strategy']:18s} {rec['config']:22s} {what}", file=file, flush=True)


# ---- 2. analyse


@dataclass
class AclTuneResults:
    """What the analyser found; ``shapes[i]`` is a dict with the shape, its best strategy and
    config, and each strategy's own best. ``save(out_dir)`` writes the files."""

    records: list[Record]
    shapes: list[dict[str, Any]]
    archetypes: list[dict[str, Any]]
    overall_best: dict[str, str]  # strategy -> config label
    tolerance_ms: float = DEFAULT_TOLERANCE_MS
    rank_by: str = "total"
    device: str = ""
    config_order: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "tolerance_ms": self.tolerance_ms,
            "rank_by": self.rank_by,
            "rule": TIE_RULE,
            "shapes": self.shapes,
            "archetypes": self.archetypes,
            "overall_best": self.overall_best,
            "columns": {s: list(c) for s, c in COLUMNS.items()},
        }

    def save(self, out_dir: str) -> None:
        """Write acl_best.json, acl_best.csv, acl_archetypes.csv and the search lists."""
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, BEST_JSON), "w") as f:
            json.dump(self.to_dict(), f, indent=1)
        arch_of = {tuple(sh): i for i, a in enumerate(self.archetypes) for sh in a["shapes"]}
        with open(os.path.join(out_dir, BEST_CSV), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["M", "N", "K", "B", "strategy", "config", "ms", "gflops", "archetype"])
            for s in self.shapes:
                shape = (s["M"], s["N"], s["K"], s["B"])
                w.writerow(
                    [
                        *shape,
                        s["strategy"],
                        s["config"],
                        f"{s['ms']:.4f}",
                        f"{s['gflops']:.2f}",
                        arch_of.get(shape, ""),
                    ]
                )
        with open(os.path.join(out_dir, ARCHETYPES_CSV), "w", newline="") as f:
            csv.writer(f).writerows(a["representative"] for a in self.archetypes)
        for strategy in STRATEGIES:
            good: list[str] = []
            for s in self.shapes:
                for label in s["per_strategy"].get(strategy, {}).get("equally_fast", []):
                    if label not in good:
                        good.append(label)
            if good:
                order = self.config_order.get(strategy, {})
                good.sort(key=lambda c: order.get(c, len(order)))
                path = os.path.join(out_dir, f"acl_search_list_{strategy}.csv")
                with open(path, "w") as f:
                    f.write("".join(c + "\n" for c in good))

    @classmethod
    def load(cls, path: str) -> AclTuneResults:
        """Results saved by ``save`` (the folder or its acl_best.json)."""
        if os.path.isdir(path):
            path = os.path.join(path, BEST_JSON)
        with open(path) as f:
            d = json.load(f)
        return cls(
            [],
            d["shapes"],
            d["archetypes"],
            d["overall_best"],
            d["tolerance_ms"],
            d["rank_by"],
            d.get("device", ""),
        )


TIE_RULE = (
    "configs within tolerance_ms of the fastest are equally fast; the earliest in the "
    "search list wins, and among strategies native, then reshaped_rhs_only, then "
    "reshaped"
)


def analyse(
    records: Sequence[Record],
    tolerance_ms: float = DEFAULT_TOLERANCE_MS,
    rank_by: str = "total",
    config_order: Mapping[str, Sequence[str]] | None = None,
) -> AclTuneResults:
    """Best config per shape and strategy, best strategy per shape, archetypes, and the best
    single config per strategy (see the module docstring for the rules).
    ``config_order``: ``{strategy: [config labels]}`` (default: the order of the records)."""
    if rank_by not in ("total", "gemm"):
        raise AclConfigError(f"rank_by must be 'total' or 'gemm', got '{rank_by}'")
    metric = f"{rank_by}_ms"
    if config_order is None:  # the order in which the records list the configs
        listed: dict[str, list[str]] = {}
        for rec in records:
            seen = listed.setdefault(rec["strategy"], [])
            if rec["config"] not in seen:
                seen.append(rec["config"])
        config_order = listed
    order = {strategy_name(s): {c: i for i, c in enumerate(cs)} for s, cs in config_order.items()}
    s_rank = {s: i for i, s in enumerate(STRATEGIES)}

    def rank(strategy: str, config: str) -> tuple[int, float]:
        return (s_rank[strategy], order.get(strategy, {}).get(config, math.inf))

    by_shape: dict[GemmParam, list[Record]] = {}
    for rec in records:
        shape = (rec["M"], rec["N"], rec["K"], rec["B"])
        by_shape.setdefault(shape, [])
        if rec["status"] == "ok":
            by_shape[shape].append(rec)

    shapes: list[dict[str, Any]] = []
    near: dict[GemmParam, list[tuple[str, str]]] = {}
    for shape, recs in by_shape.items():
        if not recs:
            continue
        per_strategy: dict[str, dict[str, Any]] = {}
        for strategy in sorted({r["strategy"] for r in recs}, key=lambda n: s_rank.get(n, 99)):
            rs = [r for r in recs if r["strategy"] == strategy]
            fastest = min(r[metric] for r in rs)
            equal = sorted(
                (r for r in rs if r[metric] <= fastest + tolerance_ms),
                key=lambda r: rank(strategy, r["config"]),
            )
            per_strategy[strategy] = {
                "config": equal[0]["config"],
                "ms": equal[0][metric],
                "fastest_ms": fastest,
                "equally_fast": [r["config"] for r in equal],
            }
        fastest = min(r[metric] for r in recs)
        equal = sorted(
            (r for r in recs if r[metric] <= fastest + tolerance_ms),
            key=lambda r: rank(r["strategy"], r["config"]),
        )
        near[shape] = [(r["strategy"], r["config"]) for r in equal]
        best = equal[0]
        flop = 2 * shape[0] * shape[1] * shape[2] * shape[3]
        shapes.append(
            {
                "M": shape[0],
                "N": shape[1],
                "K": shape[2],
                "B": shape[3],
                "strategy": best["strategy"],
                "config": best["config"],
                "ms": best[metric],
                "gflops": flop / (best[metric] * 1e-3) / 1e9,
                "per_strategy": per_strategy,
            }
        )
    archetypes = reduce_to_archetypes(near, rank)
    overall: dict[str, str] = {}
    for strategy in STRATEGIES:
        votes: dict[str, int] = {}
        for s in shapes:
            for c in s["per_strategy"].get(strategy, {}).get("equally_fast", []):
                votes[c] = votes.get(c, 0) + 1
        if votes:
            overall[strategy] = min(votes, key=lambda c: (-votes[c], rank(strategy, c)))
    device = next((r.get("device", "") for r in records if r.get("device")), "")
    return AclTuneResults(
        list(records),
        shapes,
        archetypes,
        overall,
        tolerance_ms,
        rank_by,
        device,
        {s: dict(o) for s, o in order.items()},
    )


def reduce_to_archetypes(
    near: Mapping[GemmParam, Sequence[tuple[str, str]]],
    rank: Callable[[str, str], tuple[int, float]],
) -> list[dict[str, Any]]:
    """Greedy cover of the shapes by shared configs. ``near``: shape -> [(strategy, config)]
    equally fast as the shape's best (in input order); ``rank(strategy, config)`` breaks ties.
    Returns ``[{"strategy", "config", "representative", "shapes"}]``."""
    left = list(near)
    out: list[dict[str, Any]] = []
    while left:
        count: dict[tuple[str, str], int] = {}
        for shape in left:
            for cand in near[shape]:
                count[cand] = count.get(cand, 0) + 1
        strategy, config = min(count, key=lambda c: (-count[c], rank(*c)))
        members = [sh for sh in left if (strategy, config) in near[sh]]
        out.append(
            {
                "strategy": strategy,
                "config": config,
                "representative": list(members[0]),
                "shapes": [list(sh) for sh in members],
            }
        )
        left = [sh for sh in left if sh not in members]
    return out


# ---- 3. the whole workflow, and looking a shape up


def tune_acl(
    params: str | os.PathLike[str] | Iterable[Sequence[int]],
    config_lists: Mapping[str, ConfigList] | None = None,
    out_dir: str | None = None,
    device: Device | str | None = None,
    repeat: int = 5,
    warmup: int = 1,
    tolerance_ms: float = DEFAULT_TOLERANCE_MS,
    rank_by: str = "total",
    strategies: Sequence[str] | None = None,
    resume: bool = True,
    progress: bool | Callable[[Record], None] = False,
) -> AclTuneResults:
    """Benchmark every config of every strategy on every shape of ``params`` (a GEMMParam CSV
    path or a list of (M, N, K[, B])), analyse, and save the results in ``out_dir`` (if given).
    ``config_lists``: ``{strategy: CSV path or list of configs}``, default the shipped lists;
    ``strategies``: which strategies to run (default those of ``config_lists``, else all).
    ``progress=True`` prints one line per measurement to stderr."""
    shapes = gemm_params(params)
    lists = resolve_config_lists(config_lists, strategies)
    log_path = os.path.join(out_dir, BENCHMARK_FILE) if out_dir else None
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    records = run_benchmarks(
        shapes,
        lists,
        device,
        repeat,
        warmup,
        log_path,
        resume,
        print_progress if progress is True else (progress or None),
    )
    results = analyse(
        records, tolerance_ms, rank_by, {s: [c.label for c in cs] for s, cs in lists.items()}
    )
    if out_dir:
        results.save(out_dir)
    return results


@dataclass(frozen=True)
class AclChoice:
    """The ACL-style GEMM to run for a shape: ``AclGemm(choice.strategy, choice.config, ...)``."""

    strategy: str
    config: GEMMConfig
    ms: float  # measured on ``tuned_shape``
    tuned_shape: GemmParam  # (M, N, K, B) the choice was tuned on
    exact: bool  # tuned_shape is the shape asked for


def best_acl(
    M: int,
    N: int,
    K: int,
    results: AclTuneResults | str,
    batch: int = 1,
    strategy: str | None = None,
    device: Device | str | None = None,
) -> AclChoice:
    """The best strategy and config for GEMM (M, N, K, batch) in ``results`` (an
    ``AclTuneResults``, or the folder / acl_best.json that ``save`` wrote). ``strategy``: the
    best of that strategy only. A shape that was not tuned takes the choice of the nearest tuned
    shape (distance: sum of |log| ratios of M, N, K) whose config fits it (``check_fits``;
    ``device`` for the device's limits)."""
    if not isinstance(results, AclTuneResults):
        results = AclTuneResults.load(results)
    want = strategy_name(strategy) if strategy else None
    dev = resolve_device(device) if device else None

    def dist(s: dict[str, Any]) -> float:
        return sum(
            abs(math.log(a / b)) for a, b in zip((M, N, K, batch), (s["M"], s["N"], s["K"], s["B"]))
        )

    for s in sorted(results.shapes, key=dist):
        if want:
            if want not in s["per_strategy"]:
                continue
            pick = s["per_strategy"][want]
            strat, label, ms = want, pick["config"], pick["ms"]
        else:
            strat, label, ms = s["strategy"], s["config"], s["ms"]
        cfg = GEMMConfig.parse(strat, label)
        try:
            check_fits(cfg, M, N, K, batch, dev)
        except AclConfigError:
            continue
        tuned = (s["M"], s["N"], s["K"], s["B"])
        return AclChoice(strat, cfg, ms, tuned, tuned == (M, N, K, batch))
    raise AclConfigError(
        f"no tuned {want or 'ACL-style'} config fits GEMM {M}x{N}x{K} batch "
        f"{batch} in these results ({len(results.shapes)} shapes)"
    )


def main(argv: Sequence[str] | None = None) -> AclTuneResults:
    """``python -m tensorsched.baselines.acl_tuner SHAPES.csv [--out DIR] ...``: tune, print
    the best strategy and config per shape."""
    p = argparse.ArgumentParser(
        prog="python -m tensorsched.baselines.acl_tuner",
        description="ACL-style GEMM tuner: benchmark every config of "
        "every strategy on every shape, then pick the best",
    )
    p.add_argument("shapes", help="GEMMParam list: headerless CSV M,N,K,B")
    p.add_argument("--out", help="folder for acl_benchmark.jsonl, acl_best.json/.csv, ...")
    p.add_argument("--strategies", help="comma-separated; default all")
    for s in STRATEGIES:
        p.add_argument(
            f"--{s.replace('_', '-')}-configs",
            dest=f"cfg_{s}",
            help=f"GEMMConfig search list of {s} (CSV); default the shipped one",
        )
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE_MS, help="ms")
    p.add_argument("--rank-by", choices=("total", "gemm"), default="total")
    p.add_argument("--device", help="TS_DEVICE-style device choice")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    lists = {s: getattr(args, f"cfg_{s}") for s in STRATEGIES if getattr(args, f"cfg_{s}")}
    strategies = args.strategies.split(",") if args.strategies else None
    if lists and not strategies:
        strategies = list(STRATEGIES)
    res = tune_acl(
        args.shapes,
        lists,
        args.out,
        args.device,
        args.repeat,
        tolerance_ms=args.tolerance,
        rank_by=args.rank_by,
        strategies=strategies,
        progress=not args.quiet,
    )
    print(
        f"device: {res.device}; tolerance {res.tolerance_ms} ms; ranked by {res.rank_by}_ms "
        "(mean of the runs)"
    )
    for sh in res.shapes:
        alts = "  ".join(
            f"{k}: {v['config']} {v['ms']:.3f} ms" for k, v in sh["per_strategy"].items()
        )
        print(
            f"{sh['M']}x{sh['N']}x{sh['K']} B{sh['B']}: {sh['strategy']} {sh['config']} "
            f"{sh['ms']:.3f} ms {sh['gflops']:.1f} GFLOP/s   [{alts}]"
        )
    print(f"{len(res.archetypes)} archetypes; one config per strategy: {res.overall_best}")
    return res


__all__ = [
    "tune_acl",
    "best_acl",
    "analyse",
    "run_benchmarks",
    "reduce_to_archetypes",
    "AclTuneResults",
    "AclChoice",
    "read_records",
    "gemm_params",
    "resolve_config_lists",
    "DEFAULT_TOLERANCE_MS",
    "TIE_RULE",
]


if __name__ == "__main__":
    try:
        main()
    except TensorschedError as exc:
        sys.exit(f"error: {exc}")
