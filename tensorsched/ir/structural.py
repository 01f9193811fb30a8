"""Structural equality up to renaming of bound variables (alpha-equivalence).
Loop and thread variables are binding sites: ``for (i) A[i] = 0`` equals
``for (j) A[j] = 0``. Free variables and buffers compare by name, dtype (and shape)."""

from __future__ import annotations

import dataclasses

from ..errors import ComputeError
from . import expr as E
from . import stmt as S


def _fields(node):
    return [(f.name, getattr(node, f.name)) for f in dataclasses.fields(node) if f.compare]


def _plain_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


class _Equal:
    def __init__(self):
        self.vmap = {}  # Var of a -> Var of b, for bound variables

    def eq(self, a, b):
        if a is b:
            return True
        if _plain_int(a) and _plain_int(b):  # a Range's IntValue equals the int it holds
            return int(a) == int(b)
        if type(a) is not type(b):
            return False
        if isinstance(a, E.Var):
            if a in self.vmap:
                return self.vmap[a] is b
            return a.name == b.name and a.dtype == b.dtype
        if isinstance(a, S.Buffer):
            return (a.name, a.dtype, a.scope, a.image) == (
                b.name,
                b.dtype,
                b.scope,
                b.image,
            ) and (a.shape == b.shape or self.eq(tuple(a.shape), tuple(b.shape)))
        if isinstance(a, (list, tuple)):
            return len(a) == len(b) and all(self.eq(x, y) for x, y in zip(a, b))
        if isinstance(a, float) and a != a:  # a NaN constant equals a NaN constant
            return b != b
        if isinstance(a, (S.For, S.ThreadExtent)):
            if a.var.dtype != b.var.dtype:
                return False
            self.vmap[a.var] = b.var
        if dataclasses.is_dataclass(a):
            return all(self.eq(x, getattr(b, name)) for name, x in _fields(a))
        return a == b


def structural_equal(a: object, b: object) -> bool:
    """Whether two IR trees are equal up to the names of the variables they bind."""
    return _Equal().eq(a, b)


class StructuralMismatch(ComputeError, ValueError):
    """``assert_structural_equal`` of two different trees: TVM raises a ValueError there,
    which this also is."""


def assert_structural_equal(lhs: object, rhs: object) -> None:
    """TVM's ``tvm.ir.assert_structural_equal``: a ``StructuralMismatch`` (a ValueError)
    showing both trees when they differ beyond the names of the variables they bind."""
    if not structural_equal(lhs, rhs):
        raise StructuralMismatch(
            "assert_structural_equal: the two trees differ (beyond the names of the variables "
            f"they bind):\n--- lhs\n{lhs}\n--- rhs\n{rhs}\ncompare them with "
            "ts.ir.structural_equal, or print both with ts.lower(..., simple_mode=True)"
        )
