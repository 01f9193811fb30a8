"""The GPU search's trials in a 15 s budget per conv task (the H100 runs of 2026-11-25):
``python dbg_tune.py LOG`` tunes two VGG-16 conv tasks with the model strategy, from a copy of
LOG each, with 16 build processes (the default there) and with 4, and prints each run's counts
and ``TuneResult.stats``."""

import os
import shutil
import sys
import time

from tensorsched.tune import tuner
from tensorsched.tune.task import Task

SHAPES = [(1, 64, 112, 112, 128, 3, 3, 1, 1), (1, 512, 14, 14, 512, 3, 3, 1, 1)]


def main() -> None:
    log_in = sys.argv[1]
    for shape in SHAPES:
        for nb in (None, 4):
            task = Task("conv2d", "implicit_gemm", shape, "float32", ("bias", "relu"))
            log = os.path.join(os.environ["OUT"], f"dbg_{shape[1]}_{nb}.jsonl")
            shutil.copy(log_in, log)
            t0 = time.time()
            res = tuner.tune(
                task, log, strategy="model", time_s=15, n_build=nb, resume=True, progress=False
            )
            stats = {k: round(v, 2) for k, v in res.stats.items()}
            print(shape, "n_build", nb, "wall", round(time.time() - t0, 1), res.counts, stats)


if __name__ == "__main__":
    main()
