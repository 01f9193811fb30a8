"""Knob sweep of the desktop-GPU GEMM template on the GPU host: a list of configs per shape,
each built, checked against a float64 reference (output poisoned with NaN first) and timed by
profiling events (median of repeats), in one process. Shows what the template can reach
before (and beside) a tuning run, and the build time per config.

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/sweep.py --shapes 4096,4096,4096
"""
import argparse
import itertools
import time

import numpy as np

import tensorsched as ts
from tensorsched.ops.templates import TEMPLATES
from tensorsched.tune.space import Config


def reference(a, b):
    try:
        import torch
        if torch.cuda.is_available():
            ta = torch.from_numpy(a).cuda().double()
            return (ta @ torch.from_numpy(b).cuda().double()).cpu().numpy()
    except ImportError:
        pass
    return a.astype(np.float64) @ b


def configs(limit):
    tiles = [((2, 16, 4), (2, 16, 4)), ((2, 16, 4), (2, 8, 8)), ((1, 16, 8), (2, 16, 4)),
             ((2, 8, 8), (2, 16, 4)), ((2, 8, 4), (2, 16, 4)), ((2, 16, 4), (2, 32, 2)),
             ((2, 16, 2), (2, 16, 4)), ((2, 32, 2), (2, 16, 4)), ((1, 16, 4), (2, 16, 4)),
             ((2, 8, 4), (2, 8, 4))]
    out = []
    for (ty, tx), k, lay, pad, fv in itertools.product(tiles, (16, 8, 32), ("col", "row"),
                                                       (0, 4), (4, 1)):
        if pad and lay == "row":
            continue
        out.append(dict(tile_y=ty, tile_x=tx, tile_k=(k,), unroll_k=1, a_layout=lay,
                        a_pad=pad, fetch_vec=fv))
    # the first tile of each shape with every other knob, then the rest with the defaults
    first = [c for c in out if c["tile_y"] == tiles[0][0] and c["tile_x"] == tiles[0][1]]
    rest = [c for c in out if c not in first and c["tile_k"] == (16,) and c["a_pad"] == 0
            and c["fetch_vec"] == 4]
    return (first + rest)[:limit]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", nargs="+", default=["4096,4096,4096"])
    p.add_argument("--limit", type=int, default=60)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--source", action="store_true", help="print the best kernel's source")
    args = p.parse_args()
    import pyopencl.array as cla
    from tensorsched.runtime.device import current_device
    dev = current_device()
    print(f"# device: {dev}")
    rng = np.random.default_rng(0)
    for shape in args.shapes:
        M, N, K = map(int, shape.split(","))
        a = rng.standard_normal((M, K), dtype=np.float32)
        b = rng.standard_normal((K, N), dtype=np.float32)
        ref = reference(a, b)
        q = dev.queue
        da, db = cla.to_device(q, a), cla.to_device(q, b)
        dc = cla.empty(q, (M, N), np.float32)
        rows = []
        for knobs in configs(args.limit):
            t0 = time.perf_counter()
            s, targs, cfg = None, None, Config(knobs)
            try:
                s, targs = TEMPLATES["gemm"]["gpu_tiled"](cfg, M, N, K)
                if not cfg.valid:
                    continue
                mod = ts.build(s, targs, target="opencl")
            except ts.TensorschedError as exc:
                print(f"{knobs}: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            build_s = time.perf_counter() - t0
            dc.fill(np.float32(np.nan))
            mod(da, db, dc)
            c = dc.get()
            err = float(np.max(np.abs(c - ref)) / np.max(np.abs(ref)))
            ok = err <= 1e-5
            t = mod.time_evaluator(repeat=args.repeat)(da, db, dc)
            tf = 2 * M * N * K / t.device_median / 1e12
            rows.append((tf, knobs, mod))
            print(f"{M}x{N}x{K} {tf:6.2f} TFLOP/s  {t.device_median * 1e3:8.3f} ms  "
                  f"err {err:.1e} {'ok' if ok else 'WRONG'}  build {build_s:.2f} s  {knobs}",
                  flush=True)
        rows.sort(key=lambda r: -r[0])
        for tf, knobs, _ in rows[:5]:
            print(f"best {M}x{N}x{K}: {tf:.2f} TFLOP/s {knobs}")
        if args.source and rows:
            print(rows[0][2].get_source())
        if rows:
            print(f"# registers and spills of the best ({M}x{N}x{K}), from the build log:")
            print(build_log(dev, rows[0][2].get_source()))


def build_log(dev, source):
    """NVIDIA's ptxas report (registers per work-item, spills) for ``source``; other drivers
    print what they print."""
    import pyopencl as cl
    try:
        prg = cl.Program(dev.context, source).build(options=["-cl-nv-verbose"])
    except cl.Error as exc:
        return f"(no verbose build: {exc})"
    return prg.get_build_info(dev.cl_device, cl.program_build_info.LOG)


if __name__ == "__main__":
    main()
