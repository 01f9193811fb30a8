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
``gpu_start`` and ``m_bind``), split-K (``split`` + ``rfactor`` bound to ``blockIdx.z``;
sometimes added in the same kernel, ``group_sum``: the partial sums in global memory computed
at the output's innermost block axis, their tile spread over its work-items or not),
``shared`` tiles filled per outer step of a reduction (``k_tiles``, its split sometimes with
``tail="peel"``, as any split may be), ``double_buffer``,
``transform_layout`` and ``storage_align`` on non-argument stages; illegal cases misuse them
(a mapping that is no permutation, ``offset >= factor``, ``double_buffer("global")``, a layout
on an argument or a double buffer on a stage that is no tile in a loop: refused at lowering).
"""

from .model import MODES, TAGS_BLOCK, TAGS_THREAD, WORKLOADS, Ax, FuzzFailure, Outcome, Raw, Step
from .render import Case, Renderer, to_python
from .run import FuzzStats, run_case, summary_lines
from .strategy import cases

__all__ = [
    "MODES",
    "TAGS_BLOCK",
    "TAGS_THREAD",
    "WORKLOADS",
    "Ax",
    "Case",
    "FuzzFailure",
    "FuzzStats",
    "Outcome",
    "Raw",
    "Renderer",
    "Step",
    "cases",
    "run_case",
    "summary_lines",
    "to_python",
]
