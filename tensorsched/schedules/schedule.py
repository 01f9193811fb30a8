"""``Schedule`` and ``Stage``: the primitives record what to do; ``lower`` does it.

Each primitive checks that it is legal, appends a relation (``Split``, ``Fuse``) or sets an
attribute, and updates the stage's leaf order. No loop IR is touched here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, SupportsIndex, overload

import networkx as nx

from ..errors import ScheduleError
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir.simplify import Extent, extent_of
from ..ir.stmt import SCOPES
from ..ir.tensor import (
    ComputeOp,
    IterVar,
    Operation,
    PlaceholderOp,
    Range,
    ScanOp,
    Tensor,
    tensors_read,
)
from ..ir.visitor import Mutator, Substitute, substitute
from ..passes.peel_tail import PEEL_PRAGMA
from .relations import TAILS, Fuse, Singleton, Split, pass_down, pass_up


class PragmaKey(str):
    """A pragma's key as TVM exposes it (a string with ``.value``)."""

    @property
    def value(self) -> str:
        return str(self)


_ITER_TYPES = {
    "unrolled": IterVar.Unrolled,
    "vectorized": IterVar.Vectorized,
    "parallel": IterVar.Parallelized,
}


@dataclass
class IterAttr:
    """The annotations of one loop of a stage; TVM's ``IterVarAttr`` fields (``iter_type``,
    ``bind_thread``, ``pragma_keys``, ``pragma_values``) read them."""

    kind: str = "serial"  # serial / unrolled / vectorized / parallel
    bind: IterVar | None = None  # thread_axis this loop is bound to
    pragmas: list[tuple[str, Any]] = field(default_factory=list)

    @property
    def iter_type(self) -> int:
        if self.bind is not None:
            return IterVar.ThreadIndex
        return _ITER_TYPES.get(self.kind, IterVar.DataPar)

    @property
    def bind_thread(self) -> IterVar | None:
        return self.bind

    @property
    def pragma_keys(self) -> tuple[PragmaKey, ...]:
        return tuple(PragmaKey(k) for k, _ in self.pragmas)

    @property
    def pragma_values(self) -> tuple[Any, ...]:
        return tuple(v for _, v in self.pragmas)


class Stage:
    """How one operation is computed: its loops, their order and annotations, where it lives."""

    def __init__(self, op: ComputeOp, schedule: Schedule) -> None:
        self.op, self.origin_op, self.schedule = op, op, schedule
        self.all_iter_vars: list[IterVar] = list(op.axis) + list(op.reduce_axis)
        self.leaf_iter_vars: list[IterVar] = list(self.all_iter_vars)
        self.relations: list[Split | Fuse | Singleton] = []
        self.attrs: dict[IterVar, IterAttr] = {}
        self.attach_type = "root"  # root / inline / scope
        self.attach_stage: Stage | None = None
        self.attach_ivar: IterVar | None = None
        self.scope: str | None = None  # storage scope; None: decided by lowering
        self.layout: tuple[int, ...] | None = None  # storage order of the axes (transform_layout)
        self.align: dict[int, tuple[int, int]] = {}  # axis position -> (factor, offset)
        self.double_buffered: bool | str = False  # double_buffer(): False or its scope
        self.store_predicate: E.Expr | None = None  # set_store_predicate(): stores only where
        self.is_output = False
        self.group: Group | None = None  # the create_group group it belongs to
        self.env_thread_axes: tuple[IterVar, ...] = ()  # a scan's env_threads()

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def iter_var_attrs(self) -> Mapping[IterVar, IterAttr]:
        """TVM's ``Stage.iter_var_attrs``: each annotated loop -> its ``IterAttr``
        (``.iter_type`` is one of ``IterVar.Unrolled``, ``Vectorized``, ``ThreadIndex`` ...)."""
        return MappingProxyType(self.attrs)

    def __repr__(self) -> str:
        return f"stage({self.name})"

    # ---- checks

    def _error(self, primitive: str, message: str, axis: IterVar | None = None) -> ScheduleError:
        return ScheduleError(primitive, self, message, axis)

    def _check_leaf(self, primitive: str, iv: object) -> IterVar:
        if not isinstance(iv, IterVar):
            raise self._error(
                primitive,
                f"expected an axis (IterVar), got {type(iv).__name__} "
                f"{iv!r}; take axes from s[T].op.axis or from split/fuse",
            )
        if iv in self.leaf_iter_vars:
            return iv
        if iv in self.all_iter_vars:
            child = [
                r
                for r in self.relations
                if getattr(r, "parent", None) is iv
                or getattr(r, "outer", None) is iv
                or getattr(r, "inner", None) is iv
            ]
            how = (
                "split"
                if child and isinstance(child[0], Split) and child[0].parent is iv
                else "fused"
            )
            raise self._error(
                primitive,
                f"axis '{iv.var.name}' was already {how}; use the axes that {how} returned instead",
                iv,
            )
        owner = self.schedule._owner(iv)
        where = f"it belongs to stage '{owner.name}'" if owner else "it is not an axis of it"
        raise self._error(
            primitive,
            f"axis '{iv.var.name}' is not a loop of this stage: {where}; "
            f"use s[{self.name}].op.axis",
            iv,
        )

    def _check_not_inline(self, primitive: str) -> None:
        if self.attach_type == "inline":
            raise self._error(
                primitive, "the stage was inlined (compute_inline) and has no loops of its own"
            )

    def _check_one_output(self, primitive: str) -> None:
        if len(getattr(self.op, "bodies", ())) > 1:
            raise self._error(
                primitive,
                f"the stage has {len(self.op.bodies)} outputs (a multi-output compute); "
                f"{primitive} takes a stage of one output",
            )

    def _attr(self, iv: IterVar) -> IterAttr:
        return self.attrs.setdefault(iv, IterAttr())

    def _check_plain(self, primitive: str, iv: IterVar) -> None:
        """``iv`` carries no annotation that ``primitive`` (split/fuse) would silently drop."""
        a = self.attrs.get(iv)
        if a is None:
            return
        what = _annotation(a)
        if what:
            raise self._error(
                primitive,
                f"axis '{iv.var.name}' is {what}, which {primitive} would "
                f"drop; call {primitive} first and annotate its result",
                iv,
            )

    # ---- loop structure

    def split(
        self,
        parent: IterVar,
        factor: SupportsIndex | E.Expr | None = None,
        nparts: SupportsIndex | E.Expr | None = None,
        tail: str = "guard",
        disable_predication: bool = False,
    ) -> tuple[IterVar, IterVar]:
        """Split ``parent`` into ``(outer, inner)``; ``inner`` has ``factor`` iterations (or
        ``outer`` has ``nparts``). A factor that does not divide the extent is legal; ``tail``
        says what becomes of the last, partial tile (TVM's ``disable_predication=True`` is
        accepted and changes nothing: a guard is left out wherever the split is known to
        divide, and kept where it may not, where TVM would access past the tensor):

        - ``"guard"`` (TVM's way): every element of every tile is checked against the extent;
        - ``"shift"``: the last tile moves inwards to end at the extent, so no tile needs a
          check (the overlap is computed twice: data axes only, with the outer loop outside the
          stage's reduction loops; an extent shorter than the tile falls back to ``"guard"``);
        - ``"peel"``: the last iteration of the outer loop is written out after the loop, which
          runs guard-free (the outer loop must stay a serial loop of this stage).
        """
        self._check_not_inline("split")
        self._check_leaf("split", parent)
        self._check_plain("split", parent)
        if (factor is None) == (nparts is None):
            raise self._error("split", "give exactly one of factor= or nparts=", parent)
        if tail not in TAILS:
            raise self._error(
                "split", f"tail must be one of {', '.join(map(repr, TAILS))}, got {tail!r}", parent
            )
        if tail == "shift" and parent.kind == "reduce":
            raise self._error(
                "split",
                f"'{parent.var.name}' is a reduction axis: a shifted last tile would add its "
                "overlap twice; use tail='peel' or tail='guard'",
                parent,
            )
        what = "factor" if factor is not None else "nparts"
        given = factor if factor is not None else nparts
        n: Extent | None = dt.to_int(given)
        if isinstance(given, E.Expr) and dt.is_int(given.dtype) and dt.lanes(given.dtype) == 1:
            n = extent_of(given)  # a symbolic factor, an expression of size variables
        if n is None or (isinstance(n, int) and n <= 0):
            raise self._error(
                "split",
                f"the {what} must be a positive int, got {factor if nparts is None else nparts!r}",
                parent,
            )
        if isinstance(n, int) and n > dt.INT64_MAX:
            raise self._error(
                "split",
                f"the {what} {n} does not fit in int64, the widest index type; pass at "
                "most the axis's extent",
                parent,
            )
        kind = parent.kind
        outer = IterVar(E.Var(parent.var.name + ".outer"), None, kind)
        inner = IterVar(E.Var(parent.var.name + ".inner"), None, kind)
        f, p = (n, None) if factor is not None else (None, n)
        self.relations.append(Split(parent, outer, inner, f, p, tail))
        if tail == "peel":
            self._attr(outer).pragmas.append((PEEL_PRAGMA, 1))
        self.all_iter_vars += [outer, inner]
        pos = self.leaf_iter_vars.index(parent)
        self.leaf_iter_vars[pos : pos + 1] = [outer, inner]
        return outer, inner

    def tile(
        self,
        x_parent: IterVar,
        y_parent: IterVar,
        x_factor: SupportsIndex | E.Expr,
        y_factor: SupportsIndex | E.Expr,
    ) -> tuple[IterVar, IterVar, IterVar, IterVar]:
        """Split two axes and order the result ``xo, yo, xi, yi``."""
        xo, xi = self.split(x_parent, x_factor)
        yo, yi = self.split(y_parent, y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def fuse(self, *args: IterVar | Sequence[IterVar]) -> IterVar:
        """Fuse adjacent axes (outermost first) into one. With no axes, as in TVM, a new loop
        of one iteration outside all the others (to bind or attach at); with one axis, as in
        TVM, that axis itself."""
        self._check_not_inline("fuse")
        given = _one_list(args)
        if not given:
            single = IterVar(E.Var("singleton"), None, "data")
            self.relations.append(Singleton(single))
            self.all_iter_vars.append(single)
            self.leaf_iter_vars.insert(0, single)
            return single
        if len(given) == 1:  # TVM returns a single axis unchanged
            return self._check_leaf("fuse", given[0])
        axes = []
        for x in given:  # each axis checked in full before the next, as written
            iv = self._check_leaf("fuse", x)
            self._check_plain("fuse", iv)
            axes.append(iv)
        fused = axes[0]
        for inner in axes[1:]:
            fused = self._fuse2(fused, inner)
        return fused

    def _fuse2(self, outer: IterVar, inner: IterVar) -> IterVar:
        po, pi = self.leaf_iter_vars.index(outer), self.leaf_iter_vars.index(inner)
        if pi != po + 1:
            raise self._error(
                "fuse",
                f"axes '{outer.var.name}' and '{inner.var.name}' are not "
                "adjacent (outer first) in the loop order; reorder them first",
                inner,
            )
        if outer.kind != inner.kind:
            raise self._error(
                "fuse", f"cannot fuse a {outer.kind} axis with a {inner.kind} axis", inner
            )
        fused = IterVar(E.Var(f"{outer.var.name}.{inner.var.name}.fused"), None, outer.kind)
        self.relations.append(Fuse(outer, inner, fused))
        self.all_iter_vars.append(fused)
        self.leaf_iter_vars[po : pi + 1] = [fused]
        return fused

    def reorder(self, *args: IterVar | Sequence[IterVar]) -> None:
        """Put the given axes in this relative order; the other loops keep their places."""
        self._check_not_inline("reorder")
        axes, seen = [], set()
        for x in _one_list(args):
            iv = self._check_leaf("reorder", x)
            axes.append(iv)
            if id(iv) in seen:
                raise self._error("reorder", f"axis '{iv.var.name}' is listed twice", iv)
            seen.add(id(iv))
        positions = sorted(self.leaf_iter_vars.index(iv) for iv in axes)
        for pos, iv in zip(positions, axes):
            self.leaf_iter_vars[pos] = iv

    # ---- annotations

    def _annotate(self, primitive: str, iv: IterVar, kind: str) -> None:
        self._check_not_inline(primitive)
        self._check_leaf(primitive, iv)
        a = self._attr(iv)
        if a.bind is not None:
            raise self._error(
                primitive,
                f"axis '{iv.var.name}' is bound to {a.bind.tag}; a bound "
                "axis cannot also be " + kind,
                iv,
            )
        if kind == "vectorized" and iv.kind == "reduce":
            raise self._error(
                primitive,
                f"'{iv.var.name}' is a reduction axis; vectorize a data "
                "axis (reorder it innermost) instead",
                iv,
            )
        if kind == "parallel" and iv.kind == "reduce":
            raise self._error(
                primitive, f"'{iv.var.name}' is a reduction axis and cannot run in parallel", iv
            )
        a.kind = kind

    def unroll(self, iv: IterVar) -> None:
        self._annotate("unroll", iv, "unrolled")

    def vectorize(self, iv: IterVar) -> None:
        self._annotate("vectorize", iv, "vectorized")

    def parallel(self, iv: IterVar) -> None:
        self._annotate("parallel", iv, "parallel")

    def pragma(self, iv: IterVar, key: str, value: Any = 1) -> None:
        """Attach ``key = value`` to the loop of ``iv`` (for example ``unroll_explicit``). As in
        TVM, the keys ``"unroll"`` and ``"vectorize"`` annotate the loop as ``unroll`` and
        ``vectorize`` do."""
        self._check_not_inline("pragma")
        self._check_leaf("pragma", iv)
        if not isinstance(key, str):
            raise self._error("pragma", f"pragma key must be a string, got {key!r}", iv)
        if key in ("unroll", "vectorize"):
            self._annotate("pragma", iv, "unrolled" if key == "unroll" else "vectorized")
            return
        self._attr(iv).pragmas.append((key, value))

    def bind(self, iv: IterVar, thread: IterVar) -> None:
        """Run the loop of ``iv`` as the work-item index ``thread`` (``ts.thread_axis(tag)``)."""
        self._check_not_inline("bind")
        self._check_leaf("bind", iv)
        if not isinstance(thread, IterVar) or thread.kind != "thread":
            raise self._error(
                "bind", f"the second argument must be ts.thread_axis(tag), got {thread!r}", iv
            )
        if iv.kind == "reduce" and not thread.tag.startswith("threadIdx"):
            raise self._error(
                "bind",
                f"'{iv.var.name}' is a reduction axis; it can be bound to a threadIdx tag (a "
                f"reduction across the work-items of a group), not to {thread.tag}: use "
                "rfactor to spread a reduction over work-groups",
                iv,
            )
        a = self._attr(iv)
        if a.bind is not None:
            raise self._error("bind", f"axis '{iv.var.name}' is already bound to {a.bind.tag}", iv)
        for other, oa in self.attrs.items():
            if (
                oa.bind is not None
                and oa.bind.tag == thread.tag
                and (thread.tag != "vthread" or oa.bind is thread)
            ):
                raise self._error(
                    "bind",
                    f"{thread.tag} is already bound to axis "
                    f"'{other.var.name}' of this stage; bind another tag",
                    iv,
                )
        if a.kind != "serial":
            raise self._error(
                "bind", f"axis '{iv.var.name}' is {a.kind}; a bound axis cannot be", iv
            )
        a.bind = thread

    def env_threads(self, threads: IterVar | Sequence[IterVar]) -> None:
        """TVM's ``env_threads`` of a scan (its persistent kernel): the work-items that run the
        scan's steps. tensorsched runs a scan's steps in the work-items that its init and
        update are bound to already (one kernel, a barrier after each step where a step
        reads what others wrote), so this records the threads and checks them; a stage
        cannot be computed at one of them (compute it at a loop of the update instead)."""
        if not isinstance(self.op, ScanOp):
            raise self._error(
                "env_threads", "it is not a scan; env_threads applies to a scan's stage"
            )
        given = [threads] if isinstance(threads, IterVar) else list(threads)
        for t in given:
            if not isinstance(t, IterVar) or t.kind != "thread" or t.tag == "vthread":
                raise self._error(
                    "env_threads",
                    f"expected thread axes (ts.thread_axis('blockIdx.x') ...), got {t!r}",
                )
        self.env_thread_axes = tuple(given)

    def set_store_predicate(self, predicate: E.ExprLike) -> None:
        """Store the stage's results only where ``predicate`` holds (TVM's
        ``set_store_predicate``; ``tx.var.equal(0)`` names the work-item index of the thread
        axis ``tx`` bound in this stage). A reduction across work-items stores from work-item
        0 of its threadIdx tag anyway."""
        self._check_not_inline("set_store_predicate")
        pred = E.as_expr(predicate)
        if not dt.is_bool(pred.dtype):
            raise self._error(
                "set_store_predicate", f"the predicate must be a condition, got {pred.dtype}"
            )
        self.store_predicate = pred

    # ---- placement

    def compute_at(self, parent: Stage, iv: IterVar) -> None:
        """Compute this stage inside the loop ``iv`` of stage ``parent``, just what it needs."""
        self._check_not_scan_part("compute_at")
        if not isinstance(parent, Stage):
            raise self._error(
                "compute_at", f"the first argument must be a stage (s[T]), got {parent!r}"
            )
        if parent is self:
            raise self._error("compute_at", "a stage cannot be computed inside itself")
        if parent.schedule is not self.schedule:
            raise self._error(
                "compute_at",
                f"stage '{parent.name}' belongs to another schedule; "
                "take both stages from the same schedule s",
            )
        if parent.attach_type == "inline":
            raise self._error(
                "compute_at",
                f"stage '{parent.name}' was inlined "
                "(compute_inline) and has no loops; attach it to a stage that "
                "has loops",
            )
        if isinstance(parent.op, ScanOp) and (
            iv in parent.env_thread_axes or iv is parent.op.scan_axis
        ):
            what = "one of its env_threads" if iv in parent.env_thread_axes else "its step"
            updates = ", ".join(f"'{t.name}'" for t in parent.op.updates)
            raise self._error(
                "compute_at",
                f"axis '{iv.var.name}' is {what} of scan '{parent.name}'; tensorsched "
                "computes nothing between a scan's steps but its parts: compute "
                f"'{self.name}' at a loop of the update ({updates}) instead",
                iv,
            )
        parent._check_leaf("compute_at", iv)
        if self.is_output:
            raise self._error(
                "compute_at", "it is an output of the schedule and must be computed at the root"
            )
        if not self.schedule._reads_transitively(parent, self):
            raise self._error(
                "compute_at",
                f"stage '{parent.name}' does not read '{self.name}' "
                f"(directly or through other stages); compute '{self.name}' at a "
                "stage that consumes it",
            )
        self.attach_type, self.attach_stage, self.attach_ivar = "scope", parent, iv

    def compute_inline(self) -> None:
        """Substitute this stage's expression into every consumer instead of storing it."""
        self._check_one_output("compute_inline")
        self._check_not_scan_part("compute_inline")
        if self.is_output:
            raise self._error(
                "compute_inline",
                "it is an output of the schedule; only intermediate stages can be inlined",
            )
        if self.op.reduce_axis:
            raise self._error(
                "compute_inline",
                "it is a reduction; a reduction cannot be "
                "inlined, use compute_at to place it inside its consumer",
            )
        if self.schedule._has_attached(self):
            raise self._error(
                "compute_inline",
                "other stages are computed at its loops; inline or move them first",
            )
        self.attach_type, self.attach_stage, self.attach_ivar = "inline", None, None

    def compute_root(self) -> None:
        self._check_not_scan_part("compute_root")
        self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None

    def _check_not_scan_part(self, primitive: str) -> None:
        if self.attach_type == "scan":
            assert self.attach_stage is not None  # the scan it belongs to
            raise self._error(
                primitive,
                f"it is the init or update of scan '{self.attach_stage.name}', computed into "
                "the scan's rows; split and bind its axes instead",
            )

    def set_scope(self, scope: str) -> None:
        """Keep this stage in ``scope`` memory: ``"global"``, ``"shared"`` (``__local``, one
        copy per work-group), ``"local"`` (private to a work-item) or TVM's ``"warp"``, which
        on OpenCL 1.2 (no warp shuffles) is ``__local`` memory shared by the work-group, as
        ``"shared"`` is."""
        _check_scope(scope, "set_scope", self)
        self.scope = scope

    def transform_layout(self, mapping: Callable[..., Sequence[E.Var]]) -> None:
        """Store this stage's tensor with its dimensions permuted. ``mapping`` receives the
        stage's axes (as variables) and returns them in storage order: ``lambda i, k: [k, i]``
        keeps a ``"shared"`` tile of A column-major, so that a work-item's rows of A are adjacent
        and load as one vector. Only permutations are supported (TVM also allows split and fused
        dimensions); the stage's loops are unchanged: reorder them to match if you like."""
        self._check_not_inline("transform_layout")
        if not callable(mapping):
            raise self._error(
                "transform_layout",
                f"expected a function of the {len(self.op.axis)} "
                f"axes, e.g. lambda i, j: [j, i]; got {mapping!r}",
            )
        axes = [iv.var for iv in self.op.axis]
        try:
            out = list(mapping(*axes))
        except TypeError as exc:
            raise self._error(
                "transform_layout",
                f"calling the mapping with the {len(axes)} "
                f"axes ({', '.join(v.name for v in axes)}) failed: {exc}",
            ) from None
        pos = {v: k for k, v in enumerate(axes)}
        if (
            len(out) != len(axes)
            or any(not isinstance(v, E.Var) or v not in pos for v in out)
            or len(set(out)) != len(out)
        ):
            raise self._error(
                "transform_layout",
                "the mapping must return each axis exactly once, "
                f"in the new order (a permutation of {', '.join(v.name for v in axes)}); "
                f"got {out!r}",
            )
        self.layout = tuple(pos[v] for v in out)

    def double_buffer(self, scope: str = "shared") -> None:
        """Keep a second copy of this ``"shared"`` tile so that the next iteration's is filled
        while the work-group computes on this one. ``scope="shared"``: the tile is allocated
        twice, one barrier per iteration; ``"local"``: the next tile's global loads go to
        registers first (stored into the tile after this iteration's computation), so their
        latency hides behind it; ``"both"``: staged in registers and stored into the other of
        two tile copies, one barrier per iteration. The stage must be attached to a loop
        (``compute_at``); where
        that loop has one iteration, or other statements come before the tile fills in its
        body, nothing changes."""
        self._check_not_inline("double_buffer")
        if scope not in ("shared", "local", "both"):
            raise self._error(
                "double_buffer",
                f"the second copy's scope must be 'shared', "
                f"'local' (registers) or 'both', got {scope!r}",
            )
        self.double_buffered = scope

    def storage_align(self, axis: IterVar, factor: SupportsIndex, offset: SupportsIndex) -> None:
        """Pad this stage's buffer so that the stride of dimension ``axis`` (an element of
        ``op.axis``) is ``k*factor + offset`` elements: ``storage_align(AA.op.axis[0], 32, 1)``
        on a ``"shared"`` tile with 32-element rows makes its rows 33 elements apart, so the
        work-items that read one column hit different memory banks."""
        self._check_not_inline("storage_align")
        if axis not in self.op.axis:
            name = getattr(getattr(axis, "var", None), "name", None)
            raise self._error(
                "storage_align",
                f"{repr(name) if name else repr(axis)} is not "
                "one of this stage's axes "
                f"({', '.join(iv.var.name for iv in self.op.axis)}); pass "
                "s[T].op.axis[k]",
            )
        f, o = dt.to_int(factor), dt.to_int(offset)
        if f is None or o is None or f < 1 or not 0 <= o < f:
            raise self._error(
                "storage_align",
                f"need integers factor >= 1 and 0 <= offset < "
                f"factor, got factor={factor!r}, offset={offset!r}",
                axis,
            )
        self.align[self.op.axis.index(axis)] = (f, o)

    def tensorize(self, var: IterVar, tensor_intrin: object) -> None:
        """TVM's ``tensorize``: refused. It replaces the loops from ``var`` inwards with a call
        of a hardware tensor intrinsic (``te.decl_tensor_intrin``); an OpenCL C 1.2 kernel has
        no such intrinsics to call and tensorsched no registry of them."""
        raise self._error(
            "tensorize",
            "tensor intrinsics are not supported (an OpenCL C 1.2 kernel has no tensor "
            "instructions to map the loops onto); leave the loops as they are and schedule "
            "them with unroll / vectorize, which emit OpenCL vector code",
            var,
        )


class Group:
    """A group of stages (``s.create_group``) placed as a unit: ``compute_at`` computes each
    of its stages that is at the root (or was placed with the group) inside the given loop,
    producers first, each what the group's consumers there need; ``compute_inline`` and
    ``compute_root`` apply to every stage. A stage of the group may still be placed inside
    another stage of the group afterwards. ``group``: the group this one was made part of
    (``create_group`` of stages of which some already formed this group), as in TVM; a stage's
    ``group`` is the innermost group it belongs to."""

    def __init__(self, members: Sequence[Stage], schedule: Schedule | None = None) -> None:
        self.members = list(members)
        self.group: Group | None = None
        self.schedule = schedule
        # TVM's Stage fields of a group: where ``compute_at`` placed it ("scope", the stage)
        # or, for a scan's group, the scan ("scan")
        self.attach_type = "root"
        self.attach_stage: Stage | None = None
        self.attach_ivar: IterVar | None = None

    @property
    def num_child_stages(self) -> int:
        """TVM's ``num_child_stages``: the stages and groups directly in this group."""
        groups = self.schedule.groups if self.schedule is not None else []
        return sum(st.group is self for st in self.members) + sum(g.group is self for g in groups)

    def __repr__(self) -> str:
        return f"group({', '.join(st.name for st in self.members)})"

    def _placed(self) -> list[Stage]:
        return [st for st in self.members if st.attach_type in ("root", "scope")]

    def compute_at(self, parent: Stage, iv: IterVar) -> None:
        if parent in self.members:
            raise ScheduleError(
                "compute_at",
                parent,
                "it belongs to the group being placed; attach the group to a stage outside it",
            )
        for st in self._placed():
            if st.attach_type == "root" or st.attach_stage not in self.members:
                st.compute_at(parent, iv)
        self.attach_type, self.attach_stage, self.attach_ivar = "scope", parent, iv

    def compute_root(self) -> None:
        for st in self._placed():
            if st.attach_stage not in self.members:
                st.compute_root()
        self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None

    def compute_inline(self) -> None:
        for st in reversed(self.members):  # consumers first: nothing is attached to them
            st.compute_inline()
        self.attach_type, self.attach_stage, self.attach_ivar = "inline", None, None


def _group_chain(st: Stage) -> list[Group]:
    """The groups ``st`` belongs to, innermost first."""
    chain, g = [], st.group
    while g is not None:
        chain.append(g)
        g = g.group
    return chain


def _one_list(args: tuple[object, ...]) -> list[object]:
    """The arguments of a primitive that takes axes either spread out or as one list."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0])
    return list(args)


# TVM's "warp" scope: memory shared by the threads of a warp, read through warp shuffles.
# OpenCL 1.2 has neither warps nor shuffles, so a "warp" stage is a "shared" one: ``__local``
# memory of the whole work-group, filled cooperatively and read after a barrier. Its tile
# covers the work-group (TVM's covers a warp: threadIdx.x), which is correct for every
# schedule TVM accepts, at the cost of ``__local`` memory instead of registers.
WARP = "warp"


def _check_scope(scope: object, primitive: str, stage: Stage | None = None) -> None:
    if scope not in SCOPES and scope != WARP:
        raise ScheduleError(
            primitive,
            stage,
            f"unknown scope '{scope}'; use one of {', '.join((*SCOPES, WARP))}",
        )


class _ReplaceTensors(Mutator):
    def __init__(self, tmap: Mapping[Tensor, Tensor]) -> None:
        self.tmap = tmap

    def visit_TensorLoad(self, t: E.TensorLoad) -> E.Expr:
        idx = tuple(self.visit(i) for i in t.indices)
        return E.TensorLoad(self.tmap.get(t.tensor, t.tensor), idx)


class Schedule:
    """The stages of a computation, in dataflow order, and the primitives that add stages."""

    def __init__(self, outputs: Sequence[Operation]) -> None:
        self.outputs = list(outputs)
        self.image_inputs: set[PlaceholderOp] = set()
        self.stages: list[Stage] = []
        self.stage_map: dict[Operation, Stage] = {}
        self.placeholders: list[PlaceholderOp] = []
        for op in _post_order(self.outputs):
            if isinstance(op, ComputeOp):
                st = Stage(op, self)
                self.stages.append(st)
                self.stage_map[op] = st
            elif isinstance(op, PlaceholderOp):
                self.placeholders.append(op)
        for op in self.outputs:
            self.stage_map[op].is_output = True
        self.groups: list[Group] = []
        for st in self.stages:  # a scan's init and update are computed into the scan
            if isinstance(st.op, ScanOp):
                for part in (*st.op.inits, *st.op.updates):
                    inner = self.stage_map[part.op]
                    inner.attach_type, inner.attach_stage = "scan", st
        for st in self.stages:
            if isinstance(st.op, ScanOp):
                self._scan_group(st)

    def _scan_group(self, scan: Stage) -> None:
        """TVM's scan group: the scan's updates and the stages between its states and them
        (a stage of the step that reads a state, such as ``s_update1`` of TVM's
        ``test_scan_group``), as one ``Group`` attached to the scan. Each such stage must be
        computed at each step, after the rows it reads were written: it is computed at the
        row loop of the update that reads it (one row per step, as TVM's bound inference
        gives); ``compute_at`` may place it deeper inside the update. A stage read by two
        updates stays at the root, and lowering says so (a ScheduleError)."""
        op = scan.op
        assert isinstance(op, ScanOp)
        states = {t.op for t in op.states}
        parts = {self.stage_map[t.op] for t in (*op.inits, *op.updates)}
        reads_state: dict[Stage, bool] = {}
        for st in self.stages:  # producers first
            reads_state[st] = st not in parts and any(
                t.op in states or reads_state.get(self.stage_map.get(t.op), False)  # type: ignore[arg-type]
                for t in st.op.input_tensors
            )
        updates = [self.stage_map[t.op] for t in op.updates]
        body = [
            st
            for st in self.stages
            if reads_state[st] and any(self._reads_transitively(u, st) for u in updates)
        ]
        group = Group([*body, *updates], self)
        group.members.sort(key=self.stages.index)
        group.attach_type, group.attach_stage = "scan", scan
        for st in group.members:
            st.group = group
        self.groups.append(group)
        for st in body:
            readers = [u for u in updates if self._reads_transitively(u, st)]
            if len(readers) == 1 and not st.is_output:
                st.attach_type, st.attach_stage = "scope", readers[0]
                st.attach_ivar = readers[0].op.axis[0]

    @overload
    def __getitem__(self, t: Group) -> Group: ...

    @overload
    def __getitem__(self, t: Tensor | Operation | Stage) -> Stage: ...

    def __getitem__(self, t: Tensor | Operation | Stage | Group) -> Stage | Group:
        op = t.op if isinstance(t, Tensor) else t
        if isinstance(op, (Stage, Group)):
            return op  # s[g] is the group, as in TVM
        if isinstance(op, PlaceholderOp):
            raise ScheduleError(
                "schedule",
                None,
                f"'{op.name}' is a placeholder (an input); it has no loops to schedule",
            )
        if op not in self.stage_map:
            name = getattr(op, "name", repr(op))
            raise ScheduleError(
                "schedule",
                None,
                f"'{name}' is not part of this schedule; "
                "create_schedule from the ops that produce it",
            )
        return self.stage_map[op]

    def stage_of(self, tensor: Tensor) -> Stage | None:
        return self.stage_map.get(tensor.op)

    def normalize(self) -> Schedule:
        """TVM's ``s.normalize()``: rebase every loop to start at 0. tensorsched's loops always
        do (a reduce axis over ``(lo, hi)`` runs from 0 and reads ``k + lo``), so the schedule
        is returned as it is."""
        return self

    def create_group(
        self,
        outputs: Tensor | Sequence[Tensor],
        inputs: Tensor | Sequence[Tensor],
        include_inputs: bool = False,
    ) -> Group:
        """TVM's ``s.create_group``: the stages that compute ``outputs`` from ``inputs`` (every
        stage on a path from one of ``inputs`` to one of ``outputs``, the outputs included, the
        inputs only with ``include_inputs``), as one ``Group`` that ``compute_at`` places as a
        unit. With no ``inputs``, everything that ``outputs`` read, up to the placeholders."""
        outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
        ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        for t in outs + ins:
            if not isinstance(t, Tensor):
                raise ScheduleError("create_group", None, f"expected tensors, got {t!r}")
        stop = {t.op for t in ins}
        found: set[Operation] = set()
        todo = [t.op for t in outs]
        while todo:
            op = todo.pop()
            if op in found:
                continue
            found.add(op)
            if op not in stop:
                todo += [t.op for t in op.input_tensors]
        members = [
            st for st in self.stages if st.op in found and (include_inputs or st.op not in stop)
        ]
        if not members:
            raise ScheduleError(
                "create_group", None, "no stage lies between the inputs and the outputs"
            )
        # as TVM's create_group: the new group goes inside the innermost group that holds
        # all its stages (none if one of them is in no group); a group already made of some
        # of them, below that one, becomes a group of the new group, with all its stages
        chains = [_group_chain(st) for st in members]
        parent = None
        for g in chains[0]:
            if all(g in c for c in chains[1:]):
                parent = g
                break
        tops: dict[Group, None] = {}
        for chain in chains:
            below = chain[: chain.index(parent)] if parent is not None else chain
            if below:
                tops[below[-1]] = None
        inner = [st for g in tops for st in g.members]
        group = Group(
            members + [st for st in self.stages if st in inner and st not in members], self
        )
        group.members.sort(key=self.stages.index)  # producers first, as the stages are
        group.group = parent
        for g in tops:
            g.group = group
        for st in members:
            if st.group is parent:
                st.group = group
        self.groups.append(group)
        return group

    def _owner(self, iv: IterVar) -> Stage | None:
        for st in self.stages:
            if iv in st.all_iter_vars:
                return st
        return None

    def _has_attached(self, stage: Stage) -> bool:
        return any(st.attach_stage is stage for st in self.stages)

    # ---- dataflow

    def graph(self) -> nx.DiGraph:
        """The dataflow graph: a networkx DiGraph of stages (and placeholder ops), producer ->
        consumer, built from the stages' current bodies."""
        g = nx.DiGraph()
        for op in self.placeholders:
            g.add_node(op)
        for st in self.stages:
            g.add_node(st)
            for t in st.op.input_tensors:
                g.add_edge(self.stage_map.get(t.op, t.op), st)
        return g

    def _reads_transitively(self, consumer: Stage, producer: Stage) -> bool:
        g = self.graph()
        return nx.has_path(g, producer, consumer)

    def readers(self, stage: Stage) -> list[Stage]:
        return [
            st
            for st in self.stages
            if any(t.op in (stage.op, stage.origin_op) for t in st.op.input_tensors)
        ]

    def _insert(self, stage: Stage, before: Stage) -> None:
        self.stages.insert(self.stages.index(before), stage)
        self.stage_map[stage.op] = stage

    # ---- cache stages

    def cache_read(
        self,
        tensor: Tensor,
        scope: str,
        readers: Tensor | Operation | Stage | Sequence[Tensor | Operation | Stage],
    ) -> Tensor:
        """A stage copying ``tensor`` into ``scope`` memory, read by ``readers`` instead."""
        if not isinstance(tensor, Tensor):
            raise ScheduleError("cache_read", None, f"expected a tensor, got {tensor!r}")
        _check_scope(scope, "cache_read")
        given: list[Any] = list(readers) if isinstance(readers, (list, tuple)) else [readers]
        if not given:
            raise ScheduleError("cache_read", None, "give at least one reader")
        reader_stages = [self[r] for r in given]
        cache_op = _copy_compute(tensor, f"{tensor.name}.{scope}")
        cache = cache_op.output(0)
        for st in reader_stages:
            if not any(tensor in tensors_read(b) for b in st.op.bodies):
                raise ScheduleError(
                    "cache_read",
                    st,
                    f"it does not read '{tensor.name}'; pass only stages that read it as readers",
                )
        for st in reader_stages:  # every output of a multi-output reader, as in TVM
            replace = _ReplaceTensors({tensor: cache})
            _rebind_body(st, *[replace.visit(b) for b in st.op.bodies])
        new = Stage(cache_op, self)
        new.scope = scope
        self._insert(new, min(reader_stages, key=self.stages.index))
        return cache

    def use_image(self, tensor: Tensor) -> None:
        """Read the 2-d float32 input ``tensor`` through an ``image2d_t`` (the texture path, as
        seed 004 does for B): each RGBA texel holds 4 consecutive elements of a row."""
        op = getattr(tensor, "op", None)
        if not isinstance(op, PlaceholderOp):
            raise ScheduleError(
                "use_image",
                None,
                f"{tensor!r} is not an input placeholder; only inputs can be read through an image",
            )
        if len(op.shape) != 2 or op.dtype != "float32" or op.shape[1] % 4:
            raise ScheduleError(
                "use_image",
                None,
                f"input '{op.name}' is {op.dtype}{list(op.shape)}"
                "; an image input must be 2-d float32 with a last dimension "
                "divisible by 4 (pad it with ts.pad or pick another input)",
            )
        self.image_inputs.add(op)

    @overload
    def cache_write(self, tensor: Tensor, scope: str) -> Tensor: ...

    @overload
    def cache_write(self, tensor: Sequence[Tensor], scope: str) -> list[Tensor]: ...

    def cache_write(self, tensor: Tensor | Sequence[Tensor], scope: str) -> Tensor | list[Tensor]:
        """Compute ``tensor`` into a ``scope`` stage; the original stage copies it out. The
        outputs of a multi-output stage are given as a list, all of them (TVM's
        ``cache_write([T0, T1], scope)``): one cache stage of as many outputs, whose tensors
        come back as a list in the order given."""
        given: list[Any] = list(tensor) if isinstance(tensor, (list, tuple)) else [tensor]
        tensors: list[Tensor] = [t for t in given if isinstance(t, Tensor)]
        if not tensors or len(tensors) != len(given):
            raise ScheduleError(
                "cache_write", None, f"expected a tensor or a list of them, got {tensor!r}"
            )
        _check_scope(scope, "cache_write")
        st = self[tensors[0]]
        others = [t for t in tensors if self[t] is not st]
        if others:
            raise ScheduleError(
                "cache_write",
                st,
                f"'{others[0].name}' is not an output of stage '{st.name}'; a list given to "
                "cache_write holds outputs of one multi-output stage: cache the others apart",
            )
        if isinstance(st.op, ScanOp) or not isinstance(st.op, ComputeOp):
            raise ScheduleError("cache_write", st, "only a compute stage can be cached")
        n = len(st.op.bodies)
        if n > 1 and sorted(t.value_index for t in tensors) != list(range(n)):
            names = ", ".join(st.op.output(k).name for k in range(n))
            raise ScheduleError(
                "cache_write",
                st,
                f"the stage has {n} outputs (a multi-output compute), cached together: give "
                f"them all as a list, s.cache_write([{names}], scope), as TVM does",
            )
        _check_relayout(st)
        op = st.op
        # TVM's CacheWriteWithReLayout: the cache stage has one axis per data loop of the
        # stage, in its loop order (a split's parts, a fused loop), and computes the original
        # bodies there, guarded where a split does not divide; the original stage copies the
        # cache out over its own axes, its splits and fuses gone, as TVM resets its relations
        roots = list(op.axis) + list(op.reduce_axis)
        ext = pass_down(st, {iv: iv.domain.extent for iv in roots})
        order = [iv for iv in st.leaf_iter_vars if iv.kind != "reduce"]
        axis = [
            IterVar(
                E.Var(iv.var.name + ".c"), iv.dom if iv in op.axis else Range(0, ext[iv]), "data"
            )
            for iv in order
        ]
        new_var = {a: b.var for a, b in zip(order, axis)}
        values, guards = pass_up(st, ext, lambda iv: new_var.get(iv, iv.var))
        vmap: dict[E.Var, E.Expr] = {iv.var: values[iv] for iv in op.axis}
        sub = Substitute(vmap)  # one for all bodies: a tuple reduction keeps shared axes
        bodies = [sub.visit(b) for b in op.bodies]
        preds = [c for parent, c in guards if parent.kind != "reduce"]
        if preds:
            bodies = [_guarded(b, E.all_of(preds)) for b in bodies]
        cop = ComputeOp(f"{op.name}.{scope}", axis, bodies)
        new = Stage(cop, self)
        new.scope = scope
        # the original stage now copies the cache out, keeping its axis variables: the cache
        # index of each of its points, down the relations (TVM's PassDownIndex)
        index: dict[IterVar, E.Expr] = {iv: iv.var for iv in roots}
        for rel in st.relations:
            if isinstance(rel, Split):
                f = E.as_expr(ext[rel.inner])
                index[rel.outer] = index[rel.parent] // f
                index[rel.inner] = index[rel.parent] % f
            elif isinstance(rel, Fuse):
                index[rel.fused] = index[rel.outer] * E.as_expr(ext[rel.inner]) + index[rel.inner]
            else:
                index[rel.iv] = E.const(0, rel.iv.var.dtype)
        args = tuple(index[iv] for iv in order)
        copies = [E.TensorLoad(cop.output(k), args) for k in range(len(op.bodies))]
        _rebind_body(st, *copies)
        st.all_iter_vars = list(st.op.axis)
        st.leaf_iter_vars = list(st.op.axis)
        st.relations, st.attrs = [], {}
        self._insert(new, st)
        caches = [cop.output(t.value_index) for t in tensors]
        return caches if isinstance(tensor, (list, tuple)) else caches[0]

    def rfactor(
        self, tensor: Tensor, axis: IterVar, factor_axis: SupportsIndex = 0
    ) -> Any:  # a Tensor, or a list of them for a tuple reduction (TVM's Array)
        """Factor the reduction of ``tensor`` over the reduce leaf ``axis``: a new stage
        ``T.rf`` holds one partial result per value of ``axis`` (the other reduce loops
        reduced), and ``tensor`` then reduces those partial results with the same combiner
        (sum, max, min or a ``comm_reducer``). ``axis`` becomes data axis number
        ``factor_axis`` of the new stage, so it can be vectorized, unrolled or bound. Of a
        tuple reduction (argmax), the new stage has an output per value and they are returned
        as a list, as TVM's ``rfactor`` returns them."""
        if not isinstance(tensor, Tensor):
            raise ScheduleError("rfactor", None, f"expected a tensor, got {tensor!r}")
        st = self[tensor]
        bodies = st.op.bodies
        body = bodies[0]
        if not isinstance(body, E.Reduce):
            raise ScheduleError("rfactor", st, "only a reduction can be factored")
        st._check_leaf("rfactor", axis)
        if axis.kind != "reduce":
            raise ScheduleError("rfactor", st, f"'{axis.var.name}' is not a reduction axis", axis)
        data = set(st.op.axis)
        if any(
            getattr(r, "parent", None) in data or getattr(r, "outer", None) in data
            for r in st.relations
        ) or any(a.bind is not None for a in st.attrs.values()):
            raise ScheduleError(
                "rfactor",
                st,
                "call rfactor before splitting or binding the "
                "data axes; only its reduction axes may be split",
                axis,
            )
        ext = pass_down(st, {iv: iv.domain.extent for iv in st.op.reduce_axis}, tighten=False)
        red_leaves = [iv for iv in st.leaf_iter_vars if iv.kind == "reduce"]
        new_data = [IterVar(E.Var(iv.var.name), iv.dom, "data") for iv in st.op.axis]
        fvar = IterVar(E.Var(axis.var.name), Range(0, ext[axis]), "data")
        new_red = {
            iv: IterVar(E.Var(iv.var.name), Range(0, ext[iv]), "reduce")
            for iv in red_leaves
            if iv is not axis
        }
        leaf_value = {axis: fvar.var, **{iv: nv.var for iv, nv in new_red.items()}}
        values, guards = pass_up(st, ext, lambda iv: leaf_value.get(iv, iv.var))
        vmap: dict[E.Var, E.Expr] = {iv.var: values[iv] + iv.domain.min for iv in st.op.reduce_axis}
        vmap.update({a.var: b.var for a, b in zip(st.op.axis, new_data)})
        cond = [substitute(c, vmap) for _, c in guards]
        if body.condition is not None:
            cond.append(substitute(body.condition, vmap))
        where = None
        for c in cond:
            where = c if where is None else E.And(where, c)
        if not new_red:
            raise ScheduleError(
                "rfactor",
                st,
                f"'{axis.var.name}' is the only reduction loop; "
                "split the reduction first and factor one of its parts",
                axis,
            )
        reds = [b for b in bodies if isinstance(b, E.Reduce)]
        assert len(reds) == len(bodies)  # a multi-output compute is one tuple reduction
        srcs = tuple(substitute(b.source, vmap) for b in reds)
        rf_bodies = [
            E.Reduce(
                b.combiner,
                src,
                tuple(new_red.values()),
                where,
                b.dtype,
                b.reducer,
                b.value_index,
                srcs if b.sources else (),
            )
            for b, src in zip(reds, srcs)
        ]
        fa = dt.to_int(factor_axis)
        if fa is None or not 0 <= fa <= len(new_data):
            raise ScheduleError(
                "rfactor", st, f"factor_axis must be an int in 0..{len(new_data)}", axis
            )
        factor_axis = fa
        rf_axes = new_data[:factor_axis] + [fvar] + new_data[factor_axis:]
        rf_op = ComputeOp(f"{st.name}.rf", rf_axes, rf_bodies)
        rfs = [rf_op.output(k) for k in range(len(rf_bodies))]
        rv = IterVar(E.Var(axis.var.name + ".v"), Range(0, ext[axis]), "reduce")
        idx = [iv.var for iv in st.op.axis]
        idx.insert(factor_axis, rv.var)
        # an ``init`` starts the final reduction (the partial ones start from the
        # identity), as in TVM
        loads = tuple(E.TensorLoad(rf, tuple(idx)) for rf in rfs)
        finals = [
            E.Reduce(
                b.combiner,
                load,
                (rv,),
                None,
                b.dtype,
                b.reducer,
                b.value_index,
                loads if b.sources else (),
                b.init,
            )
            for b, load in zip(reds, loads)
        ]
        _rebind_body(st, *finals)
        st.relations, st.attrs = [], {}
        st.all_iter_vars = list(st.op.axis) + [rv]
        st.leaf_iter_vars = list(st.all_iter_vars)
        self._insert(Stage(rf_op, self), st)
        return rfs if len(rfs) > 1 else rfs[0]


def _annotation(a: IterAttr) -> str | None:
    """What a loop's attributes say of it that a primitive resetting the loop would drop
    (``"bound to threadIdx.x"``, ``"unrolled"``, a pragma), or None for a plain serial loop."""
    if a.bind is not None:
        return f"bound to {a.bind.tag}"
    if a.kind != "serial":
        return a.kind
    if a.pragmas:
        return f"annotated with pragma '{a.pragmas[0][0]}'"
    return None


def _check_relayout(st: Stage) -> None:
    """Raise unless ``cache_write`` can lay its cache out by ``st``'s loops: what it resets on
    ``st`` (its splits, fuses and loop order; TVM resets them too) must carry nothing that
    would be lost silently."""
    for rel in st.relations:
        if isinstance(rel, Split) and rel.tail != "guard":
            raise ScheduleError(
                "cache_write",
                st,
                f"'{rel.parent.var.name}' was split with tail={rel.tail!r}; the cache is laid "
                "out by whole tiles: split with the default tail before cache_write, or give "
                "tail= to the splits made after it",
                rel.outer,
            )
    for iv, a in st.attrs.items():
        what = _annotation(a)
        if what:
            raise ScheduleError(
                "cache_write",
                st,
                f"the loop is {what}; cache_write gives the stage its original axes "
                "back (as TVM's does, which drops the annotation silently): call "
                "cache_write before binding or annotating, then schedule the stage's new axes",
                iv,
            )
    kept = set(st.op.axis)
    for other in st.schedule.stages:
        if other.attach_stage is st and other.attach_ivar not in kept:
            assert other.attach_ivar is not None
            raise ScheduleError(
                "cache_write",
                st,
                f"stage '{other.name}' is computed at its loop '{other.attach_ivar.var.name}', "
                "which cache_write removes (the cache computes the stage's loops); call "
                "compute_at after cache_write, at the cache stage",
                other.attach_ivar,
            )


def _guarded(body: E.Expr, pred: E.Expr) -> E.Expr:
    """``body`` computed only where ``pred`` holds (TVM's ``InjectPredicate``): a reduction
    reduces nothing elsewhere, any other value is zero there."""
    if isinstance(body, E.Reduce):
        cond = pred if body.condition is None else E.And(pred, body.condition)
        init = body.init
        if init is not None:
            init = E.Select(pred, init, E.const(0, init.dtype))
        return dataclasses.replace(body, condition=cond, init=init)
    return E.Select(pred, body, E.const(0, body.dtype))


def _copy_compute(tensor: Tensor, name: str) -> ComputeOp:
    axis = [IterVar(E.Var(f"ax{k}"), Range(0, d), "data") for k, d in enumerate(tensor.shape)]
    return ComputeOp(name, axis, E.TensorLoad(tensor, tuple(iv.var for iv in axis)))


def _rebind_body(stage: Stage, *bodies: E.Expr) -> None:
    """Give ``stage`` a new op with ``bodies`` (one per output) and the same axes, keeping
    the old op's lookups and output tensors."""
    old = stage.op
    assert isinstance(old, ComputeOp) and len(bodies) == len(old.bodies)
    new = ComputeOp.__new__(ComputeOp)
    new.name, new.axis, new.tag, new.attrs = old.name, old.axis, old.tag, old.attrs
    new.bodies = bodies
    first = bodies[0]
    new.reduce_axis = tuple(first.axis) if isinstance(first, E.Reduce) else ()
    new.shape, new.dtype, new._out = old.shape, old.dtype, old.output(0)
    new._outs = [old.output(k) for k in range(len(bodies))]
    stage.op = new
    stage.schedule.stage_map[new] = stage


def _post_order(outputs: Sequence[Operation]) -> list[Operation]:
    seen: set[Operation] = set()
    order: list[Operation] = []

    def visit(op: Operation) -> None:
        if op in seen:
            return
        seen.add(op)
        for t in op.input_tensors:
            visit(t.op)
        order.append(op)

    for op in outputs:
        visit(op)
    return order


def create_schedule(
    ops: Operation | Tensor | Sequence[Operation | Tensor],
) -> Schedule:
    """A schedule for the given output operation(s) and everything they read."""
    given = list(ops) if isinstance(ops, (list, tuple)) else [ops]
    out = []
    for x in given:
        op = x.op if isinstance(x, Tensor) else x
        if not isinstance(op, Operation):
            raise ScheduleError("create_schedule", None, f"expected operations (T.op), got {op!r}")
        if isinstance(op, PlaceholderOp):
            raise ScheduleError(
                "create_schedule",
                None,
                f"'{op.name}' is a placeholder; schedule the compute that produces the output",
            )
        out.append(op)
    return Schedule(out)
