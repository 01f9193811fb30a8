"""Run a schedule on random inputs and compare every output with a float64 numpy reference.

Inputs are random and never zero (magnitudes in [0.25, 1), random signs); outputs are poisoned
before the run (NaN for floats, a sentinel for integers), so an element that no kernel wrote is
caught. One tolerance table (``TOL``), one random-input helper, one poisoning rule, for the tuner's
check, the benchmarks, the examples and the tests.
"""

from __future__ import annotations

import numpy as np

from ..ir.stmt import LoweredFunc
from ..ir.tensor import PlaceholderOp
from .build import build

INT_POISON = np.iinfo(np.int32).min + 7
TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 1e-2}


class NumericsMismatch(AssertionError):
    """A schedule computed other numbers than numpy (or left an output element unwritten)."""


def random_array(shape, dtype, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        mag = rng.uniform(0.25, 1.0, size=shape)
    elif dtype.kind in "iu":
        mag = rng.integers(1, 10, size=shape)
    else:
        return rng.integers(0, 2, size=shape).astype(dtype)
    return np.asarray(mag * rng.choice([-1, 1], size=shape)).astype(dtype)


def poisoned(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype=dtype)
    if dtype.kind in "iu":
        return np.full(shape, INT_POISON, dtype=dtype)
    return np.zeros(shape, dtype=dtype)


def compare(out, expected, dtype, name="output"):
    """Raise ``NumericsMismatch`` unless ``out`` matches ``expected`` within the dtype's
    tolerance (relative, and absolute relative to the largest expected magnitude)."""
    out = np.asarray(out)
    expected = np.asarray(expected, dtype=np.float64 if np.dtype(dtype).kind == "f" else None)
    if out.shape != expected.shape:
        raise NumericsMismatch(f"{name}: shape {out.shape} != {expected.shape}")
    if np.dtype(dtype).kind != "f":
        if (out == INT_POISON).any() or not np.array_equal(out, expected):
            raise NumericsMismatch(f"{name}: differs from numpy")
        return
    if np.isnan(out).any():
        raise NumericsMismatch(
            f"{name}: {int(np.isnan(out).sum())} of {out.size} elements were never written "
            f"(still NaN), first at {np.argwhere(np.isnan(out))[0].tolist()}"
        )
    rtol = TOL[str(np.dtype(dtype))]
    scale = max(float(np.max(np.abs(expected))) if expected.size else 1.0, 1.0)
    bad = ~np.isclose(out.astype(np.float64), expected, rtol=rtol, atol=rtol * scale)
    if bad.any():
        first = tuple(np.argwhere(bad)[0].tolist())
        raise NumericsMismatch(
            f"{name}: {int(bad.sum())} of {out.size} elements differ from "
            f"numpy, first at {list(first)}: {out[first]!r} != "
            f"{expected[first]!r}"
        )


def make_arrays(args, seed=0):
    """``(arrays, inputs, outputs)`` for the argument tensors: random inputs, poisoned
    outputs; ``outputs`` pairs each output tensor with its array."""
    rng = np.random.default_rng(seed)
    arrays, ins, outs = [], [], []
    for t in args:
        if isinstance(t.op, PlaceholderOp):
            a = random_array(t.shape, t.dtype, rng)
            ins.append(a)
        else:
            a = poisoned(t.shape, t.dtype)
            outs.append((t, a))
        arrays.append(a)
    return arrays, ins, outs


def check_numerics(s, args, ref, target="python", seed=0, name="fuzzed"):
    """Build schedule ``s`` (or a lowered function) with ``args`` for ``target``, run it on
    random inputs and compare each output with ``ref(*inputs)`` (float64 inputs; one array, or
    a tuple with one per output). Returns the module."""
    mod = (
        build(s, target=target)
        if isinstance(s, LoweredFunc)
        else build(s, args, target=target, name=name)
    )
    arrays, ins, outs = make_arrays(args, seed)
    saved = [a.copy() for a in ins]
    mod(*arrays)
    for a, before in zip(ins, saved):
        if not np.array_equal(a, before):
            raise NumericsMismatch("an input array was modified")
    expected = ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in ins])
    if len(outs) == 1:
        expected = (expected,)
    for (t, a), e in zip(outs, expected):
        compare(a, e, t.dtype, name=t.name)
    return mod
