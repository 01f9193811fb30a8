"""tensorsched on a GPU against CLBlast (its defaults and tuned), cuBLAS / cuDNN (through torch)
and the tuned ACL-style baseline: every contender on every workload, side by side in one run,
each result checked against float64 numpy; TFLOP/s, ratios and goals in a table printed last.

On the GPU host (``.whl`` carried; gpu_env.sh installs the wheels and registers the driver):

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/bench.py \\
        --out benchmarks/gpu/results/bench_h200.txt

With the logs in ``benchmarks/gpu/logs/`` nothing is tuned (about 20 s for every workload on
the H200). Tuning is opt-in, with ``--trials N``: where a log has no usable trial on this
device, N random configs are tuned (the log is append-only and resumable); ``--retune`` (or
``--resume``) tunes N more configs where a log has some already. The ACL-style tuner measures
its whole search lists (92 configs) on each shape it has not measured (``--acl-configs N``:
the first N of each list; 12 configs on each of the four GEMM shapes took a minute on the
H200, most of it at 8192^3), so tune a workload or two per device command. Examples:

    python benchmarks/gpu/bench.py --workloads gemm8192 --trials 60         # tune, then measure
    python benchmarks/gpu/bench.py --workloads gemm4096,conv_vgg --quick    # a short run
    python benchmarks/gpu/bench.py --workloads gemm:64,48,40,conv:1,4,8,8,16,3,3,1,1 \\
        --trials 3 --acl-configs 1 --log-dir /tmp/logs --quick              # tiny, any device

On a device machine that returns only a few files written under ``$OUT``, bring the logs back
as one file after tuning: ``tar -czf $OUT/logs.tgz benchmarks/gpu/logs``.

Workloads (``--workloads``, comma-separated): ``gemm1024``, ``gemm4096``, ``gemm8192``,
``gemm3136x256x2304`` (GEMM M x N x K in float32, row-major C = A @ B), ``conv_vgg`` (NCHW
1x256x56x56, 256 3x3 filters, stride 1, pad 1), and custom ``gemm:M,N,K`` and
``conv:N,CI,H,W,CO,KH,KW,stride,pad``.

Contenders, on the workloads they apply to:

- tensorsched: the best config in ``<log-dir>/<workload>.jsonl`` of this device for
  ``--gemm-template`` / ``--conv-template``, rebuilt, checked again and timed;
- ACL-style: the ACL-style GEMM tuned by its own tuner (results in ``<log-dir>/acl/``); for the
  convolution the GEMM method (im2col + the best ACL-style GEMM of its GEMM shape + col2im,
  the weights' reshape left out as ACL does once at configure time);
- CLBlast: ``libclblast.so.1`` called with ctypes (``benchmarks/gpu/clblast_lib.py``), with its
  defaults and with ``TUNED_XGEMM`` (``CLBlastOverrideParameters``, on NVIDIA GPUs or with
  ``--clblast-tuned``); GEMM only;
- cuBLAS (``torch.matmul``) and cuDNN (``torch.nn.functional.conv2d``, its autotuner on), TF32
  off; skipped with a note where torch or CUDA is missing;
- ts via CUDA: on NVIDIA's OpenCL, tensorsched's kernels above (their PTX, which NVIDIA's
  OpenCL returns as the binary) launched through the CUDA driver and timed as cuBLAS is (a CUDA
  graph's replay); its ratio to cuBLAS compares the kernels alone, where ``ts/cuBLAS`` includes
  NVIDIA's OpenCL cost of a kernel (about 5 us by its profiling events, 1 us through CUDA;
  ``floor_probe.py``), most of a small GEMM's gap. ``--skip cuda-launch`` leaves it out.

Checks: the output is poisoned with NaN, one run fills it, and max |out - ref| / max |ref|
against a float64 numpy reference must be at most 1e-5 (torch allocates its convolution's
output itself). Times are medians of ``--repeat`` measurements after warm-up: tensorsched and
ACL-style by their kernels' profiling events (``time_evaluator``; ``AclGemm.time``, its median
rather than ACL's mean), CLBlast
by the wall clock of back-to-back calls and one ``finish`` (the event it returns covers its
last kernel only), torch by CUDA events around back-to-back calls or around the replay of
a CUDA graph of 20 calls, whichever is faster (the graph drops the host's launch cost, which
is most of a small GEMM's time through torch; since 2026-11-26).
"""

from __future__ import annotations

import argparse
import datetime
import glob
import io
import json
import math
import os
import re
import shlex
import sys
import time
import warnings
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

import tensorsched as ts
from tensorsched.baselines.acl_gemm import AclConv2d, AclGemm, conv2d_gemm_shape
from tensorsched.baselines.acl_tuner import (
    BENCHMARK_FILE,
    analyse,
    best_acl,
    read_records,
    resolve_config_lists,
    tune_acl,
)
from tensorsched.ops.conv2d import ConvShape, conv2d_ref
from tensorsched.runtime.device import DeviceLimits, current_device, set_device
from tensorsched.runtime.numerics import TOL, random_array, relative_error
from tensorsched.runtime.table import format_table
from tensorsched.tune.dispatch import predicted_config
from tensorsched.tune.log import ranked_configs, read_log
from tensorsched.tune.model import past_records, predict_config
from tensorsched.tune.task import Task
from tensorsched.tune.tuner import tune

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # clblast_lib: CLBlast through ctypes, loaded on the GPU host only
from clblast_lib import ClBlast, ClBlastError, ClBlastGemm  # noqa: E402
from cuda_kernels import CudaKernels, cuda_graph_seconds  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
RTOL = TOL["float32"]

# CLBlast's Xgemm parameters from a 4-minute CLBlast tuning (its tuner) on the H200
TUNED_XGEMM = {
    "GEMMK": 0,
    "KREG": 1,
    "KWG": 32,
    "KWI": 2,
    "MDIMA": 32,
    "MDIMC": 16,
    "MWG": 128,
    "NDIMB": 16,
    "NDIMC": 8,
    "NWG": 128,
    "SA": 1,
    "SB": 1,
    "STRM": 0,
    "STRN": 1,
    "VWM": 4,
    "VWN": 2,
}

TS, ACL, CLB, CLBT, VENDOR = "tensorsched", "ACL-style", "CLBlast", "CLBlast tuned", "cuBLAS/cuDNN"
TSC = "ts via CUDA"  # tensorsched's kernels (their PTX) launched through CUDA, NVIDIA only
CONTENDERS = (TS, ACL, CLB, CLBT, VENDOR, TSC)
SKIPPABLE = {
    "tensorsched": (TS, TSC),
    "acl": (ACL,),
    "clblast": (CLB, CLBT),
    "torch": (VENDOR, TSC),
    "cuda-launch": (TSC,),
}


# ---- workloads


@dataclass(frozen=True)
class Workload:
    name: str  # also the name of its tuning log
    kind: str  # "gemm" or "conv2d"
    shape: tuple  # (M, N, K), or the ConvShape fields

    @property
    def flop(self):
        if self.kind == "gemm":
            M, N, K = self.shape
            return 2 * M * N * K
        return ConvShape(*self.shape).flop

    @property
    def acl_shape(self):
        """The ACL-style GEMMParam (M, N, K, B): the GEMM itself, or the conv's GEMM method."""
        return (
            tuple(self.shape) + (1,)
            if self.kind == "gemm"
            else tuple(conv2d_gemm_shape(*self.shape))
        )

    @property
    def label(self):
        if self.kind == "gemm":
            M, N, K = self.shape
            return f"GEMM {M}^3" if M == N == K else f"GEMM {M}x{N}x{K}"
        n, ci, h, w, co, kh, kw, s, p = self.shape
        return (
            f"conv {h}x{w}x{ci}->{co} {kh}x{kw}"
            + (f" s{s}" if s != 1 else "")
            + (f" p{p}" if p != 1 else "")
            + (f" n{n}" if n != 1 else "")
        )

    def task(self, template):
        return Task(self.kind, template, tuple(self.shape))

    def inputs(self, seed=0):
        """Random float32 inputs, magnitudes in [0.25, 1] with random signs (as the tuner's)."""
        rng = np.random.default_rng(seed)
        if self.kind == "gemm":
            M, N, K = self.shape
            shapes = [(M, K), (K, N)]
        else:
            n, ci, h, w, co, kh, kw, _, _ = self.shape
            shapes = [(n, ci, h, w), (co, ci, kh, kw)]
        return [random_array(s, np.float32, rng) for s in shapes]

    def reference(self, inputs):
        x = [v.astype(np.float64) for v in inputs]
        if self.kind == "gemm":
            return x[0] @ x[1]
        sh = ConvShape(*self.shape)
        return conv2d_ref(x[0], x[1], sh.stride, sh.pad)

    @property
    def out_shape(self):
        if self.kind == "gemm":
            return self.shape[0], self.shape[1]
        sh = ConvShape(*self.shape)
        return sh.N, sh.CO, sh.OH, sh.OW


STANDARD = {
    w.name: w
    for w in [
        Workload("gemm1024", "gemm", (1024, 1024, 1024)),
        Workload("gemm4096", "gemm", (4096, 4096, 4096)),
        Workload("gemm8192", "gemm", (8192, 8192, 8192)),
        Workload("gemm3136x256x2304", "gemm", (3136, 256, 2304)),
        Workload("conv_vgg", "conv2d", (1, 256, 56, 56, 256, 3, 3, 1, 1)),
    ]
}

# (workload, numerator, denominator, at least): the goals, checked where both were measured
GOALS = [
    ("gemm4096", TS, CLBT, 1.1),
    ("gemm8192", TS, CLBT, 1.1),
    ("gemm4096", TS, VENDOR, 0.9),
    ("gemm3136x256x2304", TS, CLB, 2.0),
    ("conv_vgg", TS, VENDOR, 0.8),
    ("conv_vgg", TS, ACL, 2.0),
]


def parse_workloads(text):
    """Workloads from ``gemm4096,conv_vgg,gemm:64,48,40``: the numbers after a ``kind:`` may
    be separated by commas (or by ``x``)."""
    tokens = []
    for tok in (t.strip() for t in text.split(",")):
        if tok.isdigit() and tokens and ":" in tokens[-1]:
            tokens[-1] += "," + tok
        elif tok:
            tokens.append(tok)
    out = []
    for tok in tokens:
        if tok in STANDARD:
            out.append(STANDARD[tok])
            continue
        kind, sep, dims = tok.partition(":")
        want = {"gemm": 3, "conv": 9}.get(kind)
        try:
            vals = tuple(int(v) for v in re.split(r"[,x]", dims))
        except ValueError:
            vals = ()
        if not sep or want is None or len(vals) != want:
            raise SystemExit(
                f"bench.py: unknown workload '{tok}'; use {', '.join(STANDARD)}, "
                "gemm:M,N,K or conv:N,CI,H,W,CO,KH,KW,stride,pad"
            )
        out.append(
            Workload(
                f"{kind}_{'x'.join(map(str, vals))}", "gemm" if kind == "gemm" else "conv2d", vals
            )
        )
    return list(dict.fromkeys(out))


# ---- checking and timing helpers


@dataclass
class Result:
    seconds: float | None = None  # median seconds per call
    error: float | None = None  # relative max error of the checked run (NaN: unwritten)
    note: str = ""  # the config measured, or why there is no figure
    failed: bool = False  # an exception stopped the measurement (see the note)
    built: tuple | None = None  # tensorsched's (module, inputs it ran on), for TSC

    @property
    def checked(self):
        return self.error is not None and self.error <= RTOL

    @property
    def measured(self):
        return self.checked and self.seconds is not None


def attempt(measure, *args):
    """``measure(*args)``, or a failed ``Result`` naming the exception: one contender's failure
    must not cost the other figures of a (scarce) device run."""
    try:
        return measure(*args)
    except Exception as exc:  # noqa: BLE001
        text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        return Result(note=f"FAILED: {type(exc).__name__}: {text}", failed=True)


def calls_per_measurement(seconds, min_seconds):
    return max(1, min(100, math.ceil(min_seconds / max(seconds, 1e-9))))


def fmt_config(config):
    return " ".join(
        f"{k}={'x'.join(map(str, v)) if isinstance(v, (tuple, list)) else v}"
        for k, v in sorted(config.items())
    )


def tflops(flop, seconds):
    """TFLOP/s as text: two decimals, or two significant digits below 0.1 (tiny workloads)."""
    x = flop / seconds / 1e12
    return f"{x:.2f}" if x >= 0.1 else f"{x:.2g}"


def show_path(path):
    """``path`` relative to the working directory when it lies below it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def say(line=""):
    print(line, flush=True)


# ---- tensorsched


def device_label():
    return DeviceLimits.of().name  # how the tuner names the device in its logs


def logged_trials(task, log_path):
    """The correct configs of ``task`` on this device in ``log_path``, fastest first, each
    at the median of its measurements."""
    return ranked_configs(read_log(log_path), task.key(), device_label())


def best_buildable(task, log_path):
    """``(record, schedule, args, stale)``: the fastest logged config that the template still
    accepts (a template whose knobs changed since the log was written rejects older configs;
    ``stale`` counts those skipped), or ``(None, None, None, stale)``."""
    stale = 0
    for rec in logged_trials(task, log_path):
        try:
            s, args, cfg = task.instantiate(rec.config)
        except ts.TensorschedError:
            stale += 1
            continue
        if cfg.valid:
            return rec, s, args, stale
        stale += 1
    return None, None, None, stale


def tune_tensorsched(task, log_path, opts):
    """Tune ``opts.trials`` configs of ``task`` (at most ``opts.time`` long; appended to
    ``log_path``) with ``opts.strategy``, the model pre-trained on the other logs of
    ``opts.transfer``, and print the tuning throughput."""
    others = [t for t in opts.transfer if os.path.abspath(t) != os.path.abspath(log_path)]
    res = tune(
        task,
        log_path,
        strategy=opts.strategy,
        transfer=others if opts.strategy == "model" else (),
        time_s=opts.time,
        trials=opts.trials,
        resume=True,
        timeout=opts.timeout,
        repeat=opts.tune_repeat,
        n_build=opts.build_workers,
        progress=sys.stderr.isatty(),
        restrict=opts.restrict.get(os.path.splitext(os.path.basename(log_path))[0]),
    )
    counts = ", ".join(f"{k} {v}" for k, v in sorted(res.counts.items()))
    rate = res.measured / res.seconds * 60 if res.seconds else 0.0
    best = (
        f"best {tflops(task.flop, res.best.device_ms * 1e-3)} TFLOP/s"
        if res.best
        else "no correct config yet"
    )
    say(
        f"  tuned {task}: {res.measured} configs measured in {res.seconds:.0f} s = "
        f"{rate:.1f} configs/min ({counts}); {best}; log {show_path(log_path)}"
    )


def measure_tensorsched(wl, template, log_path, inputs, ref, opts):
    import pyopencl.array as cla

    task = wl.task(template)
    rec, s, args, stale = best_buildable(task, log_path)
    stale_note = f" ({stale} faster logged configs no longer fit the template)" if stale else ""
    label = template
    if rec is None and opts.predict:  # no tuning: the config the other logs predict
        device = DeviceLimits.of().name
        others = [t for t in opts.transfer if os.path.abspath(t) != os.path.abspath(log_path)]
        config = predict_config(task, past_records(task, device, None, others), DeviceLimits.of())
        if config is None:  # no log of this device: instantiate's choice (a sibling's logs)
            config = predicted_config(task)
        if config is not None:
            s, args, _ = task.instantiate(config)
            rec, label = SimpleNamespace(config=config), f"{template} predicted, untuned"
    if rec is None:
        return Result(
            note=f"no correct trial of {template} on this device in "
            f"{show_path(log_path)}{stale_note}: tune with --trials N"
        )
    if getattr(task.function, "b_transposed", False):  # e.g. vec_dot: B given as N x K
        inputs = [inputs[0], np.ascontiguousarray(inputs[1].T)]
    mod = ts.build(s, args, target="opencl", name=f"{wl.kind}_{template}")
    out = np.full(wl.out_shape, np.nan, np.float32)
    mod(*inputs, out)
    res = Result(
        error=relative_error(out, ref),
        note=f"{label} {fmt_config(rec.config)}{stale_note}",
        built=(mod, inputs),
    )
    if res.checked:  # time on device arrays: no transfers in the loop
        q = current_device().queue
        arrays = [cla.to_device(q, x) for x in inputs] + [cla.empty(q, out.shape, np.float32)]
        t = mod.time_evaluator(number=1, repeat=opts.repeat, warmup=opts.warmup)(*arrays)
        res.seconds = t.device_median
    return res


# ---- the ACL-style baseline


def acl_tuning(workloads, acl_dir, opts):
    """The ACL-style tuner's results on this device (``AclTuneResults``, from every record of
    ``<acl_dir>/acl_benchmark.jsonl`` measured on it) or None. With ``--trials``, the tuner
    first runs on the workloads' shapes that it has not measured yet (with ``--retune``: on all
    of them, measuring only the configs not in its records), and the summary it saves is
    rewritten from all the records."""
    dev = current_device()
    path = os.path.join(acl_dir, BENCHMARK_FILE)

    def records():
        return [
            r
            for r in (read_records(path) if os.path.exists(path) else [])
            if r.get("device") == dev.name
        ]

    before = records()
    covered = {(r["M"], r["N"], r["K"], r["B"]) for r in before if r["status"] == "ok"}
    wanted = sorted({wl.acl_shape for wl in workloads})
    todo = wanted if opts.retune else [s for s in wanted if s not in covered]
    if opts.trials and todo:
        lists = resolve_config_lists()
        if opts.acl_configs:
            lists = {s: cs[: opts.acl_configs] for s, cs in lists.items()}
        t0 = time.time()
        tune_acl(
            todo,
            config_lists=lists,
            out_dir=acl_dir,
            device=dev,
            repeat=opts.tune_repeat,
            resume=True,
        )
        seconds = time.time() - t0
        after = records()
        new = len(after) - len(before)
        results = analyse(after)
        results.save(acl_dir)
        say(
            f"  tuned ACL-style on {len(todo)} GEMM shape(s): {new} configs measured in "
            f"{seconds:.0f} s = {new / seconds * 60 if seconds else 0:.1f} configs/min; "
            f"results {show_path(acl_dir)}"
        )
        return results
    for s in wanted:
        if s not in covered:
            say(
                f"  ACL-style: GEMM {'x'.join(map(str, s[:3]))} not tuned on this device in "
                f"{show_path(acl_dir)}; tune with --trials N"
            )
    return analyse(before) if before else None


def measure_acl(wl, results, inputs, ref, opts):
    if results is None:
        return Result(note="no ACL-style tuning results on this device: tune with --trials N")
    M, N, K, B = wl.acl_shape
    choice = best_acl(M, N, K, results, batch=B, device=current_device())
    note = f"{choice.strategy} {choice.config.label}"
    if not choice.exact:
        note += f" (tuned at {'x'.join(map(str, choice.tuned_shape[:3]))})"
    if wl.kind == "gemm":
        base = AclGemm(choice.strategy, choice.config, M, N, K)
        timed = {}
    else:
        base = AclConv2d(choice.strategy, choice.config, ConvShape(*wl.shape))
        timed = {"include_rhs_reshape": False}
        note = "im2col + " + note + " + col2im"
    out = np.full(wl.out_shape, np.nan, np.float32)
    base(*inputs, out)
    res = Result(error=relative_error(out, ref), note=note)
    if res.checked:
        t = base.time(*inputs, np.empty_like(out), repeat=opts.repeat, warmup=opts.warmup, **timed)
        res.seconds = t.device_median
    return res


# ---- CLBlast


def load_clblast(opts):
    """``(ClBlast or None, note)``."""
    try:
        lib = ClBlast.load(opts.clblast, debs_dir=opts.debs)
    except (ClBlastError, OSError) as exc:
        return None, f"CLBlast skipped: {exc}"
    return lib, f"CLBlast: {lib.path} (libOpenCL.so.1: {lib.opencl})"


def clblast_tuned_applies(opts):
    dev = current_device()
    return opts.clblast_tuned or (dev.is_gpu and "nvidia" in dev.cl_device.vendor.lower())


def measure_clblast(lib, wl, inputs, ref, opts, note):
    M, N, K = wl.shape
    gemm = ClBlastGemm(lib, M, N, K)
    out = np.full(wl.out_shape, np.nan, np.float32)
    gemm(*inputs, out)
    res = Result(error=relative_error(out, ref), note=note)
    if res.checked:
        res.seconds = float(np.median(gemm.time(opts.repeat, opts.warmup, opts.min_seconds)))
    return res


# ---- cuBLAS / cuDNN through torch


def load_torch():
    """``(torch or None, note)``; TF32 off, cuDNN's autotuner on."""
    try:
        import torch
    except ImportError as exc:
        return None, f"cuBLAS/cuDNN skipped: torch cannot be imported ({exc})"
    if not torch.cuda.is_available():
        return None, f"cuBLAS/cuDNN skipped: torch {torch.__version__} sees no CUDA device"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    return torch, (
        f"torch {torch.__version__} (CUDA {torch.version.cuda}, cuDNN "
        f"{torch.backends.cudnn.version()}) on {torch.cuda.get_device_name()}"
    )


def cuda_time(torch, call, opts):
    """Median seconds per call: CUDA events around back-to-back calls (enough for
    ``opts.min_seconds``), after warm-up."""
    for _ in range(opts.warmup):
        call()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    call()
    end.record()
    end.synchronize()
    number = calls_per_measurement(start.elapsed_time(end) * 1e-3, opts.min_seconds)
    times = []
    for _ in range(opts.repeat):
        start.record()
        for _ in range(number):
            call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3 / number)
    return float(np.median(times))


def cuda_graph_time(torch, call, opts, n=20):
    """Median seconds per call of ``n`` calls captured in a CUDA graph and replayed (CUDA
    events around each replay): the device's time without the host's launch cost between
    calls, which on small GEMMs is torch's (10-20 us a call, more than the kernel) and moves
    with the host."""
    return cuda_graph_seconds(torch, call, opts.repeat, n)


def cuda_call_times(torch, call, n):
    """Seconds of each of ``n`` calls timed alone by CUDA events (synchronized after each),
    after three unmeasured calls."""
    for _ in range(3):
        call()
    times = []
    for _ in range(n):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return times


def measure_torch(torch, wl, inputs, ref, opts):
    x = [torch.from_numpy(v).cuda() for v in inputs]
    if wl.kind == "gemm":
        out = torch.full(wl.out_shape, float("nan"), device="cuda")

        def call():
            return torch.matmul(x[0], x[1], out=out)

        name = "cuBLAS"
    else:
        sh = ConvShape(*wl.shape)

        def call():
            return torch.nn.functional.conv2d(x[0], x[1], stride=sh.stride, padding=sh.pad)

        name = "cuDNN"
    y = call()
    torch.cuda.synchronize()
    res = Result(error=relative_error(y.cpu().numpy(), ref), note=name)
    if res.checked:
        # the faster of back-to-back calls and a CUDA graph's replay (see cuda_graph_time)
        back = cuda_time(torch, call, opts)
        try:
            graph = cuda_graph_time(torch, call, opts)
        except RuntimeError as exc:  # capture refused: the back-to-back time alone
            graph, res.note = None, f"{name} (no CUDA graph: {exc})"
        res.seconds = back if graph is None else min(back, graph)
        if graph is not None:
            res.note = f"{name} (back to back {back * 1e6:.1f} us, CUDA graph {graph * 1e6:.1f} us)"
    return res


def measure_ts_cuda(torch, wl, ts_result, ref, opts):
    """tensorsched's checked kernels (the module ``measure_tensorsched`` built) launched
    through CUDA from their PTX on NVIDIA's OpenCL, checked again into a NaN-poisoned output
    and timed as cuBLAS is, by a CUDA graph's replay: the kernels alone, without NVIDIA's
    OpenCL launch and profiling cost (about 5 us a kernel by its events; floor_probe.py)."""
    if ts_result is None or not ts_result.checked or ts_result.built is None:
        return Result(note="no checked tensorsched kernel to launch")
    if "NVIDIA" not in current_device().platform_name:
        return Result(note="not NVIDIA's OpenCL (its binaries are not PTX)")
    mod, inputs = ts_result.built
    try:
        kern = CudaKernels(mod, torch)
    except ValueError as exc:  # a scalar or an image argument: this launcher passes neither
        return Result(note=f"not launched through CUDA: {exc}")
    out = torch.full(wl.out_shape, float("nan"), device="cuda")
    tensors = [torch.from_numpy(np.ascontiguousarray(x)).cuda() for x in inputs] + [out]
    bufs = kern.buffers({b.name: t for b, t in zip(mod.func.args, tensors)})
    kern(bufs)
    torch.cuda.synchronize()
    res = Result(error=relative_error(out.cpu().numpy(), ref), note="PTX through CUDA, graph")
    if res.checked:
        res.seconds = cuda_graph_time(torch, lambda: kern(bufs), opts)
    return res


# ---- the run


def print_result(name, res, flop):
    err = (
        "-"
        if res.error is None
        else ("NaN (unwritten)" if math.isinf(res.error) else f"{res.error:.1e}")
    )
    if res.seconds is not None:
        say(
            f"  {name:<14} {tflops(flop, res.seconds):>7} TFLOP/s {res.seconds * 1e3:9.3f} ms"
            f"  err {err:<8} {res.note}"
        )
    elif res.error is not None and not res.checked:
        say(f"  {name:<14} WRONG RESULT (relative error {err} > {RTOL:g})  {res.note}")
    else:
        say(f"  {name:<14} -  {res.note}")


def ratio(results, num, den):
    a, b = results.get(num), results.get(den)
    if a is None or b is None or not (a.measured and b.measured):
        return None
    return b.seconds / a.seconds  # = TFLOP/s of num / TFLOP/s of den


def print_table(workloads, results):
    cols = [c for c in CONTENDERS if any(c in results[w.name] for w in workloads)]
    ratios = [c for c in cols if c not in (TS, TSC)]
    pairs = [(TS, c) for c in ratios] + ([(TSC, VENDOR)] if {TSC, VENDOR} <= set(cols) else [])
    head = ["workload"] + [f"{c} TF/s" for c in cols]
    head += [f"ts/{d}" if n == TS else "via CUDA/cuBLAS" for n, d in pairs]
    rows = []
    for w in workloads:
        r = results[w.name]
        row = [w.label]
        for c in cols:
            res = r.get(c)
            row.append(
                "n/a"
                if res is None
                else tflops(w.flop, res.seconds)
                if res.measured
                else ("WRONG" if res.error is not None else "-")
            )
        for n, d in pairs:
            x = ratio(r, n, d)
            row.append(f"{x:.2f}x" if x is not None else "-")
        rows.append(row)
    say(format_table(head, rows, "<" + ">" * (len(head) - 1)))


def print_goals(workloads, results):
    names = {w.name: w for w in workloads}
    lines = []
    for wname, num, den, goal in GOALS:
        if wname not in names:
            continue
        x = ratio(results[wname], num, den)
        den_label = (
            "CLBlast (defaults)"
            if den == CLB
            else ("GEMM method" if den == ACL and names[wname].kind == "conv2d" else den)
        )
        if den == VENDOR:
            den_label = "cuBLAS" if names[wname].kind == "gemm" else "cuDNN"
        status = "not measured" if x is None else ("met" if x >= goal else "not met")
        value = f"{x:.2f}" if x is not None else "-"
        lines.append(
            f"  {names[wname].label}: {num} / {den_label} >= {goal:g}: {value} -> {status}"
        )
    if lines:
        say("\ngoals:")
        for line in lines:
            say(line)


def print_header(dev, opts, torch_note, clblast_note):
    say(
        f"# tensorsched GPU benchmark, "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}"
    )
    say(f"# command: {opts.command}")
    say(
        f"# OpenCL device: {dev.name} ({dev.platform_name}, driver "
        f"{dev.cl_device.driver_version}, {dev.cl_device.version.strip()})"
    )
    say(f"# {torch_note}")
    say(f"# {clblast_note}")
    say(
        f"# logs: {show_path(opts.log_dir)}; times: median of {opts.repeat} after "
        f"{opts.warmup} warm-up; check: max|out-ref|/max|ref| <= {RTOL:g} vs float64 numpy"
    )


def tune_where_needed(task, log, opts):
    """Tune ``task`` when its log has no usable trial on this device, or with ``--retune``."""
    if best_buildable(task, log)[0] is not None and not opts.retune:
        say(f"  {task}: {show_path(log)} has trials on this device; --retune tunes more")
        return
    failed = attempt(tune_tensorsched, task, log, opts)
    if failed is not None:
        say(f"  tuning {task} {failed.note}")


def run(opts, workloads):
    """Tune (if asked), measure every contender on every workload, print the table; returns
    the number of wrong results and failed measurements."""
    dev = current_device()
    skip = {c for name in opts.skip for c in SKIPPABLE[name]}
    torch, torch_note = load_torch() if VENDOR not in skip else (None, "cuBLAS/cuDNN skipped")
    lib, clblast_note = load_clblast(opts) if CLB not in skip else (None, "CLBlast skipped")
    print_header(dev, opts, torch_note, clblast_note)
    os.makedirs(opts.log_dir, exist_ok=True)
    log_of = {w.name: os.path.join(opts.log_dir, f"{w.name}.jsonl") for w in workloads}
    template_of = {"gemm": opts.gemm_template, "conv2d": opts.conv_template}
    if opts.trials:
        say("\ntuning")
    if TS not in skip and opts.trials:
        for w in workloads:
            tune_where_needed(w.task(template_of[w.kind]), log_of[w.name], opts)
    acl_results = None
    if ACL not in skip:
        acl_results = attempt(acl_tuning, workloads, os.path.join(opts.log_dir, "acl"), opts)
        if isinstance(acl_results, Result):
            say(f"  ACL-style tuning {acl_results.note}")
            acl_results = None

    results, data = {}, {}
    for w in workloads:
        t0 = time.time()
        inputs = w.inputs()
        ref = w.reference(inputs)
        data[w.name] = inputs, ref
        say(
            f"\n{w.label} ({w.flop / 1e9:.1f} GFLOP; inputs and float64 reference in "
            f"{time.time() - t0:.1f} s)"
        )
        todo = []
        if TS not in skip:
            todo.append(
                (TS, measure_tensorsched, w, template_of[w.kind], log_of[w.name], inputs, ref, opts)
            )
        if ACL not in skip:
            todo.append((ACL, measure_acl, w, acl_results, inputs, ref, opts))
        if lib is not None and w.kind == "gemm":
            todo.append((CLB, measure_clblast, lib, w, inputs, ref, opts, "defaults"))
        if torch is not None and VENDOR not in skip:
            todo.append((VENDOR, measure_torch, torch, w, inputs, ref, opts))
        r = results[w.name] = {}
        for name, measure, *args in todo:
            r[name] = attempt(measure, *args)
            print_result(name, r[name], w.flop)
        if torch is not None and TSC not in skip:
            r[TSC] = attempt(measure_ts_cuda, torch, w, r.get(TS), ref, opts)
            print_result(TSC, r[TSC], w.flop)

    gemms = [w for w in workloads if w.kind == "gemm"]
    if lib is not None and gemms:
        if clblast_tuned_applies(opts):
            say(
                "\nCLBlast tuned (CLBlastOverrideParameters Xgemm: "
                f"{' '.join(f'{k}={v}' for k, v in TUNED_XGEMM.items())}; shapes below "
                "CLBlast's XGEMM_MIN_INDIRECT_SIZE run XgemmDirect, which they leave as it is)"
            )
            try:
                lib.override_parameters(dev, "Xgemm", TUNED_XGEMM)
                for w in gemms:
                    say(w.label)
                    results[w.name][CLBT] = attempt(
                        measure_clblast, lib, w, *data[w.name], opts, "H200-tuned Xgemm parameters"
                    )
                    print_result(CLBT, results[w.name][CLBT], w.flop)
            except ClBlastError as exc:
                say(f"  CLBlast tuned skipped: {exc}")
        else:
            say(
                "\nCLBlast tuned skipped: its parameters were tuned on an NVIDIA H200; "
                "--clblast-tuned applies them on this device too"
            )

    wrong = sum(
        1
        for r in results.values()
        for res in r.values()
        if res.error is not None and not res.checked
    )
    failed = sum(1 for r in results.values() for res in r.values() if res.failed)
    say(
        f"\nTFLOP/s (median) and ratios tensorsched / other (> 1: tensorsched faster) on {dev.name}"
    )
    print_table(workloads, results)
    say(
        "(ACL-style on a conv: the GEMM method, im2col + the best ACL-style GEMM + col2im; "
        "cuBLAS/cuDNN: cuBLAS on a GEMM, cuDNN on a conv; -: not measured, see above)"
    )
    print_goals(workloads, results)
    if wrong:
        say(f"\n{wrong} result(s) failed the check against float64 numpy")
    if failed:
        say(f"\n{failed} measurement(s) failed (FAILED above)")
    return wrong + failed


class Tee(io.TextIOBase):
    """Writes to a stream and keeps a copy (for ``--out``)."""

    def __init__(self, stream):
        self.stream, self.copy = stream, io.StringIO()

    def write(self, text):
        self.copy.write(text)
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()


def parse_args(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--workloads",
        default=",".join(STANDARD),
        help=f"comma-separated: {', '.join(STANDARD)}, gemm:M,N,K, "
        "conv:N,CI,H,W,CO,KH,KW,stride,pad (default: all standard ones)",
    )
    p.add_argument("--gemm-template", default="gpu_tiled")
    p.add_argument("--conv-template", default="implicit_gemm")
    p.add_argument(
        "--trials",
        type=int,
        default=0,
        help="tune this many configs (--strategy) where a log has none on this device "
        "(default 0: no tuning); ACL-style: its search lists on untuned shapes",
    )
    p.add_argument(
        "--strategy",
        default="model",
        choices=("model", "random", "grid"),
        help="tuning: search strategy (default model)",
    )
    p.add_argument(
        "--predict",
        action="store_true",
        help="where a log has no trial, measure the config that the --transfer logs and the "
        "shipped logs predict for the shape (ts.tune.instantiate's choice), without tuning",
    )
    p.add_argument("--time", help="tuning: at most this long per workload (e.g. 2m)")
    p.add_argument(
        "--transfer",
        nargs="*",
        default=sorted(glob.glob(os.path.join(HERE, "logs", "*.jsonl"))),
        help="tuning logs of other shapes the model learns from first (default: the "
        "committed benchmarks/gpu/logs/*.jsonl)",
    )
    p.add_argument(
        "--space",
        help="JSON file {workload name: {knob: [values]}}: tune only "
        "those values (Config.restrict), e.g. benchmarks/gpu/spaces.json",
    )
    p.add_argument(
        "--retune",
        "--resume",
        dest="retune",
        action="store_true",
        help="with --trials: tune N more configs even where a log has some",
    )
    p.add_argument(
        "--log-dir",
        default=os.path.join(HERE, "logs"),
        help="tuning logs: <workload>.jsonl and acl/ (default benchmarks/gpu/logs)",
    )
    p.add_argument(
        "--acl-configs",
        type=int,
        default=0,
        help="ACL-style tuning: only the first N configs of each search list",
    )
    p.add_argument("--repeat", type=int, help="timed runs per contender (default 10, --quick 3)")
    p.add_argument("--quick", action="store_true", help="fewer repeats, for a short device run")
    p.add_argument("--timeout", type=float, default=60.0, help="tuning: seconds per candidate")
    p.add_argument(
        "--build-workers",
        type=int,
        help="tuning: build processes (default: one a core; give each of several bench.py "
        "on one host its share, or their pools' start takes the budget)",
    )
    p.add_argument("--clblast", help="libclblast.so.1, or a folder holding it")
    p.add_argument(
        "--debs",
        default=os.path.join(ROOT, ".whl"),
        help="folder of libclblast1_*.deb and ocl-icd-libopencl1_*.deb (default .whl)",
    )
    p.add_argument(
        "--clblast-tuned",
        action="store_true",
        help="apply the H200-tuned CLBlast parameters on a non-NVIDIA device too",
    )
    p.add_argument("--skip", default="", help=f"contenders to leave out: {', '.join(SKIPPABLE)}")
    p.add_argument("--device", help="OpenCL device, as TS_DEVICE (P:D or part of a name)")
    p.add_argument("--out", help="also write everything printed to this file")
    opts = p.parse_args(argv)
    opts.skip = [s for s in opts.skip.split(",") if s]
    for s in opts.skip:
        if s not in SKIPPABLE:
            p.error(f"--skip {s}: use some of {', '.join(SKIPPABLE)}")
    if opts.retune and not opts.trials:
        p.error("--retune needs --trials N (how many more configs to tune)")
    opts.restrict = {}
    if opts.space:
        try:
            with open(opts.space) as f:
                opts.restrict = json.load(f)
        except (OSError, ValueError) as exc:
            p.error(f"--space {opts.space}: {exc}")
    opts.repeat = opts.repeat or (3 if opts.quick else 10)
    opts.warmup = 1 if opts.quick else 2
    opts.tune_repeat = 3 if opts.quick else 5
    opts.min_seconds = 0.005 if opts.quick else 0.02
    return opts


def main(argv=None):
    words = sys.argv if argv is None else [os.path.relpath(__file__)] + list(argv)
    opts = parse_args(words[1:])
    opts.command = shlex.join(["python"] + words)
    workloads = parse_workloads(opts.workloads)
    if opts.device:
        set_device(opts.device)
    # pyopencl warns of every non-empty build log (NVIDIA's compiler always writes one); the
    # variable silences it here and in the tuner's worker processes, which inherit it
    os.environ.setdefault("PYTHONWARNINGS", "ignore:Non-empty compiler output")
    warnings.filterwarnings("ignore", message="Non-empty compiler output")
    tee = Tee(sys.stdout)
    sys.stdout = tee
    try:
        wrong = run(opts, workloads)
    finally:
        sys.stdout = tee.stream
        if opts.out:
            os.makedirs(os.path.dirname(os.path.abspath(opts.out)), exist_ok=True)
            with open(opts.out, "w") as f:
                f.write(tee.copy.getvalue())
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
