"""AutoTVM's knob spaces, over tensorsched's ``Config``.

A template sees a ``ConfigEntity`` (``cfg = autotvm.get_config()``). Each ``define_*`` lists
the knob's candidates as TVM documents them and declares them on the ``Config`` underneath,
which the tuner searches and the log records:

- ``define_split(name, axis, policy="factors", num_outputs=2, max_factor=, filter=,
  candidate=)``: ``SplitEntity`` values, ``size`` outer part first, ``-1`` for what remains.
  ``factors``: the inner parts divide the extent exactly; ``power2``: powers of two whose
  product is at most the extent; ``verbose``: both (tails allowed); ``candidate``: the sizes
  given. The log holds the inner parts (``(8,)`` for ``[-1, 8]``), as tensorsched's own
  splits.
- ``define_knob(name, candidates)``: ``OtherOptionEntity`` (``.val``); the candidates are
  JSON scalars (int, float, str, bool, None), as a log holds them.
- ``define_reorder(name, axes, policy)``: ``identity``, ``all`` or ``candidate`` orders;
  ``ReorderEntity`` (``.perm``).
- ``define_annotate(name, axes, policy)``: ``unroll``, ``vec``, ``try_unroll``, ``try_vec``,
  ``try_unroll_vec`` (each axis ``none``/``unroll``, the last also ``vec``); ``AnnotateEntity``.

A template run outside tuning and without a logged config is a fallback (``is_fallback``):
each knob takes its first candidate, as TVM's fallback does.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import TensorschedError
from ...ir.tensor import IterVar, Tensor
from ...ops.space import Config, ConfigError


class AutotvmError(TensorschedError):
    """A misuse of ``ts.autotvm``: an unknown template, ``get_config`` outside a template, a
    missing or unreadable log, an argument a task cannot hold."""


class AutotvmConfigError(AutotvmError, ConfigError):
    """A knob of an autotvm template defined wrongly, twice differently, or read before it
    was defined."""


class VirtualAxis:
    """``cfg.axis(x)``: an extent for ``define_split`` (TVM's ``VirtualAxis``)."""

    def __init__(self, var: Any, name: str = "") -> None:
        self.length = _extent(var, "cfg.axis")
        self.name = name or getattr(getattr(var, "var", None), "name", "") or "axis"

    def __repr__(self) -> str:
        return f"VirtualAxis({self.name}, {self.length})"


def _extent(axis: Any, where: str) -> int:
    if isinstance(axis, VirtualAxis):
        return axis.length
    if isinstance(axis, int) and not isinstance(axis, bool):
        if axis < 1:
            raise AutotvmConfigError(f"{where}: an extent must be positive, got {axis}")
        return axis
    if isinstance(axis, IterVar) and axis.dom is not None:
        try:
            return _extent(int(axis.dom.extent), where)
        except TypeError:
            pass
        raise AutotvmConfigError(
            f"{where}: axis '{axis.var.name}' has the symbolic extent {axis.dom.extent}; "
            "a knob needs a constant one (give the extent as an int)"
        )
    raise AutotvmConfigError(
        f"{where}: expected an axis (s[C].op.axis[i]), cfg.axis(n) or an int extent, got "
        f"{type(axis).__name__}"
    )


# ---------------------------------------------------------------------------- entities


class SplitEntity:
    """A split's value: ``size``, the parts' extents outer first, ``-1`` where it is what
    remains (TVM's form)."""

    def __init__(self, size: Sequence[int]) -> None:
        self.size = [int(x) for x in size]

    def apply(self, sch: Any, op: Any, axis: Any) -> list[Any]:
        """Split ``axis`` of ``sch[op]`` into ``len(size)`` loops (factors: the products of
        the inner parts); returns them, outermost first."""
        stage = sch[op]
        loops = []
        for i in range(1, len(self.size)):
            outer, axis = stage.split(axis, factor=math.prod(self.size[i:]))
            loops.append(outer)
        return loops + [axis]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SplitEntity) and self.size == other.size

    def __hash__(self) -> int:
        return hash(tuple(self.size))

    def __repr__(self) -> str:
        return str(self.size)


class OtherOptionEntity:
    """A ``define_knob`` value: ``val``."""

    def __init__(self, val: Any) -> None:
        self.val = val

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OtherOptionEntity) and self.val == other.val

    def __hash__(self) -> int:
        return hash(self.val)

    def __repr__(self) -> str:
        return str(self.val)


class ReorderEntity:
    """A loop order: ``perm``, indices into the axes given to ``define_reorder``."""

    def __init__(self, perm: Sequence[int]) -> None:
        self.perm = [int(x) for x in perm]

    def apply(self, sch: Any, op: Any, axes: Sequence[Any]) -> list[Any]:
        """Reorder ``axes`` of ``sch[op]`` by ``perm``; returns them in the new order."""
        if len(axes) != len(self.perm):
            raise AutotvmConfigError(
                f"ReorderEntity.apply: the knob orders {len(self.perm)} axes, given {len(axes)}"
            )
        ordered = [axes[i] for i in self.perm]
        sch[op].reorder(*ordered)
        return ordered

    def __repr__(self) -> str:
        return str(self.perm)


class AnnotateEntity:
    """Annotations of axes: ``anns``, one of ``none``, ``unroll``, ``vec`` per axis."""

    def __init__(self, anns: Sequence[str]) -> None:
        self.anns = list(anns)

    def apply(self, sch: Any, op: Any, axes: Sequence[Any], **_: Any) -> list[Any]:
        """Unroll or vectorize ``axes`` of ``sch[op]`` as ``anns`` say; returns the axes.
        TVM's ``axis_lens``, ``max_unroll``, ``vec_size``, ``cfg`` and ``source`` are
        accepted and not used."""
        if len(axes) != len(self.anns):
            raise AutotvmConfigError(
                f"AnnotateEntity.apply: the knob annotates {len(self.anns)} axes, given {len(axes)}"
            )
        for ax, ann in zip(axes, self.anns):
            if ann == "unroll":
                sch[op].unroll(ax)
            elif ann == "vec":
                sch[op].vectorize(ax)
        return list(axes)

    def __repr__(self) -> str:
        return str(self.anns)


# ---------------------------------------------------------------------------- spaces


class TransformSpace:
    """One knob's candidates (``entities``) and how it was defined (``__repr__``)."""

    def __init__(self, kind: str, desc: str, entities: list[Any], values: list[Any]) -> None:
        self.kind, self.desc = kind, desc
        self.entities = entities
        self.values = values  # what the log holds for each entity

    def __len__(self) -> int:
        return len(self.entities)

    def __getitem__(self, index: int) -> Any:
        return self.entities[index]

    def entity(self, value: Any) -> Any:
        return self.entities[self.values.index(value)]

    def __repr__(self) -> str:
        return f"{self.desc} len={len(self)}"


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _powers_of_two(n: int) -> list[int]:
    return [2**k for k in range(n.bit_length())]  # 1, 2, ... up to n


def split_sizes(
    extent: int, policy: str, num_outputs: int, max_factor: int | None, candidate: Any
) -> list[list[int]]:
    """The sizes (TVM's form) of a split of ``extent`` under ``policy``, in TVM's order: the
    innermost part varies slowest."""
    if policy == "candidate":
        if not candidate:
            raise AutotvmConfigError("define_split: policy 'candidate' needs candidate=[[...]]")
        sizes = [[int(x) for x in c] for c in candidate]
        bad = [c for c in sizes if len(c) != num_outputs]
        if bad:
            raise AutotvmConfigError(
                f"define_split: candidate {bad[0]} has {len(bad[0])} parts, num_outputs is "
                f"{num_outputs}"
            )
        return sizes
    limit = max_factor if max_factor else extent
    if policy == "factors":
        factors, no_tail = [d for d in _divisors(extent) if d <= limit], True
    elif policy == "power2":
        factors, no_tail = [p for p in _powers_of_two(extent) if p <= limit], False
    elif policy == "verbose":
        divisors = _divisors(extent)
        extra = [p for p in _powers_of_two(extent) if p not in divisors]
        factors, no_tail = sorted(d for d in divisors + extra if d <= limit), False
    else:
        raise AutotvmConfigError(
            f"define_split: unknown policy '{policy}'; use factors, power2, verbose or candidate"
        )
    out = []
    for inner in itertools.product(factors, repeat=num_outputs - 1):  # innermost first
        prod = math.prod(inner)
        if prod <= extent and (extent % prod == 0 or (not no_tail and prod < extent)):
            out.append([-1, *reversed(inner)])
    return out


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


class ConfigEntity:
    """The config an autotvm template reads its knobs from (``autotvm.get_config()``): it
    defines each knob on ``config`` (a tensorsched ``Config``) and gives back the value of
    the point being built, as TVM's entities. ``is_fallback``: no tuned config was found,
    each knob is its first candidate."""

    def __init__(self, config: Config, template: str = "", is_fallback: bool = False) -> None:
        self.config = config
        self.template = template
        self.is_fallback = is_fallback
        self.space_map: dict[str, TransformSpace] = {}
        self._fallback: dict[str, Any] = {}  # fallback_split's choices

    # ---- defining knobs

    def axis(self, var: Any) -> VirtualAxis:
        """An extent for ``define_split``: an axis, or an int."""
        return VirtualAxis(var)

    reduce_axis = axis

    def _where(self, name: str) -> str:
        return f"template '{self.template}', knob '{name}'" if self.template else f"'{name}'"

    def _declare(self, name: str, space: TransformSpace, declare: Callable[[], Any]) -> None:
        if not isinstance(name, str) or not name:
            raise AutotvmConfigError(f"a knob's name is a non-empty string, got {name!r}")
        old = self.space_map.get(name)
        if old is not None and (old.kind, old.values) != (space.kind, space.values):
            raise AutotvmConfigError(
                f"{self._where(name)} is defined twice differently ({old!r}, then {space!r}); "
                "give each knob one definition, or another name"
            )
        try:
            declare()
        except ConfigError as exc:
            raise AutotvmConfigError(f"{self._where(name)}: {exc}") from None
        self.space_map[name] = space

    def define_split(
        self,
        name: str,
        axis: Any,
        policy: str = "factors",
        num_outputs: int = 2,
        max_factor: int | None = None,
        filter: Callable[[SplitEntity], bool] | None = None,
        candidate: Any = None,
        **kwargs: Any,
    ) -> None:
        """A split of ``axis`` (an axis, ``cfg.axis(n)`` or an int extent) into
        ``num_outputs`` parts; read it with ``cfg[name].apply(s, C, axis)``."""
        if kwargs:
            raise AutotvmConfigError(
                f"define_split {self._where(name)}: unknown option(s) {', '.join(kwargs)}; it "
                "takes policy, num_outputs, max_factor, filter and candidate"
            )
        if not isinstance(num_outputs, int) or num_outputs < 1:
            raise AutotvmConfigError(
                f"define_split {self._where(name)}: num_outputs must be a positive int"
            )
        extent = _extent(axis, f"define_split {self._where(name)}")
        sizes = split_sizes(extent, policy, num_outputs, max_factor, candidate)
        entities = [SplitEntity(s) for s in sizes]
        if filter is not None:
            entities = [e for e in entities if filter(e)]
        values = [tuple(e.size[1:]) for e in entities]
        if not entities:
            raise AutotvmConfigError(
                f"define_split {self._where(name)}: no candidates for extent {extent} "
                f"(policy {policy}, max_factor {max_factor}, filter); loosen them"
            )
        desc = f"Split(policy={policy}, product={extent}, num_outputs={num_outputs})"
        space = TransformSpace("split", desc, entities, values)
        self._declare(
            name,
            space,
            lambda: self.config.define_split(
                name, extent, num_outputs, policy="candidates", candidates=values
            ),
        )

    def define_knob(self, name: str, candidate: Sequence[Any]) -> None:
        """A knob taking one of ``candidate`` (JSON scalars); read it as ``cfg[name].val``."""
        values = list(candidate) if isinstance(candidate, (list, tuple, range)) else None
        if not values or not all(_scalar(v) for v in values):
            raise AutotvmConfigError(
                f"define_knob {self._where(name)}: candidates are a non-empty list of ints, "
                f"floats, strings, bools or None (a log holds them), got {candidate!r}"[:300]
            )
        entities = [OtherOptionEntity(v) for v in values]
        space = TransformSpace("knob", f"OtherOption({values})", entities, values)
        self._declare(name, space, lambda: self.config.define_knob(name, values))

    def define_reorder(self, name: str, axes: Sequence[Any], policy: str, **kwargs: Any) -> None:
        """A loop order of ``axes``: ``identity``, ``all`` (every permutation) or
        ``candidate`` (``candidate=[[axes in order], ...]``)."""
        axes = list(axes)
        n = len(axes)
        if policy == "identity":
            perms = [tuple(range(n))]
        elif policy == "all":
            perms = list(itertools.permutations(range(n)))
        elif policy == "candidate" and kwargs.get("candidate"):
            perms = []
            for order in kwargs["candidate"]:
                idx = [next((i for i, a in enumerate(axes) if a is x), -1) for x in order]
                if sorted(idx) != list(range(n)):
                    raise AutotvmConfigError(
                        f"define_reorder {self._where(name)}: a candidate must order each of "
                        f"the {n} axes once"
                    )
                perms.append(tuple(idx))
        else:
            raise AutotvmConfigError(
                f"define_reorder {self._where(name)}: policy '{policy}': use identity, all, "
                "or candidate with candidate=[[axes], ...]"
            )
        entities = [ReorderEntity(p) for p in perms]
        space = TransformSpace("reorder", f"Reorder(policy={policy})", entities, perms)
        self._declare(name, space, lambda: self.config.define_reorder(name, axes, perms))

    def define_annotate(self, name: str, axes: Sequence[Any], policy: str, **kwargs: Any) -> None:
        """Unroll / vectorize annotations of ``axes``: ``unroll`` (all unrolled), ``vec`` (the
        last vectorized), ``try_unroll`` (each none or unroll), ``try_vec`` (the last none or
        vec), ``try_unroll_vec`` (each none or unroll, the last also vec)."""
        n = len(axes)
        per_axis = {
            "unroll": [["unroll"]] * n,
            "vec": [["none"]] * (n - 1) + [["vec"]],
            "try_unroll": [["none", "unroll"]] * n,
            "try_vec": [["none"]] * (n - 1) + [["none", "vec"]],
            "try_unroll_vec": [["none", "unroll"]] * (n - 1) + [["none", "unroll", "vec"]],
        }.get(policy)
        if per_axis is None or n == 0:
            raise AutotvmConfigError(
                f"define_annotate {self._where(name)}: policy '{policy}' on {n} axes: use "
                "unroll, vec, try_unroll, try_vec or try_unroll_vec on one or more axes "
                "(bind_gpu and locate_cache are not provided)"
            )
        values = [tuple(c) for c in itertools.product(*per_axis)]
        entities = [AnnotateEntity(v) for v in values]
        space = TransformSpace("annotate", f"Annotate(policy={policy})", entities, values)
        self._declare(name, space, lambda: self.config.define_knob(name, values))

    def fallback_split(self, name: str, constraints: Sequence[int]) -> None:
        """In a fallback config, choose split ``name``: from the innermost part out, the
        largest candidate factor within each constraint (``-1``: no limit)."""
        if not self.is_fallback:
            return
        self[name]  # an AutotvmConfigError where it is not defined
        space = self.space_map[name]
        if space.kind != "split":
            raise AutotvmConfigError(f"fallback_split {self._where(name)}: not a split")
        best = None
        for e in space.entities:
            inner = e.size[1:]
            ok = all(c < 0 or x <= c for x, c in zip(inner, list(constraints)[1:]))
            if ok and (best is None or inner[::-1] > best.size[1:][::-1]):
                best = e
        if best is not None:
            self._fallback[name] = best

    def add_flop(self, flop: float) -> None:
        """Declare FLOPs of the template's computation (``task.flop``, GFLOPS in the log)."""
        self.config.flop += float(flop)

    @property
    def flop(self) -> float:
        return self.config.flop

    # ---- reading knobs

    def __getitem__(self, name: str) -> Any:
        space = self.space_map.get(name)
        if space is None:
            raise AutotvmConfigError(
                f"cfg[{name!r}]: {self._where(name)} is not defined (defined so far: "
                f"{', '.join(self.space_map) or 'none'}); define it (cfg.define_split, "
                "define_knob ...) before reading it"
            )
        if name in self._fallback:
            return self._fallback[name]
        value = self.config.values.get(name, space.values[0])  # the default: the first
        return space.entity(tuple(value) if isinstance(value, list) else value)

    def __contains__(self, name: str) -> bool:
        return name in self.space_map

    def get_other_option(self) -> dict[str, Any]:
        return {n: self[n].val for n, s in self.space_map.items() if s.kind == "knob"}

    def __repr__(self) -> str:
        knobs = ", ".join(f"{n}={self[n]!r}" for n in self.space_map)
        return f"ConfigEntity({knobs})" + (" (fallback)" if self.is_fallback else "")


class ConfigSpace:
    """A task's knob space (``task.config_space``): ``space_map`` (each knob's
    ``TransformSpace``), ``len()``, ``get(index)``, and a listing when printed."""

    def __init__(self, space_map: dict[str, TransformSpace], config: Config, template: str):
        self.space_map = space_map
        self.config = config
        self.template = template

    def __len__(self) -> int:
        return self.config.size()

    @property
    def range_length(self) -> int:
        return len(self)

    def get(self, index: int) -> ConfigEntity:
        """Point ``index`` of the space (tensorsched's grid order: the last knob varies
        fastest; TVM's: the first)."""
        if not 0 <= index < len(self):
            raise AutotvmError(f"config_space.get({index}): the space has {len(self)} points")
        return self.entity(self.config.point(index))

    def entity(self, values: dict[str, Any]) -> ConfigEntity:
        """The ``ConfigEntity`` of a point given as the log holds it."""
        entity = ConfigEntity(Config(values), self.template)
        entity.space_map = self.space_map
        return entity

    def __repr__(self) -> str:
        lines = [f"ConfigSpace (len={len(self)}, range_length={self.range_length}, space_map="]
        for i, (name, space) in enumerate(self.space_map.items()):
            lines.append(f"  {i:2d} {name}: {space!r}")
        return "\n".join(lines) + "\n)"


def check_result(template: str, result: Any) -> tuple[Any, list[Tensor]]:
    """A template's ``(schedule, [tensors])``, its output last; ``AutotvmError`` otherwise."""
    ok = isinstance(result, (tuple, list)) and len(result) == 2
    if ok:
        s, bufs = result
        ok = hasattr(s, "stages") and isinstance(bufs, (list, tuple)) and len(bufs) > 0
        ok = ok and all(isinstance(t, Tensor) for t in bufs)
    if not ok:
        raise AutotvmError(
            f"template '{template}' must return (schedule, [tensors]) with the output last, "
            f"as ts.create_schedule and its argument tensors; got {type(result).__name__}"
        )
    return s, list(bufs)
