"""The tensor-expression level: ranges, iteration variables, tensors and the operations that
produce them (``placeholder`` and ``compute``)."""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import ComputeError, InternalError, ScheduleError
from . import dtype as dt
from . import expr as E
from .simplify import Extent, extent_of
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


class IntValue(int):
    """A constant bound of a ``Range``: an int that also reads as TVM's ``IntImm``
    (``axis.dom.extent.value``, as TVM's programs and templates read a loop's extent)."""

    __slots__ = ()

    @property
    def value(self) -> int:
        return int(self)


@dataclass(frozen=True)
class Range:
    """``[min, min + extent)``; each an int (an ``IntValue``, so ``.extent.value`` reads it
    as in TVM), or an expression of size variables (an ``Extent``; typed ``Any``, as
    ``Shape`` is, for the integer-only callers)."""

    min: Any
    extent: Any

    def __post_init__(self) -> None:
        for name in ("min", "extent"):
            v = getattr(self, name)
            if type(v) is int:
                object.__setattr__(self, name, IntValue(v))


Shape = tuple[Any, ...]
"""A tensor's dimensions: ints, or (with symbolic sizes) ``Extent`` expressions. Typed ``Any``
per dimension so that the many integer-shape callers (operators, templates) need no casts."""


def var(name: str = "tindex", dtype: str = "int32") -> E.Var:
    """A symbolic integer (TVM's ``te.var``): use it in shapes, extents and split factors; a
    kernel built with it takes its value at each call from the arrays' shapes."""
    _check_var(name, dtype, "var")
    return E.Var(name, dtype, size=True)


def size_var(name: str = "size", dtype: str = "int32") -> E.Var:
    """A symbolic size known to be non-negative (TVM's ``te.size_var``)."""
    _check_var(name, dtype, "size_var")
    return E.Var(name, dtype, nonneg=True, size=True)


def _check_var(name: object, dtype: str, what: str) -> None:
    if not isinstance(name, str) or not name:
        raise ComputeError(f"{what}: the name must be a non-empty str, got {name!r}")
    if dtype not in ("int32", "int64"):
        raise ComputeError(f"{what} '{name}': dtype must be int32 or int64, got {dtype!r}")


def as_extent(value: object, what: str) -> Extent | None:
    """A size given by the user as an extent: an integer (Python's or numpy's), a float of
    integral value (``N / bn``), or an integer expression of symbolic sizes; None otherwise."""
    n = dt.to_int(value)
    if n is not None:
        return n
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, E.ExprOps):
        e = value.as_expr()
        if dt.is_int(e.dtype) and dt.lanes(e.dtype) == 1 and not isinstance(e, E.TensorLoad):
            return extent_of(e)
        raise ComputeError(f"{what}: a size must be an integer expression, got {e.dtype} {e}")
    return None


@dataclass(eq=False)
class IterVar(E.ExprOps):
    """A loop: a variable, its domain, and its kind (``data``, ``reduce`` or ``thread``)."""

    var: E.Var
    dom: Range | None
    kind: str = "data"
    tag: str = ""

    # TVM's IterVar types, the values of ``Stage.iter_var_attrs[iv].iter_type``
    DataPar: ClassVar[int] = 0
    ThreadIndex: ClassVar[int] = 1
    CommReduce: ClassVar[int] = 2
    Ordered: ClassVar[int] = 3
    DimInfo: ClassVar[int] = 4
    Unrolled: ClassVar[int] = 5
    Vectorized: ClassVar[int] = 6
    Parallelized: ClassVar[int] = 7
    Tensorized: ClassVar[int] = 8

    def as_expr(self) -> E.Expr:
        return self.var

    @property
    def name(self) -> str:
        return self.var.name

    @property
    def iter_type(self) -> int:
        """TVM's ``IterVar.iter_type`` of the axis itself: ``DataPar``, ``CommReduce`` or
        ``ThreadIndex`` (a loop's annotation is in ``Stage.iter_var_attrs``, as in TVM)."""
        kinds = {"reduce": self.CommReduce, "thread": self.ThreadIndex}
        return kinds.get(self.kind, self.DataPar)

    @property
    def thread_tag(self) -> str:
        """TVM's ``IterVar.thread_tag``: ``threadIdx.x`` ... for a thread axis, else ``""``."""
        return self.tag if self.kind == "thread" else ""

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


def reduce_axis(dom: Any, name: str = "k") -> IterVar:
    """A reduction axis over ``dom`` = ``(min, max)`` (half-open, TVM style) or an extent;
    the bounds may be Python or numpy integers or expressions of symbolic sizes, and the
    extent must fit in int64."""
    what = f"reduce_axis '{name}'"
    pair = dom if isinstance(dom, (tuple, list)) else (0, dom)
    bounds = [as_extent(d, what) for d in pair] if len(pair) == 2 else []
    if len(bounds) != 2 or bounds[0] is None or bounds[1] is None:
        raise ComputeError(f"{what}: dom must be (begin, end) of ints, got {dom!r}")
    lo, hi = bounds[0], bounds[1]
    if not isinstance(lo, int) or not isinstance(hi, int):
        ext = extent_of(E.as_expr(hi) - E.as_expr(lo))
        if isinstance(ext, int) and ext <= 0:
            raise ComputeError(f"{what}: empty range ({lo}, {hi})")
        return IterVar(E.Var(name), Range(lo, ext), "reduce")
    if hi <= lo:
        raise ComputeError(f"reduce_axis '{name}': empty range ({lo}, {hi})")
    if not all(dt.fits(n, "int64") for n in (lo, hi, hi - lo)):
        raise ComputeError(
            f"reduce_axis '{name}': the range ({lo}, {hi}) does not fit in int64, the widest "
            "index type; use a smaller range"
        )
    return IterVar(E.Var(name), Range(lo, hi - lo), "reduce")


def thread_axis(dom: Any = None, tag: str = "", name: str | None = None) -> IterVar:
    """The work-item index named by ``tag`` (``blockIdx.x`` ... ``threadIdx.z``), or a virtual
    thread (``"vthread"``): a loop whose iterations the compiler interleaves inside one work-item,
    sharing the work-group's ``"shared"`` tiles, so that each work-item's outputs can be spread
    at a stride over the tile (``ts.thread_axis("vthread", name="vx")``; several may be bound).

    As in TVM, the tag may come first (``thread_axis("threadIdx.x")``) or after a range
    (``thread_axis((0, 32), "threadIdx.x")``): the kernel then runs that many work-items along
    the tag, and an axis bound to it with a shorter extent is guarded."""
    if isinstance(dom, str):
        if tag and tag not in THREAD_TAGS and name is None:
            name = tag  # thread_axis(tag, name), tensorsched's older positional form
        tag, dom = dom, None
    if not isinstance(tag, str) or not tag:
        raise ScheduleError(
            "thread_axis",
            None,
            f"give the thread tag (ts.thread_axis('threadIdx.x') or "
            f"ts.thread_axis((0, 32), 'threadIdx.x')), got {dom!r}, {tag!r}",
        )
    if tag not in THREAD_TAGS:
        raise ScheduleError(
            "thread_axis", None, f"unknown thread tag '{tag}'; use one of {', '.join(THREAD_TAGS)}"
        )
    rng = None
    if dom is not None and tag != "vthread":
        rng = _thread_range(dom, tag)
    return IterVar(E.Var(name or tag), rng, "thread", tag)


def _thread_range(dom: Any, tag: str) -> Range:
    """The range ``(0, n)`` (or a ``Range``, or ``n``) of a thread axis of ``tag``."""
    pair = (dom.min, dom.min + dom.extent) if isinstance(dom, Range) else dom
    pair = pair if isinstance(pair, (tuple, list)) else (0, pair)
    bounds = [as_extent(d, f"thread_axis '{tag}'") for d in pair] if len(pair) == 2 else []
    if len(bounds) != 2 or bounds[0] != 0 or bounds[1] is None:
        raise ScheduleError(
            "thread_axis", None, f"the range of '{tag}' must be (0, n), got {dom!r}"
        )
    if isinstance(bounds[1], int) and bounds[1] <= 0:
        raise ScheduleError("thread_axis", None, f"the range of '{tag}' is empty: {dom!r}")
    return Range(0, bounds[1])


class Operation:
    """What produces a tensor: a placeholder (an input) or a compute."""

    name: str
    shape: Shape
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
    def __init__(self, name: str, shape: Shape, dtype: str) -> None:
        self.name, self.shape, self.dtype = name, shape, dtype
        self._out = Tensor(self, shape, dtype, name)

    def __repr__(self) -> str:
        return f"placeholder({self.name})"


class ComputeOp(Operation):
    """``body`` (given) is the expression of the op's one output, or a sequence of them (one
    per output, over the same axes: a multi-output compute); ``bodies`` holds them all, and
    the ``body`` attribute is them as a list, as TVM's ``ComputeOp.body`` is an array."""

    def __init__(
        self,
        name: str,
        axis: Sequence[IterVar],
        body: E.Expr | Sequence[E.Expr],
        tag: str = "",
        attrs: dict[str, Any] | None = None,
    ) -> None:
        bodies = tuple(body) if isinstance(body, (list, tuple)) else (body,)
        self.name, self.axis, self.tag = name, tuple(axis), tag
        self.bodies: tuple[E.Expr, ...] = bodies
        self.attrs = dict(attrs or {})
        first = bodies[0]
        self.reduce_axis: tuple[IterVar, ...] = (
            tuple(first.axis) if isinstance(first, E.Reduce) else ()
        )
        self.shape: Shape = tuple(iv.dom.extent for iv in self.axis if iv.dom is not None)
        self.dtype = first.dtype
        many = len(bodies) > 1
        self._outs = [
            Tensor(self, self.shape, b.dtype, f"{name}.v{k}" if many else name, k)
            for k, b in enumerate(bodies)
        ]
        self._out = self._outs[0]

    @property
    def body(self) -> list[E.Expr]:
        """TVM's ``op.body``: the expression of each output, as a list (``op.body[0]``)."""
        return list(self.bodies)

    @property
    def num_outputs(self) -> int:
        return len(self._outs)

    def output(self, i: int = 0) -> Tensor:
        if not 0 <= i < len(self._outs):
            raise ComputeError(
                f"operation '{self.name}' has {len(self._outs)} output(s), asked for output {i}"
            )
        return self._outs[i]

    @property
    def input_tensors(self) -> list[Tensor]:
        found: dict[Tensor, None] = {}
        for b in self.bodies:
            found.update(dict.fromkeys(tensors_read(b)))
        return list(found)

    def __repr__(self) -> str:
        return f"compute({self.name})"


class ScanOp(ComputeOp):
    """A recurrence over the first axis (TVM's ``te.scan``), of one state or several: output
    ``k`` has state ``k``'s shape; its rows ``[0, init_len)`` are ``inits[k]``'s, and row ``t``
    of the others is ``updates[k]``'s, which (like every update) reads the rows before it
    through the state placeholders (``states[k]``, placeholders of the outputs' shapes).
    ``scan_axis`` is the loop over ``t``; each init and update is a stage of its own (split
    and bind them), computed into its output's buffer: the inits first, then at each step
    the updates, producers first. ``init``, ``update`` and ``state`` are the first state's."""

    def __init__(
        self,
        name: str,
        inits: Sequence[Tensor],
        updates: Sequence[Tensor],
        states: Sequence[Tensor],
        inputs: Sequence[Tensor],
    ) -> None:
        self.name, self.tag, self.attrs = name, "", {}
        self.inits, self.updates, self.states = tuple(inits), tuple(updates), tuple(states)
        self.init, self.update, self.state = self.inits[0], self.updates[0], self.states[0]
        self.inputs = tuple(inputs)
        self.axis, self.reduce_axis = (), ()
        self.bodies = ()  # no expression of its own: lowered from the inits and updates
        self.shape = tuple(self.update.shape)
        self.dtype = self.update.dtype
        first, last = self.init.shape[0], self.update.shape[0]
        self.scan_axis = IterVar(
            E.Var(f"{name}.idx"),
            Range(first, extent_of(E.as_expr(last) - E.as_expr(first))),
            "data",
        )
        many = len(self.updates) > 1
        self._outs = [
            Tensor(self, st.shape, st.dtype, f"{name}.v{k}" if many else name, k)
            for k, st in enumerate(self.states)
        ]
        self._out = self._outs[0]

    @property
    def input_tensors(self) -> list[Tensor]:
        return [*self.inits, *self.updates]

    def state_index(self, op: Operation) -> int | None:
        """Which state ``op`` (a placeholder) stands for, or None."""
        return next((k for k, s in enumerate(self.states) if s.op is op), None)

    def __repr__(self) -> str:
        return f"scan({self.name})"


class Tensor(E.TensorOperand):
    """The output of an operation; index it with ``T[i, j]`` or ``T[i][j]``.

    ``+ - * /`` with a tensor are stages, as TVM's TOPI overloads them: two tensors give a
    broadcast (numpy's rule; tagged ``"broadcast"``), a tensor and a scalar (a number, an
    expression, an element ``B[0, 0]``) an elementwise stage (tagged ``"elemwise"``)."""

    def __init__(
        self, op: Operation, shape: Shape, dtype: str, name: str, value_index: int = 0
    ) -> None:
        self.op, self.shape, self.dtype, self.name = op, tuple(shape), dtype, name
        self.value_index = value_index  # which output of ``op`` this is

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, idx: Any) -> E.TensorLoad | _Slice:
        idx = idx if isinstance(idx, tuple) else (idx,)
        return _Slice(self, ())[idx]

    def __call__(self, *indices: Any) -> E.TensorLoad:
        """``A(i, j)`` is ``A[i, j]`` (TVM's call syntax); ``A()`` reads a rank-0 tensor."""
        if len(indices) != self.ndim:
            raise ComputeError(
                f"tensor '{self.name}' has {self.ndim} dimensions but was called with "
                f"{len(indices)} indices"
            )
        load = _Slice(self, ())[indices] if indices else E.TensorLoad(self, ())
        assert isinstance(load, E.TensorLoad)  # as many indices as dimensions
        return load

    def __iter__(self) -> Any:
        # without this, iteration would call __getitem__(0), (1), ... for ever
        raise ComputeError(
            f"tensor '{self.name}' cannot be iterated; index it ({self.name}[i]) "
            "or, where a list of tensors is expected, write one ([A, B, C])"
        )

    def __repr__(self) -> str:
        return f"Tensor({self.name}, {self.shape}, {self.dtype})"

    def __add__(self, o: Any) -> Tensor:
        return tensor_arith("+", self, o)

    def __radd__(self, o: Any) -> Tensor:
        return tensor_arith("+", o, self)

    def __sub__(self, o: Any) -> Tensor:
        return tensor_arith("-", self, o)

    def __rsub__(self, o: Any) -> Tensor:
        return tensor_arith("-", o, self)

    def __mul__(self, o: Any) -> Tensor:
        return tensor_arith("*", self, o)

    def __rmul__(self, o: Any) -> Tensor:
        return tensor_arith("*", o, self)

    def __truediv__(self, o: Any) -> Tensor:
        return tensor_arith("/", self, o)

    def __rtruediv__(self, o: Any) -> Tensor:
        return tensor_arith("/", o, self)

    def __neg__(self) -> Tensor:
        return tensor_arith("*", self, -1)  # TVM's ExprOp.__neg__ multiplies by -1

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


_ARITH_NAMES = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide"}


def broadcast_shape(a: Sequence[Any], b: Sequence[Any], where: str = "add") -> Shape:
    """numpy's broadcast of two shapes (aligned on the right, a 1 stretches), or a
    ``ComputeError`` naming both. Symbolic dimensions broadcast when they are the same size
    variable, or against a 1."""
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(pa, pb):
        if isinstance(y, int) and y == 1 or _same_dim(x, y):
            out.append(x)
        elif isinstance(x, int) and x == 1:
            out.append(y)
        else:
            raise ComputeError(
                f"{where}: shapes {tuple(a)} and {tuple(b)} do not broadcast (numpy's rule: "
                "equal dimensions, or one of them 1)"
            )
    return tuple(out)


def _same_dim(x: Any, y: Any) -> bool:
    if isinstance(x, int) and isinstance(y, int):
        return x == y
    return x is y


def broadcast_load(t: Tensor, idx: Sequence[Any]) -> Any:
    """``t`` read at the index ``idx`` of a broadcast output: dims aligned on the right,
    size-1 dims read at 0."""
    own = idx[len(idx) - t.ndim :]
    return t(*(0 if isinstance(d, int) and d == 1 else i for i, d in zip(own, t.shape)))


def tensor_arith(op: str, a: Any, b: Any) -> Tensor:
    """``a op b`` where one operand or both are tensors, as TVM's TOPI overloads ``+ - * /``:
    two tensors broadcast into a stage ``T_add`` ... tagged ``"broadcast"``; a tensor and a
    scalar (number, expression, element) give an elementwise stage tagged ``"elemwise"``."""
    fn = {
        "+": lambda x, y: x + y,
        "-": lambda x, y: x - y,
        "*": lambda x, y: x * y,
        "/": lambda x, y: x / y,
    }[op]
    name = f"T_{_ARITH_NAMES[op]}"
    tags = ("", "") if TagScope.get_current() else ("broadcast", "elemwise")  # a scope's wins
    for x in (a, b):
        if not isinstance(x, (Tensor, E.ExprOps, int, float)):
            raise ComputeError(
                f"'{op}' of a tensor and {type(x).__name__} {x!r}: the other operand must be "
                "a tensor, a number or an expression"
            )
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        shape = broadcast_shape(a.shape, b.shape, f"'{op}' of '{a.name}' and '{b.name}'")
        return compute(
            shape, lambda *i: fn(broadcast_load(a, i), broadcast_load(b, i)), name, tags[0]
        )
    t = a if isinstance(a, Tensor) else b
    if t is a:
        return compute(t.shape, lambda *i: fn(t(*i), b), name, tags[1])
    return compute(t.shape, lambda *i: fn(a, t(*i)), name, tags[1])


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


def _check_shape(shape: Any, what: str) -> Shape:
    """The dimensions as Python ints (each positive: Python's or numpy's integers, floats of
    integral value) or integer expressions of symbolic sizes, and the element count within
    int64, the widest index type."""
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    exts = [as_extent(d, what) for d in dims]
    if not all(n is not None and (not isinstance(n, int) or n > 0) for n in exts):
        raise ComputeError(f"{what}: shape must be positive ints, got {dims!r}")
    out = tuple(n for n in exts if n is not None)
    ints = [n for n in out if isinstance(n, int)]
    if math.prod(ints) > dt.INT64_MAX:
        raise ComputeError(
            f"{what}: shape {out} has {math.prod(ints)} elements, more than int64 "
            f"(the widest index type) can count ({dt.INT64_MAX}); use a smaller shape"
        )
    return out


def placeholder(shape: Any, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor."""
    dims = _check_shape(shape, f"placeholder '{name}'")
    return PlaceholderOp(name, dims, dt.check_dtype(dtype, f"placeholder '{name}'")).output(0)


class TagScopeError(ComputeError, ValueError):
    """A ``tag_scope`` inside another, or a ``compute(..., tag=...)`` inside one: TVM raises a
    ValueError there, which this also is."""


class TagScope:
    """TVM's ``te.tag_scope(tag)``: every ``compute`` declared while it is active (``with
    ts.te.tag_scope("gemm"): ...``, or a function decorated with ``@ts.te.tag_scope("conv")``)
    gets ``tag`` as its ``op.tag``. Scopes do not nest, and a compute inside one may not give
    its own ``tag=`` (a ``TagScopeError``, a ValueError as in TVM)."""

    _current: ClassVar[TagScope | None] = None

    def __init__(self, tag: str) -> None:
        if not isinstance(tag, str):
            raise ComputeError(f"tag_scope: the tag must be a string, got {tag!r}")
        self.tag = tag
        self.accessed = False

    @classmethod
    def get_current(cls) -> TagScope | None:
        if cls._current is not None:
            cls._current.accessed = True
        return cls._current

    def __enter__(self) -> TagScope:
        if TagScope._current is not None:
            raise TagScopeError(
                f"tag_scope('{self.tag}'): already inside tag_scope('{TagScope._current.tag}'); "
                "tag scopes do not nest (as in TVM): leave the outer one first"
            )
        TagScope._current = self
        return self

    def __exit__(self, *exc: object) -> None:
        TagScope._current = None

    def __call__(self, fdecl: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fdecl)
        def tagged(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fdecl(*args, **kwargs)

        return tagged


def tag_scope(tag: str) -> TagScope:
    """TVM's ``te.tag_scope``: see ``TagScope``."""
    return TagScope(tag)


def compute(
    shape: Any,
    fcompute: Callable[..., Any],
    name: str = "compute",
    tag: str = "",
    attrs: dict[str, Any] | None = None,
) -> Tensor:
    """The tensor whose element at index ``(i, j, ...)`` is ``fcompute(i, j, ...)``. When
    ``fcompute`` returns several expressions (a tuple or list), the compute has one output per
    expression, over the same axes, and the list of their tensors is returned (TVM's
    multi-output compute; the tensors are named ``name.v0``, ``name.v1`` ...)."""
    dims = _check_shape(shape, f"compute '{name}'")
    scope = TagScope.get_current()
    if scope is not None:
        if tag:
            raise TagScopeError(
                f"compute '{name}': tag='{tag}' given inside tag_scope('{scope.tag}'); "
                "give the tag one way only (TVM does not nest tags either)"
            )
        tag = scope.tag
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
    given = list(body) if isinstance(body, (list, tuple)) else [body]
    if not given:
        raise ComputeError(f"compute '{name}': the function returned no expression")
    bodies = []
    for b in given:
        if isinstance(b, _Slice):
            b[()]  # raises the dimension error
        bodies.append(E.as_expr(b))
    for b in bodies:
        _check_body(name, b, axis)
    if len(bodies) > 1:
        _check_outputs(name, bodies)
    op = ComputeOp(name, axis, bodies if len(bodies) > 1 else bodies[0], tag, attrs)
    if len(bodies) == 1:
        return op.output(0)
    # several outputs: a list of tensors, as TVM returns (typed Tensor for the one-output
    # callers, which are nearly all)
    return [op.output(k) for k in range(len(bodies))]  # type: ignore[return-value]


def scan(
    init: Tensor | Sequence[Tensor],
    update: Tensor | Sequence[Tensor],
    state_placeholder: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor] | None = None,
    name: str = "scan",
) -> Any:  # a Tensor, or a list of them for several states (TVM's Array)
    """A recurrence along the first axis (TVM's ``te.scan``): the result has
    ``update``'s shape; its first ``init.shape[0]`` rows are ``init``, and each later row
    ``t`` is ``update`` at ``t``, which reads earlier rows through ``state_placeholder``
    (``state[t - 1, i]``). Several states, as in TVM: lists of inits, updates and state
    placeholders (one each per state, in the same order; each update may read every state)
    give one output per state, returned as a list (a list of one gives the tensor). Each
    step may read elements that other work-items wrote only if the scan's work-items form one
    work-group (bind threadIdx only): they wait at a barrier after the inits and after each
    update; rows are not synchronised across work-groups."""
    what = f"scan '{name}'"
    lists = [isinstance(x, (list, tuple)) for x in (init, update, state_placeholder)]
    if any(lists) and not all(lists):
        raise ComputeError(
            f"{what}: give init, update and the state as tensors, or all three as lists"
        )
    # checked to be tensors below
    inits, updates, states = (_as_list(x) for x in (init, update, state_placeholder))
    if not len(inits) == len(updates) == len(states) or not inits:
        raise ComputeError(
            f"{what}: {len(inits)} inits, {len(updates)} updates and {len(states)} states; "
            "give one of each per state, in the same order"
        )
    for k, (i, u, st) in enumerate(zip(inits, updates, states)):
        _check_scan_state(what if len(inits) == 1 else f"{what}, state {k}", i, u, st)
    parts = [t.op for t in inits + updates]
    if len(set(parts)) != len(parts) or len({s.op for s in states}) != len(states):
        raise ComputeError(
            f"{what}: each state needs its own init, update and state placeholder (one "
            "tensor is given twice)"
        )
    firsts = [str(t.shape[0]) for t in inits]
    lasts = [str(t.shape[0]) for t in updates]
    if len(set(firsts)) != 1 or len(set(lasts)) != 1:
        raise ComputeError(
            f"{what}: the inits' first dimensions ({', '.join(firsts)}) and the updates' "
            f"({', '.join(lasts)}) must agree: the states step together"
        )
    if isinstance(inputs, Tensor):  # TVM takes one tensor as well as a list
        inputs = [inputs]
    op = ScanOp(name, inits, updates, states, inputs or ())
    if len(states) == 1:
        return op.output(0)
    return [op.output(k) for k in range(len(states))]


def _as_list(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _check_scan_state(what: str, init: Any, update: Any, state: Any) -> None:
    if not all(isinstance(x, Tensor) for x in (init, update, state)):
        raise ComputeError(f"{what}: init, update and the state must be tensors")
    if not isinstance(state.op, PlaceholderOp):
        raise ComputeError(f"{what}: the state must be a ts.placeholder of the result's shape")
    for t in (init, update):
        if not isinstance(t.op, ComputeOp) or isinstance(t.op, ScanOp) or t.op.num_outputs != 1:
            raise ComputeError(f"{what}: '{t.name}' must be a ts.compute of one output")
    sh = [tuple(map(str, t.shape)) for t in (init, update, state)]
    if not (sh[0][1:] == sh[1][1:] == sh[2][1:] and sh[1] == sh[2] and len(sh[0]) >= 1):
        raise ComputeError(
            f"{what}: init {init.shape}, update {update.shape} and state "
            f"{state.shape} must share their trailing dimensions, and update "
            "the state's shape"
        )
    if not init.dtype == update.dtype == state.dtype:
        raise ComputeError(f"{what}: init, update and the state must have one dtype")


def _check_outputs(name: str, bodies: Sequence[E.Expr]) -> None:
    """The bodies of a multi-output compute: no reduction, or all the values of one tuple
    reduction (``comm_reducer`` over a tuple), in its order."""
    reduces = [b for b in bodies if isinstance(b, E.Reduce)]
    if not reduces:
        return
    first = reduces[0]
    one = (
        len(reduces) == len(bodies)
        and len(first.sources) == len(bodies)
        and all(
            r.sources == first.sources and r.axis == first.axis and r.value_index == k
            for k, r in enumerate(reduces)
        )
    )
    if not one:
        raise ComputeError(
            f"compute '{name}': a multi-output compute reduces only as one tuple reduction "
            "(ts.comm_reducer over a tuple, e.g. argmax), returning all its values in order; "
            "compute other reductions in their own stages"
        )


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
            if v not in allowed and not v.size:
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
