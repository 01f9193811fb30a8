"""``tensorsched net run|tune|bench|export MODEL``: whole networks from the command line.

MODEL is ``vgg16``, ``resnet18``, ``mobilenet_v1`` (built in, seeded random weights) or the
path of an ``.onnx`` file. ``run`` builds the network on the device (configs from ``--log``
where given, else predicted) and runs it on ``--input`` (a ``.npy``, or a ``.npz`` of arrays by
input name) or on seeded random inputs (token ids within the vocabulary they index), printing
the top classes, and with ``--check`` the largest relative error against numpy; ``--profile``
prints the per-layer table; ``--fp16`` stores weights and activations as half. ``tune``
extracts the distinct conv (2-d, and ungrouped 3-d) / depthwise / dense workloads and tunes
each with the tuner's budget into one JSON-lines log. ``bench`` times end-to-end batch-1
inference (median of ``--repeat``), side by side on the same weights and input: tensorsched
(and with ``--fp16`` its half-storage build), the ACL-style network with ``--acl DIR`` (its
GEMMs tuned into DIR first, resumable), onnxruntime on the CPU where it is installed, and torch
eager (cuDNN, fp32, TF32 off) where torch can use a CUDA GPU."""

from __future__ import annotations

import argparse
import math
import os
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, TypeVar

import numpy as np

from ..baselines.acl_net import acl_search_lists, build_acl_net, tune_acl_net
from ..baselines.torch_net import TorchNet, torch_device
from ..errors import TensorschedError
from ..frontend.onnx import from_onnx, to_onnx
from ..graph.executor import Net, build
from ..graph.graph import Graph
from ..graph.passes import for_device, optimize
from ..graph.reference import run_reference
from ..graph.tasks import extract_tasks
from ..nets import NETS
from ..runtime.device import resolve_device
from ..runtime.table import print_table
from ..tune.distributed import Cluster
from ..tune.log import not_regular, read_log
from ..tune.task import INDEX_MAX
from ..tune.tuner import VERIFY_TOP, parse_duration, tune


def parse_shapes(items: list[str] | None) -> dict[str, tuple[int, ...]]:
    """``--shape NAME=D0,D1,...`` (repeated): the shapes of an ONNX model's inputs."""
    out: dict[str, tuple[int, ...]] = {}
    for item in items or []:
        name, eq, dims = item.partition("=")
        try:
            shape = tuple(int(d) for d in dims.split(","))
        except ValueError:
            shape = ()
        if not eq or not name or not shape or any(d < 1 for d in shape):
            raise TensorschedError(
                f"--shape {item!r}: expected NAME=D0,D1,... with positive dims, "
                "e.g. --shape input=1,3,224,224"
            )
        out[name] = shape
    return out


def load_model(
    model: str, image_size: int | None = None, shapes: dict[str, tuple[int, ...]] | None = None
) -> Graph:
    """A built-in network by name, or an ONNX file by path (``shapes``: its inputs' shapes
    where the model leaves a dimension symbolic)."""
    if model in NETS:
        if shapes:
            raise TensorschedError("--shape applies to ONNX models only")
        return NETS[model](image_size=image_size or 224)
    if model.endswith(".onnx") or os.path.exists(model):
        if image_size:
            raise TensorschedError("--image-size applies to the built-in networks only")
        return from_onnx(model, shapes)
    raise TensorschedError(
        f"unknown model {model!r}: use one of {', '.join(NETS)} or the path of an .onnx file"
    )


def _model(args: argparse.Namespace) -> Graph:
    """The command's model (``--image-size``, ``--shape`` applied)."""
    return load_model(args.model, args.image_size, parse_shapes(args.shape))


def _inputs(g: Graph, path: str | None, seed: int = 0) -> dict[str, np.ndarray]:
    """The network's inputs, each of its host type (``Graph.feed``): from ``--input`` (a
    ``.npy`` for a network of one input, a ``.npz`` of arrays by input name), else seeded
    random ones: floats from a normal distribution, booleans either way, integers from 0 up
    to the smallest axis they index (``take``: token ids within the vocabulary), else 0 or 1
    (a mask). An array's header is checked against the network's input (shape, a numeric
    type) before its data is read: a header of a few bytes asks for no more memory than the
    network takes."""
    if path is None:
        rng = np.random.default_rng(seed)
        return {t: _random_input(g, t, host, rng) for t, host in zip(g.inputs, g.input_types)}
    with open_regular(path, "--input") as f:
        try:
            if f.read(4) != b"PK\x03\x04":  # a .npy (a .npz is a zip of them)
                f.seek(0)
                if len(g.inputs) != 1:
                    raise TensorschedError(
                        f"--input {path}: the network takes {len(g.inputs)} inputs "
                        f"({', '.join(g.inputs)}); give a .npz of arrays by those names"
                    )
                return {g.inputs[0]: _npy(f, g, g.inputs[0], path)}
            f.seek(0)
            with zipfile.ZipFile(f) as z:
                members = {n.removesuffix(".npy"): n for n in z.namelist()}
                arrays = {}
                for t in g.inputs:
                    if t not in members:
                        raise TensorschedError(
                            f"--input {path} has no array '{t}' (the network's input)"
                        )
                    with z.open(members[t]) as m:
                        arrays[t] = _npy(m, g, t, path)
                return arrays
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise TensorschedError(
                f"--input {path}: not a readable .npy or .npz file ({exc})"
            ) from None


def _npy(f: IO[bytes], g: Graph, t: str, path: str) -> np.ndarray:
    """The array of input ``t`` that the ``.npy`` data in ``f`` holds: its header's shape must
    be the input's and its type a number's (or bool) before its data is read."""
    version = np.lib.format.read_magic(f)
    header = (
        np.lib.format.read_array_header_1_0
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0
    )
    shape, fortran, dtype = header(f)
    want = g.tensors[t].shape
    if tuple(shape) != want:
        raise TensorschedError(
            f"--input {path}: '{t}' has shape {tuple(shape)}; the network takes {want}"
        )
    if dtype.hasobject or dtype.kind not in "biuf":
        raise TensorschedError(
            f"--input {path}: '{t}' holds {dtype} elements; give numbers (float, int or bool)"
        )
    size = math.prod(shape) * dtype.itemsize
    data = f.read(size)
    if len(data) != size:
        raise TensorschedError(f"--input {path}: '{t}' ends after {len(data)} of its {size} bytes")
    arr = np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")
    return np.ascontiguousarray(arr.astype(dtype.newbyteorder("=")))


def open_regular(path: str, what: str) -> BinaryIO:
    """``path`` opened to read, where it is a regular file; a ``TensorschedError`` that names
    option ``what`` where it is not there, is a folder, a FIFO or a device (which would block
    or never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise TensorschedError(f"cannot read {what} {path}: {why}") from None
    kind = not_regular(os.fstat(fd).st_mode)
    if kind:
        os.close(fd)
        raise TensorschedError(f"{what} {path} is {kind}, not a file")
    return os.fdopen(fd, "rb")


def write_to(path: str, what: str) -> BinaryIO:
    """``path`` opened to write (made or emptied): exactly that file, in a folder that is
    there; a ``TensorschedError`` naming option ``what`` where it cannot be."""
    try:
        return open(path, "wb")
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise TensorschedError(
            f"cannot write {what} {path}: {why} (its folder must be there)"
        ) from None


def _random_input(g: Graph, t: str, host: str, rng: np.random.Generator) -> np.ndarray:
    shape = g.tensors[t].shape
    if host == "bool":
        return rng.random(shape) < 0.5
    if host.startswith("int"):
        sizes = [
            g.tensors[n.inputs[0]].shape[n.attrs["axis"]]
            for n in g.consumers(t)
            if n.op == "take" and n.inputs[1] == t
        ]
        return rng.integers(0, min(sizes, default=2), shape).astype(host)
    return rng.standard_normal(shape).astype(host)


def latency_ms(fn: Callable[[], Any], repeat: int, warmup: int = 2, warmup_s: float = 0.5) -> float:
    """Median wall-clock milliseconds of ``fn()`` over ``repeat`` runs after at least
    ``warmup`` runs and ``warmup_s`` seconds of them (a freshly built network on PoCL runs its
    first 10-20 calls up to 2.5x slower: 18 ms, then 7.1 from about the 20th call on, for
    MobileNet-v1; every engine gets the same warm-up)."""
    t_end = time.perf_counter() + warmup_s
    n = 0
    while n < warmup or time.perf_counter() < t_end:
        fn()
        n += 1
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
    g = _model(args)
    x = _inputs(g, args.input, args.seed)
    t0 = time.perf_counter()
    net = build(g, target=args.target, device=args.device, log=args.log, fp16=args.fp16)
    built = time.perf_counter() - t0
    out = net(x)
    out = out[0] if isinstance(out, tuple) else out
    where = net.device.name if net.device is not None else "python"
    half = ", fp16 storage" if args.fp16 else ""
    print(f"{g.name}: {len(net.layers)} layers, {net.kernels_per_run} kernels, built in "
          f"{built:.1f} s on {where}{half}")  # fmt: skip
    flat = out.reshape(-1)
    top = np.argsort(flat)[::-1][:5]
    print("top classes: " + ", ".join(f"{i} ({flat[i]:.4f})" for i in top))
    if args.check:
        ref = run_reference(g, x)[g.outputs[0]]
        print(f"max relative error against numpy (float64): {max_rel_error(out, ref):.2e}")
    if args.output:  # written where it says (np.save of a name would add .npy)
        with write_to(args.output, "--output") as f:
            np.save(f, out)
        print(f"output written to {args.output}")
    if args.profile:
        print(net.profile(x, repeat=args.repeat))


def _tune(args: argparse.Namespace) -> None:
    g = optimize(_model(args))
    cluster = Cluster(args.cluster) if args.cluster else None  # one for all the tasks
    try:
        if cluster is not None:  # templates for the cluster's device, not this host's
            gpu, records = cluster.is_gpu(args.device), []
        else:
            dev = resolve_device(args.device)
            name = f"{dev.platform_name} / {dev.name}"
            logged = read_log(args.log) if os.path.exists(args.log) else []
            gpu, records = bool(dev.is_gpu), [r for r in logged if r.device == name]
        g = for_device(g, gpu)  # the layouts a build on that device chooses
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
                verify=args.verify,
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


@dataclass
class BenchRow:
    """One engine's end-to-end result on one network."""

    network: str
    engine: str
    device: str
    ms: float  # wall-clock median of a whole call: input in, output back
    device_ms: float | None  # the kernels' device time (tensorsched's engines)
    error: float  # max relative error against the float64 numpy reference
    built_s: float  # build (and for the ACL-style network, tuning) seconds


def bench_network(
    g: Graph,
    device: str | None = None,
    log: str | None = None,
    repeat: int = 20,
    ort: bool = True,
    fp16: bool = False,
    acl: str | None = None,
    acl_configs: int | None = None,
    acl_lists: str | None = None,
    torch: bool = True,
    progress: bool = False,
) -> tuple[list[BenchRow], dict[str, Any]]:
    """Every engine on ``g``, same weights, same seeded input: tensorsched on the OpenCL
    device (with ``fp16`` its half-storage build too), the ACL-style network (``acl``: the
    folder of its tuning results, tuned there first where shapes are missing; ``acl_configs``
    / ``acl_lists`` cut its search lists), onnxruntime on the CPU (``ort``, when installed)
    and torch eager on a CUDA GPU (``torch``, when there is one). Returns the rows and the
    per-layer ``Profile`` of each OpenCL engine, by engine name."""
    x = _inputs(g, None)
    ref = run_reference(g, x)[g.outputs[0]]
    rows: list[BenchRow] = []
    profiles: dict[str, Any] = {}

    def timed(engine: str, net: Net, built: float) -> None:
        out = net(x)
        ms = latency_ms(lambda: net(x), repeat)
        prof = net.profile(x, repeat=max(3, repeat // 2))
        assert net.device is not None
        rows.append(BenchRow(g.name, engine, net.device.name, ms, prof.total_ms,
                             max_rel_error(out, ref), built))  # fmt: skip
        profiles[engine] = prof

    t0 = time.perf_counter()
    net: Net = build(g, device=device, log=log)
    timed("tensorsched", net, time.perf_counter() - t0)
    del net
    if fp16:
        t0 = time.perf_counter()
        half = build(g, device=device, log=log, fp16=True)
        timed("tensorsched fp16", half, time.perf_counter() - t0)
        del half
    if acl is not None:
        t0 = time.perf_counter()
        lists = acl_search_lists(acl_lists) if acl_lists else None
        res = tune_acl_net(g, acl, device, acl_configs, lists, progress=progress)
        timed("ACL-style", build_acl_net(g, res, device, log), time.perf_counter() - t0)
    sess = onnxruntime_session(g) if ort else None
    if sess is not None:
        feed = x
        o = sess.run(None, feed)[0]
        ort_ms = latency_ms(lambda: sess.run(None, feed), repeat)
        rows.append(BenchRow(g.name, "onnxruntime", "CPU", ort_ms, None,
                             max_rel_error(o, ref), 0.0))  # fmt: skip
    # TorchNet runs a graph of one float32 input (the networks' image)
    image = len(g.inputs) == 1 and g.input_types[0] == "float32"
    where = torch_device("cuda") if torch and image else None
    if where is not None:
        t0 = time.perf_counter()
        model = TorchNet(g, where)
        o = model(x[g.inputs[0]])
        built = time.perf_counter() - t0
        torch_ms = latency_ms(lambda: model(x[g.inputs[0]]), repeat)
        name = model.torch.cuda.get_device_name()
        rows.append(BenchRow(g.name, "torch eager (cuDNN)", name, torch_ms, None,
                             max_rel_error(o, ref), built))  # fmt: skip
    return rows, profiles


BENCH_HEAD = ["network", "engine", "device", "median ms", "device ms", "max rel err",
              "tensorsched speed-up"]  # fmt: skip


def bench_table(rows: list[BenchRow]) -> list[list[str]]:
    """``BENCH_HEAD`` rows; the speed-up is the engine's time over tensorsched's (fp32)."""
    ts_ms = {r.network: r.ms for r in rows if r.engine == "tensorsched"}
    out = []
    for r in rows:
        dev = f"{r.device_ms:.2f}" if r.device_ms is not None else "-"
        base = ts_ms.get(r.network)
        speed = f"{r.ms / base:.2f}x" if base and r.engine != "tensorsched" else "-"
        out.append([r.network, r.engine, r.device, f"{r.ms:.2f}", dev, f"{r.error:.1e}", speed])
    return out


def _bench(args: argparse.Namespace) -> None:
    g = _model(args)
    rows, _ = bench_network(
        g, args.device, args.log, args.repeat, not args.no_onnxruntime, args.fp16, args.acl,
        args.acl_configs, args.acl_lists, not args.no_torch,
    )  # fmt: skip
    table = bench_table(rows)
    print_table(BENCH_HEAD, table, "<<<>>>>")
    if args.plot:
        plot_latency(table, args.plot)


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
    model = to_onnx(_model(args))
    with write_to(args.out, "--out") as f:
        f.write(model.SerializeToString())
    print(f"written {args.out}")


T = TypeVar("T")


def _argument_type(
    parse: Callable[[str], T], ok: Callable[[T], bool], unparsed: str, expected: str, doc: str
) -> Callable[[str], T]:
    """An argparse type: ``parse`` of the text, refused unless ``ok``; the messages say what
    was ``expected`` (``unparsed``: where the text does not parse)."""

    def check(text: str) -> T:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {unparsed}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    check.__doc__ = doc
    return check


positive_int = _argument_type(
    int,
    lambda v: 1 <= v <= INDEX_MAX,
    "a positive integer",
    f"a positive integer (1 to {INDEX_MAX})",
    "An argparse type: an integer from 1 to 2**31 - 1.",
)
seed_int = _argument_type(
    int,
    lambda v: 0 <= v < 2**63,
    "an integer",
    "an integer from 0 to 2**63 - 1",
    "An argparse type: a random seed, an integer from 0 to 2**63 - 1.",
)
positive_seconds = _argument_type(
    float,
    lambda v: math.isfinite(v) and 0 < v <= 7 * 24 * 3600,
    "seconds",
    "a positive number of seconds",
    "An argparse type: a finite positive number of seconds (at most a week).",
)
count = _argument_type(
    int,
    lambda v: 0 <= v <= 1000,
    "an integer from 0",
    "an integer from 0 to 1000",
    "An argparse type: an integer from 0 to 1000 (how many of something; 0: none).",
)


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
    p.add_argument("--image-size", type=positive_int, help="built-in nets: image side (224)")
    p.add_argument(
        "--shape",
        action="append",
        metavar="NAME=D0,D1,...",
        help="an ONNX model's input shape where the model leaves a dimension symbolic "
        "(repeat for several inputs)",
    )
    p.add_argument(
        "--input",
        help="run: a .npy of the network's input (a .npz of arrays by name for several inputs)",
    )
    p.add_argument(
        "--output",
        help="run: write the output to this path, in .npy format (the folder must exist)",
    )
    p.add_argument("--target", choices=["opencl", "python"], default="opencl")
    p.add_argument("--check", action="store_true", help="run: error against numpy")
    p.add_argument("--profile", action="store_true", help="run: the per-layer table")
    p.add_argument("--repeat", type=positive_int, default=20, help="timed runs (bench, profile)")
    p.add_argument("--seed", type=seed_int, default=0, help="the random input's seed")
    p.add_argument(
        "--fp16",
        action="store_true",
        help="run: store weights and activations as half; bench: add that build",
    )
    p.add_argument("--no-onnxruntime", action="store_true", help="bench: leave it out")
    p.add_argument("--no-torch", action="store_true", help="bench: leave torch (CUDA) out")
    p.add_argument(
        "--acl",
        metavar="DIR",
        help="bench: add the ACL-style network, its GEMMs tuned into DIR (resumable)",
    )
    p.add_argument(
        "--acl-configs",
        type=positive_int,
        metavar="N",
        help="bench --acl: the first N configs of each strategy's search list",
    )
    p.add_argument(
        "--acl-lists",
        metavar="DIR",
        help="bench --acl: search lists saved by an earlier ACL-style tuning in DIR",
    )
    p.add_argument("--plot", help="bench: write a PNG bar chart (needs matplotlib)")
    p.add_argument("--trials", type=positive_int, help="tune: candidates per task")
    p.add_argument("--time", type=_duration, help="tune: time per task (90s, 2m)")
    p.add_argument("--early-stop", type=positive_int, metavar="N")
    p.add_argument(
        "--verify",
        type=count,
        default=VERIFY_TOP,
        metavar="N",
        help=f"tune: then measure each task's N fastest configs again (default {VERIFY_TOP})",
    )
    p.add_argument("--strategy", choices=["model", "grid", "random"], default="model")
    p.add_argument("--transfer", action="append", metavar="LOG")
    p.add_argument(
        "--timeout", type=positive_seconds, default=60.0, help="tune: seconds per candidate"
    )
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
    for option, path in (("--output", args.output), ("--out", args.out)):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise TensorschedError(
                f"{option} {path}: the folder {os.path.dirname(os.path.abspath(path))} is not "
                "there; make it first (nothing is made but the file named)"
            )
        if path and os.path.isdir(path):
            raise TensorschedError(f"{option} {path} is a folder; name the file to write")
    if (args.acl_configs or args.acl_lists) and not args.acl:
        raise TensorschedError("--acl-configs and --acl-lists go with --acl DIR")
