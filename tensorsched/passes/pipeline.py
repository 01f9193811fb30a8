"""The one pipeline from loop nests to IR ready for code generation, as an ordered list of
named passes, each a pure function ``Stmt -> Stmt``.

Phase ``"lower"`` is what ``ts.lower`` runs on the loop nests that ``schedule_ops`` builds;
phase ``"prepare"`` is what an emitter runs on each kernel's statement before printing it
(``codegen/opencl.py``). ``run_phase`` verifies the IR after each pass when ``TS_VERIFY=1`` and,
with ``TS_DEBUG=ir``, prints it after each pass that changed it (structural equality), with
the pass's time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..config import config
from ..ir.expr import Var
from ..ir.printer import print_stmt
from ..ir.stmt import Buffer, Stmt
from ..ir.structural import structural_equal
from ..ir.verify import verify
from .double_buffer import double_buffer
from .hoist_guards import hoist_guards
from .inject_virtual_threads import inject_virtual_threads
from .insert_barriers import insert_barriers
from .partition_loops import partition_loops
from .peel_tail import peel_tail, peel_tail_late
from .remove_trivial_loops import remove_trivial_loops
from .simplify_stmt import simplify_stmt
from .specialize_interior import specialize_interior
from .unroll import unroll_loops
from .vectorize import vectorize_loops

LOWER, PREPARE = "lower", "prepare"


@dataclass(frozen=True)
class Pass:
    """A named pass of phase ``LOWER`` or ``PREPARE``."""

    name: str
    phase: str
    run: Callable[[Stmt], Stmt]


PIPELINE: tuple[Pass, ...] = (
    # lowering: loop nests (schedule_ops) -> lowered function (ts.lower)
    Pass("inject_virtual_threads", LOWER, inject_virtual_threads),  # vthread loops interleaved
    Pass("peel_tail", LOWER, peel_tail),  # split(tail="peel"): last iteration written out
    Pass("partition_loops", LOWER, partition_loops),  # constant index tests split the loop
    Pass("simplify", LOWER, simplify_stmt),  # canonical index arithmetic, dead guards
    Pass("remove_trivial_loops", LOWER, remove_trivial_loops),  # one-iteration loops go
    Pass("simplify_again", LOWER, simplify_stmt),  # fold what the removal exposed
    Pass("hoist_guards", LOWER, hoist_guards),  # loop-invariant guard parts move out
    Pass("insert_barriers", LOWER, insert_barriers),  # work-group barriers around tiles
    Pass("double_buffer", LOWER, double_buffer),  # marked tiles filled one step ahead
    Pass("peel_tail_late", LOWER, peel_tail_late),  # the double-buffered loops' last step
    # preparation: one kernel's statement -> what the emitter prints
    Pass("specialize_interior", PREPARE, specialize_interior),  # test-free copy for the interior
    Pass("vectorize_loops", PREPARE, vectorize_loops),  # vector types from vectorized loops
    Pass("unroll_loops", PREPARE, unroll_loops),  # write out unrolled loops
    Pass("simplify_copies", PREPARE, simplify_stmt),  # fold the copies' index arithmetic
    Pass("remove_trivial_loops_again", PREPARE, remove_trivial_loops),
)


def passes_of(phase: str) -> tuple[Pass, ...]:
    """The passes of ``phase`` in pipeline order."""
    return tuple(p for p in PIPELINE if p.phase == phase)


def run_passes(stmt: Stmt, passes: Iterable[Pass], args: Iterable[Buffer | Var] = ()) -> Stmt:
    """Run ``passes`` in order; verify the IR after each when ``TS_VERIFY=1``; print the IR
    after each pass that changed it when ``TS_DEBUG=ir``."""
    args = tuple(args)
    for p in passes:
        t0 = time.perf_counter()
        new = p.run(stmt)
        if config.verify:
            verify(new, args, after=p.name)
        if config.debug_ir and new is not stmt and not structural_equal(new, stmt):
            ms = (time.perf_counter() - t0) * 1e3
            print(f"// after {p.name} ({ms:.2f} ms)\n{print_stmt(new)}\n")
        stmt = new
    return stmt


def run_phase(stmt: Stmt, phase: str, args: Iterable[Buffer | Var] = ()) -> Stmt:
    """Run the passes of ``phase`` (``LOWER`` or ``PREPARE``) on ``stmt``."""
    return run_passes(stmt, passes_of(phase), args)
