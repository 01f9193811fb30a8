"""The ``tensorsched`` command line: ``devices`` and ``peak`` (more commands come with the tuner)."""
from __future__ import annotations

import argparse
import sys

from .errors import TensorschedError


def cmd_devices(args):
    from .runtime.device import all_devices
    rows = []
    for d in all_devices():
        cl = d.cl_device
        err = d.probe()
        rows.append([f"{d.platform_index}:{d.device_index}", d.platform_name, d.name,
                     str(cl.max_compute_units), f"{cl.max_clock_frequency} MHz",
                     f"{cl.local_mem_size // 1024} KiB", str(cl.max_work_group_size),
                     "yes" if d.has_fp16 else "no", "yes" if cl.image_support else "no",
                     "yes" if err is None else f"no ({err})"])
    head = ["id", "platform", "device", "CUs", "clock", "local mem", "max wg", "fp16", "images",
            "probe builds"]
    _table(head, rows)
    print("\nchoose one with TS_DEVICE=<id> or TS_DEVICE=<part of its name>")


def cmd_peak(args):
    from .runtime.device import current_device, find_device
    from .runtime.peak import measure_bandwidth, measure_compute
    dev = find_device(args.device) if args.device else current_device()
    print(f"device: {dev.name} ({dev.platform_name})")
    rows = []
    for r in measure_compute(dev, repeat=args.repeat) + [measure_bandwidth(dev, repeat=args.repeat)]:
        rows.append([r.what, f"{r.value:.1f} {r.unit}", "ok" if r.checked else "WRONG RESULT"])
    _table(["kernel", "median", "result check"], rows)


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
    pk.add_argument("--device", help="P:D or part of a device name (default: TS_DEVICE, else "
                    "the first GPU, else the CPU)")
    pk.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    try:
        {"devices": cmd_devices, "peak": cmd_peak}[args.command](args)
    except TensorschedError as exc:
        print(f"tensorsched: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
