"""Quick knob sweep of a GPU template on the GPU host, in one process (no tuner workers): the
template's default plus random points of its space whose tiles divide the shape, each built,
checked against a float64 reference (output poisoned with NaN first) and timed by profiling
events (median of repeats). Shows what a template can reach, which knobs matter, and (NVIDIA)
the registers and spills of the best kernel.

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/sweep.py gemm:4096,4096,4096 \\
        conv:1,256,56,56,256,3,3,1,1 --limit 60
"""

import argparse
import itertools
import json
import math
import random
import time

import numpy as np

import tensorsched as ts
from tensorsched.ops.conv2d import ConvShape, conv2d_ref
from tensorsched.ops.space import Config
from tensorsched.ops.templates import TEMPLATES
from tensorsched.runtime.device import current_device
from tensorsched.runtime.numerics import TOL, random_array, relative_error

DEFAULT_TEMPLATE = {"gemm": "gpu_tiled", "conv": "implicit_gemm"}


def workload(spec, rng):
    """``(kind, shape args, inputs, reference, flop, extents (M, N))`` of ``gemm:M,N,K`` or
    ``conv:N,CI,H,W,CO,KH,KW,stride,pad``."""
    kind, _, dims = spec.partition(":")
    v = [int(x) for x in dims.split(",")]
    if kind == "gemm":
        M, N, K = v
        a = random_array((M, K), np.float32, rng)
        b = random_array((K, N), np.float32, rng)
        return kind, (M, N, K), [a, b], reference_gemm(a, b), 2 * M * N * K, (M, N)
    sh = ConvShape(*v)
    d = random_array((sh.N, sh.CI, sh.IH, sh.IW), np.float32, rng)
    w = random_array((sh.CO, sh.CI, sh.KH, sh.KW), np.float32, rng)
    return kind, (sh,), [d, w], reference_conv(d, w, sh), sh.flop, (sh.CO, sh.N * sh.OH * sh.OW)


def reference_gemm(a, b):
    try:
        import torch

        if torch.cuda.is_available():
            ta = torch.from_numpy(a).cuda().double()
            return (ta @ torch.from_numpy(b).cuda().double()).cpu().numpy()
    except ImportError:
        pass
    return a.astype(np.float64) @ b


def reference_conv(d, w, sh):
    try:
        import torch

        if torch.cuda.is_available():
            out = torch.nn.functional.conv2d(
                torch.from_numpy(d).cuda().double(),
                torch.from_numpy(w).cuda().double(),
                stride=sh.stride,
                padding=sh.pad,
            )
            return out.cpu().numpy()
    except ImportError:
        pass
    return conv2d_ref(d.astype(np.float64), w.astype(np.float64), sh.stride, sh.pad)


def candidates(template, shape_args, extents, limit, seed):
    """The default config, then random valid points whose tiles divide ``extents``."""
    space = Config()
    template(space, *shape_args)
    out, seen = [{}], set()
    rnd = random.Random(seed)
    order = list(range(space.size()))
    rnd.shuffle(order)
    for i in order:
        if len(out) >= limit:
            break
        point = space.point(i)
        ty, tx = point.get("tile_y"), point.get("tile_x")
        if ty is None or extents[0] % math.prod(ty) or extents[1] % math.prod(tx):
            continue
        cfg = Config(point)
        try:
            template(cfg, *shape_args)
        except ts.TensorschedError:
            continue
        if not cfg.valid:
            continue
        key = tuple(sorted(point.items()))
        if key not in seen:
            seen.add(key)
            out.append(point)
    return out


def expand(configs, vary):
    """Each config with every combination of the ``vary`` alternatives (``{knob: [values]}``);
    JSON lists become tuples (split knobs)."""

    def value(v):
        return tuple(v) if isinstance(v, list) else v

    out = []
    for c in configs:
        for combo in itertools.product(*vary.values()):
            knobs = {k: value(v) for k, v in c.items()}
            knobs.update({k: value(v) for k, v in zip(vary, combo)})
            out.append(knobs)
    return out


def build_log(dev, source):
    """NVIDIA's ptxas report (registers per work-item, spills) for ``source``."""
    import pyopencl as cl

    try:
        prg = cl.Program(dev.context, source).build(options=["-cl-nv-verbose"])
    except cl.Error as exc:
        return f"(no verbose build: {str(exc).splitlines()[0]})"
    return prg.get_build_info(dev.cl_device, cl.program_build_info.LOG)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workloads", nargs="+", help="gemm:M,N,K or conv:N,CI,H,W,CO,KH,KW,stride,pad")
    p.add_argument("--template", help="template name (default: gpu_tiled / implicit_gemm)")
    p.add_argument("--limit", type=int, default=40)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--source", action="store_true", help="print the best kernel's source")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        type=json.loads,
        help="a config to measure (JSON), instead of random ones; repeatable",
    )
    p.add_argument(
        "--vary",
        action="append",
        default=[],
        help="KNOB=JSON-LIST: measure each config with each of these values",
    )
    args = p.parse_args()
    import pyopencl.array as cla

    dev = current_device()
    print(f"# device: {dev.name}")
    rng = np.random.default_rng(0)
    for spec in args.workloads:
        kind, shape_args, inputs, ref, flop, extents = workload(spec, rng)
        name = args.template or DEFAULT_TEMPLATE[kind]
        template = TEMPLATES["gemm" if kind == "gemm" else "conv2d"][name]
        q = dev.queue
        dins = [cla.to_device(q, x) for x in inputs]
        dout = cla.empty(q, ref.shape, np.float32)
        rows, t_start = [], time.perf_counter()
        vary = {k: json.loads(v) for k, _, v in (x.partition("=") for x in args.vary)}
        todo = (
            expand(args.config, vary)
            if args.config
            else candidates(template, shape_args, extents, args.limit, args.seed)
        )
        for knobs in todo:
            t0 = time.perf_counter()
            cfg = Config(knobs)
            try:
                s, targs = template(cfg, *shape_args)
                if not cfg.valid:
                    continue
                mod = ts.build(s, targs, target="opencl")
            except ts.TensorschedError as exc:
                print(f"{knobs}: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            build_s = time.perf_counter() - t0
            dout.fill(np.float32(np.nan))
            mod(*dins, dout)
            err = relative_error(dout.get(), ref)
            t = mod.time_evaluator(repeat=args.repeat)(*dins, dout)
            tf = flop / t.device_median / 1e12
            ok = err <= TOL["float32"]
            if ok:
                rows.append((tf, knobs or "default", mod))
            print(
                f"{spec} {tf:6.2f} TFLOP/s {t.device_median * 1e3:8.3f} ms err {err:.1e} "
                f"{'ok' if ok else 'WRONG'} build {build_s:.2f} s {knobs or 'default'}",
                flush=True,
            )
        rows.sort(key=lambda r: -r[0])
        print(f"# {spec}: {len(rows)} configs in {time.perf_counter() - t_start:.0f} s")
        for tf, knobs, _ in rows[:5]:
            print(f"best {spec}: {tf:.2f} TFLOP/s {knobs}")
        if rows:
            print(f"# build log of the best ({spec}):")
            print(build_log(dev, rows[0][2].get_source()))
            if args.source:
                print(rows[0][2].get_source())


if __name__ == "__main__":
    main()
