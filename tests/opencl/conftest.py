"""Fixtures of the OpenCL tests: the device (the test is skipped when none can be found) and
the ``--update-golden`` switch (declared in the rootdir ``conftest.py``)."""

import numpy as np
import pytest

from tensorsched.runtime.device import DeviceError, current_device


@pytest.fixture(scope="session")
def ocl_device():
    """The OpenCL device the tests run on (``TS_DEVICE`` or the default); skip without one."""
    try:
        dev = current_device()
    except DeviceError as exc:
        pytest.skip(f"no OpenCL device: {exc}")
    except ImportError as exc:  # pyopencl missing or broken
        pytest.skip(f"pyopencl cannot be imported: {exc}")
    return dev


@pytest.fixture
def rng():
    return np.random.default_rng(20240607)


@pytest.fixture
def update_golden(request):
    try:
        return bool(request.config.getoption("--update-golden"))
    except ValueError:  # the rootdir conftest was not loaded
        return False
