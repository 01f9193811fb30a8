"""numpy evaluation of a graph, node by node: the reference every built network is checked
against, and what constant folding computes with. Each operator in float64 from its float32
inputs; results are returned as float32."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from ..ops.conv2d import conv2d_ref
from ..ops.conv3d import conv3d_ref
from ..ops.pool import MODES, pool2d_ref, pool_nd_ref
from ..ops.reduction import reduce_ref
from ..ops.resize import resize_ref
from .graph import Graph, GraphError, Node, node_pool_mode, pad_plan, slice_plan

Array = np.ndarray


def _conv2d(node: Node, x: list[Array]) -> Array:
    a = node.attrs
    t, l, b, r = a["pads"]
    data = np.pad(x[0], ((0, 0), (0, 0), (t, b), (l, r)))
    w, groups, dil = x[1], a["groups"], a.get("dilations", 1)
    cig, cog = w.shape[1], w.shape[0] // groups
    out = np.concatenate(
        [
            conv2d_ref(
                data[:, g * cig : (g + 1) * cig], w[g * cog : (g + 1) * cog], a["strides"], 0, dil
            )
            for g in range(groups)
        ],
        axis=1,
    )
    rest = x[2:]
    if len(rest) > sum(1 for s in node.epilogue if s[0] in ("bias", "add")):
        out = out + rest.pop(0).reshape(1, -1, 1, 1)
    return epilogue(node, out, rest)


def _conv3d(node: Node, x: list[Array]) -> Array:
    a = node.attrs
    out = conv3d_ref(x[0], x[1], a["strides"], a["pads"], a["dilations"], a["groups"])
    rest = x[2:]
    if len(rest) > sum(1 for s in node.epilogue if s[0] in ("bias", "add")):
        out = out + rest.pop(0).reshape(1, -1, 1, 1, 1)
    return epilogue(node, out, rest)


def _pool3d(node: Node, x: list[Array]) -> Array:
    a = node.attrs
    out = pool_nd_ref(x[0], a["kernel"], a["strides"], a["pads"], MODES[node_pool_mode(node)])
    return epilogue(node, out, x[1:])


def epilogue(node: Node, out: Array, extra: list[Array]) -> Array:
    """Apply ``node``'s fused epilogue steps to ``out``; ``extra`` holds the bias and residual
    tensors in step order."""
    it = iter(extra)
    for step in node.epilogue:
        if step[0] == "bias":
            out = out + next(it).reshape((1, -1) + (1,) * (out.ndim - 2))
        elif step[0] == "add":
            out = out + next(it)
        elif step[0] == "relu":
            out = np.maximum(out, 0)
        elif step[0] == "clip":
            out = np.clip(out, step[1], step[2])
        else:
            raise GraphError(f"node '{node.name}': unknown epilogue step {step!r}")
    return out


def _pool(node: Node, x: list[Array]) -> Array:
    a = node.attrs
    out = pool2d_ref(x[0], a["kernel"], a["strides"], a["pads"], MODES[node_pool_mode(node)])
    return epilogue(node, out, x[1:])


def _dense(node: Node, x: list[Array]) -> Array:
    out = x[0] @ x[1].T
    rest = x[2:]
    if len(rest) > sum(1 for s in node.epilogue if s[0] in ("bias", "add")):
        out = out + rest.pop(0)
    return epilogue(node, out, rest)


def _batch_norm(node: Node, x: list[Array]) -> Array:
    d, scale, bias, mean, var = x
    s = scale / np.sqrt(var + node.attrs["epsilon"])
    shape = (1, -1) + (1,) * (d.ndim - 2)
    return (d - mean.reshape(shape)) * s.reshape(shape) + bias.reshape(shape)


def _softmax(node: Node, x: list[Array]) -> Array:
    e = np.exp(x[0] - x[0].max(axis=node.attrs["axis"], keepdims=True))
    return e / e.sum(axis=node.attrs["axis"], keepdims=True)


def _scale_shift(node: Node, x: list[Array]) -> Array:
    shape = (1, -1) + (1,) * (x[0].ndim - 2)
    return epilogue(node, x[0] * x[1].reshape(shape) + x[2].reshape(shape), [])


def _slice(node: Node, x: list[Array]) -> Array:
    a = node.attrs
    plan = slice_plan(x[0].shape, a["starts"], a["ends"], a["axes"], a["steps"])
    index = tuple(
        slice(b, b + s * n if b + s * n >= 0 else None, s) for b, s, n in plan
    )  # a stop of -1 (before the first element) is None to a Python slice
    return x[0][index]


def _pad(node: Node, x: list[Array]) -> Array:
    a = node.attrs
    plan = pad_plan(x[0].shape, a["pads"])
    kept = x[0][tuple(slice(first, first + count) for first, count, _, _ in plan)]
    widths = [(before, after) for _, _, before, after in plan]
    if a["mode"] == "constant":
        return np.pad(kept, widths, constant_values=a["value"])
    return np.pad(kept, widths, mode="reflect" if a["mode"] == "reflect" else "edge")


def _layer_norm(node: Node, x: list[Array]) -> Array:
    data = x[0].astype(np.float64)
    axes = tuple(range(node.attrs["axis"], data.ndim))
    d = data - data.mean(axes, keepdims=True)
    y = d / np.sqrt((d * d).mean(axes, keepdims=True) + node.attrs["epsilon"]) * x[1]
    return (y + x[2] if len(x) > 2 else y).astype(x[0].dtype)


def _take(node: Node, x: list[Array]) -> Array:
    data, at, axis = x[0], x[1].astype(np.int64), node.attrs["axis"]
    size = data.shape[axis]
    at = np.where(at < 0, at + size, at)
    inside = (at >= 0) & (at < size)
    out = np.take(data, np.clip(at, 0, size - 1), axis=axis)
    keep = inside.reshape((1,) * axis + inside.shape + (1,) * (data.ndim - axis - 1))
    return np.where(keep, out, 0).astype(data.dtype)


def _resize(node: Node, x: list[Array]) -> Array:
    a = node.attrs
    scales = [Fraction(p, q) for p, q in a["scales"]]
    return resize_ref(x[0], a["sizes"], scales, a["mode"], a["coord"], a["rounding"],
                      a["cubic_a"], a["exclude_outside"])  # fmt: skip


_erf = np.frompyfunc(math.erf, 1, 1)

MATH: dict[str, Callable[[Array], Array]] = {
    "erf": lambda x: np.asarray(_erf(x), np.float64),
    "sqrt": np.sqrt,
    "exp": np.exp,
    "log": np.log,
    "neg": np.negative,
    "abs": np.abs,
    "reciprocal": lambda x: 1.0 / x,
    "floor": np.floor,
    "ceil": np.ceil,
    "sign": np.sign,
    "trunc": np.trunc,
}
COMPARE: dict[str, Callable[[Array, Array], Array]] = {
    "equal": np.equal, "less": np.less, "less_equal": np.less_equal, "greater": np.greater,
    "greater_equal": np.greater_equal,
    # logic of conditions: any nonzero is true
    "logical_and": lambda p, q: (p != 0) & (q != 0),
    "logical_or": lambda p, q: (p != 0) | (q != 0),
    "logical_xor": lambda p, q: (p != 0) ^ (q != 0),
}  # fmt: skip


def _isinf(node: Node, x: list[Array]) -> Array:
    a = node.attrs
    return (np.isposinf(x[0]) & a["detect_positive"]) | (np.isneginf(x[0]) & a["detect_negative"])


REFERENCE: dict[str, Callable[[Node, list[Array]], Array]] = {
    "conv2d": _conv2d,
    "batch_norm": _batch_norm,
    "scale_shift": _scale_shift,
    "relu": lambda n, x: np.maximum(x[0], 0),
    "clip": lambda n, x: np.clip(x[0], n.attrs["min"], n.attrs["max"]),
    "sigmoid": lambda n, x: 1.0 / (1.0 + np.exp(-x[0])),
    "tanh": lambda n, x: np.tanh(x[0]),
    "leaky_relu": lambda n, x: np.where(x[0] >= 0, x[0], n.attrs["alpha"] * x[0]),
    "hard_sigmoid": lambda n, x: np.clip(n.attrs["alpha"] * x[0] + n.attrs["beta"], 0, 1),
    "hard_swish": lambda n, x: x[0] * np.clip(x[0] / 6 + 0.5, 0, 1),
    "add": lambda n, x: x[0] + x[1],
    "sub": lambda n, x: x[0] - x[1],
    "mul": lambda n, x: x[0] * x[1],
    "div": lambda n, x: x[0] / x[1],
    "max_pool2d": _pool,
    "avg_pool2d": _pool,
    "global_avg_pool2d": lambda n, x: epilogue(n, x[0].mean(axis=(2, 3), keepdims=True), x[1:]),
    "conv3d": _conv3d,
    "max_pool3d": _pool3d,
    "avg_pool3d": _pool3d,
    "dense": _dense,
    "batch_matmul": lambda n, x: np.matmul(x[0], x[1]),
    "flatten": lambda n, x: x[0].reshape(int(np.prod(x[0].shape[: n.attrs["axis"]])), -1),
    "reshape": lambda n, x: x[0].reshape(n.attrs["shape"]),
    "softmax": _softmax,
    "concat": lambda n, x: np.concatenate(x, axis=n.attrs["axis"]),
    **{op: (lambda fn: lambda n, x: fn(x[0]))(fn) for op, fn in MATH.items()},
    "power": lambda n, x: np.power(x[0], n.attrs["exponent"]),
    "pow": lambda n, x: np.power(x[0], x[1]),
    # masks: booleans as float 1.0 / 0.0 (eval_node's float32)
    **{op: (lambda fn: lambda n, x: fn(x[0], x[1]))(fn) for op, fn in COMPARE.items()},
    "logical_not": lambda n, x: x[0] == 0,
    "to_bool": lambda n, x: x[0] != 0,
    "isnan": lambda n, x: np.isnan(x[0]),
    "isinf": _isinf,
    "where": lambda n, x: np.where(x[0] != 0, x[1], x[2]),
    "mod": lambda n, x: (np.fmod if n.attrs["fmod"] else np.mod)(x[0], x[1]),
    "reduce": lambda n, x: reduce_ref(x[0], n.attrs["kind"], n.attrs["axes"], n.attrs["keepdims"]),
    "transpose": lambda n, x: np.transpose(x[0], n.attrs["perm"]),
    "slice": _slice,
    "pad": _pad,
    "resize": _resize,
    "take": _take,
    "layer_norm": _layer_norm,
    "layout_transform": lambda n, x: x[0],  # memory order only: the same logical tensor
    "fused": lambda n, x: _fused(n, x),
}


def _fused(node: Node, x: list[Array]) -> Array:
    """A ``fused`` node's steps one after another, each as the node it stands for (float32
    between them, as the unfused graph)."""
    outs: list[Array] = []
    for op, refs, attrs in node.attrs["steps"]:
        ins = [x[i] if kind == "in" else outs[i] for kind, i in refs]
        names = [f"in{k}" for k in range(len(ins))]
        outs.append(eval_node(Node(f"{node.name}_step", op, names, "", dict(attrs)), ins))
    return outs[-1]


def eval_node(node: Node, inputs: list[Array]) -> Array:
    """``node``'s output from its input arrays, as float32."""
    x = [np.asarray(a, dtype=np.float64) for a in inputs]
    with np.errstate(all="ignore"):  # a log or sqrt outside its domain is NaN, as on devices
        return np.ascontiguousarray(REFERENCE[node.op](node, x), dtype=np.float32)


def run_reference(g: Graph, feeds: Mapping[str, Any] | Any, keep: bool = False) -> dict[str, Array]:
    """Evaluate ``g`` with numpy. ``feeds``: ``{input name: array}`` or one array for a graph
    with one input, each of the input's host type (``Graph.feed``). Returns ``{output name:
    array}``, each of the output's host type (``Graph.fetch``); every tensor with
    ``keep=True``."""
    if not isinstance(feeds, Mapping):
        if len(g.inputs) != 1:
            raise GraphError(f"graph '{g.name}' has inputs {g.inputs}; pass a dict of arrays")
        feeds = {g.inputs[0]: feeds}
    values: dict[str, Array] = dict(g.constants)
    for name in g.inputs:
        if name not in feeds:
            raise GraphError(f"graph '{g.name}': no array given for input '{name}'")
        arr = g.feed(name, feeds[name])
        if arr.shape != g.tensors[name].shape:
            raise GraphError(
                f"input '{name}' has shape {arr.shape}, expected {g.tensors[name].shape}"
            )
        values[name] = arr
    for node in g.topo_nodes():
        values[node.output] = eval_node(node, [values[t] for t in node.inputs])
    outs = {t: g.fetch(k, values[t]) for k, t in enumerate(g.outputs)}
    return {**values, **outs} if keep else outs
