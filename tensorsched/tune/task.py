"""A tuning task: one template at one shape, with the inputs and numpy reference every
candidate is checked against.

A task is plain data (``kind``, ``template``, ``shape``, ``dtype``, ``epilogue``) so it can be
written to a log and sent to worker processes; ``instantiate(config)`` builds the schedule.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import TensorschedError
from ..ops.conv2d import ConvShape, conv2d_ref
from ..ops.space import Config
from ..ops.templates import TEMPLATES


class TaskError(TensorschedError):
    """An unknown template or a malformed shape."""


@dataclass(frozen=True)
class Task:
    kind: str  # "gemm" or "conv2d"
    template: str  # a name in TEMPLATES[kind], or "package.module:function"
    shape: tuple  # (M, N, K) or the ConvShape fields
    dtype: str = "float32"
    epilogue: tuple = field(default=())
    expr: str = ""  # kind "expr": statements as text (ts.parse_expr) ...
    expr_shapes: str = ""  # ... and their extents, "i=64,j=64,k=64"

    def __post_init__(self):
        if self.kind == "expr":
            if not self.expr:
                raise TaskError("an expr task needs the expression text (--expr)")
            object.__setattr__(self, "shape", ())
            object.__setattr__(self, "epilogue", ())
            return
        if self.kind not in TEMPLATES:
            raise TaskError(f"unknown operator '{self.kind}'; use one of {', '.join(TEMPLATES)}")
        if self.template not in TEMPLATES[self.kind] and ":" not in self.template:
            raise TaskError(
                f"unknown {self.kind} template '{self.template}'; use one of "
                f"{', '.join(TEMPLATES[self.kind])}, or your own as "
                "'package.module:function'"
            )
        want = 3 if self.kind == "gemm" else len(ConvShape.__dataclass_fields__)
        if len(self.shape) != want or not all(
            isinstance(x, int) and x > 0 or (self.kind == "conv2d" and x == 0) for x in self.shape
        ):
            raise TaskError(f"{self.kind} shape must be {want} positive ints, got {self.shape}")
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "epilogue", tuple(self.epilogue))

    # ---- identity

    def key(self):
        """A stable string naming the task in logs."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_dict(cls, d):
        return cls(
            d["kind"],
            d["template"],
            tuple(d["shape"]),
            d.get("dtype", "float32"),
            tuple(d.get("epilogue", ())),
            d.get("expr", ""),
            d.get("expr_shapes", ""),
        )

    def __str__(self):
        if self.kind == "expr":
            return f"expr '{self.expr}' ({self.expr_shapes}) [{self.template}]"
        shape = "x".join(map(str, self.shape))
        ep = f" +{'+'.join(self.epilogue)}" if self.epilogue else ""
        return f"{self.kind} {shape} [{self.template}]{ep}"

    # ---- building

    @property
    def function(self):
        """The template function: a registered one, or ``module:function`` imported (so that
        worker processes find a user's own template too)."""
        if self.kind == "expr" and self.template == "generic":
            from ..ops.templates.generic import generic

            return generic
        if self.kind != "expr" and self.template in TEMPLATES[self.kind]:
            return TEMPLATES[self.kind][self.template]
        import importlib

        module, _, name = self.template.partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise TaskError(f"cannot import template '{self.template}': {exc}") from None

    def shape_args(self):
        if self.kind == "expr":
            return (self.expr, self.expr_shapes)
        return self.shape if self.kind == "gemm" else (ConvShape(*self.shape),)

    def _call(self, cfg):
        extra = {} if self.kind == "expr" else {"epilogue": self.epilogue}
        return self.function(cfg, *self.shape_args(), dtype=self.dtype, **extra)

    def instantiate(self, config=None):
        """``(schedule, args, cfg)`` for ``config`` (a dict or Config; default: the defaults)."""
        cfg = config if isinstance(config, Config) else Config(config or {})
        s, args = self._call(cfg)
        return s, args, cfg

    def space(self):
        cfg = Config()
        self._call(cfg)
        return cfg

    @property
    def flop(self):
        if self.kind == "expr":
            return _expr_flop(self.expr, self.expr_shapes, self.dtype)
        if self.kind == "gemm":
            M, N, K = self.shape
            return 2 * M * N * K
        return ConvShape(*self.shape).flop

    # ---- checking

    def inputs(self, args, seed=0):
        """Random inputs (never zeros) for the argument tensors but the last (the output)."""
        rng = np.random.default_rng(seed)
        out = []
        for t in args[:-1]:
            mag = rng.uniform(0.25, 1.0, t.shape) * rng.choice([-1, 1], t.shape)
            out.append(mag.astype(t.dtype))
        return out

    def reference(self, inputs):
        """The expected output in float64, from numpy (for text expressions: the exact Python
        backend on the plain schedule, or for large ones the template's default config)."""
        if self.kind == "expr":
            return _expr_reference(self, inputs)
        x = [np.asarray(a, dtype=np.float64) for a in inputs]
        if self.kind == "gemm":
            a, b = x[0], x[1]
            if getattr(self.function, "b_transposed", False):
                b = b.T
            ref, axis = a @ b, 1
        else:
            sh = ConvShape(*self.shape)
            ref, axis = conv2d_ref(x[0], x[1], sh.stride, sh.pad), 1
        extra = iter(x[2:])
        for kind in self.epilogue:
            if kind == "bias":
                bias = next(extra)
                shape = [1] * ref.ndim
                shape[axis] = -1
                ref = ref + bias.reshape(shape)
            elif kind == "relu":
                ref = np.maximum(ref, 0)
            elif kind == "sigmoid":
                ref = 1 / (1 + np.exp(-ref))
        return ref


PYTHON_REFERENCE_LIMIT = 2_000_000  # loop iterations the exact Python backend may run


def _expr_flop(expr, shapes, dtype):
    """2 per reduction step and 1 per elementwise element, over all stages."""
    from ..ir.te_text import parse_expr

    total = 0
    for t in parse_expr(expr, shapes, dtype).values():
        op = t.op
        if not hasattr(op, "axis"):
            continue
        n = int(np.prod(op.shape))
        red = int(np.prod([iv.dom.extent for iv in op.reduce_axis])) if op.reduce_axis else 0
        total += 2 * n * red if red else n
    return max(total, 1)


def _expr_reference(task, inputs):
    from ..ir.te_text import parse_expr
    from ..ir.tensor import PlaceholderOp
    from ..runtime.build import build
    from ..schedules.schedule import create_schedule

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
