"""``ts.schedule``: TVM's ``te.schedule`` names (the schedule classes, and the helpers that
inline every elementwise, broadcast or injective stage)."""

from __future__ import annotations

from ..errors import LoweringError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.simplify import Extent, extent_expr
from ..ir.tensor import ComputeOp, IterVar, Range, ScanOp
from ..ir.visitor import Visitor
from .bound import infer_bound
from .relations import Fuse, Singleton, Split  # TVM's relation classes (s[T].relations)
from .schedule import Group, IterAttr, Schedule, Stage, create_schedule
from .schedule_ops import schedule_to_stmt

__all__ = [
    "AutoInlineBroadcast",
    "AutoInlineElemWise",
    "AutoInlineInjective",
    "Fuse",
    "Group",
    "IterAttr",
    "InferBound",
    "IterVar",
    "Range",
    "Schedule",
    "ScheduleOps",
    "Singleton",
    "Split",
    "Stage",
    "create_schedule",
]


def InferBound(sch: Schedule) -> dict[IterVar, Range]:  # noqa: N802  (TVM's name)
    """The ranges bound inference gives every loop of the schedule's stages, as TVM's
    ``te.schedule.InferBound``: a ``Range`` (``min``, ``extent``, expressions: ``IntImm``
    when constant, so ``.extent.value`` reads it) per iteration variable, the stages' own axes
    (``op.axis``, ``op.reduce_axis``) and those of their splits and fuses. An attached stage's
    axes cover the region it computes per iteration of its attach loop, their ``min`` an
    expression of the loops around it. Inlined stages have no entry."""
    if not isinstance(sch, Schedule):
        raise LoweringError(
            f"InferBound: expected a schedule (ts.create_schedule), got {type(sch).__name__}"
        )
    b = infer_bound(sch)
    out: dict[IterVar, Range] = {}
    for st in b.stages:
        for iv, (lo, ext) in zip(st.op.axis, b.region[st]):
            out[iv] = Range(extent_expr(lo), extent_expr(ext))
        for iv, ext in b.ext[st].items():
            if iv not in out:
                first: Extent = iv.dom.min if iv.dom is not None and iv.kind == "reduce" else 0
                out[iv] = Range(extent_expr(first), extent_expr(ext))
    return out


def ScheduleOps(sch: Schedule, bounds: object = None) -> S.Stmt:  # noqa: N802  (TVM's name)
    """The schedule's loop nests before the lowering passes (TVM's ``ScheduleOps``; ``bounds``,
    ``InferBound``'s result, is accepted and inferred again). ``ts.lower`` runs this and then
    the passes."""
    return schedule_to_stmt(sch, [])[0]


def AutoInlineElemWise(sch: Schedule) -> None:  # noqa: N802  (TVM's name)
    """Inline every stage that is elementwise (each tensor it reads is read at exactly its own
    axes, in order: ``B[i, j] = f(A[i, j])``) and is not an output, nor scheduled yet."""
    for st in sch.stages:
        if _inlinable(st) and _elementwise(st.op):
            st.compute_inline()


def AutoInlineBroadcast(sch: Schedule) -> None:  # noqa: N802  (TVM's name)
    """Inline every stage that is a broadcast (each tensor it reads is read at some of its
    own axes, in their order, or at 0: ``B[i, j] = f(A[j], C[i, 0])``; elementwise stages
    are broadcasts too) and is not an output, nor scheduled yet."""
    for st in sch.stages:
        if _inlinable(st) and _reads_by_axes(st.op, broadcast=True):
            st.compute_inline()


def AutoInlineInjective(sch: Schedule) -> None:  # noqa: N802  (TVM's name)
    """Inline every stage that is injective (no reduction: transposes, pads, broadcasts and
    elementwise stages) and is not an output, nor scheduled yet."""
    for st in sch.stages:
        if _inlinable(st):
            st.compute_inline()


def _inlinable(st: Stage) -> bool:
    """Not an output, a plain compute of one output without a reduction, and not scheduled
    (no split/fuse, annotation, placement or scope; TVM's ``is_scheduled``, with the scope
    added so that a cache stage stays one)."""
    op = st.op
    return (
        not st.is_output
        and isinstance(op, ComputeOp)
        and not isinstance(op, ScanOp)
        and len(op.bodies) == 1
        and not op.reduce_axis
        and not isinstance(op.bodies[0], E.Reduce)
        and not st.relations
        and not st.attrs
        and st.attach_type == "root"
        and st.scope is None
        and not st.schedule._has_attached(st)
    )


def _elementwise(op: ComputeOp) -> bool:
    return _reads_by_axes(op, broadcast=False)


def _reads_by_axes(op: ComputeOp, broadcast: bool) -> bool:
    """Every tensor ``op`` reads is read at exactly its axes, in order, or (``broadcast``) at
    a subsequence of them, with the constant 0 for a dimension it broadcasts."""
    axes = tuple(iv.var for iv in op.axis)
    ok = True

    def by_axes(indices: tuple[E.Expr, ...]) -> bool:
        if not broadcast:
            return len(indices) == len(axes) and all(i is v for i, v in zip(indices, axes))
        at = 0
        for i in indices:
            if isinstance(i, E.IntImm) and i.value == 0:
                continue
            while at < len(axes) and axes[at] is not i:
                at += 1
            if at == len(axes):
                return False
            at += 1
        return True

    class _V(Visitor):
        def visit_TensorLoad(self, t: E.TensorLoad) -> None:
            nonlocal ok
            if not by_axes(t.indices):
                ok = False
            self.generic_visit(t)

    for b in op.bodies:
        _V().visit(b)
    return ok
