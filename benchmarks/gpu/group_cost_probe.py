"""Where the one-kernel split-K sum's time goes, and the order of work-groups at large GEMMs.

For each small shape of a log, its fastest split-K config is built with the partial products
added by a second kernel (``split_sum="kernel"``) and by the last work-group of each tile
(``"group"``), and the group kernel's source patched four ways (for timing only: ``nofence``
drops the device-wide fences, ``nosum`` the last group's sum, ``fence1`` leaves one fence a
work-group, by work-item 0 after the barrier, as CUDA's semaphores do); each variant is
checked against float64 numpy into a NaN-poisoned output (a patched one may be wrong: it is
reported, and still timed), then timed alternately by OpenCL profiling events (per kernel)
and through CUDA (its PTX replayed from a CUDA graph), with the registers ptxas gave each
kernel.

``SWIZZLE=1`` instead takes the fastest configs of the large shapes (4096^3, 8192^3) and
patches the order in which work-groups take their tiles: bands of ``G`` tile rows, each
walked column by column (``band8``, ``band16``), so that the work-groups running at once share
rows of A and columns of B in L2. Only their OpenCL times count: launched through CUDA,
``get_num_groups`` reads what NVIDIA's OpenCL runtime sets (as ``%envreg``), so those runs
compute wrong tiles (at 8192^3 they faulted).

    . benchmarks/gpu/gpu_env.sh && [SWIZZLE=1] python benchmarks/gpu/group_cost_probe.py LOG
"""

import json
import os
import statistics
import sys
from dataclasses import replace

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ctypes  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from cuda_kernels import CudaKernels, cuda_graph_seconds, libcuda  # noqa: E402
from kernel_variants import gemm_operands  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.runtime.device import current_device  # noqa: E402
from tensorsched.runtime.module import OpenCLModule  # noqa: E402
from tensorsched.runtime.numerics import relative_error  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

FENCE_ALL = (
    "  TS_DEVICE_FENCE();\n  barrier(CLK_GLOBAL_MEM_FENCE);\n"
    "  if (get_local_id(0) == 0 && get_local_id(1) == 0 && get_local_id(2) == 0) {\n"
)
FENCE_ONE = (
    "  barrier(CLK_GLOBAL_MEM_FENCE);\n"
    "  if (get_local_id(0) == 0 && get_local_id(1) == 0 && get_local_id(2) == 0) {\n"
    "    TS_DEVICE_FENCE();\n"
)
SUM = "  if (ts_last_group) {\n    TS_DEVICE_FENCE();\n"


def patched(mod, text):
    art = mod.export()
    return OpenCLModule.from_artifact(replace(art, source=replace(art.source, text=text)))


def group_variants(mod):
    src = mod.get_source()
    out = {}
    out["nofence"] = src.replace(
        '#define TS_DEVICE_FENCE() asm volatile("membar.gl;" ::: "memory")',
        "#define TS_DEVICE_FENCE()",
    )
    if FENCE_ALL in src:
        out["fence1"] = src.replace(FENCE_ALL, FENCE_ONE)
    if SUM in src:
        out["nosum"] = src.replace(SUM, "  if (ts_last_group && blockIdx_z < 0) {\n")
    return {k: v for k, v in out.items() if v != src}


def swizzle_variants(mod, bands=(4, 8, 16)):
    src = mod.get_source()
    head = "  const int blockIdx_x = get_group_id(0);\n  const int blockIdx_y = get_group_id(1);\n"
    if head not in src:
        return {}
    out = {}
    for g in bands:
        body = (
            "  const int ts_nx = get_num_groups(0), ts_ny = get_num_groups(1);\n"
            "  const int ts_l = get_group_id(1) * ts_nx + get_group_id(0);\n"
            f"  const int ts_band = ts_l / ({g} * ts_nx);\n"
            f"  const int ts_rows = min({g}, ts_ny - ts_band * {g});\n"
            f"  const int ts_in = ts_l - ts_band * {g} * ts_nx;\n"
            "  const int blockIdx_x = ts_in / ts_rows;\n"
            f"  const int blockIdx_y = ts_band * {g} + ts_in % ts_rows;\n"
        )
        out[f"band{g}"] = src.replace(head, body)
    return out


def registers(kern):
    regs = []
    for fn, *_ in kern.launches:
        n = ctypes.c_int()
        libcuda().cuFuncGetAttribute(ctypes.byref(n), 4, fn)  # CU_FUNC_ATTRIBUTE_NUM_REGS
        regs.append(n.value)
    return regs


def probe(task, mods, rounds=7):
    q = current_device().queue
    a, b, ref, arrs = gemm_operands(*task.shape, q)
    M, N, _ = task.shape
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    rows = {}
    for name, mod in mods.items():
        arrs[2].fill(np.nan)
        mod(*arrs)
        err = relative_error(arrs[2].get(), ref)
        kern = CudaKernels(mod, torch)
        out = torch.full((M, N), float("nan"), device="cuda")
        bufs = kern.buffers({"A": ta, "B": tb, "C": out})
        kern(bufs)
        torch.cuda.synchronize()
        cerr = relative_error(out.cpu().numpy(), ref)
        rows[name] = dict(
            mod=mod,
            kern=kern,
            bufs=bufs,
            err=err,
            cerr=cerr,
            ev=[],
            per={},
            graph=[],
            regs=registers(kern),
        )
    for r in range(rounds):
        order = list(rows) if r % 2 == 0 else list(rows)[::-1]
        for name in order:
            row = rows[name]
            t = row["mod"].time_evaluator(number=1, repeat=15, warmup=2)(*arrs)
            row["ev"].append(t.device_median * 1e6)
            for k, v in t.kernel_means().items():
                row["per"].setdefault(k, []).append(v * 1e6)
            call = lambda: row["kern"](row["bufs"])  # noqa: E731
            row["graph"].append(cuda_graph_seconds(torch, call, 10) * 1e6)
    base = None
    for name, row in rows.items():
        ev, gr = statistics.median(row["ev"]), statistics.median(row["graph"])
        base = base or (ev, gr)
        per = " + ".join(f"{statistics.median(v):.1f}" for v in row["per"].values())
        print(
            f"    {name:<14} events {ev:8.1f} us ({per}; x{base[0] / ev:.2f})  "
            f"CUDA graph {gr:8.1f} us (x{base[1] / gr:.2f})  regs {row['regs']}  "
            f"err {row['err']:.1e} / {row['cerr']:.1e}"
        )


def fastest_by_shape(path, want):
    best = {}
    for line in open(path):
        r = json.loads(line)
        if r.get("status") != "ok" or r["task"]["template"] != "gpu_tiled":
            continue
        if not want(r):
            continue
        sh = tuple(r["task"]["shape"])
        if sh not in best or r["device_ms"] < best[sh]["device_ms"]:
            best[sh] = r
    return best


def build(task, config):
    s, args, cfg = task.instantiate(config)
    if not cfg.valid:
        raise ValueError(", ".join(cfg.constraints))
    return ts.build(s, args, target="opencl")


def main(paths):
    print(f"# {current_device().name}; torch {torch.__version__}")
    swizzle = bool(os.environ.get("SWIZZLE"))
    shapes = os.environ.get("SHAPES")
    for path in paths:
        if swizzle:
            best = fastest_by_shape(path, lambda r: r["task"]["shape"][0] >= 2048)
        else:
            best = fastest_by_shape(path, lambda r: r["config"].get("split_k", 1) > 1)
        for sh, rec in sorted(best.items()):
            if shapes and "x".join(map(str, sh)) not in shapes.split(","):
                continue
            task = Task.from_dict(rec["task"])
            cfg = dict(rec["config"])
            print(f"gemm {'x'.join(map(str, sh))} logged {rec['device_ms'] * 1e3:.1f} us {cfg}")
            try:
                if swizzle:
                    mod = build(task, cfg)
                    mods = {"logged": mod}
                    mods.update({k: patched(mod, v) for k, v in swizzle_variants(mod).items()})
                else:
                    kern = build(task, dict(cfg, split_sum="kernel"))
                    group = build(task, dict(cfg, split_sum="group", slice_k=1))
                    mods = {"kernel": kern, "group": group}
                    mods.update({k: patched(group, v) for k, v in group_variants(group).items()})
                probe(task, mods)
            except Exception as exc:  # noqa: BLE001
                print(f"    skipped: {type(exc).__name__}: {str(exc)[:300]}")


if __name__ == "__main__":
    main(sys.argv[1:])
