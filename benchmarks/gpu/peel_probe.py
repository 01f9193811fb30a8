"""``tail_k="guard"`` against ``"peel"`` on the GPU GEMM: of each log given, the ``TOP``
fastest configs whose K steps leave a tail (``"peel"`` is a valid point there), each built
both ways, checked against float64 numpy and timed alternately on device arrays (three
rounds of ``time_evaluator`` medians of 10, their median):

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/peel_probe.py TOP LOG.jsonl ...

``gpu/results/splitk_peel_2026-11-25/peel_probe.txt`` was measured (``TOP`` 6) before the
peeling of loops holding private register copies (``reg_fetch=1``) was built: its rows of
such configs time the same kernel twice.
"""

import json
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernel_variants import gemm_operands  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.runtime.numerics import relative_error  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

q = current_device().queue
top = int(sys.argv[1])
rows = []
for path in sys.argv[2:]:
    rs = [json.loads(l) for l in open(path) if l.strip()]
    ok = sorted((r for r in rs if r.get("status") == "ok"), key=lambda r: r["device_ms"])
    task = Task.from_dict(ok[0]["task"])
    M, N, K = task.shape
    a, b, ref, arrs = gemm_operands(M, N, K, q)
    seen, done = set(), 0
    print(f"\n{task}  best logged {ok[0]['device_ms'] * 1e3:.1f} us")
    for r in ok:
        if done >= top:
            break
        cfg = {k: v for k, v in r["config"].items() if k != "tail_k"}
        key = json.dumps(cfg, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        mods = {}
        for tk in ("guard", "peel"):
            try:
                s, args, c = task.instantiate({**cfg, "tail_k": tk})
            except ts.TensorschedError:
                break
            if not c.valid:
                break
            mods[tk] = ts.build(s, args, target="opencl", name="g")
        if len(mods) < 2:
            continue  # no K tail in this config
        done += 1
        errs = {}
        for tk, m in mods.items():
            out = np.full((M, N), np.nan, np.float32)
            m(a, b, out)
            errs[tk] = relative_error(out, ref)
        times = {"guard": [], "peel": []}
        for rep in range(3):
            for tk in ("guard", "peel") if rep % 2 == 0 else ("peel", "guard"):
                times[tk].append(
                    mods[tk].time_evaluator(number=1, repeat=10, warmup=3)(*arrs).device_median
                )
        g, p = (statistics.median(times[t]) * 1e6 for t in ("guard", "peel"))
        rows.append(g / p)
        print(
            f"  logged {r['device_ms'] * 1e3:6.1f}  guard {g:6.1f} us  peel {p:6.1f} us  "
            f"guard/peel {g / p:.3f}  err {errs['guard']:.1e}/{errs['peel']:.1e}  "
            f"tile_k={cfg['tile_k']} split_k={cfg.get('split_k')} "
            f"dbuf={cfg.get('double_buffer')}"
        )
print(f"\ngeomean guard/peel over {len(rows)} configs: {float(np.exp(np.mean(np.log(rows)))):.3f}")
