"""``ts.autotvm``: TVM's AutoTVM API over tensorsched's tuner, so that TVM's tutorial "Writing
Tunable Templates and Using the Auto-tuner" runs with ``ts`` in place of ``tvm``::

    @autotvm.template("tutorial/matmul")
    def matmul(N, L, M, dtype):
        ...                                   # a compute, its schedule
        cfg = autotvm.get_config()
        cfg.define_split("tile_y", y, num_outputs=2)
        yo, yi = cfg["tile_y"].apply(s, C, y)
        return s, [A, B, C]

    task = autotvm.task.create("tutorial/matmul", args=(N, L, M, "float32"), target="llvm")
    tuner = autotvm.tuner.RandomTuner(task)
    tuner.tune(n_trial=10, measure_option=autotvm.measure_option(builder="local",
               runner=autotvm.LocalRunner(number=5)),
               callbacks=[autotvm.callback.log_to_file("matmul.log")])
    with autotvm.apply_history_best("matmul.log"):
        with ts.target.Target("llvm"):
            s, arg_bufs = matmul(N, L, M, "float32")
            func = ts.build(s, arg_bufs)

A template is a tensorsched template of kind ``autotvm`` (``Task.args`` holds its arguments),
so tuning is tensorsched's: measured in worker processes, checked against the template's
compute on a plain schedule, logged as JSON lines. ``"llvm"`` is the CPU OpenCL device. See
``docs/tvm_compat.md`` for what differs from TVM.
"""

from . import callback, measure, space, task, tuner
from .measure import LocalBuilder, LocalRunner, measure_option
from .space import (
    AnnotateEntity,
    AutotvmConfigError,
    AutotvmError,
    ConfigEntity,
    ConfigSpace,
    OtherOptionEntity,
    ReorderEntity,
    SplitEntity,
)
from .task import ApplyHistoryBest, apply_history_best, get_config, template

__all__ = [
    "template",
    "get_config",
    "task",
    "tuner",
    "callback",
    "measure",
    "space",
    "measure_option",
    "LocalBuilder",
    "LocalRunner",
    "apply_history_best",
    "ApplyHistoryBest",
    "ConfigSpace",
    "ConfigEntity",
    "SplitEntity",
    "OtherOptionEntity",
    "ReorderEntity",
    "AnnotateEntity",
    "AutotvmError",
    "AutotvmConfigError",
]
