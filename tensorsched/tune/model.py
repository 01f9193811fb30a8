"""Model-based search: a gradient-boosted cost model (LightGBM, the ``tune`` extra) trained on
the trials so far, explored by simulated annealing, with transfer from earlier logs.

- **Labels**: per task, the log of a trial's throughput over the task's best
  (``log(gflops / best)``, 0 for the best); a trial that failed (invalid, wrong, timeout,
  crash, build error) gets ``FAIL``, below every correct one. Normalised per task, trials of
  other shapes teach the same model (the shape is among the features).
- **Two boosters**: one on the config features (``features.SpaceFeatures``) ranks the
  thousands of unbuilt candidates the annealing visits; one on config plus IR features
  (``features.lower_features``) re-ranks the shortlist. The lowering also proves some
  candidates invalid (constraints, work-group size, memory): those are learned as failures
  and never reach the build pool or the device. Candidates are lowered in batches
  (``features.Lowering``: in a pool of processes when the proposer has ``workers``, each
  candidate once per process), which is most of the proposer's time.
- **Batches** (``ModelProposer``): the nearest logged shapes' best configs first (transfer),
  then each batch is the model's best unmeasured candidates, a share (``EXPLORE``) of random
  ones and ``LOCAL`` neighbours of the fastest trials so far (one knob changed: values that
  no logged trial had, which the model cannot rate, are tried where they matter most); the
  model is retrained as trials land.
- ``predict_config``: a config for a task no log has, from the logs of other shapes.
- **Families**: the tasks whose trials teach each other. A template that schedules a GEMM with
  a GEMM template's knobs (``templates.GEMM_VIEWS``: a conv scheduled as a GEMM) is in that
  GEMM template's family, at the GEMM's ``(M, N, K)`` (``features.shape_vector``): GEMM trials
  teach its model and seed its search, and its trials teach the GEMM's. A config crosses from
  one template to another only as a point of the receiving task's space (``portable``), a row
  only between templates of the same knobs and candidates (``knobs_of``).
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import TensorschedError
from ..ops.space import Config
from ..ops.templates import TWINS
from ..runtime.device import PORTABLE_LIMITS, DeviceLimits
from .features import (
    IR_COLUMNS,
    Lowered,
    Lowering,
    SpaceFeatures,
    shape_vector,
    task_bytes,
    task_gemm_view,
)
from .log import ranked_configs, read_log
from .record import Record, config_key, jsonable
from .task import Task

try:  # the ``tune`` extra
    import lightgbm
except ImportError:  # pragma: no cover - the model strategy says what to install
    lightgbm = None  # type: ignore[assignment]

FAIL = -4.0  # label of a failed trial (log-throughput relative to the task's best)
FLOOR = -3.5  # correct trials' labels are clipped here, above FAIL
EXPLORE = 0.15  # share of each batch chosen at random
LOCAL = 1  # candidates a batch: one knob of one of the INCUMBENTS fastest trials changed
INCUMBENTS = 3
BATCH = 8  # candidates proposed per model round
SHORTLIST = 3  # the annealing's shortlist is this many batches, re-ranked with IR features
REFILLS = 8  # rounds of a batch's refill (the random draws doubling each round)
EXHAUSTIVE = 4096  # spaces up to this size are scored whole instead of annealed
MIN_ROWS = 4  # rows (with at least two distinct labels) before a model is fitted
# the best configs of the nearest logged shapes are measured first: on an H100, over 20 GEMM
# shapes no log held (benchmarks/gpu/predict_study.py, gpu/results/predict_study_2026-11-25/),
# the best of those seeds reached 0.87x cuBLAS (geomean) with 3 shapes x 2 configs, 0.92x with
# 8 x 4, and 0.93x with every logged shape's best 4
NEIGHBOURS = 8
SEEDS_PER_SHAPE = 4
# an untuned task's config comes from another template of its family (a GEMM for a conv
# scheduled as one) only from a shape this near (log2-distance: one extent within a factor of
# 2, the others equal): on PoCL, GEMM bests carried from farther (MobileNet-v1's 512 x 196 x
# 512 from 512^3, 5.1 ms against the default's 0.64) were slower than the defaults
NEAR_VIEW = 1.0
# an untuned prediction ranks the best configs of this many nearest logged shapes by their
# times rescaled to the new shape (``rescaled_ms``), each distrusted by its distance: on an
# H100 over 30 GEMM shapes in no log (benchmarks/gpu/predict_report.py), 0.82x cuBLAS against
# 0.75x for the nearest shape's best (0.63x against 0.80x on the 10 shapes farthest from the
# log: 96x96x9216 0.23x -> 0.80x)
PREDICT_SHAPES = 5
# ... each distrusted by e^(DISTRUST * distance), on every device. On a GPU e^distance (until
# 2026-11-26) let the nearest shapes' bests win however slow ``rescaled_ms`` expected them; on
# an H100 over 12 GEMM shapes in no log, every logged best
# measured (gpu/results/predict_rank_2026-11-26/), the rule picked configs 0.80x cuBLAS against
# 0.70x before (0.82x of the best candidate's speed against 0.72x). On PoCL the weaker distrust
# once picked slower configs (4 of 5 shapes where it changed the pick, 0.15x-0.40x), while the
# IR features counted the idle work-items of a tile wider than the shape as working: since they
# do not (``features.pass_fraction``), on the AMD EPYC VM over 16 GEMM shapes in no log,
# e^(0.25 d) picked configs at 0.89x numpy against 0.84x with e^d
# (results/cpu_amd_2026-11-29_s27/predict.txt)
DISTRUST = 0.25
GROUPS_PER_UNIT = 2  # work-groups a CPU device's compute unit counts for, as rescaled_ms assumes
LAUNCH_MS = 0.003  # a kernel's launch, as rescaled_ms assumes
# a GPU writes split-K's partial products and reads them again at this cost (2 TB/s, about
# an H100's memory), as rescaled_ms assumes: a carried split of 16 at 1494x1779x901 moved
# 340 MB, which the work-groups' loop trips do not show (0.28 ms against 0.15 unsplit)
SPLIT_BYTE_MS = 5e-10
MAX_PAST = 1000  # other shapes' trials learned from (this template's first, most recent first)
MAX_PAST_IR = 250  # ... of which the IR features are computed (each lowered once)
LOWER_WORKERS = 8  # at most this many processes lower candidates for a proposer
LOGS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "logs")
PARAMS = {
    "objective": "regression",
    "learning_rate": 0.15,
    "num_leaves": 15,
    "min_data_in_leaf": 2,
    "min_data_in_bin": 1,
    "feature_fraction": 0.9,
    "lambda_l2": 1.0,
    "num_threads": 1,
    "deterministic": True,
    "force_row_wise": True,
    "verbose": -1,
}
ROUNDS = 80


class ModelUnavailableError(TensorschedError):
    """The model strategy needs LightGBM (the ``tune`` extra)."""


def require_lightgbm() -> None:
    if lightgbm is None:
        raise ModelUnavailableError(
            "strategy 'model' needs LightGBM: pip install 'tensorsched[tune]' (or lightgbm), "
            "or use --strategy random"
        )


# ---------------------------------------------------------------------------- logs


def device_slug(device: str) -> str:
    """The file-name form of a device name (the shipped logs' keys)."""
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-") or "device"


def shipped_logs(device: str, folder: str | None = None) -> list[str]:
    """The package's logs for ``device``: ``logs/<device slug>.jsonl`` and
    ``logs/<device slug>/*.jsonl`` (the H200 through NVIDIA's OpenCL is shipped)."""
    folder = folder or LOGS_DIR
    slug = device_slug(device)
    out = []
    single = os.path.join(folder, slug + ".jsonl")
    if os.path.isfile(single):
        out.append(single)
    sub = os.path.join(folder, slug)
    if os.path.isdir(sub):
        out += sorted(os.path.join(sub, f) for f in os.listdir(sub) if f.endswith(".jsonl"))
    return out


def sibling_logs(device: str, folder: str | None = None) -> tuple[str, list[str]] | None:
    """For a device the package has no log of: ``(name, paths)`` of a shipped device on the
    same OpenCL platform (``"NVIDIA CUDA / NVIDIA H100 80GB HBM3"`` gets the H200's), the one
    whose name shares the longest start with ``device``'s; ``None`` when there is none. Its
    configs are a starting point for this device (each checked against its limits), never
    taken as measured here."""
    folder = folder or LOGS_DIR
    platform = device.split(" / ", 1)[0]
    found: dict[str, list[str]] = {}
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        path = os.path.join(folder, name)
        paths = (
            [path]
            if name.endswith(".jsonl") and os.path.isfile(path)
            else sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".jsonl"))
            if os.path.isdir(path)
            else []
        )
        for p in paths:
            other = _first_device(p)  # a shipped log holds one device: its first record's
            if other and other != device and other.split(" / ", 1)[0] == platform:
                found.setdefault(other, []).append(p)
    if not found:
        return None
    best = max(found, key=lambda d: (len(os.path.commonprefix([d, device])), d))
    return best, found[best]


def _first_device(path: str) -> str | None:
    """The device that a log's first record names (only that line is read: the whole log is
    read, and checked, by ``history`` when it is the one), or ``None``."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            line = next((ln for ln in f if ln.strip()), "")
        device = json.loads(line).get("device") if line else None
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    return device if isinstance(device, str) else None


def family(task: Task) -> tuple:
    """What tasks share for their trials to teach each other: the template (and dtype); for a
    template with a GEMM view (a conv scheduled as a GEMM), that GEMM template's."""
    view = task_gemm_view(task)
    if view is not None:
        return ("gemm", view[0], task.dtype, "")
    return (task.kind, task.template, task.dtype, task.expr)


def knobs_of(space: Config) -> dict[str, tuple[Any, ...]]:
    """A space's knobs and their candidates: two templates' trials teach one model only where
    these are the same (the same feature columns, meaning the same)."""
    return {name: knob.candidates for name, knob in space.space.items()}


def portable(config: dict[str, Any], space: Config) -> bool:
    """Whether ``config`` (a trial of another template of the family) names knobs of
    ``space`` only, each with one of its candidates: then it is a point of ``space`` (the
    knobs it does not name at their defaults). Whether that point is valid at the task's
    shape and on the device is the template's to say (its constraints, the lowering)."""
    for name, value in config.items():
        knob = space.space.get(name)
        if knob is None or (tuple(value) if isinstance(value, list) else value) not in (
            knob.candidates
        ):
            return False
    return True


def _template_of(r: Record) -> tuple[Any, Any]:
    return r.task.get("kind"), r.task.get("template")


def history(task: Task, device: str, paths: Iterable[str]) -> list[Record]:
    """The records of ``task``'s family on ``device`` in the logs ``paths`` (each read once;
    a missing one is skipped), duplicates (same task and config) dropped."""
    fam, seen, out = family(task), set(), []
    for path in dict.fromkeys(paths):
        for k, r in _read_by_family(path).get((device, fam), ()):
            if k not in seen:
                seen.add(k)
                out.append(r)
    return out


_BY_FAMILY: dict[tuple[str, int, int], dict[tuple, list[tuple[tuple[str, str], Record]]]] = {}


def _read_by_family(path: str) -> dict[tuple, list[tuple[tuple[str, str], Record]]]:
    """A log's records grouped by ``(device, family)``, each with its ``(task key, config
    key)``; read once per process while the file keeps its size and time (a network's tasks
    all look in the shipped logs: reading and checking them again for each took 0.4 s a task)."""
    try:
        st = os.stat(path)
    except OSError:
        return {}
    key = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
    got = _BY_FAMILY.get(key)
    if got is None:
        got = {}
        for r in read_log(path):
            try:
                t = Task.from_dict(r.task)
            except TensorschedError:
                continue
            got.setdefault((r.device, family(t)), []).append(((t.key(), r.config_key()), r))
        if len(_BY_FAMILY) > 64:
            _BY_FAMILY.clear()
        _BY_FAMILY[key] = got
    return got


def same_family(task: Task, records: Iterable[Record]) -> list[Record]:
    """The records of ``task``'s family, duplicates (same task and config) dropped."""
    fam = family(task)
    seen: set[tuple[str, str]] = set()
    out: list[Record] = []
    for r in records:
        try:
            t = Task.from_dict(r.task)
        except TensorschedError:
            continue
        k = (t.key(), r.config_key())
        if family(t) == fam and k not in seen:
            seen.add(k)
            out.append(r)
    return out


# ---------------------------------------------------------------------------- transfer


def fit_value(value: Any, candidates: Sequence[Any], default: Any) -> Any:
    """``value`` if it is a candidate, else the nearest candidate (numbers and tuples of
    numbers by log-distance), else ``default``."""
    value = tuple(value) if isinstance(value, list) else value
    if value in candidates:
        return value

    def dist(c: Any) -> float:
        a = value if isinstance(value, tuple) else (value,)
        b = c if isinstance(c, tuple) else (c,)
        if len(a) != len(b) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in a + b
        ):
            return math.inf
        return sum(abs(math.log2(abs(x) + 1) - math.log2(abs(y) + 1)) for x, y in zip(a, b))

    best = min(candidates, key=dist)
    return best if dist(best) < math.inf else default


def fit_config(config: dict[str, Any], space: Config) -> dict[str, Any]:
    """``config`` (of another shape's space) made a point of ``space``: each knob's value, or
    the nearest legal one, or its default."""
    return {
        name: fit_value(config.get(name, knob.default), knob.candidates, knob.default)
        for name, knob in space.space.items()
    }


def defaults_with(task: Task, config: dict[str, Any]) -> dict[str, Any] | None:
    """Each knob's default at ``task``'s shape given ``config``'s values of the others (a
    default may depend on the shape and on them: the CPU GEMM's ``tail`` is ``shift`` where its
    tiles leave a remainder, its ``tail_k`` ``peel`` where its ``tile_k`` does), or ``None``
    where the template refuses ``config``."""
    cfg = Config(config, limits=PORTABLE_LIMITS)  # limits decide constraints, not defaults
    try:
        task.instantiate(cfg)
    except TensorschedError:
        return None
    return {name: knob.default for name, knob in cfg.space.items()}


def carry_config(config: dict[str, Any], there: Task, task: Task, space: Config) -> dict[str, Any]:
    """``config``, logged for task ``there``, made a point of ``space`` (``task``'s): each knob
    it chose, or the nearest legal value (``fit_config``); a knob it left at its default at
    ``there`` (or does not name) at its default here, given the others. A default that
    depends on the shape follows the shape: a GEMM logged with ``tail="guard"`` where its tiles
    divided it says nothing of a shape where they do not (guarded stores there once made
    ResNet-18's 14x14 convs 45 times slower on PoCL than the default, ``shift``). A choice
    the template refuses at ``task``'s shape whatever the device (``tail_k="peel"`` where the
    K steps divide K) is undone: that knob takes its default here."""
    logged = defaults_with(there, config) or {}
    chosen = {
        name: value
        for name, value in config.items()
        if name not in logged or jsonable(value) != jsonable(logged[name])
    }
    fitted = {name: v for name, v in fit_config(chosen, space).items() if name in chosen}
    here = defaults_with(task, fitted) or {}
    carried = {
        name: fit_value(fitted[name] if name in fitted else here.get(name, knob.default),
                        knob.candidates, knob.default)
        for name, knob in space.space.items()
    }  # fmt: skip
    why = _refusal(task, carried)
    if why is None:
        return carried
    # a choice this shape refuses whatever the device (tail_k="peel" where the K steps divide
    # K, a split of K finer than its step): that knob at its default here, the first such
    # knob (those the refusal names first) that makes the config valid; limits of a device
    # are left to the caller's check
    undo = [n for n in chosen if n in carried and n in here and carried[n] != here[n]]
    undo.sort(key=lambda n: n not in why)
    for name in undo:
        undone = {**carried, name: here[name]}
        if _refusal(task, undone) is None:
            return undone
    return carried


NO_LIMITS = DeviceLimits("no device limits", 1 << 20, (1 << 20,) * 3, 1 << 40, group_ordering=True)


def _refusal(task: Task, config: dict[str, Any]) -> str | None:
    """Why ``task``'s template refuses ``config`` on a device without limits, or None."""
    cfg = Config(config, limits=NO_LIMITS)
    try:
        task.instantiate(cfg)
    except TensorschedError as exc:
        return str(exc)
    return None if cfg.valid else "; ".join(cfg.constraints)


def shape_distance(a: Task, b: Task) -> float:
    """The log2-distance of two tasks' shapes (``shape_vector``: a GEMM view's extents), or
    infinity where they have different numbers of extents."""
    x, y = np.array(shape_vector(a)), np.array(shape_vector(b))
    if x.shape != y.shape:
        return math.inf
    return float(np.linalg.norm(np.log2(x + 1) - np.log2(y + 1)))


def nearest_bests(
    task: Task, space: Config, records: Sequence[Record], shapes: int = NEIGHBOURS
) -> list[dict[str, Any]]:
    """The best configs of the logged shapes nearest to ``task`` (log-shape distance), made
    points of ``space``, nearest shape first, without duplicates. A shape of another template
    of the family (a GEMM for a conv scheduled as one) is measured at its GEMM view's extents,
    and gives only its configs that are points of ``space`` (``portable``). Each config is
    carried over by ``carry_config``."""
    return list(_nearest_bests(task, space, records, shapes))


def logged_shapes(
    task: Task, space: Config, records: Sequence[Record]
) -> list[tuple[float, Task, list[Record]]]:
    """``(log-shape distance, task, its correct configs fastest first, each once at the
    median of its measurements)`` of each other logged
    shape (of ``task``'s template, or of another whose configs are points of ``space``),
    nearest first."""
    mine = (task.kind, task.template)
    by_task: dict[str, list[Record]] = {}
    for r in records:
        if r.status != "ok" or r.device_ms is None or r.task_key() == task.key():
            continue
        if _template_of(r) == mine or portable(r.config, space):
            by_task.setdefault(r.task_key(), []).append(r)
    ranked = []
    for key, recs in by_task.items():
        there = Task.from_dict(recs[0].task)
        recs = ranked_configs(recs)  # each config once, at its median
        ranked.append((shape_distance(task, there), key, there, recs))
    ranked.sort(key=lambda x: (x[0], x[1]))
    return [(d, there, recs) for d, _, there, recs in ranked]


def _nearest_bests(
    task: Task, space: Config, records: Sequence[Record], shapes: int
) -> Iterator[dict[str, Any]]:
    """``nearest_bests``, one at a time (each carried over when it is asked for)."""
    keys: set[str] = set()
    for _, there, recs in logged_shapes(task, space, records)[:shapes]:
        for r in recs[:SEEDS_PER_SHAPE]:
            c = carry_config(r.config, there, task, space)
            if config_key(c) not in keys:
                keys.add(config_key(c))
                yield c


# ---------------------------------------------------------------------------- the model


@dataclass
class Row:
    """One training example: a task's config, its features and its result."""

    task_key: str
    cheap: dict[str, float]
    ir: dict[str, float] | None
    gflops: float | None  # None: failed


class CostModel:
    """The two boosters (config features; config plus IR features) and their training set."""

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.rows: list[Row] = []
        self.cheap: Any = None
        self.full: Any = None
        self.cheap_cols: list[str] = []
        self.full_cols: list[str] = []
        self.fitted_on = 0  # rows of the last fit
        self.fit_s = 0.0  # seconds of the last fit
        self._align_key: tuple | None = None  # score_cheap's column map, and what it maps
        self._align = np.zeros(0, dtype=np.int64)

    def add(self, row: Row) -> None:
        self.rows.append(row)

    def labels(self) -> np.ndarray:
        best: dict[str, float] = {}
        for r in self.rows:
            if r.gflops:
                best[r.task_key] = max(best.get(r.task_key, 0.0), r.gflops)
        return np.array(
            [
                max(math.log(r.gflops / best[r.task_key]), FLOOR) if r.gflops else FAIL
                for r in self.rows
            ]
        )

    def fit(self) -> bool:
        """Fit both boosters on the rows (when there are enough); whether a model is ready."""
        if len(self.rows) == self.fitted_on:
            return self.cheap is not None
        y = self.labels()
        if len(self.rows) < MIN_ROWS or len(set(y.tolist())) < 2:
            return False
        require_lightgbm()
        t = time.perf_counter()
        self.cheap_cols = sorted({c for r in self.rows for c in r.cheap})
        self.cheap = self._train(self._matrix(self.rows, self.cheap_cols, False), y)
        with_ir = [i for i, r in enumerate(self.rows) if r.ir is not None]
        self.full = None
        if len(with_ir) >= MIN_ROWS and len(set(y[with_ir].tolist())) >= 2:
            self.full_cols = self.cheap_cols + list(IR_COLUMNS)
            rows = [self.rows[i] for i in with_ir]
            self.full = self._train(self._matrix(rows, self.full_cols, True), y[with_ir])
        self.fitted_on = len(self.rows)
        self.fit_s = time.perf_counter() - t
        return True

    def _train(self, X: np.ndarray, y: np.ndarray) -> Any:
        params = {**PARAMS, "seed": self.seed}
        data = lightgbm.Dataset(X, y, params={"min_data_in_bin": 1, "verbose": -1})
        return lightgbm.train(params, data, num_boost_round=ROUNDS)

    @staticmethod
    def _matrix(rows: Sequence[Row], cols: Sequence[str], ir: bool) -> np.ndarray:
        out = np.full((len(rows), len(cols)), np.nan)
        index = {c: i for i, c in enumerate(cols)}
        for n, r in enumerate(rows):
            for c, v in r.cheap.items():
                if c in index:
                    out[n, index[c]] = v
            if ir and r.ir:
                for c, v in r.ir.items():
                    if c in index:  # not ``temp_bytes``, which only rescaled_ms's floor reads
                        out[n, index[c]] = v
        return out

    def score_cheap(self, sf: SpaceFeatures, digits: np.ndarray) -> np.ndarray:
        """Predicted log-throughput (relative) of points of ``sf``'s space (config features)."""
        X = sf.matrix(digits)
        key = (tuple(sf.columns), tuple(self.cheap_cols))
        if self._align_key != key:  # where each of the model's columns is in sf's (-1: none)
            cols = {c: i for i, c in enumerate(sf.columns)}
            self._align = np.array([cols.get(c, -1) for c in self.cheap_cols], dtype=np.int64)
            self._align_key = key
        aligned = np.full((X.shape[0], len(self.cheap_cols)), np.nan)
        have = self._align >= 0
        aligned[:, have] = X[:, self._align[have]]
        return self._predict(self.cheap, aligned)

    def score_full(self, rows: Sequence[Row]) -> np.ndarray:
        return self._predict(self.full, self._matrix(rows, self.full_cols, True))

    @staticmethod
    def _predict(booster: Any, X: np.ndarray) -> np.ndarray:
        # one thread: LightGBM's default (every core, through OpenMP) took ten times as long
        # for the annealing's batches of 64 rows, and longer still with the cores busy
        return np.asarray(booster.predict(X, num_threads=1))

    def state(self) -> str:
        if self.cheap is None:
            return f"model: {len(self.rows)} examples, not fitted yet"
        return f"model: fit on {self.fitted_on} in {self.fit_s * 1e3:.0f} ms"


# ---------------------------------------------------------------------------- proposing


class ModelProposer:
    """The model strategy's candidate source: ``next()`` gives the next config to measure
    (``None`` when the space is spent), ``observe()`` is told each trial's result.

    ``workers`` (2 or more) processes lower the candidates, started at the first batch that
    needs them (``modules``: the user's templates, for them to import); the proposals are the
    same as with none. ``close()`` stops them."""

    def __init__(
        self,
        task: Task,
        space: Config,
        limits: DeviceLimits,
        past: Sequence[Record] = (),
        seed: int = 0,
        batch: int = BATCH,
        explore: float = EXPLORE,
        workers: int = 0,
        modules: tuple[str | bytes, ...] = (),
        seeds: Sequence[Record] = (),
    ):
        require_lightgbm()
        self.task, self.space, self.limits = task, space, limits
        self.sf = SpaceFeatures(task, space)
        self.rng = np.random.default_rng(seed)
        self.batch, self.explore = batch, explore
        self.model = CostModel(seed)
        self.lowering = Lowering(limits, workers, modules)
        self.seen: set[str] = set()  # measured, proposed or proven invalid here
        self.fastest: list[tuple[float, dict[str, Any]]] = []  # (gflops, config), best first
        self.queue: list[dict[str, Any]] = []
        self.size = space.size()
        self.filtered = 0  # candidates the IR proved invalid (never built)
        self._spaces: dict[str, SpaceFeatures | None] = {task.key(): self.sf}
        self._knobs: dict[str, tuple[Any, ...]] | None = None  # the task's, unrestricted
        here = task.key()
        mine = [r for r in past if r.task_key() == here]
        # other shapes of this template first (of another template of the family after them:
        # a GEMM's trials for a conv's model), each the most recent first
        template = (task.kind, task.template)
        others = sorted(
            (r for r in past if r.task_key() != here),
            key=lambda r: (_template_of(r) != template, -r.timestamp),
        )
        # this task's own fastest trials in the logs (a shipped log's, another machine's) are
        # measured first, then the nearest shapes' bests; the search skips those its own log
        # has already
        own_seeds = [carry_config(r.config, task, task, space) for r in own_trials(task, mine)]
        # then those of ``seeds``, another device's records (``sibling_logs``): measured here
        # after this device's own, never learned as this device's times
        theirs = [r for r in seeds if r.task_key() == here]
        own_seeds += [carry_config(r.config, task, task, space) for r in own_trials(task, theirs)]
        try:
            for r in mine:
                self.seen.add(r.config_key())
            self._learn(mine + others[:MAX_PAST], MAX_PAST_IR)
            near = nearest_bests(task, space, past)
            near += nearest_bests(task, space, seeds) if seeds else []
            first = own_seeds + [c for c in near if config_key(c) not in self.seen]
            # each once (the sibling's configs may repeat this device's), lowered once
            self.queue = self._keep_valid(list({config_key(c): c for c in first}.values()))
        except BaseException:
            self.close()
            raise
        for c in self.queue:
            self.seen.add(config_key(c))
        for r in mine:
            if r.status == "ok" and r.gflops and self.sf.digits(r.config) is not None:
                self._rank(r.config, r.gflops)

    def close(self) -> None:
        """Stop the lowering processes (a later batch would start them again)."""
        self.lowering.close()

    # ---- learning

    def _space_of(self, task: Task) -> SpaceFeatures | None:
        key = task.key()
        if key not in self._spaces:
            try:
                self._spaces[key] = SpaceFeatures(task, task.space())
            except Exception:  # noqa: BLE001  (a template refusing that shape)
                self._spaces[key] = None
        return self._spaces[key]

    def _teaches(self, task: Task, sf: SpaceFeatures) -> bool:
        """Whether trials of ``task`` (of this task's family) are rows of this model: of the
        same template, or of one with the same knobs and candidates (a GEMM view's)."""
        if (task.kind, task.template) == (self.task.kind, self.task.template):
            return True
        if self._knobs is None:
            self._knobs = knobs_of(self.task.space())
        return knobs_of(sf.space) == self._knobs

    def _learn(self, records: Sequence[Record], lower: int) -> None:
        """Learn logged trials; the IR features of the first ``lower`` too (the IR model learns
        only from trials with them; the config model from all)."""
        learnt: list[tuple[Task, SpaceFeatures, Record, bool]] = []
        for n, r in enumerate(records):
            task = Task.from_dict(r.task)
            sf = self._space_of(task)
            if sf is not None and self._teaches(task, sf) and sf.digits(r.config) is not None:
                learnt.append((task, sf, r, n < lower and r.status != "invalid"))
        irs = iter(self.lowering.many([(t, r.config) for t, _, r, want in learnt if want]))
        for task, sf, r, want in learnt:
            ir = next(irs)[0] if want else None
            ok = r.status == "ok" and r.gflops
            self.model.add(Row(task.key(), sf.features(r.config), ir, r.gflops if ok else None))

    def observe(self, config: dict[str, Any], status: str, gflops: float | None) -> None:
        """Learn one trial of this task."""
        self.seen.add(config_key(config))
        # lowered already when it was proposed (the memo), unless it came from elsewhere
        ir = self.lowering(self.task, config)[0] if status != "invalid" else None
        good = gflops if status == "ok" and gflops else None
        self.model.add(Row(self.task.key(), self.sf.features(config), ir, good))
        if good:
            self._rank(config, good)

    def _rank(self, config: dict[str, Any], gflops: float) -> None:
        self.fastest.append((gflops, config))
        self.fastest.sort(key=lambda t: -t[0])
        del self.fastest[INCUMBENTS:]

    def _keep_valid(self, configs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The ``configs`` whose lowering may run; each provably invalid one is learned as a
        failure and counted in ``filtered``."""
        return self._valid(configs, self._lower(configs))

    def _valid(
        self, configs: Sequence[dict[str, Any]], lowered: Sequence[Lowered], most: int = -1
    ) -> list[dict[str, Any]]:
        """The first ``most`` (all, where negative) of ``configs`` whose lowering (``lowered``)
        may run; each provably invalid one up to there is learned as a failure and counted in
        ``filtered``."""
        out: list[dict[str, Any]] = []
        for c, (ir, why) in zip(configs, lowered):
            if 0 <= most <= len(out):
                break
            if why is None:
                out.append(c)
                continue
            self._refused(c, ir)
        return out

    def _refused(self, config: dict[str, Any], ir: dict[str, float] | None) -> None:
        """Learn a candidate its lowering proved invalid, as a failure, and never propose it."""
        self.filtered += 1
        self.seen.add(config_key(config))
        self.model.add(Row(self.task.key(), self.sf.features(config), ir, None))

    def _lower(self, configs: Sequence[dict[str, Any]]) -> list[Lowered]:
        return self.lowering.many([(self.task, c) for c in configs])

    # ---- proposing

    def state(self) -> str:
        return self.model.state()

    def next(self) -> dict[str, Any] | None:
        if not self.queue:
            self._refill()
        return self.queue.pop(0) if self.queue else None

    def _refill(self) -> None:
        # a batch: the model's best of its shortlist, LOCAL neighbours of the fastest trials
        # and random points, all lowered in one call (so in parallel, where the proposer has a
        # pool: three calls in a row cost three lowerings' latency, most of a GPU search's
        # proposing time). Rounds whose candidates were all proven invalid are retried, each
        # drawing twice as many random points as the last: in a space where few points are
        # valid (1-5% of gpu_tiled's at small shapes) a batch's few random draws may all fail
        for attempt in range(REFILLS):
            if len(self.seen) >= self.size:
                return
            ready = self.model.fit()
            n_explore = max(1, round(self.batch * self.explore))
            n_local = min(LOCAL, self.batch - n_explore) if ready and self.explore else 0
            n_model = self.batch - n_explore - n_local if ready else 0
            short = self._shortlist(n_model * SHORTLIST) if n_model else []
            keys = {config_key(c) for c in short}
            local = self._neighbours(n_local, keys) if n_local else []
            # random draws for the explore share and for the model's picks that the lowering
            # may prove invalid (the first ``want`` valid ones are kept, the rest stay unseen)
            drawn = self._random_points(
                ((self.batch - n_model - n_local) << attempt) + n_model, keys
            )
            lowered = self._lower(short + local + drawn)
            picks = self._model_picks(n_model, short, lowered[: len(short)]) if n_model else []
            picks += self._valid(local, lowered[len(short) : len(short) + len(local)])
            want = self.batch - len(picks)
            picks += self._valid(drawn, lowered[len(short) + len(local) :], want)
            for c in picks:
                self.seen.add(config_key(c))
            self.queue += picks
            if self.queue:
                return

    def _random_points(self, n: int, taken: set[str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.size <= EXHAUSTIVE:
            skip = self.seen | taken
            left = [i for i in range(self.size) if config_key(self.space.point(i)) not in skip]
            for i in self.rng.permutation(len(left))[:n]:
                out.append(self.space.point(left[int(i)]))
            return out
        for _ in range(n * 50):
            if len(out) >= n:
                break
            c = self.space.point(int(self.rng.integers(self.size)))
            k = config_key(c)
            if k not in self.seen and k not in taken:
                taken.add(k)
                out.append(c)
        return out

    def _neighbours(self, n: int, taken: set[str]) -> list[dict[str, Any]]:
        """Up to ``n`` unseen points one knob away from one of the fastest trials so far."""
        out: list[dict[str, Any]] = []
        knobs = [k for k in self.sf.knobs if len(k.candidates) > 1]
        if not self.fastest or not knobs:
            return out
        for _ in range(n * 50):
            if len(out) >= n:
                break
            _, base = self.fastest[int(self.rng.integers(len(self.fastest)))]
            knob = knobs[int(self.rng.integers(len(knobs)))]
            value = knob.candidates[int(self.rng.integers(len(knob.candidates)))]
            digits = self.sf.digits({**base, knob.name: value})
            if digits is None:
                continue
            c = self.sf.config(digits)
            k = config_key(c)
            if k not in self.seen and k not in taken:
                taken.add(k)
                out.append(c)
        return out

    def _model_picks(
        self,
        n: int,
        short: Sequence[dict[str, Any]] | None = None,
        lowered: Sequence[Lowered] | None = None,
    ) -> list[dict[str, Any]]:
        """The ``n`` best unseen candidates: scored by the config model over the space (whole,
        or by annealing: ``short``, unless given with its ``lowered``), the shortlist lowered
        (dropping what it proves invalid) and re-ranked by the IR model."""
        if short is None:
            short = self._shortlist(n * SHORTLIST)
        if lowered is None:
            lowered = self._lower(short)
        rows, configs = [], []
        for c, (ir, why) in zip(short, lowered):
            if why is not None:
                self._refused(c, ir)
                continue
            rows.append(Row(self.task.key(), self.sf.features(c), ir, None))
            configs.append(c)
        if not configs:
            return []
        if self.model.full is not None:
            cheap_rank = np.arange(len(configs), dtype=np.float64)
            full = self.model.score_full(rows)
            order = np.lexsort((cheap_rank, -full))
            configs = [configs[i] for i in order]
        return configs[:n]

    def _shortlist(self, n: int) -> list[dict[str, Any]]:
        if self.size <= EXHAUSTIVE:
            digits = self.sf.all_digits()
            scores = self.model.score_cheap(self.sf, digits)
            out = []
            for i in np.argsort(-scores, kind="stable"):
                c = self.sf.config(digits[i])
                if config_key(c) not in self.seen:
                    out.append(c)
                    if len(out) >= n:
                        break
            return out
        return self._anneal(n)

    def _anneal(self, n: int, walkers: int = 64, steps: int = 60) -> list[dict[str, Any]]:
        """Parallel simulated annealing over the config model's score: walkers start at the
        best measured points and random ones, each step changes one knob; the best unseen
        points visited are returned."""
        radix = np.array(self.sf.radix)
        start = self._best_digits(walkers // 4)
        rand = self.rng.integers(0, radix, size=(walkers - len(start), len(radix)))
        cur = np.vstack([np.array(start, dtype=np.int64).reshape(-1, len(radix)), rand])
        score = self.model.score_cheap(self.sf, cur)
        visited: dict[int, float] = {}
        visited.update(zip(self._indices(cur), score.tolist()))
        for step in range(steps):
            temp = 1.0 * (0.02 / 1.0) ** (step / max(steps - 1, 1))
            cand = cur.copy()
            knob = self.rng.integers(0, len(radix), size=len(cur))
            cand[np.arange(len(cur)), knob] = self.rng.integers(0, radix[knob])
            new = self.model.score_cheap(self.sf, cand)
            accept = (new >= score) | (
                self.rng.random(len(cur)) < np.exp(np.minimum(new - score, 0) / temp)
            )
            cur[accept], score[accept] = cand[accept], new[accept]
            visited.update(zip(self._indices(cand), new.tolist()))
        out = []
        for idx, _ in sorted(visited.items(), key=lambda kv: (-kv[1], kv[0])):
            c = self.space.point(idx)
            if config_key(c) not in self.seen:
                out.append(c)
                if len(out) >= n:
                    break
        return out

    def _indices(self, digits: np.ndarray) -> list[int]:
        """The grid indices of points (``SpaceFeatures.index`` of each row)."""
        if self.size >= 2**62:  # past int64: Python's integers
            return [self.sf.index(d) for d in digits]
        weights = np.cumprod([1, *self.sf.radix[:0:-1]], dtype=np.int64)[::-1]
        return (np.asarray(digits, dtype=np.int64) @ weights).tolist()

    def _best_digits(self, n: int) -> list[list[int]]:
        here = self.task.key()
        best = sorted(
            (r for r in self.model.rows if r.task_key == here and r.gflops),
            key=lambda r: -(r.gflops or 0),
        )[:n]
        out = []
        for r in best:
            d = [int(r.cheap[f"{k.name}.idx"]) for k in self.sf.knobs]
            out.append(d)
        return out


def own_trials(task: Task, records: Iterable[Record]) -> list[Record]:
    """The correct configs of ``task`` itself in ``records``, fastest first (each at the
    median of its measurements), at most ``SEEDS_PER_SHAPE``."""
    return ranked_configs(records, task.key())[:SEEDS_PER_SHAPE]


def own_best(task: Task, records: Sequence[Record], limits: DeviceLimits) -> dict | None:
    """``task``'s own fastest trial in ``records`` that is valid on a device with ``limits``
    (made a point of today's space), or None."""
    space, lowering = task.space(), Lowering(limits)
    for r in own_trials(task, records):
        c = carry_config(r.config, task, task, space)
        if lowering(task, c)[1] is None:
            return c
    return None


def predict_config(task: Task, records: Sequence[Record], limits: DeviceLimits) -> dict | None:
    """A config for ``task`` from the logged ``records``: its own fastest trial where they
    hold the task itself (a shipped log, like TVM's TopHub); else from other shapes (its
    family, on the device; of another template of it, a GEMM for a conv scheduled as one, only
    within ``NEAR_VIEW``): of the best configs of the ``PREDICT_SHAPES`` nearest logged shapes,
    made legal here, the one ``rescaled_ms`` expects fastest; else the nearest logged shape's
    best that is valid here; else the model's best over the space (with LightGBM); else None
    (the template's defaults)."""
    own = own_best(task, records, limits)
    return own if own is not None else predict_from_shapes(task, records, limits)


def predict_from_shapes(task: Task, records: Sequence[Record], limits: DeviceLimits) -> dict | None:
    """``predict_config`` from the other shapes alone (its steps after ``own_best``)."""
    space = task.space()
    records = _family_records(task, records)
    if not records:
        return None
    shapes = logged_shapes(task, space, records)
    cands = shape_candidates(task, records, limits, space, shapes)
    # the memory floor holds on a CPU device only: on the H200 (the floor on, the arguments'
    # bytes alone) the four GEMM picks it changes went 0.67x -> 0.56x cuBLAS (geomeans:
    # 4x8192x8192 1.1x -> 0.5x, its rate that of the largest logged GEMMs, compute-bound;
    # two of three matrix-vector products gained; gpu/results/predict_floor_2026-11-29/)
    rate = 0.0 if limits.gpu else memory_rate(task, shapes, limits.name)
    guesses = [
        (
            rescaled_ms(ms, src, new, limits, memory_floor_ms(task, new, rate))
            * math.exp(DISTRUST * d),
            i,
        )
        for i, (d, ms, src, _, new) in enumerate(cands)
    ]
    if guesses:
        return cands[min(guesses)[1]][3]
    lowering = Lowering(limits)
    for c in _nearest_bests(task, space, records, shapes=len(records)):
        _, why = lowering(task, c)
        if why is None:
            return c
    if lightgbm is None:
        return None
    prop = ModelProposer(task, space, limits, records, batch=1, explore=0.0)
    if not prop.model.fit():
        return None
    picks = prop._model_picks(1)
    return picks[0] if picks else None


def _family_records(task: Task, records: Sequence[Record]) -> list[Record]:
    """``records`` of ``task``'s template (or of its twin, ``templates.TWINS``: a conv3d's
    implicit GEMM takes the conv2d one's), and of another template of its family only within
    ``NEAR_VIEW`` of its shape."""
    mine = {(task.kind, task.template)}
    mine |= {TWINS[m] for m in mine if m in TWINS}
    near: dict[str, bool] = {}
    for r in records:
        if _template_of(r) not in mine and r.task_key() not in near:
            near[r.task_key()] = shape_distance(task, Task.from_dict(r.task)) <= NEAR_VIEW
    return [r for r in records if _template_of(r) in mine or near[r.task_key()]]


def shape_candidates(
    task: Task,
    records: Sequence[Record],
    limits: DeviceLimits,
    space: Config | None = None,
    shapes: Sequence[tuple[float, Task, list[Record]]] | None = None,
) -> list[tuple[float, float, dict[str, float], dict[str, Any], dict[str, float]]]:
    """What ``predict_from_shapes`` ranks: ``(distance, logged ms, IR features there,
    config here, IR features here)`` of the best config of each of the ``PREDICT_SHAPES``
    nearest logged shapes of ``records`` (``task``'s family; ``shapes``: their
    ``logged_shapes``, where the caller has them), made legal here, and of each such config
    with its K split over as many work-groups as fill the device once (where that differs);
    those that do not lower here are left out."""
    space = space if space is not None else task.space()
    lowering = Lowering(limits)
    if shapes is None:
        shapes = logged_shapes(task, space, records)
    shapes = shapes[:PREDICT_SHAPES]
    here = [carry_config(recs[0].config, there, task, space) for _, there, recs in shapes]
    lowered = lowering.many(
        [(task, c) for c in here] + [(there, recs[0].config) for _, there, recs in shapes]
    )
    cands = [
        (d, recs[0].device_ms or math.inf, src, c, new)
        for (d, _, recs), c, (new, why), (src, _) in zip(
            shapes, here, lowered[: len(here)], lowered[len(here) :]
        )
        if why is None and new is not None and src is not None
    ]
    variants = [
        (x, v) for x in cands if (v := _split_to_fill(x[3], x[4], space, limits)) is not None
    ]
    for ((d, ms, src, c, was), v), (new, why) in zip(
        variants, lowering.many([(task, v) for _, v in variants])
    ):
        # kept where the split did spread over work-groups (a template's ``split_k`` may
        # mean something else: dense_gpu's work-items per output)
        spread = was["ir.log2_work_groups"] + math.log2(v["split_k"] / c["split_k"])
        if why is None and new is not None and abs(new["ir.log2_work_groups"] - spread) < 0.01:
            cands.append((d, ms, src, v, new))
    return cands


def _split_to_fill(
    config: dict[str, Any], feats: dict[str, float], space: Config, limits: DeviceLimits
) -> dict[str, Any] | None:
    """``config`` with its ``split_k`` (a K split over work-groups, where the template has
    one) changed where its work-groups leave the device's compute units idle (fewer than a
    wave of ``GROUPS_PER_UNIT`` each) or queue for more than two waves: the largest split
    whose work-groups fit in one wave, or the smallest where none does; None where that is
    its split or it fills one or two waves. A config carried from a shape with more (or
    fewer) tiles brings a split that made sense there: on the H200 a deep convolution's
    7x7 tiles given a 14x14 one's split ran 3.5 times slower, a 3136x128x128 GEMM given
    3136x64x576's 1.3 times (``benchmarks/README.md``)."""
    knob = space.space.get("split_k")
    split = config.get("split_k")
    if knob is None or not isinstance(split, int) or split < 1:
        return None
    options = sorted(v for v in knob.candidates if isinstance(v, int) and v >= 1)
    wave = GROUPS_PER_UNIT * limits.compute_units
    groups = 2 ** feats["ir.log2_work_groups"]
    if not options or wave < groups <= 2 * wave:
        return None  # one or two waves: the split the tuner chose there stands
    fit = [v for v in options if groups / split * v <= wave]
    target = max(fit) if fit else options[0]
    return None if target == split else {**config, "split_k": target}


def memory_rate(
    task: Task, shapes: Sequence[tuple[float, Task, list[Record]]], device: str | None = None
) -> float:
    """The device's memory bandwidth as its logs show it, for data of ``task``'s size, in bytes
    a ms (0 where no logged shape has a size and a time): the fastest rate at which a logged
    task's best config moved its argument tensors (``features.task_bytes``): of ``shapes``
    (``logged_shapes`` of ``task``'s family) and of every task in ``device``'s shipped logs
    (``shipped_rates``: a family of compute-bound tasks shows its kernels' rates, not the
    memory's), among those whose tensors are at least as large as ``task``'s (or, past them
    all, the largest). A smaller one stays in a cache between calls: on the AMD EPYC VM a
    4 MB matrix-vector product moved 95 GB/s, a 72 MB one 36."""
    rates = [
        (task_bytes(there), task_bytes(there) / recs[0].device_ms)
        for _, there, recs in shapes
        if recs[0].device_ms
    ]
    rates += shipped_rates(device) if device else []
    need = min(task_bytes(task), max((size for size, _ in rates), default=0))
    return max((r for size, r in rates if size >= need and size > 0), default=0.0)


def shipped_rates(device: str) -> list[tuple[int, float]]:
    """``(bytes, bytes a ms)`` of each task of ``device``'s shipped logs: its argument tensors'
    bytes (``features.task_bytes``) over its fastest config's time (the median of that
    config's measurements). Computed once per process while the logs keep their sizes and
    times."""
    paths = shipped_logs(device)
    stamps = tuple((p, os.stat(p).st_size, os.stat(p).st_mtime_ns) for p in paths)
    return _shipped_rates(device, stamps)


@functools.lru_cache(maxsize=8)
def _shipped_rates(
    device: str, stamps: tuple[tuple[str, int, int], ...]
) -> list[tuple[int, float]]:
    by_task: dict[str, list[Record]] = {}
    for path, _, _ in stamps:
        for (dev, _), items in _read_by_family(path).items():
            for (key, _), r in items if dev == device else ():
                if r.status == "ok" and r.device_ms:
                    by_task.setdefault(key, []).append(r)
    out = []
    for recs in by_task.values():
        best = ranked_configs(recs)[0]
        try:
            size = task_bytes(Task.from_dict(best.task))
        except TensorschedError:  # a task of a template this process lacks
            continue
        if size and best.device_ms:
            out.append((size, size / best.device_ms))
    return out


def memory_floor_ms(task: Task, feats: dict[str, float], rate: float) -> float:
    """The least time a config of ``task`` (IR features ``feats``) can take at ``rate`` bytes a
    ms (``memory_rate``): its argument tensors moved once, and each global buffer between its
    kernels (a copy of B, split-K's partial products) written and read once; 0 at no rate."""
    moved = task_bytes(task) + 2 * feats.get("temp_bytes", 0.0)
    return moved / rate if rate > 0 else 0.0


def rescaled_ms(
    ms: float,
    there: dict[str, float],
    here: dict[str, float],
    limits: DeviceLimits,
    floor_ms: float = 0.0,
) -> float:
    """The time a config measured at ``ms`` on another shape (IR features ``there``) should
    take on this one (``here``): its kernels' launch cost (and on a GPU the traffic of a split
    K's partial products, ``SPLIT_BYTE_MS``), plus the rest scaled by the waves of
    work-groups times each work-group's work (its work-items' loop trips: a tile that
    overhangs the shape counts whole). A wave is as many work-groups as the compute units run
    at once: on a GPU as many as fit each unit's work-items and ``__local`` memory (the
    device's work-group limits, a lower bound), elsewhere ``GROUPS_PER_UNIT``; the rest is at
    least ``floor_ms`` (``memory_floor_ms``: work alone would have a matrix-vector product
    take a compute-bound GEMM's config at that GEMM's FLOP rate). Crude, and meant only to
    rank the logged shapes' bests against one another."""

    def at_once(f: dict[str, float]) -> int:
        if not limits.gpu:
            return GROUPS_PER_UNIT
        wg = max(int(f["ir.wg_size"]), 1)
        local = 2 ** f.get("ir.log2_local_bytes", -1.0)
        by_local = limits.local_mem_size // local if local >= 1 else math.inf
        return max(1, int(min(limits.max_work_group_size // wg, by_local)))

    def work(f: dict[str, float]) -> float:
        groups = round(2 ** f["ir.log2_work_groups"])
        waves = math.ceil(groups / (at_once(f) * limits.compute_units))
        return waves * f["ir.wg_size"] * 2 ** f["ir.log2_loop_trips"]

    def fixed(f: dict[str, float]) -> float:
        cost = LAUNCH_MS * f["ir.kernels"]
        if limits.gpu and f["ir.kernels"] > 1 and "ir.log2_global_store_bytes_item" in f:
            stored = 2 ** (f["ir.log2_global_store_bytes_item"] + f["ir.log2_work_items"])
            cost += SPLIT_BYTE_MS * 2 * stored  # written by one kernel, read by the next
        return cost

    rest = max(ms - fixed(there), 0.1 * ms) * work(here) / work(there)
    return fixed(here) + max(rest, floor_ms)


def sibling_records(task: Task, device: str) -> list[Record]:
    """For a device the package ships no log of: ``task``'s family in the shipped log of
    another device on its platform (``sibling_logs``), whose configs a search measures after
    its own seeds; none otherwise."""
    if shipped_logs(device):
        return []
    sibling = sibling_logs(device)
    return history(task, sibling[0], sibling[1]) if sibling is not None else []


def past_records(task: Task, device: str, log_path: str | None, transfer: Sequence[str]) -> list:
    """What the logs know of ``task``'s family on ``device`` (GEMM views included): the user's
    log, the ``transfer`` logs and the package's shipped logs for the device."""
    paths = ([log_path] if log_path else []) + list(transfer) + shipped_logs(device)
    return history(task, device, paths)
