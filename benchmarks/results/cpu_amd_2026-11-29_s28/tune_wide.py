"""Model search on the CPU GEMM template restricted to one or two rows a work-item, wide
column tiles (and the widest register tile, 64 columns), 16-wide vectors and K steps of 4 or
8: the matrix-vector products' corner of the space, which two minutes of unrestricted search
measured ten times at 1x4096x4096, never with these K steps and vectors. Appends to (resumes)
``<logs>/gemm_MxNxK.jsonl``.

    .venv/bin/python benchmarks/results/cpu_amd_2026-11-29_s28/tune_wide.py LOGS 60 1,3000,6000 ...
"""

import os
import sys

from tensorsched.tune.task import Task
from tensorsched.tune.tuner import tune

RESTRICT = {
    "tile_y": [(1, 1), (1, 2), (2, 1)],
    "tile_x": [(t, w) for t in (1, 2, 4) for w in (64, 256, 1024, 2048)],
    "vec": [16],
    "tile_k": [(4,), (8,)],
}

if __name__ == "__main__":
    logs, seconds, shapes = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    for text in shapes:
        shape = tuple(int(v) for v in text.split(","))
        log = os.path.join(logs, "gemm_{}x{}x{}.jsonl".format(*shape))
        res = tune(Task("gemm", "cpu", shape), log, trials=100000, time_s=seconds,
                   resume=True, progress=False, restrict=RESTRICT)  # fmt: skip
        print(text, res.best)
