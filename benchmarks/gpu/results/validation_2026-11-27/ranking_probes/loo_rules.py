# ruff: noqa: E402  (the package is put on sys.path first)
import math
import os
import sys
import tarfile
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 5))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "gpu"))
from predict_loo import H200, SHIPPED, geomean

from tensorsched.tune import model as M
from tensorsched.tune.log import ranked_configs, read_log
from tensorsched.tune.record import config_key
from tensorsched.tune.task import Task

NS = int(os.environ.get("NS", 8))
PER = int(os.environ.get("PER", 4))
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
lw = M.Lowering(H200)
rules = {}


def add(name, v):
    rules.setdefault(name, []).append(v)


for n, batch in enumerate(batches):
    later = {k for b in batches[n:] for k in b}
    before = [r for r in shipped if r.task_key() not in later]
    for key, path in batch.items():
        recs = read_log(path)
        task = Task.from_dict(recs[0].task)
        space = task.space()
        ranked = ranked_configs(recs, key)
        best = ranked[0].device_ms
        ms = {r.config_key(): r.device_ms for r in ranked}
        family = M._family_records(task, before)
        shapes = M.logged_shapes(task, space, family)[:NS]
        cands = []  # d, rank, ms_src, src_task, src_cfg, here_cfg
        seen = set()
        for d, there, rs in shapes:
            for i, r in enumerate(rs[:PER]):
                c = M.carry_config(r.config, there, task, space)
                k = config_key(c)
                if k in seen:
                    continue
                seen.add(k)
                cands.append([d, i, r.device_ms, there, r.config, c])
        low = lw.many([(task, x[5]) for x in cands] + [(x[3], x[4]) for x in cands])
        nc = len(cands)
        C = []
        for x, (new, why), (src, _w2) in zip(cands, low[:nc], low[nc:]):
            if why is None and new is not None and src is not None:
                C.append(x + [src, new])
        # consensus: relative perf of source config carried to each neighbour
        nb = [
            (d, there, {config_key(r.config): r.device_ms for r in rs}, rs[0].device_ms)
            for d, there, rs in shapes
        ]
        for x in C:
            tot = wsum = 0.0
            known = 0
            for d, there, msd, b in nb:
                c2 = (
                    M.carry_config(x[4], x[3], there, there.space())
                    if there.key() != x[3].key()
                    else x[4]
                )
                m = msd.get(config_key(c2))
                rel = b / m if m else 0.5
                known += m is not None
                w = math.exp(-d)
                tot += w * math.log(rel)
                wsum += w
            x.append(tot / wsum)
            x.append(known)
        meas = [x for x in C if ms.get(config_key(x[5]))]
        if not meas:
            continue

        def ev(name, key):
            ch = min(meas, key=key)
            add(name, best / ms[config_key(ch[5])])

        ev("oracle", lambda x: ms[config_key(x[5])])
        for g in [0, 0.25, 0.5, 1.0]:
            ev(f"resc*e^{g}d", lambda x: M.rescaled_ms(x[2], x[6], x[7], H200) * math.exp(g * x[0]))
        ev("consensus", lambda x: -x[8])
        for a in [0.5, 1, 2]:
            ev(
                f"resc*cons^-{a}",
                lambda x: math.log(M.rescaled_ms(x[2], x[6], x[7], H200)) - a * x[8],
            )
        ev("nearest best", lambda x: (x[0], x[1]))
        print(
            "x".join(map(str, task.shape)),
            len(meas),
            len(C),
            {k: round(v[-1], 2) for k, v in rules.items()},
            flush=True,
        )
for k, v in rules.items():
    print(f"{k:20s} {geomean(v):.3f} worst {min(v):.2f} n={len(v)}")
