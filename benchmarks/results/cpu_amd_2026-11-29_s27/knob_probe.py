"""Each shape's untuned config (``predicted_config``: its own best in the shipped log, or one
predicted from other shapes) with a boolean knob (``pad_a`` unless ``KNOB`` says) forced off
and on, against numpy, by the wall clock: three rounds, each config checked against numpy
into a NaN-poisoned output, 10 calls a block after a pause, medians (GFLOP/s).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE [KNOB=pad_b] .venv/bin/python knob_probe.py \
        512,512,2048 ...
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from side_by_side import side_by_side  # noqa: E402

from tensorsched.tune.dispatch import predicted_config  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

KNOB = os.environ.get("KNOB", "pad_a")
for arg in sys.argv[1:]:
    task = Task("gemm", "cpu", tuple(int(v) for v in arg.split(",")))
    config = predicted_config(task) or {}
    med = side_by_side(arg, {str(pad): {**config, KNOB: pad} for pad in (False, True)})
    shown = {k: v for k, v in config.items() if k in ("tile_y", "tile_x", "vec", "tile_k")}
    print(
        f"{arg:>14}  {KNOB} off {med['False']:5.0f}  on {med['True']:5.0f}  numpy"
        f" {med['numpy']:5.0f}  on/off {med['True'] / med['False']:.2f}  {shown}",
        flush=True,
    )
