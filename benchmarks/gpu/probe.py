"""A first look at tensorsched on a GPU: a handful of hand-picked configs of the desktop-GPU
GEMM template at 1024^3 and 4096^3, each checked against numpy, timed by profiling events.

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/probe.py
"""
import sys

import numpy as np

import tensorsched as ts
from tensorsched.ops.templates import TEMPLATES
from tensorsched.tune.space import Config

CONFIGS = [
    dict(tile_y=(16, 4), tile_x=(16, 4), tile_k=(8,), unroll_k=1, vectorize=1),
    dict(tile_y=(16, 8), tile_x=(16, 8), tile_k=(8,), unroll_k=1, vectorize=1),
    dict(tile_y=(8, 8), tile_x=(16, 8), tile_k=(16,), unroll_k=1, vectorize=1),
    dict(tile_y=(16, 8), tile_x=(16, 4), tile_k=(16,), unroll_k=1, vectorize=1),
    dict(tile_y=(32, 4), tile_x=(8, 8), tile_k=(8,), unroll_k=1, vectorize=1),
    dict(tile_y=(16, 8), tile_x=(16, 8), tile_k=(8,), unroll_k=1, vectorize=0),
]


def main():
    rng = np.random.default_rng(0)
    for n in (1024, 4096):
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        ref = a.astype(np.float64) @ b
        for knobs in CONFIGS:
            s, args = TEMPLATES["gemm"]["gpu_tiled"](Config(knobs), n, n, n)
            try:
                mod = ts.build(s, args, target="opencl")
            except ts.TensorschedError as exc:
                print(f"{n} {knobs}: {type(exc).__name__}: {str(exc)[:300]}")
                continue
            c = np.full((n, n), np.nan, np.float32)
            mod(a, b, c)
            err = float(np.max(np.abs(c - ref)) / np.max(np.abs(ref)))
            t = mod.time_evaluator(repeat=5)(a, b, c)
            print(f"GEMM {n}^3 {knobs}: {2 * n ** 3 / t.device_median / 1e12:.2f} TFLOP/s "
                  f"(device {t.device_median * 1e3:.3f} ms, rel err {err:.1e})", flush=True)
    print(ts.build(*TEMPLATES["gemm"]["gpu_tiled"](Config(CONFIGS[1]), 4096, 4096, 4096),
                   target="opencl").get_source(), file=sys.stderr)


if __name__ == "__main__":
    main()
