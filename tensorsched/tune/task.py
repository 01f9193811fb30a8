"""A tuning task: one registered template at one shape, with the inputs and numpy reference
every candidate is checked against.

A task is plain data (``kind``, ``template``, ``shape``, ``dtype``, ``epilogue``) so it can be
written to a log and sent to worker processes; ``template`` is the name of a registered
template (``tensorsched.ops.templates.register_template``), never a module path, so reading a
task imports nothing. ``instantiate(config)`` builds the schedule.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from ..errors import ComputeError, TensorschedError
from ..ir.dtype import SCALAR_TYPES
from ..ir.te_text import parse_expr
from ..ir.tensor import PlaceholderOp
from ..ops.conv2d import ConvShape, conv2d_ref
from ..ops.conv3d import conv3d_ref
from ..ops.dense import dense_ref
from ..ops.depthwise import group_conv2d_ref
from ..ops.nn import EPILOGUE_KINDS, epilogue_ref, softmax_ref
from ..ops.pool import MODES, pool2d_ref
from ..ops.space import Config
from ..ops.templates import KINDS, SHAPES, Template, layouts_of, templates_of
from ..runtime.build import build
from ..runtime.numerics import random_array
from ..schedules.schedule import create_schedule

INDEX_MAX = 2**31 - 1  # a shape's extents are indexed with 32-bit int


class TaskError(TensorschedError):
    """An unknown template or a malformed shape."""


def _is_int(x: object) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


EPILOGUE_NAMES = EPILOGUE_KINDS  # what ops.nn.epilogue applies


def _check_epilogue(epilogue: Any) -> None:
    """``TaskError`` unless ``epilogue`` is a sequence of known epilogue names, each at most
    once (a second bias would be a second bias input of the same name)."""
    if not isinstance(epilogue, (tuple, list)) or not all(isinstance(e, str) for e in epilogue):
        raise TaskError(f"epilogue must be names ({', '.join(EPILOGUE_NAMES)}), got {epilogue!r}")
    for e in epilogue:
        if e not in EPILOGUE_NAMES:
            raise TaskError(f"unknown epilogue {e[:80]!r}; use {', '.join(EPILOGUE_NAMES)}")
        if epilogue.count(e) > 1:
            raise TaskError(f"epilogue {list(epilogue)!r} names {e!r} twice; each applies once")


class ShapeError(TaskError):
    """A task's shape that is not its operator's: too few or too many ints, or a bad one."""


def task_shape(kind: str, shape: Any) -> tuple[int, ...]:
    """``shape`` as a task of ``kind`` (not ``expr``) holds it; a ``ShapeError`` unless it is
    the kind's ints, each in range, and a workload its declaration accepts."""
    if kind in SHAPES:
        return _network_shape(kind, shape)
    # conv2d: 9 ints (N, CI, IH, IW, CO, KH, KW, stride, pad), a 10th (the dilation) only
    # where it is above 1 (ConvShape.astuple), so a dilated conv's key never matches an
    # undilated one's and the logs of undilated convs keep their 9-int shapes
    want = (3,) if kind == "gemm" else (9, 10)
    ints = tuple(shape) if isinstance(shape, (tuple, list)) else None
    if (
        ints is None
        or len(ints) not in want
        or not all(_is_int(x) and 0 <= x <= INDEX_MAX for x in ints)
        or any(x == 0 for i, x in enumerate(ints) if kind == "gemm" or i != 8)
    ):
        what = (
            "3 positive ints"
            if kind == "gemm"
            else "9 positive ints (N, CI, IH, IW, CO, KH, KW, stride, pad; pad may be 0), "
            "and a 10th, the dilation, where it is not 1,"
        )
        raise ShapeError(f"{kind} shape must be {what} up to {INDEX_MAX}, got {shape!r}")
    ints = tuple(int(x) for x in ints)
    return ConvShape(*ints).astuple() if kind == "conv2d" else ints  # a dilation of 1: dropped


def _network_shape(kind: str, shape: Any) -> tuple[int, ...]:
    """A network operator's shape: the fields of its ``SHAPES`` class, ints, positive but
    for the paddings and the pooling mode, and a workload its declaration accepts."""
    cls = SHAPES[kind]
    names = [f.name for f in fields(cls)]
    ints = tuple(shape) if isinstance(shape, (tuple, list)) else None
    may_be_zero = {n for n in names if n.startswith("pad_") or n == "mode"}
    if (
        ints is None
        or len(ints) != len(names)
        or not all(_is_int(x) and 0 <= x <= INDEX_MAX for x in ints)
        or any(x == 0 and n not in may_be_zero for n, x in zip(names, ints))
    ):
        zero = f" but for {', '.join(sorted(may_be_zero))}" if may_be_zero else ""
        raise ShapeError(
            f"{kind} shape must be {len(names)} ints up to {INDEX_MAX} "
            f"({', '.join(names)}; positive{zero}), got {shape!r}"
        )
    ints = tuple(int(x) for x in ints)
    try:
        obj = cls(*ints)
        if hasattr(obj, "check"):
            obj.check()
    except ComputeError as exc:
        raise ShapeError(f"{kind} shape {ints}: {exc}") from None
    return ints


@dataclass(frozen=True)
class Task:
    kind: str  # "gemm", "conv2d", "expr" or a network operator's (templates.SHAPES)
    template: str  # the name of a registered template of this kind
    # (M, N, K), ConvShape.astuple(), or the fields of the kind's SHAPES class (conv3d:
    # Conv3dShape's 22 ints, so a conv3d task's key never matches a conv2d task's)
    shape: tuple
    dtype: str = "float32"
    epilogue: tuple = field(default=())
    expr: str = ""  # kind "expr": statements as text (ts.parse_expr) ...
    expr_shapes: str = ""  # ... and their extents, "i=64,j=64,k=64"
    # kind "autotvm": the arguments of a TVM AutoTVM template (``ts.autotvm``): ints, floats,
    # strings, bools, None and tuples of them (``autotvm_args``); left out of ``to_dict`` where
    # empty, so every other task's record and key stay as they were
    args: tuple = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise TaskError(f"unknown operator {self.kind!r}; use one of {', '.join(KINDS)}")
        table = templates_of(self.kind)
        if not isinstance(self.template, str) or self.template not in table:
            raise TaskError(
                f"unknown {self.kind} template {self.template!r}; use one of "
                f"{', '.join(table)}, or register your own with "
                "tensorsched.tune.register_template (and --import its module on the command "
                "line)"
            )
        if not isinstance(self.dtype, str) or self.dtype not in SCALAR_TYPES:
            raise TaskError(f"dtype {self.dtype!r}: use one of {', '.join(SCALAR_TYPES)}")
        for name in ("expr", "expr_shapes"):
            if not isinstance(getattr(self, name), str):
                raise TaskError(f"{name} must be text, got {getattr(self, name)!r}")
        if self.kind == "autotvm":
            for name in ("shape", "epilogue", "expr", "expr_shapes"):
                if getattr(self, name):
                    raise TaskError(
                        f"an autotvm task has no {name} (its template's arguments are args), "
                        f"got {str(getattr(self, name))[:80]!r}"
                    )
            object.__setattr__(self, "shape", ())
            object.__setattr__(self, "epilogue", ())
            object.__setattr__(self, "args", autotvm_args(self.args))
            return
        if self.args:
            raise TaskError(
                f"a {self.kind} task has no args (that is a field of autotvm tasks), "
                f"got {str(self.args)[:80]!r}"
            )
        if self.kind == "expr":
            if not self.expr:
                raise TaskError("an expr task needs the expression text (--expr)")
            for name in ("shape", "epilogue"):  # an expr's text holds both
                if getattr(self, name):
                    raise TaskError(
                        f"an expr task has no {name} (its extents are expr_shapes), "
                        f"got {getattr(self, name)!r}"
                    )
            object.__setattr__(self, "shape", ())
            object.__setattr__(self, "epilogue", ())
            return
        for name in ("expr", "expr_shapes"):  # a field of expr tasks only
            if getattr(self, name):
                raise TaskError(
                    f"a {self.kind} task has no {name} (that is a field of expr tasks), "
                    f"got {getattr(self, name)[:80]!r}"
                )
        _check_epilogue(self.epilogue)
        object.__setattr__(self, "shape", task_shape(self.kind, self.shape))
        object.__setattr__(self, "epilogue", tuple(self.epilogue))

    # ---- identity

    def key(self) -> str:
        """A stable string naming the task in logs (made once per task object)."""
        key = self.__dict__.get("_key")
        if key is None:
            key = json.dumps(self.to_dict(), sort_keys=True)
            object.__setattr__(self, "_key", key)
        return key

    def to_dict(self) -> dict[str, Any]:
        """The task's fields as a log record and a worker's message hold them: ``args`` only
        where it is not empty (an autotvm task's), so other tasks' records are unchanged."""
        d = asdict(self)
        if not self.args:
            del d["args"]
        return d

    @classmethod
    def from_dict(cls, d: Any) -> Task:
        """The task a log record (or a worker's message) holds; ``TaskError`` unless ``d`` is
        a dict of the task's fields naming a registered template. Imports nothing."""
        if not isinstance(d, dict):
            raise TaskError(f"a task is a dict of its fields, got {type(d).__name__}")
        names = [f.name for f in fields(cls)]
        foreign = sorted(str(k) for k in d if k not in names)
        missing = [k for k in ("kind", "template", "shape") if k not in d]
        if foreign or missing:
            raise TaskError(
                "a task "
                + (f"without the field(s) {', '.join(missing)}" if missing else "")
                + (" and " if foreign and missing else "")
                + (f"with the unknown field(s) {', '.join(foreign)}" if foreign else "")
            )
        shape, epilogue, args = d["shape"], d.get("epilogue", ()), d.get("args", ())
        if not all(isinstance(x, (list, tuple)) for x in (shape, epilogue, args)):
            raise TaskError("a task's shape, epilogue and args are lists")
        return cls(
            d["kind"],
            d["template"],
            tuple(shape),
            d.get("dtype", "float32"),
            tuple(epilogue),
            d.get("expr", ""),
            d.get("expr_shapes", ""),
            autotvm_args(args),
        )

    def __str__(self) -> str:
        if self.kind == "expr":
            return f"expr '{self.expr}' ({self.expr_shapes}) [{self.template}]"
        if self.kind == "autotvm":
            return f"autotvm {self.template}{self.args!r}"
        shape = "x".join(map(str, self.shape))
        ep = f" +{'+'.join(self.epilogue)}" if self.epilogue else ""
        return f"{self.kind} {shape} [{self.template}]{ep}"

    # ---- building

    @property
    def function(self) -> Template:
        """The registered template function."""
        return templates_of(self.kind)[self.template]

    def shape_args(self) -> tuple:
        if self.kind == "autotvm":
            return self.args
        if self.kind == "expr":
            return (self.expr, self.expr_shapes)
        if self.kind in SHAPES:
            return (SHAPES[self.kind](*self.shape),)
        return self.shape if self.kind == "gemm" else (ConvShape(*self.shape),)

    def _call(self, cfg: Config) -> tuple:
        if self.kind == "autotvm":  # TVM's template(*args): the dtype is one of them
            return self.function(cfg, *self.args)
        extra = {} if self.kind == "expr" else {"epilogue": self.epilogue}
        return self.function(cfg, *self.shape_args(), dtype=self.dtype, **extra)

    def instantiate(self, config: Config | dict | None = None) -> tuple:
        """``(schedule, args, cfg)`` for ``config`` (a dict or Config; default: the defaults)."""
        cfg = config if isinstance(config, Config) else Config(config or {})
        s, args = self._call(cfg)
        return s, args, cfg

    def space(self) -> Config:
        """The template's knob space at this task's shape (a ``Config`` with no values)."""
        cfg = Config()
        self._call(cfg)
        return cfg

    @property
    def flop(self) -> int:
        if self.kind == "expr":
            return _expr_flop(self.expr, self.expr_shapes, self.dtype)
        if self.kind == "autotvm":  # the template's cfg.add_flop, else counted (tensors_flop)
            _, args, cfg = self.instantiate(None)
            return int(cfg.flop) if cfg.flop > 0 else tensors_flop(args)
        if self.kind == "gemm":
            M, N, K = self.shape
            return 2 * M * N * K
        if self.kind in SHAPES:
            return int(SHAPES[self.kind](*self.shape).flop)
        return ConvShape(*self.shape).flop

    # ---- checking

    def inputs(self, args: Any, seed: int = 0) -> list[np.ndarray]:
        """Random inputs (never zeros) for the argument tensors but the last (the output)."""
        rng = np.random.default_rng(seed)
        return [random_array(tuple(t.shape), t.dtype, rng) for t in args[:-1]]

    def reference(self, inputs: list[np.ndarray]) -> np.ndarray:
        """The expected output in float64, from numpy (for text expressions: the exact Python
        backend on the plain schedule, or for large ones the template's default config)."""
        if self.kind == "expr":
            return _expr_reference(self, inputs)
        if self.kind == "autotvm":
            return _plain_reference(self, inputs)
        x = [np.asarray(a, dtype=np.float64) for a in inputs]
        if self.kind == "gemm":
            return self._image_reference(x)
        data, output = layouts_of(self.kind, self.template)
        # channels-last data (and a residual, the output's layout) and output: the NCHW
        # reference, transposed
        x = [a.transpose(0, 3, 1, 2) if a.ndim == 4 and i != 1 and
             (data if i == 0 else output) == "NHWC" else a for i, a in enumerate(x)]  # fmt: skip
        ref = self._image_reference(x)
        return ref.transpose(0, 2, 3, 1) if output == "NHWC" else ref

    def _image_reference(self, x: list[np.ndarray]) -> np.ndarray:
        if self.kind in SHAPES:
            return self._network_reference(x)
        if self.kind == "gemm":
            a, b = x[0], x[1]
            if getattr(self.function, "b_transposed", False):
                b = b.T
            ref, axis = a @ b, 1
        else:
            sh = ConvShape(*self.shape)
            ref, axis = conv2d_ref(x[0], x[1], sh.stride, sh.pad, sh.dilation), 1
        return epilogue_ref(ref, self.epilogue, x[2:], axis)

    def _network_reference(self, x: list[np.ndarray]) -> np.ndarray:
        sh = self.shape_args()[0]
        if self.kind == "softmax":
            return epilogue_ref(softmax_ref(x[0]), self.epilogue, x[1:], 1)
        if self.kind == "pool":
            ref = pool2d_ref(x[0], (sh.KH, sh.KW), sh.stride, sh.pads, MODES[sh.mode])
            return epilogue_ref(ref, self.epilogue, x[1:], 1)
        if self.kind == "dense":
            ref = dense_ref(x[0], x[1])
        elif self.kind == "conv3d":
            ref = conv3d_ref(x[0], x[1], sh.strides, sh.pads, sh.dilations, sh.groups)
        else:
            ref = group_conv2d_ref(x[0], x[1], sh.stride, sh.pads, sh.groups, sh.dilation)
        return epilogue_ref(ref, self.epilogue, x[2:], 1)


PYTHON_REFERENCE_LIMIT = 2_000_000  # loop iterations the exact Python backend may run


def _expr_flop(expr: str, shapes: str, dtype: str) -> int:
    """2 per reduction step and 1 per elementwise element, over all stages."""
    total = 0
    for t in parse_expr(expr, shapes, dtype).values():
        op = t.op
        if not hasattr(op, "axis"):
            continue
        n = math.prod(int(x) for x in op.shape)
        red = math.prod(int(iv.dom.extent) for iv in op.reduce_axis) if op.reduce_axis else 0
        total += 2 * n * red if red else n
    return max(total, 1)


def _expr_reference(task: Task, inputs: list[np.ndarray]) -> np.ndarray:
    if _expr_flop(task.expr, task.expr_shapes, task.dtype) <= PYTHON_REFERENCE_LIMIT:
        tensors = list(parse_expr(task.expr, task.expr_shapes, task.dtype).values())
        out = tensors[-1]
        args = [t for t in tensors if isinstance(t.op, PlaceholderOp)] + [out]
        mod = build(create_schedule(out.op), args, target="python")
    else:
        s, args, _ = task.instantiate(None)
        mod = build(s, args, target="opencl")
    res = np.full(args[-1].shape, np.nan, dtype=args[-1].dtype)
    mod(*inputs, res)
    return res.astype(np.float64)


ARGS_MAX_ITEMS = 256  # values (nested ones included) an autotvm task's args may hold
ARGS_MAX_DEPTH = 4
ARGS_MAX_TEXT = 256
ARGS_MAX_INT = 2**63 - 1


def autotvm_args(args: Any) -> tuple:
    """An autotvm task's template arguments as a task holds them: ints, finite floats,
    strings, bools, None and (nested) tuples of them, lists read from JSON made tuples; a
    ``TaskError`` saying what is wrong otherwise. They may come from a log (untrusted): they
    are checked as data here and only ever passed to the registered template, never run."""
    count = [0]

    def check(v: Any, depth: int) -> Any:
        count[0] += 1
        if count[0] > ARGS_MAX_ITEMS:
            raise TaskError(f"an autotvm task's args hold more than {ARGS_MAX_ITEMS} values")
        if v is None or isinstance(v, (bool, str)):
            if isinstance(v, str) and len(v) > ARGS_MAX_TEXT:
                raise TaskError(f"autotvm args: a string of {len(v)} characters (at most "
                                f"{ARGS_MAX_TEXT}): {v[:40]!r}...")  # fmt: skip
            return v
        if _is_int(v):
            if abs(int(v)) > ARGS_MAX_INT:
                raise TaskError(f"autotvm args: the int {str(v)[:40]} is out of range")
            return int(v)
        if isinstance(v, float):
            if not math.isfinite(v):
                raise TaskError(f"autotvm args: {v} is not a finite number")
            return v
        if isinstance(v, (tuple, list)):
            if depth >= ARGS_MAX_DEPTH:
                raise TaskError(f"autotvm args nest deeper than {ARGS_MAX_DEPTH} levels")
            return tuple(check(x, depth + 1) for x in v)
        raise TaskError(
            f"autotvm args: {type(v).__name__} {str(v)[:60]!r} cannot be a template argument "
            "of a task (a log holds it as JSON): use ints, floats, strings, bools, None and "
            "tuples of them"
        )

    if not isinstance(args, (tuple, list)):
        raise TaskError(f"an autotvm task's args are a tuple, got {type(args).__name__}")
    return tuple(check(a, 1) for a in args)


def _stages(outputs: Any) -> list[Any]:
    """The operations computing ``outputs`` (tensors), producers first."""
    seen: dict[Any, None] = {}

    def visit(op: Any) -> None:
        if op in seen:
            return
        for t in op.input_tensors:
            visit(t.op)
        seen[op] = None

    for t in outputs:
        visit(t.op)
    return list(seen)


def tensors_flop(args: Any) -> int:
    """The FLOPs of computing ``args[-1]`` (an autotvm template's output) as ``_expr_flop``
    counts them: 2 per reduction step and 1 per element of an elementwise stage."""
    total = 0
    try:
        for op in _stages(args[-1:]):
            if isinstance(op, PlaceholderOp) or not hasattr(op, "axis"):
                continue
            n = math.prod(int(x) for x in op.shape)
            red = math.prod(int(iv.dom.extent) for iv in op.reduce_axis) if op.reduce_axis else 0
            total += 2 * n * red if red else n
    except (TypeError, ValueError):
        raise TaskError(
            "the template's output has a size that is not a constant, so its FLOPs cannot be "
            "counted: declare them in the template with cfg.add_flop(n)"
        ) from None
    return max(total, 1)


def _plain_reference(task: Task, inputs: list[np.ndarray]) -> np.ndarray:
    """An autotvm task's expected output: its template's compute on a plain schedule
    (``create_schedule(out.op)``), run exactly by the Python backend, or where that is more
    than ``PYTHON_REFERENCE_LIMIT`` steps, on the OpenCL device."""
    _, args, _ = task.instantiate(None)
    out = args[-1]
    target = "python" if task.flop <= PYTHON_REFERENCE_LIMIT else "opencl"
    mod = build(create_schedule(out.op), list(args), target=target)
    res = np.full(tuple(int(x) for x in out.shape), np.nan, dtype=args[-1].dtype)
    mod(*inputs, res)
    return res.astype(np.float64)
