"""A schedule fuzzer: random sequences of schedule primitives over five workloads, checked
against numpy, with every case printable as the Python code that reproduces it.

A case (``Case``) is a workload, its sizes and a list of steps (``Step``): one primitive call
each, whose arguments name axes by stage and axis name (``Ax``). ``to_python(case)`` renders
it as a script of ``ts`` calls; ``run_case`` runs exactly that script, statement by statement
(so the printed code is what ran), then lowers, builds and compares with numpy. The
hypothesis strategy ``cases(...)`` draws cases by applying primitives to a live schedule, so
it knows which loops exist; hypothesis shrinks a failing case to fewer and simpler steps.

Outcomes (``Outcome.status``):

- ``passed``: the schedule lowered and computed numpy's numbers;
- ``rejected``: a drawn "legal" schedule raised a ``TensorschedError`` (the generator cannot
  foresee every lowering rule, e.g. the thread extents of a kernel must agree: a clear error
  is a correct answer);
- ``handled``: an illegal case raised a ``TensorschedError``, as it must.

Anything else is a bug and raises ``FuzzFailure`` with the case's code: an exception that is
not a ``TensorschedError`` (AttributeError, KeyError, InternalError ...), wrong numbers, an
unwritten output element, an out-of-bounds access in the Python backend, or an illegal case
that was accepted.

Workloads: ``gemm``, ``conv2d`` (``conv2d_nchw``), ``conv2d_packed``
(``conv2d_nchw_spatial_pack``), ``softmax`` (max, exp, sum, divide) and ``elementwise`` (a
chain with a broadcast input and reversed reads). Modes: ``legal`` (primitives drawn to be
legal), ``illegal`` (a legal prefix, then one known misuse that must raise) and ``random``
(primitives with arbitrary arguments: each must raise or be legal and right).

The GPU primitives: legal cases bind virtual threads (``ts.thread_axis("vthread", ...)``, in
``gpu_start`` and ``m_bind``), split-K (``split`` + ``rfactor`` bound to ``blockIdx.z``),
``shared`` tiles filled per outer step of a reduction (``m_k_tiles``), ``double_buffer``,
``transform_layout`` and ``storage_align`` on non-argument stages; illegal cases misuse them
(a mapping that is no permutation, ``offset >= factor``, ``double_buffer("global")``, a layout
on an argument or a double buffer on a stage that is no tile in a loop: refused at lowering).
"""

from __future__ import annotations

import re
import traceback
from collections import Counter
from dataclasses import dataclass, field

from tensorsched.errors import CodegenError, TensorschedError
from tensorsched.schedules.bound import pass_down

WORKLOADS = ("gemm", "conv2d", "conv2d_packed", "softmax", "elementwise")
MODES = ("legal", "illegal", "random")
TAGS_BLOCK = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
TAGS_THREAD = ("threadIdx.x", "threadIdx.y", "threadIdx.z")

# every run_case call adds its outcome here (scripts and reports read it)
STATS = Counter()


# ---------------------------------------------------------------------------- case records


def ident(text):
    """A Python identifier for a stage or axis name ('A.shared' -> 'A_shared')."""
    name = re.sub(r"\W", "_", text)
    return name if not name[:1].isdigit() else "_" + name


@dataclass(frozen=True)
class Ax:
    """An axis, named by its stage's variable and its own name. ``origin`` is set for the
    axes of ``s[stage].op.axis`` / ``op.reduce_axis``: ``("axis", names)`` with the names of
    all of them, so the code can unpack them the first time one is used."""

    stage: str
    name: str
    origin: tuple | None = None

    @property
    def ident(self):
        return ident(f"{self.stage}_{self.name}")


@dataclass(frozen=True)
class Raw:
    """A literal argument written as given (``Raw("ts.thread_axis('blockIdx.x')")``)."""

    code: str


@dataclass(frozen=True)
class Step:
    """One primitive call. ``prim`` names it; ``stage`` is the variable of the tensor whose
    stage it schedules (or the tensor a schedule-level primitive takes); ``args``/``kw`` hold
    ``Ax``, ``Raw``, numbers, strings and tuples (lists) of them; ``out`` the axes or the
    tensor variable it returns; ``expect`` is ``"error"`` for a known misuse."""

    prim: str
    stage: str
    args: tuple = ()
    kw: tuple = ()
    out: tuple = ()
    expect: str = ""


@dataclass(frozen=True)
class Case:
    workload: str
    sizes: tuple  # ((name, value), ...)
    steps: tuple
    mode: str = "legal"

    def __repr__(self):  # what hypothesis prints for a failing case
        return "\n" + to_python(self)


@dataclass
class Outcome:
    status: str  # passed / rejected / handled
    step: int | None = None  # index of the step that raised (len(steps): at lowering)
    error: str = ""
    func: object = field(default=None, repr=False)  # the lowered function, when passed


class FuzzFailure(AssertionError):
    """A fuzzed schedule found a bug; the message holds the code that reproduces it."""


# ---------------------------------------------------------------------------- workloads


def _header_gemm(z):
    return f"""\
M, N, K = {z["M"]}, {z["N"]}, {z["K"]}
A = ts.placeholder((M, K), name="A")
B = ts.placeholder((K, N), name="B")
k = ts.reduce_axis((0, K), name="k")
C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
s = ts.create_schedule(C.op)
args = [A, B, C]


def ref(a, b):
    return a @ b
"""


def _conv_shape(z):
    return (
        f"ConvShape(N={z['N']}, CI={z['CI']}, IH={z['IH']}, IW={z['IW']}, CO={z['CO']}, "
        f"KH={z['KH']}, KW={z['KW']}, stride={z['stride']}, pad={z['pad']})"
    )


def _header_conv2d(z):
    return f"""\
from tensorsched.ops.conv2d import ConvShape, conv2d_nchw, stages_by_name
shape = {_conv_shape(z)}
data, kernel, conv2d = conv2d_nchw(shape)
data_pad = stages_by_name(conv2d)["data_pad"]
s = ts.create_schedule(conv2d.op)
args = [data, kernel, conv2d]


def ref(d, w):
    return conv2d_ref(d, w, stride={z["stride"]}, pad={z["pad"]})
"""


def _header_conv2d_packed(z):
    return f"""\
from tensorsched.ops.conv2d import ConvShape, conv2d_nchw_spatial_pack, stages_by_name
shape = {_conv_shape(z)}
data, kernel, output_unpack = conv2d_nchw_spatial_pack(shape, VH={z["VH"]}, VW={z["VW"]}, \
VC={z["VC"]})
stages = stages_by_name(output_unpack)
data_pad, data_vec, kernel_vec, conv = (stages[n] for n in ("data_pad", "data_vec", \
"kernel_vec", "conv"))
s = ts.create_schedule(output_unpack.op)
args = [data, kernel, output_unpack]


def ref(d, w):
    return conv2d_ref(d, w, stride={z["stride"]}, pad={z["pad"]})
"""


def _header_softmax(z):
    return f"""\
M, N = {z["M"]}, {z["N"]}
A = ts.placeholder((M, N), name="A")
k = ts.reduce_axis((0, N), name="k")
mx = ts.compute((M,), lambda i: ts.max(A[i, k], axis=k), name="mx")
ex = ts.compute((M, N), lambda i, j: ts.exp(A[i, j] - mx[i]), name="ex")
k2 = ts.reduce_axis((0, N), name="k2")
sm = ts.compute((M,), lambda i: ts.sum(ex[i, k2], axis=k2), name="sm")
out = ts.compute((M, N), lambda i, j: ex[i, j] / sm[i], name="out")
s = ts.create_schedule(out.op)
args = [A, out]


def ref(a):
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
"""


def _header_elementwise(z):
    return f"""\
M, N = {z["M"]}, {z["N"]}
A = ts.placeholder((M, N), name="A")
Bv = ts.placeholder((N,), name="Bv")
T1 = ts.compute((M, N), lambda i, j: A[i, j] * 2.0 + Bv[j], name="T1")
T2 = ts.compute((M, N), lambda i, j: ts.sigmoid(T1[i, j]) - 0.5, name="T2")
out = ts.compute((M, N), lambda i, j: T2[i, j] * T1[M - 1 - i, j] + T2[i, N - 1 - j], name="out")
s = ts.create_schedule(out.op)
args = [A, Bv, out]


def ref(a, b):
    t1 = 2 * a + b
    t2 = 1 / (1 + np.exp(-t1)) - 0.5
    return t2 * t1[::-1, :] + t2[:, ::-1]
"""


HEADERS = {
    "gemm": _header_gemm,
    "conv2d": _header_conv2d,
    "conv2d_packed": _header_conv2d_packed,
    "softmax": _header_softmax,
    "elementwise": _header_elementwise,
}

PRELUDE = (
    "import numpy as np\n\nimport tensorsched as ts\nfrom tensorsched.ops.conv2d import "
    "conv2d_ref\nfrom tensorsched.runtime.numerics import check_numerics\n"
)


# ---------------------------------------------------------------------------- rendering


def _arg(v):
    if isinstance(v, Ax):
        return v.ident
    if isinstance(v, Raw):
        return v.code
    if isinstance(v, list):
        return "[" + ", ".join(_arg(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(_arg(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def _axes_in(v):
    if isinstance(v, Ax):
        yield v
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _axes_in(x)


class Renderer:
    """Turns steps into code, unpacking ``s[X].op.axis`` the first time one of them is used."""

    def __init__(self):
        self.defined = set()

    def step(self, step):
        lines = []
        for a in _axes_in((step.args, tuple(v for _, v in step.kw))):
            if a.ident not in self.defined and a.origin is not None:
                kind, names = a.origin
                targets = [Ax(a.stage, n).ident for n in names]
                lhs = ", ".join(targets) + ("," if len(targets) == 1 else "")
                lines.append(f"{lhs} = s[{a.stage}].op.{kind}")
                self.defined.update(targets)
        call = ", ".join([_arg(x) for x in step.args] + [f"{k}={_arg(v)}" for k, v in step.kw])
        target = f"s[{step.stage}]"
        if step.prim in ("cache_read", "cache_write", "rfactor"):
            expr = f"s.{step.prim}({step.stage}{', ' if call else ''}{call})"
        elif step.prim == "compute_at":
            parent, rest = step.args[0], step.args[1:]
            parent = parent.code if isinstance(parent, Raw) else f"s[{parent}]"
            expr = f"{target}.compute_at({parent}, {', '.join(_arg(x) for x in rest)})"
        else:
            expr = f"{target}.{step.prim}({call})"
        if step.out:
            outs = [o.ident if isinstance(o, Ax) else o for o in step.out]
            self.defined.update(outs)
            lhs = ", ".join(outs) + (
                "," if len(outs) == 1 and step.prim in ("split", "tile") else ""
            )
            expr = f"{lhs} = {expr}"
        if step.expect == "error":
            expr += "  # misuse: must raise a ts.TensorschedError"
        return "\n".join(lines + [expr]) + "\n"


def header(case):
    return HEADERS[case.workload](dict(case.sizes))


def to_python(case, target="python"):
    """The case as a runnable script of ``ts`` calls."""
    r = Renderer()
    body = "".join(r.step(st) for st in case.steps)
    tail = (
        'func = ts.lower(s, args, name="fuzzed")  # must raise a ts.TensorschedError '
        "(if no step above did)\n"
        if case.mode == "illegal"
        else f'func = ts.lower(s, args, name="fuzzed")\ncheck_numerics(func, args, ref, '
        f"target={target!r})\n"
    )
    return (
        f"# tensorsched fuzz case: workload {case.workload}, mode {case.mode}\n"
        + PRELUDE
        + header(case)
        + "\n"
        + body
        + tail
    )


# ---------------------------------------------------------------------------- running


def _fail(case, what, target, exc=None):
    tb = "".join(traceback.format_exception(exc)) if exc is not None else ""
    raise FuzzFailure(
        f"{what}\n\n--- reproduce with ---\n{to_python(case, target)}"
        + (f"--- traceback ---\n{tb}" if tb else "")
    ) from exc


def _is_user_error(exc):
    return isinstance(exc, TensorschedError) and not isinstance(exc, AssertionError)


def run_case(case, target="python", seed=0, stats=None):
    """Run ``case`` as ``to_python`` prints it; return an ``Outcome`` or raise
    ``FuzzFailure``. ``target``: ``"python"`` (exact, bounds-checked), ``"opencl"`` (the
    default device), or ``"oclgrind"`` (the OpenCL kernels under Oclgrind with its race,
    bounds and uninitialised-value checks). The outcome is counted in ``stats`` (default:
    the module's ``STATS``)."""
    stats = STATS if stats is None else stats
    import numpy as np

    import tensorsched as ts
    from tensorsched.runtime.numerics import check_numerics, compare, make_arrays

    ns = {}
    exec(compile(PRELUDE + header(case), f"<fuzz {case.workload}>", "exec"), ns)
    r = Renderer()
    first_bad = next((n for n, st in enumerate(case.steps) if st.expect == "error"), None)

    def status(n):
        return "handled" if first_bad is not None and n >= first_bad else "rejected"

    for n, step in enumerate(case.steps):
        code = r.step(step)
        try:
            exec(compile(code, f"<fuzz step {n}>", "exec"), ns)
        except Exception as exc:  # noqa: BLE001
            if not _is_user_error(exc):
                _fail(
                    case,
                    f"step {n} raised {type(exc).__name__} (not a TensorschedError): {exc}",
                    target,
                    exc,
                )
            return _count(stats, case, Outcome(status(n), n, f"{type(exc).__name__}: {exc}"))
    try:
        func = ts.lower(ns["s"], ns["args"], name="fuzzed")
    except Exception as exc:  # noqa: BLE001
        if not _is_user_error(exc):
            _fail(
                case,
                f"ts.lower raised {type(exc).__name__} (not a TensorschedError): {exc}",
                target,
                exc,
            )
        return _count(
            stats,
            case,
            Outcome(status(len(case.steps)), len(case.steps), f"{type(exc).__name__}: {exc}"),
        )
    if first_bad is not None:
        _fail(
            case,
            f"an illegal schedule was accepted: step "
            f"{[i for i, st in enumerate(case.steps) if st.expect == 'error']} should have "
            "raised a TensorschedError, and lowering did not either",
            target,
        )
    try:
        if target == "oclgrind":
            from tensorsched.runtime.oclgrind import run_checked

            arrays, ins, outs = make_arrays(ns["args"], seed)
            run_checked(func, arrays)
            expected = ns["ref"](*[a.astype(np.float64) for a in ins])
            expected = expected if isinstance(expected, tuple) else (expected,)
            for (t, a), e in zip(outs, expected):
                compare(a, e, t.dtype, name=t.name)
        else:
            check_numerics(func, ns["args"], ns["ref"], target=target, seed=seed)
    except CodegenError as exc:
        # the target cannot express this legal schedule: reported, not a wrong answer
        return _count(stats, case, Outcome("rejected", len(case.steps), f"CodegenError: {exc}"))
    except Exception as exc:  # noqa: BLE001
        _fail(
            case,
            f"the lowered schedule failed on target {target!r}: {type(exc).__name__}: {exc}",
            target,
            exc,
        )
    return _count(stats, case, Outcome("passed", None, "", func))


def _count(stats, case, outcome):
    stats[f"{case.mode}:{outcome.status}"] += 1
    return outcome


def summary_lines(stats):
    """The counts of ``stats`` in words (failures raise, so every counted case passed)."""
    g = stats.get
    out = []
    n = g("legal:passed", 0) + g("legal:rejected", 0)
    if n:
        out.append(
            f"legal schedules fuzzed: {n}; lowered and matched numpy: "
            f"{g('legal:passed', 0)}; refused with a TensorschedError: "
            f"{g('legal:rejected', 0)}"
        )
    n = g("illegal:handled", 0) + g("illegal:rejected", 0) + g("illegal:passed", 0)
    if n:
        out.append(
            f"illegal sequences tried: {n}; raised a TensorschedError: "
            f"{g('illegal:handled', 0)}"
            + (
                f" (+{g('illegal:rejected', 0) + g('illegal:passed', 0)} whose legal "
                "prefix already stopped or that found no misuse to add)"
                if g("illegal:rejected", 0) + g("illegal:passed", 0)
                else ""
            )
        )
    n = g("random:passed", 0) + g("random:rejected", 0)
    if n:
        out.append(
            f"random primitive sequences: {n}; raised a TensorschedError: "
            f"{g('random:rejected', 0)}; lowered and matched numpy: "
            f"{g('random:passed', 0)}"
        )
    return out


# ---------------------------------------------------------------------------- generation

# storage_align on the innermost storage dimension (whose stride is 1) is refused by lowering
# (it once allocated too few elements); legal cases keep off it.
ALIGN_INNERMOST = False

SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13)
PRIMES = (2, 3, 5, 7, 11, 13)
FACTORS = (1, 2, 3, 4, 5, 7, 8)


def _draw_sizes(draw, workload, small):
    from hypothesis import strategies as st

    dim = st.sampled_from(SIZES[:8] if small else SIZES) | st.sampled_from(PRIMES)
    if workload == "gemm":
        z = dict(M=draw(dim), N=draw(dim), K=draw(dim))
    elif workload in ("softmax", "elementwise"):
        z = dict(M=draw(dim), N=draw(dim))
    else:
        KH, KW = draw(st.sampled_from((1, 2, 3))), draw(st.sampled_from((1, 2, 3)))
        pad = draw(st.sampled_from((0, 1)))
        z = dict(
            N=draw(st.sampled_from((1, 2))),
            CI=draw(st.sampled_from((1, 2, 3))),
            IH=draw(st.integers(max(1, KH - 2 * pad), 7)),
            IW=draw(st.integers(max(1, KW - 2 * pad), 7)),
            CO=draw(st.sampled_from((1, 2, 3, 5))),
            KH=KH,
            KW=KW,
            stride=draw(st.sampled_from((1, 2))),
            pad=pad,
        )
        if workload == "conv2d_packed":
            z.update(
                VH=draw(st.sampled_from((1, 2))),
                VW=draw(st.sampled_from((1, 2, 3, 4))),
                VC=draw(st.sampled_from((1, 2, 4))),
            )
    return tuple(z.items())


class _Live:
    """The schedule a case is drawn on: the header and each drawn step are executed as they
    are drawn, so the generator always knows the current loops."""

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

    # ---- the live state

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

    # ---- applying a step

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

    # ---- legal moves: each returns a list of steps, or None when it does not apply

    def free_leaves(self, st, kinds=("data", "reduce")):
        pin = self.pinned(st)
        return [
            iv
            for iv in st.leaf_iter_vars
            if self.plain(st, iv) and iv not in pin and iv.kind in kinds and self.usable(st, iv)
        ]

    def m_split(self):
        opts = [(st, iv) for st in self.stages() for iv in self.free_leaves(st)]
        if not opts:
            return None
        st, iv = self.choose(opts)
        n = self.choose(FACTORS)
        v = self.var[st]
        kw = (("nparts", n),) if self.choose((False, True)) else (("factor", n),)
        return [
            Step(
                "split",
                v,
                (self.ax(st, iv),),
                kw,
                (Ax(v, iv.var.name + ".outer"), Ax(v, iv.var.name + ".inner")),
            )
        ]

    def m_tile(self):
        opts = [st for st in self.stages() if len(self.free_leaves(st)) >= 2]
        if not opts:
            return None
        st = self.choose(opts)
        leaves = self.free_leaves(st)
        x = self.choose(leaves)
        y = self.choose([iv for iv in leaves if iv is not x])
        v, xn, yn = self.var[st], x.var.name, y.var.name
        return [
            Step(
                "tile",
                v,
                (self.ax(st, x), self.ax(st, y)),
                (("x_factor", self.choose(FACTORS)), ("y_factor", self.choose(FACTORS))),
                (
                    Ax(v, xn + ".outer"),
                    Ax(v, yn + ".outer"),
                    Ax(v, xn + ".inner"),
                    Ax(v, yn + ".inner"),
                ),
            )
        ]

    def m_fuse(self):
        opts = []
        for st in self.stages():
            free = set(self.free_leaves(st))
            lv = st.leaf_iter_vars
            opts += [
                (st, a, b)
                for a, b in zip(lv, lv[1:])
                if a in free and b in free and a.kind == b.kind
            ]
        if not opts:
            return None
        st, a, b = self.choose(opts)
        v = self.var[st]
        return [
            Step(
                "fuse",
                v,
                (self.ax(st, a), self.ax(st, b)),
                (),
                (Ax(v, f"{a.var.name}.{b.var.name}.fused"),),
            )
        ]

    def m_reorder(self):
        def movable(st):
            return [
                iv for iv in st.leaf_iter_vars if not self.bound(st, iv) and self.usable(st, iv)
            ]

        opts = [st for st in self.stages() if len(movable(st)) >= 2]
        if not opts:
            return None
        from hypothesis import strategies as hst

        st = self.choose(opts)
        leaves = movable(st)
        pick = self.draw(
            hst.lists(
                hst.sampled_from(range(len(leaves))),
                min_size=2,
                max_size=min(4, len(leaves)),
                unique=True,
            )
        )
        return [Step("reorder", self.var[st], tuple(self.ax(st, leaves[i]) for i in pick))]

    def _annotate(self, prim, kinds):
        opts = [
            (st, iv)
            for st in self.stages()
            for iv in st.leaf_iter_vars
            if not self.bound(st, iv) and iv.kind in kinds and self.usable(st, iv)
        ]
        if not opts:
            return None
        st, iv = self.choose(opts)
        return [Step(prim, self.var[st], (self.ax(st, iv),))]

    def m_unroll(self):
        return self._annotate("unroll", ("data", "reduce"))

    def m_vectorize(self):
        return self._annotate("vectorize", ("data",))

    def m_parallel(self):
        return self._annotate("parallel", ("data",))

    def gpu_start(self):
        """A GPU-style start: tile the first two axes of the output, bind the tiles to blocks
        and the points in them to threads."""
        st = self.s.stage_map[self.s.outputs[0]]
        axes = [iv for iv in st.op.axis if self.usable(st, iv)]
        if len(axes) < 2:
            return self.m_bind()
        x, y = axes[:2]
        v, xn, yn = self.var[st], x.var.name, y.var.name
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
                (self.ax(st, x), self.ax(st, y)),
                (("x_factor", self.choose(FACTORS)), ("y_factor", self.choose(FACTORS))),
                outs,
            )
        ]
        nv = self.choose((0, 0, 1, 2))
        if nv:
            # virtual threads: the outer part of each of the last nv tile axes, interleaved
            # inside a work-item (the outputs of a work-item spread over the tile)
            vouts, touts = [], list(outs[2:])
            for n in range(2 - nv, 2):
                a = touts[n]
                vo, ti = Ax(v, a.name + ".outer"), Ax(v, a.name + ".inner")
                steps.append(
                    Step("split", v, (a,), (("nparts", self.choose((1, 2, 3))),), (vo, ti))
                )
                vouts.append(vo)
                touts[n] = ti
            steps.append(Step("reorder", v, (*outs[:2], *vouts, *touts)))
            steps += [Step("bind", v, (vo, self.vthread_axis())) for vo in vouts]
            outs = (*outs[:2], *touts)
        return steps + [
            Step("bind", v, (o, Raw(f"ts.thread_axis({tag!r})"))) for o, tag in zip(outs, tags)
        ]

    def vthread_axis(self):
        """A fresh virtual thread axis (``ts.thread_axis("vthread", name="vx")``)."""
        n = self.vthreads = getattr(self, "vthreads", 0) + 1
        name = ("vx", "vy", "vz")[n - 1] if n <= 3 else f"v{n}"
        return Raw(f'ts.thread_axis("vthread", name="{name}")')

    def m_bind(self):
        """Bind a prefix of a root stage's loops: blocks outermost, then threads."""

        def prefix(st):
            out = []
            for iv in st.leaf_iter_vars:
                if iv.kind != "data" or not self.plain(st, iv) or not self.usable(st, iv):
                    break
                out.append(iv)
            return out

        opts = [
            st
            for st in self.stages()
            if st.attach_type == "root"
            and st.scope in (None, "global")
            and not any(self.bound(st, iv) for iv in st.leaf_iter_vars)
            and prefix(st)
        ]
        if not opts:
            return None
        st = self.choose(opts)
        pre = prefix(st)
        nb = self.integer(0, min(3, len(pre)))
        nt = self.integer(0 if nb else 1, min(3, len(pre) - nb))
        blocks = self.choose(_perms(TAGS_BLOCK))
        threads = self.choose(_perms(TAGS_THREAD))
        tags = list(blocks[:nb]) + list(threads[:nt])
        if len(pre) > len(tags) and self.choose((False, False, True)):
            tags.insert(self.integer(0, len(tags)), "vthread")  # mostly after the blocks
        v = self.var[st]
        return [
            Step(
                "bind",
                v,
                (
                    self.ax(st, iv),
                    self.vthread_axis() if tag == "vthread" else Raw(f"ts.thread_axis({tag!r})"),
                ),
            )
            for iv, tag in zip(pre, tags)
        ]

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

    def m_compute_at(self, only=None):
        opts = [st for st in (only or self.stages()) if self.attachable(st) is not None]
        opts = [st for st in opts if self.places(st, self.attachable(st))]
        if not opts:
            return None
        st = self.choose(opts)
        parent = self.attachable(st)
        iv = self.choose(self.places(st, parent))
        return [Step("compute_at", self.var[st], (self.var[parent], self.ax(parent, iv)))]

    def kernel_root(self, st):
        while st.attach_type == "scope":
            st = st.attach_stage
        return st

    def m_coop_fetch(self, only=None):
        """Fill a work-group tile cooperatively: split a ``shared`` stage's axes into as many
        parts as the kernel has work-items along each threadIdx tag and bind them."""
        opts = []
        for st in only or self.stages():
            if (
                st.attach_type != "scope"
                or st.scope != "shared"
                or st.relations
                or st.attrs
                or self.has_attached(st)
            ):
                continue
            root = self.kernel_root(st)
            ext = self.root_extents(root)
            tags = [
                (st_a.bind.tag, ext.get(iv))
                for iv, st_a in root.attrs.items()
                if st_a.bind is not None and st_a.bind.tag.startswith("threadIdx")
            ]
            axes = [iv for iv in st.op.axis if self.usable(st, iv)]
            if tags and all(e for _, e in tags) and len(axes) >= len(tags):
                opts.append((st, sorted(tags), axes))
        if not opts:
            return None
        st, tags, axes = self.choose(opts)
        v, steps, outers = self.var[st], [], []
        for (tag, e), iv in zip(tags, axes):
            a = self.ax(st, iv)
            o = Ax(v, iv.var.name + ".outer")
            steps.append(
                Step("split", v, (a,), (("nparts", e),), (o, Ax(v, iv.var.name + ".inner")))
            )
            outers.append((o, tag))
        if len(outers) > 1:
            steps.append(Step("reorder", v, tuple(o for o, _ in outers)))
        steps += [Step("bind", v, (o, Raw(f"ts.thread_axis({tag!r})"))) for o, tag in outers]
        return steps

    def m_compute_inline(self):
        opts = [
            st
            for st in self.stages()
            if not st.is_output
            and not st.op.reduce_axis
            and st not in self.arg_stages()
            and not self.has_attached(st)
        ]
        if not opts:
            return None
        st = self.choose(opts)
        return [Step("compute_inline", self.var[st])]

    def m_cache_read(self):
        from tensorsched.ir.tensor import tensors_read

        read = {}
        for st in self.stages():
            for t in tensors_read(st.op.body):
                producer = self.s.stage_of(t)
                if self.var_of_tensor(t) is not None and (
                    producer is None or producer.attach_type == "root"
                ):
                    read.setdefault(t, []).append(st)
        if not read:
            return None
        t = self.choose(list(read))
        readers = read[t]
        if len(readers) > 1 and self.choose((False, True)):
            chosen, scopes = readers, ("global",)
        else:
            chosen = [self.choose(readers)]
            # work-group memory needs a bound loop around it
            gpu = chosen[0].attach_type != "root" or any(
                self.bound(chosen[0], iv) for iv in chosen[0].leaf_iter_vars
            )
            scopes = ("local", "global", "shared") if gpu else ("local", "global")
        scopes = [x for x in scopes if self.new_name_ok(f"{t.name}.{x}")]
        if not scopes:
            return None
        scope = self.choose(scopes)
        out = self.fresh_var(f"{t.name}.{scope}")
        return [
            Step(
                "cache_read",
                self.var_of_tensor(t),
                (scope, [Raw(self.var[r]) for r in chosen]),
                (),
                (out,),
            )
        ]

    def new_name_ok(self, name):
        """A new stage may take ``name`` (two stages of one name only when the case allows)."""
        return self.duplicate_names or all(st.op.name != name for st in self.s.stages)

    def var_of_tensor(self, t):
        st = self.s.stage_of(t)
        if st is not None:
            return self.var[st]
        name = ident(t.name)
        return name if self.ns.get(name) is t else None

    def m_cache_write(self):
        opts = [
            st
            for st in self.stages()
            if not st.relations
            and not st.attrs
            and not self.has_attached(st)
            and st.attach_type == "root"
        ]
        if not opts:
            return None
        st = self.choose(opts)
        scopes = [x for x in ("local", "global") if self.new_name_ok(f"{st.op.name}.{x}")]
        if not scopes:
            return None
        scope = self.choose(scopes)
        return [
            Step(
                "cache_write",
                self.var[st],
                (scope,),
                (),
                (self.fresh_var(f"{st.op.name}.{scope}"),),
            )
        ]

    def m_rfactor(self):
        from tensorsched.ir import expr as E

        opts = []
        for st in self.stages():
            body = st.op.body
            reds = [iv for iv in st.leaf_iter_vars if iv.kind == "reduce"]
            if (
                isinstance(body, E.Reduce)
                and body.combiner == "sum"
                and len(reds) >= 2
                and self.new_name_ok(f"{st.op.name}.rf")
                and not self.has_attached(st)
                and st.attach_type == "root"
                and not any(self.bound(st, iv) for iv in st.leaf_iter_vars)
                and all(
                    getattr(r, "parent", getattr(r, "outer", None)).kind == "reduce"
                    for r in st.relations
                )
            ):
                opts += [(st, iv) for iv in reds if self.usable(st, iv)]
        if not opts:
            return None
        st, iv = self.choose(opts)
        kw = (("factor_axis", self.integer(0, len(st.op.axis))),)
        return [
            Step(
                "rfactor",
                self.var[st],
                (self.ax(st, iv),),
                kw,
                (self.fresh_var(f"{st.op.name}.rf"),),
            )
        ]

    def m_split_k(self):
        """Split-K: split a sum's reduction into parts, ``rfactor`` the outer one into a stage
        of partial sums whose factored axis is bound to ``blockIdx.z`` (the stage itself then
        adds the parts); sometimes its next axis goes to ``threadIdx.x``."""
        from tensorsched.ir import expr as E

        opts = []
        for st in self.stages():
            if (
                isinstance(st.op.body, E.Reduce)
                and st.op.body.combiner == "sum"
                and st.attach_type == "root"
                and not st.relations
                and not st.attrs
                and not self.has_attached(st)
                and self.new_name_ok(f"{st.op.name}.rf")
            ):
                opts += [(st, iv) for iv in st.op.reduce_axis if self.usable(st, iv)]
        if not opts:
            return None
        st, iv = self.choose(opts)
        v, kn = self.var[st], iv.var.name
        ko, ki = Ax(v, kn + ".outer"), Ax(v, kn + ".inner")
        rf = self.fresh_var(f"{st.op.name}.rf")
        names = (kn + ".outer",) + tuple(x.var.name for x in st.op.axis)
        axes = [Ax(rf, n, ("axis", names)) for n in names]
        if any(a.ident in self.idents or a.ident in self.ns for a in axes):
            return None
        steps = [
            Step(
                "split", v, (self.ax(st, iv),), (("nparts", self.choose((1, 2, 3, 4))),), (ko, ki)
            ),
            Step("rfactor", v, (ko,), (), (rf,)),
            Step("bind", rf, (axes[0], Raw("ts.thread_axis('blockIdx.z')"))),
        ]
        if len(axes) > 1 and self.choose((False, True)):
            steps.append(Step("bind", rf, (axes[1], Raw("ts.thread_axis('threadIdx.x')"))))
        return steps

    def _layout_lambda(self, st, order):
        names = [chr(ord("a") + n) for n in range(len(st.op.axis))]
        return Raw(f"lambda {', '.join(names)}: [{', '.join(order(names))}]")

    def m_layout(self):
        """``transform_layout`` (a permutation of the storage order) or ``storage_align``
        (rows padded to ``k*factor + offset``) on a stage that is not an argument."""
        from hypothesis import strategies as hst

        opts = [st for st in self.stages() if st not in self.arg_stages()]
        if not opts:
            return None
        st = self.choose(opts)
        v = self.var[st]
        if self.choose((False, True)):
            perm = self.draw(hst.permutations(range(len(st.op.axis))))
            if perm and perm[-1] in st.align and not ALIGN_INNERMOST:
                return None
            return [
                Step(
                    "transform_layout",
                    v,
                    (self._layout_lambda(st, lambda n: [n[p] for p in perm]),),
                )
            ]
        axes = [iv for iv in st.op.axis if self.usable(st, iv) and self.alignable(st, iv)]
        if not axes:
            return None
        factor = self.choose((1, 2, 3, 4, 5, 8, 16, 32))
        return [
            Step(
                "storage_align",
                v,
                (self.ax(st, self.choose(axes)), factor, self.integer(0, factor - 1)),
            )
        ]

    def alignable(self, st, iv):
        """``storage_align`` may pad ``iv`` (see ``ALIGN_INNERMOST``)."""
        inner = (st.layout or tuple(range(len(st.op.axis))))[-1]
        return ALIGN_INNERMOST or st.op.axis.index(iv) != inner

    def m_double_buffer(self):
        """``double_buffer`` a ``"shared"`` cache stage (it is computed inside a loop by the
        end of the case: ``place_caches``)."""
        opts = [
            st
            for st in self.stages()
            if st.scope == "shared" and not st.double_buffered and st not in self.arg_stages()
        ]
        if not opts:
            return None
        return [
            Step(
                "double_buffer",
                self.var[self.choose(opts)],
                (self.choose(("shared", "local", "both")),),
            )
        ]

    def m_k_tiles(self):
        """The classic GPU reduction: split a reduction loop of a stage that binds threads,
        and fill ``"shared"`` tiles of what it reads once per outer step (``cache_read`` +
        ``compute_at``), sometimes double-buffered (``fill_new_tiles`` may then spread the
        fills over the work-items)."""
        from tensorsched.ir.tensor import tensors_read

        opts = []
        for st in self.stages():
            if (
                not st.op.reduce_axis
                or self.has_attached(st)
                or not any(
                    self.bound(st, iv) and st.attrs[iv].bind.tag.startswith("threadIdx")
                    for iv in st.leaf_iter_vars
                )
            ):
                continue
            reads = [
                t
                for t in tensors_read(st.op.body)
                if self.var_of_tensor(t) is not None
                and (self.s.stage_of(t) is None or self.s.stage_of(t).attach_type == "root")
                and self.new_name_ok(f"{t.name}.shared")
            ]
            opts += [(st, iv, reads) for iv in self.free_leaves(st, ("reduce",)) if reads]
        if not opts:
            return None
        st, iv, reads = self.choose(opts)
        v = self.var[st]
        ko, ki = Ax(v, iv.var.name + ".outer"), Ax(v, iv.var.name + ".inner")
        steps = [
            Step("split", v, (self.ax(st, iv),), (("factor", self.choose(FACTORS)),), (ko, ki))
        ]
        taken = set()
        for t in reads:
            tv = self.fresh_var(f"{t.name}.shared")
            while tv in taken:
                tv += "_"
            taken.add(tv)
            steps += [
                Step("cache_read", self.var_of_tensor(t), ("shared", [Raw(v)]), (), (tv,)),
                Step("compute_at", tv, (v, ko)),
            ]
            dbuf = self.choose(("", "shared", "local", "both"))
            if dbuf:
                steps.append(Step("double_buffer", tv, (dbuf,)))
        return steps

    LEGAL = (
        "split",
        "tile",
        "fuse",
        "reorder",
        "unroll",
        "vectorize",
        "bind",
        "compute_at",
        "compute_inline",
        "cache_read",
        "cache_write",
        "rfactor",
        "parallel",
        "coop_fetch",
        "split_k",
        "layout",
        "double_buffer",
        "k_tiles",
    )

    def legal_step(self):
        names = list(self.LEGAL)
        while names:
            name = self.choose(names)
            steps = getattr(self, "m_" + name)()
            if steps is not None:
                return steps
            names.remove(name)
        return None

    def fill_new_tiles(self):
        """Most of the time, a ``shared`` stage just placed is filled cooperatively."""
        for st in list(self.s.stages):
            if (
                st.scope == "shared"
                and st.attach_type == "scope"
                and not st.relations
                and not st.attrs
                and self.choose((True, False))
            ):
                for step in self.m_coop_fetch(only=[st]) or ():
                    if not self.apply(step):
                        return

    def place_caches(self):
        """Stages in local or shared memory must be computed inside a consumer."""
        for st in list(self.s.stages)[::-1]:
            if self.dead:
                return
            if st.attach_type == "root" and st.scope in ("local", "shared") and not st.is_output:
                steps = self.m_compute_at(only=[st])
                for step in steps or ():
                    if not self.apply(step):
                        return
                self.fill_new_tiles()

    def decorate_tiles(self):
        """Now and then, a work-group tile computed inside a loop is double-buffered, stored
        transposed or with padded rows."""
        for st in list(self.s.stages):
            if self.dead or st.scope != "shared" or st.attach_type != "scope":
                continue
            what = self.choose(("", "", "double_buffer", "transform_layout", "storage_align"))
            v = self.var[st]
            if what == "double_buffer" and not st.double_buffered:
                self.apply(Step("double_buffer", v, (self.choose(("shared", "local", "both")),)))
            elif (
                what == "transform_layout"
                and len(st.op.axis) > 1
                and (ALIGN_INNERMOST or 0 not in st.align)
            ):
                self.apply(
                    Step("transform_layout", v, (self._layout_lambda(st, lambda x: x[::-1]),))
                )
            elif what == "storage_align":
                axes = [iv for iv in st.op.axis if self.usable(st, iv) and self.alignable(st, iv)]
                if axes:
                    factor = self.choose((2, 4, 8, 32))
                    self.apply(
                        Step(
                            "storage_align",
                            v,
                            (self.ax(st, axes[0]), factor, self.integer(0, factor - 1)),
                        )
                    )

    # ---- misuses: each returns steps whose last one must raise (here or at lowering)

    def any_leaf(self, pred=lambda st, iv: True):
        opts = [
            (st, iv)
            for st in self.stages()
            for iv in st.leaf_iter_vars
            if pred(st, iv) and self.usable(st, iv)
        ]
        return self.choose(opts) if opts else (None, None)

    def bad_stale_axis(self):
        opts = [
            (st, iv)
            for st in self.stages()
            for iv in st.all_iter_vars
            if iv not in st.leaf_iter_vars and self.usable(st, iv)
        ]
        if not opts:
            return None
        st, iv = self.choose(opts)
        prim = self.choose(("split", "unroll", "vectorize", "reorder", "fuse", "bind"))
        return [self._misuse_call(st, prim, self.ax(st, iv))]

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

    def bad_foreign_axis(self):
        stages = [st for st in self.stages()]
        if len(stages) < 2:
            return None
        st = self.choose(stages)
        o, iv = self.any_leaf(lambda x, _: x is not st)
        if iv is None:
            return None
        prim = self.choose(("split", "unroll", "reorder", "bind"))
        return [self._misuse_call(st, prim, self.ax(o, iv))]

    def bad_factor(self):
        st, iv = self.any_leaf(lambda x, y: self.plain(x, y))
        if iv is None:
            return None
        kw = self.choose(
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
        return [Step("split", self.var[st], (self.ax(st, iv),), kw, expect="error")]

    def bad_fuse(self):
        opts = []
        for st in self.stages():
            lv = [iv for iv in st.leaf_iter_vars if self.plain(st, iv) and self.usable(st, iv)]
            for a in lv:
                for b in lv:
                    pa, pb = st.leaf_iter_vars.index(a), st.leaf_iter_vars.index(b)
                    if a is not b and (pb != pa + 1 or a.kind != b.kind):
                        opts.append((st, a, b))
            if len(lv) == 1:
                opts.append((st, lv[0], None))
        if not opts:
            return None
        st, a, b = self.choose(opts)
        args = (self.ax(st, a),) if b is None else (self.ax(st, a), self.ax(st, b))
        return [Step("fuse", self.var[st], args, expect="error")]

    def bad_reorder(self):
        st, iv = self.any_leaf()
        if iv is None:
            return None
        others = [x for x in st.leaf_iter_vars if x is not iv and self.usable(st, x)][:1]
        a = self.ax(st, iv)
        return [
            Step("reorder", self.var[st], (a, *[self.ax(st, x) for x in others], a), expect="error")
        ]

    def bad_bind_reduce(self):
        st, iv = self.any_leaf(lambda x, y: y.kind == "reduce")
        if iv is None:
            return None
        tag = self.choose(TAGS_BLOCK + TAGS_THREAD)
        return [
            Step(
                "bind",
                self.var[st],
                (self.ax(st, iv), Raw(f"ts.thread_axis({tag!r})")),
                expect="error",
            )
        ]

    def bad_bind_twice(self):
        st, iv = self.any_leaf(lambda x, y: y.kind == "data" and self.plain(x, y))
        if iv is None:
            return None
        v, a = self.var[st], self.ax(st, iv)
        first = Step("bind", v, (a, Raw("ts.thread_axis('blockIdx.x')")))
        others = [
            x
            for x in st.leaf_iter_vars
            if x is not iv and x.kind == "data" and self.plain(st, x) and self.usable(st, x)
        ]
        if others and self.choose((False, True)):  # the same tag on another axis
            return [
                first,
                Step(
                    "bind",
                    v,
                    (self.ax(st, others[0]), Raw("ts.thread_axis('blockIdx.x')")),
                    expect="error",
                ),
            ]
        return [first, Step("bind", v, (a, Raw("ts.thread_axis('threadIdx.x')")), expect="error")]

    def bad_tag(self):
        st, iv = self.any_leaf(lambda x, y: y.kind == "data")
        if iv is None:
            return None
        tag = self.choose(("threadIdx.w", "blockidx.x", "vthread.x", "threadIdx"))
        return [
            Step(
                "bind",
                self.var[st],
                (self.ax(st, iv), Raw(f"ts.thread_axis({tag!r})")),
                expect="error",
            )
        ]

    def bad_annotate_reduce(self):
        st, iv = self.any_leaf(lambda x, y: y.kind == "reduce")
        if iv is None:
            return None
        return [
            Step(
                self.choose(("vectorize", "parallel")),
                self.var[st],
                (self.ax(st, iv),),
                expect="error",
            )
        ]

    def bad_after_bind(self):
        st, iv = self.any_leaf(lambda x, y: y.kind == "data" and self.plain(x, y))
        if iv is None:
            return None
        v, a = self.var[st], self.ax(st, iv)
        then = self.choose(("split", "vectorize", "unroll", "parallel", "fuse"))
        return [
            Step("bind", v, (a, Raw("ts.thread_axis('threadIdx.y')"))),
            self._misuse_call(st, then, a),
        ]

    def bad_compute_at(self):
        st = self.choose(self.stages())
        kinds = ["itself"]
        non_consumers = [
            p for p in self.stages() if p is not st and not self.s._reads_transitively(p, st)
        ]
        if non_consumers:
            kinds.append("non_consumer")
        if st.is_output and len(self.stages()) > 1:
            kinds.append("output")
        kinds.append("tensor")
        kind = self.choose(kinds)
        if kind == "itself":
            parent = st
        elif kind == "tensor":
            iv = self.choose(st.leaf_iter_vars)
            if not self.usable(st, iv):
                return None
            return [
                Step(
                    "compute_at", self.var[st], (Raw(self.var[st]), self.ax(st, iv)), expect="error"
                )
            ]
        else:
            parent = self.choose(
                non_consumers
                if kind == "non_consumer"
                else [p for p in self.stages() if p is not st]
            )
        leaves = [iv for iv in parent.leaf_iter_vars if self.usable(parent, iv)]
        if not leaves:
            return None
        return [
            Step(
                "compute_at",
                self.var[st],
                (self.var[parent], self.ax(parent, self.choose(leaves))),
                expect="error",
            )
        ]

    def bad_inline(self):
        opts = [
            st for st in self.stages() if st.is_output or st.op.reduce_axis or self.has_attached(st)
        ]
        if not opts:
            return None
        return [Step("compute_inline", self.var[self.choose(opts)], expect="error")]

    def bad_cache_write(self):
        opts = [
            st
            for st in self.stages()
            if st.relations
            or any(a.bind is not None or a.kind != "serial" for a in st.attrs.values())
        ]
        scope = self.choose(("local", "register", "Shared"))
        if scope == "local":
            if not opts:
                return None
            st = self.choose(opts)
        else:
            st = self.choose(self.stages())
        return [
            Step(
                "cache_write", self.var[st], (scope,), (), (self.fresh_var("bad"),), expect="error"
            )
        ]

    def bad_cache_read(self):
        from tensorsched.ir.tensor import tensors_read

        st = self.choose(self.stages())
        others = [
            t
            for t in self.ns["args"]
            if t not in tensors_read(st.op.body) and self.var_of_tensor(t) is not None
        ]
        kind = self.choose(("scope", "not_a_reader") if others else ("scope",))
        if kind == "scope":
            read = [t for t in tensors_read(st.op.body) if self.var_of_tensor(t) is not None]
            if not read:
                return None
            t, scope = self.choose(read), self.choose(("private", "texture", "Local"))
        else:
            t, scope = self.choose(others), "global"
        return [
            Step(
                "cache_read",
                self.var_of_tensor(t),
                (scope, [Raw(self.var[st])]),
                (),
                (self.fresh_var("bad"),),
                expect="error",
            )
        ]

    def bad_on_inlined(self):
        opts = [
            st
            for st in self.stages()
            if not st.is_output
            and not st.op.reduce_axis
            and st not in self.arg_stages()
            and not self.has_attached(st)
        ]
        if not opts:
            return None
        st = self.choose(opts)
        iv = self.choose(st.leaf_iter_vars)
        if not self.usable(st, iv):
            return None
        prim = self.choose(("split", "unroll", "vectorize", "reorder", "bind"))
        return [Step("compute_inline", self.var[st]), self._misuse_call(st, prim, self.ax(st, iv))]

    def bad_bind_inner(self):
        """Bind a loop of a root stage with an unbound loop (of more than one iteration)
        outside it: lowering must refuse."""
        opts = []
        for st in self.stages():
            if st.attach_type != "root" or any(self.bound(st, iv) for iv in st.leaf_iter_vars):
                continue
            ext = self.root_extents(st)
            lv = st.leaf_iter_vars
            for n, iv in enumerate(lv):
                if (
                    n
                    and iv.kind == "data"
                    and self.plain(st, iv)
                    and self.usable(st, iv)
                    and any(ext.get(x, 1) > 1 for x in lv[:n])
                ):
                    opts.append((st, iv))
        if not opts:
            return None
        st, iv = self.choose(opts)
        tag = self.choose(TAGS_BLOCK + TAGS_THREAD)
        return [
            Step(
                "bind",
                self.var[st],
                (self.ax(st, iv), Raw(f"ts.thread_axis({tag!r})")),
                expect="error",
            )
        ]

    def bad_local_at_root(self):
        opts = [
            st
            for st in self.stages()
            if not st.is_output and st.attach_type == "root" and st not in self.arg_stages()
        ]
        if not opts:
            return None
        st = self.choose(opts)
        return [
            Step("set_scope", self.var[st], (self.choose(("local", "shared")),), expect="error")
        ]

    def bad_split_attach_point(self):
        steps = self.m_compute_at()
        if steps is None:
            return None
        parent_var, a = steps[0].args
        parent = next(st for st, v in self.var.items() if v == parent_var)
        iv = self.idents.get(a.ident)
        if iv is None:
            iv = next((x for x in parent.leaf_iter_vars if x.var.name == a.name), None)
        if iv is None or not self.plain(parent, iv):
            return None
        return steps + [
            Step(
                "split",
                parent_var,
                (a,),
                (("factor", 2),),
                (Ax(parent_var, a.name + ".outer"), Ax(parent_var, a.name + ".inner")),
                expect="error",
            )
        ]

    def bad_layout(self):
        """A mapping that is not a permutation of the axes, or no function at all; or a
        permutation on an argument (refused at lowering)."""
        st = self.choose(self.stages())
        v, n = self.var[st], len(st.op.axis)
        args = [x for x in self.stages() if x in self.arg_stages()]
        kinds = ["repeat", "short", "long", "expr", "not_callable", "arity"] + (
            ["argument"] if args else []
        )
        kind = self.choose(kinds)
        if kind == "argument":
            st = self.choose(args)
            return [
                Step(
                    "transform_layout",
                    self.var[st],
                    (self._layout_lambda(st, lambda x: x[::-1]),),
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
        return [Step("transform_layout", v, (self._layout_lambda(st, order),), expect="error")]

    def bad_align(self):
        """storage_align with ``offset >= factor``, a factor under 1, or an axis that is not
        one of the stage's own data axes; or a correct one on an argument."""
        st, iv = self.any_leaf(lambda x, y: y in x.op.axis)
        if iv is None:
            return None
        v, a = self.var[st], self.ax(st, iv)
        args = [
            x
            for x in self.stages()
            if x in self.arg_stages() and any(self.usable(x, y) for y in x.op.axis)
        ]
        kinds = ["offset", "factor", "float"]
        if args:
            kinds.append("argument")
        reds = [y for y in st.op.reduce_axis if self.usable(st, y)]
        if reds:
            kinds.append("reduce_axis")
        foreign = [
            (x, y) for x in self.stages() if x is not st for y in x.op.axis if self.usable(x, y)
        ]
        if foreign:
            kinds.append("foreign")
        kind = self.choose(kinds)
        if kind == "offset":
            f = self.choose((1, 2, 4, 8))
            return [Step("storage_align", v, (a, f, f + self.integer(0, 3)), expect="error")]
        if kind == "factor":
            return [Step("storage_align", v, (a, self.choose((0, -4)), 0), expect="error")]
        if kind == "float":
            return [Step("storage_align", v, (a, 4.0, 1), expect="error")]
        if kind == "reduce_axis":
            return [
                Step("storage_align", v, (self.ax(st, self.choose(reds)), 4, 1), expect="error")
            ]
        if kind == "foreign":
            x, y = self.choose(foreign)
            return [Step("storage_align", v, (self.ax(x, y), 4, 1), expect="error")]
        st = self.choose(args)
        y = self.choose([y for y in st.op.axis if self.usable(st, y)])
        return [Step("storage_align", self.var[st], (self.ax(st, y), 4, 1), expect="error")]

    def bad_double_buffer(self):
        """A scope that is not 'shared', 'local' or 'both'; or a double buffer on a stage that
        is not a work-group tile computed inside a loop (refused at lowering)."""
        not_tiles = [
            st
            for st in self.stages()
            if st.attach_type == "root" or st.scope in ("local", "global")
        ]
        if not_tiles and self.choose((False, True)):
            return [
                Step(
                    "double_buffer",
                    self.var[self.choose(not_tiles)],
                    (self.choose(("shared", "local", "both")),),
                    expect="error",
                )
            ]
        st = self.choose(self.stages())
        return [
            Step(
                "double_buffer",
                self.var[st],
                (self.choose(("global", "register", "Shared", "")),),
                expect="error",
            )
        ]

    def bad_vthread(self):
        """A virtual thread on a reduction axis, or on a stage in private ("local")
        memory."""
        local = [
            (st, iv)
            for st in self.stages()
            if st.scope == "local" and st.attach_type == "scope"
            for iv in st.leaf_iter_vars
            if iv.kind == "data" and self.plain(st, iv) and self.usable(st, iv)
        ]
        if local and self.choose((False, True)):
            st, iv = self.choose(local)
        else:
            st, iv = self.any_leaf(lambda x, y: y.kind == "reduce")
            if iv is None:
                return None
        return [Step("bind", self.var[st], (self.ax(st, iv), self.vthread_axis()), expect="error")]

    ILLEGAL = (
        "stale_axis",
        "foreign_axis",
        "factor",
        "fuse",
        "reorder",
        "bind_reduce",
        "bind_twice",
        "tag",
        "annotate_reduce",
        "after_bind",
        "compute_at",
        "inline",
        "cache_write",
        "cache_read",
        "on_inlined",
        "bind_inner",
        "local_at_root",
        "split_attach_point",
        "layout",
        "align",
        "double_buffer",
        "vthread",
    )

    def illegal_steps(self):
        names = list(self.ILLEGAL)
        while names:
            name = self.choose(names)
            steps = getattr(self, "bad_" + name)()
            if steps is not None:
                return steps
            names.remove(name)
        return None

    # ---- random calls: arbitrary (often wrong) arguments; must raise or be right

    def random_step(self):
        stages = self.stages() or list(self.s.stages)
        st = self.choose(stages)
        v = self.var[st]
        every = [(x, iv) for x in self.s.stages for iv in x.all_iter_vars if self.usable(x, iv)]
        if not every:
            return None

        def axis():
            x, iv = self.choose(every)
            return self.ax(x, iv)

        prim = self.choose(
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
            n = self.choose((1, 2, 3, 9, 0, -1))
            a = axis()
            return Step(
                "split",
                v,
                (a,),
                ((self.choose(("factor", "nparts")), n),),
                (Ax(v, a.name + ".outer"), Ax(v, a.name + ".inner")),
            )
        if prim == "fuse":
            a, b = axis(), axis()
            return Step("fuse", v, (a, b), (), (Ax(v, f"{a.name}.{b.name}.fused"),))
        if prim == "reorder":
            return Step("reorder", v, tuple(axis() for _ in range(self.integer(1, 4))))
        if prim == "bind":
            tag = self.choose(TAGS_BLOCK[:2] + TAGS_THREAD[:2])
            return Step("bind", v, (axis(), Raw(f"ts.thread_axis({tag!r})")))
        if prim == "compute_at":
            p = self.choose(stages)
            return Step("compute_at", v, (self.var[p], axis()))
        if prim in ("compute_inline", "compute_root"):
            return Step(prim, v)
        if prim == "cache_write":
            scope = self.choose(("local", "global"))
            return Step("cache_write", v, (scope,), (), (self.fresh_var(f"{st.op.name}.{scope}"),))
        return Step(prim, v, (axis(),))


def _perms(tags):
    import itertools

    return list(itertools.permutations(tags))


def cases(workloads=WORKLOADS, mode="legal", max_steps=8, small=True, duplicate_names=False):
    """A hypothesis strategy of ``Case`` s. ``mode``: ``"legal"``, ``"illegal"`` or
    ``"random"`` (see the module docstring); ``small`` keeps sizes at most 8 (and primes up to
    13); ``duplicate_names`` lets two cache stages take one name (``cache_read(A, "local")``
    twice), which the IR text round trip (``TS_ROUNDTRIP=1``) does not handle yet."""
    from hypothesis import strategies as st

    @st.composite
    def draw_case(draw):
        workload = draw(st.sampled_from(list(workloads)))
        sizes = _draw_sizes(draw, workload, small)
        live = _Live(draw, workload, sizes, mode, duplicate_names)
        if mode != "random" and draw(st.booleans()):
            if draw(st.integers(0, 3)) == 0:  # split-K first (reductions only)
                for step in live.m_split_k() or ():
                    if not live.apply(step):
                        break
            for step in live.gpu_start() or ():
                if not live.apply(step):
                    break
        n = draw(st.integers(0, max_steps))
        for _ in range(n):
            if live.dead:
                break
            if mode == "random":
                steps = [live.random_step()]
            else:
                steps = live.legal_step()
            for step in steps or ():
                if step is None or not live.apply(step):
                    break
            if mode != "random" and not live.dead:
                live.fill_new_tiles()
        if mode == "legal" and not live.dead:
            live.place_caches()
        if mode == "legal" and not live.dead:
            live.decorate_tiles()
        if mode == "illegal" and not live.dead:
            live.place_caches()
        if mode == "illegal" and not live.dead:
            bad = live.illegal_steps()
            for step in bad or ():
                if not live.apply(step):
                    break
        return Case(workload, sizes, tuple(live.steps), mode)

    return draw_case()
