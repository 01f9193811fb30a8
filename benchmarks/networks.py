"""End-to-end batch-1 inference of whole networks, every engine side by side in one run, same
weights, same input: tensorsched on an OpenCL device (fp32, and with ``--fp16`` its half-storage
build), the ACL-style network (every conv as im2col + the tuned ACL-style GEMM, depthwise as a
plain direct kernel, as seed 003 compares), onnxruntime on the CPU, and torch eager (cuDNN, fp32,
TF32 off) where torch can use a CUDA GPU.

For each network (VGG-16, ResNet-18, MobileNet-v1 at 224x224, seeded random weights; or
``--models`` names and .onnx paths) each engine is built once (tensorsched's configs from
``--log`` where given, else predicted from the shipped logs, else the templates' defaults; the
ACL-style GEMMs tuned by ACL's tuner into ``--acl-dir``, resumable), checked against the float64
numpy reference (max |out - ref| / max |ref|: the fp16 row is half storage's accuracy), then
timed: the wall-clock median of ``--repeat`` calls (input copied in, output read back) and, for
tensorsched's engines, the sum of the kernels' device times (profiling events, median per
layer). The summary gives tensorsched's speed-up over each engine (> 1: tensorsched faster);
``--profile`` adds the per-layer tables of the slowest network (tensorsched's, and its fp16
and ACL-style builds').

    python benchmarks/networks.py [--device P:D] [--log tuned.jsonl] [--repeat 50] [--fp16]
        [--acl-dir DIR] [--acl-configs N | --acl-lists DIR] [--no-acl]
        [--models vgg16,resnet18,mobilenet_v1] [--image-size 224] [--profile]

ACL-style tuning cost: every config of the shipped search lists (92) on every distinct conv GEMM
shape of the networks (35 over the three); ``--acl-configs N`` takes the first N of each list,
``--acl-lists DIR`` the search lists an earlier tuning saved (e.g. benchmarks/gpu/logs/acl, the
H200's winners on four large GEMMs).
"""

import argparse
import datetime
import tempfile

from tensorsched.cli.net import BENCH_HEAD, bench_network, bench_table, load_model
from tensorsched.runtime.table import print_table

# engine -> its short name in the summary
ENGINES = {"tensorsched fp16": "fp16", "ACL-style": "ACL", "onnxruntime": "ort",
           "torch eager (cuDNN)": "torch"}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="vgg16,resnet18,mobilenet_v1")
    p.add_argument("--device", help="P:D or part of the OpenCL device's name")
    p.add_argument("--log", help="a tuning log (tensorsched net tune MODEL --log FILE)")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--image-size", type=int, help="built-in networks' image side (224)")
    p.add_argument("--fp16", action="store_true", help="add tensorsched's fp16-storage build")
    p.add_argument("--acl-dir", help="ACL-style tuning results (default: a fresh temp folder)")
    p.add_argument("--acl-configs", type=int, help="first N configs of each ACL search list")
    p.add_argument("--acl-lists", help="ACL search lists saved by an earlier tuning (folder)")
    p.add_argument("--no-acl", action="store_true", help="leave the ACL-style network out")
    p.add_argument("--no-torch", action="store_true", help="leave torch (CUDA) out")
    p.add_argument("--profile", action="store_true", help="per-layer table of the slowest")
    args = p.parse_args()

    acl_dir = None if args.no_acl else (args.acl_dir or tempfile.mkdtemp(prefix="acl_net_"))
    rows, summary, slowest = [], [], None
    for model in args.models.split(","):
        g = load_model(model, args.image_size)
        found, profiles = bench_network(
            g, args.device, args.log, args.repeat, True, args.fp16, acl_dir, args.acl_configs,
            args.acl_lists, not args.no_torch, progress=False,
        )  # fmt: skip
        rows += found
        ts = next(r for r in found if r.engine == "tensorsched")
        by = {r.engine: r for r in found}
        line = [g.name, f"{ts.built_s:.1f}", f"{ts.ms:.2f}", f"{ts.device_ms:.2f}"]
        for engine in ENGINES:
            r = by.get(engine)
            line += [f"{r.ms:.2f}", f"{r.ms / ts.ms:.2f}x"] if r else ["-", "-"]
        fp16 = by.get("tensorsched fp16")
        line += [f"{ts.error:.1e}", f"{fp16.error:.1e}" if fp16 else "-"]
        summary.append(line)
        if slowest is None or ts.ms > slowest[0]:
            slowest = (ts.ms, g.name, profiles)
        print(f"{g.name}: done", flush=True)

    device = next((r.device for r in rows if r.engine == "tensorsched"), "?")
    print(f"\nOpenCL device: {device}; batch 1, fp32; wall-clock median of {args.repeat} calls "
          f"(input in, output back); {datetime.date.today()}")  # fmt: skip
    if acl_dir:
        print(f"ACL-style tuning results: {acl_dir}")
    print_table(BENCH_HEAD, bench_table(rows), "<<<>>>>")
    head = ["network", "build s", "tensorsched ms", "device ms"]
    for short in ENGINES.values():
        head += [f"{short} ms", f"ts/{short}"]
    head += ["ts rel err", "fp16 rel err"]
    print("\nspeed-up of tensorsched (fp32) over each engine (> 1: tensorsched faster):")
    print_table(head, summary, "<" + ">" * (len(head) - 1))
    if args.profile and slowest is not None:
        for engine, prof in slowest[2].items():
            print(f"\nper-layer profile of {slowest[1]} (the slowest), {engine}:")
            print(prof)


if __name__ == "__main__":
    main()
