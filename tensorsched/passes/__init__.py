"""Passes over lowered IR: each is a pure function ``Stmt -> Stmt`` named by a verb."""
from .insert_barriers import insert_barriers
from .remove_trivial_loops import remove_trivial_loops
from .simplify_stmt import simplify_stmt

__all__ = ["insert_barriers", "remove_trivial_loops", "simplify_stmt"]
