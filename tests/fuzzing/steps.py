"""The legal moves: one function per primitive (``LEGAL_STEPS``), each drawing its arguments
on the live schedule and returning the steps, or None where it does not apply; and the
moves that finish a case (placing caches, filling and decorating tiles)."""

from __future__ import annotations

import itertools

from .live import ALIGN_INNERMOST
from .model import TAGS_BLOCK, TAGS_THREAD, Ax, Raw, Step
from .workloads import FACTORS


def _perms(tags):
    return list(itertools.permutations(tags))


def split(live):
    opts = [(st, iv) for st in live.stages() for iv in live.free_leaves(st)]
    if not opts:
        return None
    st, iv = live.choose(opts)
    n = live.choose(FACTORS)
    v = live.var[st]
    kw = (("nparts", n),) if live.choose((False, True)) else (("factor", n),)
    tail = live.choose(("guard", "guard", "peel"))  # the last outer step written out
    if tail != "guard":
        kw += (("tail", tail),)
    return [
        Step(
            "split",
            v,
            (live.ax(st, iv),),
            kw,
            (Ax(v, iv.var.name + ".outer"), Ax(v, iv.var.name + ".inner")),
        )
    ]


def tile(live):
    opts = [st for st in live.stages() if len(live.free_leaves(st)) >= 2]
    if not opts:
        return None
    st = live.choose(opts)
    leaves = live.free_leaves(st)
    x = live.choose(leaves)
    y = live.choose([iv for iv in leaves if iv is not x])
    v, xn, yn = live.var[st], x.var.name, y.var.name
    return [
        Step(
            "tile",
            v,
            (live.ax(st, x), live.ax(st, y)),
            (("x_factor", live.choose(FACTORS)), ("y_factor", live.choose(FACTORS))),
            (
                Ax(v, xn + ".outer"),
                Ax(v, yn + ".outer"),
                Ax(v, xn + ".inner"),
                Ax(v, yn + ".inner"),
            ),
        )
    ]


def fuse(live):
    opts = []
    for st in live.stages():
        free = set(live.free_leaves(st))
        lv = st.leaf_iter_vars
        opts += [
            (st, a, b) for a, b in zip(lv, lv[1:]) if a in free and b in free and a.kind == b.kind
        ]
    if not opts:
        return None
    st, a, b = live.choose(opts)
    v = live.var[st]
    return [
        Step(
            "fuse",
            v,
            (live.ax(st, a), live.ax(st, b)),
            (),
            (Ax(v, f"{a.var.name}.{b.var.name}.fused"),),
        )
    ]


def reorder(live):
    def movable(st):
        return [iv for iv in st.leaf_iter_vars if not live.bound(st, iv) and live.usable(st, iv)]

    opts = [st for st in live.stages() if len(movable(st)) >= 2]
    if not opts:
        return None
    from hypothesis import strategies as hst

    st = live.choose(opts)
    leaves = movable(st)
    pick = live.draw(
        hst.lists(
            hst.sampled_from(range(len(leaves))),
            min_size=2,
            max_size=min(4, len(leaves)),
            unique=True,
        )
    )
    return [Step("reorder", live.var[st], tuple(live.ax(st, leaves[i]) for i in pick))]


def _annotate(live, prim, kinds):
    opts = [
        (st, iv)
        for st in live.stages()
        for iv in st.leaf_iter_vars
        if not live.bound(st, iv) and iv.kind in kinds and live.usable(st, iv)
    ]
    if not opts:
        return None
    st, iv = live.choose(opts)
    return [Step(prim, live.var[st], (live.ax(st, iv),))]


def unroll(live):
    return _annotate(live, "unroll", ("data", "reduce"))


def vectorize(live):
    return _annotate(live, "vectorize", ("data",))


def parallel(live):
    return _annotate(live, "parallel", ("data",))


def gpu_start(live):
    """A GPU-style start: tile the first two axes of the output, bind the tiles to blocks
    and the points in them to threads."""
    st = live.s.stage_map[live.s.outputs[0]]
    axes = [iv for iv in st.op.axis if live.usable(st, iv)]
    if len(axes) < 2:
        return bind(live)
    x, y = axes[:2]
    v, xn, yn = live.var[st], x.var.name, y.var.name
    outs = (
        Ax(v, xn + ".outer"),
        Ax(v, yn + ".outer"),
        Ax(v, xn + ".inner"),
        Ax(v, yn + ".inner"),
    )
    tags = ("blockIdx.y", "blockIdx.x", "threadIdx.y", "threadIdx.x")
    steps = [
        Step(
            "tile",
            v,
            (live.ax(st, x), live.ax(st, y)),
            (("x_factor", live.choose(FACTORS)), ("y_factor", live.choose(FACTORS))),
            outs,
        )
    ]
    nv = live.choose((0, 0, 1, 2))
    if nv:
        # virtual threads: the outer part of each of the last nv tile axes, interleaved
        # inside a work-item (the outputs of a work-item spread over the tile)
        vouts, touts = [], list(outs[2:])
        for n in range(2 - nv, 2):
            a = touts[n]
            vo, ti = Ax(v, a.name + ".outer"), Ax(v, a.name + ".inner")
            steps.append(Step("split", v, (a,), (("nparts", live.choose((1, 2, 3))),), (vo, ti)))
            vouts.append(vo)
            touts[n] = ti
        steps.append(Step("reorder", v, (*outs[:2], *vouts, *touts)))
        steps += [Step("bind", v, (vo, live.vthread_axis())) for vo in vouts]
        outs = (*outs[:2], *touts)
    return steps + [
        Step("bind", v, (o, Raw(f"ts.thread_axis({tag!r})"))) for o, tag in zip(outs, tags)
    ]


def bind(live):
    """Bind a prefix of a root stage's loops: blocks outermost, then threads."""

    def prefix(st):
        out = []
        for iv in st.leaf_iter_vars:
            if iv.kind != "data" or not live.plain(st, iv) or not live.usable(st, iv):
                break
            out.append(iv)
        return out

    opts = [
        st
        for st in live.stages()
        if st.attach_type == "root"
        and st.scope in (None, "global")
        and not any(live.bound(st, iv) for iv in st.leaf_iter_vars)
        and prefix(st)
    ]
    if not opts:
        return None
    st = live.choose(opts)
    pre = prefix(st)
    nb = live.integer(0, min(3, len(pre)))
    nt = live.integer(0 if nb else 1, min(3, len(pre) - nb))
    blocks = live.choose(_perms(TAGS_BLOCK))
    threads = live.choose(_perms(TAGS_THREAD))
    tags = list(blocks[:nb]) + list(threads[:nt])
    if len(pre) > len(tags) and live.choose((False, False, True)):
        tags.insert(live.integer(0, len(tags)), "vthread")  # mostly after the blocks
    v = live.var[st]
    return [
        Step(
            "bind",
            v,
            (
                live.ax(st, iv),
                live.vthread_axis() if tag == "vthread" else Raw(f"ts.thread_axis({tag!r})"),
            ),
        )
        for iv, tag in zip(pre, tags)
    ]


def compute_at(live, only=None):
    opts = [st for st in (only or live.stages()) if live.attachable(st) is not None]
    opts = [st for st in opts if live.places(st, live.attachable(st))]
    if not opts:
        return None
    st = live.choose(opts)
    parent = live.attachable(st)
    iv = live.choose(live.places(st, parent))
    return [Step("compute_at", live.var[st], (live.var[parent], live.ax(parent, iv)))]


def coop_fetch(live, only=None, group_part=False):
    """Fill a work-group tile cooperatively: split a ``shared`` stage's axes into as many
    parts as the kernel has work-items along each threadIdx tag and bind them. With
    ``group_part``: the same for a ``global`` stage of ``group_sum`` (its work-group's part of
    the tile), whose only bound axis is its K part on ``blockIdx.z``."""
    opts = []
    for st in only or live.stages():
        spread = [iv for iv in st.leaf_iter_vars if live.bound(st, iv)]
        if (
            st.attach_type != "scope"
            or st.scope != ("global" if group_part else "shared")
            or st.relations
            or (len(spread) != 1 if group_part else st.attrs)
            or live.has_attached(st)
        ):
            continue
        root = live.kernel_root(st)
        ext = live.root_extents(root)
        tags = [
            (st_a.bind.tag, ext.get(iv))
            for iv, st_a in root.attrs.items()
            if st_a.bind is not None and st_a.bind.tag.startswith("threadIdx")
        ]
        axes = [iv for iv in st.op.axis if live.usable(st, iv) and iv not in spread]
        if tags and all(e for _, e in tags) and len(axes) >= len(tags):
            opts.append((st, sorted(tags), axes))
    if not opts:
        return None
    st, tags, axes = live.choose(opts)
    v, steps, outers = live.var[st], [], []
    for (tag, e), iv in zip(tags, axes):
        a = live.ax(st, iv)
        o = Ax(v, iv.var.name + ".outer")
        steps.append(Step("split", v, (a,), (("nparts", e),), (o, Ax(v, iv.var.name + ".inner"))))
        outers.append((o, tag))
    if len(outers) > 1:
        steps.append(Step("reorder", v, tuple(o for o, _ in outers)))
    steps += [Step("bind", v, (o, Raw(f"ts.thread_axis({tag!r})"))) for o, tag in outers]
    return steps


def compute_inline(live):
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
    return [Step("compute_inline", live.var[st])]


def cache_read(live):
    from tensorsched.ir.tensor import tensors_read

    read = {}
    for st in live.stages():
        for t in tensors_read(st.op.body[0]):
            producer = live.s.stage_of(t)
            if live.var_of_tensor(t) is not None and (
                producer is None or producer.attach_type == "root"
            ):
                read.setdefault(t, []).append(st)
    if not read:
        return None
    t = live.choose(list(read))
    readers = read[t]
    if len(readers) > 1 and live.choose((False, True)):
        chosen, scopes = readers, ("global",)
    else:
        chosen = [live.choose(readers)]
        # work-group memory needs a bound loop around it
        gpu = chosen[0].attach_type != "root" or any(
            live.bound(chosen[0], iv) for iv in chosen[0].leaf_iter_vars
        )
        scopes = ("local", "global", "shared") if gpu else ("local", "global")
    scopes = [x for x in scopes if live.new_name_ok(f"{t.name}.{x}")]
    if not scopes:
        return None
    scope = live.choose(scopes)
    out = live.fresh_var(f"{t.name}.{scope}")
    return [
        Step(
            "cache_read",
            live.var_of_tensor(t),
            (scope, [Raw(live.var[r]) for r in chosen]),
            (),
            (out,),
        )
    ]


def cache_write(live):
    opts = [
        st
        for st in live.stages()
        if all(live.plain(st, iv) for iv in st.attrs)  # splits and fuses: laid out by them
        and all(getattr(r, "tail", "guard") == "guard" for r in st.relations)
        and not live.has_attached(st)
        and st.attach_type == "root"
    ]
    if not opts:
        return None
    st = live.choose(opts)
    scopes = [x for x in ("local", "global") if live.new_name_ok(f"{st.op.name}.{x}")]
    if not scopes:
        return None
    scope = live.choose(scopes)
    return [
        Step(
            "cache_write",
            live.var[st],
            (scope,),
            (),
            (live.fresh_var(f"{st.op.name}.{scope}"),),
        )
    ]


def rfactor(live):
    from tensorsched.ir import expr as E

    opts = []
    for st in live.stages():
        body = st.op.body[0]
        reds = [iv for iv in st.leaf_iter_vars if iv.kind == "reduce"]
        if (
            isinstance(body, E.Reduce)
            and body.combiner == "sum"
            and len(reds) >= 2
            and live.new_name_ok(f"{st.op.name}.rf")
            and not live.has_attached(st)
            and st.attach_type == "root"
            and not any(live.bound(st, iv) for iv in st.leaf_iter_vars)
            and all(
                getattr(r, "parent", getattr(r, "outer", None)).kind == "reduce"
                for r in st.relations
            )
        ):
            opts += [(st, iv) for iv in reds if live.usable(st, iv)]
    if not opts:
        return None
    st, iv = live.choose(opts)
    kw = (("factor_axis", live.integer(0, len(st.op.axis))),)
    return [
        Step(
            "rfactor",
            live.var[st],
            (live.ax(st, iv),),
            kw,
            (live.fresh_var(f"{st.op.name}.rf"),),
        )
    ]


def split_k(live):
    """Split-K: split a sum's reduction into parts, ``rfactor`` the outer one into a stage
    of partial sums whose factored axis is bound to ``blockIdx.z`` (the stage itself then
    adds the parts); sometimes its next axis goes to ``threadIdx.x``."""
    from tensorsched.ir import expr as E

    opts = []
    for st in live.stages():
        if (
            isinstance(st.op.body[0], E.Reduce)
            and st.op.body[0].combiner == "sum"
            and st.attach_type == "root"
            and not st.relations
            and not st.attrs
            and not live.has_attached(st)
            and live.new_name_ok(f"{st.op.name}.rf")
        ):
            opts += [(st, iv) for iv in st.op.reduce_axis if live.usable(st, iv)]
    if not opts:
        return None
    st, iv = live.choose(opts)
    v, kn = live.var[st], iv.var.name
    ko, ki = Ax(v, kn + ".outer"), Ax(v, kn + ".inner")
    rf = live.fresh_var(f"{st.op.name}.rf")
    names = (kn + ".outer",) + tuple(x.var.name for x in st.op.axis)
    axes = [Ax(rf, n, ("axis", names)) for n in names]
    if any(a.ident in live.idents or a.ident in live.ns for a in axes):
        return None
    steps = [
        Step("split", v, (live.ax(st, iv),), (("nparts", live.choose((1, 2, 3, 4))),), (ko, ki)),
        Step("rfactor", v, (ko,), (), (rf,)),
        Step("bind", rf, (axes[0], Raw("ts.thread_axis('blockIdx.z')"))),
    ]
    if len(axes) > 1 and live.choose((False, True)):
        steps.append(Step("bind", rf, (axes[1], Raw("ts.thread_axis('threadIdx.x')"))))
    return steps


def group_sum(live):
    """Split-K in one kernel: partial sums whose K part is bound to ``blockIdx.z`` (from
    ``split_k``) moved into global memory at the innermost block axis of their consumer, so
    that each work-group of a tile computes its part into the whole array and the last of
    them to arrive runs the consumer's code (``last_group``)."""
    opts = []
    for st in live.stages():
        if st.attach_type != "root" or st.is_output or live.has_attached(st):
            continue
        tags = [st.attrs[iv].bind.tag for iv in st.leaf_iter_vars if live.bound(st, iv)]
        if "blockIdx.z" not in tags or any(t.startswith("blockIdx.") for t in tags if t[-1] != "z"):
            continue
        readers = live.readers(st)
        if len(readers) != 1 or readers[0].attach_type != "root":
            continue
        parent = readers[0]
        blocks = [
            iv
            for iv in parent.leaf_iter_vars
            if live.bound(parent, iv) and parent.attrs[iv].bind.tag.startswith("blockIdx.")
        ]
        if (
            blocks
            and all(parent.attrs[iv].bind.tag != "blockIdx.z" for iv in blocks)
            and live.usable(parent, blocks[-1])
        ):
            opts.append((st, parent, blocks[-1]))
    if not opts:
        return None
    st, parent, at = live.choose(opts)
    v = live.var[st]
    return [
        Step("set_scope", v, ("global",)),
        Step("compute_at", v, (live.var[parent], live.ax(parent, at))),
    ]


def layout(live):
    """``transform_layout`` (a permutation of the storage order) or ``storage_align``
    (rows padded to ``k*factor + offset``) on a stage that is not an argument."""
    from hypothesis import strategies as hst

    opts = [st for st in live.stages() if st not in live.arg_stages()]
    if not opts:
        return None
    st = live.choose(opts)
    v = live.var[st]
    if live.choose((False, True)):
        perm = live.draw(hst.permutations(range(len(st.op.axis))))
        if perm and perm[-1] in st.align and not ALIGN_INNERMOST:
            return None
        return [
            Step(
                "transform_layout",
                v,
                (live._layout_lambda(st, lambda n: [n[p] for p in perm]),),
            )
        ]
    axes = [iv for iv in st.op.axis if live.usable(st, iv) and live.alignable(st, iv)]
    if not axes:
        return None
    factor = live.choose((1, 2, 3, 4, 5, 8, 16, 32))
    return [
        Step(
            "storage_align",
            v,
            (live.ax(st, live.choose(axes)), factor, live.integer(0, factor - 1)),
        )
    ]


def double_buffer(live):
    """``double_buffer`` a ``"shared"`` cache stage (it is computed inside a loop by the
    end of the case: ``place_caches``)."""
    opts = [
        st
        for st in live.stages()
        if st.scope == "shared" and not st.double_buffered and st not in live.arg_stages()
    ]
    if not opts:
        return None
    return [
        Step(
            "double_buffer",
            live.var[live.choose(opts)],
            (live.choose(("shared", "local", "both")),),
        )
    ]


def k_tiles(live):
    """The classic GPU reduction: split a reduction loop of a stage that binds threads,
    and fill ``"shared"`` tiles of what it reads once per outer step (``cache_read`` +
    ``compute_at``), sometimes double-buffered (``fill_new_tiles`` may then spread the
    fills over the work-items)."""
    from tensorsched.ir.tensor import tensors_read

    opts = []
    for st in live.stages():
        if (
            not st.op.reduce_axis
            or live.has_attached(st)
            or not any(
                live.bound(st, iv) and st.attrs[iv].bind.tag.startswith("threadIdx")
                for iv in st.leaf_iter_vars
            )
        ):
            continue
        reads = [
            t
            for t in tensors_read(st.op.body[0])
            if live.var_of_tensor(t) is not None
            and (live.s.stage_of(t) is None or live.s.stage_of(t).attach_type == "root")
            and live.new_name_ok(f"{t.name}.shared")
        ]
        opts += [(st, iv, reads) for iv in live.free_leaves(st, ("reduce",)) if reads]
    if not opts:
        return None
    st, iv, reads = live.choose(opts)
    v = live.var[st]
    ko, ki = Ax(v, iv.var.name + ".outer"), Ax(v, iv.var.name + ".inner")
    kw = (("factor", live.choose(FACTORS)),)
    if live.choose((False, True)):  # the last K step peeled (after double buffering, if any)
        kw += (("tail", "peel"),)
    steps = [Step("split", v, (live.ax(st, iv),), kw, (ko, ki))]
    taken = set()
    for t in reads:
        tv = live.fresh_var(f"{t.name}.shared")
        while tv in taken:
            tv += "_"
        taken.add(tv)
        steps += [
            Step("cache_read", live.var_of_tensor(t), ("shared", [Raw(v)]), (), (tv,)),
            Step("compute_at", tv, (v, ko)),
        ]
        dbuf = live.choose(("", "shared", "local", "both"))
        if dbuf:
            steps.append(Step("double_buffer", tv, (dbuf,)))
    return steps


# the legal moves, in the order they are drawn from; each returns steps or None
LEGAL_STEPS = {
    "split": split,
    "tile": tile,
    "fuse": fuse,
    "reorder": reorder,
    "unroll": unroll,
    "vectorize": vectorize,
    "bind": bind,
    "compute_at": compute_at,
    "compute_inline": compute_inline,
    "cache_read": cache_read,
    "cache_write": cache_write,
    "rfactor": rfactor,
    "parallel": parallel,
    "coop_fetch": coop_fetch,
    "split_k": split_k,
    "group_sum": group_sum,
    "layout": layout,
    "double_buffer": double_buffer,
    "k_tiles": k_tiles,
}


def draw_steps(live, table):
    """The steps of one entry of ``table`` (name -> step function returning steps, or None
    where it does not apply), drawn among those that apply."""
    names = list(table)
    while names:
        name = live.choose(names)
        steps = table[name](live)
        if steps is not None:
            return steps
        names.remove(name)
    return None


def legal_step(live):
    """The steps of one legal move, drawn among those that apply (``LEGAL_STEPS``)."""
    return draw_steps(live, LEGAL_STEPS)


def fill_new_tiles(live):
    """Most of the time, a ``shared`` stage just placed is filled cooperatively."""
    for st in list(live.s.stages):
        if (
            st.scope == "shared"
            and st.attach_type == "scope"
            and not st.relations
            and not st.attrs
            and live.choose((True, False))
        ):
            for step in coop_fetch(live, only=[st]) or ():
                if not live.apply(step):
                    return


def place_caches(live):
    """Stages in local or shared memory must be computed inside a consumer."""
    for st in list(live.s.stages)[::-1]:
        if live.dead:
            return
        if st.attach_type == "root" and st.scope in ("local", "shared") and not st.is_output:
            steps = compute_at(live, only=[st])
            for step in steps or ():
                if not live.apply(step):
                    return
            fill_new_tiles(live)


def decorate_tiles(live):
    """Now and then, a work-group tile computed inside a loop is double-buffered, stored
    transposed or with padded rows."""
    for st in list(live.s.stages):
        if live.dead or st.scope != "shared" or st.attach_type != "scope":
            continue
        what = live.choose(("", "", "double_buffer", "transform_layout", "storage_align"))
        v = live.var[st]
        if what == "double_buffer" and not st.double_buffered:
            live.apply(Step("double_buffer", v, (live.choose(("shared", "local", "both")),)))
        elif (
            what == "transform_layout"
            and len(st.op.axis) > 1
            and (ALIGN_INNERMOST or 0 not in st.align)
        ):
            live.apply(Step("transform_layout", v, (live._layout_lambda(st, lambda x: x[::-1]),)))
        elif what == "storage_align":
            axes = [iv for iv in st.op.axis if live.usable(st, iv) and live.alignable(st, iv)]
            if axes:
                factor = live.choose((2, 4, 8, 32))
                live.apply(
                    Step(
                        "storage_align",
                        v,
                        (live.ax(st, axes[0]), factor, live.integer(0, factor - 1)),
                    )
                )
