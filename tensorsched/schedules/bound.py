"""Bound inference: for every stage of a schedule, the region it computes, the extent of each
of its loops, its storage scope and its buffer, as one frozen ``Bounds`` (TVM's InferBound);
``schedule_ops`` then builds the loop nests from it (ScheduleOps).

- the ``compute_inline`` stages are inlined into their consumers' bodies;
- consumers first, each stage's scope is decided and, for a ``compute_at`` stage, the region
  of the producer it must compute per iteration of the consumer loop it is attached to: the
  consumer's accesses are evaluated with the loops inside the attach point relaxed over their
  whole range (and, depending on the producer's storage scope, the work-item indices too, so
  that a ``"shared"`` tile covers the whole work-group);
- extents flow from the region down the split/fuse relations (``pass_down``);
- the buffer's strides and shape follow ``transform_layout`` and ``storage_align``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import networkx as nx

from ..errors import InternalError, LoweringError, ScheduleError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.simplify import (
    Extent,
    Simplifier,
    const_bound,
    ext_mul,
    extent_upper,
    simplify,
)
from ..ir.tensor import IterVar, PlaceholderOp, ScanOp, Tensor, tensors_read
from ..ir.visitor import Mutator, Visitor, free_vars, substitute
from .relations import Fuse, Split, pass_down, pass_up
from .schedule import Schedule, Stage

__all__ = ["Bounds", "infer_bound", "pass_down", "pass_up"]

SCOPE_RANK = {"global": 0, "shared": 1, "local": 2}

Region = tuple[tuple[E.Expr, Extent], ...]  # (min, extent) per dimension


def tag_rank(tag: str) -> int:
    return 0 if tag.startswith("blockIdx") else 1


@dataclass(frozen=True, eq=False)
class Bounds:
    """What bound inference decided for a schedule; read-only.

    ``stages``: the stages that are not inlined, producers first. Per stage: ``body`` (its
    op's body with inlined stages substituted), ``scope``, ``region`` (the part of its op's
    domain it computes, per axis), ``ext`` (the extent of each of its iteration variables),
    ``strides`` (of each axis in its buffer) and ``buffer``; ``bodies`` and ``buffers`` hold
    those of every output of a multi-output compute (``body`` and ``buffer`` are the first).
    ``placeholder_buffer``: the buffer of each input (placeholder) that is read or passed as an
    argument.
    """

    schedule: Schedule
    stages: tuple[Stage, ...]
    body: Mapping[Stage, E.Expr]
    scope: Mapping[Stage, str]
    region: Mapping[Stage, Region]
    ext: Mapping[Stage, Mapping[IterVar, Extent]]
    strides: Mapping[Stage, tuple[Extent, ...]]
    buffer: Mapping[Stage, S.Buffer]
    placeholder_buffer: Mapping[PlaceholderOp, S.Buffer]
    bodies: Mapping[Stage, tuple[E.Expr, ...]]
    buffers: Mapping[Stage, tuple[S.Buffer, ...]]
    state_of: Mapping[PlaceholderOp, Stage]  # a scan's state placeholder -> the scan
    # stages that are arguments but computed inside another stage or inlined: their buffer is
    # the argument's (global, the whole shape)
    materialised: frozenset[Stage] = frozenset()
    # per attached stage: the dimensions whose region is the whole dimension, for want of a
    # tile that covers every access of its readers (``tile_covers``)
    clipped: Mapping[Stage, frozenset[int]] = field(default_factory=lambda: MappingProxyType({}))
    # every leaf variable -> its (0, extent - 1) (hi None: a symbolic extent), for the simplifier
    var_ranges: Mapping[E.Var, tuple[int, int | None]] = field(
        default_factory=lambda: MappingProxyType({})
    )

    def tile_covers(self, st: Stage) -> bool:
        """Whether ``st`` is an attached stage whose buffer covers every index its readers'
        loops access, also where they run past the tensor's shape (a tile that overhangs
        it), so that a reader may compute there unguarded."""
        return st.attach_type == "scope" and st not in self.materialised and not self.clipped[st]

    def stage_of(self, tensor: Tensor) -> Stage | None:
        return self.schedule.stage_map.get(tensor.op)

    def strides_of(self, st: Stage, tensor: Tensor) -> tuple[Extent, ...]:
        """The strides of ``tensor``, an output of stage ``st``, in its buffer (a scan's
        states may differ in shape; the other outputs of a stage share its strides)."""
        if isinstance(st.op, ScanOp) and tensor.value_index and st not in self.materialised:
            return tuple(storage_layout(st, list(tensor.shape))[0])
        return self.strides[st]

    def storage(self, tensor: Tensor) -> tuple[S.Buffer, Region]:
        """The buffer that holds ``tensor`` and the region of it that the buffer covers."""
        st = self.stage_of(tensor)
        if st is not None and st in self.materialised:
            return self.buffers[st][tensor.value_index], _whole(st.op.shape)
        if st is not None and (st.attach_type == "scan" or isinstance(st.op, ScanOp)):
            # a scan's output (its own shape), or an init or update read by another part of
            # the scan: the scan's rows, absolute indices
            return self.buffers[st][tensor.value_index], _whole(tensor.shape)
        if st is not None:
            return self.buffers[st][tensor.value_index], self.region[st]
        op = tensor.op
        if op in self.state_of:  # a scan's earlier rows, read by its updates
            scan = self.state_of[op]  # type: ignore[index]  # op is a PlaceholderOp here
            assert isinstance(scan.op, ScanOp)
            k = scan.op.state_index(op)
            assert k is not None  # state_of holds the scan's states
            return self.buffers[scan][k], _whole(tensor.shape)
        if not isinstance(op, PlaceholderOp) or op not in self.placeholder_buffer:
            raise LoweringError(f"tensor '{tensor.name}' is not produced by this schedule")
        return self.placeholder_buffer[op], tuple((E.IntImm(0), d) for d in op.shape)


def infer_bound(sched: Schedule, args: Sequence[Tensor] = ()) -> Bounds:
    """Bound inference over ``sched``, whose function takes ``args``."""
    inf = _Inference(sched)
    inf.check_attachments()
    inf.infer()
    # TVM's lower(s, [A, B, C]) with B computed at C or inlined: B's buffer is the argument's.
    # An attached B writes into it the region it computes at each iteration (absolute indices,
    # the whole shape's strides); an inlined B is not computed at all: its argument stays as
    # the caller passed it, as in TVM
    materialised = set()
    stages = [inf.stage_of(t) if isinstance(t, Tensor) else None for t in args]
    stages += [st for st in inf.stages if across_groups(st)]  # whole arrays too (LastGroup)
    for st in stages:
        if st is None or st.attach_type not in ("scope", "inline") or st in materialised:
            continue
        materialised.add(st)
        strides, shape = storage_layout(st, list(st.op.shape))
        inf.strides[st] = tuple(strides)
        outs = [st.op.output(k) for k in range(st.op.num_outputs)]
        inf.buffers[st] = tuple(S.Buffer(o.name, o.dtype, shape) for o in outs)
        inf.buffer[st] = inf.buffers[st][0]
        inf.scope[st] = "global"
        if st.attach_type == "inline":
            inf.region[st] = _whole(st.op.shape)
    placeholders = {}
    for t in [*args, *(t for st in inf.stages for t in inf.reads(st))]:
        op = t.op
        if isinstance(op, PlaceholderOp) and op not in placeholders and op not in inf.state_of:
            placeholders[op] = S.Buffer(op.name, op.dtype, op.shape, image=op in sched.image_inputs)
    _distinct_names(inf, placeholders)
    frozen = MappingProxyType
    return Bounds(
        sched,
        tuple(inf.stages),
        frozen(inf.body),
        frozen(inf.scope),
        frozen(inf.region),
        frozen({st: frozen(e) for st, e in inf.ext.items()}),
        frozen(inf.strides),
        frozen(inf.buffer),
        frozen(placeholders),
        frozen(inf.bodies),
        frozen(inf.buffers),
        frozen(inf.state_of),
        frozenset(materialised),
        frozen(inf.clipped),
        frozen(inf.var_ranges),
    )


def _distinct_names(inf: _Inference, placeholders: dict[PlaceholderOp, S.Buffer]) -> None:
    """Give the buffers of tensors that share a name (TVM's names are hints: its
    ``test_nearbyint`` calls the input and the output ``A``) distinct ones, the later with a
    ``_1``, ``_2`` suffix, the arguments' inputs first, so that the IR text names each buffer
    once (its parser reads the same name as one buffer)."""
    seen: dict[str, S.Buffer] = {}
    renamed: dict[S.Buffer, S.Buffer] = {}

    def distinct(b: S.Buffer) -> S.Buffer:
        if b in renamed:
            return renamed[b]
        if seen.setdefault(b.name, b) is b:
            return b
        k = 1
        while f"{b.name}_{k}" in seen:
            k += 1
        renamed[b] = seen[f"{b.name}_{k}"] = replace(b, name=f"{b.name}_{k}")
        return renamed[b]

    for op, b in placeholders.items():
        placeholders[op] = distinct(b)
    for st, bufs in inf.buffers.items():
        inf.buffers[st] = tuple(distinct(b) for b in bufs)
    for st, b in inf.buffer.items():
        inf.buffer[st] = distinct(b)


def _whole(shape: Sequence[Extent]) -> Region:
    return tuple((E.IntImm(0), d) for d in shape)


class _Inference:
    """The state of one bound inference, consumers first; ``infer_bound`` freezes it."""

    def __init__(self, sched: Schedule) -> None:
        self.sched = sched
        order = topo_stages(sched)
        self.stages = [st for st in order if st.attach_type != "inline"]
        self.body: dict[Stage, E.Expr] = {}
        self.bodies: dict[Stage, tuple[E.Expr, ...]] = {}
        self.buffers: dict[Stage, tuple[S.Buffer, ...]] = {}
        self.state_of: dict[PlaceholderOp, Stage] = {}
        self.region: dict[Stage, Region] = {}
        self.buffer: dict[Stage, S.Buffer] = {}
        self.ext: dict[Stage, dict[IterVar, Extent]] = {}
        self.scope: dict[Stage, str] = {}
        self.strides: dict[Stage, tuple[Extent, ...]] = {}
        self.clipped: dict[Stage, frozenset[int]] = {}  # see Bounds.tile_covers
        # every leaf Var -> (0, extent-1), for the simplifier (None: a symbolic extent)
        self.var_ranges: dict[E.Var, tuple[int, int | None]] = {}
        inline = _Inline(self)
        for st in order:
            self.bodies[st] = tuple(inline.visit(b) for b in st.op.bodies)
            self.body[st] = self.bodies[st][0] if self.bodies[st] else E.IntImm(0)
            if isinstance(st.op, ScanOp):
                for state in st.op.states:
                    assert isinstance(state.op, PlaceholderOp)  # ts.scan checks it
                    self.state_of[state.op] = st

    def stage_of(self, tensor: Tensor) -> Stage | None:
        return self.sched.stage_map.get(tensor.op)

    def reads(self, st: Stage) -> list[Tensor]:
        """The tensors stage ``st`` reads (every output's body)."""
        found: dict[Tensor, None] = {}
        for b in self.bodies[st]:
            found.update(dict.fromkeys(tensors_read(b)))
        return list(found)

    def check_attachments(self) -> None:
        for st in self.stages:
            chain = ancestors(st)
            if not chain:
                continue
            parent, at = chain[0]
            if at not in parent.leaf_iter_vars and st.attach_ivar is at:
                # TVM's LegalizeInvalidAttach: an axis split after compute_at stands for its
                # inner part, one fused as the inner operand for the fused loop
                moved = at
                for rel in parent.relations:  # in the order they were made
                    if isinstance(rel, Split) and rel.parent is moved:
                        moved = rel.inner
                    elif isinstance(rel, Fuse) and rel.inner is moved:
                        moved = rel.fused
                if any(moved is iv for iv in parent.leaf_iter_vars):
                    st.attach_ivar = at = moved
            if at not in parent.leaf_iter_vars:
                raise ScheduleError(
                    "compute_at",
                    st,
                    f"axis '{at.var.name}' of stage "
                    f"'{parent.name}' was split or fused after compute_at; "
                    "attach to one of its current loops",
                )

    def infer(self) -> None:
        readers: dict[Stage, list[tuple[Stage, Tensor]]] = {st: [] for st in self.stages}
        for st in self.stages:
            for t in self.reads(st):
                p = self.stage_of(t)
                if p is not None and p in readers:
                    readers[p].append((st, t))
        for st in reversed(self.stages):
            self.scope[st] = _infer_scope(st)
            if st.attach_type == "scope":
                self.region[st] = tuple(_attached_region(self, st, readers[st]))
            elif st.attach_type == "scan" and any(
                st is self.stage_of(u) for u in _scan_of(st).updates
            ):
                # one row per iteration of the scan's loop (the stage's op may be a new one:
                # a cache_read that the update reads rebinds its body)
                row: tuple[E.Expr, Extent] = (_scan_of(st).scan_axis.var, 1)
                self.region[st] = (row, *((E.IntImm(0), d) for d in st.op.shape[1:]))
            else:
                self.region[st] = tuple((E.IntImm(0), d) for d in st.op.shape)
            root_ext = {iv: e for iv, (_, e) in zip(st.op.axis, self.region[st])}
            root_ext.update({iv: iv.domain.extent for iv in st.op.reduce_axis})
            private = [iv for iv in st.leaf_iter_vars if private_binding(st, iv, self.scope[st])]
            self.ext[st] = pass_down(st, root_ext, private=private)
            for iv in st.leaf_iter_vars:
                hi = extent_upper(self.ext[st][iv])
                self.var_ranges[iv.var] = (0, None if hi is None else hi - 1)
            if st.attach_type == "scan":  # computed into its state's buffer, rows as they are
                scan = st.attach_stage
                assert scan is not None  # the scan
                k = _scan_part_index(self, st)
                self.strides[st] = tuple(storage_layout(scan, scan.op.output(k).shape)[0])
                self.buffers[st] = (self.buffers[scan][k],)
                self.buffer[st] = self.buffers[st][0]
                continue
            scope = self.scope[st] if not st.is_output else "global"
            if isinstance(st.op, ScanOp):  # a buffer per state, each of its state's shape
                outs = [st.op.output(k) for k in range(st.op.num_outputs)]
                layouts = [storage_layout(st, list(t.shape)) for t in outs]
                self.strides[st] = tuple(layouts[0][0])
                self.buffers[st] = tuple(
                    S.Buffer(t.name, t.dtype, shape, scope) for t, (_, shape) in zip(outs, layouts)
                )
                self.buffer[st] = self.buffers[st][0]
                continue
            strides, shape = storage_layout(st, [e for _, e in self.region[st]])
            self.strides[st] = tuple(strides)
            outs = [st.op.output(k) for k in range(st.op.num_outputs)]
            if len(outs) == 1:
                self.buffers[st] = (S.Buffer(st.name, st.op.dtype, shape, scope),)
            else:
                self.buffers[st] = tuple(S.Buffer(t.name, t.dtype, shape, scope) for t in outs)
            self.buffer[st] = self.buffers[st][0]


def _scan_part_index(inf: _Inference, st: Stage) -> int:
    """Which state of its scan the init or update stage ``st`` computes."""
    scan = _scan_of(st)
    for k, (i, u) in enumerate(zip(scan.inits, scan.updates)):
        if st is inf.stage_of(i) or st is inf.stage_of(u):
            return k
    raise InternalError(f"stage '{st.name}' is no part of scan '{scan.name}'")


def _scan_of(st: Stage) -> ScanOp:
    """The scan op whose init or update stage ``st`` is."""
    assert st.attach_stage is not None and isinstance(st.attach_stage.op, ScanOp)
    return st.attach_stage.op


def root_values(bounds: Bounds | _Inference, st: Stage) -> dict[IterVar, E.Expr]:
    """Root axis -> ``min + offset`` expression in the stage's leaf variables."""
    values, _ = pass_up(st, bounds.ext[st])
    out = {}
    for iv, (m, _) in zip(st.op.axis, bounds.region[st]):
        out[iv] = simplify(m + values[iv])
    for iv in st.op.reduce_axis:
        out[iv] = simplify(values[iv] + iv.domain.min)
    return out


def topo_stages(sched: Schedule) -> list[Stage]:
    g = sched.graph()
    order = {st: k for k, st in enumerate(sched.stages)}
    topo = nx.lexicographical_topological_sort(g, key=lambda n: order.get(n, -1))
    return [n for n in topo if n in order]


def ancestors(st: Stage) -> list[tuple[Stage, IterVar]]:
    """``[(stage, attach_ivar)]`` from ``st``'s attach parent up to its root stage."""
    out: list[tuple[Stage, IterVar]] = []
    cur, seen = st, {st}
    while cur.attach_type == "scope":
        parent, at = cur.attach_stage, cur.attach_ivar
        assert parent is not None and at is not None  # compute_at sets all three
        if parent in seen:
            raise ScheduleError("compute_at", st, "the compute_at placements form a cycle")
        if parent.attach_type == "inline":
            raise ScheduleError(
                "compute_at",
                cur,
                f"it is attached to stage '{parent.name}', "
                "which is inlined; attach it to a stage that has loops",
            )
        out.append((parent, at))
        seen.add(parent)
        cur = parent
    return out


def bound_tag(st: Stage, iv: IterVar) -> str | None:
    """The thread tag ``iv`` of ``st`` is bound to, or None."""
    a = st.attrs.get(iv)
    return a.bind.tag if a is not None and a.bind is not None else None


def private_binding(st: Stage, iv: IterVar, scope: str) -> bool:
    """Whether ``iv``, a data axis of ``st`` (whose storage ``scope`` is given), is bound to a
    thread tag whose work-items each hold their own copy of the stage: a ``"local"`` stage's
    axis bound to threadIdx, blockIdx or vthread, a ``"shared"`` stage's bound to blockIdx. As
    in TVM, such a binding of a stage computed inside a consumer (which must bind the same tag)
    does not spread the axis over the work-items: each computes its own part (its region is
    one work-item's along the tag), so the axis runs as a loop over that part."""
    tag = bound_tag(st, iv)
    if tag is None or st.attach_type != "scope" or iv.kind == "reduce":
        return False
    return SCOPE_RANK[scope] > tag_rank(tag)


def across_groups(st: Stage) -> str | None:
    """The block tag along which ``st``, a ``"global"`` stage computed in a work-group's code
    of its consumer (no work-item axis around it), spreads over work-groups that its kernel
    does not otherwise have (a K split among work-groups added in the same kernel); else
    None. Such a stage is computed per work-group of its consumer (its region is not relaxed
    along the consumer's block indices) into the whole array (absolute indices), and the
    consumer's code after it is run by the last of its groups to arrive
    (``ir.stmt.LastGroup``)."""
    if st.attach_type != "scope" or st.scope != "global":
        return None
    around: set[str | None] = set()
    for parent, iv in ancestors(st):
        pos = parent.leaf_iter_vars.index(iv)
        around |= {bound_tag(parent, x) for x in parent.leaf_iter_vars[: pos + 1]}
    if any(t and t.startswith("threadIdx") for t in around):
        return None
    root = kernel_root(st)
    bound = {bound_tag(root, x) for x in root.leaf_iter_vars}
    for iv in st.leaf_iter_vars:
        tag = bound_tag(st, iv)
        if tag and tag.startswith("blockIdx") and tag not in bound and iv.kind != "reduce":
            return tag
    return None


def kernel_root(st: Stage) -> Stage:
    """The root stage of the kernel that ``st`` is computed in."""
    anc = ancestors(st)
    return anc[-1][0] if anc else st


def _infer_scope(st: Stage) -> str:
    if st.scope == "warp":  # see schedule.WARP
        return "shared"
    if st.scope is not None:
        return st.scope
    if st.attach_type != "scope":
        return "global"
    tags = []
    for parent, iv in ancestors(st):
        pos = parent.leaf_iter_vars.index(iv)
        tags += [bound_tag(parent, x) for x in parent.leaf_iter_vars[: pos + 1]]
    if any(t and t.startswith("threadIdx") for t in tags):
        return "local"
    if any(t and t.startswith("blockIdx") for t in tags):
        return "shared"
    return "global"


def _attached_region(
    ctx: _Inference, st: Stage, readers: Sequence[tuple[Stage, Tensor]]
) -> list[tuple[E.Expr, Extent]]:
    parent, ax = ancestors(st)[0]  # st is attached (compute_at)
    ax_pos = parent.leaf_iter_vars.index(ax)
    # a stage spread over groups of its own is computed per group of its consumer
    rank = SCOPE_RANK["shared" if across_groups(st) else ctx.scope[st]]
    relaxed: dict[E.Var, Extent] = {}
    for iv in parent.leaf_iter_vars[ax_pos + 1 :]:
        tag = bound_tag(parent, iv)
        if tag and tag != "vthread" and rank > tag_rank(tag):
            continue  # as in TVM: a private stage covers its own work-item's (group's) part
        relaxed[iv.var] = ctx.ext[parent][iv]
    # work-item indices around the attach point that the whole tile must cover
    for anc in [parent] + [a for a, _ in ancestors(parent)]:
        for iv in anc.leaf_iter_vars:
            tag = bound_tag(anc, iv)
            if tag and rank <= tag_rank(tag):
                relaxed[iv.var] = ctx.ext[anc][iv]
    accesses = []
    for reader, tensor in readers:
        chain = [reader] + [a for a, _ in ancestors(reader)]
        if parent not in chain:
            raise ScheduleError(
                "compute_at",
                st,
                f"it is also read by stage '{reader.name}', "
                f"which is not computed inside '{parent.name}' at "
                f"'{ax.var.name}'; only one consumer can hold it",
            )
        if reader is not parent:
            inside = chain[chain.index(parent) - 1]
            inside_at = ancestors(inside)[0][1]
            pos = parent.leaf_iter_vars.index(inside_at)
            if pos < ax_pos:
                raise ScheduleError(
                    "compute_at",
                    st,
                    f"its reader '{reader.name}' is computed at "
                    f"'{inside_at.var.name}', outside "
                    f"'{ax.var.name}'; attach '{st.name}' further out",
                )
            for mid in chain[: chain.index(parent)]:
                for iv in mid.leaf_iter_vars:
                    relaxed[iv.var] = ctx.ext[mid][iv]
        values = root_values(ctx, reader)
        vmap = {iv.var: values[iv] for iv in list(reader.op.axis) + list(reader.op.reduce_axis)}
        for load in (x for b in ctx.bodies[reader] for x in _loads_of(b, tensor)):
            accesses.append([simplify(substitute(i, vmap), ctx.var_ranges) for i in load.indices])
    if not accesses:
        raise LoweringError(f"stage '{st.name}' is attached but nothing reads it")
    # a work-group tile (zeros past its tensor), or a private tile filled from such tiles
    # only, keeps its extent where it overhangs its tensor if it is read by private tiles
    # computed from tiles only (a GEMM's register tile): those then compute the whole tile
    # without a test of the tensor's bounds (``Bounds.tile_covers``), as TVM sizes such
    # tiles. Elsewhere the region is clipped to the tensor: its readers test the bounds
    # anyway, and a reader whose index bound inference over-approximates (a split of a
    # fused work-item index) would make the tile, and the work of filling it, larger
    keep = (
        not across_groups(st)
        and _is_tile(ctx, st)
        and all(_infer_scope(r) == "local" and _reads_tiles_only(ctx, r) for r, _ in readers)
    )
    clipped: set[int] = set()
    region = infer_region(st.op.shape, accesses, relaxed, ctx.var_ranges, st.name, keep, clipped)
    ctx.clipped[st] = frozenset(clipped)
    return region


def _is_tile(ctx: _Inference, st: Stage) -> bool:
    """Whether ``st`` is a work-group tile, or a private one computed from tiles only: the
    elements of its region past its tensor are filled with zeros (``build_stage``)."""
    scope = _infer_scope(st)
    return scope == "shared" or (scope == "local" and _reads_tiles_only(ctx, st))


def _reads_tiles_only(ctx: _Inference, st: Stage) -> bool:
    """Whether every tensor ``st`` reads is computed by a stage in ``__local`` or private
    memory (not global memory, not an input)."""
    for t in ctx.reads(st):
        p = ctx.stage_of(t)
        if p is None or p.attach_type != "scope" or _infer_scope(p) == "global":
            return False
    return True


def _loads_of(expr: E.Expr, tensor: Tensor) -> list[E.TensorLoad]:
    found: list[E.TensorLoad] = []

    class _V(Visitor):
        def visit_TensorLoad(self, t: E.TensorLoad) -> None:
            if t.tensor is tensor:
                found.append(t)
            self.generic_visit(t)

    _V().visit(expr)
    return found


class _Inline(Mutator):
    """Substitutes the bodies of ``compute_inline`` stages for their loads."""

    def __init__(self, ctx: _Inference) -> None:
        self.ctx = ctx

    def visit_TensorLoad(self, t: E.TensorLoad) -> E.Expr:
        idx = tuple(self.visit(i) for i in t.indices)
        st = self.ctx.stage_of(t.tensor)
        if st is not None and st.attach_type == "inline":
            body = self.ctx.body[st]
            return substitute(body, {iv.var: i for iv, i in zip(st.op.axis, idx)})
        return E.TensorLoad(t.tensor, idx)


def storage_layout(st: Stage, extents: Sequence[Extent]) -> tuple[list[Extent], tuple[Extent, ...]]:
    """``(strides, shape)`` of stage ``st``'s buffer over a region of ``extents``: row-major in
    the dimension order of ``transform_layout`` (default: the axis order), each dimension's
    stride raised to ``k*factor + offset`` where ``storage_align`` asks. ``strides`` is in the
    op's axis order; ``shape`` is the allocation's shape in storage order."""
    n = len(extents)
    perm = st.layout if st.layout is not None else tuple(range(n))
    if n and perm[-1] in st.align:
        raise LoweringError(
            f"stage '{st.name}': storage_align on axis "
            f"'{st.op.axis[perm[-1]].var.name}', the innermost dimension of its "
            "storage, whose stride is always 1; align the dimension outside it "
            "(storage_align(op.axis[k], ...) pads the stride of dimension k)"
        )
    ext = [extents[p] for p in perm]
    sizes = [e for e in ext if isinstance(e, int)]
    if len(sizes) != n:
        return _symbolic_layout(st, ext, perm)
    strides = [1] * n
    for d in range(n - 1, -1, -1):
        if d < n - 1:
            strides[d] = strides[d + 1] * sizes[d + 1]
        if perm[d] in st.align:
            factor, offset = st.align[perm[d]]
            strides[d] += (offset - strides[d]) % factor
    shape: tuple[Extent, ...]
    if all(strides[d] == strides[d + 1] * sizes[d + 1] for d in range(n - 1)):
        shape = tuple(sizes)
    elif all(strides[d] % strides[d + 1] == 0 for d in range(n - 1)):
        shape = (sizes[0],) + tuple(strides[d] // strides[d + 1] for d in range(n - 1))
    else:
        shape = (strides[0] * sizes[0],) if n else ()
    by_axis: list[Extent] = [0] * n
    for d, p in enumerate(perm):
        by_axis[p] = strides[d]
    return by_axis, shape


def _symbolic_layout(
    st: Stage, ext: Sequence[Extent], perm: Sequence[int]
) -> tuple[list[Extent], tuple[Extent, ...]]:
    """``storage_layout`` over symbolic extents: row-major in storage order, no padding."""
    if st.align:
        raise LoweringError(
            f"stage '{st.name}': storage_align needs constant extents, but its region is "
            f"{', '.join(map(str, ext))}; align a stage whose region is constant"
        )
    n = len(ext)
    strides: list[Extent] = [1] * n
    for d in range(n - 2, -1, -1):
        strides[d] = ext_mul(strides[d + 1], ext[d + 1])
    by_axis: list[Extent] = [0] * n
    for d, p in enumerate(perm):
        by_axis[p] = strides[d]
    return by_axis, tuple(ext)


class Interval:
    """Evaluate symbolic bounds ``(lo, hi)`` of integer expressions where some variables are
    relaxed over ``[0, extent)`` and the others stay as themselves."""

    def __init__(self, relaxed: Mapping[E.Var, Extent]) -> None:
        self.relaxed = relaxed  # Var -> extent
        self.simp = Simplifier()

    def _has_relaxed(self, e: E.Expr) -> bool:
        return any(v in self.relaxed for v in free_vars(e))

    def bounds(self, e: E.Expr) -> tuple[E.Expr, E.Expr] | None:
        lin = self.simp.lin(e)
        lo: E.Expr = E.IntImm(lin.const)
        hi: E.Expr = E.IntImm(lin.const)
        for atom, k in lin.terms.items():
            ab = self._atom(atom)
            if ab is None:
                return None
            alo, ahi = ab
            if k < 0:
                alo, ahi = ahi, alo
            lo, hi = lo + alo * k, hi + ahi * k
        return simplify(lo), simplify(hi)

    def _atom(self, a: E.Expr) -> tuple[E.Expr, E.Expr] | None:
        if isinstance(a, E.Var):
            if a in self.relaxed:
                ext = self.relaxed[a]
                last = E.IntImm(ext - 1) if isinstance(ext, int) else simplify(ext - 1)
                return E.IntImm(0), last
            return a, a
        if not self._has_relaxed(a):
            return a, a
        if isinstance(a, E.BinOp) and isinstance(a.b, E.IntImm) and a.b.value > 0:
            c = a.b.value
            inner = self.bounds(a.a)
            if inner is None:
                return None
            if a.op == "//":
                return simplify(inner[0] // c), simplify(inner[1] // c)
            if a.op == "%":
                return E.IntImm(0), E.IntImm(c - 1)
        if isinstance(a, E.BinOp) and a.op in ("min", "max"):
            ba, bb = self.bounds(a.a), self.bounds(a.b)
            if ba is None or bb is None:
                return None
            return (simplify(E.BinOp(a.op, ba[0], bb[0])), simplify(E.BinOp(a.op, ba[1], bb[1])))
        return None


def _note(clipped: set[int] | None, d: int) -> None:
    if clipped is not None:
        clipped.add(d)


def union_bound(a: E.Expr, b: E.Expr, op: str) -> E.Expr:
    """min (op='min') or max of two symbolic bounds, folded when their difference is constant."""
    d = simplify(a - b)
    if isinstance(d, E.IntImm):
        return a if (d.value <= 0) == (op == "min") else b
    return E.BinOp(op, a, b)


def infer_region(
    producer_shape: Sequence[Extent],
    accesses: Sequence[Sequence[E.Expr]],
    relaxed: Mapping[E.Var, Extent],
    var_ranges: Mapping[E.Var, tuple[int, int | None]],
    name: str,
    keep_tiles: bool = False,
    clipped: set[int] | None = None,
) -> list[tuple[E.Expr, Extent]]:
    """The region ``[(min_expr, extent)]`` of a producer covering all ``accesses`` (lists of
    index expressions) with ``relaxed`` variables spanning their ranges.

    A dimension whose bounds cannot be derived, or whose extent is not bounded by a constant,
    falls back to the whole dimension (correct, just less local). Over a symbolic dimension,
    a constant extent is kept (the stage's domain guards skip what lies past the dimension).
    An exact constant extent at least the dimension's is clipped to the whole dimension,
    unless ``keep_tiles`` (a work-group or private tile, whose buffer may be larger than its
    tensor: what lies past the dimension is filled with zeros or skipped, and its reader's
    accesses there stay inside the tile). ``clipped`` collects the dimensions whose region is
    the whole dimension for want of a tile covering every access.
    """
    iv = Interval(relaxed)
    region: list[tuple[E.Expr, Extent]] = []
    for d, dim in enumerate(producer_shape):
        lo: E.Expr | None = None
        hi: E.Expr | None = None
        for idx in accesses:
            b = iv.bounds(idx[d])
            if b is None:
                lo = None
                break
            lo = b[0] if lo is None else union_bound(lo, b[0], "min")
            hi = b[1] if hi is None else union_bound(hi, b[1], "max")
        whole = (E.IntImm(0), dim)
        if lo is None or hi is None:
            region.append(whole)
            _note(clipped, d)
            continue
        ext = simplify(hi - lo + 1, var_ranges)
        exact = isinstance(ext, E.IntImm)
        if not isinstance(ext, E.IntImm):
            ub = const_bound(ext, var_ranges)[1]
            if ub is None:
                region.append(whole)
                _note(clipped, d)
                continue
            ext = E.IntImm(ub)
        if isinstance(dim, int) and ext.value >= dim and not (keep_tiles and exact):
            region.append(whole)
            _note(clipped, d)
        elif ext.value <= 0:
            raise LoweringError(
                f"bound inference: stage '{name}' would compute an empty region in dimension {d}"
            )
        else:
            region.append((simplify(lo, var_ranges), ext.value))
    return region
