"""Small GEMM templates for the tuner tests, with the signature of the real ones:
``template(cfg, M, N, K, dtype="float32", epilogue=())`` returning ``(s, [A, B, C])``.

Importing this module registers them (``ts.tune.register_template``) as gemm templates under
their function names, so a task names them as ``"gemm_tiny"``: the tuner's worker processes
import this module because the tests' process registered them from it (``tests`` is on
``sys.path`` through ``conftest.py``, and spawned worker processes inherit ``sys.path``; a
subprocess needs ``PYTHONPATH=tests`` and ``tensorsched tune --import tune_templates``).

- ``gemm_tiny``: a correct GEMM with three knobs (2 x 2 x 2 = 8 points).
- ``gemm_slow``: ``gemm_tiny`` whose measurement takes ``TS_TEST_SLOW`` more seconds (default
  0.4), so that a test can kill the tuner between trials.
- ``gemm_counted``: ``gemm_tiny`` that appends a line ``pid role`` to the file
  ``TS_TEST_COUNT`` names each time it is instantiated (``role``: ``runner`` in the tuner's
  measuring worker, else ``other``).
- ``gemm_planted_wrong``: knob ``bug`` = 1 forgets the last step of the reduction.
- ``gemm_planted_hang``: knob ``hang`` = 1 adds a reduce axis of 2**30 steps that only adds
  zeros (for inputs in [-1, 1]): the right shape and value, but it runs for hours.
- ``gemm_planted_crash``: knob ``crash`` = 1 kills the measuring worker process (as a driver
  crash at run time would), ``crash`` = 2 kills any worker that builds it (as a compiler crash
  would); the tuner's own process is never hit.
- ``gemm_wide``: knob ``threads`` = (128,) asks for work-groups of 128 x 128 work-items.

The measuring worker never calls a template: it runs the kernels that the build pool made
(and builds a candidate itself only when the pool could not). So the faults meant for it
(``gemm_slow``'s delay, ``gemm_planted_crash``'s ``crash`` = 1) are planted around its
per-candidate function, ``tensorsched.tune.measure.measure_one``, when this module is imported
there: the worker imports the task's template module as it starts.
"""

import inspect
import os
import signal
import time

import tensorsched as ts
from tensorsched.ops.gemm import gemm
from tensorsched.tune import register_template

HANG_STEPS = 2**30


def _tiles(cfg, M, N):
    (ty,) = cfg.define_split("tile_y", M, 2, policy="candidates", candidates=[(4,), (8,)])
    (tx,) = cfg.define_split("tile_x", N, 2, policy="candidates", candidates=[(4,), (8,)])
    return ty, tx


def _bind(s, C, ty, tx):
    """Work-groups of ``ty`` x ``tx`` work-items, one output each."""
    i, j = s[C].op.axis
    by, tyy = s[C].split(i, factor=ty)
    bx, txx = s[C].split(j, factor=tx)
    s[C].reorder(by, bx, tyy, txx)
    s[C].bind(by, ts.thread_axis("blockIdx.y"))
    s[C].bind(bx, ts.thread_axis("blockIdx.x"))
    s[C].bind(tyy, ts.thread_axis("threadIdx.y"))
    s[C].bind(txx, ts.thread_axis("threadIdx.x"))


def _in_call(*function_names):
    """Whether one of ``function_names`` (of the tuner's worker code) is on the call stack."""
    return any(f.function in function_names for f in inspect.stack(0))


@register_template("gemm", "gemm_tiny")
def gemm_tiny(cfg, M, N, K, dtype="float32", epilogue=()):
    if epilogue:
        raise ts.TensorschedError("the test templates have no epilogue")
    ty, tx = _tiles(cfg, M, N)
    unroll = cfg.define_knob("unroll", (0, 1))
    A, B, C = gemm(M, N, K, "NN", dtype)
    s = ts.create_schedule(C.op)
    _bind(s, C, ty, tx)
    if unroll:
        ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=4)
        s[C].unroll(ki)
    return s, [A, B, C]


@register_template("gemm", "gemm_slow")
def gemm_slow(cfg, M, N, K, dtype="float32", epilogue=()):
    """Slow where it is measured: see ``_plant_runner_faults``."""
    return gemm_tiny(cfg, M, N, K, dtype, epilogue)


@register_template("gemm", "gemm_counted")
def gemm_counted(cfg, M, N, K, dtype="float32", epilogue=()):
    path = os.environ.get("TS_TEST_COUNT")
    if path:
        with open(path, "a") as f:
            f.write(f"{os.getpid()} {'runner' if _in_call('_runner_main') else 'other'}\n")
    return gemm_tiny(cfg, M, N, K, dtype, epilogue)


@register_template("gemm", "gemm_planted_wrong")
def gemm_planted_wrong(cfg, M, N, K, dtype="float32", epilogue=()):
    """``bug`` = 1 sums k over 0..K-2 only: a plausible off-by-one, wrong by about 1/K (and
    faster than the right kernel, so a tuner that does not check would pick it)."""
    ty, tx = _tiles(cfg, M, N)
    bug = cfg.define_knob("bug", (0, 1))
    A = ts.placeholder((M, K), dtype, name="A")
    B = ts.placeholder((K, N), dtype, name="B")
    k = ts.reduce_axis((0, K - 1 if bug else K), name="k")
    C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    _bind(s, C, ty, tx)
    return s, [A, B, C]


@register_template("gemm", "gemm_planted_hang")
def gemm_planted_hang(cfg, M, N, K, dtype="float32", epilogue=()):
    """``hang`` = 1 adds a reduce axis ``r`` of 2**30 steps:
    ``C[i, j] = sum_{k, r} (r == 0 ? A[i, k] * B[k, j] : (A[i, r % K] > 2 ? 1 : 0))``.
    The inputs of a task lie in [-1, 1], so the value is the GEMM's, but the compiler cannot
    know that: every step loads and compares, and each work-item runs K * 2**30 of them
    (hours on a CPU device; K = 16 on PoCL: still running after 75 s)."""
    (tx,) = cfg.define_split("tile_x", N, 2, policy="candidates", candidates=[(4,), (8,)])
    hang = cfg.define_knob("hang", (0, 1))
    A = ts.placeholder((M, K), dtype, name="A")
    B = ts.placeholder((K, N), dtype, name="B")
    k = ts.reduce_axis((0, K), name="k")
    if hang:
        r = ts.reduce_axis((0, HANG_STEPS), name="r")
        one, zero = ts.const(1, dtype), ts.const(0, dtype)
        C = ts.compute(
            (M, N),
            lambda i, j: ts.sum(
                ts.if_then_else(
                    r.equal(0), A[i, k] * B[k, j], ts.if_then_else(A[i, r % K] > 2, one, zero)
                ),
                axis=[k, r],
            ),
            name="C",
        )
    else:
        C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    _bind(s, C, 4, tx)
    return s, [A, B, C]


@register_template("gemm", "gemm_planted_crash")
def gemm_planted_crash(cfg, M, N, K, dtype="float32", epilogue=()):
    """``crash`` = 1 kills the measuring worker; ``crash`` = 2 kills the prebuild pool worker
    and the measuring worker alike. Both with SIGKILL, as the kernel would if it crashed."""
    (tx,) = cfg.define_split("tile_x", N, 2, policy="candidates", candidates=[(4,), (8,)])
    crash = cfg.define_knob("crash", (0, 1, 2))
    if crash == 2 and _in_call("measure_one", "prebuild"):  # crash = 1: see below
        os.kill(os.getpid(), signal.SIGKILL)
    A, B, C = gemm(M, N, K, "NN", dtype)
    s = ts.create_schedule(C.op)
    _bind(s, C, 4, tx)
    return s, [A, B, C]


@register_template("gemm", "gemm_wide")
def gemm_wide(cfg, M, N, K, dtype="float32", epilogue=()):
    """``threads`` = (t,) binds t x t work-items per work-group: 128 gives 16384, over the
    limit of any OpenCL device."""
    (t,) = cfg.define_split("threads", M, 2, policy="candidates", candidates=[(4,), (8,), (128,)])
    A, B, C = gemm(M, N, K, "NN", dtype)
    s = ts.create_schedule(C.op)
    _bind(s, C, t, t)
    return s, [A, B, C]


def _plant_runner_faults():
    """Wrap the measuring worker's per-candidate function: ``gemm_slow`` sleeps
    ``TS_TEST_SLOW`` seconds there, ``gemm_planted_crash`` with ``crash`` = 1 kills it."""
    from tensorsched.tune import measure

    real = measure.measure_one

    def measure_one(task_dict, config, *args, **kwargs):
        name = task_dict["template"]
        if name == "gemm_slow":
            time.sleep(float(os.environ.get("TS_TEST_SLOW", "0.4")))
        if name == "gemm_planted_crash" and config.get("crash") == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(task_dict, config, *args, **kwargs)

    measure.measure_one = measure_one


if _in_call("_runner_main"):  # imported in the tuner's measuring worker
    _plant_runner_faults()
