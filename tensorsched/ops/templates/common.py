"""What the templates share: finding the reduction stage behind an output with epilogues, and
placing it in registers under the output's work-item loops."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import ScheduleError
from ...ir.tensor import ComputeOp, IterVar, Tensor, thread_axis
from ...schedules.schedule import Schedule, create_schedule
from ..gemm import gemm
from ..nn import epilogue as make_epilogue


def inline_epilogue(s: Schedule, out: Tensor) -> Tensor:
    """The reduction behind ``out``: ``out`` is it, or the last stage of an elementwise chain
    (bias, ReLU, sigmoid) over it, whose inner stages are inlined into ``out``."""
    chain, t = list[Tensor](), out
    while isinstance(t.op, ComputeOp) and not t.op.reduce_axis:
        reads = [x for x in t.op.input_tensors if isinstance(x.op, ComputeOp)]
        if len(reads) != 1:
            raise ScheduleError(
                "template",
                None,
                f"stage '{t.name}' is not an elementwise epilogue of one reduction",
            )
        chain.append(t)
        t = reads[0]
    for mid in chain[1:]:
        s[mid].compute_inline()
    return t


def is_reduction(t: Tensor) -> bool:
    """Whether ``t`` is computed by a reduction (has reduce axes)."""
    return isinstance(t.op, ComputeOp) and bool(t.op.reduce_axis)


def reduction_and_epilogue(s: Schedule, out: Tensor) -> tuple[Tensor, Tensor]:
    """``(comp, out)``: the stage that accumulates and the one that writes the output.

    With no epilogue, ``comp`` is a ``cache_write(out, "local")`` stage and the output stage
    copies it out; with an elementwise epilogue, the reduction itself accumulates and the
    epilogue's last stage writes the output.
    """
    if is_reduction(out):
        return s.cache_write(out, "local"), out
    return inline_epilogue(s, out), out


def bind_2d(s: Schedule, stage: Tensor, by: IterVar, bx: IterVar, ty: IterVar, tx: IterVar) -> None:
    """Bind two block axes and two thread axes (y first, as OpenCL dimension 1)."""
    s[stage].bind(by, thread_axis("blockIdx.y"))
    s[stage].bind(bx, thread_axis("blockIdx.x"))
    s[stage].bind(ty, thread_axis("threadIdx.y"))
    s[stage].bind(tx, thread_axis("threadIdx.x"))


def bind_1d(s: Schedule, stage: Tensor, axis: IterVar, threads: int) -> tuple[IterVar, IterVar]:
    """Split ``axis`` by ``threads`` and bind the parts to ``blockIdx.x`` and ``threadIdx.x``;
    returns ``(outer, inner)``."""
    outer, inner = s[stage].split(axis, threads)
    s[stage].bind(outer, thread_axis("blockIdx.x"))
    s[stage].bind(inner, thread_axis("threadIdx.x"))
    return outer, inner


def declare_gemm(
    M: int, N: int, K: int, layout: str, dtype: str, epilogue: Sequence[str], b_panel: int = 0
) -> tuple[Schedule, Tensor, Tensor, list[Tensor]]:
    """``(schedule, C, O, [A, B, *epilogue inputs, O])``: the GEMM ``C`` of ``layout`` followed by
    the elementwise ``epilogue`` whose last stage is ``O`` (``C`` itself without one); with
    ``b_panel``, C reads B packed into panels (``ops.gemm``)."""
    A, B, C = gemm(M, N, K, layout, dtype, b_panel=b_panel)
    O, extra = make_epilogue(C, epilogue)
    return create_schedule(O.op), C, O, [A, B, *extra, O]
