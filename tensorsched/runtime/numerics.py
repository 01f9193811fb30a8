"""Run a schedule on random inputs and compare every output with a float64 numpy reference.

Inputs are random and never zero (magnitudes in [0.25, 1), random signs); outputs are poisoned
before the run (NaN for floats, a sentinel for integers), so an element that no kernel wrote is
caught. One tolerance table (``TOL``), one random-input helper, one poisoning rule, for the tuner's
check, the benchmarks, the examples and the tests.

``TOL[dtype]`` is the relative tolerance of a floating-point result against the float64
reference; an element may also differ by ``TOL[dtype]`` times the largest expected magnitude
(``compare``), or the whole result by that much in the max norm (``relative_error``). float32:
1e-5, about 84 units in the last place; float16: 1e-2, about 10; float64: 1e-12, about 4500
-- already looser, counted in units in the last place, than float32's, which covers a long
reduction summed in another order (split-K, vector lanes), yet 1e-10 (the tuner's former value)
would admit a kernel that keeps a float64 intermediate in float32 for part of its range.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from ..ir.stmt import LoweredFunc
from ..ir.tensor import PlaceholderOp, Tensor
from ..schedules.schedule import Schedule
from .build import PythonModule, build
from .module import OpenCLModule

INT_POISON = np.iinfo(np.int32).min + 7
TOL = {"float16": 1e-2, "float32": 1e-5, "float64": 1e-12}


class NumericsMismatch(AssertionError):
    """A schedule computed other numbers than numpy (or left an output element unwritten)."""


def tolerance(dtype: DTypeLike) -> float:
    """The relative tolerance of ``dtype`` (``TOL``; float32's for a dtype it does not list)."""
    return TOL.get(str(np.dtype(dtype)), TOL["float32"])


def random_array(
    shape: Sequence[int], dtype: DTypeLike, rng: np.random.Generator, positive: bool = False
) -> np.ndarray:
    """Random values of ``dtype`` with no zeros: magnitudes in [0.25, 1) for floats, 1..9 for
    integers, random signs unless ``positive``; booleans are random."""
    dtype = np.dtype(dtype)
    shape = tuple(int(x) for x in shape)
    mag: np.ndarray
    if dtype.kind == "f":
        mag = rng.uniform(0.25, 1.0, size=shape)
    elif dtype.kind in "iu":
        mag = rng.integers(1, 10, size=shape)
    else:
        return rng.integers(0, 2, size=shape).astype(dtype)
    if not positive and dtype.kind != "u":
        mag = mag * rng.choice([-1, 1], size=shape)
    return np.asarray(mag).astype(dtype)


def relative_error(out: Any, expected: Any) -> float:
    """``max |out - expected| / max |expected|`` in float64 (``inf`` when ``out`` has a NaN,
    an element no kernel wrote): compare it with ``tolerance(dtype)``."""
    out = np.asarray(out, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if out.shape != expected.shape or np.isnan(out).any():
        return float("inf")
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    return float(np.max(np.abs(out - expected), initial=0.0)) / (scale or 1.0)


def poisoned(shape: Sequence[int], dtype: DTypeLike) -> np.ndarray:
    """An array of ``shape`` that marks unwritten elements: NaN, ``INT_POISON`` or False."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype=dtype)
    if dtype.kind in "iu":
        return np.full(shape, INT_POISON, dtype=dtype)
    return np.zeros(shape, dtype=dtype)


def compare(out: Any, expected: Any, dtype: DTypeLike, name: str = "output") -> None:
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
    rtol = tolerance(dtype)
    scale = max(float(np.max(np.abs(expected))) if expected.size else 1.0, 1.0)
    bad = ~np.isclose(out.astype(np.float64), expected, rtol=rtol, atol=rtol * scale)
    if bad.any():
        first = tuple(np.argwhere(bad)[0].tolist())
        raise NumericsMismatch(
            f"{name}: {int(bad.sum())} of {out.size} elements differ from "
            f"numpy, first at {list(first)}: {out[first]!r} != "
            f"{expected[first]!r}"
        )


def make_arrays(
    args: Sequence[Tensor],
    seed: int | np.random.Generator = 0,
    positive: bool = False,
    inputs: Mapping[Tensor | str, Any] | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray], list[tuple[Tensor, np.ndarray]]]:
    """``(arrays, inputs, outputs)`` for the argument tensors: random inputs (or the arrays
    ``inputs`` maps a placeholder or its name to), poisoned outputs; ``outputs`` pairs each
    output tensor with its array. ``seed``: an int or a numpy ``Generator``."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    given = dict(inputs or {})
    arrays: list[np.ndarray] = []
    ins: list[np.ndarray] = []
    outs: list[tuple[Tensor, np.ndarray]] = []
    for t in args:
        if isinstance(t.op, PlaceholderOp):
            fixed = given.get(t, given.get(t.name))
            a = (
                random_array(t.shape, t.dtype, rng, positive)
                if fixed is None
                else np.asarray(fixed, dtype=t.dtype)
            )
            ins.append(a)
        else:
            a = poisoned(t.shape, t.dtype)
            outs.append((t, a))
        arrays.append(a)
    return arrays, ins, outs


def check_numerics(
    s: Schedule | LoweredFunc,
    args: Sequence[Tensor] | None,
    ref: Callable[..., Any],
    target: str = "python",
    seed: int = 0,
    name: str = "fuzzed",
) -> PythonModule | OpenCLModule:
    """Build schedule ``s`` (or a lowered function) with ``args`` for ``target``, run it on
    random inputs and compare each output with ``ref(*inputs)`` (float64 inputs; one array, or
    a tuple with one per output). Returns the module."""
    mod = (
        build(s, target=target)
        if isinstance(s, LoweredFunc)
        else build(s, args, target=target, name=name)
    )
    arrays, ins, outs = make_arrays(list(args or ()), seed)
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
