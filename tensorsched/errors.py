"""The errors a user can cause, and the one a compiler bug causes.

Every error a user can trigger is a ``TensorschedError`` subclass whose message says what was
wrong, names the object (tensor, stage, axis) and, when it can, what to do instead.
``InternalError`` is kept apart: it means tensorsched itself is wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol


class StageLike(Protocol):
    """What an error needs of a schedule's stage (this module comes before schedules)."""

    @property
    def name(self) -> str: ...

    @property
    def leaf_iter_vars(self) -> Sequence[Any]: ...


class TensorschedError(Exception):
    """Base class of every error a user of tensorsched can cause."""


class ComputeError(TensorschedError):
    """A compute declaration is malformed (wrong number of indices, bad dtype, bad reduction)."""


class ScheduleError(TensorschedError):
    """A schedule primitive was applied where it is not legal.

    ``str()`` is the one-line message; ``render()`` adds the stage's leaf loops with the
    offending axis marked.
    """

    def __init__(
        self, primitive: str, stage: StageLike | None, message: str, axis: Any = None
    ) -> None:
        self.primitive, self.stage, self.axis = primitive, stage, axis
        where = f"stage '{stage.name}'" if stage is not None else "schedule"
        ax = f", axis '{axis.var.name}'" if axis is not None and hasattr(axis, "var") else ""
        super().__init__(f"{primitive}: {where}{ax}: {message}")

    def render(self) -> str:
        if self.stage is None:
            return str(self)
        lines = [str(self), f"leaf axes of stage '{self.stage.name}':"]
        for iv in self.stage.leaf_iter_vars:
            mark = "  <-- here" if iv is self.axis else ""
            lines.append(f"  {iv.var.name}{mark}")
        return "\n".join(lines)


class LoweringError(TensorschedError):
    """The schedule is legal primitive by primitive but cannot be lowered as a whole."""


class CodegenError(TensorschedError):
    """The lowered IR cannot be expressed for the target."""


class BuildError(TensorschedError):
    """The target compiler rejected generated code; carries its log and the saved source path."""

    def __init__(
        self,
        message: str,
        log: str = "",
        source_path: str | None = None,
        options: Iterable[str] = (),
    ) -> None:
        self.log, self.source_path, self.options = log, source_path, tuple(options)
        parts = [message]
        if options:
            parts.append(f"build options: {' '.join(options)}")
        if source_path:
            parts.append(f"source saved to {source_path}")
        if log:
            parts.append("build log:\n" + log.strip())
        super().__init__("\n".join(parts))


class RuntimeCallError(TensorschedError):
    """A built module was called with arrays of the wrong number, shape or dtype."""


class ParseError(TensorschedError):
    """A text form could not be parsed.

    ``str()`` is ``file:line:col: message``, then the source line and a caret under the
    column (as ``gcc`` and xDSL print it). ``line`` and ``column`` count from 1; ``message``
    alone says what was wrong and, for a syntax error, what was expected.
    """

    def __init__(
        self,
        message: str,
        line: int | None = None,
        column: int | None = None,
        source_line: str | None = None,
        filename: str = "<text>",
        width: int = 1,
    ) -> None:
        self.message, self.line, self.column = message, line, column
        self.source_line, self.filename, self.width = source_line, filename, max(width, 1)
        super().__init__(self._render())

    def _render(self) -> str:
        if self.line is None:
            return self.message
        out = [f"{self.filename}:{self.line}:{self.column}: {self.message}"]
        if self.source_line is not None:
            src = self.source_line.rstrip("\n")
            lead = "".join(c if c == "\t" else " " for c in src[: (self.column or 1) - 1])
            out += [f"  {src}", f"  {lead}{'^' * self.width}"]
        return "\n".join(out)


class InternalError(Exception):
    """A bug in tensorsched: please report it with the schedule that triggered it."""
