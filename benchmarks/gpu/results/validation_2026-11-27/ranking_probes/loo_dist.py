# ruff: noqa: E402  (the package is put on sys.path first)
import os
import sys
import tarfile
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 5))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "gpu"))
from predict_loo import H200, SHIPPED

from tensorsched.tune import model as M
from tensorsched.tune.log import ranked_configs, read_log
from tensorsched.tune.record import config_key
from tensorsched.tune.task import Task

batches_p = (
    os.environ["BATCHES"].split(",")
    if os.environ.get("BATCHES")
    else [
        ROOT + "/benchmarks/gpu/results/coverage_2026-11-27/tuned60_logs.tgz",
        ROOT + "/benchmarks/gpu/results/coverage2_2026-11-27/tuned65_logs.tgz",
    ]
)
shipped = read_log(os.environ.get("SHIPPED_LOG", SHIPPED))
tmp = tempfile.mkdtemp()
batches = []
for n, path in enumerate(batches_p):
    dest = os.path.join(tmp, str(n))
    with tarfile.open(path) as tar:
        tar.extractall(
            dest,
            members=[m for m in tar.getmembers() if m.isfile() and m.name.endswith(".jsonl")],
            filter="data",
        )
    logs = [os.path.join(r, f) for r, _, fs in os.walk(dest) for f in fs]
    batches.append({Task.from_dict(read_log(f)[0].task).key(): f for f in sorted(logs)})
out = []
for n, batch in enumerate(batches):
    later = {k for b in batches[n:] for k in b}
    before = [r for r in shipped if r.task_key() not in later]
    for key, path in batch.items():
        recs = read_log(path)
        task = Task.from_dict(recs[0].task)
        ranked = ranked_configs(recs, key)
        best = ranked[0].device_ms
        ms = {r.config_key(): r.device_ms for r in ranked}
        fam = M._family_records(task, before)
        sh = M.logged_shapes(task, task.space(), fam)
        pick = M.predict_from_shapes(task, before, H200)
        got = ms.get(config_key(pick)) if pick else None
        # also: nearest shape's best carried measured
        out.append((sh[0][0], best / got if got else None, "x".join(map(str, task.shape)), best))
out.sort()
for d, r, s, b in out:
    print(f"{d:5.2f} {r if r is None else round(r, 2)} {s} {b * 1e3:.1f}us")
