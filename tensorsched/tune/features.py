"""Features of tuning candidates that a cost model can learn across shapes.

Two kinds, named columns of float features (``NaN`` where a candidate has none):

- **config features** (``SpaceFeatures``), from the knob values and the shape alone, cheap
  enough to rank thousands of candidates that were never built: each split's parts and their
  product (log2), how much of each shape extent a tile of that product covers without a
  remainder (``extent / (ceil(extent / tile) * tile)``: 1 when it divides), numeric knobs'
  values, a categorical knob's candidate index, and the shape itself (log2). A task whose
  template schedules a GEMM with a GEMM template's knobs (``templates.GEMM_VIEWS``: a conv
  scheduled as a GEMM) has the shape of that GEMM, ``(M, N, K)``, so its features and a GEMM
  task's are comparable (``shape_vector``).
- **IR features** (``ir_features``), from the lowered IR: work-group size and count, loop
  trips and unrolled extent per work-item, the widest vector, global bytes loaded and stored
  and FLOPs per work-item and per work-group, ``__local`` and private footprint, an occupancy
  estimate from the device's limits, and the guard fraction (the share of stores under an
  ``if``, what a tile that does not divide the shape costs). ``lower_features`` lowers a
  candidate in this process (tens of milliseconds; no code generation) and also says when
  the candidate provably cannot run on the device (the early filter's verdict, from the IR).

Lowering is what the model strategy's driver spends its time on (the IR features of the
logged trials it learns from, of each batch's shortlist, of every trial). ``Lowering`` computes
them for many candidates at once: each is lowered once per process (a memo shared by every
proposer of the process: a network's tasks learn the same logged trials), the rest in a pool
of worker processes when it is given two or more and the lowering is slow enough to pay for
their start.
"""

from __future__ import annotations

import collections
import concurrent.futures as cf
import functools
import math
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import TensorschedError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.dtype import itemsize
from ..ir.index_check import evaluate_at
from ..ir.visitor import Visitor, free_vars
from ..ops.space import Config
from ..ops.templates import gemm_view
from ..runtime.device import DeviceLimits
from ..schedules.lower import lower
from .filter import PRIVATE_BYTES
from .record import config_key
from .task import Task
from .workers import worker_pool

Lowered = tuple[dict[str, float] | None, str | None]  # lower_features's (features, why)

IR_COLUMNS = (
    "ir.wg_size",
    "ir.log2_work_groups",
    "ir.log2_work_items",
    "ir.kernels",
    "ir.log2_loop_trips",
    "ir.log2_unrolled",
    "ir.max_lanes",
    "ir.log2_global_load_bytes_item",
    "ir.log2_global_store_bytes_item",
    "ir.log2_flop_item",
    "ir.log2_flop_group",
    "ir.log2_bytes_group",
    "ir.intensity",
    "ir.log2_local_bytes",
    "ir.log2_private_bytes",
    "ir.occupancy",
    "ir.guard_fraction",
)


def task_gemm_view(task: Task) -> tuple[str, tuple[int, ...]] | None:
    """``(GEMM template, (M, N, K))`` of a task whose template is a GEMM scheduled with that
    GEMM template's knobs (a GEMM task's own; ``templates.gemm_view``), else ``None``."""
    if task.kind in ("expr", "autotvm"):
        return None
    return gemm_view(task.kind, task.template, task.shape)


def shape_vector(task: Task) -> tuple[float, ...]:
    """The task's extents as numbers: its GEMM view's ``(M, N, K)`` where it has one (a conv
    scheduled as a GEMM), a text expression's from its ``i=64,...`` list, else its shape."""
    view = task_gemm_view(task)
    if view is not None:
        return tuple(float(x) for x in view[1])
    if task.kind == "expr":
        out = []
        for part in task.expr_shapes.split(","):
            _, _, v = part.partition("=")
            try:
                out.append(float(int(v)))
            except ValueError:
                continue
        return tuple(out)
    if task.kind == "autotvm":  # the template's int arguments (TVM's N, L, M)
        return tuple(float(x) for x in task.args if isinstance(x, int) and not isinstance(x, bool))
    return tuple(float(x) for x in task.shape)


@functools.lru_cache(maxsize=4096)
def task_bytes(task: Task) -> int:
    """The bytes of ``task``'s argument tensors (inputs and output): what its kernels must move
    to or from global memory at least once, whatever the config; 0 where a size is not a
    constant or the template refuses its defaults."""
    try:
        _, args, _ = task.instantiate(None)
        tensors = [a for a in args if hasattr(a, "shape")]  # not a size argument
        return sum(math.prod(int(x) for x in a.shape) * itemsize(a.dtype) for a in tensors)
    except (TensorschedError, TypeError, ValueError):
        return 0


def _log2(x: float) -> float:
    return math.log2(x) if x > 0 else -1.0


def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class SpaceFeatures:
    """The config features of every point of one task's space, as a matrix per point set.

    A point is given by its *digits* (each knob's candidate index, knobs in definition
    order), so a batch of points becomes a feature matrix with one table look-up per knob."""

    def __init__(self, task: Task, space: Config):
        self.task, self.space = task, space
        self.knobs = list(space.space.values())
        shape = shape_vector(task)
        self.columns: list[str] = [f"shape.{d}" for d in range(len(shape))]
        self.shape_row = np.array([_log2(x) for x in shape], dtype=np.float64)
        self.tables: list[np.ndarray] = []
        for knob in self.knobs:
            names, rows = self._knob_table(knob.name, knob.kind, knob.candidates, shape)
            self.columns += names
            self.tables.append(rows)
        self.radix = [len(k.candidates) for k in self.knobs]

    @staticmethod
    def _knob_table(
        name: str, kind: str, candidates: Sequence[Any], shape: Sequence[float]
    ) -> tuple[list[str], np.ndarray]:
        first = candidates[0]
        names: list[str] = [f"{name}.idx"]
        if kind == "split" and isinstance(first, tuple):
            parts = len(first)
            names += [f"{name}.p{i}" for i in range(parts)] + [f"{name}.prod"]
            names += [f"{name}.cover{d}" for d in range(len(shape))]
            rows = []
            for i, c in enumerate(candidates):
                prod = math.prod(c)
                cover = [ext / (math.ceil(ext / prod) * prod) if ext > 0 else 1.0 for ext in shape]
                rows.append([i, *(_log2(p) for p in c), _log2(prod), *cover])
            return names, np.array(rows, dtype=np.float64)
        if all(_numeric(c) for c in candidates):
            names += [f"{name}.val"]
            return names, np.array(
                [[i, _log2(c) if c > 0 else -1.0] for i, c in enumerate(candidates)],
                dtype=np.float64,
            )
        return names, np.arange(len(candidates), dtype=np.float64).reshape(-1, 1)

    def digits(self, config: dict[str, Any]) -> list[int] | None:
        """The digits of ``config`` (a knob missing: its default), or None if a value is not
        one of its knob's candidates."""
        out = []
        for knob in self.knobs:
            v = config.get(knob.name, knob.default)
            v = tuple(v) if isinstance(v, list) else v
            try:
                out.append(knob.candidates.index(v))
            except ValueError:
                return None
        return out

    def config(self, digits: Sequence[int]) -> dict[str, Any]:
        return {k.name: k.candidates[int(d)] for k, d in zip(self.knobs, digits)}

    def matrix(self, digits: np.ndarray) -> np.ndarray:
        """The config features of points ``digits`` (an ``n x knobs`` int array)."""
        digits = np.asarray(digits, dtype=np.int64).reshape(-1, len(self.knobs))
        n = digits.shape[0]
        parts = [np.broadcast_to(self.shape_row, (n, len(self.shape_row)))]
        parts += [table[digits[:, k]] for k, table in enumerate(self.tables)]
        return np.hstack(parts) if parts else np.zeros((n, 0))

    def features(self, config: dict[str, Any]) -> dict[str, float]:
        """The config features of one config, by column name."""
        d = self.digits(config)
        if d is None:
            raise TensorschedError(f"{config} is not a point of {self.task}'s space")
        return dict(zip(self.columns, self.matrix(np.array([d]))[0].tolist()))

    def index(self, digits: Sequence[int]) -> int:
        """The point's index in the grid order (``Config.point``)."""
        idx = 0
        for d, r in zip(digits, self.radix):
            idx = idx * r + int(d)
        return idx

    def all_digits(self) -> np.ndarray:
        """Every point's digits, in grid order (small spaces only)."""
        grids = np.indices(self.radix).reshape(len(self.radix), -1).T
        return grids.astype(np.int64)


# work-item indices at most this many are enumerated; more are sampled (SAMPLED of them)
ENUMERATED, SAMPLED = 1 << 18, 1 << 14


def pass_fraction(cond: E.Expr, axes: dict[E.Var, int]) -> float | None:
    """The share of work-items (their indices ``axes``: variable -> extent) for which
    ``cond`` holds, where it depends on those indices alone (a guard that leaves the
    work-items of a tile past the shape idle); None for a condition of anything else."""
    names = free_vars(cond)
    if not names or any(v not in axes for v in names):
        return None
    extents = [axes[v] for v in names]
    if math.prod(extents) <= ENUMERATED:
        grids = np.meshgrid(*(np.arange(e, dtype=np.int64) for e in extents), indexing="ij")
        env = {v: g.ravel() for v, g in zip(names, grids)}
    else:
        rng = np.random.default_rng(0)
        env = {v: rng.integers(0, e, SAMPLED, dtype=np.int64) for v, e in zip(names, extents)}
    held = evaluate_at(cond, env)
    if held is None or held.dtype != np.bool_:
        return None
    return float(np.mean(np.broadcast_to(held, next(iter(env.values())).shape)))


class _Walk(Visitor):
    """Weighted counts over a lowered function: each node counts as many times as the loops
    around it run per work-item. With ``averaged``, averaged over the work-items: under a
    condition of the work-item indices alone, by the share of work-items that run it
    (``pass_fraction``). That is a CPU device's cost, which runs a work-group's work-items
    one after another; a GPU runs a warp's in lockstep, so those a guard idles save nothing
    (on the H200, averaging changed one untuned pick of 38, 10x5524x626, from 0.60x cuBLAS to
    0.43x: a tile of 128 rows whose work-items past M = 10 it counted as free)."""

    def __init__(self, averaged: bool = True) -> None:
        self.averaged = averaged
        self.axes: dict[E.Var, int] = {}  # the work-item indices around the node
        self.weight, self.guarded = 1.0, 0
        self.load_bytes = self.store_bytes = 0.0
        self.stores = self.guarded_stores = 0.0
        self.max_lanes, self.trips, self.unrolled = 1, 1.0, 1.0
        self.kernels: list[dict[str, int]] = []  # each kernel's work-item axes (tag -> extent)
        self.allocs: list[dict[str, int]] = []  # each kernel's shared/local bytes
        self.kernel_trips: list[float] = []  # each kernel's most loop trips per work-item
        self.temp_bytes = 0  # global buffers between kernels (a copy of B, split-K's partials)
        self.depth = 0

    @property
    def alloc(self) -> dict[str, int]:
        """The largest ``__local`` and private footprint of any one kernel."""
        return {
            scope: max((a[scope] for a in self.allocs), default=0) for scope in ("shared", "local")
        }

    def visit_ThreadExtent(self, t: S.ThreadExtent) -> None:
        if not self.depth:  # a root work-item axis starts a kernel
            self.kernels.append({})
            self.allocs.append({"shared": 0, "local": 0})
            self.kernel_trips.append(1.0)
        axes = self.kernels[-1]
        axes[t.tag] = max(axes.get(t.tag, 1), int(t.extent))
        self.axes[t.var] = int(t.extent)
        self.depth += 1
        self.generic_visit(t)
        self.depth -= 1
        del self.axes[t.var]

    def visit_For(self, f: S.For) -> None:
        ext = float(f.extent.value) if isinstance(f.extent, E.IntImm) else 16.0
        old = self.weight
        self.weight *= max(ext, 1.0)
        self.trips = max(self.trips, self.weight)
        if self.kernel_trips:
            self.kernel_trips[-1] = max(self.kernel_trips[-1], self.weight)
        if f.kind == "unrolled":
            self.unrolled = max(self.unrolled, ext)
        if f.kind == "vectorized":
            self.max_lanes = max(self.max_lanes, int(ext))
        self.generic_visit(f)
        self.weight = old

    def visit_IfThenElse(self, s: S.IfThenElse) -> None:
        share = pass_fraction(s.cond, self.axes) if self.averaged else None
        old = self.weight
        self.guarded += 1
        self.visit(s.cond)
        for branch, part in ((s.then, share), (s.orelse, None if share is None else 1 - share)):
            if branch is not None:
                self.weight = old if part is None else old * part
                self.visit(branch)
        self.weight = old
        self.guarded -= 1

    def visit_Allocate(self, a: S.Allocate) -> None:
        size = a.buffer.size * itemsize(a.buffer.dtype)
        if a.buffer.scope in ("shared", "local") and self.allocs:
            self.allocs[-1][a.buffer.scope] += size
        elif a.buffer.scope == "global" and isinstance(size, int):
            self.temp_bytes += size
        self.generic_visit(a)

    def _bytes(self, buf: S.Buffer, index: E.Expr) -> float:
        lanes = index.lanes if isinstance(index, E.Ramp) else 1
        self.max_lanes = max(self.max_lanes, lanes)
        return lanes * itemsize(buf.dtype) * self.weight

    def visit_Store(self, s: S.Store) -> None:
        self.stores += self.weight
        if self.guarded:
            self.guarded_stores += self.weight
        if s.buffer.scope == "global":
            self.store_bytes += self._bytes(s.buffer, s.index)
        self.generic_visit(s)

    def visit_Load(self, ld: E.Load) -> None:
        if ld.buffer.scope == "global":
            self.load_bytes += self._bytes(ld.buffer, ld.index)
        self.generic_visit(ld)

    def visit_Ramp(self, r: E.Ramp) -> None:
        self.max_lanes = max(self.max_lanes, r.lanes)
        self.generic_visit(r)


def group_steps(func: S.LoweredFunc) -> float:
    """The most loop steps one work-group of any of ``func``'s kernels runs: its work-items
    times the loop trips of each (a loop of a size known only at run time counted as 16)."""
    w = _Walk(averaged=False)
    w.visit(func.body)
    items = [
        math.prod(e for t, e in axes.items() if t.startswith("threadIdx")) for axes in w.kernels
    ]
    return max((n * trips for n, trips in zip(items, w.kernel_trips)), default=w.trips)


def ir_features(
    func: S.LoweredFunc, flop: int, limits: DeviceLimits
) -> tuple[dict[str, float], str | None]:
    """``(features, why_invalid)`` of a lowered function: the ``IR_COLUMNS`` and, when the IR
    proves the candidate cannot run on a device with ``limits`` (work-group size or extent,
    ``__local`` memory, private arrays), why."""
    w = _Walk(averaged=not limits.gpu)
    w.visit(func.body)
    # each kernel launches on its own: the features describe the one whose work-items loop
    # the most (split-K's partial products, not the kernel that sums them); limits hold per
    # kernel
    kernels = [
        (
            {t: e for t, e in axes.items() if t.startswith("threadIdx")},
            {t: e for t, e in axes.items() if t.startswith("blockIdx")},
        )
        for axes in w.kernels
    ] or [({}, {})]
    main = max(range(len(w.kernel_trips)), key=w.kernel_trips.__getitem__, default=0)
    threads, blocks = kernels[main]
    wg = math.prod(threads.values())
    groups = math.prod(blocks.values())
    items = wg * groups
    flop_item = flop / items
    bytes_item = w.load_bytes + w.store_bytes
    shared, private = w.alloc["shared"], w.alloc["local"]
    by_threads = max(limits.max_work_group_size // wg, 0)
    by_local = limits.local_mem_size // shared if shared else by_threads
    occupancy = min(1.0, min(by_threads, by_local) * wg / limits.max_work_group_size)
    feats = {
        "ir.wg_size": float(wg),
        "ir.log2_work_groups": _log2(groups),
        "ir.log2_work_items": _log2(items),
        "ir.kernels": float(max(len(w.kernels), 1)),
        "ir.log2_loop_trips": _log2(w.trips),
        "ir.log2_unrolled": _log2(w.unrolled),
        "ir.max_lanes": float(w.max_lanes),
        "ir.log2_global_load_bytes_item": _log2(w.load_bytes),
        "ir.log2_global_store_bytes_item": _log2(w.store_bytes),
        "ir.log2_flop_item": _log2(flop_item),
        "ir.log2_flop_group": _log2(flop_item * wg),
        "ir.log2_bytes_group": _log2(bytes_item * wg),
        "ir.intensity": flop_item / bytes_item if bytes_item else 0.0,
        "ir.log2_local_bytes": _log2(shared),
        "ir.log2_private_bytes": _log2(private),
        "ir.occupancy": occupancy,
        "ir.guard_fraction": w.guarded_stores / w.stores if w.stores else 0.0,
        # not a model column: what ``model.rescaled_ms``'s floor adds to the arguments' bytes
        "temp_bytes": float(w.temp_bytes),
    }
    why = None
    for kernel_threads, _ in kernels:
        size = math.prod(kernel_threads.values())
        if size > limits.max_work_group_size:
            why = f"work-group of {size} over the device's {limits.max_work_group_size}"
        for tag, e in kernel_threads.items():
            d = "xyz".index(tag[-1])
            if d < len(limits.max_work_item_sizes) and e > limits.max_work_item_sizes[d]:
                why = f"{tag} = {e} over the device's {limits.max_work_item_sizes[d]}"
    if shared > limits.local_mem_size:
        why = f"{shared} bytes of __local memory over the device's {limits.local_mem_size}"
    if private > PRIVATE_BYTES:
        why = f"{private} bytes of private memory per work-item over {PRIVATE_BYTES}"
    return feats, why


def lower_features(
    task: Task, config: dict[str, Any], limits: DeviceLimits
) -> tuple[dict[str, float] | None, str | None]:
    """``(IR features, why_invalid)`` of one candidate, lowered in this process:
    ``(None, why)`` when the template's constraints or lowering refuse it."""
    try:
        s, args, cfg = task.instantiate(Config(config, limits=limits))
        if not cfg.valid:
            return None, "; ".join(cfg.constraints) or "constraint"
        func = lower(s, args)
    except TensorschedError as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return ir_features(func, task.flop, limits)


MEMO_SIZE = 50_000  # lowered candidates remembered per process (a few KiB each)
POOL_MIN = 4  # fewer candidates than this to lower are lowered here, not in the pool
POOL_AFTER_S = 2.0  # the pool starts once lowering here would have taken this long in all
_MEMO: collections.OrderedDict[tuple, Lowered] = collections.OrderedDict()
_MEMO_LOCK = threading.Lock()  # tune_devices runs a proposer per thread


def _memo_key(task: Task, config: dict[str, Any], limits: DeviceLimits) -> tuple:
    # the template function itself: a template registered again under its name lowers anew
    return (task.function, task.key(), config_key(config), limits)


def _lower_job(task_dict: dict, config: dict[str, Any], limits: DeviceLimits) -> Lowered:
    """``lower_features`` in a pool worker."""
    return lower_features(Task.from_dict(task_dict), config, limits)


class Lowering:
    """``lower_features`` of candidates on a device with ``limits``, each lowered once per
    process (the results are shared: do not change them), those not lowered yet in a pool of
    ``workers`` processes when ``workers >= 2`` (importing ``modules``, the user's templates;
    started once lowering here would have taken ``POOL_AFTER_S``), else here. The results are
    the same either way; a pool that fails is dropped and the rest is lowered here."""

    def __init__(
        self, limits: DeviceLimits, workers: int = 0, modules: tuple[str | bytes, ...] = ()
    ):
        self.limits, self.workers, self.modules = limits, workers, tuple(modules)
        self.pool: cf.ProcessPoolExecutor | None = None
        self.lowered = 0  # candidates this object lowered (here or in its pool), not memoised
        self.seconds = 0.0  # ... and the wall time that took
        self.here_n, self.here_s = 0, 0.0  # those lowered in this process, and their time

    def __call__(self, task: Task, config: dict[str, Any]) -> Lowered:
        return self.many([(task, config)])[0]

    def many(self, items: Sequence[tuple[Task, dict[str, Any]]]) -> list[Lowered]:
        """``lower_features`` of each ``(task, config)``, in order."""
        keys = [_memo_key(t, c, self.limits) for t, c in items]
        got: dict[tuple, Lowered] = {}
        todo: dict[tuple, tuple[Task, dict[str, Any]]] = {}
        with _MEMO_LOCK:
            for key, item in zip(keys, items):
                if key in got or key in todo:
                    continue
                hit = _MEMO.get(key)
                if hit is None:
                    todo[key] = item
                else:
                    _MEMO.move_to_end(key)
                    got[key] = hit
        if todo:
            t0 = time.perf_counter()
            fresh = self._lower(list(todo.values()))
            self.lowered += len(todo)
            self.seconds += time.perf_counter() - t0
            with _MEMO_LOCK:
                for key, value in zip(todo, fresh):
                    got[key] = _MEMO[key] = value
                while len(_MEMO) > MEMO_SIZE:
                    _MEMO.popitem(last=False)
        return [got[key] for key in keys]

    def _lower(self, items: list[tuple[Task, dict[str, Any]]]) -> list[Lowered]:
        out: list[Lowered] = []
        if self.workers >= 2 and self.pool is None and len(items) >= POOL_MIN:
            if not self.here_n:  # what one costs here, from the first few
                out = self._here(items[:POOL_MIN])
                items = items[POOL_MIN:]
            # the pool's start (a second or so a process) pays once lowering here would take
            # POOL_AFTER_S in all: from the first batch for a template that is slow to lower
            # (the set-up's few hundred past trials), never for one that lowers in a few ms
            expect = len(items) * self.here_s / max(self.here_n, 1)
            if self.here_s + expect < POOL_AFTER_S:
                return out + self._here(items)
        if self.workers >= 2 and len(items) >= POOL_MIN:
            if self.pool is None:
                self.pool = worker_pool(self.workers, self.modules)
            chunk = max(1, len(items) // (4 * self.workers))
            try:
                return out + list(
                    self.pool.map(
                        _lower_job,
                        [t.to_dict() for t, _ in items],
                        [c for _, c in items],
                        [self.limits] * len(items),
                        chunksize=chunk,
                    )
                )
            except Exception:  # noqa: BLE001
                # a worker died (out of memory?) or could not import a template: lower here
                # from now on (what fails here too raises, as it would without a pool)
                self.close()
                self.workers = 0
        return out + self._here(items)

    def _here(self, items: list[tuple[Task, dict[str, Any]]]) -> list[Lowered]:
        t0 = time.perf_counter()
        out = [lower_features(t, c, self.limits) for t, c in items]
        self.here_s += time.perf_counter() - t0
        self.here_n += len(items)
        return out

    def close(self) -> None:
        """Stop the pool (a later batch starts another)."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None
