"""From a schedule to one loop-nest statement with flat buffer accesses.

Order of work: inline the ``compute_inline`` stages into their consumers, infer the region
every stage computes (consumers first), give each stage a buffer, then build each stage's nest
in leaf order with its ``compute_at`` producers placed inside the loop they are attached to.
"""

from __future__ import annotations

import networkx as nx

from ..errors import LoweringError, ScheduleError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.intrin import identity_value
from ..ir.simplify import simplify
from ..ir.tensor import PlaceholderOp, Tensor, tensors_read
from ..ir.visitor import Mutator, substitute
from .bound import SCOPE_RANK, infer_region, pass_down, pass_up, tag_rank


class _Inline(Mutator):
    def __init__(self, ctx):
        self.ctx = ctx

    def visit_TensorLoad(self, t):
        idx = tuple(self.visit(i) for i in t.indices)
        st = self.ctx.stage_of(t.tensor)
        if st is not None and st.attach_type == "inline":
            body = self.ctx.body[st]
            return substitute(body, {iv.var: i for iv, i in zip(st.op.axis, idx)})
        return E.TensorLoad(t.tensor, idx)


class _Flatten(Mutator):
    """``T[i, j]`` -> ``T_buffer[(i - min_i)*stride_i + (j - min_j)*stride_j]``."""

    def __init__(self, ctx):
        self.ctx = ctx

    def visit_TensorLoad(self, t):
        idx = tuple(self.visit(i) for i in t.indices)
        buf, region = self.ctx.storage(t.tensor)
        st = self.ctx.stage_of(t.tensor)
        rel = [i - m for i, (m, _) in zip(idx, region)]
        if st is None:
            return E.Load(buf, flat_index(rel, [e for _, e in region]))
        return E.Load(buf, strided_index(rel, self.ctx.strides[st]))


def flat_index(indices, extents):
    out = None
    for i, e in zip(indices, extents):
        out = i if out is None else out * e + i
    return out if out is not None else E.IntImm(0)


def strided_index(indices, strides):
    out = None
    for i, s in zip(indices, strides):
        term = i if s == 1 else i * s
        out = term if out is None else out + term
    return out if out is not None else E.IntImm(0)


def storage_layout(st, extents):
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
    strides = [1] * n
    for d in range(n - 1, -1, -1):
        if d < n - 1:
            strides[d] = strides[d + 1] * ext[d + 1]
        if perm[d] in st.align:
            factor, offset = st.align[perm[d]]
            strides[d] += (offset - strides[d]) % factor
    if all(strides[d] == strides[d + 1] * ext[d + 1] for d in range(n - 1)):
        shape = tuple(ext)
    elif all(strides[d] % strides[d + 1] == 0 for d in range(n - 1)):
        shape = (ext[0],) + tuple(strides[d] // strides[d + 1] for d in range(n - 1))
    else:
        shape = (strides[0] * ext[0],) if n else ()
    by_axis = [0] * n
    for d, p in enumerate(perm):
        by_axis[p] = strides[d]
    return by_axis, shape


class Context:
    def __init__(self, sched, args):
        self.sched = sched
        self.stages = [st for st in _topo(sched) if st.attach_type != "inline"]
        self.body, self.region, self.buffer, self.ext = {}, {}, {}, {}
        self.scope = {}
        self.strides = {}  # stage -> stride of each axis in its buffer
        self.var_ranges = {}  # every loop Var -> (0, extent-1), for the simplifier
        self.thread_vars = {}  # tag -> Var
        self.kernel_extents = {}  # tag -> (extent, stage, axis) in the kernel being built
        self.bound_vars = {}  # leaf Var -> thread Var
        self.placeholder_buf = {}
        self.arg_tensors = args

    def stage_of(self, tensor):
        return self.sched.stage_map.get(tensor.op)

    def storage(self, tensor):
        st = self.stage_of(tensor)
        if st is None:
            op = tensor.op
            if op not in self.placeholder_buf:
                if not isinstance(op, PlaceholderOp):
                    raise LoweringError(f"tensor '{tensor.name}' is not produced by this schedule")
                self.placeholder_buf[op] = S.Buffer(
                    op.name, op.dtype, op.shape, image=op in self.sched.image_inputs
                )
            return self.placeholder_buf[op], [(E.IntImm(0), d) for d in op.shape]
        return self.buffer[st], self.region[st]

    def thread_var(self, tag):
        if tag not in self.thread_vars:
            self.thread_vars[tag] = E.Var(tag)
        return self.thread_vars[tag]


def _topo(sched):
    g = sched.graph()
    order = {st: k for k, st in enumerate(sched.stages)}
    topo = nx.lexicographical_topological_sort(g, key=lambda n: order.get(n, -1))
    return [n for n in topo if n in order]


# ---------------------------------------------------------------- attach tree and scopes


def _ancestors(st):
    """``[(stage, attach_ivar)]`` from ``st``'s attach parent up to its root stage."""
    out, cur, seen = [], st, {st}
    while cur.attach_type == "scope":
        parent = cur.attach_stage
        if parent in seen:
            raise ScheduleError("compute_at", st, "the compute_at placements form a cycle")
        if parent.attach_type == "inline":
            raise ScheduleError(
                "compute_at",
                cur,
                f"it is attached to stage '{parent.name}', "
                "which is inlined; attach it to a stage that has loops",
            )
        out.append((parent, cur.attach_ivar))
        seen.add(parent)
        cur = parent
    return out


def _outer_leaves(st):
    """Leaves of the ancestors that enclose ``st`` (those at or outside each attach point)."""
    out = []
    for parent, iv in _ancestors(st):
        pos = parent.leaf_iter_vars.index(iv)
        out.extend(parent.leaf_iter_vars[: pos + 1])
    return out


def _bound_tag(st, iv):
    a = st.attrs.get(iv)
    return a.bind.tag if a is not None and a.bind is not None else None


def _infer_scope(st):
    if st.scope is not None:
        return st.scope
    if st.attach_type != "scope":
        return "global"
    tags = []
    for parent, iv in _ancestors(st):
        pos = parent.leaf_iter_vars.index(iv)
        tags += [_bound_tag(parent, x) for x in parent.leaf_iter_vars[: pos + 1]]
    if any(t and t.startswith("threadIdx") for t in tags):
        return "local"
    if any(t and t.startswith("blockIdx") for t in tags):
        return "shared"
    return "global"


# ---------------------------------------------------------------- bound inference


def infer_bounds(ctx):
    readers = {st: [] for st in ctx.stages}
    for st in ctx.stages:
        for t in tensors_read(ctx.body[st]):
            p = ctx.stage_of(t)
            if p is not None and p in readers:
                readers[p].append((st, t))
    for st in reversed(ctx.stages):
        ctx.scope[st] = _infer_scope(st)
        if st.attach_type == "scope":
            ctx.region[st] = _attached_region(ctx, st, readers[st])
        else:
            ctx.region[st] = [(E.IntImm(0), d) for d in st.op.shape]
        root_ext = {iv: e for iv, (_, e) in zip(st.op.axis, ctx.region[st])}
        root_ext.update({iv: iv.dom.extent for iv in st.op.reduce_axis})
        ctx.ext[st] = pass_down(st, root_ext)
        for iv in st.leaf_iter_vars:
            ctx.var_ranges[iv.var] = (0, ctx.ext[st][iv] - 1)
        scope = ctx.scope[st] if not st.is_output else "global"
        ctx.strides[st], shape = storage_layout(st, [e for _, e in ctx.region[st]])
        ctx.buffer[st] = S.Buffer(st.name, st.op.dtype, shape, scope)


def _attached_region(ctx, st, readers):
    parent, ax = st.attach_stage, st.attach_ivar
    ax_pos = parent.leaf_iter_vars.index(ax)
    rank = SCOPE_RANK[ctx.scope[st]]
    relaxed = {}
    for iv in parent.leaf_iter_vars[ax_pos + 1 :]:
        relaxed[iv.var] = ctx.ext[parent][iv]
    # work-item indices around the attach point that the whole tile must cover
    for anc in [parent] + [a for a, _ in _ancestors(parent)]:
        for iv in anc.leaf_iter_vars:
            tag = _bound_tag(anc, iv)
            if tag and rank <= tag_rank(tag):
                relaxed[iv.var] = ctx.ext[anc][iv]
    accesses = []
    for reader, tensor in readers:
        chain = [reader] + [a for a, _ in _ancestors(reader)]
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
            pos = parent.leaf_iter_vars.index(inside.attach_ivar)
            if pos < ax_pos:
                raise ScheduleError(
                    "compute_at",
                    st,
                    f"its reader '{reader.name}' is computed at "
                    f"'{inside.attach_ivar.var.name}', outside "
                    f"'{ax.var.name}'; attach '{st.name}' further out",
                )
            for mid in chain[: chain.index(parent)]:
                for iv in mid.leaf_iter_vars:
                    relaxed[iv.var] = ctx.ext[mid][iv]
        values = _root_values(ctx, reader)
        vmap = {iv.var: values[iv] for iv in list(reader.op.axis) + list(reader.op.reduce_axis)}
        for load in _loads_of(ctx.body[reader], tensor):
            accesses.append([simplify(substitute(i, vmap), ctx.var_ranges) for i in load.indices])
    if not accesses:
        raise LoweringError(f"stage '{st.name}' is attached but nothing reads it")
    return infer_region(st.op.shape, accesses, relaxed, ctx.var_ranges, st.name)


def _root_values(ctx, st):
    """Root axis -> ``min + offset`` expression in the stage's leaf variables."""
    values, _ = pass_up(st, ctx.ext[st])
    out = {}
    for iv, (m, _) in zip(st.op.axis, ctx.region[st]):
        out[iv] = simplify(m + values[iv])
    for iv in st.op.reduce_axis:
        out[iv] = simplify(values[iv] + iv.dom.min)
    return out


def _loads_of(expr, tensor):
    found = []

    class _V(Mutator):
        def visit_TensorLoad(self, t):
            if t.tensor is tensor:
                found.append(t)
            return self.generic_visit(t)

    _V().visit(expr)
    return found


# ---------------------------------------------------------------- loop nests


def build_stage(ctx, st, env):
    """The statement computing stage ``st``; ``env`` maps thread tags bound around it to
    ``(var, extent)``."""
    leaves = st.leaf_iter_vars
    ext = ctx.ext[st]
    values, split_guards = pass_up(st, ext)
    region = ctx.region[st]
    root = _root_values(ctx, st)
    vmap = {iv.var: root[iv] for iv in list(st.op.axis) + list(st.op.reduce_axis)}
    buf = ctx.buffer[st]
    out_index = strided_index([values[iv] for iv in st.op.axis], ctx.strides[st])
    body = ctx.body[st]
    flat = _Flatten(ctx)

    def is_reduce_leaf(iv):
        return iv.kind == "reduce"

    # guards: uneven splits, and (for attached stages) staying inside the op's domain
    data_guards, all_guards = [], []
    for parent, cond in split_guards:
        all_guards.append(cond)
        if parent.kind != "reduce":
            data_guards.append(cond)
    # a work-group tile is filled with zeros outside the op's domain (every element the
    # work-items read is written); a private tile that reads only tiles needs no domain test
    zero_fill = ctx.scope[st] == "shared" and not isinstance(body, E.Reduce)
    domain = []
    if st.attach_type == "scope" and not _private_reads_only(ctx, st):
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
    if isinstance(body, E.Reduce):
        src = flat.visit(substitute(body.source, vmap))
        old = E.Load(buf, out_index)
        upd = E.BinOp("+", old, src) if body.combiner == "sum" else E.BinOp(body.combiner, old, src)
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
            identity_value(body.combiner, body.dtype),
        )
    else:
        value = flat.visit(substitute(body, vmap))
        if domain:
            value = E.Select(_all(domain), value, E.const(0, value.dtype))
        main = _guard(all_guards, S.Store(buf, out_index, value))
        first_reduce, init = None, None

    # envs[k]: the thread tags bound outside leaf k
    envs, cur = [], dict(env)
    for iv in leaves:
        envs.append(dict(cur))
        tag = _bound_tag(st, iv)
        if tag and tag != "vthread" and tag not in cur:
            cur[tag] = (ctx.thread_var(tag), ext[iv])
    inner_env = cur

    attached = {}
    for child in ctx.stages:
        if child.attach_type == "scope" and child.attach_stage is st:
            attached.setdefault(child.attach_ivar, []).append(child)

    stmt = main
    for k in range(len(leaves) - 1, -1, -1):
        iv = leaves[k]
        inner_env_k = envs[k + 1] if k + 1 < len(leaves) else inner_env
        kids = [build_stage(ctx, c, inner_env_k) for c in attached.get(iv, [])]
        prefix = kids + ([init] if first_reduce == k + 1 else [])
        stmt = _with_allocs(ctx, attached.get(iv, []), S.seq(*prefix, stmt))
        stmt = _loop(ctx, st, iv, ext[iv], stmt, envs[k])
    if first_reduce == 0:
        stmt = S.seq(init, stmt)
    for tag, var, extent, enclosing in leaders:
        if not enclosing:  # the guard's work-item index, outside the kernel's loop
            stmt = S.ThreadExtent(var, tag, extent, stmt)
    return S.Produce(st.name, stmt)


def _private_reads_only(ctx, st):
    """A ``"local"`` stage that reads work-group or private tiles only may compute the part of
    its tile outside the op's domain: it stays inside its own buffer, every read stays inside
    a tile that bound inference sized to cover it (a tile clipped to its tensor's shape does
    not count), and those elements are never stored by the guarded consumer. Dropping the
    domain guards leaves the register tile's loops guard-free."""
    if ctx.scope.get(st) != "local":
        return False
    for t in tensors_read(ctx.body[st]):
        p = ctx.stage_of(t)
        if p is None or ctx.scope.get(p, "global") == "global":
            return False
        if any(e >= dim for (_, e), dim in zip(ctx.region[p], p.op.shape)):
            return False
    return True


def _leader_tags(ctx, st, env):
    """``[(tag, var, extent, enclosing)]``: the threadIdx tags of the kernel that ``st``, a
    stage in work-group memory, binds no axis to. Every work-item along such a tag would
    compute the whole tile (bound inference relaxes the tile over the work-group), so the
    stores are left to work-item 0 along it: for a reduction, redundant read-modify-writes
    of one tile element race. ``enclosing``: a loop around the stage is bound to the tag."""
    if ctx.scope.get(st) != "shared" or st.attach_type != "scope":
        return []
    root = _kernel_root(st)
    own = {_bound_tag(st, iv) for iv in st.leaf_iter_vars}
    out = []
    for iv in root.leaf_iter_vars:
        tag = _bound_tag(root, iv)
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
            var, extent = ctx.thread_var(tag), ctx.ext[root][iv]
            ctx.var_ranges[var] = (0, extent - 1)
            out.append((tag, var, extent, False))
    return out


def _all(conds):
    c = conds[0]
    for x in conds[1:]:
        c = E.And(c, x)
    return c


def _guard(conds, stmt):
    return S.IfThenElse(_all(conds), stmt) if conds else stmt


def _with_allocs(ctx, stages, stmt):
    """The allocations of ``stages`` around ``stmt``; a double-buffered stage's is marked
    ``double_buffer_scope`` for the ``double_buffer`` pass."""
    for c in reversed(stages):
        stmt = S.Allocate(ctx.buffer[c], stmt)
        if c.double_buffered:
            stmt = S.AttrStmt(S.DOUBLE_BUFFER_SCOPE, ctx.buffer[c], c.double_buffered, stmt)
    return stmt


def _loop(ctx, st, iv, extent, body, env):
    attr = st.attrs.get(iv)
    tag = attr.bind.tag if attr is not None and attr.bind is not None else None
    if tag == "vthread":  # interleaved by the inject_virtual_threads pass
        return S.For(iv.var, E.IntImm(0), E.IntImm(extent), "vthread", body)
    if tag:
        if tag in env:
            var, outer_ext = env[tag]
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
        root = _kernel_root(st)
        if root is not st and not any(_bound_tag(root, x) == tag for x in root.leaf_iter_vars):
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
        prev = ctx.kernel_extents.setdefault(tag, (extent, st, iv))
        if prev[0] != extent:
            pe, pst, piv = prev
            raise LoweringError(
                f"stage '{st.name}': axis '{iv.var.name}' is bound to {tag} with "
                f"extent {extent}, but stage '{pst.name}' binds axis "
                f"'{piv.var.name}' to {tag} with extent {pe} in the same kernel; "
                f"a kernel has one extent per thread tag: split so that both "
                f"have the same extent (e.g. split(..., nparts={pe}))"
            )
        var = ctx.thread_var(tag)
        ctx.bound_vars[iv.var] = var
        ctx.var_ranges[var] = (0, extent - 1)
        return S.ThreadExtent(var, tag, extent, body)
    kind = attr.kind if attr else "serial"
    pragmas = tuple(attr.pragmas) if attr else ()
    return S.For(iv.var, E.IntImm(0), E.IntImm(extent), kind, body, pragmas)


def _kernel_root(st):
    """The root stage of the kernel that ``st`` is computed in."""
    anc = _ancestors(st)
    return anc[-1][0] if anc else st


def _init_nest(ctx, st, leaves_from_reduce, out_index, guards, identity):
    data = [iv for iv in leaves_from_reduce if iv.kind != "reduce"]
    for iv in data:
        if _bound_tag(st, iv):
            raise ScheduleError(
                "bind",
                st,
                f"axis '{iv.var.name}' is bound to a thread but sits "
                "inside a reduction loop; move it outside the reduction axes",
                iv,
            )
    fresh = {iv.var: E.Var(iv.var.name + ".init") for iv in data}
    stmt = _guard(
        [substitute(g, fresh) for g in guards],
        S.Store(ctx.buffer[st], substitute(out_index, fresh), identity),
    )
    for iv in reversed(data):
        attr = st.attrs.get(iv)
        kind = attr.kind if attr else "serial"
        v = fresh[iv.var]
        ctx.var_ranges[v] = (0, ctx.ext[st][iv] - 1)
        stmt = S.For(v, E.IntImm(0), E.IntImm(ctx.ext[st][iv]), kind, stmt)
    return stmt


def check_scope_bindings(ctx, st):
    """A stage in memory private to a work-item ("local") cannot bind thread or block indices,
    nor a work-group's ("shared") stage block indices: each work-item (group) would fill only
    its own part of its own copy and read the rest unwritten."""
    rank = SCOPE_RANK[ctx.scope[st]]
    for iv in st.leaf_iter_vars:
        tag = _bound_tag(st, iv)
        if tag and tag_rank(tag) < rank:
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
                f"each {who} would fill only part of its own copy; {fix}",
                iv,
            )


def check_bindings(ctx, st):
    """A root stage's bound axes must all be outside its unbound loops (they become the NDRange);
    loops of one iteration do not count."""
    unbound = None
    for iv in st.leaf_iter_vars:
        tag = _bound_tag(st, iv)
        if tag is None and ctx.ext[st][iv] == 1:
            continue
        if tag is None:
            unbound = iv if unbound is None else unbound
        elif unbound is not None:
            raise ScheduleError(
                "bind",
                st,
                f"axis '{iv.var.name}' is bound to {tag} but the "
                f"unbound loop '{unbound.var.name}' is outside it; reorder the "
                "bound axes outermost",
                iv,
            )


def schedule_to_stmt(sched, args):
    """The whole computation as one statement; returns ``(stmt, context)``."""
    ctx = Context(sched, args)
    inline = _Inline(ctx)
    for st in _topo(sched):
        ctx.body[st] = inline.visit(st.op.body)
    for st in ctx.stages:
        _ancestors(st)
        if st.attach_type == "scope" and st.attach_ivar not in st.attach_stage.leaf_iter_vars:
            raise ScheduleError(
                "compute_at",
                st,
                f"axis '{st.attach_ivar.var.name}' of stage "
                f"'{st.attach_stage.name}' was split or fused after compute_at; "
                "attach to one of its current loops",
            )
    infer_bounds(ctx)
    for st in ctx.stages:
        check_scope_bindings(ctx, st)
        if (
            ctx.scope[st] == "shared"
            and st.attach_type == "scope"
            and not any(
                _bound_tag(p, x)
                for p, at in _ancestors(st)
                for x in p.leaf_iter_vars[: p.leaf_iter_vars.index(at) + 1]
            )
        ):
            root = _kernel_root(st)
            raise LoweringError(
                f"stage '{st.name}' has scope 'shared' (memory of a work-group), "
                f"but no axis of '{root.name}' around it is bound to a thread "
                f"axis: did you forget to bind? Bind the outer axes of "
                f"'{root.name}' to blockIdx/threadIdx, or use scope 'local'"
            )
    parts, root_allocs = [], []
    for st in ctx.stages:
        if st.attach_type != "root":
            continue
        if ctx.scope[st] != "global" and not st.is_output:
            raise LoweringError(
                f"stage '{st.name}' has scope '{ctx.scope[st]}' but is computed "
                "at the root, where its buffer would have to outlive the kernel "
                "that fills it; attach it inside its consumer with "
                f"s[{st.name}].compute_at(s[consumer], axis), or use scope "
                "'global'"
            )
        check_bindings(ctx, st)
        ctx.kernel_extents = {}
        parts.append(build_stage(ctx, st, {}))
        if not st.is_output and not _is_arg(ctx, st):
            root_allocs.append(st)
    stmt = _with_allocs(ctx, root_allocs, S.seq(*parts))
    stmt = substitute(stmt, ctx.bound_vars)
    return stmt, ctx


def _is_arg(ctx, st):
    return any(isinstance(t, Tensor) and ctx.stage_of(t) is st for t in ctx.arg_tensors)
