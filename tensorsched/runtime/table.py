"""One way to print a table of results: ``format_table(head, rows)``, columns as wide as their
widest cell, separated by `` | ``, a rule of ``-+-`` under the header. The benchmarks, the
examples, the baselines' comparison and the CLI print with it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def format_table(head: Sequence[Any], rows: Iterable[Sequence[Any]], align: str = "") -> str:
    """The table as text (no trailing newline). ``align`` has one character per column,
    ``<`` (left) or ``>`` (right); columns it does not reach are left-aligned."""
    cells = [[str(c) for c in head]] + [[str(c) for c in r] for r in rows]
    n = max(len(r) for r in cells)
    cells = [r + [""] * (n - len(r)) for r in cells]
    widths = [max(len(r[i]) for r in cells) for i in range(n)]
    sides = (align + "<" * n)[:n]

    def line(row: list[str]) -> str:
        return " | ".join(
            c.rjust(w) if a == ">" else c.ljust(w) for c, w, a in zip(row, widths, sides)
        ).rstrip()

    rule = "-+-".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule] + [line(r) for r in cells[1:]])


def print_table(head: Sequence[Any], rows: Iterable[Sequence[Any]], align: str = "") -> None:
    """Print ``format_table(head, rows, align)``."""
    print(format_table(head, rows, align))
