"""From a schedule to one loop-nest statement with flat buffer accesses (TVM's ScheduleOps).

Bound inference (``bound.infer_bound``) decides each stage's region, loop extents, scope and
buffer; this module checks the thread bindings against them and builds each root stage's nest
in leaf order, with its ``compute_at`` producers placed inside the loop they are attached to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import LoweringError, ScheduleError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.intrin import identity_value
from ..ir.simplify import Extent, const_bound, ext_equal, extent_expr, extent_of, simplify
from ..ir.structural import structural_equal
from ..ir.tensor import IterVar, ScanOp, Tensor, tensors_read
from ..ir.visitor import Mutator, Visitor, free_vars, substitute
from .bound import (
    SCOPE_RANK,
    Bounds,
    across_groups,
    ancestors,
    bound_tag,
    infer_bound,
    kernel_root,
    pass_up,
    private_binding,
    root_values,
    tag_rank,
)
from .schedule import Schedule, Stage

Env = dict[str, tuple[E.Var, Extent]]  # thread tag bound around a statement -> (variable, extent)


class _Flatten(Mutator):
    """``T[i, j]`` -> ``T_buffer[(i - min_i)*stride_i + (j - min_j)*stride_j]``."""

    def __init__(self, ctx: _Builder) -> None:
        self.ctx = ctx

    def visit_TensorLoad(self, t: E.TensorLoad) -> E.Expr:
        idx = tuple(self.visit(i) for i in t.indices)
        buf, region = self.ctx.storage(t.tensor)
        st = self.ctx.stage_of(t.tensor)
        rel = [i - m for i, (m, _) in zip(idx, region)]
        if st is None:
            return E.Load(buf, flat_index(rel, [e for _, e in region]))
        return E.Load(buf, strided_index(rel, self.ctx.bounds.strides_of(st, t.tensor)))


def flat_index(indices: Sequence[E.Expr], extents: Sequence[Extent]) -> E.Expr:
    """The row-major offset of ``indices`` in a region of ``extents``."""
    out: E.Expr | None = None
    for i, e in zip(indices, extents):
        out = i if out is None else out * e + i
    return out if out is not None else E.IntImm(0)


def strided_index(indices: Sequence[E.Expr], strides: Sequence[Extent]) -> E.Expr:
    """The offset of ``indices`` in a buffer of ``strides``."""
    out: E.Expr | None = None
    for i, s in zip(indices, strides):
        term = i if s == 1 else i * s
        out = term if out is None else out + term
    return out if out is not None else E.IntImm(0)


class _Builder:
    """Bound inference's frozen results, and the state of building the loop nests: the
    variable of each thread tag, the extent each tag has in the kernel being built, and the
    leaf variables bound to thread variables."""

    def __init__(self, bounds: Bounds, args: Sequence[Tensor]) -> None:
        self.bounds = bounds
        self.stages, self.body, self.region = bounds.stages, bounds.body, bounds.region
        self.buffer, self.ext, self.scope = bounds.buffer, bounds.ext, bounds.scope
        self.strides = bounds.strides
        self.stage_of, self.storage = bounds.stage_of, bounds.storage
        self.thread_vars: dict[str, E.Var] = {}
        # tag -> (extent, stage, axis) in the kernel being built
        self.kernel_extents: dict[str, tuple[Extent, Stage, IterVar]] = {}
        self.bound_vars: dict[E.Var, E.Var] = {}  # leaf Var -> thread Var
        # global stages filled by several work-groups for one consumer's group (LastGroup):
        # allocated at the root, with the counters of their groups' arrivals
        self.group_reduced: list[Stage] = []
        self.group_counters: list[S.Buffer] = []
        self.arg_tensors = args
        # the buffers of the arguments: the caller's arrays, never allocated here
        self.arg_buffers = frozenset(
            self.storage(t)[0] for t in args if self.stage_of(t) in bounds.buffers
        )

    def thread_var(self, tag: str) -> E.Var:
        if tag not in self.thread_vars:
            self.thread_vars[tag] = E.Var(tag)
        return self.thread_vars[tag]


# ---------------------------------------------------------------- loop nests


def build_stage(ctx: _Builder, st: Stage, env: Env) -> S.Stmt:
    """The statement computing stage ``st``; ``env`` maps thread tags bound around it to
    ``(var, extent)``."""
    if isinstance(st.op, ScanOp):
        return _build_scan(ctx, st, env)
    leaves = st.leaf_iter_vars
    root = root_values(ctx.bounds, st)
    ext = _outer_index_extents(st, ctx.ext[st], root)
    values, split_guards = pass_up(st, ext)
    region = ctx.region[st]
    vmap = {iv.var: root[iv] for iv in list(st.op.axis) + list(st.op.reduce_axis)}
    buf = ctx.buffer[st]
    # a scan's init or update writes the scan's buffer at its rows: absolute indices
    # (and an argument computed inside another stage writes the argument's whole array)
    at = root if st.attach_type == "scan" or st in ctx.bounds.materialised else values
    out_index = strided_index([at[iv] for iv in st.op.axis], ctx.strides[st])
    body = ctx.body[st]
    flat = _Flatten(ctx)

    def is_reduce_leaf(iv: IterVar) -> bool:
        return iv.kind == "reduce"

    # guards: uneven splits, and (for attached stages) staying inside the op's domain
    data_guards, all_guards = [], []
    for parent, cond in split_guards:
        all_guards.append(cond)
        if parent.kind != "reduce":
            data_guards.append(cond)
    # a work-group tile is filled with zeros outside the op's domain (every element the
    # work-items read is written), and so is a private tile of tiles clipped to their
    # tensors (its elements outside feed only outputs that are never stored, but a vector
    # of them must not hold uninitialized lanes); a private tile of unclipped tiles needs
    # no domain test
    zero_fill = not isinstance(body, E.Reduce) and (
        ctx.scope[st] == "shared" or _reads_tiles_only(ctx, st)
    )
    domain = []
    unguarded = st.attach_type == "scope" and _private_reads_only(ctx, st)
    if st.attach_type == "scope" and not unguarded:
        for iv, (_m, _e), dim in zip(st.op.axis, region, st.op.shape):
            v = root[iv]
            if zero_fill:
                domain += [v < dim, v >= 0]
            else:
                data_guards += [v < dim, v >= 0]
                all_guards += [v < dim, v >= 0]
    # a work-group tile that the stage does not spread over every threadIdx of its kernel is
    # written by the first work-item along the others only (each would write the same tile)
    leaders = _leader_tags(ctx, st, env)
    lead = [var.equal(0) for _, var, _, _ in leaders]
    data_guards, all_guards = lead + data_guards, lead + all_guards
    env = {**env, **{tag: (var, extent) for tag, var, extent, _ in leaders}}
    store_only = _store_predicate(ctx, st, env)

    attached: dict[IterVar, list[Stage]] = {}
    for child in ctx.stages:
        if child.attach_stage is st and child.attach_ivar is not None:
            attached.setdefault(child.attach_ivar, []).append(child)

    # envs[k]: the thread tags bound outside leaf k. A stage attached at leaf k whose region
    # is one work-item's along a tag that ``st`` binds further in (a "local" stage computed
    # above the threadIdx loops, as TVM allows) reads that work-item index: its thread
    # extent opens at leaf k (opened[k]), and the loop bound to it further in reuses it
    envs, cur = [], dict(env)
    opened: dict[int, list[tuple[str, IterVar]]] = {}
    for k, iv in enumerate(leaves):
        envs.append(dict(cur))
        tag = thread_tag(ctx, st, iv)
        if tag and tag != "vthread" and tag not in cur and iv.kind != "reduce":
            cur[tag] = (ctx.thread_var(tag), launch_extent(st, iv, ext[iv]))
        used = {v for c in attached.get(iv, []) for m, _ in ctx.region[c] for v in free_vars(m)}
        for later in leaves[k + 1 :]:
            ltag = thread_tag(ctx, st, later)
            if (
                ltag
                and ltag != "vthread"
                and ltag not in cur
                and later.kind != "reduce"
                and later.var in used
            ):
                cur[ltag] = (ctx.thread_var(ltag), launch_extent(st, later, ext[later]))
                opened.setdefault(k, []).append((ltag, later))
    inner_env = cur

    across = _cross_thread_leaf(st)
    loop_leaves = leaves
    if across is not None:
        assert isinstance(body, E.Reduce)  # only a reduce axis can be bound so
        outside = next(k for k, iv in enumerate(leaves) if is_reduce_leaf(iv))
        loop_leaves = leaves[:outside]
        conds = list(all_guards)
        if body.condition is not None:
            conds.append(flat.visit(substitute(body.condition, vmap)))
        reds = [b for b in ctx.bounds.bodies[st] if isinstance(b, E.Reduce)]
        main = _cross_thread_reduce(
            ctx,
            st,
            across,
            ext,
            envs[outside],
            attached,
            tuple(flat.visit(substitute(b.source, vmap)) for b in reds),
            conds,
            data_guards + store_only,
            ctx.bounds.buffers[st],
            out_index,
            tuple(None if b.init is None else flat.visit(substitute(b.init, vmap)) for b in reds),
        )
        first_reduce, init = None, None
    elif isinstance(body, E.Reduce) and body.sources:
        # a tuple reduction (argmax): every output updated at once from the old values
        assert body.reducer is not None  # a tuple reduction comes from ts.comm_reducer
        all_guards, data_guards = all_guards + store_only, data_guards + store_only
        bufs = ctx.bounds.buffers[st]
        srcs = tuple(flat.visit(substitute(x, vmap)) for x in body.sources)
        olds = tuple(E.Load(b, out_index) for b in bufs)
        news = body.reducer.combine_tuple(olds, srcs)
        temps = [S.Buffer(f"{b.name}.new", b.dtype, (1,), "local") for b in bufs]
        zero = E.IntImm(0)
        update = S.seq(
            *(S.Store(t, zero, v) for t, v in zip(temps, news)),
            *(S.Store(b, out_index, E.Load(t, zero)) for b, t in zip(bufs, temps)),
        )
        for t in reversed(temps):
            update = S.Allocate(t, update)
        conds = list(all_guards)
        if body.condition is not None:
            conds.append(flat.visit(substitute(body.condition, vmap)))
        main = _guard(conds, update)
        first_reduce = next(k for k, iv in enumerate(leaves) if is_reduce_leaf(iv))
        identities = body.reducer.identity_tuple(tuple(b.dtype for b in bufs))
        inits = [r.init if isinstance(r, E.Reduce) else None for r in ctx.bounds.bodies[st]]
        identities = tuple(
            ident if first is None else flat.visit(substitute(first, vmap))
            for ident, first in zip(identities, inits)
        )
        init = _init_nest(
            ctx, st, leaves[first_reduce:], out_index, data_guards, list(zip(bufs, identities))
        )
    elif isinstance(body, E.Reduce):
        all_guards, data_guards = all_guards + store_only, data_guards + store_only
        src = flat.visit(substitute(body.source, vmap))
        old = E.Load(buf, out_index)
        if body.reducer is not None:
            upd = body.reducer.combine(old, src)
        elif body.combiner == "sum":
            upd = E.BinOp("+", old, src)
        else:
            upd = E.BinOp(body.combiner, old, src)
        conds = list(all_guards)
        if body.condition is not None:
            conds.append(flat.visit(substitute(body.condition, vmap)))
        main = _guard(conds, S.Store(buf, out_index, upd))
        first_reduce = next(k for k, iv in enumerate(leaves) if is_reduce_leaf(iv))
        init = _init_nest(
            ctx,
            st,
            leaves[first_reduce:],
            out_index,
            data_guards,
            [
                (
                    buf,
                    flat.visit(substitute(body.init, vmap))
                    if body.init is not None
                    else _first_value(body, body.dtype),
                )
            ],
        )
    else:
        stores = []
        for b, x in zip(ctx.bounds.buffers[st], ctx.bounds.bodies[st]):
            value = flat.visit(substitute(x, vmap))
            if domain:
                value = E.Select(E.all_of(domain), value, E.const(0, value.dtype))
            stores.append(S.Store(b, out_index, value))
        main = _guard(all_guards + store_only, S.seq(*stores))
        first_reduce, init = None, None

    # a tile computed past the op's domain unguarded still skips the whole of a work-item's
    # (or virtual thread's) part that lies past it: one test around its innermost loops,
    # which hold no attached stage and no thread axis (no barrier), of their first element
    inner_from, coarse = len(loop_leaves), []
    if unguarded:
        inner_from = 1 + max(
            [-1]
            + [
                k
                for k, iv in enumerate(loop_leaves)
                if attached.get(iv) or thread_tag(ctx, st, iv) or k < (first_reduce or 0)
            ]
        )
        coarse = _first_element_guards(st, root, loop_leaves[inner_from:], ctx.bounds.var_ranges)
    stmt = main if inner_from < len(loop_leaves) else _guard(coarse, main)
    for k in range(len(loop_leaves) - 1, -1, -1):
        iv = leaves[k]
        inner_env_k = envs[k + 1] if k + 1 < len(leaves) else inner_env
        here = attached.get(iv, [])
        kids = [build_stage(ctx, c, inner_env_k) for c in here]
        if first_reduce == k + 1:
            stmt = S.seq(init, stmt)
        spread = {c: tag for c in here if (tag := _across_groups(c, inner_env_k))}
        if spread:
            # what follows the last of them (the stages after it, which may read them, and
            # the rest of the work-group's code) waits for all of their groups
            last = max(n for n, c in enumerate(here) if c in spread) + 1
            stmt = _last_group(ctx, st, spread, inner_env_k, S.seq(*kids[last:], stmt))
            kids = kids[:last]
        here = [c for c in here if c not in spread]  # their buffers: see schedule_to_stmt
        stmt = _with_allocs(ctx, here, S.seq(*kids, stmt))
        for ltag, later in reversed(opened.get(k, [])):
            launch = _kernel_extent(ctx, st, later, ext[later], ltag)
            stmt = S.ThreadExtent(ctx.thread_var(ltag), ltag, launch, stmt)
        stmt = _loop(ctx, st, iv, ext[iv], stmt, envs[k])
        if k == inner_from:
            stmt = _guard(coarse, stmt)
    if first_reduce == 0:
        stmt = S.seq(init, stmt)
    for tag, var, extent, enclosing in leaders:
        if not enclosing:  # the guard's work-item index, outside the kernel's loop
            stmt = S.ThreadExtent(var, tag, extent, stmt)
    return S.Produce(st.name, stmt)


def _build_scan(ctx: _Builder, st: Stage, env: Env) -> S.Stmt:
    """A scan: its init stages, then a loop over the scan axis computing each update stage's
    row at each step, producers first (an update's first axis is that row; its other loops
    are its own)."""
    op = st.op
    assert isinstance(op, ScanOp)
    order = {x: k for k, x in enumerate(ctx.stages)}  # producers first
    inits = sorted({_part(ctx, t) for t in op.inits}, key=order.__getitem__)
    updates = sorted({_part(ctx, t) for t in op.updates}, key=order.__getitem__)
    for update in updates:
        row = update.op.axis[0]
        if row not in update.leaf_iter_vars or bound_tag(update, row) is not None:
            raise ScheduleError(
                "split",
                update,
                f"axis '{row.var.name}' of scan '{st.name}''s update is the scan's step; "
                "leave it as it is (split, fuse, reorder and bind the other axes)",
                row,
            )
    t = op.scan_axis
    firsts = [build_stage(ctx, x, env) for x in inits]
    steps = [build_stage(ctx, x, env) for x in updates]
    if not _steps_own_elements(ctx, st, list(zip(inits, firsts)), list(zip(updates, steps))):
        parts = {*inits, *updates}
        bound = [
            (x, iv, tag)
            for x in ctx.stages
            if x in parts or any(p in parts for p, _ in ancestors(x))
            for iv in x.leaf_iter_vars
            if (tag := bound_tag(x, iv)) is not None and tag != "vthread"
        ]
        tags = {tag for _, _, tag in bound}
        # a blockIdx of one work-group (TVM's persistent kernels on one block) is no spread
        block = sorted(
            tag
            for x, iv, tag in bound
            if tag.startswith("blockIdx") and launch_extent(x, iv, ctx.ext[x][iv]) != 1
        )
        if block:
            raise ScheduleError(
                "bind",
                updates[0],
                f"scan '{st.name}': a step reads state elements that other work-items "
                f"wrote at the step before (or init and update split the rows "
                f"differently), and the steps run in one kernel bound to {block[0]}: work-"
                "groups cannot wait for one another between steps. Bind the init's and "
                "update's axes alike to threadIdx only (one work-group, a barrier each "
                "step), or read only the update's own elements of the state",
            )
        if tags:  # one work-group: each update waits for what was written before it
            firsts = [S.seq(*firsts, S.Barrier("global"))]
            steps = [S.seq(x, S.Barrier("global")) for x in steps]
    step = S.For(
        t.var,
        extent_expr(t.domain.min),
        extent_expr(t.domain.extent),
        "serial",
        S.seq(*steps),
    )
    return S.Produce(st.name, S.seq(*firsts, step))


def _part(ctx: _Builder, tensor: Tensor) -> Stage:
    """The stage of a scan's init or update."""
    part = ctx.stage_of(tensor)
    assert part is not None  # the scan's parts are stages
    return part


def _steps_own_elements(
    ctx: _Builder,
    st: Stage,
    inits: Sequence[tuple[Stage, S.Stmt]],
    updates: Sequence[tuple[Stage, S.Stmt]],
) -> bool:
    """Whether each step of scan ``st`` reads only elements of the scan that the same
    work-item wrote: for each state, the step's one store writes each row as the init's
    writes row 0 (the same index of the same work-item and loop indices), and every load of
    a state in a step reads what that state's store wrote some steps before
    (``state[t - 1, i]``; in the same step, by an update that runs before), with the same
    work-item and loop indices. Otherwise the steps of a scan spread over work-items must
    wait for one another."""
    op = st.op
    assert isinstance(op, ScanOp)
    t = op.scan_axis.var
    single: dict[E.Var, E.Expr] = {}  # loops of one iteration, each to its only value
    for _, stmt in [*inits, *updates]:
        single.update(_single_loops(stmt))
    # per state buffer: (the position of its update in the step, its store's index, the
    # loops around it)
    written: dict[S.Buffer, tuple[int, E.Expr, list[E.Var]]] = {}
    for buf in ctx.bounds.buffers[st]:
        firsts = [(x, s) for x, stmt in inits for s in _accesses(stmt, {buf}, S.Store)]
        steps = [
            (n, s) for n, (_, stmt) in enumerate(updates) for s in _accesses(stmt, {buf}, S.Store)
        ]
        if len(firsts) != 1 or len(steps) != 1:
            return False
        (init, (a, a_loops)), (pos, (b, b_loops)) = firsts[0], steps[0]
        a_index, b_index = substitute(a.index, single), substitute(b.index, single)
        a_loops = [v for v in a_loops if v not in single]
        b_loops = [v for v in b_loops if v not in single]
        if len(a_loops) != len(b_loops):
            a_loops = []  # the init's and update's loops differ: only an unbound init does
        rename: dict[E.Var, E.Expr] = {v: u for v, u in zip(b_loops, a_loops)}
        rename[t] = extent_expr(op.init.shape[0]) - 1
        everywhere = not any(  # every work-item computes all of the init (it binds no thread)
            (tag := bound_tag(x, iv)) is not None and tag != "vthread"
            for x in ctx.stages
            if x is init or any(p is init for p, _ in ancestors(x))
            for iv in x.leaf_iter_vars
        )
        if not everywhere and not structural_equal(
            simplify(a_index), simplify(substitute(b_index, rename))
        ):
            return False
        written[buf] = (pos, b_index, b_loops)
    for n, (_, stmt) in enumerate(updates):
        for load, loops in _accesses(stmt, set(written), E.Load):
            pos, index, store_loops = written[load.buffer]
            if pos != n:  # another update's store: its loops stand for this one's
                loops = [v for v in loops if v not in single]
                if len(loops) != len(store_loops):
                    return False
                index = substitute(index, dict(zip(store_loops, loops)))
            earlier = range(0 if pos < n else 1, 9)
            want = simplify(substitute(load.index, single))
            if not any(
                structural_equal(want, simplify(substitute(index, {t: t - c}))) for c in earlier
            ):
                return False
    return True


def _accesses(
    stmt: S.Stmt, bufs: set[S.Buffer], kind: type[E.Load] | type[S.Store]
) -> list[tuple[Any, list[E.Var]]]:
    """The loads (``kind`` ``E.Load``) or stores (``S.Store``) of ``bufs`` in ``stmt``, each
    with the variables of the loops around it."""
    found: list[tuple[Any, list[E.Var]]] = []
    loops: list[E.Var] = []

    class _V(Visitor):
        def visit_For(self, f: S.For) -> None:
            loops.append(f.var)
            self.generic_visit(f)
            loops.pop()

        def visit_Load(self, node: E.Load) -> None:
            if kind is E.Load and node.buffer in bufs:
                found.append((node, list(loops)))
            self.generic_visit(node)

        def visit_Store(self, node: S.Store) -> None:
            if kind is S.Store and node.buffer in bufs:
                found.append((node, list(loops)))
            self.generic_visit(node)

    _V().visit(stmt)
    return found


def _single_loops(stmt: S.Stmt) -> dict[E.Var, E.Expr]:
    """The variables of the loops of one iteration in ``stmt``, each to its only value."""
    found: dict[E.Var, E.Expr] = {}

    class _V(Visitor):
        def visit_For(self, f: S.For) -> None:
            if isinstance(f.extent, E.IntImm) and f.extent.value == 1:
                found[f.var] = f.min
            self.generic_visit(f)

    _V().visit(stmt)
    return found


def thread_tag(ctx: _Builder, st: Stage, iv: IterVar) -> str | None:
    """The tag ``iv`` runs as in the kernel: its binding's, but None for a private binding."""
    return None if private_binding(st, iv, ctx.scope[st]) else bound_tag(st, iv)


def _store_predicate(ctx: _Builder, st: Stage, env: Env) -> list[E.Expr]:
    """The stage's ``set_store_predicate`` condition (empty if none), with the variables of
    thread axes (its own, or bound around it by a stage it is computed in) as the work-item
    indices of the kernel. One bound only by a stage computed inside ``st`` is refused: TVM
    reads it anywhere in the kernel (``test_rfactor_elemwise_threads``), tensorsched's IR
    defines it only within its loop."""
    if st.store_predicate is None:
        return []
    threads = {
        a.bind.var: ctx.thread_var(a.bind.tag)
        for other in (*ctx.stages, st)
        for a in other.attrs.values()
        if a.bind is not None and a.bind.tag != "vthread"
    }
    pred = substitute(st.store_predicate, threads)
    own = {a.bind.tag for a in st.attrs.values() if a.bind is not None}
    around = {var for var, _ in env.values()} | {ctx.thread_var(t) for t in own}
    for v in free_vars(pred):
        if v in ctx.thread_vars.values() and v not in around:
            raise ScheduleError(
                "set_store_predicate",
                st,
                f"the predicate uses '{v.name}', which neither '{st.name}' nor a stage it is "
                "computed in binds (only a stage computed inside it does); a work-item index "
                "is defined only within its loop here (TVM reads it anywhere in the kernel)",
            )
    return [pred]


def _cross_thread_leaf(st: Stage) -> IterVar | None:
    """The reduce leaf of ``st`` bound to a threadIdx tag (a reduction across the work-items
    of a group), or None; ``ScheduleError`` where the schedule cannot do it."""
    bound = [
        iv for iv in st.leaf_iter_vars if iv.kind == "reduce" and bound_tag(st, iv) is not None
    ]
    if not bound:
        return None
    if len(bound) > 1:
        raise ScheduleError(
            "bind",
            st,
            f"reduce axes '{bound[0].var.name}' and '{bound[1].var.name}' are both bound to "
            "threads; a reduction runs across the work-items of one threadIdx tag: fuse them "
            "first and bind the fused axis",
            bound[1],
        )
    leaves = st.leaf_iter_vars
    first = next(k for k, iv in enumerate(leaves) if iv.kind == "reduce")
    late = [iv for iv in leaves[first:] if iv.kind != "reduce"]
    if late:
        raise ScheduleError(
            "bind",
            st,
            f"axis '{bound[0].var.name}' is a reduction across work-items, but the data axis "
            f"'{late[0].var.name}' is inside the reduction loops; reorder the data axes "
            "outside the reduction axes",
            late[0],
        )
    return bound[0]


def _first_value(body: E.Reduce, dtype: str) -> E.Expr:
    """The value a reduction without ``init`` starts from: its combiner's identity."""
    if body.reducer is not None:
        return body.reducer.identity(dtype)
    return identity_value(body.combiner, dtype)


def _combine(body: E.Reduce, a: E.Expr, b: E.Expr) -> E.Expr:
    if body.reducer is not None:
        return body.reducer.combine(a, b)
    return E.BinOp("+" if body.combiner == "sum" else body.combiner, a, b)


def _combine_all(
    body: E.Reduce, olds: tuple[E.Expr, ...], news: tuple[E.Expr, ...]
) -> tuple[E.Expr, ...]:
    """``_combine`` of one value, or of a tuple reduction's values together."""
    if body.sources:
        assert body.reducer is not None  # a tuple reduction comes from ts.comm_reducer
        return body.reducer.combine_tuple(olds, news)
    return (_combine(body, olds[0], news[0]),)


def _update_all(
    name: str, stores: Sequence[tuple[S.Buffer, E.Expr]], values: Sequence[E.Expr]
) -> S.Stmt:
    """Store ``values`` at ``stores`` (buffer, index) together: of several values (a tuple
    reduction, whose each new value reads all the old ones), each goes to a private
    temporary first."""
    if len(values) == 1:
        (b, i), v = stores[0], values[0]
        return S.Store(b, i, v)
    zero = E.IntImm(0)
    temps = [S.Buffer(f"{name}.new{k}", b.dtype, (1,), "local") for k, (b, _) in enumerate(stores)]
    stmt = S.seq(
        *(S.Store(t, zero, v) for t, v in zip(temps, values)),
        *(S.Store(b, i, E.Load(t, zero)) for (b, i), t in zip(stores, temps)),
    )
    for t in reversed(temps):
        stmt = S.Allocate(t, stmt)
    return stmt


def _cross_thread_reduce(
    ctx: _Builder,
    st: Stage,
    across: IterVar,
    ext: Mapping[IterVar, Extent],
    env: Env,
    attached: Mapping[IterVar, list[Stage]],
    srcs: tuple[E.Expr, ...],
    update_guards: list[E.Expr],
    store_guards: list[E.Expr],
    outs: Sequence[S.Buffer],
    out_index: E.Expr,
    init_values: tuple[E.Expr | None, ...],
) -> S.Stmt:
    """A reduction whose leaf ``across`` is bound to a threadIdx tag: each work-item reduces
    its share (the stage's other reduce loops) into a private accumulator, the work-group
    combines the shares in a ``__local`` array by a tree of halving steps with barriers
    between them (every work-item reaches every barrier: the guards stay inside the steps),
    and work-item 0 along the tag stores the result at ``out[out_index]`` where
    ``store_guards`` hold; of a stage in private memory, every work-item stores it in its
    own copy (TVM's all-reduce gives every thread the result). A tuple reduction (argmax)
    keeps an accumulator and a ``__local`` array per value, combined together."""
    body = ctx.body[st]
    assert isinstance(body, E.Reduce)
    tag = bound_tag(st, across)
    assert tag is not None
    extent = ext[across]
    launch = launch_extent(st, across, extent)
    if tag in env or not isinstance(launch, int) or launch > 1 << 20:
        raise ScheduleError(
            "bind",
            st,
            f"axis '{across.var.name}' is a reduction across {tag}, which needs {tag} free in "
            "its kernel and a constant extent (it sizes a __local array); split the "
            "reduction by a constant factor and bind the inner part",
            across,
        )
    assert isinstance(launch, int)  # checked above
    tx = ctx.thread_var(tag)
    ctx.bound_vars[across.var] = tx
    prev = ctx.kernel_extents.setdefault(tag, (launch, st, across))
    if not ext_equal(prev[0], launch):
        raise LoweringError(
            f"stage '{st.name}': axis '{across.var.name}' is bound to {tag} with extent "
            f"{launch}, but stage '{prev[1].name}' binds '{prev[2].var.name}' to {tag} with "
            f"extent {prev[0]} in the same kernel; split so that both have the same extent"
        )
    inner_env = {**env, tag: (tx, launch)}
    others = [(v, n) for t, (v, n) in sorted(env.items()) if t.startswith("threadIdx")]
    if not all(isinstance(n, int) for _, n in others):
        raise ScheduleError(
            "bind",
            st,
            f"a reduction across {tag} keeps one value per work-item in a __local array, "
            "which needs the work-group's other threadIdx extents constant",
            across,
        )
    slot: E.Expr = E.IntImm(0)
    size = launch
    for v, n in others:
        assert isinstance(n, int)  # checked above
        slot, size = slot * n + v, size * n
    base = slot * launch
    many = len(outs) > 1
    accs = [
        S.Buffer(f"{st.name}.red{k if many else ''}", b.dtype, (1,), "local")
        for k, b in enumerate(outs)
    ]
    reds = [
        S.Buffer(f"{st.name}.red_buf{k if many else ''}", b.dtype, (size,), "shared")
        for k, b in enumerate(outs)
    ]
    zero = E.IntImm(0)
    if not ext_equal(extent, launch):  # a thread_axis((0, n), tag) longer than the axis
        update_guards = [tx < extent, *update_guards]
    olds = tuple(E.Load(a, zero) for a in accs)
    update = _update_all(st.name, [(a, zero) for a in accs], _combine_all(body, olds, srcs))
    share: S.Stmt = _guard(update_guards, update)
    for iv in reversed([iv for iv in st.leaf_iter_vars if iv.kind == "reduce"]):
        if iv is across:
            continue
        kids = [build_stage(ctx, c, inner_env) for c in attached.get(iv, [])]
        share = _with_allocs(ctx, attached.get(iv, []), S.seq(*kids, share))
        share = _loop(ctx, st, iv, ext[iv], share, inner_env)
    # an ``init`` is combined once with the work-group's result (the shares start from the
    # identity, as TVM's rfactor leaves the init to the final reduction)
    if many:
        assert body.reducer is not None  # a tuple reduction comes from ts.comm_reducer
        identities = body.reducer.identity_tuple(tuple(b.dtype for b in outs))
    else:
        identities = (_first_value(body, body.dtype),)
    steps: list[S.Stmt] = [S.Store(r, base + tx, E.Load(a, zero)) for r, a in zip(reds, accs)]
    steps.append(S.Barrier("shared"))
    half = 1
    while half * 2 < launch:
        half *= 2
    while half >= 1:
        mine = tuple(E.Load(r, base + tx) for r in reds)
        theirs = tuple(E.Load(r, base + tx + half) for r in reds)
        cond = [tx < half] + ([tx + half < launch] if half * 2 > launch else [])
        new = _combine_all(body, mine, theirs)
        steps += [_guard(cond, _update_all(st.name, [(r, base + tx) for r in reds], new))]
        steps += [S.Barrier("shared")] if half > 1 else []
        half //= 2
    totals: tuple[E.Expr, ...] = tuple(E.Load(r, base) for r in reds)
    if any(v is not None for v in init_values):
        firsts = tuple(v if v is not None else i for v, i in zip(init_values, identities))
        totals = _combine_all(body, firsts, totals)
    # a private stage: every work-item keeps the result in its own copy
    head = [] if ctx.scope[st] == "local" else [tx.equal(0)]
    store = (
        _update_all(st.name, [(o, out_index) for o in outs], totals)
        if any(v is not None for v in init_values)
        else S.seq(*(S.Store(o, out_index, t) for o, t in zip(outs, totals)))
    )
    done = _guard([*head, *store_guards], store)
    kids = [build_stage(ctx, c, inner_env) for c in attached.get(across, [])]
    block = S.seq(
        *kids,
        *(S.Store(a, zero, i) for a, i in zip(accs, identities)),
        share,
        *steps,
        done,
        S.Barrier("shared"),
    )
    block = _with_allocs(ctx, attached.get(across, []), block)
    for r in reversed(reds):
        block = S.Allocate(r, block)
    for a in reversed(accs):
        block = S.Allocate(a, block)
    return S.ThreadExtent(tx, tag, launch, block)


def _outer_index_extents(
    st: Stage, ext: Mapping[IterVar, Extent], root: Mapping[IterVar, E.Expr]
) -> Mapping[IterVar, Extent]:
    """``ext`` with the stage's own index variables in the extents of its reduce loops (a
    triangular ``reduce_axis((0, i + 1))``) replaced by their values in the loops."""
    if all(isinstance(e, int) for e in ext.values()):
        return ext
    data = {iv.var: root[iv] for iv in st.op.axis}
    out: dict[IterVar, Extent] = {}
    for iv, e in ext.items():
        out[iv] = e if isinstance(e, int) else extent_of(substitute(e, data))
    return out


def _reads_tiles_only(ctx, st) -> bool:
    """Whether ``st`` is a ``"local"`` stage reading work-group or private tiles only."""
    if ctx.scope.get(st) != "local":
        return False
    for t in (x for b in ctx.bounds.bodies[st] for x in tensors_read(b)):
        p = ctx.stage_of(t)
        if p is None or ctx.scope.get(p, "global") == "global":
            return False
    return True


def _private_reads_only(ctx, st):
    """A ``"local"`` stage that reads work-group or private tiles only may compute the part of
    its tile outside the op's domain: it stays inside its own buffer, every read stays inside
    a tile that bound inference sized to cover it (``Bounds.tile_covers``: a tile that
    overhangs its tensor keeps its size, zero-filled past the tensor), and those elements are
    never stored by the guarded consumer. Dropping the domain guards leaves the register
    tile's loops guard-free, also where the work-group tile overhangs the whole shape (a GEMM
    with M = 19 under 64-row tiles)."""
    if not _reads_tiles_only(ctx, st):
        return False
    for t in (x for b in ctx.bounds.bodies[st] for x in tensors_read(b)):
        p = ctx.stage_of(t)
        if p is None or not ctx.bounds.tile_covers(p):
            return False
    return True


def _leader_tags(ctx, st, env):
    """``[(tag, var, extent, enclosing)]``: the threadIdx tags of the kernel that ``st``, a
    stage in work-group memory or a global one spread over work-groups (``across_groups``:
    each work-group's part is a work-group tile too), binds no axis to. Every work-item along
    such a tag would compute the whole tile (bound inference relaxes the tile over the
    work-group), so the stores are left to work-item 0 along it: for a reduction, redundant
    read-modify-writes of one tile element race. ``enclosing``: a loop around the stage is
    bound to the tag."""
    if st.attach_type != "scope":
        return []
    if ctx.scope.get(st) != "shared" and _across_groups(st, env) is None:
        return []
    root = kernel_root(st)
    own = {bound_tag(st, iv) for iv in st.leaf_iter_vars}
    out = []
    for iv in root.leaf_iter_vars:
        tag = bound_tag(root, iv)
        if (
            tag is None
            or not tag.startswith("threadIdx")
            or tag in own
            or any(tag == x[0] for x in out)
        ):
            continue
        if tag in env:
            var, extent = env[tag]
            out.append((tag, var, extent, True))
        else:
            var, extent = ctx.thread_var(tag), launch_extent(root, iv, ctx.ext[root][iv])
            out.append((tag, var, extent, False))
    return out


def _first_element_guards(
    st: Stage, root: dict, inner: Sequence[IterVar], ranges: Mapping[E.Var, tuple[int, int | None]]
) -> list[E.Expr]:
    """``value < dim`` of each data axis of ``st`` at the first iteration of the ``inner``
    loops, where the tiles reach at least twice past the axis (more of the work past the
    op's domain than inside it: a tile over M = 19 of 64 rows; a last tile partly past it
    is computed whole, as is any tile's part past it): false only where every iteration
    lies past the domain. An axis whose value is not non-decreasing in those loops'
    variables (a ``//`` or ``%`` of them, a negative factor) gets no test."""
    zero = {iv.var: E.IntImm(0) for iv in inner}
    out = []
    for iv, dim in zip(st.op.axis, st.op.shape):
        v = root[iv]
        if not isinstance(dim, int) or not (set(free_vars(v)) & set(zero)):
            continue  # the same for the whole nest: not this nest's to test
        hi = const_bound(v, ranges)[1]
        if hi is not None and hi + 1 >= 2 * dim and _non_decreasing(v, set(zero)):
            out.append(substitute(v, zero) < extent_expr(dim))
    return out


def _non_decreasing(e: E.Expr, vars_: set) -> bool:
    """Whether ``e`` is non-decreasing in each of ``vars_`` (sums, ``min`` / ``max`` and
    products by non-negative constants of them)."""
    if not (set(free_vars(e)) & vars_):
        return True
    if isinstance(e, E.Var):
        return True
    if isinstance(e, E.BinOp) and e.op in ("+", "min", "max"):
        return _non_decreasing(e.a, vars_) and _non_decreasing(e.b, vars_)
    if isinstance(e, E.BinOp) and e.op == "*":
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if isinstance(y, E.IntImm) and y.value >= 0:
                return _non_decreasing(x, vars_)
    return False


def _guard(conds, stmt):
    return S.IfThenElse(E.all_of(conds), stmt) if conds else stmt


def _across_groups(c: Stage, env: Env) -> str | None:
    """``bound.across_groups`` of a stage ``c`` computed where ``env``'s tags are bound."""
    tag = across_groups(c)
    return tag if tag is not None and tag not in env else None


def _last_group(
    ctx: _Builder, st: Stage, spread: dict[Stage, str], env: Env, rest: S.Stmt
) -> S.Stmt:
    """``rest`` (the code of ``st``'s work-group after the stages ``spread``, each with the
    block tag it spreads along) run by the last of the work-groups that computed them to
    arrive: one counter per set of groups, indexed by the block indices bound around
    (``env``)."""
    tags = set(spread.values())
    if len(tags) != 1:
        raise ScheduleError(
            "compute_at",
            st,
            f"the stages {', '.join(c.name for c in spread)} computed at one axis of "
            f"'{st.name}' spread over work-groups along different block tags "
            f"({', '.join(sorted(tags))}); bind them to the same one",
        )
    (tag,) = tags
    c = next(iter(spread))
    at = c.attach_ivar
    assert at is not None  # an attached stage
    loops = [
        x
        for x in st.leaf_iter_vars[: st.leaf_iter_vars.index(at) + 1]
        if not (bound_tag(st, x) or "").startswith("blockIdx") and ctx.ext[st][x] != 1
    ]
    # groups that differ along a block index not bound here would share one counter
    uncounted = sorted(
        t
        for x in st.leaf_iter_vars
        if (t := bound_tag(st, x) or "").startswith("blockIdx") and t not in env
    )
    if st.attach_type != "root" or loops or uncounted:
        where = f"inside '{st.name}'"
        if loops:
            where = f"inside loop '{loops[0].var.name}'"
        elif uncounted:
            where = f"outside the axis of '{st.name}' bound to {uncounted[0]}"
        raise ScheduleError(
            "compute_at",
            c,
            f"it spreads over work-groups along {tag} and is computed {where}, where "
            "its work-groups' arrivals cannot be counted once each; compute it at the "
            "innermost block axis of the kernel's root stage, with only blockIdx loops outside",
        )
    iv = next(x for x in c.leaf_iter_vars if bound_tag(c, x) == tag)
    count = launch_extent(c, iv, ctx.ext[c][iv])
    index: E.Expr = E.IntImm(0)
    sets: Extent = 1
    for k, t in enumerate(sorted((t for t in env if t.startswith("blockIdx")), reverse=True)):
        var, n = env[t]  # z, y, x: the groups' linear index
        index = var if k == 0 else index * n + var
        sets = sets * n
    counter = S.Buffer(f"{c.name}.arrivals", "int32", (sets,), "global")
    ctx.group_counters.append(counter)
    ctx.group_reduced += [x for x in spread if x not in ctx.group_reduced]
    return S.LastGroup(counter, index, tag, count, rest)


def _with_allocs(ctx, stages, stmt, skip=frozenset()):
    """The allocations of ``stages`` (each buffer of a multi-output stage; none of ``skip``)
    around ``stmt``; a double-buffered stage's is marked ``double_buffer_scope`` for the
    ``double_buffer`` pass."""
    for c in reversed(stages):
        for b in reversed(ctx.bounds.buffers[c]):
            if b in skip or b in ctx.arg_buffers:
                continue
            stmt = S.Allocate(b, stmt)
            if c.double_buffered:
                stmt = S.AttrStmt(S.DOUBLE_BUFFER_SCOPE, b, c.double_buffered, stmt)
    return stmt


def _loop(ctx, st, iv, extent, body, env):
    attr = st.attrs.get(iv)
    tag = thread_tag(ctx, st, iv)
    if tag == "vthread":  # interleaved by the inject_virtual_threads pass
        return S.For(iv.var, E.IntImm(0), extent_expr(extent), "vthread", body)
    if tag:
        if tag in env:
            var, outer_ext = env[tag]
            symbolic = not isinstance(extent, int) or not isinstance(outer_ext, int)
            if symbolic and not ext_equal(extent, outer_ext):
                raise LoweringError(
                    f"stage '{st.name}': axis '{iv.var.name}' is bound to {tag} with extent "
                    f"{extent}, but the enclosing kernel runs {outer_ext} work-items along "
                    f"{tag}; with symbolic sizes the two must be the same expression: split "
                    "both by the same factor"
                )
            if symbolic:
                ctx.bound_vars[iv.var] = var
                return body
            if extent > outer_ext:
                raise LoweringError(
                    f"stage '{st.name}': axis '{iv.var.name}' is bound to {tag} "
                    f"with extent {extent}, but the enclosing kernel runs only "
                    f"{outer_ext} work-items along {tag}; use a split factor of "
                    f"at most {outer_ext}"
                )
            ctx.bound_vars[iv.var] = var
            if extent < outer_ext:
                body = S.IfThenElse(var < extent, body)
            return body
        root = kernel_root(st)
        if (
            root is not st
            and not any(bound_tag(root, x) == tag for x in root.leaf_iter_vars)
            and not _across_groups(st, env)
        ):
            raise ScheduleError(
                "bind",
                st,
                f"axis '{iv.var.name}' is bound to {tag}, but stage "
                f"'{root.name}', whose kernel '{st.name}' is computed in, binds "
                f"no axis to {tag}: every work-item along {tag} would compute "
                f"all of '{root.name}'; bind an axis of '{root.name}' to {tag} "
                "as well",
                iv,
            )
        launch = _kernel_extent(ctx, st, iv, extent, tag)
        var = ctx.thread_var(tag)
        ctx.bound_vars[iv.var] = var
        if not ext_equal(launch, extent):  # a thread_axis((0, n), tag) longer than the axis
            body = S.IfThenElse(var < extent, body)
        return S.ThreadExtent(var, tag, launch, body)
    kind = attr.kind if attr else "serial"
    pragmas = tuple(attr.pragmas) if attr else ()
    return S.For(iv.var, E.IntImm(0), extent_expr(extent), kind, body, pragmas)


def _kernel_extent(ctx: _Builder, st: Stage, iv: IterVar, extent: Extent, tag: str) -> Extent:
    """The launch extent of ``iv`` bound to ``tag``, checked against the kernel's other
    stages binding ``tag``, and recorded as the kernel's."""
    launch = launch_extent(st, iv, extent)
    prev = ctx.kernel_extents.setdefault(tag, (launch, st, iv))
    if not ext_equal(prev[0], launch):
        pe, pst, piv = prev
        raise LoweringError(
            f"stage '{st.name}': axis '{iv.var.name}' is bound to {tag} with "
            f"extent {extent}, but stage '{pst.name}' binds axis "
            f"'{piv.var.name}' to {tag} with extent {pe} in the same kernel; "
            f"a kernel has one extent per thread tag: split so that both "
            f"have the same extent (e.g. split(..., nparts={pe}))"
        )
    return launch


def launch_extent(st: Stage, iv: IterVar, extent: Extent) -> Extent:
    """How many work-items run along the tag that ``iv`` (of ``extent`` iterations) is bound
    to: ``extent``, or the range of a ``thread_axis((0, n), tag)``, which must not be shorter."""
    a = st.attrs.get(iv)
    thread = a.bind if a is not None else None
    if thread is None or thread.dom is None:
        return extent
    launch = thread.dom.extent
    if isinstance(extent, int) and isinstance(launch, int) and extent > launch:
        raise ScheduleError(
            "bind",
            st,
            f"axis '{iv.var.name}' has {extent} iterations but is bound to "
            f"thread_axis((0, {launch}), '{thread.tag}'), which runs {launch} work-items; "
            f"split it by {launch} first and bind the inner part",
            iv,
        )
    return launch


def _init_nest(ctx, st, leaves_from_reduce, out_index, guards, stores):
    """The loops that set each output ``(buffer, first)`` of ``stores`` to the reduction's
    first value (its identity or ``init``), over the data loops inside the first reduction
    loop."""
    data = [iv for iv in leaves_from_reduce if iv.kind != "reduce"]
    for iv in data:
        if thread_tag(ctx, st, iv):
            raise ScheduleError(
                "bind",
                st,
                f"axis '{iv.var.name}' is bound to a thread but sits "
                "inside a reduction loop; move it outside the reduction axes",
                iv,
            )
    fresh = {iv.var: E.Var(iv.var.name + ".init") for iv in data}
    index = substitute(out_index, fresh)
    stmt = _guard(
        [substitute(g, fresh) for g in guards],
        S.seq(*(S.Store(b, index, substitute(first, fresh)) for b, first in stores)),
    )
    for iv in reversed(data):
        attr = st.attrs.get(iv)
        kind = attr.kind if attr else "serial"
        v = fresh[iv.var]
        stmt = S.For(v, E.IntImm(0), extent_expr(ctx.ext[st][iv]), kind, stmt)
    return stmt


def check_scope_bindings(ctx: _Builder, st: Stage) -> None:
    """A stage in memory private to a work-item ("local") cannot bind thread or block indices,
    nor a work-group's ("shared") stage block indices: each work-item (group) would fill only
    its own part of its own copy and read the rest unwritten. The exception, as in TVM: a
    stage computed inside a consumer that binds the same tag, where each work-item (group)
    computes its own part (``private_binding``), and a reduce axis bound to a threadIdx tag,
    whose reduction across the work-items leaves the whole result in each one's copy."""
    rank = SCOPE_RANK[ctx.scope[st]]
    root = kernel_root(st)
    for iv in st.leaf_iter_vars:
        tag = bound_tag(st, iv)
        if tag and tag_rank(tag) < rank:
            if private_binding(st, iv, ctx.scope[st]) and any(
                bound_tag(root, x) == tag for x in root.leaf_iter_vars
            ):
                continue
            if iv.kind == "reduce" and tag.startswith("threadIdx"):
                continue  # a reduction across work-items: each keeps the whole result
            who = "work-item" if rank == SCOPE_RANK["local"] else "work-group"
            fix = (
                "give it scope 'shared' to fill it cooperatively, or drop the binding"
                if tag.startswith("threadIdx")
                else "drop the binding"
            )
            raise ScheduleError(
                "bind",
                st,
                f"axis '{iv.var.name}' is bound to {tag}, but the "
                f"stage lives in '{ctx.scope[st]}' memory, private to one {who}: "
                f"each {who} would fill only part of its own copy; {fix} (or compute it "
                f"at a consumer that binds {tag}: each {who} then computes its own part)",
                iv,
            )


def check_bindings(ctx: _Builder, st: Stage) -> None:
    """A root stage's thread axes may sit inside its unbound data loops, as in TVM: each
    work-item runs those loops itself (the kernel's statement holds them around the
    work-item index; TVM runs a loop outside its blockIdx axes on the host, launching the
    kernel at each iteration, which computes the same). Not inside a reduction loop, whose
    initialisation would have to run over the work-items first; and no stage in global
    memory may be computed at such a loop outside every thread axis: each work-item would
    compute all of it into the one array the kernel's work-items share, while others may
    still read the previous iteration's."""
    unbound = unbound_reduce = None
    leaves = st.leaf_iter_vars
    for iv in leaves:
        tag = bound_tag(st, iv)
        if (tag is None and ctx.ext[st][iv] == 1) or (tag is not None and iv.kind == "reduce"):
            continue  # a reduce axis bound to a thread is lifted out of its loops
        if tag is None:
            unbound = iv if unbound is None else unbound
            if iv.kind == "reduce" and unbound_reduce is None:
                unbound_reduce = iv
        elif tag != "vthread" and unbound_reduce is not None:
            raise ScheduleError(
                "bind",
                st,
                f"axis '{iv.var.name}' is bound to {tag} but the reduction loop "
                f"'{unbound_reduce.var.name}' is outside it; reorder the bound axes outside "
                "the reduction axes",
                iv,
            )
        elif tag == "vthread" and unbound is not None:
            raise ScheduleError(
                "bind",
                st,
                f"axis '{iv.var.name}' is a vthread but the unbound loop "
                f"'{unbound.var.name}' is outside it; reorder the virtual threads outside "
                "the serial loops",
                iv,
            )
    work_items = [k for k, iv in enumerate(leaves) if (bound_tag(st, iv) or "vthread") != "vthread"]
    if not work_items:
        return
    for child in ctx.stages:
        if child.attach_stage is not st or child.attach_ivar not in leaves:
            continue
        at = leaves.index(child.attach_ivar)
        serial = [iv for iv in leaves[: at + 1] if ctx.ext[st][iv] != 1]
        if (
            at < work_items[0]
            and serial
            and ctx.scope[child] == "global"
            and not across_groups(child)
        ):
            first = leaves[work_items[0]]
            raise ScheduleError(
                "compute_at",
                child,
                f"it is computed at '{child.attach_ivar.var.name}' of '{st.name}', a loop "
                f"outside the thread axis '{first.var.name}' ({bound_tag(st, first)}), in "
                "global memory: every work-item would compute it into the one array they "
                "share, racing with those still reading the previous iteration; attach it "
                f"inside the thread axes, give it scope 'local', or compute it at the root",
                child.attach_ivar,
            )


def _root_readers(sched: Schedule, st: Stage) -> set[Stage]:
    """The kernels (root stages) that read ``st``, through inlined stages."""
    out, todo, seen = set(), [st], {st}
    while todo:
        for r in sched.readers(todo.pop()):
            if r in seen:
                continue
            seen.add(r)
            if r.attach_type == "inline":
                todo.append(r)
            else:
                out.add(kernel_root(r))
    return out


def _private_roots(sched: Schedule, ctx: _Builder) -> dict[Stage, Stage]:
    """Root stages in "local" or "shared" memory, each computed in the kernel of its one
    consumer kernel (as TVM allocates such a stage at the top of the kernel that uses it),
    before the consumer, with a barrier between them (``insert_barriers``): ``{stage: the root
    stage whose kernel computes it}``. A "local" stage (which binds no thread, as
    ``check_scope_bindings`` ensures) is computed whole by every work-item in its private
    memory; a "shared" one by every work-group, spread over the same threadIdx axes as its
    consumer's kernel (and so over every work-item of the group). Elsewhere its buffer would
    have to outlive the kernel that fills it: refused."""
    host: dict[Stage, Stage] = {}
    for st in reversed(ctx.stages):  # its readers first: one read by such a stage moves along
        if st.attach_type != "root" or ctx.scope[st] == "global" or st.is_output:
            continue
        scope = ctx.scope[st]
        fix = (
            f"attach it inside its consumer with s[{st.name}].compute_at(s[consumer], axis), "
            "or use scope 'global'"
        )
        roots = {host.get(r, r) for r in _root_readers(sched, st)}
        order = ctx.stages.index(st)
        if any(t.op is st.op for t in ctx.arg_tensors):
            raise LoweringError(
                f"stage '{st.name}' has scope '{scope}' but is an argument of the function: "
                f"its caller's array is global memory; give it scope 'global', or {fix}"
            )
        if len(roots) != 1 or ctx.stages.index(next(iter(roots))) < order:
            who = ", ".join(sorted(f"'{r.name}'" for r in roots)) or "no stage"
            raise LoweringError(
                f"stage '{st.name}' has scope '{scope}' but is computed at the root and read "
                f"by the kernels of {who}: a root stage in '{scope}' memory is computed "
                "inside the one kernel that reads it, and its buffer cannot outlive that "
                f"kernel; {fix}"
            )
        (consumer,) = roots
        if scope == "shared":
            own = {bound_tag(st, x) for x in st.leaf_iter_vars} - {None}
            tags = {
                bound_tag(r, x)
                for r in ctx.stages
                if kernel_root(r) is consumer
                for x in r.leaf_iter_vars
            } - {None}
            want = {t for t in tags if t is not None and t.startswith("threadIdx")}
            if own != want:
                raise LoweringError(
                    f"stage '{st.name}' has scope 'shared' and is computed at the root, "
                    f"inside the kernel of '{consumer.name}', which runs its work-items "
                    f"along {sorted(want) or 'no threadIdx axis'}, but '{st.name}' binds "
                    f"{sorted(x for x in own if x) or 'no axis'}: a root stage in shared "
                    "memory must be spread over the same threadIdx axes as its consumer's "
                    f"kernel (bound to the same extents); or {fix}"
                )
        host[st] = consumer
    return host


def schedule_to_stmt(sched: Schedule, args: Sequence[Tensor]) -> tuple[S.Stmt, Bounds]:
    """The whole computation as one statement; returns ``(stmt, bounds)``."""
    bounds = infer_bound(sched, args)
    ctx = _Builder(bounds, args)
    for st in ctx.stages:
        check_scope_bindings(ctx, st)
        if (
            ctx.scope[st] == "shared"
            and st.attach_type == "scope"
            and not any(
                bound_tag(p, x)
                for p, at in ancestors(st)
                for x in p.leaf_iter_vars[: p.leaf_iter_vars.index(at) + 1]
            )
        ):
            root = kernel_root(st)
            raise LoweringError(
                f"stage '{st.name}' has scope 'shared' (memory of a work-group), "
                f"but no axis of '{root.name}' around it is bound to a thread "
                f"axis: did you forget to bind? Bind the outer axes of "
                f"'{root.name}' to blockIdx/threadIdx, or use scope 'local'"
            )
    host = _private_roots(sched, ctx)
    parts, root_allocs = [], []
    for st in ctx.stages:
        if st.attach_type != "root" or st in host:
            continue
        check_bindings(ctx, st)
        ctx.kernel_extents = {}
        inner = [x for x in ctx.stages if host.get(x) is st]
        for x in inner:
            check_bindings(ctx, x)
        built = [build_stage(ctx, x, {}) for x in [*inner, st]]
        if inner:  # one kernel, named for the consumer, its private roots allocated in it
            built = [S.Produce(st.name, _with_allocs(ctx, inner, S.seq(*built)))]
        parts.append(built[0])
        if not st.is_output:
            root_allocs.append(st)
    stmt = _with_allocs(ctx, root_allocs + ctx.group_reduced, S.seq(*parts))
    for counter in reversed(ctx.group_counters):
        stmt = S.Allocate(counter, stmt)
    stmt = substitute(stmt, ctx.bound_vars)
    return stmt, bounds
