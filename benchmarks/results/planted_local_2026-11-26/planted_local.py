"""Trials the model strategy needs to reach the planted optimum of
``tests/test_model_search.py``, with and without a neighbour of the fastest trials in every
batch (``model.LOCAL``), seeds 0-7:

    .venv/bin/python benchmarks/results/planted_local_2026-11-26/planted_local.py
"""

import os
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import test_model_search as planted  # noqa: E402

from tensorsched.tune import model  # noqa: E402
from tensorsched.tune.task import Task  # noqa: E402

task = Task("gemm", "gemm_planted_cost", (256, 256, 16))
for local in (0, 1):
    model.LOCAL = local
    trials = [planted.model_trials_to_optimum(task, seed, limit=800) for seed in range(8)]
    print(f"LOCAL={local}: trials to the optimum {trials}, median {np.median(trials)}")
