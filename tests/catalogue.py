"""The catalogue of bad inputs: each misuse of the compute language, the schedule primitives,
lowering and ``build``, calling a module, the device, the tuner's command line and files, and
the text parsers, with the error it raises.

``CASES`` is the single list, made of one function per topic (``TOPICS``). Each ``BadInput`` holds the code that triggers the misuse (run
after a small named setup), so the table in ``docs/errors.md`` shows exactly what ran;
``BadInput.trigger`` is that code as a callable. ``scripts/make_error_catalogue.py`` writes the
table from ``CASES``; ``tests/test_catalogue.py`` runs every case (one test each) and checks
that the file is up to date.

A case expects a ``TensorschedError`` subclass, except two kinds: a damaged tuning log gives
a ``UserWarning`` (it is read up to the damage, the damaged lines are skipped and the file is
never rewritten), and a command-line usage error is ``argparse``'s exit with status 2
(``SystemExit``).
"""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
import warnings
from dataclasses import dataclass

from tensorsched.errors import (
    CodegenError,
    ComputeError,
    LoweringError,
    ParseError,
    RuntimeCallError,
    ScheduleError,
    TensorschedError,
)
from tensorsched.frontend.onnx import OnnxImportError, UnsupportedOperatorError
from tensorsched.graph import GraphError
from tensorsched.ops.space import ConfigError
from tensorsched.ops.templates import TemplateError
from tensorsched.runtime.device import DeviceError
from tensorsched.runtime.module import LaunchError
from tensorsched.runtime.tvm_api import TargetError
from tensorsched.tune.autotvm import AutotvmError
from tensorsched.tune.distributed import ClusterError
from tensorsched.tune.log import LogBusyError, LogError
from tensorsched.tune.task import ShapeError, TaskError

# ---------------------------------------------------------------------------- setups

SETUPS = {
    "": "",
    "gemm": """\
A = ts.placeholder((7, 3), name="A")
B = ts.placeholder((3, 5), name="B")
k = ts.reduce_axis((0, 3), name="k")
C = ts.compute((7, 5), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
s = ts.create_schedule(C.op)
i, j = s[C].op.axis
""",
    "chain": """\
A = ts.placeholder((5,), name="A")
B = ts.compute((5,), lambda i: A[i] * 2.0, name="B")
C = ts.compute((5,), lambda i: B[i] + 1.0, name="C")
s = ts.create_schedule(C.op)
""",
    "module": """\
A = ts.placeholder((7, 3), name="A")
B = ts.placeholder((3, 5), name="B")
k = ts.reduce_axis((0, 3), name="k")
C = ts.compute((7, 5), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
mod = ts.build(ts.create_schedule(C.op), [A, B, C], target="python", name="gemm")
a, b, c = np.ones((7, 3), "float32"), np.ones((3, 5), "float32"), np.zeros((7, 5), "float32")
""",
    "log": """\
import os
from unittest import mock
from tensorsched.tune.log import LogWriter, Record, read_log
log = os.path.join(tmp, "tune.jsonl")
task = {"kind": "gemm", "template": "cpu", "shape": [16, 16, 16], "dtype": "float32", \
"epilogue": []}
w = LogWriter(log)
w.append(Record(task, "cl / dev", {"vec": 4}, "ok", device_ms=1.0, gflops=0.008192))
w.append(Record(task, "cl / dev", {"vec": 8}, "ok", device_ms=2.0, gflops=0.004096))
good = open(log, "rb").read()
""",
    "device arrays": """\
import pyopencl as cl
import pyopencl.array as cla
A = ts.placeholder((4, 4), name="A")
B = ts.compute((4, 4), lambda i, j: A[i, j] * 2.0, name="B")
mod = ts.build(ts.create_schedule(B.op), [A, B], target="opencl")
x, y = np.arange(16, dtype="float32").reshape(4, 4), np.zeros((4, 4), "float32")
""",
    "graph": """\
g = ts.graph.Graph("net")
x = g.input("x", (1, 3, 8, 8))
""",
}


@dataclass(frozen=True)
class BadInput:
    """One misuse: ``what`` it is, the ``code`` that does it (after ``SETUPS[setup]``), and
    the ``error`` class it must raise. ``device``: it needs an OpenCL device; ``machine``:
    its message names this machine's devices or limits (compared loosely)."""

    area: str
    what: str
    code: str
    error: type
    setup: str = ""
    device: bool = False
    machine: bool = False

    @property
    def trigger(self):
        """The misuse as a callable (it raises, or warns)."""
        return lambda: run(self, reraise=True)


@dataclass
class Outcome:
    error: type | None  # what was raised (or warned); None: nothing
    message: str  # its first line, with temporary paths as <tmp>
    exception: BaseException | None = None


class UsageError(SystemExit):
    """``argparse`` rejected a command line (exit status 2); ``str()`` is its message."""

    def __init__(self, message):
        super().__init__(2)
        self.message = message

    def __str__(self):
        return self.message


def cli(argv):
    """Run ``tensorsched ARGV``; re-raise the ``TensorschedError`` it reported (after checking
    that it printed it and exited with status 2), or ``UsageError`` for argparse's exit."""
    import tensorsched.cli as cli_module

    caught = []

    def spy(real):
        def run_command(args):
            try:
                return real(args)
            except TensorschedError as exc:
                caught.append(exc)
                raise

        return run_command

    saved = dict(cli_module.COMMANDS)  # command name -> the function that runs it
    err, out = io.StringIO(), io.StringIO()
    try:
        for n, fn in saved.items():
            cli_module.COMMANDS[n] = spy(fn)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                status = cli_module.main(list(argv))
            except SystemExit as exc:
                lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
                raise UsageError(lines[-1] if lines else f"exit status {exc.code}") from None
    finally:
        cli_module.COMMANDS.update(saved)
    if caught:
        assert status == 2 and f"tensorsched: {caught[0]}" in err.getvalue(), err.getvalue()
        raise caught[0]
    return status


def _first_line(x, tmp):
    text = str(x).strip().splitlines()
    line = text[0] if text else ""
    line = line.replace(tmp, "<tmp>")
    line = re.sub(r"\bpid \d+", "pid N", line)  # a lock holder's pid changes every run
    return re.sub(r"0x[0-9a-fA-F]{6,}", "0x...", line)


def run(case, reraise=False):
    """Run ``case``; return its ``Outcome`` (or, with ``reraise``, raise what it raised)."""
    import numpy as np

    import tensorsched as ts

    with tempfile.TemporaryDirectory(prefix="ts_catalogue_") as tmp:
        ns = {"ts": ts, "np": np, "cli": cli, "tmp": tmp}
        code = SETUPS[case.setup] + case.code + "\n"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                exec(compile(code, f"<catalogue: {case.what}>", "exec"), ns)
            except BaseException as exc:  # noqa: BLE001
                if reraise or isinstance(exc, KeyboardInterrupt):
                    raise
                return Outcome(type(exc), _first_line(exc, tmp), exc)
        for w in caught:
            if isinstance(case.error, type) and issubclass(w.category, case.error):
                if reraise:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
                return Outcome(w.category, _first_line(w.message, tmp))
    return Outcome(None, "")


# ---------------------------------------------------------------------------- the cases


# short names of the error classes most rows expect
C, S, L, R = ComputeError, ScheduleError, LoweringError, RuntimeCallError
O = OnnxImportError


def _rows(area, setup, rows, **kw):
    """``BadInput`` s of one topic from ``(what, code, error)`` rows."""
    return [BadInput(area, what, code, error, setup, **kw) for what, code, error in rows]


def compute_language():
    """Compute language."""
    return _rows(
        "compute language",
        "",
        [
            ("placeholder with a zero extent", 'ts.placeholder((5, 0), name="A")', C),
            ("placeholder with a non-integral float extent", 'ts.placeholder((2.5,), name="A")', C),
            (
                "placeholder of an unknown dtype",
                'ts.placeholder((5,), dtype="float8", name="A")',
                C,
            ),
            (
                "too many indices",
                'A = ts.placeholder((5, 3), name="A")\n'
                'ts.compute((5,), lambda i: A[i, 0, 1], name="C")',
                C,
            ),
            (
                "too few indices",
                'A = ts.placeholder((5, 3), name="A")\n'
                'ts.compute((5,), lambda i: A[i] * 2.0, name="C")',
                C,
            ),
            (
                "a float index",
                'A = ts.placeholder((5,), name="A")\n'
                'ts.compute((5,), lambda i: A[i * 1.5], name="C")',
                C,
            ),
            ("'/' on integers", 'ts.compute((5,), lambda i: i / 2, name="C")', C),
            (
                "'%' on floats",
                'A = ts.placeholder((5,), name="A")\n'
                'ts.compute((5,), lambda i: A[i] % 2.0, name="C")',
                C,
            ),
            (
                "a reduce axis outside a reduction",
                'A = ts.placeholder((5, 3), name="A")\n'
                'k = ts.reduce_axis((0, 3), name="k")\n'
                'ts.compute((5,), lambda i: A[i, k] * 2.0, name="C")',
                C,
            ),
            (
                "a reduction inside a larger expression",
                'A = ts.placeholder((5, 3), name="A")\n'
                'k = ts.reduce_axis((0, 3), name="k")\n'
                'ts.compute((5,), lambda i: ts.sum(A[i, k], axis=k) * 2.0, name="C")',
                C,
            ),
            (
                "a reduction over a data axis",
                'A = ts.placeholder((5, 3), name="A")\n'
                'ts.compute((5,), lambda i: ts.sum(A[i, 0], axis=i), name="C")',
                C,
            ),
            (
                "the same reduce axis twice",
                'A = ts.placeholder((5, 3), name="A")\n'
                'k = ts.reduce_axis((0, 3), name="k")\n'
                'ts.compute((5,), lambda i: ts.max(A[i, k], axis=[k, k]), name="C")',
                C,
            ),
            ("an empty reduce axis", 'ts.reduce_axis((3, 3), name="k")', C),
            ("a reduce axis that is not a range", 'ts.reduce_axis("x", name="k")', C),
            (
                "a Python `if` on an expression",
                'A = ts.placeholder((5,), name="A")\n'
                'ts.compute((5,), lambda i: A[i] if i > 2 else 0.0, name="C")',
                C,
            ),
            (
                "if_then_else on a non-boolean",
                'A = ts.placeholder((5,), name="A")\n'
                'ts.compute((5,), lambda i: ts.if_then_else(A[i], 1.0, 0.0), name="C")',
                C,
            ),
            (
                "a float intrinsic of an integer",
                'ts.compute((5,), lambda i: ts.exp(i), name="C")',
                C,
            ),
            ("a function of the wrong arity", 'ts.compute((5, 3), lambda i: i, name="C")', C),
            (
                "a function returning an empty list",
                'ts.compute((5,), lambda i: [], name="C")',
                C,
            ),
            ("a body that is not a function", 'ts.compute((5,), "A[i] * 2", name="C")', C),
            ("a body that is not an expression", 'ts.compute((5,), lambda i: "x", name="C")', C),
            (
                "astype to an unknown dtype",
                'A = ts.placeholder((5,), name="A")\nA[0].astype("int8")',
                C,
            ),
            ("an integer const that is not whole", 'ts.const(1.5, "int32")', C),
            ("an integer const that does not fit its dtype", 'ts.const(2**70, "int32")', C),
            ("a float const its dtype would round to infinity", 'ts.const(1e39, "float32")', C),
            (
                "a Python integer beyond any float in an expression",
                'A = ts.placeholder((5,), name="A")\nA[0] * 10**400',
                C,
            ),
            (
                "a placeholder with more elements than int64 counts",
                'ts.placeholder((2**32, 2**32), name="A")',
                C,
            ),
            ("a const that is not a number", 'ts.const("1.5")', C),
            (
                "pad with a width per dimension missing",
                'A = ts.placeholder((5,), name="A")\nts.pad(A, [1, 1], name="P")',
                C,
            ),
            (
                "pad with a negative width",
                'A = ts.placeholder((5,), name="A")\nts.pad(A, [-1], name="P")',
                C,
            ),
            ("iterating over a tensor", 'A = ts.placeholder((5,), name="A")\nlist(A)', C),
            (
                "conv2d whose kernel does not fit",
                "from tensorsched.ops.conv2d import ConvShape, "
                "conv2d_nchw\nconv2d_nchw(ConvShape(1, 1, 2, 2, 1, 5, 5, 1, 0))",
                C,
            ),
        ],
    )


def schedule_primitives_chain():
    """Schedule primitives (setup: chain)."""
    return _rows(
        "schedule primitives",
        "chain",
        [
            ("split an axis of another stage", "s[C].split(s[B].op.axis[0], 2)", S),
            (
                "reorder with an axis of another stage",
                "s[C].reorder(s[C].op.axis[0], s[B].op.axis[0])",
                S,
            ),
            (
                "compute_at a stage that does not read it",
                "s[C].compute_at(s[B], s[B].op.axis[0])",
                S,
            ),
            ("compute_at the axis of another stage", "s[B].compute_at(s[C], s[B].op.axis[0])", S),
            ("compute_at a tensor instead of a stage", "s[B].compute_at(C, s[C].op.axis[0])", S),
            ("compute_at itself", "s[B].compute_at(s[B], s[B].op.axis[0])", S),
            (
                "compute_at a stage of another schedule",
                "s2 = ts.create_schedule(C.op)\ns[B].compute_at(s2[C], s2[C].op.axis[0])",
                S,
            ),
            (
                "a primitive on an inlined stage",
                "s[B].compute_inline()\ns[B].split(s[B].op.axis[0], 2)",
                S,
            ),
            ("cache_read for a stage that does not read it", 's.cache_read(A, "shared", [C])', S),
            ("set_scope to an unknown scope", 's[B].set_scope("private")', S),
            ("s[...] of a placeholder", "s[A]", S),
            ("create_schedule of a placeholder", "ts.create_schedule(A.op)", S),
        ],
    )


def schedule_primitives_gemm():
    """Schedule primitives (setup: gemm)."""
    return _rows(
        "schedule primitives",
        "gemm",
        [
            ("split an axis twice", "s[C].split(i, 2)\ns[C].split(i, 3)", S),
            ("split a fused axis", "s[C].fuse(i, j)\ns[C].split(j, 3)", S),
            ("split by zero", "s[C].split(i, 0)", S),
            ("split by a float", "s[C].split(i, 2.5)", S),
            ("split by a factor beyond int64", "s[C].split(i, 2**64)", S),
            ("split with factor and nparts", "s[C].split(i, factor=2, nparts=2)", S),
            ("split with neither factor nor nparts", "s[C].split(i)", S),
            ("split an expression", "s[C].split(i + 1, 2)", S),
            (
                "split a bound axis",
                's[C].bind(i, ts.thread_axis("blockIdx.x"))\ns[C].split(i, 2)',
                S,
            ),
            ("tile one axis with itself", "s[C].tile(i, i, 2, 2)", S),
            ("fuse axes that are not adjacent", "s[C].reorder(i, k, j)\ns[C].fuse(i, j)", S),
            ("fuse inner before outer", "s[C].fuse(j, i)", S),
            ("fuse a data axis with a reduce axis", "s[C].fuse(j, k)", S),
            ("reorder with an axis twice", "s[C].reorder(i, j, i)", S),
            ("vectorize a reduce axis", "s[C].vectorize(k)", S),
            ("parallel on a reduce axis", "s[C].parallel(k)", S),
            (
                "vectorize a bound axis",
                's[C].bind(i, ts.thread_axis("blockIdx.x"))\ns[C].vectorize(i)',
                S,
            ),
            ("pragma with a non-string key", "s[C].pragma(i, 3)", S),
            (
                "bind an axis twice",
                's[C].bind(i, ts.thread_axis("blockIdx.x"))\n'
                's[C].bind(i, ts.thread_axis("blockIdx.y"))',
                S,
            ),
            (
                "bind one tag to two axes",
                's[C].bind(i, ts.thread_axis("threadIdx.x"))\n'
                's[C].bind(j, ts.thread_axis("threadIdx.x"))',
                S,
            ),
            (
                "bind a reduce axis to a block index",
                's[C].bind(k, ts.thread_axis("blockIdx.x"))',
                S,
            ),
            ("bind to a string", 's[C].bind(i, "blockIdx.x")', S),
            (
                "bind a vectorized axis",
                's[C].vectorize(j)\ns[C].bind(j, ts.thread_axis("threadIdx.x"))',
                S,
            ),
            ("an unknown thread tag", 'ts.thread_axis("threadIdx.w")', S),
            (
                "thread_axis given a range that does not start at 0",
                'ts.thread_axis((1, 32), "threadIdx.x")',
                S,
            ),
            ("compute_inline an output", "s[C].compute_inline()", S),
            (
                "compute_at an output",
                'D = ts.compute((7, 5), lambda i, j: C[i, j] + 1.0, name="D")\n'
                "s = ts.create_schedule([C.op, D.op])\ns[C].compute_at(s[D], s[D].op.axis[0])",
                S,
            ),
            (
                "compute_inline a reduction",
                'D = ts.compute((7, 5), lambda i, j: C[i, j] + 1.0, name="D")\n'
                "s = ts.create_schedule(D.op)\ns[C].compute_inline()",
                S,
            ),
            (
                "cache_write after binding",
                'io, ii = s[C].split(i, 2)\ns[C].bind(io, ts.thread_axis("blockIdx.x"))\n'
                's.cache_write(C, "local")',
                S,
            ),
            ("cache_read to an unknown scope", 's.cache_read(A, "texture", [C])', S),
            ("cache_write to an unknown scope", 's.cache_write(C, "register")', S),
            ("rfactor the only reduction loop", "s.rfactor(C, k)", S),
            ("rfactor a data axis", "ko, ki = s[C].split(k, 2)\ns.rfactor(C, i)", S),
            (
                "rfactor after splitting a data axis",
                "s[C].split(i, 2)\nko, ki = s[C].split(k, 2)\ns.rfactor(C, ko)",
                S,
            ),
            (
                "transform_layout that is not a permutation",
                's[s.cache_write(C, "local")].transform_layout(lambda x, y: [x, x])',
                S,
            ),
            (
                "transform_layout given no function",
                's[s.cache_read(A, "shared", [C])].transform_layout([1, 0])',
                S,
            ),
            (
                "storage_align with an offset not below the factor",
                'AA = s.cache_read(A, "shared", [C])\ns[AA].storage_align(AA.op.axis[0], 4, 4)',
                S,
            ),
            (
                "storage_align of another stage's axis",
                'AA = s.cache_read(A, "shared", [C])\ns[AA].storage_align(i, 32, 1)',
                S,
            ),
            (
                "double_buffer into an unknown scope",
                's[s.cache_read(A, "shared", [C])].double_buffer("global")',
                S,
            ),
            ("use_image on a computed tensor", "s.use_image(C)", S),
            ("use_image on an input whose width is not a multiple of 4", "s.use_image(A)", S),
            (
                "s[...] of a tensor of another schedule",
                'C2 = ts.compute((7, 5), lambda i, j: A[i, 0] + B[0, j], name="C2")\ns[C2]',
                S,
            ),
        ],
    )


def lowering_gemm():
    """Lowering (setup: gemm)."""
    return _rows(
        "lowering",
        "gemm",
        [
            (
                "a global stage computed at a serial loop outside the kernel's thread axes",
                'AA = s.cache_read(A, "global", [C])\n'
                's[C].bind(j, ts.thread_axis("blockIdx.x"))\n'
                "s[AA].compute_at(s[C], i)\nts.lower(s, [A, B, C])",
                S,
            ),
            (
                "a bound axis inside the reduction loop",
                "io, ii = s[C].split(i, 2)\n"
                "s[C].reorder(io, j, k, ii)\n"
                's[C].bind(io, ts.thread_axis("blockIdx.x"))\n'
                's[C].bind(j, ts.thread_axis("blockIdx.y"))\n'
                's[C].bind(ii, ts.thread_axis("threadIdx.x"))\nts.lower(s, [A, B, C])',
                S,
            ),
            (
                "two extents of one thread tag in a kernel",
                'AA = s.cache_read(A, "shared", [C])\n'
                "bx, by, tx, ty = s[C].tile(i, j, 4, 4)\n"
                'for ax, tag in ((bx, "blockIdx.x"), (by, "blockIdx.y"), (tx, "threadIdx.x"), '
                '(ty, "threadIdx.y")):\n    s[C].bind(ax, ts.thread_axis(tag))\n'
                "s[AA].compute_at(s[C], by)\nao, ai = s[AA].split(s[AA].op.axis[0], nparts=2)\n"
                's[AA].bind(ao, ts.thread_axis("threadIdx.x"))\nts.lower(s, [A, B, C])',
                L,
            ),
            (
                "an attached stage binds a tag its kernel does not",
                'AA = s.cache_read(A, "shared", [C])\ns[C].bind(i, ts.thread_axis("blockIdx.x"))\n'
                "s[AA].compute_at(s[C], i)\n"
                's[AA].bind(s[AA].op.axis[1], ts.thread_axis("threadIdx.x"))\nts.lower(s, [A, B, C])',
                S,
            ),
            (
                "transform_layout on an argument",
                "s[C].transform_layout(lambda x, y: [y, x])\nts.lower(s, [A, B, C])",
                L,
            ),
            (
                "storage_align of the innermost storage dimension",
                'CL = s.cache_write(C, "local")\ns[CL].storage_align(s[CL].op.axis[1], 4, 1)\n'
                "ts.lower(s, [A, B, C])",
                L,
            ),
            (
                "double_buffer on a stage computed at the root",
                'AA = s.cache_read(A, "shared", [C])\ns[AA].double_buffer()\nts.lower(s, [A, B, C])',
                L,
            ),
            (
                "a shared stage in a kernel without thread axes",
                'AA = s.cache_read(A, "shared", [C])\ns[AA].compute_at(s[C], i)\n'
                "ts.lower(s, [A, B, C])",
                L,
            ),
            (
                "a shared stage bound to a block axis its consumer does not bind",
                'AA = s.cache_read(A, "shared", [C])\ns[C].bind(i, ts.thread_axis("blockIdx.x"))\n'
                's[C].bind(j, ts.thread_axis("threadIdx.x"))\ns[AA].compute_at(s[C], i)\n'
                's[AA].bind(s[AA].op.axis[1], ts.thread_axis("blockIdx.y"))\nts.lower(s, [A, B, C])',
                S,
            ),
            (
                "a local stage bound to a thread axis its consumer does not bind",
                'AL = s.cache_read(A, "local", [C])\ns[C].bind(i, ts.thread_axis("blockIdx.x"))\n'
                's[C].bind(j, ts.thread_axis("threadIdx.x"))\ns[AL].compute_at(s[C], j)\n'
                's[AL].bind(s[AL].op.axis[1], ts.thread_axis("threadIdx.y"))\nts.lower(s, [A, B, C])',
                S,
            ),
            (
                "a shared root stage not spread over its consumer's threads",
                's.cache_read(A, "shared", [C])\n'
                's[C].bind(j, ts.thread_axis("threadIdx.x"))\n'
                's[C].bind(i, ts.thread_axis("blockIdx.x"))\nts.lower(s, [A, B, C])',
                L,
            ),
            ("an input missing from the arguments", "ts.lower(s, [A, C])", L),
            ("the output missing from the arguments", "ts.lower(s, [A, B])", L),
            ("an argument that is not a tensor", 'ts.lower(s, [A, B, "C"])', L),
            ("the arguments not in a list", "ts.lower(s, C)", L),
            ("an argument listed twice", "ts.lower(s, [A, B, C, A])", L),
            ("lower something that is not a schedule", "ts.lower(C, [A, B, C])", L),
        ],
    )


def lowering_chain():
    """Lowering (setup: chain)."""
    return _rows(
        "lowering",
        "chain",
        [
            (
                "compute_at an axis fused afterwards as the outer one",
                'X = ts.placeholder((5, 3), name="X")\n'
                'P = ts.compute((5, 3), lambda i, j: X[i, j] * 2.0, name="P")\n'
                'Q = ts.compute((5, 3), lambda i, j: P[i, j] + 1.0, name="Q")\n'
                "s = ts.create_schedule(Q.op)\ni, j = s[Q].op.axis\n"
                "s[P].compute_at(s[Q], i)\ns[Q].fuse(i, j)\nts.lower(s, [X, Q])",
                S,
            ),
            (
                "a local root stage read by two kernels",
                'D = ts.compute((5,), lambda i: B[i] * C[i], name="D")\n'
                "s = ts.create_schedule(D.op)\n"
                's[B].set_scope("local")\nts.build(s, [A, D], target="python")',
                L,
            ),
            (
                "compute_at one consumer while another reads it too",
                'D = ts.compute((5,), lambda i: B[i] * C[i], name="D")\ns = ts.create_schedule(D.op)\n'
                "s[B].compute_at(s[C], s[C].op.axis[0])\nts.lower(s, [A, D])",
                S,
            ),
        ],
    )


def build_gemm():
    """Build (setup: gemm)."""
    return _rows(
        "build",
        "gemm",
        [
            (
                "a target other than OpenCL",
                'ts.build(s, [A, B, C], target="cuda")',
                TensorschedError,
            ),
            ("a schedule without its arguments", 'ts.build(s, target="python")', TensorschedError),
            (
                "something that is neither a schedule nor a lowered function",
                'ts.build(C, [A, B, C], target="python")',
                TensorschedError,
            ),
        ],
    )


def build_chain():
    """Build (setup: chain)."""
    return _rows(
        "build",
        "chain",
        [
            (
                "a global stage computed under a thread axis",
                'BG = s.cache_read(B, "global", [C])\n'
                's[C].bind(s[C].op.axis[0], ts.thread_axis("threadIdx.x"))\n'
                "s[BG].compute_at(s[C], s[C].op.axis[0])\n"
                'ts.build(s, [A, C], target="opencl")',
                CodegenError,
            ),
        ],
        device=True,
    )


def calling_a_module():
    """Calling a module (setup: module)."""
    return _rows(
        "calling a module",
        "module",
        [
            ("an array of the wrong shape", "mod(a, b, np.zeros((5, 7), 'float32'))", R),
            ("an array of the wrong dtype", "mod(a.astype('float64'), b, c)", R),
            ("too few arrays", "mod(a, b)", R),
            ("a list instead of an array", "mod(a.tolist(), b, c)", R),
            ("None instead of an array", "mod(a, b, None)", R),
            ("a read-only output array", "c.flags.writeable = False\nmod(a, b, c)", R),
        ],
    )


def tvm_runtime_api():
    """TVM's runtime API (setup: module)."""
    return _rows(
        "TVM's runtime API",
        "module",
        [
            ("a device kind tensorsched has no runtime for", 'ts.device("tpu", 0)', TargetError),
            ("an array on a CUDA device", "ts.nd.array(a, ts.cuda(0))", TargetError),
            ("assigning part of an nd array", "x = ts.nd.array(a)\nx[0] = a[0]", TensorschedError),
            ("copyfrom an array of another shape", "ts.nd.array(a).copyfrom(b)", R),
            (
                "an nd array of the wrong shape",
                "mod(ts.nd.array(a), ts.nd.array(b), ts.nd.empty((5, 7)))",
                R,
            ),
            ("time_evaluator of a function the module lacks", 'mod.time_evaluator("main")', R),
            (
                "time_evaluator with an option tensorsched lacks",
                "mod.time_evaluator(mod.entry_name, ts.cpu(0), cache_flush_bytes=1 << 20)",
                R,
            ),
            (
                "load_module of a file export_library did not write",
                'p = tmp + "/lib.so"\nopen(p, "wb").write(b"\\x7fELF")\nts.runtime.load_module(p)',
                TensorschedError,
            ),
        ],
    )


def opencl_device():
    """Device."""
    return _rows(
        "device",
        "",
        [
            (
                "a work-group larger than the device allows",
                'A = ts.placeholder((8192,), name="A")\n'
                'B = ts.compute((8192,), lambda i: A[i] * 2.0, name="B")\ns = ts.create_schedule(B.op)\n'
                's[B].bind(s[B].op.axis[0], ts.thread_axis("threadIdx.x"))\n'
                'mod = ts.build(s, [A, B], target="opencl")\n'
                'mod(np.ones(8192, "float32"), np.zeros(8192, "float32"))',
                LaunchError,
            ),
            (
                "a device name that matches no device",
                'from tensorsched.runtime.device import find_device\nfind_device("no such device")',
                DeviceError,
            ),
            (
                "cores kept awake that this process may not run on",
                "import os\nwith ts.runtime.awake_cores([max(os.sched_getaffinity(0)) + 1]):\n"
                "    pass",
                R,
            ),
        ],
        device=True,
        machine=True,
    )


def device_arrays():
    """Calling a module with device arrays (setup: device arrays)."""
    return _rows(
        "calling a module",
        "device arrays",
        [
            (
                "a transposed pyopencl array",
                "mod(cla.to_device(mod.device.queue, x).T, y)",
                R,
            ),
            (
                "a pyopencl array of another context",
                "q = cl.CommandQueue(cl.Context([mod.device.cl_device]))\n"
                "mod(cla.to_device(q, x), y)",
                R,
            ),
        ],
        device=True,
    )


def registering_templates():
    """Registering templates."""
    return _rows(
        "registering templates",
        "",
        [
            (
                "a template name already registered (a built-in one)",
                "from tensorsched.tune import register_template\n"
                'register_template("gemm", "cpu", lambda cfg, M, N, K: None)',
                TemplateError,
            ),
            (
                "a module path as a template name",
                "from tensorsched.tune import register_template\n"
                'register_template("gemm", "os:system", lambda cfg, M, N, K: None)',
                TemplateError,
            ),
            (
                "a template of an unknown operator",
                "from tensorsched.tune import register_template\n"
                'register_template("matmul", "x", lambda cfg: None)',
                TemplateError,
            ),
            (
                "an AutoTVM runner over RPC",
                "from tensorsched import autotvm\n"
                'autotvm.measure_option(builder="local", runner="rpc")',
                AutotvmError,
            ),
            (
                "autotvm.get_config() outside a template",
                "from tensorsched import autotvm\nautotvm.get_config()",
                AutotvmError,
            ),
            (
                "apply_history_best on a log that is not there",
                "from tensorsched import autotvm\n"
                'autotvm.apply_history_best("/nonexistent/matmul.log")',
                AutotvmError,
            ),
        ],
    )


def tuner_command_line():
    """Tuner command line."""
    return _rows(
        "tuner command line",
        "",
        [
            ("an unknown operator", 'cli(["tune", "matmul", "--shape", "16,16,16"])', SystemExit),
            ("an unknown command", 'cli(["autotune"])', SystemExit),
            ("no shape", 'cli(["tune", "gemm", "--template", "cpu"])', TensorschedError),
            (
                "a shape that is not integers",
                'cli(["tune", "gemm", "--shape", "a,b,c", "--template", "cpu"])',
                TensorschedError,
            ),
            (
                "a GEMM shape of two numbers",
                'cli(["tune", "gemm", "--shape", "16,16", "--template", "cpu"])',
                TaskError,
            ),
            (
                "a zero extent",
                'cli(["tune", "gemm", "--shape", "0,16,16", "--template", "cpu"])',
                TaskError,
            ),
            (
                "a depthwise conv's shape of three numbers",
                'cli(["tune", "depthwise_conv2d", "--shape", "1,8,10"])',
                ShapeError,
            ),
            (
                "a pooling mode out of range",
                'cli(["tune", "pool", "--shape", "1,4,9,9,3,3,1,1,0,0,0,0,7"])',
                ShapeError,
            ),
            (
                "a CSV of shapes for an operator that reads none",
                'cli(["tune", "dense", "--shapes", tmp + "/l.csv"])',
                TensorschedError,
            ),
            (
                "an unknown template",
                'cli(["tune", "gemm", "--shape", "16,16,16", "--template", "fastest"])',
                TaskError,
            ),
            (
                "a module path as --template (never imported)",
                'cli(["tune", "gemm", "--shape", "16,16,16", "--template", "os:system"])',
                TaskError,
            ),
            (
                "an unknown epilogue",
                'cli(["tune", "gemm", "--shape", "16,16,16", "--template", '
                '"cpu", "--epilogue", "gelu"])',
                TaskError,
            ),
            (
                "an unknown strategy",
                'cli(["tune", "gemm", "--shape", "16,16,16", "--strategy", "best"])',
                SystemExit,
            ),
            (
                "a --knob that is not NAME=JSON-LIST",
                'cli(["tune", "gemm", "--shape", "16,16,16", "--template", "cpu", "--knob", '
                '"vec=16"])',
                TensorschedError,
            ),
            (
                "a --knob of a knob the template lacks",
                'cli(["tune", "gemm", "--shape", "16,16,16", "--template", "cpu", "--knob", '
                '"tile_q=[1]"])',
                TensorschedError,
            ),
            (
                "a --knob value that is not a candidate",
                'cli(["tune", "gemm", "--shape", "16,16,16", "--template", "cpu", "--knob", '
                '"vec=[5]"])',
                TensorschedError,
            ),
            (
                "trials that are not a number",
                'cli(["tune", "gemm", "--shape", "16,16,16", "--trials", "many"])',
                SystemExit,
            ),
            (
                "zero trials",
                'cli(["tune", "gemm", "--shape", "16,16,16", "--template", "cpu", "--trials", "0"])',
                SystemExit,
            ),
            (
                "a negative --timeout",
                'cli(["tune", "gemm", "--shape", "16,16,16", "--template", "cpu", "--timeout", '
                '"-5"])',
                SystemExit,
            ),
            (
                "a --time of zero",
                'cli(["tune", "gemm", "--shape", "16,16,16", "--template", "cpu", "--time", "0"])',
                SystemExit,
            ),
            (
                "an --early-stop of zero",
                'cli(["tune", "gemm", "--shape", "16,16,16", "--template", "cpu", "--early-stop", '
                '"0"])',
                SystemExit,
            ),
            (
                "zero trials through the Python API",
                "from tensorsched.tune import Task, tune\n"
                'tune(Task("gemm", "cpu", (16, 16, 16)), tmp + "/t.jsonl", trials=0)',
                TensorschedError,
            ),
            (
                "a GEMM extent beyond the 32-bit index",
                'cli(["tune", "gemm", "--shape", "99999999999,16,16", "--template", "cpu"])',
                TensorschedError,
            ),
            (
                "an ir extent beyond the 32-bit index",
                'cli(["ir", "--expr", "C[i] = A[i] * 2.0", "--shape", "i=99999999999999"])',
                TensorschedError,
            ),
            (
                "an --import of a module that does not exist",
                'cli(["source", "--log", tmp + "/none.jsonl", "--import", "nope"])',
                TensorschedError,
            ),
            (
                "a --shapes file that does not exist",
                'cli(["tune", "gemm", "--shapes", tmp + "/none.csv", "--template", "cpu"])',
                TensorschedError,
            ),
            (
                "a GEMM --shapes row that is not M,N,K,1",
                'open(tmp + "/s.csv", "w").write("16,16,16,2\\n")\n'
                'cli(["tune", "gemm", "--shapes", tmp + "/s.csv", "--template", "cpu"])',
                TensorschedError,
            ),
            (
                "a conv2d layer table without its columns",
                'open(tmp + "/l.csv", "w").write("in_c,in_h\\n3,x\\n")\n'
                'cli(["tune", "conv2d", "--shapes", tmp + "/l.csv", "--template", "spatial_pack"])',
                TensorschedError,
            ),
            (
                "a --log that is a folder",
                'cli(["tune", "gemm", "--shape", "16,16,16", "--template", "cpu", "--log", tmp])',
                LogError,
            ),
            ("source without --log", 'cli(["source"])', SystemExit),
            (
                "source from a log with no correct trial",
                'cli(["source", "--log", tmp + "/none.jsonl"])',
                TensorschedError,
            ),
        ],
    )


def tuner_command_line_log():
    """Tuner command line (setup: log)."""
    return _rows(
        "tuner command line",
        "log",
        [
            (
                "tune into a log that has trials of the task, without --resume",
                'task["shape"] = [16, 16, 16]\nfrom tensorsched.runtime.device import DeviceLimits\n'
                "cfg = {'tile_y': [2, 16], 'tile_x': [2, 16], 'vec': 16, 'tile_k': [4]}\n"
                'w.append(Record(task, DeviceLimits.of(None).name, cfg, "ok", device_ms=1.0, gflops=0.008192))\n'
                'cli(["tune", "gemm", "--shape", "16,16,16", "--template", "cpu", "--log", log])',
                TensorschedError,
            ),
        ],
        device=True,
    ) + _rows(
        "tuner command line",
        "log",
        [
            (
                "source --out over files already there, without --force",
                'cli(["source", "--log", log, "--out", tmp])\n'
                'cli(["source", "--log", log, "--out", tmp])',
                TensorschedError,
            ),
        ],
    )


def tuner_files():
    """Tuner files (setup: log)."""
    return _rows(
        "tuner files",
        "log",
        [
            (
                "a log whose last line was cut by a kill: read up to the damage, not rewritten",
                'open(log, "ab").write(good.splitlines()[0][:40])\nbefore = open(log, "rb").read()\n'
                "assert len(read_log(log)) == 2\nassert open(log, 'rb').read() == before",
                UserWarning,
            ),
            (
                "a log line that is not JSON",
                'open(log, "ab").write(b"not json\\n")\nassert len(read_log(log)) == 2',
                UserWarning,
            ),
            (
                "a log record without its fields",
                'open(log, "ab").write(b\'{"config": {}}\\n\')\nassert len(read_log(log)) == 2',
                UserWarning,
            ),
            (
                "a log with a damaged line, given to apply_best",
                'open(log, "ab").write(b"\\x00\\x00\\n")\nfrom tensorsched.tune import apply_best\n'
                "with apply_best(log, device='cl / dev') as table:\n    assert len(table) == 1",
                UserWarning,
            ),
            (
                "a full disk while appending a record (earlier records stay intact)",
                'with mock.patch("os.write", side_effect=OSError(28, "No space left on device")):\n'
                '    w.append(Record(task, "cl / dev", {"vec": 16}, "ok", device_ms=3.0))',
                LogError,
            ),
            (
                "a log record whose task is a string",
                "import json\nbad = json.loads(good.splitlines()[0])\nbad['task'] = 'gemm'\n"
                'open(log, "a").write(json.dumps(bad) + "\\n")\nassert len(read_log(log)) == 2',
                UserWarning,
            ),
            (
                "a log record whose device_ms is negative",
                "import json\nbad = json.loads(good.splitlines()[0])\nbad['device_ms'] = -1\n"
                'open(log, "a").write(json.dumps(bad) + "\\n")\nassert len(read_log(log)) == 2',
                UserWarning,
            ),
            (
                "a log record with a knob its template lacks",
                "import json\nbad = json.loads(good.splitlines()[0])\n"
                "bad['config'] = {'tile_q': 4}\n"
                'open(log, "a").write(json.dumps(bad) + "\\n")\nassert len(read_log(log)) == 2',
                UserWarning,
            ),
            (
                "a log record faster than any device (1e-9 ms for 8192 FLOP)",
                "import json\nbad = json.loads(good.splitlines()[0])\n"
                "bad['device_ms'] = 1e-9\ndel bad['gflops']\n"
                'open(log, "a").write(json.dumps(bad) + "\\n")\nassert len(read_log(log)) == 2',
                UserWarning,
            ),
            (
                "a log record naming a module path as its template, given to source",
                "import json\nbad = json.loads(good.splitlines()[0])\n"
                "bad['task']['template'] = 'os:system'\n"
                'open(log, "a").write(json.dumps(bad) + "\\n")\n'
                'cli(["source", "--log", log, "--out", tmp + "/out"])',
                UserWarning,
            ),
            (
                "a log record whose device_ms is an integer of 401 digits",
                "import json\nbad = json.loads(good.splitlines()[0])\nbad['device_ms'] = 10**400\n"
                'open(log, "a").write(json.dumps(bad) + "\\n")\nassert len(read_log(log)) == 2',
                UserWarning,
            ),
            (
                "a log record of a GEMM task with an expr (a task of its own otherwise)",
                "import json\nbad = json.loads(good.splitlines()[0])\n"
                "bad['task']['expr'] = 'os:system'\n"
                'open(log, "a").write(json.dumps(bad) + "\\n")\nassert len(read_log(log)) == 2',
                UserWarning,
            ),
            ("a log path that is a folder", "read_log(tmp)", LogError),
            (
                "a config value that is not a candidate of its knob",
                "from tensorsched.tune import Task\n"
                'Task("gemm", "cpu", (16, 16, 16)).instantiate({"vec": 3})',
                ConfigError,
            ),
            (
                "a logged task of an unknown template",
                'from tensorsched.tune import Task\nTask.from_dict(dict(task, template="gone"))',
                TaskError,
            ),
            (
                "a logged task with an epilogue named twice",
                "from tensorsched.tune import Task\n"
                'Task.from_dict(dict(task, epilogue=["bias", "bias"]))',
                TaskError,
            ),
        ],
    )


def tuner_files_device():
    """Tuner files (setup: log; a device: ``tune`` looks its device up before locking)."""
    return _rows(
        "tuner files",
        "log",
        [
            (
                "a second tuner on a log another holds",
                "from tensorsched.tune import Task, tune\nfrom tensorsched.tune.log import LogLock\n"
                "with LogLock(log):  # as the first tuner holds it\n"
                '    tune(Task("gemm", "cpu", (16, 16, 16)), log, strategy="random", resume=True)',
                LogBusyError,
            ),
        ],
        device=True,
    )


def tuner_cluster():
    """Tuning on a Dask cluster (``--cluster``, ``cluster=``, ``tensorsched worker``)."""
    return _rows(
        "tuner on a cluster",
        "",
        [
            (
                "a --cluster address with no port",
                'cli(["tune", "gemm", "--shape", "16,16,16", "--template", "cpu", "--cluster", "nonsense"])',
                ClusterError,
            ),
            (
                "cluster= that is not an address",
                "from tensorsched.tune import Task, tune\n"
                'tune(Task("gemm", "cpu", (16, 16, 16)), tmp + "/c.jsonl", cluster=8786)',
                ClusterError,
            ),
            (
                "a worker with a negative --build-workers",
                'cli(["worker", "tcp://127.0.0.1:8786", "--build-workers", "-1"])',
                TensorschedError,
            ),
        ],
    ) + _rows(
        "tuner on a cluster",
        "",
        [
            (
                "worker --resources that are not NAME=AMOUNT",
                'cli(["worker", "tcp://127.0.0.1:8786", "--resources", "MEM"])',
                TensorschedError,
            ),
        ],
        device=True,
    )


def text_parsers():
    """Text parsers."""
    return _rows(
        "text parsers",
        "",
        [
            ("IR text that ends early", 'ts.parse_ir("func f(")', ParseError),
            (
                "IR text with a '{' never closed",
                'ts.parse_ir("func f(A: float32[4]) { A[0] = 1f")',
                ParseError,
            ),
            (
                "IR text with a missing operand",
                'ts.parse_ir("func f(A: float32[4]) { A[0] = A[0] + }")',
                ParseError,
            ),
            (
                "IR text writing a buffer that is not declared",
                'ts.parse_ir("func f(A: float32[4]) { B[0] = 1f }")',
                ParseError,
            ),
            (
                "IR text using a variable no loop defines",
                'ts.parse_ir("func f(A: float32[4]) { for (i, 0, 4) { A[j] = 1f } }")',
                ParseError,
            ),
            (
                "IR text with an unknown dtype",
                'ts.parse_ir("func f(A: float33[4]) { A[0] = 1f }")',
                ParseError,
            ),
            (
                "IR text with an unknown memory scope",
                'ts.parse_ir("func f(A: float32[4]) { '
                'allocate T[float32 * 4], texture { T[0] = 1f } }")',
                ParseError,
            ),
            ("an empty tensor expression", 'ts.parse_expr("")', ParseError),
            (
                "a tensor expression that ends early",
                'ts.parse_expr("C[i] = A[i] +", "i=4")',
                ParseError,
            ),
            (
                "a tensor expression calling an unknown function",
                'ts.parse_expr("C[i] = foo(A[i])", "i=4")',
                ParseError,
            ),
            (
                "an index only on the right of '='",
                'ts.parse_expr("C[i] = A[i, j]", "i=4,j=4")',
                ParseError,
            ),
            (
                "a tensor defined twice",
                'ts.parse_expr("C[i] = A[i]\\nC[i] = A[i]", "i=4")',
                ParseError,
            ),
            ("extents that are not name=number", 'ts.parse_expr("C[i] = A[i]", "i=x")', ParseError),
            (
                "IR that writes past its buffer",
                'ts.parse_ir("func f(C: float32[8]) { for (i, 0, 8) { C[i + 6] = 1f } }")',
                ParseError,
            ),
            (
                "IR that reads past its buffer",
                'ts.parse_ir("func f(A: float32[4], C: float32[4]) '
                '{ for (i, 0, 4) { C[i] = A[i + 100] } }")',
                ParseError,
            ),
            (
                "IR that reads before its buffer",
                'ts.parse_ir("for (i, 0, 4) { C[i] = A[i - 4] }", '
                'args=[("A", 8, "float32"), ("C", 4, "float32")])',
                ParseError,
            ),
            (
                "IR whose index no loop bounds",
                'ts.parse_ir("func f(A: float32[4]) { for (i, 0, 4) { A[int32(A[i])] = 0f } }")',
                ParseError,
            ),
            (
                "IR whose index leaves its buffer past // and %",
                'ts.parse_ir("func f(C: float32[5]) { for (w, 0, 5) { C[w//3*4 + w%3] = 1f } }")',
                ParseError,
            ),
            (
                "IR whose index takes too many points to prove",
                'ts.parse_ir("func f(C: float32[6]) { for (i, 0, 3000) { for (j, 0, 2000) '
                '{ C[(i*j) % 7] = 1f } } }")',
                ParseError,
            ),
            (
                "IR with a loop bound beyond int64",
                'ts.parse_ir("func f(A: int32[10]) { for (i, 9223372036854775808, 10) '
                '{ A[i] = 1 } }")',
                ParseError,
            ),
            (
                "IR with a float32 constant beyond float32",
                'ts.parse_ir("A[0] = 1e39f")',
                ParseError,
            ),
            (
                "IR with a quoted name that is not a JSON string",
                "ts.parse_ir('\"s-\\x01\" x')",
                ParseError,
            ),
            (
                "a tensor expression constant beyond float32",
                'ts.parse_expr("C[i] = A[i] * 1" + "0" * 400, "i=4")',
                ParseError,
            ),
            (
                "a bare IR body without its arguments",
                'ts.parse_ir("for (i, 0, 4) { C[i] = A[i] }")',
                ParseError,
            ),
            (
                "a malformed argument of a bare body",
                'ts.parse_ir("A[0] = 1f", args=[("A", 4)])',
                ParseError,
            ),
            (
                "arguments given to the function form",
                'ts.parse_ir("func f(A: float32[4]) { }", args=[("A", 4, "float32")])',
                ParseError,
            ),
            (
                "IR with a 1000-term sum",
                'ts.parse_ir("func f(A: float32[4]) { A[0] = " + " + ".join(["A[0]"] * 1000) + " }")',
                ParseError,
            ),
            (
                "IR with 500 nested loops",
                'ts.parse_ir("func f(A: float32[4]) {" + "".join(f"for (i{k}, 0, 1) {{" '
                'for k in range(500)) + "A[0] = 1f" + "}" * 501)',
                ParseError,
            ),
            (
                "a 2000-term tensor expression",
                'ts.parse_expr("C[i] = " + " + ".join(["A[i]*2.0"] * 2000), "i=4")',
                ParseError,
            ),
        ],
    )


def python_target():
    """The python target (exact, bounds-checked)."""
    return _rows(
        "python target",
        "",
        [
            (
                "a kernel that writes past its buffer",
                "from tensorsched.ir.parser import parse_ir_unchecked  # no index check\n"
                'f = parse_ir_unchecked("func f(C: float32[8]) { for (i, 0, 8) { C[i + 6] = 1f } }")\n'
                'ts.build(f, target="python")(np.zeros(8, "float32"))',
                R,
            ),
            (
                "an integer division by zero in a kernel",
                'f = ts.parse_ir("func f(A: int32[4]) { for (i, 0, 4) { A[i] = 4//(i - i) } }")\n'
                'ts.build(f, target="python")(np.zeros(4, "int32"))',
                R,
            ),
            (
                "30 nested loops (Python compiles 20)",
                'f = ts.parse_ir("func f(A: float32[4]) {" + "".join(f"for (i{k}, 0, 1) {{" '
                'for k in range(30)) + "A[0] = 1f" + "}" * 31)\n'
                'ts.build(f, target="python")',
                CodegenError,
            ),
        ],
    )


def networks():
    """Networks: the graph API, its executor and the built-in networks (setup: graph)."""
    return _rows(
        "networks",
        "graph",
        [
            (
                "a conv whose weight does not fit the input's channels",
                'g.conv2d(x, g.constant("w", np.ones((4, 2, 3, 3))))',
                GraphError,
            ),
            ("a node reading a tensor no node defines", 'g.relu("y")', GraphError),
            (
                "an add of shapes that do not broadcast",
                'g.add(x, g.constant("b", np.ones((1, 4, 1, 1))))',
                GraphError,
            ),
            ("a pooling window larger than the padded input", "g.max_pool2d(x, 9)", GraphError),
            ("a tensor name used twice", 'g.input("x", (1, 3))', GraphError),
            (
                "an input of the wrong shape",
                'g.output(g.relu(x))\nts.graph.build(g, target="python")(np.ones((1, 3, 4, 4)))',
                GraphError,
            ),
            (
                "fp16 storage on the Python target",
                'g.output(g.relu(x))\nts.graph.build(g, target="python", fp16=True)',
                GraphError,
            ),
            ("a built-in network below 32x32", "ts.nets.resnet18(image_size=16)", GraphError),
        ],
    )


def onnx_import():
    """ONNX import (``ts.frontend.from_onnx``)."""
    make_einsum = (
        "from onnx import TensorProto, helper\n"
        'v = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 2]) for n in "xy"]\n'
        'node = helper.make_node("Einsum", ["x", "x"], ["y"], equation="ij,ij->ij", '
        'name="mix")\n'
        'model = helper.make_model(helper.make_graph([node], "g", v[:1], v[1:]))\n'
    )
    return _rows(
        "ONNX import",
        "",
        [
            ("bytes that are not an ONNX model", 'ts.frontend.from_onnx(b"not a model")', O),
            ("neither a model, a path nor bytes", "ts.frontend.from_onnx(42)", O),
            (
                "a path that does not exist",
                'ts.frontend.from_onnx(tmp + "/missing.onnx")',
                O,
            ),
            (
                "an operator tensorsched does not implement (Einsum)",
                make_einsum + "ts.frontend.from_onnx(model)",
                UnsupportedOperatorError,
            ),
        ],
    )


# the topics, in the order of docs/errors.md
TOPICS = (
    compute_language,
    schedule_primitives_chain,
    schedule_primitives_gemm,
    lowering_gemm,
    lowering_chain,
    build_gemm,
    build_chain,
    calling_a_module,
    device_arrays,
    tvm_runtime_api,
    opencl_device,
    registering_templates,
    tuner_command_line,
    tuner_command_line_log,
    tuner_files,
    tuner_files_device,
    tuner_cluster,
    text_parsers,
    python_target,
    networks,
    onnx_import,
)

CASES = [case for topic in TOPICS for case in topic()]


# ---------------------------------------------------------------------------- the table

HEAD = """\
# Bad inputs: what tensorsched says

Every misuse below raises the error shown (a `ts.TensorschedError` subclass, never an
`AttributeError`, `KeyError` or assertion from inside), except two kinds: a damaged tuning log
warns (`UserWarning`: the lines before and after the damage are read, the damaged ones skipped,
and the file is never rewritten), and a command-line usage error is `argparse`'s exit with
status 2 (`SystemExit`). The message column is the first line of the message.

Generated from `tests/catalogue.py` (`CASES`) by
`python scripts/make_error_catalogue.py`; `tests/test_catalogue.py` runs every row and fails
when this file is out of date. Each input runs after a small setup named in its area's
heading: *gemm* is `C = A @ B` with A 7x3, B 3x5 and `i, j = s[C].op.axis`, *chain* is
`A -> B = 2A -> C = B + 1` on 5 elements, *module* a GEMM built for the Python target with
arrays `a, b, c`, *device arrays* `B = 2A` on 4x4 built for OpenCL as `mod` with numpy
arrays `x, y` (`pyopencl` as `cl`, `pyopencl.array` as `cla`), *log* a tuning log `log` of two
records written by `LogWriter` `w`, and `cli([...])` runs `tensorsched ...`. Rows marked
(device) need an OpenCL device; their messages come from the machine that generated the
file{device}.
"""


def _cell(text):
    return text.replace("|", "\\|").replace("\n", "<br>")


def _code(code):
    lines = [ln for ln in code.strip().splitlines()]
    return "<br>".join(f"`{_cell(ln).replace('`', '')}`" for ln in lines)


def row(case, outcome):
    cls = (
        "SystemExit"
        if outcome.error is UsageError
        else outcome.error.__name__
        if outcome.error is not None
        else "(nothing raised)"
    )
    what = case.what + (" (device)" if case.device else "")
    return f"| {_cell(what)} | {_code(case.code)} | `{cls}` | {_cell(outcome.message)} |"


def table(outcomes, device_name=""):
    """The markdown of ``docs/errors.md`` for ``outcomes`` (one ``Outcome`` per case, in
    ``CASES`` order)."""
    out = [HEAD.format(device=f" ({device_name})" if device_name else "")]
    area, setup = None, None
    for case, outcome in zip(CASES, outcomes):
        if (case.area, case.setup) != (area, setup):
            area, setup = case.area, case.setup
            out.append(f"\n## {area}" + (f" (setup: {setup})" if setup else "") + "\n")
            out.append("| misuse | input | error class | message |")
            out.append("| --- | --- | --- | --- |")
        out.append(row(case, outcome))
    return "\n".join(out) + "\n"


def run_all(device=True):
    """The outcome of every case; device cases give ``None`` when ``device`` is False."""
    return [run(c) if device or not c.device else None for c in CASES]


def device_name():
    try:
        from tensorsched.runtime.device import current_device

        return current_device().name
    except Exception:  # noqa: BLE001
        return ""
