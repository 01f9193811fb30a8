"""Lowered IR -> Python source: a slow, exact second backend that needs no OpenCL device.

It runs work-groups as Python generators advanced in lockstep, so ``barrier`` (a ``yield``)
and ``__local`` tiles shared by a work-group behave as on a device. Every buffer access is
bounds-checked, and temporaries start as NaN (or None for integers), so an out-of-bounds access
or a read of an unwritten element fails loudly instead of passing by luck.
"""

from __future__ import annotations

import builtins
import keyword
import math
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from ..errors import CodegenError, RuntimeCallError
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.intrin import MORE_UNARY
from ..ir.simplify import func_size_vars
from ..ir.stmt import LoweredFunc
from ..ir.visitor import Visitor
from .c_like import Names

_CALLS = {
    "exp": "_exp",
    "log": "_log",
    "sqrt": "_sqrt",
    "tanh": "math.tanh",
    "sigmoid": "_sigmoid",
    "fabs": "abs",
    "pow": "_pow",
    "fmod": "_fmod",
    "atan2": "math.atan2",
    "floor": "_floor",
    "ceil": "_ceil",
    "round": "_round",
    "trunc": "_trunc",
    "cos": "_cos",
    "sin": "_sin",
    **{name: f"_{name}" for name in MORE_UNARY},
    **{n: f"_{n}" for n in ("hypot", "copysign", "ldexp", "rint", "isnan", "isinf", "isfinite")},
    **{n: f"_{n}" for n in ("popcount", "clz", "nextafter", "shift_left")},  # + the dtype
}
_WITH_DTYPE = ("popcount", "clz", "nextafter", "shift_left")  # the dtype is their last argument


def _exp(x):
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _nan_on_domain_error(fn):
    def wrapped(*args):
        try:
            return fn(*args)
        except (ValueError, ZeroDivisionError):
            return math.nan  # as C's sqrt/log/pow give NaN (or -inf) outside their domain
        except OverflowError:
            return math.inf

    return wrapped


_sqrt = _nan_on_domain_error(math.sqrt)
_pow = _nan_on_domain_error(math.pow)
_fmod = _nan_on_domain_error(math.fmod)  # C's fmod(x, 0) is NaN


def _integral(fn):
    def wrapped(x):
        return x if math.isinf(x) or math.isnan(x) else float(fn(x))

    return wrapped


_floor, _ceil, _trunc = _integral(math.floor), _integral(math.ceil), _integral(math.trunc)
_round = _integral(lambda x: math.copysign(math.floor(math.fabs(x) + 0.5), x))
_cos, _sin = _nan_on_domain_error(math.cos), _nan_on_domain_error(math.sin)


def _log_of(fn, pole=0.0):
    """A logarithm as C has it: -inf at its pole, NaN below."""

    def wrapped(x):
        if x == pole:
            return -math.inf
        return fn(x) if x > pole else math.nan

    return wrapped


def _overflowing(fn, odd=False):
    """A function whose overflow is an infinity (C's, not Python's raise): ``x``'s sign for an
    odd function, else positive."""

    def wrapped(x):
        try:
            return fn(x)
        except OverflowError:
            return math.copysign(math.inf, x) if odd else math.inf

    return wrapped


def _atanh(x):
    if math.fabs(x) == 1.0:
        return math.copysign(math.inf, x)
    return math.atanh(x) if -1.0 < x < 1.0 else math.nan


def _rsqrt(x):
    if x == 0:
        return math.copysign(math.inf, x)
    return 1.0 / math.sqrt(x) if x > 0 else math.nan


_hypot, _copysign, _isnan, _isinf, _isfinite = (
    math.hypot, math.copysign, math.isnan, math.isinf, math.isfinite
)  # fmt: skip
_rint = _integral(builtins.round)  # halves to even, as C's rint
_ldexp = _nan_on_domain_error(lambda x, e: math.ldexp(x, int(e)))  # overflow: inf


def _bits(dtype):
    return np.iinfo(dtype).bits


def _popcount(x, dtype):
    return bin(x & ((1 << _bits(dtype)) - 1)).count("1")  # of the two's complement


def _clz(x, dtype):
    return _bits(dtype) - (x & ((1 << _bits(dtype)) - 1)).bit_length()


def _shift_left(x, n, dtype):
    """``x << n`` wrapped to the signed integer ``dtype``, as the device's shift gives it."""
    bits = _bits(dtype)
    v = (x << n) & ((1 << bits) - 1)
    return v - (1 << bits) if v >> (bits - 1) else v


def _nextafter(x, y, dtype):
    """The next value of ``dtype`` (not of Python's double) after ``x`` towards ``y``."""
    return float(np.nextafter(np.asarray(x, dtype), np.asarray(y, dtype)))


_exp2, _exp10 = _overflowing(lambda x: 2.0**x), _overflowing(lambda x: 10.0**x)
_log2, _log10, _log1p = _log_of(math.log2), _log_of(math.log10), _log_of(math.log1p, -1.0)
_sinh, _cosh = _overflowing(math.sinh, odd=True), _overflowing(math.cosh)
_tan, _asin, _acos = (_nan_on_domain_error(f) for f in (math.tan, math.asin, math.acos))
_atan, _asinh, _erf = math.atan, math.asinh, math.erf
_acosh = _nan_on_domain_error(math.acosh)


def _log(x):
    if x == 0:
        return -math.inf
    return math.log(x) if x > 0 else math.nan


def _sigmoid(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


class OutOfBounds(RuntimeCallError):
    """The generated code indexed a buffer outside its elements."""


def _ix(i: int, n: int, name: str) -> int:
    if 0 <= i < n:
        return i
    raise OutOfBounds(
        f"python target: access {name}[{i}] is outside the {n} elements of '{name}' "
        "(the schedule or the edited IR indexes past the buffer)"
    )


def run_generated(fn: Callable[..., None], func_name: str, arrays: list) -> None:
    """Call the compiled ``fn`` on ``arrays``; what fails inside the generated code is a
    ``RuntimeCallError`` naming the function (or the ``TensorschedError`` it raised)."""
    try:
        fn(*arrays)
    except (RuntimeCallError, CodegenError):
        raise
    except TypeError as exc:
        if "NoneType" not in str(exc):
            raise RuntimeCallError(f"python target: '{func_name}' failed: {exc}") from exc
        raise RuntimeCallError(
            f"python target: '{func_name}' read an integer element that was never written ({exc})"
        ) from exc
    except (ZeroDivisionError, OverflowError, ValueError, IndexError) as exc:
        raise RuntimeCallError(
            f"python target: '{func_name}' failed: {type(exc).__name__}: {exc} (an integer "
            "division or modulo by zero, or a value out of range, in the kernel)"
        ) from exc


def run_lockstep(threads: Iterable[Iterator[None]]) -> None:
    """Advance work-item generators together; each ``yield`` is a barrier."""
    active = list(threads)
    while active:
        alive = []
        for g in active:
            try:
                next(g)
                alive.append(g)
            except StopIteration:
                pass
        if alive and len(alive) != len(active):
            raise CodegenError(
                "barrier divergence: some work-items of a group reached a "
                "barrier that others skipped"
            )
        active = alive


class PythonEmitter:
    """Prints a lowered function as Python over flat lists (one method per node kind)."""

    def __init__(self, func: LoweredFunc) -> None:
        self.func = func
        helpers = ("math", "run_lockstep", "_ix", "_fdiv", *_CALLS.values())
        self.names = Names([*keyword.kwlist, *helpers])
        self.lines: list[str] = []
        self.sizes: dict = {}
        self.work_items: list = []  # the current kernel's work-item indices
        self.counters: set = set()  # LastGroup counters: made zero, as a device's must be

        class _Counters(Visitor):
            def visit_LastGroup(inner, g):  # noqa: N805
                self.counters.add(g.counter)
                inner.generic_visit(g)

        _Counters().visit(func.body)

    def buf(self, b):
        self.sizes[b] = b.size
        return self.names(b, "b_" + b.name)

    def size(self, n):
        """An extent or element count: an int, or an expression of size variables."""
        return str(n) if isinstance(n, int) else self.expr(n)

    def var(self, v):
        return self.names(v, v.name)

    # ---- expressions

    def expr(self, e):
        m = getattr(self, "e_" + type(e).__name__, None)
        if m is None:
            raise CodegenError(f"python backend: cannot evaluate {type(e).__name__}")
        return m(e)

    def e_IntImm(self, e):
        return str(bool(e.value)) if e.dtype == "bool" else str(e.value)

    def e_FloatImm(self, e):
        return repr(float(e.value)) if math.isfinite(e.value) else f"float('{e.value}')"

    def e_Var(self, e):
        return self.var(e)

    def e_BinOp(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        if e.op in ("min", "max"):
            return f"{e.op}({a}, {b})"
        if e.op == "/" and dt.is_float(e.dtype):
            return f"_fdiv({a}, {b})"
        return f"({a} {e.op} {b})"

    def e_Cmp(self, e):
        return f"({self.expr(e.a)} {e.op} {self.expr(e.b)})"

    def e_And(self, e):
        return f"({self.expr(e.a)} and {self.expr(e.b)})"

    def e_Or(self, e):
        return f"({self.expr(e.a)} or {self.expr(e.b)})"

    def e_Not(self, e):
        return f"(not {self.expr(e.a)})"

    def e_Select(self, e):
        return f"({self.expr(e.t)} if {self.expr(e.cond)} else {self.expr(e.f)})"

    def e_Cast(self, e):
        v = self.expr(e.value)
        if dt.is_float(e.dtype):
            return f"float({v})"
        if dt.is_bool(e.dtype):
            return f"bool({v})"
        return f"int({v})"

    def e_Call(self, e):
        args = [self.expr(a) for a in e.args]
        if e.name in E.BITWISE and e.name != "shift_left":  # Python's own operators
            return f"({args[0]} {E.BITWISE[e.name]} {args[1]})"
        if e.name == "bitwise_not":
            return f"(~{args[0]})"
        if e.name not in _CALLS:
            raise CodegenError(f"python backend: unknown intrinsic '{e.name}'")
        if e.name in _WITH_DTYPE:
            args.append(repr(dt.element(e.dtype)))
        return f"{_CALLS[e.name]}({', '.join(args)})"

    def e_Load(self, e):
        if dt.lanes(e.index.dtype) != 1:
            raise CodegenError("python backend: vector loads are not supported")
        b = self.buf(e.buffer)
        size = self.size(e.buffer.size)
        return f"{b}[_ix({self.expr(e.index)}, {size}, {e.buffer.name!r})]"

    # ---- statements

    def emit(self, line, ind):
        self.lines.append("    " * ind + line)

    def stmt(self, s, ind):
        m = getattr(self, "s_" + type(s).__name__)
        m(s, ind)

    def s_Seq(self, s, ind):
        if not s.stmts:
            self.emit("pass", ind)
        for x in s.stmts:
            self.stmt(x, ind)

    def s_Store(self, s, ind):
        b = self.buf(s.buffer)
        self.emit(
            f"{b}[_ix({self.expr(s.index)}, {self.size(s.buffer.size)}, {s.buffer.name!r})] = "
            f"{self.expr(s.value)}",
            ind,
        )

    def s_For(self, f, ind):
        lo = self.expr(f.min)
        self.emit(f"for {self.var(f.var)} in range({lo}, {lo} + {self.expr(f.extent)}):", ind)
        self.stmt(f.body, ind + 1)

    def s_Produce(self, p, ind):
        self.emit(f"# produce {p.name}", ind)
        self.stmt(p.body, ind)

    def s_IfThenElse(self, s, ind):
        self.emit(f"if {self.expr(s.cond)}:", ind)
        self.stmt(s.then, ind + 1)
        if s.orelse is not None:
            self.emit("else:", ind)
            self.stmt(s.orelse, ind + 1)

    def s_Allocate(self, a, ind):
        b = a.buffer
        name = self.buf(b)
        if b.scope == "shared":
            # keyed by the buffer's unique identifier: two stages may share a name
            self.emit(f"{name} = _shared.setdefault({name!r}, {self.new_list(b)})", ind)
        else:
            self.emit(f"{name} = {self.new_list(b)}", ind)
        self.stmt(a.body, ind)

    def new_list(self, b) -> str:
        """A new flat list for buffer ``b``, poisoned (NaN, or None for integers)."""
        if b in self.counters:
            return f"[0] * {self.size(b.size)}"
        fill = "float('nan')" if dt.is_float(b.dtype) else "None"
        return f"[{fill}] * {self.size(b.size)}"

    def s_Barrier(self, b, ind):
        self.emit("yield", ind)

    def s_LastGroup(self, g, ind):
        # the work-groups run one after another: the one that finds the count at its last
        # value arrives last (its work-item 0 counts, as on a device)
        size, name = self.size(g.counter.size), g.counter.name
        counter = f"{self.buf(g.counter)}[_ix({self.expr(g.index)}, {size}, {name!r})]"
        key = repr(f"last_group:{g.counter.name}")
        first = " and ".join(f"{self.var(v)} == 0" for v in self.work_items) or "True"
        self.emit("yield", ind)
        self.emit(f"if {first}:", ind)
        self.emit(f"_shared[{key}] = {counter} == {self.size(g.count)} - 1", ind + 1)
        self.emit(f"{counter} = 0 if _shared[{key}] else {counter} + 1", ind + 1)
        self.emit("yield", ind)
        self.emit(f"if _shared[{key}]:", ind)
        self.stmt(g.body, ind + 1)

    def kernel(self, t, ind):
        """A root stage. With work-item axes it is a kernel, as OpenCL launches it: its whole
        statement run by every work-item of the NDRange its ThreadExtents define, in
        lockstep, so that what lies outside them (a ``__local`` buffer, a barrier between
        two of them) belongs to the kernel too; its global buffers made before the launch."""
        launch = {}

        class _Collect(Visitor):
            def visit_ThreadExtent(self, x):
                if launch.setdefault(x.tag, (x.var, x.extent)) != (x.var, x.extent):
                    raise CodegenError(f"{x.tag} has two extents in one kernel")
                self.generic_visit(x)

        _Collect().visit(t)
        if not launch and not _work_group_memory(t):
            self.stmt(t, ind)
            return  # (a single work-item with __local memory runs as a work-group of one)
        hoisted: list = []
        t = _hoist_global_allocs(t, hoisted)
        for b in hoisted:
            self.emit(f"{self.buf(b)} = {self.new_list(b)}", ind)
        blocks = [(v, n) for tag, (v, n) in launch.items() if tag.startswith("blockIdx")]
        threads = [(v, n) for tag, (v, n) in launch.items() if tag.startswith("threadIdx")]
        self.work_items = [v for v, _ in threads]
        fn = self.names(t, "workitem")
        params = ", ".join(self.var(v) for v, _ in blocks + threads)
        self.emit(f"def {fn}({params}{', ' if params else ''}_shared):", ind)
        self.emit("if False:", ind + 1)
        self.emit("yield", ind + 2)
        self.stmt(_strip_thread_extents(t), ind + 1)
        for v, n in blocks:
            self.emit(f"for {self.var(v)} in range({self.size(n)}):", ind)
            ind += 1
        self.emit("_shared = {}", ind)
        gen = f"{fn}({params}{', ' if params else ''}_shared)"
        loops = " ".join(f"for {self.var(v)} in range({self.size(n)})" for v, n in threads)
        self.emit(f"run_lockstep([{gen} {loops}])" if loops else f"run_lockstep([{gen}])", ind)

    def source(self) -> str:
        f = self.func
        body = f.body
        while isinstance(body, S.Allocate):  # the root's buffers, between kernels
            self.emit(f"{self.buf(body.buffer)} = {self.new_list(body.buffer)}", 1)
            body = body.body
        for part in body.stmts if isinstance(body, S.Seq) else (body,):
            self.kernel(part, 1)
        params = [self.buf(b) for b in f.args]
        params += [self.var(v) for v in func_size_vars(f.args, f.size_args)]
        head = f"def {self.names(f, f.name)}({', '.join(params)}):"
        return "\n".join([head] + self.lines) + "\n"


def _hoist_global_allocs(stmt, hoisted: list):
    """``stmt`` without its global allocations outside work-item axes (appended to
    ``hoisted``): as OpenCL passes them to the kernel, every work-item shares them."""
    from ..ir.visitor import Mutator

    class _M(Mutator):
        def visit_ThreadExtent(self, x):
            return x

        def visit_Allocate(self, a):
            if a.buffer.scope == "global":
                hoisted.append(a.buffer)
                return self.visit(a.body)
            return self.generic_visit(a)

    return _M().visit(stmt)


def _work_group_memory(t) -> bool:
    """Whether ``t`` allocates work-group ("shared") memory or waits at a barrier."""
    found = []

    class _V(Visitor):
        def visit_Allocate(self, a):
            if a.buffer.scope == "shared":
                found.append(a)
            self.generic_visit(a)

        def visit_Barrier(self, b):
            found.append(b)

    _V().visit(t)
    return bool(found)


def _strip_thread_extents(t):
    from ..ir.visitor import Mutator

    class _M(Mutator):
        def visit_ThreadExtent(self, x):
            return self.visit(x.body)

    return _M().visit(t)


def _fdiv(a, b):
    try:
        return a / b
    except ZeroDivisionError:
        return math.copysign(math.inf, a) if a else math.nan


def compile_python(func: LoweredFunc) -> tuple[Callable[..., None], str]:
    """Compile a LoweredFunc to a Python function of flat lists; returns ``(fn, source)``."""
    em = PythonEmitter(func)
    src = em.source()
    try:
        code = compile(src, f"<tensorsched python: {func.name}>", "exec")
    except (SyntaxError, MemoryError, RecursionError) as exc:  # Python's own nesting limits
        raise CodegenError(
            f"python backend: '{func.name}' nests too deep for Python to compile ({exc}; "
            "Python allows 20 nested loops and 200 nested parentheses); use the opencl target"
        ) from None
    env = {
        "math": math,
        "_ix": _ix,
        "_fdiv": _fdiv,
        "run_lockstep": run_lockstep,
        **{fn: globals()[fn] for fn in _CALLS.values() if fn.startswith("_")},
    }
    exec(code, env)
    return env[em.names.map[func]], src
