"""The ``tensorsched`` command line: ``devices``, ``peak``, ``tune``, ``compare``, ``ir``,
``source`` and ``worker``.

Files are written only where ``--log``, ``--acl-dir`` and ``--out`` say; without them, ``tune``
and ``compare`` write under the user's cache folder (printed). Every number is checked before
anything runs; a mistake exits with status 2 and a message. A user's own templates are found by
name once ``--import MODULE`` has imported the module that registers them.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import importlib
import json
import os
import re
import sys
import textwrap
import warnings
from collections.abc import Callable, Sequence
from dataclasses import MISSING, Field, fields
from typing import Any

import platformdirs

from ..baselines.compare import compare, plot
from ..baselines.compare import print_table as print_comparison
from ..codegen.opencl import emit_opencl
from ..errors import TensorschedError
from ..graph.tasks import choose_template
from ..ir.te_text import parse_expr
from ..ir.tensor import PlaceholderOp
from ..ops.conv2d import ConvShape
from ..ops.pool import MODES
from ..ops.space import Config
from ..ops.templates import KINDS, SHAPES
from ..ops.templates.generic import generic as generic_template
from ..runtime.awake import awake_cores
from ..runtime.device import all_devices, current_device, find_device
from ..runtime.peak import measure_bandwidth, measure_compute
from ..runtime.table import print_table
from ..schedules.lower import lower
from ..schedules.schedule import create_schedule
from ..tune.distributed import Cluster
from ..tune.log import best_records, read_log
from ..tune.task import INDEX_MAX, ShapeError, Task, task_shape
from ..tune.tuner import VERIFY_TIMES, VERIFY_TOP, parse_duration, tune, tune_devices
from .net import (
    add_net_parser,
    cmd_net,
    count,
    open_regular,
    positive_int,
    positive_seconds,
    seed_int,
)
from .worker import add_worker_parser, cmd_worker

# a small ACL-style search list (``compare`` without ``--acl-full``): one config per strategy
# family that the full lists of ``baselines/data`` hold, so that ``compare`` finishes in about a
# minute on a CPU device where each config compiles for a second
SMALL_ACL_LISTS = {
    "native": ["4,8,4"],
    "reshaped_rhs_only": ["4,8,4,2,0,0,0"],
    "reshaped": ["4,8,4,2,2,0,0,0,0"],
}


COMPARE_TRIALS = 12  # compare's default tensorsched candidates per shape

# tune's operators; text is tune --expr, AutoTVM templates are tuned from Python (ts.autotvm)
TUNE_KINDS = tuple(k for k in KINDS if k not in ("expr", "autotvm"))
# a --shape of each of them, for the help and the errors (tests/test_cli.py tunes each)
SHAPE_EXAMPLES = {
    "gemm": "512,512,512",
    "conv2d": "1,64,56,56,64,3,3,1,1",
    "depthwise_conv2d": "1,32,112,112,32,3,3,32,1,1,1,1,1,1",
    "group_conv2d": "1,64,56,56,128,3,3,4,2,2,1,1,1,1",
    "dense": "1,1000,2048",
    "pool": "1,64,112,112,3,3,2,2,1,1,1,1,0",
    "softmax": "1,1000",
    "conv3d": "1,64,8,28,28,64,3,3,3,1,1,1,1,1,1,1,1,1,1",
}


def cache_path(name: str) -> str:
    """``name`` under the user's cache folder (platformdirs), said on stderr."""
    path = os.path.join(platformdirs.user_cache_dir("tensorsched"), name)
    print(f"tensorsched: writing {path} (choose where with --log/--acl-dir)", file=sys.stderr)
    return path


def device_type(cl_device: Any) -> str:
    """``GPU``, ``CPU``, ``ACCELERATOR`` (or ``CUSTOM``, ``OTHER``) from an OpenCL device's type
    bits."""
    bits = int(cl_device.type)
    for bit, name in ((4, "GPU"), (2, "CPU"), (8, "ACCELERATOR"), (16, "CUSTOM")):
        if bits & bit:  # CL_DEVICE_TYPE_GPU = 4, _CPU = 2, _ACCELERATOR = 8, _CUSTOM = 16
            return name
    return "OTHER"


def cmd_devices(args: argparse.Namespace) -> None:
    rows = []
    for d in all_devices():
        cl = d.cl_device
        err = d.probe()
        rows.append(
            [
                f"{d.platform_index}:{d.device_index}",
                device_type(cl),
                d.platform_name,
                d.name,
                str(cl.max_compute_units),
                f"{cl.max_clock_frequency} MHz",
                f"{cl.local_mem_size // 1024} KiB",
                str(cl.max_work_group_size),
                "yes" if d.has_fp16 else "no",
                "yes" if cl.image_support else "no",
                "yes" if err is None else f"no ({err})",
            ]
        )
    head = [
        "id",
        "type",
        "platform",
        "device",
        "CUs",
        "clock",
        "local mem",
        "max wg",
        "fp16",
        "images",
        "probe builds",
    ]
    print_table(head, rows)
    print("\nchoose one with TS_DEVICE=<id> or TS_DEVICE=<part of its name>")


def cmd_peak(args: argparse.Namespace) -> None:
    dev = find_device(args.device) if args.device else current_device()
    print(f"device: {dev.name} ({dev.platform_name})")
    rows = []
    for r in measure_compute(dev, repeat=args.repeat) + [
        measure_bandwidth(dev, repeat=args.repeat)
    ]:
        rows.append([r.what, f"{r.value:.1f} {r.unit}", "ok" if r.checked else "WRONG RESULT"])
    print_table(["kernel", "median", "result check"], rows)


def _parse_ints(text: str, what: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(x) for x in text.split(","))
    except ValueError:
        shown = text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"
        raise ShapeError(f"{what} must be comma-separated integers, got '{shown}'") from None
    big = [v for v in vals if abs(v) > INDEX_MAX]
    if big:
        raise ShapeError(f"{what}: {big[0]} is over {INDEX_MAX}, the largest 32-bit index")
    return vals


def _shape_fields(kind: str) -> list[Field[Any]]:
    """The dataclass fields of ``kind``'s shape, in ``--shape``'s order (none for gemm)."""
    cls = ConvShape if kind == "conv2d" else SHAPES.get(kind)
    return list(fields(cls)) if cls is not None else []


def shape_usage(kind: str) -> str:
    """What ``--shape`` takes for ``kind``, from its shape class: ``N,CI,...[,stride_h=1,...]``,
    the fields in brackets left off the end as the user likes."""
    fs = _shape_fields(kind)
    if not fs:
        return "M,N,K"
    need = [f.name for f in fs if f.default is MISSING]
    rest = [f"{f.name}={f.default}" for f in fs[len(need) :]]
    return ",".join(need) + (f"[,{','.join(rest)}]" if rest else "")


def parse_shape(kind: str, text: str) -> tuple[int, ...]:
    """``--shape`` as a task of ``kind`` holds it, fields left off the end at their defaults;
    a ``ShapeError`` that names the kind's fields in order, with an example, unless it is."""
    try:
        ints = _parse_ints(text, "--shape")
        fs = _shape_fields(kind)
        need = sum(f.default is MISSING for f in fs)
        if fs and not need <= len(ints) <= len(fs):
            want = str(need) if need == len(fs) else f"{need} to {len(fs)}"
            raise ShapeError(f"--shape {text}: {len(ints)} ints, not {want}")
        return task_shape(kind, ints + tuple(f.default for f in fs[len(ints) :]))
    except ShapeError as exc:
        raise ShapeError(
            f"{exc}; {kind} takes --shape {shape_usage(kind)}, e.g. --shape {SHAPE_EXAMPLES[kind]}"
        ) from None


def shape_help() -> str:
    """The tune command's list of what ``--shape`` takes for each operator."""
    lines = [
        "--shape for each operator: its ints in this order; those in [ ] may be left off",
        "the end (at the defaults shown)",
    ]
    for kind in TUNE_KINDS:  # long lists wrapped between fields
        usage = textwrap.wrap(shape_usage(kind).replace(",", ", "), 70)
        lines.append(f"  {kind}: " + "\n      ".join(u.replace(", ", ",") for u in usage))
        lines.append(f"      e.g. --shape {SHAPE_EXAMPLES[kind]}")
    lines.append("  pool's mode: " + ", ".join(f"{i} {m}" for i, m in enumerate(MODES)))
    lines.append("  --expr: the extents, e.g. i=64,j=64,k=64")
    return "\n".join(lines)


def check_extents(text: str, what: str) -> str:
    """``text`` (extents as ``i=64,j=64`` or ``A=34x34``) unless a number in it is over the
    32-bit index range."""
    for m in re.finditer(r"\d+", text or ""):
        digits = m.group()
        value = digits.lstrip("0") or "0"
        if len(value) > 10 or int(value) > INDEX_MAX:  # int() refuses 4300 digits and more
            shown = digits if len(digits) <= 40 else f"{digits[:20]}... ({len(digits)} digits)"
            raise TensorschedError(f"{what}: {shown} is over {INDEX_MAX}, the largest 32-bit index")
    return text


def import_modules(names: Sequence[str] | None) -> None:
    """``--import MODULE``: import the user's modules that register templates."""
    for name in names or ():
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise TensorschedError(
                f"--import {name}: cannot import it ({exc}); give a module on the Python path "
                "(PYTHONPATH) that registers templates with "
                "tensorsched.tune.register_template"
            ) from None


def _tasks(args: argparse.Namespace, cluster: Cluster | None = None) -> list[Task]:
    """The tasks a ``tune`` or ``compare`` command asks for (on ``cluster``'s devices if
    given)."""
    if getattr(args, "expr", None):
        check_extents(args.shape, "--shape")
        return [
            Task(
                "expr", args.template or "generic", (), args.dtype, (), args.expr, args.shape or ""
            )
        ]
    if args.kind is None:
        raise TensorschedError(f"give the operator ({', '.join(TUNE_KINDS)}) or --expr")
    epilogue = tuple(x for x in (args.epilogue or "").split(",") if x)
    shapes = []
    if args.shape:
        shapes.append(parse_shape(args.kind, args.shape))
    if args.shapes and args.kind not in ("gemm", "conv2d"):
        raise TensorschedError(
            f"--shapes reads GEMM and conv2d tables; give a {args.kind} shape with --shape"
        )
    if args.shapes:
        rows = list(csv.reader(_read_table(args.shapes).splitlines()))
        if args.kind == "gemm":
            for n, row in enumerate(rows, 1):
                if not row or not row[0].strip() or not row[0].strip().lstrip("-").isdigit():
                    continue  # header or blank line
                vals = _parse_ints(",".join(row), f"{args.shapes}:{n}")
                if len(vals) != 4 or vals[3] != 1:
                    raise TensorschedError(
                        f"{args.shapes}:{n}: expected M,N,K,B with B = 1, got {row}"
                    )
                shapes.append(vals[:3])
        else:
            head = rows[0] if rows else []
            for n, row in enumerate(rows[1:], 2):
                r = dict(zip(head, row))
                try:
                    if int(r.get("groups", 1)) != 1:
                        continue  # depthwise: not a conv2d here
                    shapes.append(
                        (
                            1,
                            int(r["in_c"]),
                            int(r["in_h"]),
                            int(r["in_w"]),
                            int(r["out_c"]),
                            int(r["kernel_h"]),
                            int(r["kernel_w"]),
                            int(r["stride"]),
                            int(r["pad"]),
                        )
                    )
                except (KeyError, ValueError) as exc:
                    what = f"no column {exc}" if isinstance(exc, KeyError) else str(exc)
                    raise TensorschedError(
                        f"{args.shapes}:{n}: {what}; a conv2d layer table has the integer "
                        "columns in_c, in_h, in_w, out_c, kernel_h, kernel_w, stride, pad (and "
                        "groups) under a header line"
                    ) from None
    if not shapes:
        raise TensorschedError("give --shape or --shapes")
    gpu = False if args.template else _is_gpu(args, cluster)  # only a default asks
    seen, tasks = set(), []
    for sh in shapes:
        template = args.template or _default_template(args.kind, sh, epilogue, gpu)
        t = Task(args.kind, template, sh, epilogue=epilogue)
        if t.key() not in seen:
            seen.add(t.key())
            tasks.append(t)
    return tasks


MAX_TABLE_BYTES = 1 << 24  # a --shapes table: a line a shape


def _read_table(path: str) -> str:
    """The text of the ``--shapes`` table ``path``: a regular file of UTF-8 text of at most
    ``MAX_TABLE_BYTES`` (a ``TensorschedError`` naming it otherwise)."""
    with open_regular(path, "--shapes") as f:
        try:
            data = f.read(MAX_TABLE_BYTES + 1)
        except OSError as exc:
            raise TensorschedError(f"cannot read --shapes {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_TABLE_BYTES:
        raise TensorschedError(f"--shapes {path} is over {MAX_TABLE_BYTES} bytes; split it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TensorschedError(
            f"--shapes {path}:{line}: byte {data[exc.start]:#04x} is not UTF-8 text; give a "
            "CSV table"
        ) from None


def _is_gpu(args: argparse.Namespace, cluster: Cluster | None) -> bool:
    """Whether the device tuned for is a GPU: those ``--device`` names on ``cluster`` (all
    GPUs or none, as one template is tuned for them all), else this host's."""
    if cluster is None:
        return bool((find_device(args.device) if args.device else current_device()).is_gpu)
    gpu = {cluster.is_gpu(d) for d in (args.device.split(",") if args.device else [None])}
    if len(gpu) > 1:
        raise TensorschedError(
            f"--device {args.device} names GPUs and other devices: give --template "
            "(one template for every device tuned at once)"
        )
    return gpu.pop()


def _default_template(
    kind: str, shape: tuple[int, ...], epilogue: tuple[str, ...], gpu: bool
) -> str:
    """GEMM's GPU or CPU template, seed 003's spatial pack for conv2d, else the template
    ``net tune`` picks for a task no log has timed (``graph.tasks.choose_template``)."""
    if kind == "gemm":
        return "gpu_tiled" if gpu else "cpu"
    if kind == "conv2d":
        return "spatial_pack"
    return choose_template(kind, shape, epilogue, gpu)


def _restrict(items: Sequence[str] | None) -> dict[str, list]:
    """``--knob NAME=JSON-LIST`` options as ``{name: [values]}`` (a split's value is a list)."""
    out = {}
    for item in items or ():
        name, eq, values = item.partition("=")
        try:
            parsed = json.loads(values) if eq else None
        except (ValueError, RecursionError) as exc:  # ValueError: JSONDecodeError, or an int
            # of more digits than Python converts; RecursionError: lists nested too deep
            parsed, why = None, f": {str(exc)[:200] or type(exc).__name__}"
        else:
            why = ""
        if not name or not isinstance(parsed, list):
            shown = item if len(item) <= 80 else f"{item[:60]}... ({len(item)} characters)"
            raise TensorschedError(
                f"--knob {shown!r}: expected NAME=JSON-LIST, e.g. tile_k=[[8],[16]] "
                f"or double_buffer='[\"local\"]'{why}"
            )
        out[name] = parsed
    return out


def cmd_tune(args: argparse.Namespace) -> None:
    import_modules(args.imports)
    # on a cluster, --device A,B tunes several device kinds at once
    kinds = args.device.split(",") if args.cluster and args.device else [args.device]
    named = [k for k in kinds if k]  # with --cluster local, the devices its workers hold
    cluster = Cluster(args.cluster, devices=named) if args.cluster else None  # for all tasks
    try:
        tasks = _tasks(args, cluster)
        restrict = _restrict(args.knob)
        log = args.log or cache_path("tensorsched_tune.jsonl")
        with awake_cores() if args.awake else contextlib.nullcontext():
            rows = _tune_tasks(args, tasks, restrict, log, cluster, kinds)
    finally:
        if cluster is not None:
            cluster.close()
    print()
    print_table(["task", "best GFLOP/s", "device ms", "best config", "trials", "configs/min"], rows)
    print(f"\nlog: {os.path.abspath(log)}")


def _tune_tasks(
    args: argparse.Namespace,
    tasks: list[Task],
    restrict: dict[str, list],
    log: str,
    cluster: Cluster | None,
    kinds: list[str | None],
) -> list[list[str]]:
    """Tune each task (on ``cluster`` if given, for each device of ``kinds`` at once); the
    summary table's rows."""
    options: dict[str, Any] = {
        "strategy": args.strategy,
        "trials": args.trials,
        "resume": args.resume,
        "timeout": args.timeout,
        "repeat": args.repeat,
        "seed": args.seed,
        "restrict": restrict,
        "time_s": args.time,
        "early_stop": args.early_stop,
        "transfer": args.transfer or (),
        "verify": args.verify,
        "n_build": args.build_workers,
    }
    rows = []
    for task in tasks:
        results: list[tuple[str | None, Any]]  # (device, its TuneResult)
        if cluster is not None and len(kinds) > 1:
            named = [k for k in kinds if k]
            results = list(tune_devices(task, log, named, cluster, **options).items())
        else:
            results = [(kinds[0], tune(task, log, device=kinds[0], cluster=cluster, **options))]
        for kind, res in results:
            label = f"{task} on {kind}" if len(results) > 1 else str(task)
            b = res.best
            counts = ", ".join(f"{k} {v}" for k, v in sorted(res.counts.items()))
            rows.append(
                [
                    label,
                    f"{b.gflops:.1f}" if b else "-",
                    f"{b.device_ms:.3f}" if b else "-",
                    _fmt_config(b.config) if b else "no correct kernel",
                    counts,
                    f"{res.rate:.0f}",
                ]
            )
            print(
                f"{label}: {res.measured} configs in {res.seconds:.1f} s = {res.rate:.1f} "
                f"configs/min ({res.on_device} run on the device: "
                f"{res.on_device / res.seconds * 60 if res.seconds else 0:.1f}/min)"
            )
    return rows


def cmd_compare(args: argparse.Namespace) -> None:
    import_modules(args.imports)
    if args.layers:
        args.shapes = args.layers
    tasks = _tasks(args)
    if args.limit:
        tasks = tasks[: args.limit]
    log = args.log or cache_path("tensorsched_tune.jsonl")
    acl_dir = args.acl_dir or cache_path("acl_tuning")
    rows = compare(
        tasks,
        log,
        acl_dir,
        trials=args.trials,
        strategy=args.strategy,
        rounds=args.rounds,
        repeat=args.repeat,
        device=args.device,
        timeout=args.timeout,
        acl_config_lists=None if args.acl_full else SMALL_ACL_LISTS,
    )
    dev = find_device(args.device) if args.device else current_device()
    print_comparison(rows, dev.name)
    print(f"\nlogs: {os.path.abspath(log)} (tensorsched), {os.path.abspath(acl_dir)} (ACL-style)")
    if args.plot:
        plot(rows, args.plot)
        print(f"plot: {args.plot}")


def _fmt_config(config: dict) -> str:
    return " ".join(
        f"{k}={'x'.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in config.items()
    )


def cmd_source(args: argparse.Namespace) -> None:
    import_modules(args.imports)
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise TensorschedError(f"--out {args.out} is a file; give a folder for the .cl and .json")
    best = best_records(read_log(args.log), device=args.device_name)
    if not best:
        raise TensorschedError(
            f"{args.log} has no correct trial"
            f"{' on ' + args.device_name if args.device_name else ''}"
        )
    # a kernel's files are named after its task: kind, template, shape, epilogue, dtype; an
    # expr task (whose text cannot be a file name), and tasks whose names agree once odd
    # characters are replaced (templates 'a-b' and 'a_b'; 'A' and 'a' on a case-insensitive
    # disk), add a digest of the whole task, so no two tasks share a file
    kernels = []
    for rec in best.values():
        task = Task.from_dict(rec.task)
        digest = hashlib.sha256(task.key().encode()).hexdigest()[:10]
        shape = [digest] if task.kind == "expr" else ["x".join(map(str, task.shape))]
        name = "_".join(
            [task.kind, task.template, *shape, *task.epilogue]
            + ([task.dtype] if task.dtype != "float32" else [])
        )
        kernels.append((rec, task, re.sub(r"\W", "_", name), digest))
    seen = [n.lower() for _, _, n, _ in kernels]
    kernels = [
        (rec, task, name if seen.count(name.lower()) == 1 else f"{name}_{digest}", digest)
        for rec, task, name, digest in kernels
    ]
    by_name: dict[str, Task] = {}
    for _, task, name, _ in kernels:
        other = by_name.setdefault(name.lower(), task)
        if other is not task:
            raise TensorschedError(
                f"the kernels of {other} and {task} would both be written to "
                f"{os.path.join(args.out, name)}.cl; nothing was written"
            )
    paths = [os.path.join(args.out, n + ext) for _, _, n, _ in kernels for ext in (".cl", ".json")]
    there = [p for p in paths if os.path.exists(p)]
    if there and not args.force:
        raise TensorschedError(
            f"{there[0]} exists{f' (and {len(there) - 1} more)' if len(there) > 1 else ''}; "
            "pass --force to overwrite, or choose another --out"
        )
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as exc:
        raise TensorschedError(f"cannot make --out {args.out}: {exc.strerror or exc}") from None
    for rec, task, name, _ in kernels:
        s, targs, _ = task.instantiate(rec.config)
        src = emit_opencl(lower(s, targs, name=name))
        cl_path = os.path.join(args.out, name + ".cl")
        with open(cl_path, "w") as f:
            f.write(src.text)
        meta = {
            "task": rec.task,
            "config": {k: list(v) if isinstance(v, tuple) else v for k, v in rec.config.items()},
            "device": rec.device,
            "device_ms": rec.device_ms,
            "gflops": rec.gflops,
            "build_options": ["-cl-std=CL1.2"],
            "arguments": [
                {"name": b.name, "dtype": b.dtype, "shape": list(b.shape), "image2d": b.image}
                for b in lower(s, targs).args
            ],
            "temporaries": [
                {
                    "name": b.name,
                    "dtype": b.dtype,
                    "shape": list(b.shape),
                    # zero before the first launch; the kernels leave it zero
                    "zero_before_first_launch": b in src.zeroed,
                }
                for b in src.temps
            ],
            "kernels": [
                {
                    "name": k.name,
                    "global_size": list(k.global_size),
                    "local_size": list(k.local_size),
                    "arguments": [b.name for b in k.params],
                }
                for k in src.kernels
            ],
        }
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            json.dump(meta, f, indent=2)
        print(f"{cl_path} ({rec.gflops:.1f} GFLOP/s on {rec.device}) and its .json")


def add_ir_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "ir",
        help="print the lowered IR of a tensor expression given as text",
        description="Lower a tensor expression written as text (ts.parse_expr) with the default "
        "schedule, or the generic template, and print its IR or OpenCL source.",
    )
    p.add_argument(
        "--expr",
        required=True,
        help='statements separated by ";" or newlines, e.g. "C[i, j] += A[i, k] * B[k, j]"',
    )
    p.add_argument(
        "--shape", default="", help="index extents and input shapes: i=1024,j=1024,k=1024 (A=34x34)"
    )
    p.add_argument("--dtype", default="float32", help="dtype of the inputs (default float32)")
    p.add_argument("--name", default="default_function", help="the function's name")
    p.add_argument(
        "--generic",
        action="store_true",
        help="schedule with the generic template's default knobs (split, bind, "
        "unroll, vectorize) instead of the default schedule",
    )
    form = p.add_mutually_exclusive_group()
    form.add_argument(
        "--func",
        action="store_true",
        help="print the function form (with the signature; ts.parse_ir reads it)",
    )
    form.add_argument("--opencl", action="store_true", help="print the OpenCL source instead")
    return p


def schedule_text(
    expr: str, shape: str, dtype: str = "float32", generic: bool = False
) -> tuple[Any, list]:
    """``(schedule, args)`` for tensor-expression text: the default schedule of its last
    statement (or the generic template's defaults); args are the inputs then the output."""
    check_extents(shape, "--shape")
    if generic:
        return generic_template(Config(), expr, shape, dtype=dtype)
    tensors = list(parse_expr(expr, shape, dtype).values())
    out = tensors[-1]
    args = [t for t in tensors if isinstance(t.op, PlaceholderOp)] + [out]
    return create_schedule(out.op), args


def cmd_ir(args: argparse.Namespace) -> None:
    s, targs = schedule_text(args.expr, args.shape, args.dtype, args.generic)
    func = lower(s, targs, name=args.name)
    if args.opencl:
        print(emit_opencl(func).text)
    else:
        print(func.script() if args.func else func)


def duration(text: str) -> float:
    """An argparse type: a time, in seconds or with an s, m or h suffix (at most a week)."""
    try:
        value = parse_duration(text)
    except TensorschedError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value > 7 * 24 * 3600:
        raise argparse.ArgumentTypeError(f"expected at most a week, got {text!r}")
    return value


def _add_import(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--import",
        dest="imports",
        action="append",
        metavar="MODULE",
        help="import MODULE (on the Python path) first: a module of yours that registers "
        "templates with tensorsched.tune.register_template (repeatable)",
    )


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tensorsched", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("devices", help="list OpenCL devices and whether they build a probe kernel")
    pk = sub.add_parser("peak", help="clpeak-style float/float2..float16 GFLOP/s and bandwidth")
    pk.add_argument(
        "--device",
        help="P:D or part of a device name (default: TS_DEVICE, else the first GPU, else the CPU)",
    )
    pk.add_argument("--repeat", type=positive_int, default=5)
    tu = sub.add_parser(
        "tune",
        help="search a template's knobs on the device",
        epilog=shape_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tu.add_argument("kind", nargs="?", choices=TUNE_KINDS)
    tu.add_argument("--shape", help="the operator's ints (listed below), or the extents for --expr")
    tu.add_argument(
        "--expr",
        help="tune a tensor expression given as text with the generic "
        'template, e.g. "C[i, j] += A[i, k] * B[k, j]"',
    )
    tu.add_argument("--dtype", default="float32")
    tu.add_argument(
        "--shapes",
        help="a CSV of shapes: headerless M,N,K,B for gemm (as "
        "../shared/data/*.acl_format.csv), the layer table for conv2d",
    )
    tu.add_argument(
        "--template",
        help="template name (default: cpu or gpu_tiled for gemm by "
        "device type, spatial_pack for conv2d, for the others the one net tune picks on "
        "that device type); yours once --import has registered it",
    )
    _add_import(tu)
    tu.add_argument("--epilogue", help="comma-separated: bias,relu,sigmoid")
    tu.add_argument(
        "--trials", type=positive_int, help="candidates to measure per shape (default: all)"
    )
    tu.add_argument(
        "--strategy",
        choices=["model", "grid", "random"],
        default="model",
        help="model (default): a cost model trained as trials land picks each batch, "
        "starting from what the logs know of other shapes; grid; random",
    )
    tu.add_argument(
        "--time",
        type=duration,
        help="stop tuning a shape after this long: seconds, or 90s, 2m, 1h",
    )
    tu.add_argument(
        "--early-stop",
        type=positive_int,
        metavar="N",
        help="stop a shape after N trials in a row without a faster kernel",
    )
    tu.add_argument(
        "--transfer",
        action="append",
        metavar="LOG",
        help="another tuning log to learn from (other shapes of the template; repeatable)",
    )
    tu.add_argument(
        "--verify",
        type=count,
        default=VERIFY_TOP,
        metavar="N",
        help=f"then measure the N fastest configs again, {VERIFY_TIMES} times each in all, "
        f"and rank them by their median (default {VERIFY_TOP}; 0: no)",
    )
    tu.add_argument(
        "--knob",
        action="append",
        metavar="NAME=JSON-LIST",
        help="search only these values of a knob, e.g. --knob 'tile_k=[[8],[16]]' "
        "--knob 'double_buffer=[\"local\"]' (repeatable)",
    )
    tu.add_argument(
        "--log",
        help="the tuning log (default: tensorsched_tune.jsonl in the user's cache folder, "
        "printed); one tuner writes a log at a time",
    )
    tu.add_argument("--resume", action="store_true", help="skip configs already in the log")
    tu.add_argument("--device", help="P:D or part of a device name")
    tu.add_argument(
        "--timeout",
        type=positive_seconds,
        default=60.0,
        help="seconds per candidate, its "
        "compile included (PoCL compiles a kernel at its first launch)",
    )
    tu.add_argument(
        "--repeat",
        type=positive_int,
        default=5,
        help="timed runs per candidate, at most: "
        "it stops after 3 once they took 50 ms on the device",
    )
    tu.add_argument(
        "--build-workers",
        type=positive_int,
        help="processes that build candidates ahead of the one measured (default: one a "
        "core); several tuners on one host (one a GPU) each want their share: every "
        "process opens the device, and four pools of 64 took the first minute",
    )
    tu.add_argument("--seed", type=seed_int, default=0)
    tu.add_argument(
        "--awake",
        action="store_true",
        help="keep this host's cores from halting while tuning (a spinner at idle priority "
        "on each: ts.runtime.awake_cores), for a CPU device on a virtual machine, whose "
        "hypervisor may slow a core once it has halted (PoCL's threads sleep between kernels)",
    )
    tu.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="tune on a Dask cluster (the distributed extra): a scheduler's address "
        "(tcp://HOST:8786, workers started with 'tensorsched worker ADDRESS'), or 'local' "
        "for this host's cores; --device then names a device the workers hold, or several "
        "kinds to tune at once into one log (--device H200,A100)",
    )
    co = sub.add_parser("compare", help="tensorsched against the tuned ACL-style GEMM baseline")
    co.add_argument("kind", choices=["gemm", "conv2d"])
    co.add_argument("--shape", help="as for tune")
    co.add_argument("--shapes", help="gemm: headerless M,N,K,B CSV")
    co.add_argument("--layers", help="conv2d: the layer table CSV (../shared/data/...)")
    co.add_argument("--limit", type=positive_int, help="only the first N shapes of the file")
    co.add_argument("--template")
    _add_import(co)
    co.add_argument("--epilogue")
    co.add_argument(
        "--trials",
        type=positive_int,
        default=COMPARE_TRIALS,
        help=f"tensorsched candidates per shape (default {COMPARE_TRIALS}: about a minute for "
        "two small shapes on a CPU device)",
    )
    co.add_argument("--strategy", choices=["grid", "random"], default="random")
    co.add_argument(
        "--log", help="tensorsched's tuning log (default: in the user's cache folder, printed)"
    )
    co.add_argument(
        "--acl-dir",
        help="the ACL-style tuner's folder (default: acl_tuning in the user's cache folder)",
    )
    co.add_argument(
        "--acl-full",
        action="store_true",
        help="tune the ACL-style GEMM over its full search lists (about 90 configs; on a CPU "
        "device each compiles for about a second) instead of one config per strategy",
    )
    co.add_argument("--rounds", type=positive_int, default=5, help="side-by-side rounds")
    co.add_argument("--repeat", type=positive_int, default=5)
    co.add_argument("--timeout", type=positive_seconds, default=60.0)
    co.add_argument("--device")
    co.add_argument("--plot", help="write a PNG bar chart (needs matplotlib)")
    add_ir_parser(sub)
    so = sub.add_parser("source", help="write the best logged kernels as .cl + launch JSON")
    so.add_argument("--log", required=True)
    so.add_argument("--out", default=".", help="the folder for the .cl and .json files")
    so.add_argument("--force", action="store_true", help="overwrite files already in --out")
    so.add_argument("--device-name", help="only records of this device (as logged)")
    _add_import(so)
    add_net_parser(sub)
    add_worker_parser(sub)
    return p


COMMANDS: dict[str, Callable[[argparse.Namespace], None]] = {
    "devices": cmd_devices,
    "peak": cmd_peak,
    "tune": cmd_tune,
    "compare": cmd_compare,
    "source": cmd_source,
    "ir": cmd_ir,
    "net": cmd_net,
    "worker": cmd_worker,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tensorsched ARGV``; returns the exit status (2 for a mistake, with a message)."""
    args = make_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            # pyopencl's notice that a successful build logged something (PoCL does); the
            # text itself is printed with PYOPENCL_COMPILER_OUTPUT=1
            warnings.filterwarnings("ignore", message="Non-empty compiler output encountered")
            COMMANDS[args.command](args)
    except TensorschedError as exc:
        print(f"tensorsched: {exc}", file=sys.stderr)
        return 2
    return 0
