"""Runs a list of named passes: verifies the IR after each when ``TS_VERIFY=1`` and prints it
after each pass that changed it when ``TS_DEBUG=ir`` (with the pass's time)."""

import time

from ..config import config
from ..ir.printer import print_stmt
from ..ir.verify import verify


def run_passes(stmt, passes, args=()):
    """Run ``passes`` in order; verify the IR after each when ``TS_VERIFY=1``; print the IR
    after each pass that changed it when ``TS_DEBUG=ir``."""
    for name, fn in passes:
        t0 = time.perf_counter()
        new = fn(stmt)
        if config.verify:
            verify(new, args, after=name)
        if config.debug_ir and new is not stmt:
            ms = (time.perf_counter() - t0) * 1e3
            print(f"// after {name} ({ms:.2f} ms)\n{print_stmt(new)}\n")
        stmt = new
    return stmt
