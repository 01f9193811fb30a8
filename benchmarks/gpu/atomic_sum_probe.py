"""Split-K's partial products added by atomic adds as each work-group finishes, a probe.

``split_sum="group"`` (session 15) has every work-group of a tile store its partial product
in its own slice of a global array, and the last of them to arrive add all ``split_k``
slices alone (session 17: that sum, not the fences, is what makes it lose where the tiles are
large or the split deep). Here each work-group instead adds its partial product into one
zeroed M x N array with atomic adds (on NVIDIA ``red.global.add.f32``, a reduction the
memory system performs, which returns nothing; elsewhere a compare-and-swap loop on the bits,
which any OpenCL 1.2 device has), and the last group reads that array once, writes C and sets
its tile back to zero for the next launch. The group kernel's OpenCL C is patched for it
(timing only, not a code path of tensorsched):

- ``red``: four scalar ``red.global.add.f32`` per float4 (CAS loop off NVIDIA);
- ``red4``: one ``red.global.add.v4.f32`` per float4 (PTX ISA 8.1, sm_90), NVIDIA only;
- ``cas``: the compare-and-swap loop everywhere.

For each shape, its fastest logged split-K config is built with both sums (``kernel``,
``group``) and the patched variants (from the group kernel with ``tail="guard"``, marked
``group_g``, where the config's ``shift`` tail makes the last tiles overlap: an overlapping
element would be added twice); each variant is checked against float64 numpy into a
NaN-poisoned output twice in a row (the second run proves the tiles were zeroed again),
then all are timed alternately by OpenCL profiling events (medians of rounds of
``time_evaluator`` medians):

    . benchmarks/gpu/gpu_env.sh && [SHAPES=MxNxK,...] [SPLIT=8] \\
        python benchmarks/gpu/atomic_sum_probe.py LOG.jsonl

``SPLIT`` forces the split of every config (default: each config's own).
"""

import json
import os
import re
import statistics
import sys
from dataclasses import replace

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from kernel_variants import gemm_operands  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.runtime.module import OpenCLModule  # noqa: E402
from tensorsched.runtime.numerics import relative_error  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

CAS = r"""
inline void ts_cas_add(__global float* p, float v) {
  __global volatile int* q = (__global volatile int*)p;
  int old = *q, seen;
  while ((seen = atomic_cmpxchg(q, old, as_int(as_float(old) + v))) != old) old = seen;
}
"""
MACROS = {
    "red": CAS
    + r"""
#ifdef __NV_CL_C_VERSION
#define TS_RED1(p, v) asm volatile("red.global.add.f32 [%0], %1;" :: "l"(p), "f"(v) : "memory")
#else
#define TS_RED1(p, v) ts_cas_add(p, v)
#endif
#define TS_RED4(v, p) do { float4 ts_v = (v); __global float* ts_p = (p); \
  TS_RED1(ts_p, ts_v.x); TS_RED1(ts_p + 1, ts_v.y); TS_RED1(ts_p + 2, ts_v.z); \
  TS_RED1(ts_p + 3, ts_v.w); } while (0)
#define TS_RED2(v, p) do { float2 ts_v = (v); __global float* ts_p = (p); \
  TS_RED1(ts_p, ts_v.x); TS_RED1(ts_p + 1, ts_v.y); } while (0)
""",
    "red4": r"""
#define TS_RED1(p, v) asm volatile("red.global.add.f32 [%0], %1;" :: "l"(p), "f"(v) : "memory")
#define TS_RED4(v, p) do { float4 ts_v = (v); __global float* ts_p = (p); \
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(ts_p), "f"(ts_v.x), \
  "f"(ts_v.y), "f"(ts_v.z), "f"(ts_v.w) : "memory"); } while (0)
#define TS_RED2(v, p) do { float2 ts_v = (v); __global float* ts_p = (p); \
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" :: "l"(ts_p), "f"(ts_v.x), \
  "f"(ts_v.y) : "memory"); } while (0)
""",
    "cas": CAS
    + r"""
#define TS_RED1(p, v) ts_cas_add(p, v)
#define TS_RED4(v, p) do { float4 ts_v = (v); __global float* ts_p = (p); \
  TS_RED1(ts_p, ts_v.x); TS_RED1(ts_p + 1, ts_v.y); TS_RED1(ts_p + 2, ts_v.z); \
  TS_RED1(ts_p + 3, ts_v.w); } while (0)
#define TS_RED2(v, p) do { float2 ts_v = (v); __global float* ts_p = (p); \
  TS_RED1(ts_p, ts_v.x); TS_RED1(ts_p + 1, ts_v.y); } while (0)
""",
}

VSTORE = re.compile(r"vstore(\d+)\((.+), 0, (\w+_rf) \+ (.*)\);$")
SSTORE = re.compile(r"(\w+_rf)\[(.*)\] = (.+);$")
VSUM = re.compile(r"^(\s*)(\w+\[0\]) = \2 \+ vload(\d+)\(0, (\w+_rf) \+ (.*)\);$")
SSUM = re.compile(r"^(\s*)(\w+\[0\]) = \2 \+ (\w+_rf)\[(.*)\];$")


def drop_slice(addr: str) -> tuple[str, int]:
    """``addr`` without its ``blockIdx_z * S`` term, and ``S``."""
    m = re.search(r"blockIdx_z \* (\d+)", addr)
    if not m:
        raise ValueError(f"no blockIdx_z term in {addr!r}")
    stride = int(m.group(1))
    out = addr.replace(m.group(0) + " + ", "").replace(" + " + m.group(0), "")
    if out == addr:
        out = addr.replace(m.group(0), "0")
    return out, stride


def split_const(addr: str) -> tuple[str, int]:
    m = re.match(r"(.*) \+ (\d+)$", addr)
    return (m.group(1), int(m.group(2))) if m else (addr, 0)


def atomic_text(src: str, kind: str) -> str:
    """The group kernel ``src`` with each partial store an atomic add into slice 0 and the
    last group's sum reading slice 0 once and zeroing it."""
    out, stride = [], None
    in_sum = False
    for line in src.split("\n"):
        body = line.strip()
        if "if (ts_last_group) {" in body and "TS_DEVICE_FENCE" not in body:
            in_sum = in_sum or out and "barrier(CLK_LOCAL_MEM_FENCE);" in out[-1]
        m = VSTORE.search(body)
        if m and not in_sum:
            addr, stride = drop_slice(m.group(4))
            pad = line[: len(line) - len(line.lstrip())]
            out.append(f"{pad}TS_RED{m.group(1)}({m.group(2)}, {m.group(3)} + {addr});")
            continue
        m = SSTORE.search(body)
        if m and not in_sum and "blockIdx_z" in m.group(2):
            addr, stride = drop_slice(m.group(2))
            pad = line[: len(line) - len(line.lstrip())]
            out.append(f"{pad}TS_RED1({m.group(1)} + {addr}, {m.group(3)});")
            continue
        if in_sum:
            m = VSUM.match(line)
            if m:
                if stride is None:
                    raise ValueError("sum before the partial stores")
                pad, acc, n, buf, addr = m.groups()
                base, c = split_const(addr)
                if c >= stride:
                    continue
                out.append(line)
                out.append(f"{pad}vstore{n}((float{n})(0.0f), 0, {buf} + {addr});")
                continue
            m = SSUM.match(line)
            if m:
                pad, acc, buf, addr = m.groups()
                base, c = split_const(addr)
                if stride is None:
                    raise ValueError("sum before the partial stores")
                if c >= stride:
                    continue
                out.append(line)
                out.append(f"{pad}{buf}[{addr}] = 0.0f;")
                continue
            if "_rf" in body and "_rf_arrivals" not in body:
                raise ValueError(f"unpatched read of the partial products: {body[:120]}")
        out.append(line)
    text = "\n".join(out)
    if stride is None:
        raise ValueError("no partial store found")
    head = text.index("__kernel")
    return text[:head] + MACROS[kind] + "\n" + text[head:]


def patched(mod, text):
    art = mod.export()
    src = art.source
    rf = tuple(t for t in src.temps if t.name.endswith(".rf"))
    return OpenCLModule.from_artifact(
        replace(art, source=replace(src, text=text, zeroed=tuple(src.zeroed) + rf))
    )


def build(task, config):
    s, args, cfg = task.instantiate(config)
    if not cfg.valid:
        raise ValueError(", ".join(cfg.constraints))
    return ts.build(s, args, target="opencl")


def check(mod, arrs, ref) -> float:
    worst = 0.0
    for _ in range(2):
        arrs[2].fill(np.nan)
        mod(*arrs)
        worst = max(worst, relative_error(arrs[2].get(), ref))
    return worst


def probe(task, mods, rounds=7):
    q = current_device().queue
    _, _, ref, arrs = gemm_operands(*task.shape, q)
    rows = {}
    for name, mod in mods.items():
        try:
            err = check(mod, arrs, ref)
        except Exception as exc:  # noqa: BLE001
            print(f"    {name}: not run: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        rows[name] = dict(mod=mod, err=err, ev=[])
    for r in range(rounds):
        for name in list(rows) if r % 2 == 0 else list(rows)[::-1]:
            t = rows[name]["mod"].time_evaluator(number=1, repeat=15, warmup=2)(*arrs)
            rows[name]["ev"].append(t.device_median * 1e6)
    for row in rows.values():
        row["err2"] = check(row["mod"], arrs, ref)
    base = statistics.median(rows["kernel"]["ev"])
    for name, row in rows.items():
        ev = statistics.median(row["ev"])
        ok = "ok" if max(row["err"], row["err2"]) <= 1e-5 else "WRONG"
        print(
            f"    {name:<8} {ev:8.1f} us  x{base / ev:.2f} of kernel  "
            f"err {row['err']:.1e} / after timing {row['err2']:.1e} {ok}",
            flush=True,
        )


def fastest_split(path):
    best = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("status") != "ok" or r["task"]["template"] != "gpu_tiled":
            continue
        if r["config"].get("split_k", 1) <= 1:
            continue
        sh = tuple(r["task"]["shape"])
        if sh not in best or r["device_ms"] < best[sh]["device_ms"]:
            best[sh] = r
    return best


def main(paths):
    print(f"# {current_device().name}")
    shapes = os.environ.get("SHAPES")
    force = int(os.environ.get("SPLIT", "0"))
    for path in paths:
        for sh, rec in sorted(fastest_split(path).items()):
            if shapes and "x".join(map(str, sh)) not in shapes.split(","):
                continue
            task = Task.from_dict(rec["task"])
            cfg = dict(rec["config"])
            if force:
                cfg["split_k"] = force
            print(f"gemm {'x'.join(map(str, sh))} logged {rec['device_ms'] * 1e3:.1f} us {cfg}")
            try:
                kern = build(task, dict(cfg, split_sum="kernel"))
                group = build(task, dict(cfg, split_sum="group", slice_k=1))
                mods = {"kernel": kern, "group": group}
                if cfg.get("tail") == "shift":  # overlapping tiles would add twice
                    group = build(task, dict(cfg, split_sum="group", slice_k=1, tail="guard"))
                    mods["group_g"] = group
                for kind in MACROS:
                    try:
                        mods[kind] = patched(group, atomic_text(group.get_source(), kind))
                        mods[kind].get_source()
                    except Exception as exc:  # noqa: BLE001
                        print(f"    {kind}: not built: {type(exc).__name__}: {str(exc)[:200]}")
                        mods.pop(kind, None)
                probe(task, mods)
            except Exception as exc:  # noqa: BLE001
                print(f"    skipped: {type(exc).__name__}: {str(exc)[:300]}")


if __name__ == "__main__":
    main(sys.argv[1:])
