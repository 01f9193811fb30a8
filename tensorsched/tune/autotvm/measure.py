"""AutoTVM's measure options, as tensorsched's tuner takes them.

``measure_option(builder="local", runner=LocalRunner(number=5))``: the builder's
``n_parallel`` is the tuner's build processes, its ``timeout`` and the runner's add up to the
tuner's per-candidate timeout, and each candidate is timed ``number * repeat`` times, each run
alone by OpenCL events (the median is logged). ``min_repeat_ms`` and ``cooldown_interval``
are accepted and not used: tensorsched's tuner times every run by itself and measures the
fastest configs again at the end instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .space import AutotvmError


def _positive(name: str, value: Any, owner: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise AutotvmError(f"{owner}: {name} must be a positive number, got {value!r}")


@dataclass
class LocalBuilder:
    """Builds candidates in ``n_parallel`` processes (default: one per core)."""

    timeout: float = 10.0
    n_parallel: int | None = None
    build_func: str = "default"

    def __post_init__(self) -> None:
        _positive("timeout", self.timeout, "LocalBuilder")
        if self.n_parallel is not None:
            _positive("n_parallel", self.n_parallel, "LocalBuilder")
        if self.build_func != "default":
            raise AutotvmError(
                f"LocalBuilder: build_func={self.build_func!r} is not supported; tensorsched "
                "builds OpenCL programs (build_func='default')"
            )


@dataclass
class LocalRunner:
    """Runs each candidate in a worker process on the task's device: ``number * repeat``
    timed runs, after a checked run against the reference."""

    timeout: float = 10.0
    number: int = 4
    repeat: int = 3
    min_repeat_ms: float = 0.0
    cooldown_interval: float = 0.1
    enable_cpu_cache_flush: bool = False

    def __post_init__(self) -> None:
        _positive("timeout", self.timeout, "LocalRunner")
        for name in ("number", "repeat"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise AutotvmError(f"LocalRunner: {name} must be a positive int, got {value!r}")

    @property
    def runs(self) -> int:
        return self.number * self.repeat


def measure_option(builder: Any = "local", runner: Any = "local") -> dict[str, Any]:
    """``{"builder": LocalBuilder, "runner": LocalRunner}`` (``"local"`` for the defaults)."""
    if builder == "local":
        builder = LocalBuilder()
    if runner == "local":
        runner = LocalRunner()
    if not isinstance(builder, LocalBuilder) or not isinstance(runner, LocalRunner):
        raise AutotvmError(
            f"measure_option: builder {builder!r} and runner {runner!r}: tensorsched measures "
            "on this host only (LocalBuilder, LocalRunner, or 'local'); RPC runners are not "
            "provided (spread tuning over hosts with tensorsched's cluster: tensorsched.tune.tune"
            "(cluster=...))"
        )
    return {"builder": builder, "runner": runner}
