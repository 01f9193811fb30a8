"""Does a deeper pipeline help the GPU GEMM? For each log given, its fastest config with
``double_buffer="both"`` and no split-K is built, and a variant is derived from the generated
OpenCL C whose global loads are issued two K steps ahead instead of one (two register sets,
the K loop unrolled by two), as cuBLAS's three-stage pipeline does; both are checked against
float64 numpy and timed alternately by profiling events (medians):

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/prefetch_probe.py LOG.jsonl ...

An experiment on the text of one kernel shape (the ``both`` loop as ``double_buffer`` writes
it), not a feature: it decides whether a prefetch-distance knob is worth building.
"""

import json
import os
import re
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import pyopencl as cl  # noqa: E402
import pyopencl.array as cla  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.runtime.numerics import relative_error  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

dev = current_device()
q = dev.queue


def deep(src):
    lines = src.split("\n")
    i_loop = next(
        i for i, l in enumerate(lines) if l.startswith("  for (int k_outer = 0; k_outer < ")
    )
    n = int(re.search(r"k_outer < (\d+);", lines[i_loop]).group(1))
    last = n - 1
    # the loop body: ahead block, compute, stores block, barrier, close
    i_end = next(i for i in range(i_loop + 1, len(lines)) if lines[i] == "  }")
    body = lines[i_loop + 1 : i_end]
    assert body[0].strip() == f"if (k_outer < {last}) {{", body[0]
    j = next(i for i in range(1, len(body)) if body[i] == "    }")
    ahead = body[1:j]
    k = next(i for i in range(j + 1, len(body)) if body[i].strip() == f"if (k_outer < {last}) {{")
    compute = body[j + 1 : k]
    m = next(i for i in range(k + 1, len(body)) if body[i] == "    }")
    stores = body[k + 1 : m]
    assert body[m + 1].strip() == "barrier(CLK_LOCAL_MEM_FENCE);" and m + 2 == len(body), body[m:]
    regs = sorted(set(re.findall(r"\b(\w+_shared_reg)\[", "\n".join(ahead))))
    decls = [l for l in lines[:i_loop] if re.match(r"\s+float \w+_shared_reg\[\d+\];", l)]

    def sub(block, kexpr, two=False):
        out = []
        for l in block:
            l = re.sub(r"\bk_outer\b", f"({kexpr})", l)
            if two:
                for r in regs:
                    l = re.sub(rf"\b{r}\[", f"{r}2[", l)
            out.append(l)
        return out

    new = lines[:i_loop]
    new += [d.replace("_shared_reg[", "_shared_reg2[") for d in decls]
    new += sub(ahead, "0", two=True)  # step 1's loads into the second set
    new += [f"  for (int ko = 0; ko < {n}; ko += 2) {{"]
    new += [f"    if (ko + 2 < {n}) {{"] + sub(ahead, "ko + 1") + ["    }"]
    new += sub(compute, "ko")
    new += [f"    if (ko + 1 < {n}) {{"] + sub(stores, "ko", two=True) + ["    }"]
    new += ["    barrier(CLK_LOCAL_MEM_FENCE);"]
    new += [f"    if (ko + 1 < {n}) {{"]
    new += [f"    if (ko + 3 < {n}) {{"] + sub(ahead, "ko + 2", two=True) + ["    }"]
    new += sub(compute, "ko + 1")
    new += [f"    if (ko + 2 < {n}) {{"] + sub(stores, "ko + 1") + ["    }"]
    new += ["    barrier(CLK_LOCAL_MEM_FENCE);", "    }"]
    new += ["  }"] + lines[i_end + 1 :]
    return "\n".join(new)


def best_both(path):
    rs = [json.loads(l) for l in open(path) if l.strip()]
    ok = [
        r
        for r in rs
        if r.get("status") == "ok"
        and r["config"].get("double_buffer") == "both"
        and r["config"].get("split_k", 1) == 1
    ]
    return min(ok, key=lambda r: r["device_ms"]) if ok else None


rows = []
for path in sys.argv[1:]:
    r = best_both(path)
    if r is None:
        continue
    task = Task.from_dict(r["task"])
    M, N, K = task.shape
    s, args, _ = task.instantiate(r["config"])
    mod = ts.build(s, args, target="opencl", name="g")
    src = mod.get_source()
    info = mod.source.kernels[0]
    try:
        dsrc = deep(src)
    except Exception as e:
        print(task, "no variant:", repr(e)[:200])
        continue
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    ref = a.astype(np.float64) @ b
    da, db = cla.to_device(q, a), cla.to_device(q, b)
    kern = {}
    for name, text in (("both", src), ("deep", dsrc)):
        kern[name] = cl.Kernel(cl.Program(dev.context, text).build(), info.name)
    res = {}
    for name, kn in kern.items():
        out = cla.to_device(q, np.full((M, N), np.nan, np.float32))
        kn.set_args(da.data, db.data, out.data)
        cl.enqueue_nd_range_kernel(q, kn, info.global_size, info.local_size).wait()
        res[name] = relative_error(out.get(), ref)
    times = {n_: [] for n_ in kern}
    out = cla.empty(q, (M, N), np.float32)
    for rep in range(6):
        for name in ("both", "deep") if rep % 2 == 0 else ("deep", "both"):
            kn = kern[name]
            kn.set_args(da.data, db.data, out.data)
            ts_ = []
            for _ in range(15):
                ev = cl.enqueue_nd_range_kernel(q, kn, info.global_size, info.local_size)
                ev.wait()
                ts_.append((ev.profile.end - ev.profile.start) * 1e-3)
            times[name].append(statistics.median(ts_[3:]))
    tb, td = statistics.median(times["both"]), statistics.median(times["deep"])
    rows.append(tb / td)
    print(
        f"{task} {r['config']}\n  both {tb:.1f} us  deep {td:.1f} us  both/deep "
        f"{tb / td:.3f}  err {res['both']:.1e} / {res['deep']:.1e}"
    )
if rows:
    print(f"geomean both/deep {float(np.exp(np.mean(np.log(rows)))):.3f} over {len(rows)}")
