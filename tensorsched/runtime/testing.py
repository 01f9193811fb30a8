"""``ts.testing``: the result check of TVM's tutorials and tests (``tvm.testing.assert_allclose``),
so that programs ported from TVM run unchanged."""

from __future__ import annotations

from typing import Any

import numpy as np


def assert_allclose(actual: Any, desired: Any, rtol: float = 1e-7, atol: float = 1e-7) -> None:
    """Raise ``AssertionError`` unless ``actual`` and ``desired`` (numpy arrays, ``ts.nd``
    arrays or anything ``np.asarray`` takes) have the same shape and agree elementwise within
    ``atol + rtol * |desired|`` (TVM's defaults: both 1e-7)."""
    got, want = np.asarray(actual), np.asarray(desired)
    if got.shape != want.shape:
        raise AssertionError(f"assert_allclose: shapes differ, {got.shape} against {want.shape}")
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, verbose=True)
