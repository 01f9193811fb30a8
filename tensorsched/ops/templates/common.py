"""What the templates share: finding the reduction stage behind an output with epilogues, and
placing it in registers under the output's work-item loops."""

from __future__ import annotations

from ...errors import ScheduleError
from ...ir.tensor import ComputeOp


def inline_epilogue(s, out):
    """The reduction behind ``out``: ``out`` is it, or the last stage of an elementwise chain
    (bias, ReLU, sigmoid) over it, whose inner stages are inlined into ``out``."""
    chain, t = [], out
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


def reduction_and_epilogue(s, out):
    """``(comp, out)``: the stage that accumulates and the one that writes the output.

    With no epilogue, ``comp`` is a ``cache_write(out, "local")`` stage and the output stage
    copies it out; with an elementwise epilogue, the reduction itself accumulates and the
    epilogue's last stage writes the output.
    """
    if out.op.reduce_axis:
        return s.cache_write(out, "local"), out
    return inline_epilogue(s, out), out


def bind_2d(s, stage, by, bx, ty, tx):
    """Bind two block axes and two thread axes (y first, as OpenCL dimension 1)."""
    from ...ir.tensor import thread_axis

    s[stage].bind(by, thread_axis("blockIdx.y"))
    s[stage].bind(bx, thread_axis("blockIdx.x"))
    s[stage].bind(ty, thread_axis("threadIdx.y"))
    s[stage].bind(tx, thread_axis("threadIdx.x"))


def ceil_div(a, b):
    return -(-a // b)


def pow2_upto(n, cap):
    out, v = [], 1
    while v <= min(n, cap):
        out.append(v)
        v *= 2
    return out
