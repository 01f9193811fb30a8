# ruff: noqa: E402  (the package is put on sys.path first)
import collections
import math
import os
import pickle
import sys
import tarfile
import tempfile

import lightgbm
import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 5))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "gpu"))
from predict_loo import H200, SHIPPED, geomean

from tensorsched.tune import model as M
from tensorsched.tune.features import IR_COLUMNS, shape_vector
from tensorsched.tune.log import ranked_configs, read_log
from tensorsched.tune.record import config_key
from tensorsched.tune.task import Task

NS = int(os.environ.get("NS", 8))
PER = int(os.environ.get("PER", 4))
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
# per (task, config) median ms
med = {}
tasks = {}
for k in {r.task_key() for r in shipped}:
    rk = ranked_configs(shipped, k)
    for r in rk:
        med[(k, r.config_key())] = (r.device_ms, r.config)
        tasks[k] = Task.from_dict(r.task)
byc = collections.defaultdict(list)
for k, ck in med:
    byc[ck].append(k)
multi = [(k, ck) for ck, ks in byc.items() if len(ks) > 1 for k in ks]
cache_p = "/tmp/pair_ir.pkl"
if os.path.exists(cache_p):
    IR = pickle.load(open(cache_p, "rb"))
else:
    low = lw.many([(tasks[k], med[(k, ck)][1]) for k, ck in multi])
    IR = {kk: f for kk, (f, why) in zip(multi, low) if f is not None and why is None}
    pickle.dump(IR, open(cache_p, "wb"))


def vec(sv_s, sv_n, fs, fn):
    return (
        [math.log2(x) for x in sv_n]
        + [math.log2(a) - math.log2(b) for a, b in zip(sv_n, sv_s)]
        + [fn.get(c, np.nan) for c in IR_COLUMNS]
        + [fn.get(c, np.nan) - fs.get(c, np.nan) for c in IR_COLUMNS]
    )


P = {
    "objective": "regression",
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_data_in_leaf": 5,
    "num_threads": 2,
    "verbose": -1,
    "seed": 0,
    "deterministic": True,
    "force_row_wise": True,
}


def train(excl, resid):
    X, y = [], []
    for ck, ks in byc.items():
        ks = [k for k in ks if k not in excl and (k, ck) in IR]
        for a in ks:
            for b in ks:
                if a == b:
                    continue
                fs, fn = IR[(a, ck)], IR[(b, ck)]
                msa, msb = med[(a, ck)][0], med[(b, ck)][0]
                X.append(vec(shape_vector(tasks[a]), shape_vector(tasks[b]), fs, fn))
                base = math.log(M.rescaled_ms(msa, fs, fn, H200)) if resid else math.log(msa)
                y.append(math.log(msb) - base)
    print("pairs", len(y), flush=True)
    return lightgbm.train(P, lightgbm.Dataset(np.array(X), np.array(y)), num_boost_round=200)


res = {}


def add(k, v):
    res.setdefault(k, []).append(v)


for n, batch in enumerate(batches):
    later = {k for b in batches[n:] for k in b}
    m_ratio, m_res = train(later, False), train(later, True)
    before = [
        r for r in read_log(os.environ.get("SHIPPED_LOG", SHIPPED)) if r.task_key() not in later
    ]
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
        X = np.array([vec(shape_vector(x[3]), shape_vector(task), x[6], x[7]) for x in C])
        pr, pres = m_ratio.predict(X), m_res.predict(X)
        for x, a, b in zip(C, pr, pres):
            x += [math.log(x[2]) + a, math.log(M.rescaled_ms(x[2], x[6], x[7], H200)) + b]
        meas = [x for x in C if ms.get(config_key(x[5]))]
        if not meas:
            continue

        def ev(name, key):
            ch = min(meas, key=key)
            add(name, best / ms[config_key(ch[5])])

        ev("oracle", lambda x: ms[config_key(x[5])])
        ev("resc", lambda x: M.rescaled_ms(x[2], x[6], x[7], H200))
        ev("pair ratio", lambda x: x[8])
        ev("pair resid", lambda x: x[9])
        ev("pair resid + 0.25d", lambda x: x[9] + 0.25 * x[0])
        print(
            "x".join(map(str, task.shape)), {k: round(v[-1], 2) for k, v in res.items()}, flush=True
        )
for k, v in res.items():
    print(f"{k:20s} {geomean(v):.3f} worst {min(v):.2f} n={len(v)}")
