"""Lowered IR -> OpenCL C 1.2: one ``__kernel`` per root stage.

The facts of the dialect are the class attributes of ``OpenCLEmitter``; ``emit_opencl`` splits
a lowered function into kernels, derives each NDRange from its bound axes, and prints them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import CodegenError
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.precedence import ATOM
from ..ir.simplify import (
    Extent,
    Simplifier,
    ext_equal,
    ext_mul,
    extent_upper,
    func_size_vars,
)
from ..ir.visitor import StmtMutator, Visitor
from ..passes import PREPARE, run_phase
from .c_like import CStyleEmitter, Names

WORK_ITEM = {
    "blockIdx.x": "get_group_id(0)",
    "blockIdx.y": "get_group_id(1)",
    "blockIdx.z": "get_group_id(2)",
    "threadIdx.x": "get_local_id(0)",
    "threadIdx.y": "get_local_id(1)",
    "threadIdx.z": "get_local_id(2)",
}
DIM = {"x": 0, "y": 1, "z": 2}
KEYWORDS = (
    "kernel",
    "global",
    "local",
    "constant",
    "private",
    "int",
    "float",
    "half",
    "double",
    "long",
    "bool",
    "char",
    "short",
    "uint",
    "image2d_t",
    "sampler_t",
    "restrict",
    "const",
    "for",
    "if",
    "else",
    "while",
    "do",
    "return",
    "void",
    "inline",
    "static",
    # built-in functions the kernels call: a tensor named "tanh" or "max" must not hide one
    *CStyleEmitter.calls.values(),
    *("max", "min", "fmax", "fmin", "select", "mad", "fma", "dot", "barrier", "mem_fence"),
    *(f"get_{w}" for w in ("group_id", "local_id", "global_id", "local_size", "num_groups")),
    *("get_global_size", "read_imagef", "vload_half", "vstore_half", "ts_v", "ts_sampler"),
    *("atomic_inc", "atomic_xchg", "ts_last_group", "TS_DEVICE_FENCE", "TS_RESTRICT_IN"),
    *(f"{f}{n}" for f in ("vload", "vstore") for n in (2, 3, 4, 8, 16)),
    *(  # vector types and the conversions to them
        f"{conv}{t}{n}"
        for conv in ("", "convert_")
        for t in ("float", "double", "half", "int", "long")
        for n in (2, 3, 4, 8, 16)
    ),
)

SAMPLER = (
    "__constant sampler_t ts_sampler = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | "
    "CLK_FILTER_NEAREST;"
)


def _floor_helpers(suffix: str, t: str) -> dict[str, str]:
    """Floor division and modulo on C type ``t`` (C's ``/`` and ``%`` round toward zero)."""
    return {
        f"ts_floordiv{suffix}": f"{t} ts_floordiv{suffix}({t} a, {t} b) {{\n  {t} q = a / b;\n"
        "  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;\n}",
        f"ts_floormod{suffix}": f"{t} ts_floormod{suffix}({t} a, {t} b) {{\n  {t} r = a % b;\n"
        "  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}",
    }


HELPERS = {
    "ts_read_image": "float ts_read_image(__read_only image2d_t img, int row, int col) {\n"
    "  float4 t = read_imagef(img, ts_sampler, (int2)(col >> 2, row));\n"
    "  int k = col & 3;\n"
    "  return k == 0 ? t.x : (k == 1 ? t.y : (k == 2 ? t.z : t.w));\n}",
    **_floor_helpers("", "int"),
    **_floor_helpers("_long", "long"),
    # a fence that orders a work-item's global stores for every work-group (LastGroup): NVIDIA's
    # OpenCL compiles mem_fence(CLK_GLOBAL_MEM_FENCE) to a work-group's fence (membar.cta), so
    # there (its compiler defines __NV_CL_C_VERSION) the device-wide one, CUDA's __threadfence()
    "TS_DEVICE_FENCE": "#ifdef __NV_CL_C_VERSION\n"
    '#define TS_DEVICE_FENCE() asm volatile("membar.gl;" ::: "memory")\n'
    "#else\n"
    "#define TS_DEVICE_FENCE() mem_fence(CLK_GLOBAL_MEM_FENCE)\n"
    "#endif",
    # the read-only buffers of a kernel that reads back a global buffer it writes: NVIDIA's
    # OpenCL compiler (driver 580) dropped every store to an int output of such a kernel
    # (TVM's argmin as a tuple reducer, test_tvm_port11) where they were `const restrict`;
    # right without `restrict` on them or with -cl-opt-disable. Elsewhere they keep it
    "TS_RESTRICT_IN": "#ifdef __NV_CL_C_VERSION\n"
    "#define TS_RESTRICT_IN\n"
    "#else\n"
    "#define TS_RESTRICT_IN restrict\n"
    "#endif",
}


def _strided_helper(name: str, ctype: str, space: str, lanes: int, stride: int) -> str:
    """The function ``name`` returning ``lanes`` elements ``stride`` apart from ``p``: the
    widest vector loads that read no element past the last lane, each element picked out by
    its swizzle (a vector literal of scalars: Oclgrind mis-runs one built of vectors)."""
    span = (lanes - 1) * stride + 1
    body, picks, at, k = [], [], 0, 0
    while at < span:
        width = next((w for w in (16, 8, 4, 3, 2) if w <= span - at), 1)
        if width == 1:
            picks.append(f"p[{at}]")
            at += stride
            continue
        ptr = f"p + {at}" if at else "p"
        body.append(f"  const {ctype}{width} v{k} = vload{width}(0, {ptr});")
        offsets = range((-at) % stride, width, stride)
        picks += [f"v{k}.s{'0123456789abcdef'[o]}" for o in offsets]
        at += width
        at += (-at) % stride  # the next wanted element
        k += 1
    assert len(picks) == lanes
    return (
        f"{ctype}{lanes} {name}(const {space} {ctype}* p) {{\n"
        + "\n".join(body)
        + f"\n  return ({ctype}{lanes})({', '.join(picks)});\n}}"
    )


INDEX_LIMIT = dt.INT32_MAX
"""A kernel is indexed with 64-bit ``long`` (loop variables, work-item indices, and so all the
index arithmetic on them) when one of its buffers has more elements than this, or one of its
loops or NDRange dimensions more iterations; with ``int`` otherwise. (Tests lower it to force
the wide form on small kernels.)"""


@dataclass(frozen=True)
class KernelInfo:
    """One ``__kernel``: its name, buffer parameters in order, and its NDRange; with symbolic
    sizes, ``scalars`` are the size variables passed after the buffers (as ``int`` or
    ``long``), and the NDRange may be expressions of them, evaluated at each launch."""

    name: str
    params: tuple[S.Buffer, ...]
    writes: frozenset[S.Buffer]
    global_size: tuple[Any, ...]  # ints, or Extent expressions (Any: int-only consumers)
    local_size: tuple[Any, ...]
    scalars: tuple[E.Var, ...] = ()
    index_type: str = "int"  # of loop variables and work-item indices: int or long


@dataclass(frozen=True)
class KernelSource:
    """The OpenCL C of a lowered function: the text, its kernels in launch order, and the
    temporary global buffers that pass data between kernels."""

    name: str
    text: str
    kernels: tuple[KernelInfo, ...]
    temps: tuple[S.Buffer, ...]
    # the temporaries that must be zero before the first launch (the kernels leave them so):
    # counters of work-groups' arrivals (``ir.stmt.LastGroup``)
    zeroed: tuple[S.Buffer, ...] = ()


class OpenCLEmitter(CStyleEmitter):
    kernel_prefix = "__kernel"
    global_qualifier = "__global"
    local_qualifier = "__local"
    barrier_call = "barrier(CLK_LOCAL_MEM_FENCE);"

    def __init__(self, names: Names, fp16: str = "storage") -> None:
        super().__init__(names)
        self.fp16 = fp16
        self.vector_regs: dict[S.Buffer, int] = {}  # private Buffer -> lanes, as vectors
        self.helper_defs: dict[str, str] = {}  # helpers written for this text (strided loads)
        self.uses_half = False
        if fp16 == "storage":
            self.types = dict(self.types, float16="float")

    def ctype(self, dtype: str) -> str:
        text = super().ctype(dtype)
        if text.startswith("half"):
            self.uses_half = True  # half arithmetic needs cl_khr_fp16 enabled
        return text

    def e_Cast(self, e: E.Cast) -> tuple[str, int]:
        # OpenCL C forbids C casts between vector types: ``convert_float4(x)`` converts lane
        # by lane, rounding as the scalar cast does (toward zero to an integer type)
        if dt.lanes(e.dtype) > 1:
            return f"convert_{self.ctype(e.dtype)}({self.expr(e.value)})", ATOM
        return super().e_Cast(e)

    def _half_global(self, b: S.Buffer) -> bool:
        return dt.element(b.dtype) == "float16" and b.scope == "global" and self.fp16 == "storage"

    def _vector_slot(self, buf: S.Buffer, idx: E.Expr) -> str:
        """The element of a register tile held as an array of vectors (see s_Allocate)."""
        assert isinstance(idx, E.Ramp)  # every access of such a tile is an aligned vector
        return f"{self.buf(buf)}[{self.expr(_SIMP.visit(idx.base // idx.lanes))}]"

    def e_Load(self, e: E.Load) -> tuple[str, int]:
        b, idx = self.buf(e.buffer), e.index
        if e.buffer in self.vector_regs:
            return self._vector_slot(e.buffer, idx), ATOM
        if e.buffer.image:
            return self._image_load(e), ATOM
        if isinstance(idx, E.Ramp):
            if getattr(idx.stride, "value", None) == 1:
                base = self.expr(idx.base)
                ptr = f"{b} + {base}" if base != "0" else b
                fn = (
                    f"vload_half{idx.lanes}" if self._half_global(e.buffer) else f"vload{idx.lanes}"
                )
                return f"{fn}(0, {ptr})", ATOM
            stride = getattr(idx.stride, "value", None)
            if (
                isinstance(stride, int)
                and 1 < stride <= 4
                and e.buffer.scope in ("global", "shared")
                and not self._half_global(e.buffer)
            ):
                return self._strided_load(e, idx, stride), ATOM
            lanes = [self.simp.visit(idx.base + idx.stride * k) for k in range(idx.lanes)]
            parts = [self.expr(E.Load(e.buffer, i)) for i in lanes]
            return f"(({self.ctype(e.dtype)})({', '.join(parts)}))", ATOM
        if self._half_global(e.buffer):
            return f"vload_half({self.expr(idx)}, {b})", ATOM
        return f"{b}[{self.expr(idx)}]", ATOM

    def _strided_load(self, e: E.Load, idx: E.Ramp, stride: int) -> str:
        """A vector of lanes ``stride`` elements apart (a stride-2 convolution's row), read by
        a helper that loads vectors covering exactly the elements from its first lane to its
        last and picks the lanes out of them (``ts_vload4_s2``: a ``vload4`` and a ``vload3``
        for lanes 0, 2, 4, 6), rather than one scalar load per lane. Nothing past the last
        lane is read."""
        space = {"global": "__global", "shared": "__local"}[e.buffer.scope]
        ctype = self.ctype(dt.element(e.dtype))
        name = f"ts_vload{idx.lanes}_s{stride}" + ("" if ctype == "float" else f"_{ctype}")
        name += "" if space == "__global" else "_local"
        if name not in self.helper_defs:
            self.helper_defs[name] = _strided_helper(name, ctype, space, idx.lanes, stride)
        self.helpers.add(name)
        b, base = self.buf(e.buffer), self.expr(idx.base)
        return f"{name}({b} + {base})" if base != "0" else f"{name}({b})"

    def _image_load(self, e: E.Load) -> str:
        """Element (row, col) of a 2-d input read as an RGBA float image: texel (col/4, row)."""
        b, idx, width = self.buf(e.buffer), e.index, e.buffer.shape[1]
        if (
            isinstance(idx, E.Ramp)
            and getattr(idx.stride, "value", None) == 1
            and idx.lanes == 4
            and self.simp.visit(idx.base % 4) == E.IntImm(0)
        ):
            row, col = self.simp.visit(idx.base // width), self.simp.visit(idx.base % width)
            col4 = self.simp.visit(col // 4)
            return f"read_imagef({b}, ts_sampler, (int2)({self.expr(col4)}, {self.expr(row)}))"
        if isinstance(idx, E.Ramp):
            lanes = [self.simp.visit(idx.base + idx.stride * k) for k in range(idx.lanes)]
            parts = [self._image_load(E.Load(e.buffer, i)) for i in lanes]
            return f"(({self.ctype(e.dtype)})({', '.join(parts)}))"
        self.helpers.add("ts_read_image")
        row, col = self.simp.visit(idx // width), self.simp.visit(idx % width)
        return f"ts_read_image({b}, {self.expr(row)}, {self.expr(col)})"

    def store(self, s: S.Store) -> str:
        if s.buffer.image:
            raise CodegenError(
                f"buffer '{s.buffer.name}' is read through an image and cannot be written"
            )
        b, idx = self.buf(s.buffer), s.index
        value = self.expr(s.value)
        if s.buffer in self.vector_regs:
            return f"{self._vector_slot(s.buffer, idx)} = {value}"
        if isinstance(idx, E.Ramp):
            if getattr(idx.stride, "value", None) != 1:
                return self._scatter(s, value)
            base = self.expr(idx.base)
            ptr = f"{b} + {base}" if base != "0" else b
            fn = f"vstore_half{idx.lanes}" if self._half_global(s.buffer) else f"vstore{idx.lanes}"
            return f"{fn}({value}, 0, {ptr})"
        if self._half_global(s.buffer):
            return f"vstore_half({value}, {self.expr(idx)}, {b})"
        return f"{b}[{self.expr(idx)}] = {value}"

    def _scatter(self, s: S.Store, value: str) -> str:
        """A vector stored lane by lane at a stride (a vector loaded from one row of global
        memory into one column of a tile): the value is computed once, as a vector."""
        if self._half_global(s.buffer):
            raise CodegenError("a strided vector store to half storage is not supported")
        idx, b = s.index, self.buf(s.buffer)
        assert isinstance(idx, E.Ramp)  # store() calls this for a strided vector only
        lanes = [self.expr(self.simp.visit(idx.base + idx.stride * k)) for k in range(idx.lanes)]
        parts = [f"{b}[{i}] = ts_v.s{k:x}" for k, i in enumerate(lanes)]
        return f"{{ const {self.ctype(s.value.dtype)} ts_v = {value}; " + "; ".join(parts) + "; }"

    def s_ThreadExtent(self, t: S.ThreadExtent, ind: int) -> None:
        # work-item indices are declared at the top of the kernel
        hi = extent_upper(t.extent)
        self._ranged(t.var, 0, None if hi is None else hi - 1, lambda: self.stmt(t.body, ind))

    def s_Barrier(self, b: S.Barrier, ind: int) -> None:
        # a "global" barrier (a scan's steps in one work-group) fences global memory too
        call = self.barrier_call
        if b.scope == "global":
            call = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"
        self.emit(call, ind)

    def s_LastGroup(self, g: S.LastGroup, ind: int) -> None:
        # each work-item's global stores fenced for the whole device, one work-item counts the
        # group's arrival (atomic_inc returns the count before it), and the last group to
        # arrive resets the counter for the next launch and runs the body
        count = self.expr(E.as_expr(g.count))
        counter = f"{self.buf(g.counter)} + {self.expr(g.index)}"
        first = " && ".join(f"get_local_id({d}) == 0" for d in range(3))
        self.helpers.add("TS_DEVICE_FENCE")
        self.emit(f"// the last of the {count} work-groups along {g.tag} to arrive goes on", ind)
        self.emit("TS_DEVICE_FENCE();", ind)
        self.emit("barrier(CLK_GLOBAL_MEM_FENCE);", ind)
        self.emit(f"if ({first}) {{", ind)
        self.emit(f"ts_last_group = atomic_inc({counter}) == {count} - 1;", ind + 1)
        self.emit("if (ts_last_group) {", ind + 1)
        self.emit(f"atomic_xchg({counter}, 0);", ind + 2)
        self.emit("}", ind + 1)
        self.emit("}", ind)
        self.emit("barrier(CLK_LOCAL_MEM_FENCE);", ind)
        self.emit("if (ts_last_group) {", ind)
        self.emit("TS_DEVICE_FENCE();", ind + 1)
        self.stmt(g.body, ind + 1)
        self.emit("}", ind)

    def s_Allocate(self, a: S.Allocate, ind: int) -> None:
        b = a.buffer
        if b.scope == "local":
            size = constant_size(b)
            lanes = _vector_register_lanes(a)
            if lanes:
                self.vector_regs[b] = lanes
                vt = self.ctype(dt.with_lanes(b.dtype, lanes))
                self.emit(f"{vt} {self.buf(b)}[{size // lanes}];", ind)
            else:
                self.emit(f"{self.ctype(b.dtype)} {self.buf(b)}[{size}];", ind)
        elif b.scope != "shared":
            raise CodegenError(
                f"buffer '{b.name}' of scope {b.scope} cannot be allocated inside "
                "a kernel; compute the stage at the root or give it scope "
                "'shared' or 'local'"
            )
        self.stmt(a.body, ind)

    def scalar_param(self, v: E.Var) -> str:
        return f"const {self.ctype(v.dtype)} {self.var(v)}"

    def param(self, b: S.Buffer, written: bool, read_back: bool = False) -> str:
        """A buffer argument: ``const`` where the kernel only reads it, and ``restrict``; a
        read-only one of a kernel that reads back what it writes (``read_back``) is
        ``TS_RESTRICT_IN``, not ``restrict`` on NVIDIA."""
        if b.image:
            return f"__read_only image2d_t {self.buf(b)}"
        const = "" if written else "const "
        t = "half" if dt.element(b.dtype) == "float16" else self.ctype(b.dtype)
        restrict = "restrict"
        if read_back and not written:
            restrict = "TS_RESTRICT_IN"
            self.helpers.add("TS_RESTRICT_IN")
        return f"{self.global_qualifier} {const}{t}* {restrict} {self.buf(b)}"


_SIMP = Simplifier()


def constant_size(b: S.Buffer) -> int:
    """The element count of a buffer allocated inside a kernel, which must be constant."""
    if not isinstance(b.size, int):
        raise CodegenError(
            f"buffer '{b.name}' ({b.scope}) has the symbolic size {b.size}, but memory "
            "inside a kernel is allocated with a constant size; split the axes it is "
            "computed at by constant factors so that its region is constant"
        )
    return b.size


def _vector_register_lanes(alloc: S.Allocate) -> int | None:
    """The vector width L when every access to the private buffer of ``alloc`` is an aligned
    L-wide vector (``ramp(L*m, 1, L)``): the buffer is then declared as an array of ``floatL``
    and indexed by ``m``, a form OpenCL compilers keep in registers. Else None."""
    buf, lanes = alloc.buffer, set()

    class _V(Visitor):
        def visit_Load(self, node: E.Load) -> None:
            if node.buffer is buf:
                lanes.add(_aligned_lanes(node.index))
            self.generic_visit(node)

        def visit_Store(self, node: S.Store) -> None:
            if node.buffer is buf:
                lanes.add(_aligned_lanes(node.index))
            self.generic_visit(node)

    _V().visit(alloc.body)
    if len(lanes) != 1:
        return None
    n = lanes.pop()
    return n if n and isinstance(buf.size, int) and buf.size % n == 0 else None


def _aligned_lanes(idx: E.Expr) -> int | None:
    if not (isinstance(idx, E.Ramp) and getattr(idx.stride, "value", None) == 1):
        return None
    return idx.lanes if _SIMP.visit(idx.base % idx.lanes) == E.IntImm(0) else None


class _Collect(Visitor):
    """Thread extents, global buffers read/written, and allocations inside one kernel."""

    def __init__(self) -> None:
        self.launch: dict[str, tuple[E.Var, Extent]] = {}  # tag -> (variable, extent)
        self.reads: dict[S.Buffer, None] = {}
        self.writes: dict[S.Buffer, None] = {}
        self.allocs: dict[S.Buffer, None] = {}
        self.counters: dict[S.Buffer, None] = {}  # of LastGroup arrivals
        self.longest_loop = 0  # the largest end (min + extent) of a constant loop
        self.vars: dict[E.Var, None] = {}  # every variable used
        self.bound: set[E.Var] = set()  # loop variables and work-item indices

    def visit_Var(self, v: E.Var) -> None:
        self.vars[v] = None

    def visit_ThreadExtent(self, t: S.ThreadExtent) -> None:
        self.bound.add(t.var)
        if t.tag in self.launch and not ext_equal(self.launch[t.tag][1], t.extent):
            raise CodegenError(
                f"{t.tag} is bound with extents {self.launch[t.tag][1]} and "
                f"{t.extent} in one kernel; use the same split factor"
            )
        self.launch.setdefault(t.tag, (t.var, t.extent))
        self.generic_visit(t)

    def visit_For(self, f: S.For) -> None:
        self.bound.add(f.var)
        if isinstance(f.min, E.IntImm) and isinstance(f.extent, E.IntImm):
            self.longest_loop = max(self.longest_loop, f.min.value + f.extent.value)
        self.generic_visit(f)

    def visit_Load(self, node: E.Load) -> None:
        self.reads[node.buffer] = None
        self.generic_visit(node)

    def visit_Store(self, node: S.Store) -> None:
        self.writes[node.buffer] = None
        self.generic_visit(node)

    def visit_Allocate(self, a: S.Allocate) -> None:
        self.allocs[a.buffer] = None
        self.generic_visit(a)

    def visit_LastGroup(self, g: S.LastGroup) -> None:
        self.counters[g.counter] = None
        self.reads[g.counter] = self.writes[g.counter] = None
        self.generic_visit(g)


def prepare(stmt: S.Stmt, args: tuple = ()) -> S.Stmt:
    """One kernel's statement as the emitter prints it: the preparation phase of the
    pipeline (``passes/pipeline.py``)."""
    return run_phase(stmt, PREPARE, args)


def split_kernels(func: S.LoweredFunc) -> tuple[list[S.Buffer], list[tuple[str, S.Stmt]]]:
    """``(temps, [(name, stmt)])``: the root temporaries and each root stage's statement."""
    body, temps = func.body, []
    while isinstance(body, S.Allocate):
        if body.buffer.scope != "global":
            raise CodegenError(
                f"buffer '{body.buffer.name}' (scope {body.buffer.scope}) is "
                "computed at the root; only global buffers can live between "
                "kernels: use compute_at to place it inside its consumer"
            )
        temps.append(body.buffer)
        body = body.body
    parts = body.stmts if isinstance(body, S.Seq) else (body,)
    kernels = []
    for p in parts:
        name = p.name if isinstance(p, S.Produce) else "stage"
        hoist = _HoistGlobalAllocs()
        p = hoist.visit(p)
        temps += [b for b in hoist.buffers if b not in temps]
        kernels.append((name, p))
    return temps, kernels


class _HoistGlobalAllocs(StmtMutator):
    """Global buffers allocated inside a kernel (a stage computed at a serial loop of its
    consumer, outside any work-item axis) become temporaries passed to the kernel: OpenCL C
    cannot allocate ``__global`` memory. Under a work-item axis such a buffer would be shared by
    every work-item, so it is refused."""

    def __init__(self) -> None:
        self.buffers: list[S.Buffer] = []
        self.threads: list[str] = []

    def visit_ThreadExtent(self, t: S.ThreadExtent) -> S.Stmt:
        self.threads.append(t.tag)
        try:
            return self.generic_visit(t)
        finally:
            self.threads.pop()

    def visit_Allocate(self, a: S.Allocate) -> S.Stmt:
        if a.buffer.scope != "global":
            return self.generic_visit(a)
        if self.threads:
            raise CodegenError(
                f"buffer '{a.buffer.name}' of scope global is allocated under "
                f"{self.threads[-1]}, where every work-item would share it; give "
                "the stage scope 'local' (per work-item) or 'shared' (per "
                "work-group), or compute it at the root"
            )
        self.buffers.append(a.buffer)
        return self.visit(a.body)


def emit_opencl(func: S.LoweredFunc, fp16: str = "storage") -> KernelSource:
    """The OpenCL C of a lowered function as a ``KernelSource``."""
    temps, parts = split_kernels(func)
    names_used: set[str] = set()
    helpers: set[str] = set()
    helper_defs = dict(HELPERS)
    kernels: list[KernelInfo] = []
    zeroed: list[S.Buffer] = []
    texts: list[str] = []
    uses_half = False
    for stage_name, stmt in parts:
        given = tuple(v for _, v in func.size_args)
        stmt = prepare(stmt, tuple(func.args) + tuple(temps) + given)
        col = _Collect()
        col.visit(stmt)
        kname = _unique(f"{func.name}_{stage_name}", names_used)
        order = [b for b in func.args if b in col.reads or b in col.writes]
        order += [b for b in temps if (b in col.reads or b in col.writes) and b not in order]
        stray = [
            b for b in list(col.reads) + list(col.writes) if b not in order and b not in col.allocs
        ]
        if stray:
            raise CodegenError(
                f"kernel {kname} uses buffer '{stray[0].name}' that is neither an "
                "argument nor allocated"
            )
        gsize, lsize = _ndrange(col.launch)
        scalars = _scalars(func, col, kname)
        em = OpenCLEmitter(Names(KEYWORDS), fp16)
        em.index_type = _index_type(col, [*order, *col.allocs], gsize, scalars)
        # a global buffer written and read in this kernel, not through a last-group sum
        # (whose kernels the tuner checks on the device): TS_RESTRICT_IN
        read_back = not col.counters and any(b in col.reads for b in col.writes if b in order)
        params = [em.param(b, b in col.writes, read_back) for b in order]
        params += [em.scalar_param(v) for v in scalars]
        lines = []
        if col.launch and all(isinstance(n, int) for n in lsize):
            wg = tuple(list(lsize) + [1] * (3 - len(lsize)))
            attr = f"__attribute__((reqd_work_group_size({wg[0]}, {wg[1]}, {wg[2]}))) "
        else:
            attr = ""
        lines.append(f"{em.kernel_prefix} {attr}void {kname}({', '.join(params)}) {{")
        for tag, (var, _) in sorted(col.launch.items(), key=lambda kv: kv[0]):
            value = WORK_ITEM[tag] if em.index_type == "int" else f"(long){WORK_ITEM[tag]}"
            lines.append(f"  const {em.index_type} {em.var(var)} = {value};")
        if col.counters:
            lines.append(f"  {em.local_qualifier} int ts_last_group;")
        zeroed += [b for b in col.counters if b not in zeroed]
        for b in col.allocs:
            if b.scope == "shared":
                lines.append(
                    f"  {em.local_qualifier} {em.ctype(b.dtype)} {em.buf(b)}[{constant_size(b)}] "
                    "__attribute__((aligned(16)));"
                )  # lets vector loads merge
        em.stmt(stmt, 1)
        lines += em.lines
        lines.append("}")
        helpers |= em.helpers
        helper_defs.update(em.helper_defs)
        uses_half = uses_half or em.uses_half
        texts.append("\n".join(lines))
        kernels.append(
            KernelInfo(
                kname, tuple(order), frozenset(col.writes), gsize, lsize, scalars, em.index_type
            )
        )
    head = [f"// {func.name}: generated by tensorsched"]
    if any(dt.element(b.dtype) == "float64" for b in list(func.args) + temps):
        head.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    if uses_half:
        head.append("#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
    if any(b.image for b in func.args):
        head.append(SAMPLER)
    head += [helper_defs[h] for h in sorted(helpers)]
    text = "\n\n".join(head + texts) + "\n"
    return KernelSource(func.name, text, tuple(kernels), tuple(temps), tuple(zeroed))


def _scalars(func: S.LoweredFunc, col: _Collect, kname: str) -> tuple[E.Var, ...]:
    """The size variables kernel ``kname`` reads (free variables of its statement), in the
    order the function's arguments' shapes name them."""
    free = [v for v in col.vars if v not in col.bound]
    known = func_size_vars(func.args, func.size_args)
    stray = [v for v in free if v not in known]
    if stray:
        raise CodegenError(
            f"kernel {kname} uses the variable '{stray[0].name}', which is neither a loop "
            "variable nor a size in the shape of an argument; every symbolic size must appear "
            "in the shape of an argument (so that a call can bind it)"
        )
    return tuple(v for v in known if v in col.vars)


def _index_type(
    col: _Collect,
    buffers: Sequence[S.Buffer],
    global_size: Sequence[Extent],
    scalars: Sequence[E.Var] = (),
) -> str:
    """``"long"`` when a buffer, a loop or the NDRange of the kernel goes past ``INDEX_LIMIT``
    (then some index arithmetic could overflow ``int``), or an int64 size is passed, else
    ``"int"``. A kernel with symbolic sizes is checked at each call instead: the runtime
    refuses sizes that take an ``int`` kernel past ``INDEX_LIMIT``."""
    sizes = [col.longest_loop, *global_size, *(b.size for b in buffers)]
    largest = max(n for n in sizes if isinstance(n, int))
    wide = largest > INDEX_LIMIT or any(v.dtype == "int64" for v in scalars)
    return "long" if wide else "int"


def _ndrange(
    launch: Mapping[str, tuple[E.Var, Extent]],
) -> tuple[tuple[Extent, ...], tuple[Extent, ...]]:
    if not launch:
        return (1,), (1,)
    dims = 1 + max(DIM[tag[-1]] for tag in launch)
    gsize: list[Extent] = []
    lsize: list[Extent] = []
    for d in "xyz"[:dims]:
        blocks = launch.get(f"blockIdx.{d}", (None, 1))[1]
        threads = launch.get(f"threadIdx.{d}", (None, 1))[1]
        gsize.append(ext_mul(blocks, threads))
        lsize.append(threads)
    return tuple(gsize), tuple(lsize)


def _unique(name: str, used: set[str]) -> str:
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    out, k = base, 0
    while out in used:
        k += 1
        out = f"{base}_{k}"
    used.add(out)
    return out
