# ruff: noqa: E402  (the package is put on sys.path first)
import math
import os
import pickle
import random
import sys
import tarfile
import tempfile
import time

import lightgbm
import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 5))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "gpu"))
from predict_loo import H200, SHIPPED, geomean

from tensorsched.tune import model as M
from tensorsched.tune.features import IR_COLUMNS, SpaceFeatures, shape_vector
from tensorsched.tune.log import ranked_configs, read_log
from tensorsched.tune.record import config_key
from tensorsched.tune.task import Task

NS = int(os.environ.get("NS", 8))
PER = int(os.environ.get("PER", 4))
SAMPLE = int(os.environ.get("SAMPLE", 40))
batches_p = [
    ROOT + "/benchmarks/gpu/results/coverage_2026-11-27/tuned60_logs.tgz",
    ROOT + "/benchmarks/gpu/results/coverage2_2026-11-27/tuned65_logs.tgz",
]
shipped = [
    r
    for r in read_log(os.environ.get("SHIPPED_LOG", SHIPPED))
    if r.task.get("template") == "gpu_tiled"
]
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
lw = M.Lowering(H200, 2)
cache_p = f"/tmp/abs_rows_{SAMPLE}.pkl"
rng = random.Random(0)
if os.path.exists(cache_p):
    rows = pickle.load(open(cache_p, "rb"))
else:
    by = {}
    for r in shipped:
        by.setdefault(r.task_key(), []).append(r)
    pick = []
    for k, rs in by.items():
        rk = ranked_configs(rs, k)
        rest = rk[15:]
        rng.shuffle(rest)
        pick += rk[:15] + rest[: SAMPLE - 15]
    t = time.time()
    tasks = [Task.from_dict(r.task) for r in pick]
    low = lw.many([(t_, r.config) for t_, r in zip(tasks, pick)])
    print("lowered", len(pick), time.time() - t, flush=True)
    rows = []
    sfs = {}
    for t_, r, (f, why) in zip(tasks, pick, low):
        if f is None or why is not None:
            continue
        sf = sfs.setdefault(t_.key(), SpaceFeatures(t_, t_.space()))
        rows.append((t_.key(), shape_vector(t_), sf.features(r.config), f, r.device_ms))
    pickle.dump(rows, open(cache_p, "wb"))
cols_c = sorted({c for row in rows for c in row[2]})


def vec(sv, cheap, ir):
    return (
        [math.log2(x) for x in sv]
        + [cheap.get(c, np.nan) for c in cols_c]
        + [ir.get(c, np.nan) for c in IR_COLUMNS]
    )


P = {
    "objective": "regression",
    "learning_rate": 0.1,
    "num_leaves": 31,
    "min_data_in_leaf": 5,
    "num_threads": 2,
    "verbose": -1,
    "seed": 0,
    "deterministic": True,
    "force_row_wise": True,
}
res = {}


def add(k, v):
    res.setdefault(k, []).append(v)


for n, batch in enumerate(batches):
    later = {k for b in batches[n:] for k in b}
    tr = [row for row in rows if row[0] not in later]
    X = np.array([vec(r[1], r[2], r[3]) for r in tr])
    y = np.log(np.array([r[4] for r in tr]))
    bst = lightgbm.train(P, lightgbm.Dataset(X, y), num_boost_round=300)
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
        cands, seen = [], set()
        for d, there, rs in shapes:
            for i, r in enumerate(rs[:PER]):
                c = M.carry_config(r.config, there, task, space)
                if config_key(c) in seen:
                    continue
                seen.add(config_key(c))
                cands.append([d, i, r.device_ms, there, r.config, c])
        low = lw.many([(task, x[5]) for x in cands] + [(x[3], x[4]) for x in cands])
        nc = len(cands)
        C = []
        for x, (new, why), (src, _w2) in zip(cands, low[:nc], low[nc:]):
            if why is None and new is not None and src is not None:
                C.append(x + [src, new])
        sf = SpaceFeatures(task, space)
        sv = shape_vector(task)
        pred = bst.predict(np.array([vec(sv, sf.features(x[5]), x[7]) for x in C]))
        # also pred at source, to make a ratio
        psrc = bst.predict(
            np.array(
                [
                    vec(shape_vector(x[3]), SpaceFeatures(x[3], x[3].space()).features(x[4]), x[6])
                    for x in C
                ]
            )
        )
        for x, p, q in zip(C, pred, psrc):
            x += [p, q]
        meas = [x for x in C if ms.get(config_key(x[5]))]
        if not meas:
            continue

        def ev(name, key):
            ch = min(meas, key=key)
            add(name, best / ms[config_key(ch[5])])

        ev("oracle", lambda x: ms[config_key(x[5])])
        ev("resc", lambda x: M.rescaled_ms(x[2], x[6], x[7], H200))
        ev("abs model", lambda x: x[8])
        ev("ratio model", lambda x: math.log(x[2]) + x[8] - x[9])
        ev("abs+resc", lambda x: 0.5 * x[8] + 0.5 * math.log(M.rescaled_ms(x[2], x[6], x[7], H200)))
        print(
            "x".join(map(str, task.shape)),
            len(meas),
            len(C),
            {k: round(v[-1], 2) for k, v in res.items()},
            flush=True,
        )
for k, v in res.items():
    print(f"{k:20s} {geomean(v):.3f} worst {min(v):.2f} n={len(v)}")
