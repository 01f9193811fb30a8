"""The live schedule a case is drawn on, and the questions the step generators ask it."""

from __future__ import annotations

from tensorsched.schedules.bound import pass_down

from .model import Ax, Raw, Step, ident
from .render import Renderer
from .workloads import HEADERS, PRELUDE

# storage_align on the innermost storage dimension (whose stride is 1) is refused by lowering
# (it once allocated too few elements); legal cases keep off it.
ALIGN_INNERMOST = False


class Live:
    def __init__(self, draw, workload, sizes, mode, duplicate_names=False):
        self.draw, self.workload, self.sizes, self.mode = draw, workload, sizes, mode
        self.duplicate_names = duplicate_names
        self.ns = {}
        exec(PRELUDE + HEADERS[workload](dict(sizes)), self.ns)
        self.s = self.ns["s"]
        self.var = {st: ident(st.op.name) for st in self.s.stages}
        self.renderer = Renderer()
        self.steps = []
        self.dead = False  # a step raised: nothing more is drawn
        self.idents = {}  # identifier -> IterVar it names
        self.vthreads = 0  # virtual thread axes made so far

    def stages(self):
        return [st for st in self.s.stages if st.attach_type != "inline"]

    def ax(self, st, iv):
        op = st.op
        if any(iv is x for x in op.axis):
            origin = ("axis", tuple(x.var.name for x in op.axis))
        elif any(iv is x for x in op.reduce_axis):
            origin = ("reduce_axis", tuple(x.var.name for x in op.reduce_axis))
        else:
            origin = None
        return Ax(self.var[st], iv.var.name, origin)

    def usable(self, st, iv):
        """``iv`` can be named in code: its identifier is free or already names it."""
        a = self.ax(st, iv)
        known = self.idents.get(a.ident)
        if known is not None:
            return known is iv
        return a.origin is not None or a.ident in self.renderer.defined

    def plain(self, st, iv):
        a = st.attrs.get(iv)
        return a is None or (a.kind == "serial" and a.bind is None and not a.pragmas)

    def bound(self, st, iv):
        a = st.attrs.get(iv)
        return a is not None and a.bind is not None

    def pinned(self, st):
        return {
            x.attach_ivar
            for x in self.s.stages
            if x.attach_type == "scope" and x.attach_stage is st
        }

    def has_attached(self, st):
        return any(x.attach_type == "scope" and x.attach_stage is st for x in self.s.stages)

    def arg_stages(self):
        return {self.s.stage_of(t) for t in self.ns["args"]} - {None}

    def readers(self, st):
        """Non-inlined stages that read ``st`` (through inlined stages too)."""
        out, todo, seen = [], list(self.s.readers(st)), set()
        while todo:
            r = todo.pop(0)
            if id(r) in seen:
                continue
            seen.add(id(r))
            if r.attach_type == "inline":
                todo += self.s.readers(r)
            else:
                out.append(r)
        return out

    def root_extents(self, st):
        ext = {iv: iv.dom.extent for iv in list(st.op.axis) + list(st.op.reduce_axis)}
        try:
            return pass_down(st, ext)
        except KeyError:
            return {}

    def fresh_var(self, name):
        base = ident(name)
        taken = set(self.var.values()) | set(self.ns)
        v, n = base, 2
        while v in taken:
            v, n = f"{base}_{n}", n + 1
        return v

    def apply(self, step):
        """Run ``step`` on the live schedule; False when it raised (nothing more is drawn)."""
        self.steps.append(step)
        code = self.renderer.step(step)
        before = set(self.s.stages)
        try:
            exec(code, self.ns)
        except Exception:  # noqa: BLE001
            self.dead = True
            return False
        for st in self.s.stages:
            if st not in before:
                name = next((o for o in step.out if isinstance(o, str)), None)
                self.var[st] = name if name is not None else self.fresh_var(st.op.name)
        for o in step.out:
            if isinstance(o, Ax):
                self.idents[o.ident] = self.ns[o.ident]
        for name in self.renderer.defined:
            if name not in self.idents and name in self.ns:
                self.idents[name] = self.ns[name]
        return True

    def choose(self, seq):
        from hypothesis import strategies as st

        return self.draw(st.sampled_from(list(seq)))

    def integer(self, lo, hi):
        from hypothesis import strategies as st

        return self.draw(st.integers(lo, hi))

    def free_leaves(self, st, kinds=("data", "reduce")):
        pin = self.pinned(st)
        return [
            iv
            for iv in st.leaf_iter_vars
            if self.plain(st, iv) and iv not in pin and iv.kind in kinds and self.usable(st, iv)
        ]

    def vthread_axis(self):
        """A fresh virtual thread axis (``ts.thread_axis("vthread", name="vx")``)."""
        self.vthreads += 1
        n = self.vthreads
        name = ("vx", "vy", "vz")[n - 1] if n <= 3 else f"v{n}"
        return Raw(f'ts.thread_axis("vthread", name="{name}")')

    def attachable(self, st):
        """The one consumer ``st`` can be computed inside, or None."""
        if (
            st.is_output
            or st in self.arg_stages()
            or st.attach_type == "inline"
            or any(self.bound(st, iv) for iv in st.leaf_iter_vars)
        ):
            return None
        readers = self.readers(st)
        return readers[0] if len(readers) == 1 else None

    def places(self, st, parent):
        """The loops of ``parent`` that ``st`` can be computed at: all of them, but a stage in
        work-group memory goes inside a bound loop of a root parent that binds any."""
        leaves = [iv for iv in parent.leaf_iter_vars if self.usable(parent, iv)]
        bound = [n for n, iv in enumerate(parent.leaf_iter_vars) if self.bound(parent, iv)]
        if st.scope == "shared" and parent.attach_type == "root" and bound:
            leaves = [iv for iv in leaves if parent.leaf_iter_vars.index(iv) >= bound[0]]
        return leaves

    def kernel_root(self, st):
        while st.attach_type == "scope":
            st = st.attach_stage
        return st

    def new_name_ok(self, name):
        """A new stage may take ``name`` (two stages of one name only when the case allows)."""
        return self.duplicate_names or all(st.op.name != name for st in self.s.stages)

    def var_of_tensor(self, t):
        st = self.s.stage_of(t)
        if st is not None:
            return self.var[st]
        name = ident(t.name)
        return name if self.ns.get(name) is t else None

    def _layout_lambda(self, st, order):
        names = [chr(ord("a") + n) for n in range(len(st.op.axis))]
        return Raw(f"lambda {', '.join(names)}: [{', '.join(order(names))}]")

    def alignable(self, st, iv):
        """``storage_align`` may pad ``iv`` (see ``ALIGN_INNERMOST``)."""
        inner = (st.layout or tuple(range(len(st.op.axis))))[-1]
        return ALIGN_INNERMOST or st.op.axis.index(iv) != inner

    def any_leaf(self, pred=lambda st, iv: True):
        opts = [
            (st, iv)
            for st in self.stages()
            for iv in st.leaf_iter_vars
            if pred(st, iv) and self.usable(st, iv)
        ]
        return self.choose(opts) if opts else (None, None)

    def _misuse_call(self, st, prim, a, other=None):
        v = self.var[st]
        if prim == "split":
            return Step("split", v, (a,), (("factor", 2),), expect="error")
        if prim == "reorder":
            return Step("reorder", v, (a,), expect="error")
        if prim == "fuse":
            b = other if other is not None else a
            return Step("fuse", v, (a, b), expect="error")
        if prim == "bind":
            return Step("bind", v, (a, Raw("ts.thread_axis('blockIdx.x')")), expect="error")
        return Step(prim, v, (a,), expect="error")
