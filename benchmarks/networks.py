"""End-to-end batch-1 inference of whole networks: tensorsched on an OpenCL device against
onnxruntime on the CPU, side by side in one run, same weights, same input.

For each network (VGG-16, ResNet-18, MobileNet-v1 at 224x224, seeded random weights; or
``--models`` names and .onnx paths) the network is built once (configs from ``--log`` where
given, else predicted from the shipped logs, else the templates' defaults), checked against
the float64 numpy reference, then timed: the wall-clock median of ``--repeat`` calls (input
copied in, output read back) and the sum of the kernels' device times (profiling events,
median per layer). onnxruntime runs the network written out as ONNX. The table gives the
speed-up of tensorsched over onnxruntime; ``--profile`` adds the per-layer table of the
slowest network.

    python benchmarks/networks.py [--device P:D] [--log tuned.jsonl] [--repeat 20]
        [--models vgg16,resnet18,mobilenet_v1] [--image-size 224] [--profile]
"""

import argparse
import datetime
import time

import numpy as np

from tensorsched.cli.net import (
    latency_ms,
    load_model,
    max_rel_error,
    onnxruntime_session,
)
from tensorsched.graph import build, run_reference
from tensorsched.runtime.table import print_table


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="vgg16,resnet18,mobilenet_v1")
    p.add_argument("--device", help="P:D or part of the OpenCL device's name")
    p.add_argument("--log", help="a tuning log (tensorsched net tune MODEL --log FILE)")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--image-size", type=int, help="built-in networks' image side (224)")
    p.add_argument("--profile", action="store_true", help="per-layer table of the slowest")
    args = p.parse_args()

    rows, slowest = [], None
    device_name = "?"
    for model in args.models.split(","):
        g = load_model(model, args.image_size)
        x = np.random.default_rng(0).standard_normal(g.tensors[g.inputs[0]].shape)
        x = x.astype(np.float32)
        ref = run_reference(g, x)[g.outputs[0]]
        t0 = time.perf_counter()
        net = build(g, device=args.device, log=args.log)
        built = time.perf_counter() - t0
        out = net(x)
        err = max_rel_error(out, ref)
        ms = latency_ms(lambda: net(x), args.repeat)
        prof = net.profile(x, repeat=max(3, args.repeat // 2))
        device_name = net.device.name if net.device is not None else "?"
        sess = onnxruntime_session(g)
        ort_ms, ort_err = float("nan"), float("nan")
        if sess is not None:
            feed = {g.inputs[0]: x}
            ort_err = max_rel_error(sess.run(None, feed)[0], ref)
            ort_ms = latency_ms(lambda: sess.run(None, feed), args.repeat)
        rows.append([
            g.name, f"{built:.1f}", net.kernels_per_run, f"{ms:.2f}", f"{prof.total_ms:.2f}",
            f"{ort_ms:.2f}", f"{ort_ms / ms:.2f}x", f"{err:.1e}", f"{ort_err:.1e}",
        ])  # fmt: skip
        if slowest is None or ms > slowest[0]:
            slowest = (ms, g.name, prof)
        print(f"{g.name}: done", flush=True)

    print(f"\ndevice: {device_name}; batch 1, fp32; median of {args.repeat}; "
          f"{datetime.date.today()}")  # fmt: skip
    head = ["network", "build s", "kernels", "tensorsched ms", "device ms", "onnxruntime ms",
            "speed-up", "max rel err", "ort rel err"]  # fmt: skip
    print_table(head, rows, "<>>>>>>>>")
    if args.profile and slowest is not None:
        print(f"\nper-layer profile of {slowest[1]} (the slowest):")
        print(slowest[2])


if __name__ == "__main__":
    main()
