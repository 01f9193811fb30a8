"""Does a deeper pipeline help the GPU GEMM? For each log given, its fastest config with
``double_buffer="both"`` and no split-K is built, and a variant is derived from the generated
OpenCL C whose global loads are issued two K steps ahead instead of one (two register sets,
the K loop unrolled by two), as cuBLAS's three-stage pipeline does; both are checked against
float64 numpy and timed alternately by profiling events (medians):

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/prefetch_probe.py LOG.jsonl ...

An experiment on the text of one kernel shape (the ``both`` loop as ``double_buffer`` writes
it), not a feature: it decides whether a prefetch-distance knob is worth building.
"""

import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kernel_variants import best_both, both_loop, built, run_variants  # noqa: E402


def deep(src):
    loop = both_loop(src)
    lines, i_loop, i_end, n = loop.lines, loop.start, loop.end, loop.steps
    ahead, compute, stores = loop.ahead, loop.compute, loop.stores
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


rows = []
for path in sys.argv[1:]:
    r = best_both(path)
    if r is None:
        continue
    task, src, info = built(r)
    M, N, K = task.shape
    try:
        dsrc = deep(src)
    except Exception as e:
        print(task, "no variant:", repr(e)[:200])
        continue
    res = run_variants({"both": (src, info), "deep": (dsrc, info)}, info.name, M, N, K)
    (tb, eb), (td, ed) = res["both"], res["deep"]
    rows.append(tb / td)
    print(
        f"{task} {r['config']}\n  both {tb:.1f} us  deep {td:.1f} us  both/deep "
        f"{tb / td:.3f}  err {eb:.1e} / {ed:.1e}"
    )
if rows:
    print(f"geomean both/deep {float(np.exp(np.mean(np.log(rows)))):.3f} over {len(rows)}")
