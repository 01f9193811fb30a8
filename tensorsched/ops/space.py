"""Knobs of schedule templates: a template is a function ``template(cfg, *shape_args)`` that
declares its knobs on ``cfg`` (``define_split``, ``define_knob``) and reads their values back.

Run with an empty ``Config`` it records the space and uses each knob's default; run with a
``Config`` holding values (one point of the space) it builds that point. The space is the
cartesian product of the knobs' candidates, filtered by the template's constraints.

A template reads the limits of the device it is tuned for from ``cfg.limits`` (a
``DeviceLimits``): the tuner gives them (``Config(values, limits=...)``); left out, they are
the current device's, or ``PORTABLE_LIMITS`` where no device can be found (a build worker
without OpenCL). Limits only ever decide constraints, never candidates, so the grid (and a
point's index in it) is the same on every device; which points are valid is fixed by the
device's limits alone.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import TensorschedError
from ..runtime.device import DeviceLimits, current_limits


class ConfigError(TensorschedError):
    """A knob was defined or given a value that the template cannot use."""


def factorizations(n: int, parts: int) -> list[tuple[int, ...]]:
    """All ordered tuples of ``parts`` positive ints whose product is ``n``."""
    if parts == 1:
        return [(n,)]
    out = []
    for d in range(1, n + 1):
        if n % d == 0:
            out += [(d,) + rest for rest in factorizations(n // d, parts - 1)]
    return out


def _split_candidates(
    extent: int,
    num_outputs: int,
    policy: str,
    candidates: Any,
    max_factor: int | None,
) -> list[tuple[int, ...]]:
    inner = num_outputs - 1
    if policy == "candidates":
        if not candidates:
            raise ConfigError("define_split: policy 'candidates' needs candidates=[...]")
        return [tuple(c) for c in candidates]
    if policy == "factors":
        # exact factorizations: the inner parts divide the extent
        outs = {f[1:] for f in factorizations(extent, num_outputs)}
    elif policy == "power2":
        powers = [2**k for k in range(int(math.log2(max(extent, 1))) + 1)]
        outs = {c for c in itertools.product(powers, repeat=inner) if math.prod(c) <= extent}
    elif policy == "divisors":
        divs = [d for d in range(1, extent + 1) if extent % d == 0]
        outs = {c for c in itertools.product(divs, repeat=inner) if extent % math.prod(c) == 0}
    else:
        raise ConfigError(
            f"define_split: unknown policy '{policy}'; use factors, power2, divisors or candidates"
        )
    if max_factor:
        outs = {c for c in outs if math.prod(c) <= max_factor}
    return sorted(outs)


@dataclass(frozen=True)
class Knob:
    name: str
    kind: str  # "split", "knob" or "reorder"
    candidates: tuple[Any, ...]
    default: Any


class Config:
    """Knob definitions (``space``) and chosen values (``values``) of one template."""

    def __init__(
        self, values: Mapping[str, Any] | None = None, limits: DeviceLimits | None = None
    ) -> None:
        self.values = dict(values or {})
        self.space: dict[str, Knob] = {}  # name -> Knob, in definition order
        self.constraints: list[str] = []
        self.valid = True
        self.flop = 0.0  # FLOPs the template declared (TVM AutoTVM's ``cfg.add_flop``), or 0
        self._limits = limits

    @property
    def limits(self) -> DeviceLimits:
        """The limits of the device this config is for (given, else read once from the
        current device, else ``PORTABLE_LIMITS``)."""
        if self._limits is None:
            self._limits = current_limits()
        return self._limits

    def _define(self, knob: Knob) -> Any:
        if knob.name in self.space and self.space[knob.name] != knob:
            raise ConfigError(f"knob '{knob.name}' is defined twice with different candidates")
        self.space[knob.name] = knob
        if knob.name in self.values:
            v = self.values[knob.name]
            v = tuple(v) if isinstance(v, list) else v
            if v not in knob.candidates:
                raise ConfigError(
                    f"knob '{knob.name}' = {v!r} is not one of its candidates "
                    f"{list(knob.candidates)[:8]}{'...' if len(knob.candidates) > 8 else ''}"
                )
            return v
        return knob.default

    def define_knob(self, name: str, candidates: Any, default: Any = None) -> Any:
        """A knob taking one of ``candidates``; returns its value."""
        candidates = tuple(candidates)
        if not candidates:
            raise ConfigError(f"knob '{name}' has no candidates")
        default = candidates[0] if default is None else default
        return self._define(Knob(name, "knob", candidates, default))

    def define_split(
        self,
        name: str,
        extent: int,
        num_outputs: int = 2,
        policy: str = "power2",
        candidates: Any = None,
        max_factor: int | None = None,
        default: Any = None,
    ) -> Any:
        """A split of an axis of ``extent`` into ``num_outputs`` parts; the value is the tuple of
        the inner parts' sizes (the outermost part is what remains)."""
        cands = tuple(_split_candidates(extent, num_outputs, policy, candidates, max_factor))
        if not cands:
            raise ConfigError(f"split '{name}' of extent {extent} has no candidates")
        default = tuple(default) if default is not None else cands[0]
        return self._define(Knob(name, "split", cands, default))

    def define_reorder(
        self, name: str, axes: Any, candidates: Any = None, default: Any = None
    ) -> tuple[int, ...]:
        """A loop order of ``axes`` (names or IterVars): all permutations, or ``candidates``
        (tuples of indices into ``axes``). The value is a tuple of indices."""
        n = len(axes)
        cands = (
            tuple(tuple(c) for c in candidates)
            if candidates is not None
            else tuple(itertools.permutations(range(n)))
        )
        for c in cands:
            if sorted(c) != list(range(n)):
                raise ConfigError(f"reorder '{name}': {c} is not a permutation of 0..{n - 1}")
        default = tuple(default) if default is not None else cands[0]
        return self._define(Knob(name, "reorder", cands, default))

    def constrain(self, ok: bool, why: str = "") -> None:
        """Mark this point invalid when ``ok`` is false (the grid skips it without building)."""
        if not ok:
            self.valid = False
            self.constraints.append(why)

    def __getitem__(self, name: str) -> Any:
        knob = self.space[name]
        return self.values.get(name, knob.default)

    def size(self) -> int:
        return math.prod(len(k.candidates) for k in self.space.values())

    def points(self) -> Iterator[dict[str, Any]]:
        """Every point of the space, in a deterministic order (the grid)."""
        names = list(self.space)
        for combo in itertools.product(*(self.space[n].candidates for n in names)):
            yield dict(zip(names, combo))

    def point(self, index: int) -> dict[str, Any]:
        """Point number ``index`` of the grid order, without enumerating the ones before it."""
        names, out = list(self.space), {}
        for n in reversed(names):
            cands = self.space[n].candidates
            index, r = divmod(index, len(cands))
            out[n] = cands[r]
        return {n: out[n] for n in names}

    def restrict(self, choices: Mapping[str, Any]) -> Config:
        """Narrow the space to ``choices`` (``{knob: [values]}``; a split's value is a tuple):
        the grid and random search then only visit those values of those knobs. Returns
        ``self``. Unknown knobs and values that are not candidates raise ConfigError."""
        for name, values in choices.items():
            if name not in self.space:
                raise ConfigError(
                    f"restrict: the template has no knob '{name}'; its knobs are "
                    f"{', '.join(self.space)}"
                )
            knob = self.space[name]
            values = tuple(tuple(v) if isinstance(v, list) else v for v in values)
            bad = [v for v in values if v not in knob.candidates]
            if bad or not values:
                raise ConfigError(
                    f"restrict: {bad[0] if bad else 'no value'!r} is not a "
                    f"candidate of knob '{name}' (candidates: "
                    f"{', '.join(map(repr, knob.candidates))})"
                )
            default = knob.default if knob.default in values else values[0]
            self.space[name] = Knob(name, knob.kind, values, default)
        return self

    def __repr__(self) -> str:
        return f"Config({self.values})"


def split_axis(stage: Any, axis: Any, factors: Any, tail: str = "guard") -> list[Any]:
    """Split ``axis`` of ``stage`` into ``len(factors) + 1`` loops whose inner extents are
    ``factors`` (outermost first); returns the loops, outermost first. ``tail`` is the first
    split's tail strategy (``Stage.split``): the later splits divide their parent exactly."""
    parts, rest = [], axis
    for k in range(len(factors)):
        outer, rest = stage.split(
            rest, factor=math.prod(factors[k:]), tail=tail if k == 0 else "guard"
        )
        parts.append(outer)
    return parts + [rest]
