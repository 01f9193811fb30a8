"""Fixtures of the core test suite. The helpers themselves live in ``ts_check.py``
(``check(s, args, ref_fn)`` builds with the python target, fills inputs with seeded random
non-zero data, poisons the outputs with NaN and compares with a float64 numpy reference)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))  # ts_check, seed_conv

import ts_check  # noqa: E402
from roundtrip_hook import ir_text_roundtrip  # noqa: E402,F401  (autouse: lowerings round-trip)

from tensorsched.config import config  # noqa: E402

config.verify = True  # check the IR between lowering passes (as TS_VERIFY=1 does)


@pytest.fixture
def check():
    """The ``ts_check.check`` helper, for tests that prefer a fixture to an import."""
    return ts_check.check


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(scope="module")
def device():
    """The OpenCL device in use; a test that takes it is skipped where there is none."""
    from tensorsched.runtime.device import DeviceError, current_device

    try:
        return current_device()
    except (DeviceError, ImportError) as exc:
        pytest.skip(f"no OpenCL device: {exc}")
