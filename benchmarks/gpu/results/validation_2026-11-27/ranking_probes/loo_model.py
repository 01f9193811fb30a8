# ruff: noqa: E402  (the package is put on sys.path first)
import math
import os
import sys
import tarfile
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[".."] * 5))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "gpu"))
from predict_loo import H200, SHIPPED, geomean

from tensorsched.tune import model as M
from tensorsched.tune.log import ranked_configs, read_log
from tensorsched.tune.record import config_key
from tensorsched.tune.task import Task

batches_p = [
    ROOT + "/benchmarks/gpu/results/coverage_2026-11-27/tuned60_logs.tgz",
    ROOT + "/benchmarks/gpu/results/coverage2_2026-11-27/tuned65_logs.tgz",
]
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
res = {
    k: []
    for k in [
        "today_A",
        "model_A",
        "oracle_A",
        "model_B",
        "resc_B",
        "oracle_B",
        "model_AB",
        "oracle_AB",
        "resc_AB",
    ]
}
covB = []
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
        A = M.shape_candidates(task, family, H200)
        t = time.time()
        prop = M.ModelProposer(task, space, H200, family, batch=1, explore=0.0)
        prop.model.fit()
        lw = M.Lowering(H200)
        Bc = M.nearest_bests(task, space, family, shapes=8)
        Bl = lw.many([(task, c) for c in Bc])
        B = [(c, f) for c, (f, why) in zip(Bc, Bl) if why is None and f is not None]

        # rescaled for B: need src features; skip -> use model only; resc for A
        def mscore(cs):
            rows = [M.Row(task.key(), prop.sf.features(c), f, None) for c, f in cs]
            return prop.model.score_full(rows)

        def pick(cands, scores):
            meas = [
                (s, ms[config_key(c)]) for (c, _), s in zip(cands, scores) if ms.get(config_key(c))
            ]
            if not meas:
                return None, None
            return best / max(meas)[1], best / min(m for _, m in meas)

        Ap = [(x[3], x[4]) for x in A]
        sA = mscore(Ap) if Ap else []
        r1, o1 = pick(Ap, sA)
        tod = [(M.rescaled_ms(x[1], x[2], x[4], H200) * math.exp(M.DISTRUST * x[0])) for x in A]
        r0, _ = pick(Ap, [-v for v in tod])
        sB = mscore(B) if B else []
        r2, o2 = pick(B, sB)
        AB = Ap + [b for b in B if config_key(b[0]) not in {config_key(a[0]) for a in Ap}]
        sAB = mscore(AB)
        r3, o3 = pick(AB, sAB)
        nm = sum(1 for c, _ in B if ms.get(config_key(c)))
        covB.append(nm / max(len(B), 1))
        for k, v in [
            ("today_A", r0),
            ("model_A", r1),
            ("oracle_A", o1),
            ("model_B", r2),
            ("oracle_B", o2),
            ("model_AB", r3),
            ("oracle_AB", o3),
        ]:
            if v:
                res[k].append(v)
        print(
            "x".join(map(str, task.shape)),
            f"today {r0} modelA {r1} oA {o1} modelB {r2} oB {o2} AB {r3} oAB {o3}",
            f"B {nm}/{len(B)} {time.time() - t:.1f}s",
            flush=True,
        )
        prop.close()
for k, v in res.items():
    if v:
        print(k, f"{geomean(v):.3f}", len(v))
print("B measured share", sum(covB) / len(covB))
