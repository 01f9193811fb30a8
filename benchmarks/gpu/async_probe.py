"""Would copies from global to ``__local`` memory that bypass registers (``cp.async``, sm_80
and later) close the gap to cuBLAS? For each log given, its fastest config with
``double_buffer="both"``, no split-K and a guard-free K loop is built, and variants are
derived from the generated OpenCL C whose ``__local`` tiles are filled by inline-PTX
``cp.async`` copies through a ring of S buffers (S-1 K steps in flight, one barrier a step,
as cuBLAS's ``stage3`` kernels do). All are checked against float64 numpy and timed
alternately by profiling events (medians); cuBLAS is timed as ``bench.py`` does:

    . benchmarks/gpu/gpu_env.sh && [STAGES=2,3,4] [UNROLL=2,4] [WARPS=8,4] \
        [KNOBS='warp=8;warp=4'] [ORDER=serp,bmajor] [FILTER=knob=value,...] \
        python benchmarks/gpu/async_probe.py LOG ...

An experiment on the text of one kernel shape (the ``both`` loop as ``double_buffer``
writes it), not a feature: it decides whether an asynchronous-copy lowering is worth building.
"""

import json
import os
import re
import sys
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench import cuda_time, load_torch  # noqa: E402
from kernel_variants import best_both, both_loop, built, run_variants  # noqa: E402

from tensorsched.errors import TensorschedError  # noqa: E402

# only configs with these knob values, e.g. FILTER=fetch_vec=4,a_layout=row
FILTER = [kv.split("=") for kv in os.environ.get("FILTER", "").split(",") if kv]
STAGES = tuple(int(s) for s in os.environ.get("STAGES", "2,3,4").split(",") if s)
# also the original with its K loop unrolled by these factors (``#pragma unroll N``)
UNROLL = tuple(int(s) for s in os.environ.get("UNROLL", "").split(",") if s)
# also the original with its threads grouped into warps of LM M-threads x 32/LM N-threads
WARPS = tuple(int(s) for s in os.environ.get("WARPS", "").split(",") if s)
# also the original with each K index's multiply-adds in another order: "serp" (every other
# row of the register tile backwards, so that consecutive ones share a B vector), "bmajor"
# (by B vector, then row)
ORDERS = tuple(s for s in os.environ.get("ORDER", "").split(",") if s)
# also the template's own kernel at the config with these knobs changed, e.g. KNOBS=warp=8;warp=4
KNOBS = [
    dict(re.findall(r"(\w+)=(\[[^\]]*\]|[^,]+)", v))
    for v in os.environ.get("KNOBS", "").split(";")
    if v
]

HELPERS = """
#define TS_CP_ASYNC4(dst, src) asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" \\
    :: "r"((uint)(size_t)(dst)), "l"((ulong)(src)) : "memory")
#define TS_CP_ASYNC16(dst, src) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" \\
    :: "r"((uint)(size_t)(dst)), "l"((ulong)(src)) : "memory")
#define TS_CP_COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#define TS_CP_WAIT(n) asm volatile("cp.async.wait_group " #n ";" ::: "memory")
"""


VSTORE = r"\s+vstore4\((\w+\[\d+\]), 0, (\w+_shared) \+ \(k_outer \+ 1\) % 2 \* (\d+) \+ (.*)\);$"
STORE = r"\s+(\w+_shared)\[\(k_outer \+ 1\) % 2 \* (\d+) \+ (.*)\] = (\w+\[\d+\]);$"


def asyncify(src: str, S: int) -> str:
    loop = both_loop(src)
    lines, i_loop, i_end, n = loop.lines, loop.start, loop.end, loop.steps
    ahead, compute, stores = loop.ahead, loop.compute, loop.stores
    loads = {}
    for l in ahead:
        mm = re.match(r"\s+(\w+_shared_reg\[\d+\]) = (\w+)\[(.*)\];$", l)
        if mm:
            loads[mm.group(1)] = (mm.group(2), mm.group(3))
        mm = re.match(r"\s+(\w+_shared_reg\[\d+\]) = vload4\(0, (\w+) \+ (.*)\);$", l)
        if mm:
            loads[mm.group(1)] = (mm.group(2), mm.group(3))
    copies = []
    for l in stores:
        mm = re.match(STORE, l)
        if mm:
            copies.append((mm.group(1), int(mm.group(2)), mm.group(3), mm.group(4), 4))
            continue
        mm = re.match(VSTORE, l)
        if mm:
            copies.append((mm.group(2), int(mm.group(3)), mm.group(4), mm.group(1), 16))
            continue
        assert l.strip().startswith("//"), l
    assert len(copies) == len(loads), (len(copies), len(loads))
    sizes = {c[0]: c[1] for c in copies}

    def copy(step: str) -> list[str]:
        out = []
        for arr, size, idx, reg, nbytes in copies:
            garr, gexpr = loads[reg]
            gexpr = re.sub(r"\bk_outer\b", f"({step} - 1)", gexpr)
            dst = f"{arr} + ({step}) % {S} * {size} + {idx}"
            out.append(f"    TS_CP_ASYNC{nbytes}({dst}, {garr} + {gexpr});")
        return out

    head = []
    i_first = None
    for i, l in enumerate(lines[:i_loop]):
        mm = re.match(r"(\s+__local float (\w+)\[)(\d+)(\].*)", l)
        if mm and mm.group(2) in sizes:
            l = f"{mm.group(1)}{sizes[mm.group(2)] * S}{mm.group(4)}"
        if re.match(r"\s+float \w+_shared_reg\[\d+\];", l) and i_first is None:
            i_first = i
        if i_first is not None:
            continue  # the register fill before the loop, replaced by the copies below
        head.append(l)
    new = head[:1] + HELPERS.split("\n") + head[1:]
    new += copy("0") + ["  TS_CP_COMMIT();"]
    for s in range(1, S - 1):
        new += [f"  if ({s} < {n}) {{"] + copy(str(s)) + ["  }", "  TS_CP_COMMIT();"]
    new += [lines[i_loop]]
    new += [f"    TS_CP_WAIT({S - 2});", "    barrier(CLK_LOCAL_MEM_FENCE);"]
    new += [f"    if (k_outer + {S - 1} < {n}) {{"] + copy(f"k_outer + {S - 1}") + ["    }"]
    new += ["    TS_CP_COMMIT();"]
    new += [re.sub(r"k_outer % 2 \* (\d+)", rf"k_outer % {S} * \1", l) for l in compute]
    new += ["  }"] + lines[i_end + 1 :]
    return "\n".join(new)


def reordered(src: str, order: str) -> str:
    """The kernel with the multiply-adds of each K index of its ``both`` loop reordered (each
    statement ``C[i] = C[i] + ((floatN)(a)) * b;`` keeps its operands)."""
    loop = both_loop(src)
    fma = re.compile(r"\s+\w+\[\d+\] = \w+\[\d+\] \+ \(\(float\d*\)\((.*)\)\) \* (.*);$")
    out, group = [], []

    def flush() -> None:
        if order == "serp":  # runs of one A operand; every other run backwards
            runs: list[list[str]] = []
            for line in group:
                a = fma.match(line).group(1)
                if not runs or fma.match(runs[-1][0]).group(1) != a:
                    runs.append([])
                runs[-1].append(line)
            out.extend(x for n, run in enumerate(runs) for x in (run[::-1] if n % 2 else run))
        else:  # bmajor
            bs = list(dict.fromkeys(fma.match(x).group(2) for x in group))
            out.extend(sorted(group, key=lambda x: bs.index(fma.match(x).group(2))))
        group.clear()

    seen: set[str] = set()
    for line in loop.compute:
        m = fma.match(line)
        if m is None:
            flush()
            out.append(line)
            continue
        target = line.split("=")[0].strip()
        if target in seen:  # the next K index starts
            flush()
            seen.clear()
        seen.add(target)
        group.append(line)
    flush()
    assert sorted(out) == sorted(loop.compute)
    lines = loop.lines
    body = lines[loop.start + 1 : loop.end]
    i = body.index(loop.compute[0])
    body[i : i + len(loop.compute)] = out
    return "\n".join(lines[: loop.start + 1] + body + lines[loop.end :])


def warp_tiled(src: str, lm: int) -> str:
    """The kernel with its multiply-adds and output stores (everything after the K loop)
    spread over the work-group by warps of ``lm`` M-threads x ``32 / lm`` N-threads (the
    cooperative fills keep the original order, so their global loads stay coalesced)."""
    tx, ty = map(int, re.search(r"reqd_work_group_size\((\d+), (\d+), 1\)", src).groups())
    ln = 32 // lm
    assert tx % ln == 0 and ty % lm == 0, (tx, ty, lm)
    out, in_loop, after = [], False, False
    for line in src.split("\n"):
        in_loop = in_loop or line.startswith("  for (int k_outer")
        after = after or (in_loop and line == "  }")
        if "C_local" in line or "_shared_local" in line or after:
            line = re.sub(r"\bthreadIdx_x\b", "ts_cx", line)
            line = re.sub(r"\bthreadIdx_y\b", "ts_cy", line)
        out.append(line)
        if line.strip().startswith("const int threadIdx_y = get_local_id(1);"):
            out += [
                f"  const int ts_lid = threadIdx_y * {tx} + threadIdx_x;",
                "  const int ts_lane = ts_lid % 32, ts_warp = ts_lid / 32;",
                f"  const int ts_cx = ts_warp % {tx // ln} * {ln} + ts_lane % {ln};",
                f"  const int ts_cy = ts_warp / {tx // ln} * {lm} + ts_lane / {ln};",
            ]
    return "\n".join(out)


def cublas_us(M, N, K):
    torch, _ = load_torch()
    if torch is None:
        return float("nan")
    a = torch.rand(M, K, device="cuda")
    b = torch.rand(K, N, device="cuda")
    opts = SimpleNamespace(warmup=5, repeat=7, min_seconds=0.01)
    return cuda_time(torch, lambda: a @ b, opts) * 1e6


rows: dict[str, list[float]] = {}
for path in sys.argv[1:]:
    r = best_both(path, **dict(FILTER))
    if r is None:
        continue
    task, src, info = built(r)
    M, N, K = task.shape
    texts = {"both": (src, info)}
    for change in KNOBS:
        name = ",".join(f"{k}={v}" for k, v in change.items())
        knobs = {k: json.loads(v) for k, v in change.items()}
        try:
            texts[name] = built(r, **knobs)[1:]
        except (ValueError, TensorschedError) as e:  # a config the space refuses
            print(name, "invalid:", e)
    for S in STAGES:
        try:
            texts[f"async{S}"] = (asyncify(src, S), info)
        except Exception as e:
            print(task, "no variant:", repr(e)[:300])
            break
    for order in ORDERS:
        texts[order] = (reordered(src, order), info)
    for lm in WARPS:
        try:
            texts[f"warp{lm}x{32 // lm}"] = (warp_tiled(src, lm), info)
        except AssertionError as e:
            print(task, "no warp variant:", e)
    for u in UNROLL:
        loop = "  for (int k_outer = 0; k_outer < "
        texts[f"unroll{u}"] = (src.replace(loop, f"  #pragma unroll {u}\n{loop}", 1), info)
    if len(texts) == 1:
        continue
    res = run_variants(texts, info.name, M, N, K)
    cub = cublas_us(M, N, K)
    print(f"{task} {r['config']}  cuBLAS {cub:.1f} us")
    for name, (t, err) in res.items():
        ratio = res["both"][0] / t
        if name != "both":
            rows.setdefault(name, []).append(ratio)
        print(
            f"  {name:9s} {t:8.1f} us  both/this {ratio:.3f}  /cuBLAS {cub / t:.3f}  err {err:.1e}"
        )
for name, rs in rows.items():
    print(f"geomean both/{name} {float(np.exp(np.mean(np.log(rs)))):.3f} over {len(rs)}")
