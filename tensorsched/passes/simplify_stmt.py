"""Simplify every expression, knowing the range of each loop around it; drop dead branches."""

from __future__ import annotations

from ..ir import stmt as S
from ..ir.simplify import Simplifier


def simplify_stmt(stmt: S.Stmt) -> S.Stmt:
    """Requires: loops start at constants. Guarantees: index arithmetic in canonical form,
    guards that the loop ranges prove true removed, empty loops removed."""
    return Simplifier().visit(stmt)
