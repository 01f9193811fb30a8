"""Session 28's ``pocl_floor.py`` (a synchronous call of a kernel that does nothing) run with
every core kept from halting (``ts.runtime.awake_cores``), to set beside a plain run.

    .venv/bin/python benchmarks/results/cpu_amd_2026-11-29_s31/pocl_floor_awake.py
"""

import os
import runpy

import tensorsched as ts

FLOOR = os.path.join(os.path.dirname(__file__), "..", "cpu_amd_2026-11-29_s28", "pocl_floor.py")

with ts.runtime.awake_cores():
    runpy.run_path(FLOOR, run_name="__main__")
