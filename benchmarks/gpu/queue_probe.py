"""A network's call on the queue without profiling (``Device.run_queue``, what ``Net.__call__``
uses) against the same call on the profiling queue, and torch eager, alternately in one
process: wall-clock medians of ``latency_ms`` (input in, output back), three blocks each:

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/queue_probe.py [--repeat 50]
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from tensorsched.baselines.torch_net import TorchNet, torch_device  # noqa: E402
from tensorsched.cli.net import _image, latency_ms, load_model  # noqa: E402
from tensorsched.graph.executor import build  # noqa: E402
from tensorsched.graph.reference import run_reference  # noqa: E402
from tensorsched.runtime.numerics import relative_error  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--repeat", type=int, default=50)
p.add_argument("--models", default="vgg16,resnet18,mobilenet_v1")
args = p.parse_args()
for model in args.models.split(","):
    g = load_model(model)
    x = _image(g, None)
    ref = run_reference(g, x)[g.outputs[0]]
    net = build(g)
    dev = net.device
    plain = dev.run_queue
    where = torch_device("cuda")
    tnet = TorchNet(g, where) if where is not None else None
    times = {"run queue": [], "profiling queue": [], "torch": []}
    errs = {}
    for _ in range(3):
        for name in times:
            if name == "torch":
                if tnet is not None:
                    times[name].append(latency_ms(lambda: tnet(x), args.repeat))
                continue
            dev._run_queue = plain if name == "run queue" else dev.queue
            errs[name] = relative_error(net(x), ref)
            times[name].append(latency_ms(lambda: net(x), args.repeat))
    dev._run_queue = plain
    med = {k: statistics.median(v) for k, v in times.items() if v}
    line = f"{g.name}: " + "  ".join(f"{k} {v:.3f} ms" for k, v in med.items())
    if "torch" in med:
        line += "  | torch / run queue {:.2f}x, torch / profiling queue {:.2f}x".format(
            med["torch"] / med["run queue"], med["torch"] / med["profiling queue"]
        )
    print(line, " errors", {k: f"{v:.1e}" for k, v in errs.items()})
