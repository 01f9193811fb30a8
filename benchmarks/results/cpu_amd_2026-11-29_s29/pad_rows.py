"""The untuned pick of each CPU GEMM shape given, timed with and without the copy of B
(``pad_b``), side by side with numpy (``configs.py`` of session 28).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python \\
        benchmarks/results/cpu_amd_2026-11-29_s29/pad_rows.py 1,4096,4096 8,4096,4096 ...
"""

import json
import os
import subprocess
import sys

from tensorsched.tune.dispatch import predicted_config
from tensorsched.tune.task import Task

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, "..", "cpu_amd_2026-11-29_s28", "configs.py")
for shape in sys.argv[1:]:
    config = predicted_config(Task("gemm", "cpu", tuple(int(x) for x in shape.split(","))))
    texts = [json.dumps({**(config or {}), "pad_b": pad}) for pad in (True, False)]
    out = subprocess.run([sys.executable, CONFIGS, shape, *texts], capture_output=True, text=True)
    print(out.stdout + out.stderr, flush=True)
