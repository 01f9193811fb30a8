"""Data types are plain strings: ``"float32"``, ``"float16"``, ``"int32"``, ``"bool"``.

A vector type appends the lane count: ``"float32x4"``. Promotion follows C: any float beats any
integer, and the wider float wins.
"""

from functools import cache

from ..errors import ComputeError

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
