"""The ``tensorsched`` command line: ``devices``, ``peak``, ``tune`` and ``source``."""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import TensorschedError


def cmd_devices(args):
    from ..runtime.device import all_devices

    rows = []
    for d in all_devices():
        cl = d.cl_device
        err = d.probe()
        rows.append(
            [
                f"{d.platform_index}:{d.device_index}",
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
    _table(head, rows)
    print("\nchoose one with TS_DEVICE=<id> or TS_DEVICE=<part of its name>")


def cmd_peak(args):
    from ..runtime.device import current_device, find_device
    from ..runtime.peak import measure_bandwidth, measure_compute

    dev = find_device(args.device) if args.device else current_device()
    print(f"device: {dev.name} ({dev.platform_name})")
    rows = []
    for r in measure_compute(dev, repeat=args.repeat) + [
        measure_bandwidth(dev, repeat=args.repeat)
    ]:
        rows.append([r.what, f"{r.value:.1f} {r.unit}", "ok" if r.checked else "WRONG RESULT"])
    _table(["kernel", "median", "result check"], rows)


def _parse_ints(text, what):
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise TensorschedError(f"{what} must be comma-separated integers, got '{text}'") from None


def _tasks(args):
    """The tasks a ``tune`` command asks for."""
    import csv

    from ..tune.task import Task

    if getattr(args, "expr", None):
        return [
            Task(
                "expr", args.template or "generic", (), args.dtype, (), args.expr, args.shape or ""
            )
        ]
    if args.kind is None:
        raise TensorschedError("give the operator (gemm or conv2d) or --expr")
    template = args.template or _default_template(args.kind, args.device)
    epilogue = tuple(x for x in (args.epilogue or "").split(",") if x)
    shapes = []
    if args.shape:
        shapes.append(_parse_ints(args.shape, "--shape"))
    if args.shapes:
        try:
            with open(args.shapes, newline="") as f:
                rows = list(csv.reader(f))
        except OSError as exc:
            raise TensorschedError(
                f"cannot read --shapes {args.shapes}: {exc.strerror or exc}"
            ) from None
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
    seen, tasks = set(), []
    for sh in shapes:
        t = Task(args.kind, template, sh, epilogue=epilogue)
        if t.key() not in seen:
            seen.add(t.key())
            tasks.append(t)
    return tasks


def _default_template(kind, device):
    from ..runtime.device import current_device, find_device

    dev = find_device(device) if device else current_device()
    if kind == "gemm":
        return "gpu_tiled" if dev.is_gpu else "cpu"
    return "spatial_pack"


def _restrict(items):
    """``--knob NAME=JSON-LIST`` options as ``{name: [values]}`` (a split's value is a list)."""
    import json

    out = {}
    for item in items or ():
        name, eq, values = item.partition("=")
        try:
            parsed = json.loads(values) if eq else None
        except json.JSONDecodeError as exc:
            parsed, why = None, f": {exc}"
        else:
            why = ""
        if not name or not isinstance(parsed, list):
            raise TensorschedError(
                f"--knob {item!r}: expected NAME=JSON-LIST, e.g. tile_k=[[8],[16]] "
                f"or double_buffer='[\"local\"]'{why}"
            )
        out[name] = parsed
    return out


def cmd_tune(args):
    from ..tune.tuner import tune

    rows = []
    for task in _tasks(args):
        res = tune(
            task,
            args.log,
            strategy=args.strategy,
            trials=args.trials,
            resume=args.resume,
            device=args.device,
            timeout=args.timeout,
            repeat=args.repeat,
            seed=args.seed,
            restrict=_restrict(args.knob),
        )
        b = res.best
        counts = ", ".join(f"{k} {v}" for k, v in sorted(res.counts.items()))
        rows.append(
            [
                str(task),
                f"{b.gflops:.1f}" if b else "-",
                f"{b.device_ms:.3f}" if b else "-",
                _fmt_config(b.config) if b else "no correct kernel",
                counts,
                f"{res.rate:.0f}",
            ]
        )
        print(
            f"{task}: {res.measured} configs in {res.seconds:.1f} s = {res.rate:.1f} "
            f"configs/min ({res.on_device} run on the device: "
            f"{res.on_device / res.seconds * 60 if res.seconds else 0:.1f}/min)"
        )
    print()
    _table(["task", "best GFLOP/s", "device ms", "best config", "trials", "configs/min"], rows)
    print(f"\nlog: {os.path.abspath(args.log)}")


def cmd_compare(args):
    from ..baselines.compare import compare, plot, print_table
    from ..runtime.device import current_device, find_device

    if args.layers:
        args.shapes = args.layers
    tasks = _tasks(args)
    if args.limit:
        tasks = tasks[: args.limit]
    rows = compare(
        tasks,
        args.log,
        args.acl_dir,
        trials=args.trials,
        strategy=args.strategy,
        rounds=args.rounds,
        repeat=args.repeat,
        device=args.device,
        timeout=args.timeout,
    )
    dev = find_device(args.device) if args.device else current_device()
    print_table(rows, dev.name)
    print(
        f"\nlogs: {os.path.abspath(args.log)} (tensorsched), {os.path.abspath(args.acl_dir)} "
        "(ACL-style)"
    )
    if args.plot:
        plot(rows, args.plot)
        print(f"plot: {args.plot}")


def _fmt_config(config):
    return " ".join(
        f"{k}={'x'.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in config.items()
    )


def cmd_source(args):
    import json
    import re

    from ..codegen.opencl import emit_opencl
    from ..schedules.lower import lower
    from ..tune.log import best_records, read_log
    from ..tune.task import Task

    best = best_records(read_log(args.log), device=args.device_name)
    if not best:
        raise TensorschedError(
            f"{args.log} has no correct trial"
            f"{' on ' + args.device_name if args.device_name else ''}"
        )
    os.makedirs(args.out, exist_ok=True)
    for rec in best.values():
        task = Task.from_dict(rec.task)
        s, targs, _ = task.instantiate(rec.config)
        name = "_".join(
            [task.kind, task.template, "x".join(map(str, task.shape)), *task.epilogue]
            + ([task.dtype] if task.dtype != "float32" else [])
        )
        name = re.sub(r"\W", "_", name)  # 'pkg.module:function' templates: no ':' in names
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
                {"name": b.name, "dtype": b.dtype, "shape": list(b.shape)} for b in src.temps
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


def add_ir_parser(subparsers):
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


def schedule_text(expr, shape, dtype="float32", generic=False):
    """``(schedule, args)`` for tensor-expression text: the default schedule of its last
    statement (or the generic template's defaults); args are the inputs then the output."""
    from ..ir.te_text import parse_expr
    from ..ir.tensor import PlaceholderOp
    from ..schedules.schedule import create_schedule

    if generic:
        from ..ops.space import Config
        from ..ops.templates.generic import generic as template

        return template(Config(), expr, shape, dtype=dtype)
    tensors = list(parse_expr(expr, shape, dtype).values())
    out = tensors[-1]
    args = [t for t in tensors if isinstance(t.op, PlaceholderOp)] + [out]
    return create_schedule(out.op), args


def cmd_ir(args):
    from ..schedules.lower import lower

    s, targs = schedule_text(args.expr, args.shape, args.dtype, args.generic)
    func = lower(s, targs, name=args.name)
    if args.opencl:
        from ..codegen.opencl import emit_opencl

        print(emit_opencl(func).text)
    else:
        print(func.script() if args.func else func)


def _table(head, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    fmt = " | ".join(f"{{:<{w}}}" for w in widths)
    print(fmt.format(*head))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(fmt.format(*r))


def main(argv=None):
    p = argparse.ArgumentParser(prog="tensorsched", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("devices", help="list OpenCL devices and whether they build a probe kernel")
    pk = sub.add_parser("peak", help="clpeak-style float/float2..float16 GFLOP/s and bandwidth")
    pk.add_argument(
        "--device",
        help="P:D or part of a device name (default: TS_DEVICE, else the first GPU, else the CPU)",
    )
    pk.add_argument("--repeat", type=int, default=5)
    tu = sub.add_parser("tune", help="grid-search a template's knobs on the device")
    tu.add_argument("kind", nargs="?", choices=["gemm", "conv2d"])
    tu.add_argument(
        "--shape",
        help="M,N,K for gemm; N,CI,H,W,CO,KH,KW,stride,pad for conv2d; "
        "the extents (i=64,j=64,k=64) for --expr",
    )
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
        "device type, spatial_pack for conv2d)",
    )
    tu.add_argument("--epilogue", help="comma-separated: bias,relu,sigmoid")
    tu.add_argument("--trials", type=int, help="candidates to measure per shape (default: all)")
    tu.add_argument("--strategy", choices=["grid", "random"], default="grid")
    tu.add_argument(
        "--knob",
        action="append",
        metavar="NAME=JSON-LIST",
        help="search only these values of a knob, e.g. --knob 'tile_k=[[8],[16]]' "
        "--knob 'double_buffer=[\"local\"]' (repeatable)",
    )
    tu.add_argument("--log", default="tensorsched_tune.jsonl")
    tu.add_argument("--resume", action="store_true", help="skip configs already in the log")
    tu.add_argument("--device", help="P:D or part of a device name")
    tu.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds per candidate, its "
        "compile included (PoCL compiles a kernel at its first launch)",
    )
    tu.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="timed runs per candidate, at most: "
        "it stops after 3 once they took 50 ms on the device",
    )
    tu.add_argument("--seed", type=int, default=0)
    co = sub.add_parser("compare", help="tensorsched against the tuned ACL-style GEMM baseline")
    co.add_argument("kind", choices=["gemm", "conv2d"])
    co.add_argument("--shape", help="as for tune")
    co.add_argument("--shapes", help="gemm: headerless M,N,K,B CSV")
    co.add_argument("--layers", help="conv2d: the layer table CSV (../shared/data/...)")
    co.add_argument("--limit", type=int, help="only the first N shapes of the file")
    co.add_argument("--template")
    co.add_argument("--epilogue")
    co.add_argument("--trials", type=int, default=40, help="tensorsched candidates per shape")
    co.add_argument("--strategy", choices=["grid", "random"], default="random")
    co.add_argument("--log", default="tensorsched_tune.jsonl")
    co.add_argument("--acl-dir", default="acl_tuning", help="the ACL-style tuner's folder")
    co.add_argument("--rounds", type=int, default=5, help="side-by-side rounds")
    co.add_argument("--repeat", type=int, default=5)
    co.add_argument("--timeout", type=float, default=60.0)
    co.add_argument("--device")
    co.add_argument("--plot", help="write a PNG bar chart (needs matplotlib)")
    add_ir_parser(sub)
    so = sub.add_parser("source", help="write the best logged kernels as .cl + launch JSON")
    so.add_argument("--log", required=True)
    so.add_argument("--out", default=".")
    so.add_argument("--device-name", help="only records of this device (as logged)")
    args = p.parse_args(argv)
    try:
        {
            "devices": cmd_devices,
            "peak": cmd_peak,
            "tune": cmd_tune,
            "compare": cmd_compare,
            "source": cmd_source,
            "ir": cmd_ir,
        }[args.command](args)
    except TensorschedError as exc:
        print(f"tensorsched: {exc}", file=sys.stderr)
        return 2
    return 0
