"""``lower``: schedule -> loop-nest IR (``schedule_ops``), then the lowering phase of the
pipeline (``passes/pipeline.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from ..config import config
from ..errors import LoweringError, ScheduleError
from ..ir.expr import Load, Var
from ..ir.parser import check_roundtrip
from ..ir.simplify import size_vars
from ..ir.stmt import Allocate, Buffer, For, LoweredFunc, Stmt, ThreadExtent
from ..ir.tensor import ScanOp, Tensor
from ..ir.visitor import Visitor, free_vars
from ..passes import LOWER, run_phase
from .bound import Bounds
from .schedule import Schedule
from .schedule_ops import schedule_to_stmt


def lower(
    sch: Schedule,
    args: Sequence[Tensor],
    name: str = "default_function",
    simple_mode: bool = False,
) -> LoweredFunc:
    """Lower schedule ``sch`` with arguments ``args`` (tensors, in call order) to loop IR.

    Returns a ``LoweredFunc``; ``print`` shows its body in TVM's style. ``simple_mode`` is
    accepted for TVM compatibility: the printed form is always the simple one. A size
    variable listed among ``args`` (``ts.lower(s, [A, B, n])``) is no array: as in TVM, a call
    gives its value there (``f(a, b, 8)``), or leaves it out to bind it from the arrays'
    shapes.

    As in TVM, an argument may be a stage computed inside another (``compute_at``): it writes
    the argument's array (global memory, absolute indices) with the region it computes at each
    iteration, so the array holds the whole tensor afterwards. An inlined argument
    (``compute_inline``) is not computed: its array is passed and left as it is, as TVM does.
    """
    if not isinstance(sch, Schedule):
        raise LoweringError(f"lower: expected a schedule (ts.create_schedule), got {sch!r}")
    if not isinstance(args, (list, tuple)):
        raise LoweringError(
            f"lower: give the arguments as a list of tensors ([A, B, C]), got {args!r}"
        )
    # a size variable among the arguments (TVM's lower(s, [A, B, n])): a value the call
    # gives there, or binds from the arrays' shapes; not an array of the function
    size_args = tuple((k, a) for k, a in enumerate(args) if isinstance(a, Var) and a.size)
    args = [a for a in args if not (isinstance(a, Var) and a.size)]
    for a in args:
        if not isinstance(a, Tensor):
            raise LoweringError(f"lower: arguments must be tensors, got {a!r}")
    if len({id(a) for a in args}) != len(args):
        raise LoweringError("lower: a tensor is listed twice in the arguments")
    _check_scan_steps(sch)
    stmt, ctx = schedule_to_stmt(sch, args)
    for a in args:
        scan = next((st for op, st in ctx.state_of.items() if op is a.op), None)
        if scan is not None:
            raise LoweringError(
                f"lower: '{a.name}' is the state of scan '{scan.name}' (its "
                "earlier rows), not an array of its own; pass the scan's result instead"
            )
        st = ctx.stage_of(a)
        if st is not None and (st.layout is not None or st.align):
            raise LoweringError(
                f"lower: argument '{a.name}' has a transform_layout or "
                "storage_align, but an argument's layout is that of the array "
                "the caller passes (row-major); use them on cache stages"
            )
        if st is not None and st.attach_type == "scan":
            raise LoweringError(
                f"lower: argument '{a.name}' is the init or update of a scan, computed "
                "into the scan's rows; pass the scan's result instead"
            )
    bufs = [ctx.storage(a)[0] for a in args]
    # user errors first, so that the IR verifier (TS_VERIFY=1) only ever sees complete functions
    missing = [
        op.name for op in sch.outputs if not any(ctx.stage_of(a) is sch.stage_map[op] for a in args)
    ]
    for op in sch.outputs:  # every output of a multi-output compute
        outs = [op.output(k) for k in range(getattr(op, "num_outputs", 1))]
        if len(outs) > 1:
            missing += [t.name for t in outs if not any(a is t for a in args)]
    if missing:
        raise LoweringError(f"lower: output '{missing[0]}' is not among the arguments; add it")
    used = _placeholders_used(stmt)
    absent = [b.name for b in used if b not in bufs]
    if absent:
        raise LoweringError(
            f"lower: input '{absent[0]}' is read but not among the arguments; add it"
        )
    for st in ctx.stages:
        if st.double_buffered and (ctx.scope[st] != "shared" or st.attach_type != "scope"):
            raise LoweringError(
                f"lower: stage '{st.name}' is double-buffered but is not a "
                "'shared' tile computed inside a loop (it has scope "
                f"'{ctx.scope[st]}' and is computed at {st.attach_type}); "
                "double_buffer applies to work-group tiles filled in a "
                "loop: cache_read(..., 'shared') + compute_at"
            )
    given = [v for _, v in size_args]  # sizes the call gives (a split factor's too)
    if _symbolic(ctx):
        _check_sizes(stmt, bufs, given)  # are the sizes and loop variables defined where used?
    stmt = run_phase(stmt, LOWER, [*bufs, *given])
    # an inlined stage listed as an argument is not computed (TVM leaves its array alone)
    outputs = tuple(
        b
        for b, a in zip(bufs, args)
        if (st := ctx.stage_of(a)) is not None and st.attach_type != "inline"
    )
    func = LoweredFunc(name, tuple(bufs), stmt, outputs, size_args)
    if config.roundtrip:  # TS_ROUNDTRIP=1: print, parse, compare
        check_roundtrip(func)
    return func


def _symbolic(ctx: Bounds) -> bool:
    """Whether a loop extent is symbolic or a stage's body reads a size variable."""
    for st in ctx.stages:
        if not all(isinstance(e, int) for e in ctx.ext[st].values()):
            return True
        if any(v.size for b in ctx.bodies[st] for v in free_vars(b)):
            return True
    return False


def _check_sizes(stmt: Stmt, bufs: Sequence[Buffer], given: Sequence[Var] = ()) -> None:
    """Every variable the loops use is defined where it is used: a loop variable inside its
    loop (a reduce axis whose range depends on an index, ``reduce_axis((0, i + 1))``, must
    stay inside the loops of that index), anything else a dimension of an argument's shape (a
    call binds every size from its arrays' shapes) or a size listed among the arguments (the
    call gives it)."""
    known = set(size_vars(tuple(b.shape for b in bufs))) | set(given)
    scope: set[Var] = set()
    loops: set[Var] = set()
    stray: list[Var] = []

    class _V(Visitor):
        def visit_Var(self, v: Var) -> None:
            if v not in scope and v not in known:
                stray.append(v)

        def _scoped(self, var: Var, body: Stmt) -> None:
            scope.add(var)
            loops.add(var)
            self.visit(body)
            scope.discard(var)

        def visit_For(self, f: For) -> None:
            self.visit(f.min)
            self.visit(f.extent)
            self._scoped(f.var, f.body)

        def visit_ThreadExtent(self, t: ThreadExtent) -> None:
            for v in size_vars(t.extent):
                self.visit_Var(v)
            self._scoped(t.var, t.body)

        def visit_Allocate(self, a: Allocate) -> None:
            for v in size_vars(a.buffer.shape):
                self.visit_Var(v)
            self.generic_visit(a)

    _V().visit(stmt)
    if not stray:
        return
    v = stray[0]
    if v in loops:
        raise LoweringError(
            f"lower: the loop variable '{v.name}' is used outside its loop: a reduce axis whose "
            f"range depends on an index runs outside that index's loop '{v.name}'; reorder "
            "the reduce axis inside it"
        )
    raise LoweringError(
        f"lower: the size '{v.name}' is used by the loops but is no dimension of an "
        "argument's shape; a call binds every size from its arrays' shapes, so give some "
        f"argument (a placeholder or an output) a dimension of '{v.name}', or list "
        f"'{v.name}' among the arguments (ts.lower(s, [A, C, {v.name}])) for the call to give"
    )


def _placeholders_used(stmt: Stmt) -> list[Buffer]:
    """Global buffers that are read but not allocated inside the function: its inputs."""
    loaded: dict[Buffer, None] = {}
    allocated: set[Buffer] = set()

    class _V(Visitor):
        def visit_Load(self, node: Load) -> None:
            if node.buffer.scope == "global":
                loaded[node.buffer] = None
            self.generic_visit(node)

        def visit_Allocate(self, a: Allocate) -> None:
            allocated.add(a.buffer)
            self.generic_visit(a)

    _V().visit(stmt)
    return [b for b in loaded if b not in allocated]


def _check_scan_steps(sch: Schedule) -> None:
    """A stage that reads a scan's state (its earlier rows) is part of the scan's step, as in
    TVM's scan group: it must be computed inside the scan's update (where the schedule puts
    it, or inlined), never before the scan, which would read rows not yet written."""
    for scan in sch.stages:
        if not isinstance(scan.op, ScanOp):
            continue
        states = {t.op for t in scan.op.states}
        for st in sch.stages:
            if st.attach_type in ("scan", "inline") or st is scan:
                continue
            if not any(t.op in states for t in st.op.input_tensors):
                continue
            cur = st
            while cur.attach_type == "scope" and cur.attach_stage is not None:
                cur = cur.attach_stage
            if cur.attach_type == "scan" and cur.attach_stage is scan:
                continue
            updates = ", ".join(f"'{t.name}'" for t in scan.op.updates)
            raise ScheduleError(
                "compute_at",
                st,
                f"it reads the state of scan '{scan.name}' (the rows of earlier steps), so "
                f"it is part of the scan's step and must be computed inside its update "
                f"({updates}): s[{st.name}].compute_at(s[update], update.op.axis[0]) or a "
                "loop inside it, or compute_inline (a stage read by two updates cannot be: "
                "compute it once per update, as two stages)",
            )
