"""clpeak-style measurements: arithmetic peak per vector width, and global memory bandwidth.

Each work-item runs 8 independent chains of ``x = mad(x, a, b)`` (a = 0.999, b = 0.001 passed
as kernel arguments, so the compiler cannot fold the loop) and writes the chains' sum; the
host recomputes one work-item's value and checks it, so a kernel that was optimised away or
computed something else is reported instead of timed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .device import Device, current_device
from .module import DEFAULT_OPTIONS, build_program

# pyopencl is imported inside the functions that use it, so that ``import tensorsched`` works
# without an OpenCL driver (and skips pyopencl's ~0.17 s import) until a kernel runs.

CHAINS = 8
ITERS = 256
WIDTHS = (1, 2, 4, 8, 16)
COPY_SOURCE = (
    "__kernel void copy(__global const float4* a, __global float4* b)"
    " { b[get_global_id(0)] = a[get_global_id(0)]; }\n"
)


def _peak_source(width: int) -> str:
    t = "float" if width == 1 else f"float{width}"
    decl = "\n".join(f"  {t} x{c} = ({t})(seed + {c}.0f);" for c in range(CHAINS))
    body = "\n".join(f"    x{c} = mad(x{c}, a, b);" for c in range(CHAINS))
    total = " + ".join(f"x{c}" for c in range(CHAINS))
    fold = "s" if width == 1 else " + ".join(f"s.s{'0123456789abcdef'[k]}" for k in range(width))
    return f"""__kernel void peak(__global float* out, float a, float b) {{
  float seed = (float)(get_global_id(0) % 7);
{decl}
  for (int i = 0; i < {ITERS}; ++i) {{
{body}
  }}
  {t} s = {total};
  out[get_global_id(0)] = {fold};
}}
"""


def _expected(gid: int, width: int, a: np.float32, b: np.float32) -> float:
    seed = np.float32(gid % 7)
    x = np.array([seed + c for c in range(CHAINS)], dtype=np.float32)
    for _ in range(ITERS):
        x = x * np.float32(a) + np.float32(b)
    return float(x.sum()) * width


@dataclass
class PeakResult:
    what: str
    value: float  # GFLOP/s or GB/s
    unit: str
    checked: bool


def _time_kernel(
    dev: Device,
    knl: Any,
    gsize: tuple[int, ...],
    lsize: tuple[int, ...] | None,
    args: tuple[Any, ...],
    repeat: int,
) -> float:
    times = []
    for _ in range(repeat + 1):
        ev = knl(dev.queue, gsize, lsize, *args)
        ev.wait()
        times.append((ev.profile.end - ev.profile.start) * 1e-9)
    return float(np.median(times[1:]))


def measure_compute(
    dev: Device | None = None, repeat: int = 5, work_items: int | None = None
) -> list[PeakResult]:
    """Arithmetic peak per vector width (``WIDTHS``), each result checked on the host.
    Programs are built as the modules' are (``build_program``): a successful build's compiler
    log is not shown (``PYOPENCL_COMPILER_OUTPUT=1`` shows it)."""
    import pyopencl as cl

    dev = dev or current_device()
    n = work_items or dev.cl_device.max_compute_units * 2048
    out = np.empty(n, dtype=np.float32)
    buf = cl.Buffer(dev.context, cl.mem_flags.WRITE_ONLY, out.nbytes)
    results = []
    a, b = np.float32(0.999), np.float32(0.001)
    for w in WIDTHS:
        prg = build_program(dev, _peak_source(w), DEFAULT_OPTIONS, cache=False)
        t = _time_kernel(dev, prg.peak, (n,), None, (buf, a, b), repeat)
        cl.enqueue_copy(dev.queue, out, buf)
        ok = all(
            abs(out[g] - _expected(g, w, a, b)) <= 1e-3 * abs(_expected(g, w, a, b)) + 1e-3
            for g in (0, 1, n - 1)
        )
        flop = 2.0 * n * ITERS * CHAINS * w
        results.append(PeakResult(f"float{w if w > 1 else ''}", flop / t / 1e9, "GFLOP/s", ok))
    return results


def measure_bandwidth(
    dev: Device | None = None, repeat: int = 5, megabytes: int = 64
) -> PeakResult:
    """Global memory bandwidth of a float4 copy of ``megabytes`` MiB, checked."""
    import pyopencl as cl

    dev = dev or current_device()
    n = megabytes * (1 << 20) // 16
    src = np.random.default_rng(0).random(4 * n, dtype=np.float32)
    mf = cl.mem_flags
    a = cl.Buffer(dev.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=src)
    b = cl.Buffer(dev.context, mf.WRITE_ONLY, src.nbytes)
    prg = build_program(dev, COPY_SOURCE, DEFAULT_OPTIONS, cache=False)
    t = _time_kernel(dev, prg.copy, (n,), None, (a, b), repeat)
    out = np.empty_like(src)
    cl.enqueue_copy(dev.queue, out, b)
    return PeakResult(
        "global memory copy", 2 * src.nbytes / t / 1e9, "GB/s", bool(np.array_equal(out, src))
    )
