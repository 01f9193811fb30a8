"""The tensor-expression level: ranges, iteration variables, tensors and the operations that
produce them (``placeholder`` and ``compute``)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ComputeError, InternalError, ScheduleError
from . import dtype as dt
from . import expr as E
from .visitor import Visitor

THREAD_TAGS = (
    "blockIdx.x",
    "blockIdx.y",
    "blockIdx.z",
    "threadIdx.x",
    "threadIdx.y",
    "threadIdx.z",
    "vthread",
)


@dataclass(frozen=True)
class Range:
    min: int
    extent: int


@dataclass(eq=False)
class IterVar(E.ExprOps):
    """A loop: a variable, its domain, and its kind (``data``, ``reduce`` or ``thread``)."""

    var: E.Var
    dom: Range | None
    kind: str = "data"
    tag: str = ""

    def as_expr(self) -> E.Expr:
        return self.var

    @property
    def name(self) -> str:
        return self.var.name

    @property
    def domain(self) -> Range:
        """``dom`` of a data or reduce axis, which always has one (a thread axis has none)."""
        if self.dom is None:
            raise InternalError(f"axis '{self.var.name}' ({self.kind}) has no domain")
        return self.dom

    def __repr__(self) -> str:
        ext = f", {self.dom.extent}" if self.dom else ""
        return f"IterVar({self.var.name}{ext}, {self.kind})"

    def __hash__(self) -> int:
        return id(self)


def reduce_axis(dom: tuple[int, int] | list[int] | int, name: str = "k") -> IterVar:
    """A reduction axis over ``dom`` = ``(min, max)`` (half-open, TVM style) or an extent;
    the bounds may be Python or numpy integers, and the extent must fit in int64."""
    pair = (0, dom) if dt.to_int(dom) is not None else dom
    bounds = [dt.to_int(d) for d in pair] if isinstance(pair, (tuple, list)) else []
    if len(bounds) != 2 or bounds[0] is None or bounds[1] is None:
        raise ComputeError(f"reduce_axis '{name}': dom must be (begin, end) of ints, got {dom!r}")
    lo, hi = bounds[0], bounds[1]
    if hi <= lo:
        raise ComputeError(f"reduce_axis '{name}': empty range ({lo}, {hi})")
    if not all(dt.fits(n, "int64") for n in (lo, hi, hi - lo)):
        raise ComputeError(
            f"reduce_axis '{name}': the range ({lo}, {hi}) does not fit in int64, the widest "
            "index type; use a smaller range"
        )
    return IterVar(E.Var(name), Range(lo, hi - lo), "reduce")


def thread_axis(tag: str, name: str | None = None) -> IterVar:
    """The work-item index named by ``tag`` (``blockIdx.x`` ... ``threadIdx.z``), or a virtual
    thread (``"vthread"``): a loop whose iterations the compiler interleaves inside one work-item,
    sharing the work-group's ``"shared"`` tiles, so that each work-item's outputs can be spread
    at a stride over the tile (``ts.thread_axis("vthread", name="vx")``; several may be bound)."""
    if not isinstance(tag, str):
        raise ScheduleError(
            "thread_axis",
            None,
            f"the first argument is the thread tag (ts.thread_axis('threadIdx.x')), got "
            f"{tag!r}; a range as in TVM's thread_axis((0, n), tag) is not taken: the extent "
            "is that of the axis bound to it",
        )
    if tag not in THREAD_TAGS:
        raise ScheduleError(
            "thread_axis", None, f"unknown thread tag '{tag}'; use one of {', '.join(THREAD_TAGS)}"
        )
    return IterVar(E.Var(name or tag), None, "thread", tag)


class Operation:
    """What produces a tensor: a placeholder (an input) or a compute."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    _out: Tensor
    axis: tuple[IterVar, ...] = ()  # a placeholder has no loops
    reduce_axis: tuple[IterVar, ...] = ()

    @property
    def input_tensors(self) -> list[Tensor]:
        return []

    def output(self, i: int = 0) -> Tensor:
        if i != 0:
            raise ComputeError(f"operation '{self.name}' has one output, asked for output {i}")
        return self._out


class PlaceholderOp(Operation):
    def __init__(self, name: str, shape: tuple[int, ...], dtype: str) -> None:
        self.name, self.shape, self.dtype = name, shape, dtype
        self._out = Tensor(self, shape, dtype, name)

    def __repr__(self) -> str:
        return f"placeholder({self.name})"


class ComputeOp(Operation):
    def __init__(
        self,
        name: str,
        axis: Sequence[IterVar],
        body: E.Expr,
        tag: str = "",
        attrs: dict[str, Any] | None = None,
    ) -> None:
        self.name, self.axis, self.body, self.tag = name, tuple(axis), body, tag
        self.attrs = dict(attrs or {})
        self.reduce_axis: tuple[IterVar, ...] = (
            tuple(body.axis) if isinstance(body, E.Reduce) else ()
        )
        self.shape = tuple(iv.dom.extent for iv in self.axis if iv.dom is not None)
        self.dtype = body.dtype
        self._out = Tensor(self, self.shape, self.dtype, name)

    @property
    def input_tensors(self) -> list[Tensor]:
        return tensors_read(self.body)

    def __repr__(self) -> str:
        return f"compute({self.name})"


class Tensor:
    """The output of an operation; index it with ``T[i, j]`` or ``T[i][j]``."""

    def __init__(self, op: Operation, shape: Sequence[int], dtype: str, name: str) -> None:
        self.op, self.shape, self.dtype, self.name = op, tuple(shape), dtype, name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, idx: Any) -> E.TensorLoad | _Slice:
        idx = idx if isinstance(idx, tuple) else (idx,)
        return _Slice(self, ())[idx]

    def __iter__(self) -> Any:
        # without this, iteration would call __getitem__(0), (1), ... for ever
        raise ComputeError(
            f"tensor '{self.name}' cannot be iterated; index it ({self.name}[i]) "
            "or, where a list of tensors is expected, write one ([A, B, C])"
        )

    def __repr__(self) -> str:
        return f"Tensor({self.name}, {self.shape}, {self.dtype})"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


class _Slice(E.ExprOps):
    """A partly indexed tensor (``T[i]`` of a 2-d T), waiting for the remaining indices.

    Using it as a value (``T[i] * 2.0``, ``ts.exp(T[i])``) raises the dimension error: the
    operator sugar of ``ExprOps`` goes through ``as_expr``.
    """

    def __init__(self, tensor, indices):
        self.tensor, self.indices = tensor, indices

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        indices = self.indices + tuple(E.as_expr(i) for i in idx)
        t = self.tensor
        for i in indices:
            if not dt.is_int(i.dtype):
                raise ComputeError(f"index of '{t.name}' must be an integer, got {i.dtype}")
        if len(indices) > t.ndim:
            raise ComputeError(
                f"tensor '{t.name}' has {t.ndim} dimensions but got {len(indices)} indices"
            )
        if len(indices) == t.ndim:
            return E.TensorLoad(t, indices)
        return _Slice(t, indices)

    def as_expr(self):
        raise ComputeError(
            f"tensor '{self.tensor.name}' has {self.tensor.ndim} dimensions but was "
            f"used with {len(self.indices)} indices"
        )

    def __iter__(self):
        self.as_expr()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)  # keep Python's protocols (copy, pickle) sane
        self.as_expr()


def _check_shape(shape: Sequence[int] | int, what: str) -> tuple[int, ...]:
    """The dimensions as Python ints: each a positive integer (Python's or numpy's), and the
    element count within int64, the widest index type."""
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    ints = [dt.to_int(d) for d in dims]
    if not all(n is not None and n > 0 for n in ints):
        raise ComputeError(f"{what}: shape must be positive ints, got {dims!r}")
    out = tuple(n for n in ints if n is not None)
    if math.prod(out) > dt.INT64_MAX:
        raise ComputeError(
            f"{what}: shape {out} has {math.prod(out)} elements, more than int64 "
            f"(the widest index type) can count ({dt.INT64_MAX}); use a smaller shape"
        )
    return out


def placeholder(
    shape: Sequence[int] | int, dtype: str = "float32", name: str = "placeholder"
) -> Tensor:
    """An input tensor."""
    dims = _check_shape(shape, f"placeholder '{name}'")
    return PlaceholderOp(name, dims, dt.check_dtype(dtype, f"placeholder '{name}'")).output(0)


def compute(
    shape: Sequence[int] | int,
    fcompute: Callable[..., Any],
    name: str = "compute",
    tag: str = "",
    attrs: dict[str, Any] | None = None,
) -> Tensor:
    """The tensor whose element at index ``(i, j, ...)`` is ``fcompute(i, j, ...)``."""
    dims = _check_shape(shape, f"compute '{name}'")
    if not callable(fcompute):
        raise ComputeError(
            f"compute '{name}': the second argument must be a function of the "
            f"indices (lambda i, j: ...), got {type(fcompute).__name__}"
        )
    try:
        params = inspect.signature(fcompute).parameters.values()
        names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    except (TypeError, ValueError):
        names, varargs = [], True
    if varargs:
        names = names + [f"i{k}" for k in range(len(names), len(dims))]
    if len(names) != len(dims):
        raise ComputeError(
            f"compute '{name}': the function takes {len(names)} indices but the "
            f"shape {dims} has {len(dims)} dimensions"
        )
    axis = [IterVar(E.Var(n), Range(0, d), "data") for n, d in zip(names, dims)]
    body = fcompute(*[iv.var for iv in axis])
    if isinstance(body, (list, tuple)):
        raise ComputeError(f"compute '{name}': one output per compute; return one expression")
    if isinstance(body, _Slice):
        body[()]  # raises the dimension error
    body = E.as_expr(body)
    _check_body(name, body, axis)
    return ComputeOp(name, axis, body, tag, attrs).output(0)


def _check_body(name, body, axis):
    """A reduction may only be the whole body; the body may only use its own index variables."""
    allowed = {iv.var for iv in axis}
    if isinstance(body, E.Reduce):
        allowed |= {iv.var for iv in body.axis}

    class _Check(Visitor):
        def visit_Reduce(self, r):
            if r is not body:
                raise ComputeError(
                    f"compute '{name}': a reduction (ts.sum/max/min) must be the "
                    "whole body, not part of a larger expression; compute it as "
                    "its own stage"
                )
            self.generic_visit(r)

        def visit_Var(self, v):
            if v not in allowed:
                raise ComputeError(
                    f"compute '{name}': variable '{v.name}' is neither an index "
                    "of this compute nor reduced over; a reduce axis must be "
                    "passed to ts.sum/max/min(..., axis=...)"
                )

    _Check().visit(body)


def tensors_read(node: E.Expr) -> list[Tensor]:
    """The tensors an expression reads, in first-use order."""
    found = {}

    class _V(Visitor):
        def visit_TensorLoad(self, t):
            found[t.tensor] = None
            self.generic_visit(t)

    _V().visit(node)
    return list(found)
