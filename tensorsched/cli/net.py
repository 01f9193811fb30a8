"""``tensorsched net run|tune|bench|export MODEL``: whole networks from the command line.

MODEL is ``vgg16``, ``resnet18``, ``mobilenet_v1`` (built in, seeded random weights) or the
path of an ``.onnx`` file. ``run`` builds the network on the device (configs from ``--log``
where given, else predicted) and runs it on ``--input`` (a ``.npy``) or on a seeded random
image, printing the top classes, and with ``--check`` the largest relative error against
numpy; ``--profile`` prints the per-layer table. ``tune`` extracts the distinct conv /
depthwise / dense workloads and tunes each with the tuner's budget into one JSON-lines log.
``bench`` times end-to-end batch-1 inference (median of ``--repeat``), side by side with
onnxruntime on the CPU where it is installed.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import TensorschedError
from ..frontend.onnx import from_onnx, to_onnx
from ..graph.executor import Net, build
from ..graph.graph import Graph
from ..graph.passes import optimize
from ..graph.reference import run_reference
from ..graph.tasks import extract_tasks
from ..nets import NETS
from ..runtime.device import resolve_device
from ..runtime.table import print_table
from ..tune.distributed import Cluster
from ..tune.log import read_log
from ..tune.tuner import parse_duration, tune


def load_model(model: str, image_size: int | None = None) -> Graph:
    """A built-in network by name, or an ONNX file by path."""
    if model in NETS:
        return NETS[model](image_size=image_size or 224)
    if model.endswith(".onnx") or os.path.exists(model):
        if image_size:
            raise TensorschedError("--image-size applies to the built-in networks only")
        return from_onnx(model)
    raise TensorschedError(
        f"unknown model {model!r}: use one of {', '.join(NETS)} or the path of an .onnx file"
    )


def _image(g: Graph, path: str | None, seed: int = 0) -> np.ndarray:
    shape = g.tensors[g.inputs[0]].shape
    if path is None:
        return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    try:
        x = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise TensorschedError(f"--input {path}: not a readable .npy file ({exc})") from None
    if tuple(x.shape) != shape:
        raise TensorschedError(f"--input {path} has shape {x.shape}; the network takes {shape}")
    return np.ascontiguousarray(x, dtype=np.float32)


def latency_ms(fn: Callable[[], Any], repeat: int, warmup: int = 2) -> float:
    """Median wall-clock milliseconds of ``fn()`` over ``repeat`` runs after ``warmup``."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def onnxruntime_session(g: Graph) -> Any | None:
    """An onnxruntime CPU session of ``g`` (``None`` when onnxruntime is not installed)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    model = to_onnx(g).SerializeToString()
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def max_rel_error(out: np.ndarray, ref: np.ndarray) -> float:
    """``max |out - ref| / max |ref|``."""
    scale = float(np.max(np.abs(ref))) or 1.0
    return float(np.max(np.abs(np.asarray(out, np.float64) - ref))) / scale


def cmd_net(args: argparse.Namespace) -> None:
    _check_args(args)
    {"run": _run, "tune": _tune, "bench": _bench, "export": _export}[args.action](args)


def _run(args: argparse.Namespace) -> None:
    g = load_model(args.model, args.image_size)
    x = _image(g, args.input, args.seed)
    t0 = time.perf_counter()
    net = build(g, target=args.target, device=args.device, log=args.log)
    built = time.perf_counter() - t0
    out = net(x)
    out = out[0] if isinstance(out, tuple) else out
    where = net.device.name if net.device is not None else "python"
    print(f"{g.name}: {len(net.layers)} layers, {net.kernels_per_run} kernels, built in "
          f"{built:.1f} s on {where}")  # fmt: skip
    flat = out.reshape(-1)
    top = np.argsort(flat)[::-1][:5]
    print("top classes: " + ", ".join(f"{i} ({flat[i]:.4f})" for i in top))
    if args.check:
        ref = run_reference(g, x)[g.outputs[0]]
        print(f"max relative error against numpy (float64): {max_rel_error(out, ref):.2e}")
    if args.output:
        np.save(args.output, out)
        print(f"output written to {args.output}")
    if args.profile:
        print(net.profile(x, repeat=args.repeat))


def _tune(args: argparse.Namespace) -> None:
    g = optimize(load_model(args.model, args.image_size))
    cluster = Cluster(args.cluster) if args.cluster else None  # one for all the tasks
    try:
        if cluster is not None:  # templates for the cluster's device, not this host's
            gpu, records = cluster.is_gpu(args.device), []
        else:
            dev = resolve_device(args.device)
            name = f"{dev.platform_name} / {dev.name}"
            logged = read_log(args.log) if os.path.exists(args.log) else []
            gpu, records = bool(dev.is_gpu), [r for r in logged if r.device == name]
        tasks = extract_tasks(g, gpu, records)
        print(f"{g.name}: {len(tasks)} distinct tasks")
        rows = []
        for i, (task, count) in enumerate(tasks):
            print(f"[{i + 1}/{len(tasks)}] {task} (x{count})")
            res = tune(
                task,
                args.log,
                strategy=args.strategy,
                trials=args.trials,
                resume=True,
                device=args.device,
                timeout=args.timeout,
                time_s=args.time,
                early_stop=args.early_stop,
                transfer=args.transfer or (),
                progress=not args.quiet,
                cluster=cluster,
            )
            b = res.best
            best = [f"{b.device_ms:.3f}", f"{b.gflops:.1f}"] if b else ["-", "-"]
            rows.append([str(task), count, res.measured, *best])
    finally:
        if cluster is not None:
            cluster.close()
    print_table(["task", "layers", "trials", "best ms", "GFLOP/s"], rows, "<>>>>")
    print(f"log: {os.path.abspath(args.log)}")


def bench_rows(
    g: Graph, device: str | None, log: str | None, repeat: int, ort: bool = True
) -> list[list[str]]:
    """``[engine, device, median ms, relative error]`` rows of one network: tensorsched on the
    OpenCL device (wall clock and the kernels' device time), onnxruntime on the CPU."""
    x = _image(g, None)
    ref = run_reference(g, x)[g.outputs[0]]
    net: Net = build(g, device=device, log=log)
    out = net(x)
    ms = latency_ms(lambda: net(x), repeat)
    dev_ms = net.profile(x, repeat=max(3, repeat // 2)).total_ms
    assert net.device is not None
    rows = [[g.name, "tensorsched", net.device.name, f"{ms:.2f}", f"{dev_ms:.2f}",
             f"{max_rel_error(out, ref):.1e}"]]  # fmt: skip
    sess = onnxruntime_session(g) if ort else None
    if sess is not None:
        feed = {g.inputs[0]: x}
        o = sess.run(None, feed)[0]
        ort_ms = latency_ms(lambda: sess.run(None, feed), repeat)
        rows.append([g.name, "onnxruntime", "CPU", f"{ort_ms:.2f}", "-",
                     f"{max_rel_error(o, ref):.1e}"])  # fmt: skip
    return rows


BENCH_HEAD = ["network", "engine", "device", "median ms", "device ms", "max rel err"]


def _bench(args: argparse.Namespace) -> None:
    g = load_model(args.model, args.image_size)
    rows = bench_rows(g, args.device, args.log, args.repeat, not args.no_onnxruntime)
    print_table(BENCH_HEAD, rows, "<<<>>>")
    if args.plot:
        plot_latency(rows, args.plot)


def plot_latency(rows: list[list[str]], path: str) -> None:
    """A bar chart of the median latencies (needs matplotlib, the ``plot`` extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TensorschedError("--plot needs matplotlib: pip install 'tensorsched[plot]'") from None
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.barh([f"{r[0]} {r[1]}" for r in rows], [float(r[3]) for r in rows])
    ax.set_xlabel("batch-1 latency, ms (median)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot written to {path}")


def _export(args: argparse.Namespace) -> None:
    if os.path.exists(args.out) and not args.force:
        raise TensorschedError(f"{args.out} exists; pass --force to overwrite it")
    to_onnx(load_model(args.model, args.image_size), args.out)
    print(f"written {args.out}")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if not 1 <= value <= 2**31 - 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except TensorschedError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_net_parser(sub: Any) -> None:
    """The ``net`` subcommand and its actions."""
    p = sub.add_parser("net", help="whole networks: run, tune, bench or export MODEL")
    p.add_argument("action", choices=["run", "tune", "bench", "export"])
    p.add_argument("model", help=f"{', '.join(NETS)} or the path of an .onnx file")
    p.add_argument("--device", help="P:D or part of a device name")
    p.add_argument("--log", help="tuning log: the configs to build with (tune: where to write)")
    p.add_argument("--image-size", type=_positive, help="built-in nets: image side (224)")
    p.add_argument("--input", help="run: a .npy image of the network's input shape")
    p.add_argument("--output", help="run: write the output as .npy")
    p.add_argument("--target", choices=["opencl", "python"], default="opencl")
    p.add_argument("--check", action="store_true", help="run: error against numpy")
    p.add_argument("--profile", action="store_true", help="run: the per-layer table")
    p.add_argument("--repeat", type=_positive, default=20, help="timed runs (bench, profile)")
    p.add_argument("--seed", type=int, default=0, help="the random input's seed")
    p.add_argument("--no-onnxruntime", action="store_true", help="bench: leave it out")
    p.add_argument("--plot", help="bench: write a PNG bar chart (needs matplotlib)")
    p.add_argument("--trials", type=_positive, help="tune: candidates per task")
    p.add_argument("--time", type=_duration, help="tune: time per task (90s, 2m)")
    p.add_argument("--early-stop", type=_positive, metavar="N")
    p.add_argument("--strategy", choices=["model", "grid", "random"], default="model")
    p.add_argument("--transfer", action="append", metavar="LOG")
    p.add_argument("--timeout", type=float, default=60.0, help="tune: seconds per candidate")
    p.add_argument("--quiet", action="store_true", help="tune: no progress bars")
    p.add_argument(
        "--cluster", metavar="ADDRESS", help="tune: measure on a Dask cluster (or 'local')"
    )
    p.add_argument("--out", help="export: the .onnx file to write")
    p.add_argument("--force", action="store_true", help="export: overwrite --out")


def _check_args(args: argparse.Namespace) -> None:
    if args.action == "tune" and not args.log:
        raise TensorschedError("net tune needs --log FILE (the JSON-lines log to write)")
    if args.action == "export" and not args.out:
        raise TensorschedError("net export needs --out FILE.onnx")
