"""Passes over lowered IR: each is a pure function ``Stmt -> Stmt`` named by a verb; the one
order they run in is ``pipeline.PIPELINE``."""

from .double_buffer import double_buffer
from .hoist_guards import hoist_guards
from .inject_virtual_threads import inject_virtual_threads
from .insert_barriers import insert_barriers
from .pipeline import LOWER, PIPELINE, PREPARE, Pass, passes_of, run_passes, run_phase
from .remove_trivial_loops import remove_trivial_loops
from .simplify_stmt import simplify_stmt
from .unroll import unroll_loops
from .vectorize import vectorize_loops

__all__ = [
    "LOWER",
    "PIPELINE",
    "PREPARE",
    "Pass",
    "double_buffer",
    "hoist_guards",
    "inject_virtual_threads",
    "insert_barriers",
    "passes_of",
    "remove_trivial_loops",
    "run_passes",
    "run_phase",
    "simplify_stmt",
    "unroll_loops",
    "vectorize_loops",
]
