"""Leave-one-out over the tasks of this device's shipped log: each task's untuned pick from the
other tasks of its family (``model.predict_from_shapes``), looked up in the task's own logged
records (the median of that config's measurements; ``None`` where the log has no record of
it), against its logged best. ``task best <ms> pick <ms>`` a line.

    .venv/bin/python benchmarks/results/cpu_amd_2026-11-29_s29/loo.py > loo_after.txt
"""

from tensorsched.tune import model as M
from tensorsched.tune.dispatch import current_limits
from tensorsched.tune.log import ranked_configs, read_log
from tensorsched.tune.record import config_key
from tensorsched.tune.task import Task

lim = current_limits()
recs = [r for p in M.shipped_logs(lim.name) for r in read_log(p) if r.device == lim.name]
for key in dict.fromkeys(r.task_key() for r in recs):
    own = [r for r in recs if r.task_key() == key]
    task = Task.from_dict(own[0].task)
    rest = [r for r in M.history(task, lim.name, M.shipped_logs(lim.name)) if r.task_key() != key]
    pick = M.predict_from_shapes(task, rest, lim)
    ranked = ranked_configs(own, key)
    got = {r.config_key(): r.device_ms for r in ranked}.get(config_key(pick)) if pick else None
    print(
        task.kind, task.template, task.shape, "best", ranked[0].device_ms, "pick", got, flush=True
    )
