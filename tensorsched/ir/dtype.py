"""Data types are plain strings: ``"float32"``, ``"float16"``, ``"int32"``, ``"bool"``.

A vector type appends the lane count: ``"float32x4"``. Promotion follows C: any float beats any
integer, and the wider float wins.

Integers. A size, extent, factor or constant may be any integer type (Python ``int``, numpy's
``np.int64`` ...): ``to_int`` turns it into a Python ``int``, the one way the package reads
one. Index arithmetic in the IR is exact (``int32`` index expressions hold Python ints); every
extent and every buffer's element count must fit in ``int64`` (``INT64_MAX``), and code
generation indexes a kernel with 64-bit ``long`` where its buffers or loops exceed
``INT32_MAX``, with 32-bit ``int`` otherwise.
"""

import numbers
import operator
from functools import cache

from ..errors import ComputeError

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
_INT_RANGE = {"int32": (-(2**31), INT32_MAX), "int64": (-(2**63), INT64_MAX), "bool": (0, 1)}

SCALAR_TYPES = ("float32", "float16", "float64", "int32", "int64", "bool")
_RANK = {"bool": 0, "int32": 1, "int64": 2, "float16": 3, "float32": 4, "float64": 5}


@cache
def element(dtype: str) -> str:
    """The scalar type of a (possibly vector) dtype: ``float32x4`` -> ``float32``."""
    return dtype.split("x")[0]


@cache
def lanes(dtype: str) -> int:
    parts = dtype.split("x")
    return int(parts[1]) if len(parts) > 1 else 1


@cache
def with_lanes(dtype: str, n: int) -> str:
    base = element(dtype)
    return base if n == 1 else f"{base}x{n}"


@cache
def is_float(dtype: str) -> bool:
    return element(dtype).startswith("float")


@cache
def is_int(dtype: str) -> bool:
    return element(dtype).startswith("int")


def is_bool(dtype: str) -> bool:
    return element(dtype) == "bool"


def check_dtype(dtype: str, where: str) -> str:
    if dtype not in SCALAR_TYPES:
        raise ComputeError(
            f"{where}: unknown dtype '{dtype}'; use one of {', '.join(SCALAR_TYPES)}"
        )
    return dtype


def promote(a: str, b: str) -> str:
    """The dtype of ``a op b`` for scalar dtypes ``a`` and ``b``."""
    ea, eb = element(a), element(b)
    base = ea if _RANK[ea] >= _RANK[eb] else eb
    return with_lanes(base, max(lanes(a), lanes(b)))


NUMPY = {
    "float32": "float32",
    "float16": "float16",
    "float64": "float64",
    "int32": "int32",
    "int64": "int64",
    "bool": "bool",
}


_BYTES = {"float32": 4, "float16": 2, "float64": 8, "int32": 4, "int64": 8, "bool": 1}


def itemsize(dtype: str) -> int:
    """Bytes of one value of ``dtype`` (a vector's: its lanes'), as numpy stores it."""
    return _BYTES[element(dtype)] * lanes(dtype)


def to_int(value: object) -> int | None:
    """``value`` as a Python ``int`` when it is an integer (``int``, a numpy integer, any
    ``numbers.Integral``), else None; a ``bool`` is not an integer here."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return None
    return operator.index(value)


def fits(value: int, dtype: str) -> bool:
    """Whether the integer ``value`` is representable in the integer dtype ``dtype``."""
    lo, hi = _INT_RANGE[element(dtype)]
    return lo <= value <= hi
