"""tensorsched against the ACL-style baseline, side by side in one run on one device.

Both sides are tuned first (or their logs are loaded: both tuners resume): tensorsched's grid
searcher over a template's knobs, and the ACL-style tuner over its GEMMConfig search lists.
Then, for each shape, ``rounds`` rounds each time the best tensorsched kernel and the best
ACL-style kernel back to back; the ratio of each round is kept, and the table reports the
median ratio and its spread (min..max) over the rounds.

GEMM compares with ``AclGemm``; conv2d compares tensorsched's conv template with the GEMM
method (im2col + the best ACL-style GEMM of the conv's GEMM shape + col2im).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import TensorschedError
from ..ops.conv2d import ConvShape
from ..runtime.module import OpenCLModule
from ..runtime.numerics import TOL, relative_error
from ..runtime.table import format_table
from ..schedules.lower import lower
from ..tune.dispatch import apply_best, best_config
from ..tune.task import Task
from ..tune.tuner import tune
from .acl_gemm import AclConv2d, AclGemm, conv2d_gemm_shape
from .acl_tuner import ConfigList, GemmParam, best_acl, tune_acl


@dataclass
class Row:
    shape: str
    flop: int
    ts_seconds: float
    acl_seconds: float
    acl_strategy: str
    ratios: list[float]
    ts_config: dict[str, Any]
    acl_config: str

    @property
    def ratio(self) -> float:
        return float(np.median(self.ratios))

    @property
    def spread(self) -> tuple[float, float]:
        return float(min(self.ratios)), float(max(self.ratios))


def compare(
    tasks: Sequence[Task],
    log: str,
    acl_dir: str,
    trials: int | None = None,
    strategy: str = "random",
    rounds: int = 5,
    repeat: int = 5,
    device: str | None = None,
    progress: bool = True,
    timeout: float = 60.0,
    acl_config_lists: Mapping[str, ConfigList] | None = None,
) -> list[Row]:
    """Tune (or resume) both sides for ``tasks`` (``Task`` objects) and measure them;
    ``acl_config_lists`` replaces the ACL-style tuner's shipped search lists."""
    gemm_params: list[GemmParam] = []
    for t in tasks:
        if t.kind == "gemm":
            M, N, K = t.shape
            gemm_params.append((M, N, K, 1))
        else:
            gemm_params.append(conv2d_gemm_shape(*t.shape))
        tune(
            t,
            log,
            strategy=strategy,
            trials=trials,
            resume=True,
            device=device,
            progress=progress,
            timeout=timeout,
        )
    os.makedirs(acl_dir, exist_ok=True)
    acl = tune_acl(
        sorted(set(gemm_params)),
        config_lists=acl_config_lists,
        out_dir=acl_dir,
        device=device,
        repeat=repeat,
        resume=True,
        progress=progress,
    )

    rows = []
    with apply_best(log, device):
        for t, gp in zip(tasks, gemm_params):
            cfg = best_config(t)
            if cfg is None:
                raise TensorschedError(f"no correct tensorsched kernel was found for {t}")
            s, args, _ = t.instantiate(cfg)
            mod = OpenCLModule(lower(s, args), device=device)
            inputs = t.inputs(args)
            ref = t.reference(inputs)
            out = np.full(args[-1].shape, np.nan, np.float32)
            mod(*inputs, out)
            _check(out, ref, f"tensorsched {t}")
            M, N, K, B = gp
            choice = best_acl(M, N, K, acl, batch=B, device=device)
            base: AclGemm | AclConv2d
            if t.kind == "gemm":
                base = AclGemm(choice.strategy, choice.config, M, N, K, device=device)
            else:
                base = AclConv2d(choice.strategy, choice.config, ConvShape(*t.shape), device=device)
            a_out = np.full(args[-1].shape, np.nan, np.float32)
            base(inputs[0], inputs[1], a_out)
            _check(a_out, ref, f"ACL-style {choice.strategy} for {t}")
            ts_times, acl_times, ratios = [], [], []
            for _ in range(rounds):
                ts_t = mod.time_evaluator(repeat=repeat)(*inputs, out).device_median
                # a convolution's weights are constant: ACL reshapes them once, untimed
                ac_t = base.time(
                    inputs[0], inputs[1], a_out, repeat=repeat, include_rhs_reshape=t.kind == "gemm"
                ).mean
                ts_times.append(ts_t)
                acl_times.append(ac_t)
                ratios.append(ac_t / ts_t)
            rows.append(
                Row(
                    _shape_str(t),
                    t.flop,
                    float(np.median(ts_times)),
                    float(np.median(acl_times)),
                    choice.strategy,
                    ratios,
                    dict(cfg),
                    str(choice.config),
                )
            )
    return rows


def _check(out: NDArray[np.float32], ref: NDArray[np.float64], what: str) -> None:
    err = relative_error(out, ref)
    if not err <= TOL["float32"]:
        raise TensorschedError(f"{what} does not match numpy (relative error {err:.1e})")


def _shape_str(t: Task) -> str:
    if t.kind == "gemm":
        return "GEMM " + "x".join(map(str, t.shape))
    n, ci, h, w, co, kh, kw, s, p = t.shape
    return f"conv {h}x{w}x{ci}->{co} {kh}x{kw} s{s} p{p}" + (f" n{n}" if n != 1 else "")


def print_table(rows: list[Row], device_name: str) -> None:
    print(
        f"\nside by side on {device_name} (device time; tensorsched: median of repeats, "
        "ACL-style: mean of repeats as ACL reports; ratio = ACL time / tensorsched time per "
        "round, median and min..max over rounds)"
    )
    body = [
        [
            r.shape,
            f"{r.flop / r.ts_seconds / 1e9:.1f} GF/s",
            f"{r.flop / r.acl_seconds / 1e9:.1f} GF/s",
            r.acl_strategy,
            f"{r.ratio:.2f}x",
            "{:.2f}..{:.2f}".format(*r.spread),
        ]
        for r in rows
    ]
    head = ["shape", "tensorsched", "ACL-style", "strategy", "ratio", "spread"]
    print(format_table(head, body, "<>><><"))


def plot(rows: Sequence[Row], path: str) -> None:
    """A bar chart of both sides' GFLOP/s per shape, written to ``path``."""
    try:  # matplotlib is optional (the ``plot`` extra): imported only when a plot is asked for
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TensorschedError("--plot needs matplotlib: pip install 'tensorsched[plot]'") from None
    fig, ax = plt.subplots(figsize=(max(6, len(rows) * 0.8), 4))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r.flop / r.ts_seconds / 1e9 for r in rows], 0.4, label="tensorsched")
    ax.bar(x + 0.2, [r.flop / r.acl_seconds / 1e9 for r in rows], 0.4, label="ACL-style")
    ax.set_xticks(x, [r.shape for r in rows], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("GFLOP/s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
