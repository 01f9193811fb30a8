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
        if self.kind in SHAPES:
            self._check_network_shape()
            return
        # conv2d: 9 ints (N, CI, IH, IW, CO, KH, KW, stride, pad), a 10th (the dilation) only
        # where it is above 1 (ConvShape.astuple), so a dilated conv's key never matches an
        # undilated one's and the logs of undilated convs keep their 9-int shapes
        want = (3,) if self.kind == "gemm" else (9, 10)
        shape = tuple(self.shape) if isinstance(self.shape, (tuple, list)) else None
        if (
            shape is None
            or len(shape) not in want
            or not all(_is_int(x) and 0 <= x <= INDEX_MAX for x in shape)
            or any(x == 0 for i, x in enumerate(shape) if self.kind == "gemm" or i != 8)
        ):
            what = (
                "3 positive ints"
                if self.kind == "gemm"
                else "9 positive ints (N, CI, IH, IW, CO, KH, KW, stride, pad; pad may be 0), "
                "and a 10th, the dilation, where it is not 1,"
            )
            raise TaskError(
                f"{self.kind} shape must be {what} up to {INDEX_MAX}, got {self.shape!r}"
            )
        shape = tuple(int(x) for x in shape)
        if self.kind == "conv2d":
            shape = ConvShape(*shape).astuple()  # a dilation of 1 written out: dropped
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "epilogue", tuple(self.epilogue))

    def _check_network_shape(self) -> None:
        """A network operator's shape: the fields of its ``SHAPES`` class, ints, positive but
        for the paddings and the pooling mode, and a workload its declaration accepts."""
        cls = SHAPES[self.kind]
        names = [f.name for f in fields(cls)]
        shape = tuple(self.shape) if isinstance(self.shape, (tuple, list)) else None
        may_be_zero = {n for n in names if n.startswith("pad_") or n == "mode"}
        if (
            shape is None
            or len(shape) != len(names)
            or not all(_is_int(x) and 0 <= x <= INDEX_MAX for x in shape)
            or any(x == 0 and n not in may_be_zero for n, x in zip(names, shape))
        ):
            zero = f" but for {', '.join(sorted(may_be_zero))}" if may_be_zero else ""
            raise TaskError(
                f"{self.kind} shape must be {len(names)} ints up to {INDEX_MAX} "
                f"({', '.join(names)}; positive{zero}), got {self.shape!r}"
            )
        shape = tuple(int(x) for x in shape)
        try:
            obj = cls(*shape)
            if hasattr(obj, "check"):
                obj.check()
        except ComputeError as exc:
            raise TaskError(f"{self.kind} shape {shape}: {exc}") from None
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "epilogue", tuple(self.epilogue))

    # ---- identity

    def key(self) -> str:
        """A stable string naming the task in logs (made once per task object)."""
        key = self.__dict__.get("_key")
        if key is None:
            key = json.dumps(asdict(self), sort_keys=True)
            object.__setattr__(self, "_key", key)
        return key

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
        shape, epilogue = d["shape"], d.get("epilogue", ())
        if not isinstance(shape, (list, tuple)) or not isinstance(epilogue, (list, tuple)):
            raise TaskError("a task's shape and epilogue are lists")
        return cls(
            d["kind"],
            d["template"],
            tuple(shape),
            d.get("dtype", "float32"),
            tuple(epilogue),
            d.get("expr", ""),
            d.get("expr_shapes", ""),
        )

    def __str__(self) -> str:
        if self.kind == "expr":
            return f"expr '{self.expr}' ({self.expr_shapes}) [{self.template}]"
        shape = "x".join(map(str, self.shape))
        ep = f" +{'+'.join(self.epilogue)}" if self.epilogue else ""
        return f"{self.kind} {shape} [{self.template}]{ep}"

    # ---- building

    @property
    def function(self) -> Template:
        """The registered template function."""
        return templates_of(self.kind)[self.template]

    def shape_args(self) -> tuple:
        if self.kind == "expr":
            return (self.expr, self.expr_shapes)
        if self.kind in SHAPES:
            return (SHAPES[self.kind](*self.shape),)
        return self.shape if self.kind == "gemm" else (ConvShape(*self.shape),)

    def _call(self, cfg: Config) -> tuple:
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
