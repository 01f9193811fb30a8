"""The misuses (``MISUSES``): a legal prefix, then steps whose last one must raise a
``TensorschedError`` (at the call or at lowering); and ``random_step``, one primitive call with
arbitrary arguments."""

from __future__ import annotations

from . import steps as legal
from .model import TAGS_BLOCK, TAGS_THREAD, Ax, Raw, Step


def bad_stale_axis(live):
    opts = [
        (st, iv)
        for st in live.stages()
        for iv in st.all_iter_vars
        if iv not in st.leaf_iter_vars and live.usable(st, iv)
    ]
    if not opts:
        return None
    st, iv = live.choose(opts)
    prim = live.choose(("split", "unroll", "vectorize", "reorder", "fuse", "bind"))
    return [live._misuse_call(st, prim, live.ax(st, iv))]


def bad_foreign_axis(live):
    stages = [st for st in live.stages()]
    if len(stages) < 2:
        return None
    st = live.choose(stages)
    o, iv = live.any_leaf(lambda x, _: x is not st)
    if iv is None:
        return None
    prim = live.choose(("split", "unroll", "reorder", "bind"))
    return [live._misuse_call(st, prim, live.ax(o, iv))]


def bad_factor(live):
    st, iv = live.any_leaf(lambda x, y: live.plain(x, y))
    if iv is None:
        return None
    kw = live.choose(
        (
            (("factor", 0),),
            (("factor", -2),),
            (("factor", 2.5),),
            (("factor", True),),
            (("factor", "4"),),
            (("nparts", 0),),
            (("factor", 2), ("nparts", 2)),
            (),
        )
    )
    return [Step("split", live.var[st], (live.ax(st, iv),), kw, expect="error")]


def bad_fuse(live):
    opts = []
    for st in live.stages():
        lv = [iv for iv in st.leaf_iter_vars if live.plain(st, iv) and live.usable(st, iv)]
        for a in lv:
            for b in lv:
                pa, pb = st.leaf_iter_vars.index(a), st.leaf_iter_vars.index(b)
                if a is not b and (pb != pa + 1 or a.kind != b.kind):
                    opts.append((st, a, b))
    if not opts:  # (fusing a single axis is legal, as in TVM: it returns the axis)
        return None
    st, a, b = live.choose(opts)
    return [Step("fuse", live.var[st], (live.ax(st, a), live.ax(st, b)), expect="error")]


def bad_reorder(live):
    st, iv = live.any_leaf()
    if iv is None:
        return None
    others = [x for x in st.leaf_iter_vars if x is not iv and live.usable(st, x)][:1]
    a = live.ax(st, iv)
    return [
        Step("reorder", live.var[st], (a, *[live.ax(st, x) for x in others], a), expect="error")
    ]


def bad_bind_reduce(live):
    st, iv = live.any_leaf(lambda x, y: y.kind == "reduce")
    if iv is None:
        return None
    tag = live.choose(TAGS_BLOCK)  # a threadIdx tag is a reduction across work-items
    return [
        Step(
            "bind",
            live.var[st],
            (live.ax(st, iv), Raw(f"ts.thread_axis({tag!r})")),
            expect="error",
        )
    ]


def bad_bind_twice(live):
    st, iv = live.any_leaf(lambda x, y: y.kind == "data" and live.plain(x, y))
    if iv is None:
        return None
    v, a = live.var[st], live.ax(st, iv)
    first = Step("bind", v, (a, Raw("ts.thread_axis('blockIdx.x')")))
    others = [
        x
        for x in st.leaf_iter_vars
        if x is not iv and x.kind == "data" and live.plain(st, x) and live.usable(st, x)
    ]
    if others and live.choose((False, True)):  # the same tag on another axis
        return [
            first,
            Step(
                "bind",
                v,
                (live.ax(st, others[0]), Raw("ts.thread_axis('blockIdx.x')")),
                expect="error",
            ),
        ]
    return [first, Step("bind", v, (a, Raw("ts.thread_axis('threadIdx.x')")), expect="error")]


def bad_tag(live):
    st, iv = live.any_leaf(lambda x, y: y.kind == "data")
    if iv is None:
        return None
    tag = live.choose(("threadIdx.w", "blockidx.x", "vthread.x", "threadIdx"))
    return [
        Step(
            "bind",
            live.var[st],
            (live.ax(st, iv), Raw(f"ts.thread_axis({tag!r})")),
            expect="error",
        )
    ]


def bad_annotate_reduce(live):
    st, iv = live.any_leaf(lambda x, y: y.kind == "reduce")
    if iv is None:
        return None
    return [
        Step(
            live.choose(("vectorize", "parallel")),
            live.var[st],
            (live.ax(st, iv),),
            expect="error",
        )
    ]


def bad_after_bind(live):
    st, iv = live.any_leaf(lambda x, y: y.kind == "data" and live.plain(x, y))
    if iv is None:
        return None
    v, a = live.var[st], live.ax(st, iv)
    then = live.choose(("split", "vectorize", "unroll", "parallel", "fuse"))
    return [
        Step("bind", v, (a, Raw("ts.thread_axis('threadIdx.y')"))),
        live._misuse_call(st, then, a),
    ]


def bad_compute_at(live):
    st = live.choose(live.stages())
    kinds = ["itself"]
    non_consumers = [
        p for p in live.stages() if p is not st and not live.s._reads_transitively(p, st)
    ]
    if non_consumers:
        kinds.append("non_consumer")
    if st.is_output and len(live.stages()) > 1:
        kinds.append("output")
    kinds.append("tensor")
    kind = live.choose(kinds)
    if kind == "itself":
        parent = st
    elif kind == "tensor":
        iv = live.choose(st.leaf_iter_vars)
        if not live.usable(st, iv):
            return None
        return [
            Step("compute_at", live.var[st], (Raw(live.var[st]), live.ax(st, iv)), expect="error")
        ]
    else:
        parent = live.choose(
            non_consumers if kind == "non_consumer" else [p for p in live.stages() if p is not st]
        )
    leaves = [iv for iv in parent.leaf_iter_vars if live.usable(parent, iv)]
    if not leaves:
        return None
    return [
        Step(
            "compute_at",
            live.var[st],
            (live.var[parent], live.ax(parent, live.choose(leaves))),
            expect="error",
        )
    ]


def bad_inline(live):
    opts = [
        st for st in live.stages() if st.is_output or st.op.reduce_axis or live.has_attached(st)
    ]
    if not opts:
        return None
    return [Step("compute_inline", live.var[live.choose(opts)], expect="error")]


def bad_cache_write(live):
    # a split, fused or reordered stage is legal (the cache is laid out by its loops, as
    # TVM's CacheWriteWithReLayout does); an annotation cache_write would drop is not, nor a
    # tail other than "guard", nor a stage computed at a loop that cache_write removes
    opts = [
        st
        for st in live.stages()
        if any(not live.plain(st, iv) for iv in st.attrs)
        or any(getattr(r, "tail", "guard") != "guard" for r in st.relations)
        or any(iv not in st.op.axis for iv in live.pinned(st))
    ]
    scope = live.choose(("local", "register", "Shared"))
    if scope == "local":
        if not opts:
            return None
        st = live.choose(opts)
    else:
        st = live.choose(live.stages())
    return [
        Step("cache_write", live.var[st], (scope,), (), (live.fresh_var("bad"),), expect="error")
    ]


def bad_cache_read(live):
    from tensorsched.ir.tensor import tensors_read

    st = live.choose(live.stages())
    others = [
        t
        for t in live.ns["args"]
        if t not in tensors_read(st.op.body[0]) and live.var_of_tensor(t) is not None
    ]
    kind = live.choose(("scope", "not_a_reader") if others else ("scope",))
    if kind == "scope":
        read = [t for t in tensors_read(st.op.body[0]) if live.var_of_tensor(t) is not None]
        if not read:
            return None
        t, scope = live.choose(read), live.choose(("private", "texture", "Local"))
    else:
        t, scope = live.choose(others), "global"
    return [
        Step(
            "cache_read",
            live.var_of_tensor(t),
            (scope, [Raw(live.var[st])]),
            (),
            (live.fresh_var("bad"),),
            expect="error",
        )
    ]


def bad_on_inlined(live):
    opts = [
        st
        for st in live.stages()
        if not st.is_output
        and not st.op.reduce_axis
        and st not in live.arg_stages()
        and not live.has_attached(st)
    ]
    if not opts:
        return None
    st = live.choose(opts)
    iv = live.choose(st.leaf_iter_vars)
    if not live.usable(st, iv):
        return None
    prim = live.choose(("split", "unroll", "vectorize", "reorder", "bind"))
    return [Step("compute_inline", live.var[st]), live._misuse_call(st, prim, live.ax(st, iv))]


def bad_bind_inner(live):
    """Bind a loop of a root stage with an unbound reduction loop (of more than one
    iteration) outside it: lowering must refuse (its initialisation would have to run over
    the work-items first). Inside a serial data loop a bound loop is legal: each work-item
    runs the loop, as TVM runs it on the host around the kernel's launches."""
    opts = []
    for st in live.stages():
        if st.attach_type != "root" or any(live.bound(st, iv) for iv in st.leaf_iter_vars):
            continue
        ext = live.root_extents(st)
        lv = st.leaf_iter_vars
        for n, iv in enumerate(lv):
            if (
                n
                and iv.kind == "data"
                and live.plain(st, iv)
                and live.usable(st, iv)
                and any(x.kind == "reduce" and ext.get(x, 1) > 1 for x in lv[:n])
            ):
                opts.append((st, iv))
    if not opts:
        return None
    st, iv = live.choose(opts)
    tag = live.choose(TAGS_BLOCK)  # a threadIdx tag is a reduction across work-items
    return [
        Step(
            "bind",
            live.var[st],
            (live.ax(st, iv), Raw(f"ts.thread_axis({tag!r})")),
            expect="error",
        )
    ]


def bad_local_at_root(live):
    """A root stage given "local" or "shared" memory while two kernels read it: its buffer
    cannot outlive the kernel that fills it (read by one kernel, it is computed inside that
    one, as in TVM)."""
    opts = [
        st
        for st in live.stages()
        if not st.is_output
        and st.attach_type == "root"
        and st not in live.arg_stages()
        and len({id(live.kernel_root(r)) for r in live.readers(st)}) >= 2
    ]
    if not opts:
        return None
    st = live.choose(opts)
    return [Step("set_scope", live.var[st], (live.choose(("local", "shared")),), expect="error")]


def bad_fuse_attach_point(live):
    """compute_at an axis, then fuse it with the axis inside it (as the outer operand): no
    loop stands for it alone any more. (Split afterwards, or fused as the inner operand,
    the attach point moves inwards, as TVM's LegalizeInvalidAttach moves it: legal.)"""
    steps = legal.compute_at(live)
    if steps is None:
        return None
    parent_var, a = steps[0].args
    parent = next(st for st, v in live.var.items() if v == parent_var)
    iv = live.idents.get(a.ident)
    if iv is None:
        iv = next((x for x in parent.leaf_iter_vars if x.var.name == a.name), None)
    if iv is None or not live.plain(parent, iv):
        return None
    lv = parent.leaf_iter_vars
    k = lv.index(iv)
    if k + 1 >= len(lv) or not live.plain(parent, lv[k + 1]) or lv[k + 1].kind != iv.kind:
        return None
    b = lv[k + 1]
    return steps + [
        Step(
            "fuse",
            parent_var,
            (a, live.ax(parent, b)),
            (),
            (Ax(parent_var, f"{a.name}.{b.var.name}.fused"),),
            expect="error",
        )
    ]


def bad_layout(live):
    """A mapping that is not a permutation of the axes, or no function at all; or a
    permutation on an argument (refused at lowering)."""
    st = live.choose(live.stages())
    v, n = live.var[st], len(st.op.axis)
    args = [x for x in live.stages() if x in live.arg_stages()]
    kinds = ["repeat", "short", "long", "expr", "not_callable", "arity"] + (
        ["argument"] if args else []
    )
    kind = live.choose(kinds)
    if kind == "argument":
        st = live.choose(args)
        return [
            Step(
                "transform_layout",
                live.var[st],
                (live._layout_lambda(st, lambda x: x[::-1]),),
                expect="error",
            )
        ]
    if kind == "not_callable":
        return [Step("transform_layout", v, (list(range(n))[::-1],), expect="error")]
    if kind == "arity":
        names = [chr(ord("a") + k) for k in range(n + 1)]
        code = f"lambda {', '.join(names)}: [{', '.join(names)}]"
        return [Step("transform_layout", v, (Raw(code),), expect="error")]
    order = {
        "repeat": lambda x: [x[0]] * max(2, len(x)) if len(x) < 2 else [x[0], x[0]] + x[2:],
        "short": lambda x: x[1:],
        "long": lambda x: x + x[:1],
        "expr": lambda x: [f"{x[0]} + 1"] + x[1:],
    }[kind]
    return [Step("transform_layout", v, (live._layout_lambda(st, order),), expect="error")]


def bad_align(live):
    """storage_align with ``offset >= factor``, a factor under 1, or an axis that is not
    one of the stage's own data axes; or a correct one on an argument."""
    st, iv = live.any_leaf(lambda x, y: y in x.op.axis)
    if iv is None:
        return None
    v, a = live.var[st], live.ax(st, iv)
    args = [
        x
        for x in live.stages()
        if x in live.arg_stages() and any(live.usable(x, y) for y in x.op.axis)
    ]
    kinds = ["offset", "factor", "float"]
    if args:
        kinds.append("argument")
    reds = [y for y in st.op.reduce_axis if live.usable(st, y)]
    if reds:
        kinds.append("reduce_axis")
    foreign = [(x, y) for x in live.stages() if x is not st for y in x.op.axis if live.usable(x, y)]
    if foreign:
        kinds.append("foreign")
    kind = live.choose(kinds)
    if kind == "offset":
        f = live.choose((1, 2, 4, 8))
        return [Step("storage_align", v, (a, f, f + live.integer(0, 3)), expect="error")]
    if kind == "factor":
        return [Step("storage_align", v, (a, live.choose((0, -4)), 0), expect="error")]
    if kind == "float":
        return [Step("storage_align", v, (a, 4.0, 1), expect="error")]
    if kind == "reduce_axis":
        return [Step("storage_align", v, (live.ax(st, live.choose(reds)), 4, 1), expect="error")]
    if kind == "foreign":
        x, y = live.choose(foreign)
        return [Step("storage_align", v, (live.ax(x, y), 4, 1), expect="error")]
    st = live.choose(args)
    y = live.choose([y for y in st.op.axis if live.usable(st, y)])
    return [Step("storage_align", live.var[st], (live.ax(st, y), 4, 1), expect="error")]


def bad_double_buffer(live):
    """A scope that is not 'shared', 'local' or 'both'; or a double buffer on a stage that
    is not a work-group tile computed inside a loop (refused at lowering)."""
    not_tiles = [
        st for st in live.stages() if st.attach_type == "root" or st.scope in ("local", "global")
    ]
    if not_tiles and live.choose((False, True)):
        return [
            Step(
                "double_buffer",
                live.var[live.choose(not_tiles)],
                (live.choose(("shared", "local", "both")),),
                expect="error",
            )
        ]
    st = live.choose(live.stages())
    return [
        Step(
            "double_buffer",
            live.var[st],
            (live.choose(("global", "register", "Shared", "")),),
            expect="error",
        )
    ]


def bad_vthread(live):
    """A virtual thread on a reduction axis, or on a stage in private ("local")
    memory whose kernel binds no virtual thread (where it does, the binding is the work-item's
    own part, as documented in docs/tvm_compat.md: legal)."""
    from tensorsched.schedules.bound import bound_tag, kernel_root

    def vthreads(st):
        root = kernel_root(st)
        return any(bound_tag(root, x) == "vthread" for x in root.leaf_iter_vars)

    local = [
        (st, iv)
        for st in live.stages()
        if st.scope == "local" and st.attach_type == "scope" and not vthreads(st)
        for iv in st.leaf_iter_vars
        if iv.kind == "data" and live.plain(st, iv) and live.usable(st, iv)
    ]
    if local and live.choose((False, True)):
        st, iv = live.choose(local)
    else:
        st, iv = live.any_leaf(lambda x, y: y.kind == "reduce")
        if iv is None:
            return None
    return [Step("bind", live.var[st], (live.ax(st, iv), live.vthread_axis()), expect="error")]


def bad_group_sum(live):
    """``group_sum`` at a loop inside the output's innermost block axis (a loop of more than
    one trip or a work-item axis on the way): each work-group would arrive once per
    iteration, or a work-item's code would bind a block index: refused."""
    steps = legal.group_sum(live)
    if steps is None:
        return None
    parent_var, at = steps[1].args
    parent = next(st for st, v in live.var.items() if v == parent_var)
    leaves = parent.leaf_iter_vars
    pos = next(n for n, iv in enumerate(leaves) if live.ax(parent, iv).ident == at.ident)
    ext = live.root_extents(parent)

    def refused(n):  # a loop of more than one trip, or a work-item axis, up to leaf n
        return any(
            ext.get(x, 2) != 1
            or (live.bound(parent, x) and parent.attrs[x].bind.tag.startswith("threadIdx"))
            for x in leaves[pos + 1 : n + 1]
        )

    inner = [
        iv for n, iv in enumerate(leaves) if n > pos and live.usable(parent, iv) and refused(n)
    ]
    if not inner:
        return None
    iv = live.choose(inner)
    return [
        steps[0],
        Step("compute_at", steps[1].stage, (parent_var, live.ax(parent, iv)), expect="error"),
    ]


# the misuses, in the order they are drawn from; each returns steps whose last must raise
MISUSES = {
    "stale_axis": bad_stale_axis,
    "foreign_axis": bad_foreign_axis,
    "factor": bad_factor,
    "fuse": bad_fuse,
    "reorder": bad_reorder,
    "bind_reduce": bad_bind_reduce,
    "bind_twice": bad_bind_twice,
    "tag": bad_tag,
    "annotate_reduce": bad_annotate_reduce,
    "after_bind": bad_after_bind,
    "compute_at": bad_compute_at,
    "inline": bad_inline,
    "cache_write": bad_cache_write,
    "cache_read": bad_cache_read,
    "on_inlined": bad_on_inlined,
    "bind_inner": bad_bind_inner,
    "local_at_root": bad_local_at_root,
    "fuse_attach_point": bad_fuse_attach_point,
    "layout": bad_layout,
    "align": bad_align,
    "double_buffer": bad_double_buffer,
    "vthread": bad_vthread,
    "group_sum": bad_group_sum,
}


def illegal_steps(live):
    """The steps of one misuse, drawn among those that apply (``MISUSES``)."""
    return legal.draw_steps(live, MISUSES)


def random_step(live):
    stages = live.stages() or list(live.s.stages)
    st = live.choose(stages)
    v = live.var[st]
    every = [(x, iv) for x in live.s.stages for iv in x.all_iter_vars if live.usable(x, iv)]
    if not every:
        return None

    def axis():
        x, iv = live.choose(every)
        return live.ax(x, iv)

    prim = live.choose(
        (
            "split",
            "fuse",
            "reorder",
            "unroll",
            "vectorize",
            "parallel",
            "bind",
            "compute_at",
            "compute_inline",
            "compute_root",
            "cache_write",
        )
    )
    if prim == "split":
        n = live.choose((1, 2, 3, 9, 0, -1))
        a = axis()
        return Step(
            "split",
            v,
            (a,),
            ((live.choose(("factor", "nparts")), n),),
            (Ax(v, a.name + ".outer"), Ax(v, a.name + ".inner")),
        )
    if prim == "fuse":
        a, b = axis(), axis()
        return Step("fuse", v, (a, b), (), (Ax(v, f"{a.name}.{b.name}.fused"),))
    if prim == "reorder":
        return Step("reorder", v, tuple(axis() for _ in range(live.integer(1, 4))))
    if prim == "bind":
        tag = live.choose(TAGS_BLOCK[:2] + TAGS_THREAD[:2])
        return Step("bind", v, (axis(), Raw(f"ts.thread_axis({tag!r})")))
    if prim == "compute_at":
        p = live.choose(stages)
        return Step("compute_at", v, (live.var[p], axis()))
    if prim in ("compute_inline", "compute_root"):
        return Step(prim, v)
    if prim == "cache_write":
        scope = live.choose(("local", "global"))
        return Step("cache_write", v, (scope,), (), (live.fresh_var(f"{st.op.name}.{scope}"),))
    return Step(prim, v, (axis(),))
