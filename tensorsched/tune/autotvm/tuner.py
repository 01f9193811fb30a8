"""AutoTVM's tuners over tensorsched's tuner (``tensorsched.tune.tune``): its isolated,
verified measurement, its JSON-lines log (schema-checked, locked, resumable) and its search
strategies. A tuner names a strategy; ``tune(n_trial, measure_option, early_stopping,
callbacks)`` runs ``tensorsched.tune.tune`` on the task's device and then calls the
callbacks once with the trials of the run.

- ``GridSearchTuner``: the grid, in tensorsched's order (the last knob varies fastest).
- ``RandomTuner``: the space in a random order (seeded: ``seed=0``), no config twice.
- ``XGBTuner``: tensorsched's cost-model search (LightGBM, the ``tune`` extra) in place of
  XGBoost: it starts from the logs' best configs of nearby shapes, then measures batches that
  the model picks, with a share of random ones.
- ``GATuner``: tensorsched has no genetic search; this tuner visits the space in random order,
  as ``RandomTuner`` does.

Tuning resumes a log that has trials of the task (their configs are not measured again).
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from collections import namedtuple
from typing import Any

from ..log import read_log
from ..tuner import tune as ts_tune
from .callback import log_to_file, progress_bar
from .measure import LocalBuilder, LocalRunner
from .space import AutotvmError, ConfigEntity
from .task import Task, logger

MeasureInput = namedtuple("MeasureInput", ["target", "task", "config"])
MeasureResult = namedtuple("MeasureResult", ["costs", "error_no", "all_cost", "timestamp"])
ERROR_NO = {"ok": 0, "invalid": 1, "build_error": 3, "crash": 4, "wrong": 5, "timeout": 7}


class Tuner:
    """The base of the tuners: ``strategy`` is tensorsched's search strategy. Options of
    TVM's tuners that shape its own search (``plan_size``, ``feature_type``, ...) are
    accepted and not used."""

    strategy = "random"

    def __init__(self, task: Task, seed: int = 0, **options: Any) -> None:
        if not isinstance(task, Task):
            raise AutotvmError(
                f"{type(self).__name__}: give a task made by autotvm.task.create, got "
                f"{type(task).__name__}"
            )
        self.task, self.seed, self.options = task, seed, options
        self.best_config: ConfigEntity | None = None
        self.best_flops = 0.0
        self.best_measure_pair: tuple[Any, Any] | None = None

    def tune(
        self,
        n_trial: int,
        measure_option: dict[str, Any] | None = None,
        early_stopping: int | None = None,
        callbacks: Any = (),
        si_prefix: str = "G",
    ) -> None:
        """Measure up to ``n_trial`` configs of the task's space (fewer where the space is
        smaller), logging each as it ends to the ``log_to_file`` callback's file (else to
        a temporary one); stop after ``early_stopping`` trials without a faster one."""
        if isinstance(n_trial, bool) or not isinstance(n_trial, int) or n_trial < 1:
            raise AutotvmError(f"tune: n_trial must be a positive int, got {n_trial!r}")
        option = measure_option or globals()["measure_option"]()
        builder, runner = option.get("builder"), option.get("runner")
        if not isinstance(builder, LocalBuilder) or not isinstance(runner, LocalRunner):
            raise AutotvmError("tune: measure_option must come from autotvm.measure_option")
        logs = [c.path for c in callbacks if isinstance(c, log_to_file)]
        others = [c for c in callbacks if not isinstance(c, (log_to_file, progress_bar))]
        if len(set(logs)) > 1:
            raise AutotvmError(f"tune: one log_to_file, please; given {logs}")
        scratch = None if logs else tempfile.mkdtemp(prefix="autotvm-")
        path = logs[0] if logs else os.path.join(str(scratch), "tuning.jsonl")
        t0 = time.time()
        try:
            result = ts_tune(
                self.task.ts_task,
                path,
                strategy=self.strategy,
                trials=min(n_trial, len(self.task.config_space)),
                resume=True,
                device=self.task.device,
                timeout=float(builder.timeout + runner.timeout),
                repeat=runner.runs,
                seed=self.seed,
                n_build=builder.n_parallel,
                progress=any(isinstance(c, progress_bar) for c in callbacks),
                budget_ms=None,
                early_stop=early_stopping,
            )
            self._report(path, t0, result, others)
        finally:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)

    def _report(self, path: str, t0: float, result: Any, callbacks: list) -> None:
        key, space = self.task.ts_task.key(), self.task.config_space
        mine = [
            r
            for r in read_log(path)
            if r.task_key() == key and r.device == self.task.device_name and r.timestamp >= t0
        ]
        inputs, results = [], []
        best = 0.0
        for i, r in enumerate(r for r in mine if not r.remeasure):
            config = space.entity(r.config)
            cost = (r.device_ms / 1e3,) if r.status == "ok" and r.device_ms else (math.inf,)
            res = MeasureResult(cost, ERROR_NO.get(r.status, 8), cost[0], r.timestamp)
            flops = r.gflops * 1e9 if r.status == "ok" and r.gflops else 0.0
            best = max(best, flops)
            logger.debug(
                "No: %d\tGFLOPS: %.2f/%.2f\tresult: %s\t%s",
                i + 1,
                flops / 1e9,
                best / 1e9,
                r.status + (f" ({r.error.strip().splitlines()[-1][:120]})" if r.error else ""),
                config,
            )
            inputs.append(MeasureInput(self.task.target, self.task, config))
            results.append(res)
        if result.best is not None:
            self.best_config = space.entity(result.best.config)
            self.best_flops = (result.best.gflops or 0.0) * 1e9
            self.best_measure_pair = (
                MeasureInput(self.task.target, self.task, self.best_config),
                MeasureResult((result.best.device_ms / 1e3,), 0, 0.0, result.best.timestamp),
            )
        for cb in callbacks:
            cb(self, inputs, results)


class GridSearchTuner(Tuner):
    """Every config of the space, in grid order."""

    strategy = "grid"


class RandomTuner(Tuner):
    """The space in a random order (``seed``), each config once."""

    strategy = "random"


class XGBTuner(Tuner):
    """tensorsched's cost-model search (LightGBM, the ``tune`` extra), not XGBoost: see the
    module's docstring."""

    strategy = "model"


class GATuner(Tuner):
    """Not a genetic algorithm: tensorsched has none, so this tuner visits the space in a
    random order, as ``RandomTuner`` does. Its options (``pop_size``, ``elite_num``,
    ``mutation_prob``) are accepted and not used."""

    strategy = "random"
