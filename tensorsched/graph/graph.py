"""A network as a graph of operator nodes (networkx ``DiGraph``), built by a small Python API.

A ``Graph`` holds named tensors (``TensorInfo``: shape and dtype), constant tensors (numpy
arrays, the weights) and ``Node``s, each one operator with its input and output tensor names
and attributes. The ``DiGraph`` has one vertex per node, keyed by node name, and an edge from
a node to each node that reads its output (the edge's ``tensor`` says which). Every node's
output shape is inferred when it is added (``infer_shape``), so a malformed network is refused
at the node that makes it so.

    g = Graph("tiny")
    x = g.input("x", (1, 3, 32, 32))
    y = g.conv2d(x, g.constant("w", w), strides=1, pads=1)
    y = g.relu(g.batch_norm(y, *bn_params))
    g.output(g.dense(g.flatten(g.global_avg_pool2d(y)), g.constant("fc", fc)))

Operators (``OPS``): conv2d (with groups and dilations), batch_norm, relu, clip, sigmoid,
tanh, leaky_relu (``alpha``), hard_sigmoid (``alpha``, ``beta``), hard_swish, add, sub, mul,
div (numpy broadcasting), max_pool2d, avg_pool2d, global_avg_pool2d, dense, ``batch_matmul``
(numpy's ``matmul`` of two tensors: broadcast batch axes, 1-d operands as a row or a column),
flatten, reshape, softmax, concat; the elementwise math of transformer blocks: erf, sqrt,
exp, log, neg, abs, reciprocal, floor, ceil, ``power`` (by a constant ``exponent``) and
``pow`` (by a broadcast tensor), sign and trunc (toward zero);
the comparisons and logic of masks (``COMPARE``, ``LOGIC``: numpy broadcasting), ``logical_not``,
``to_bool`` (``x != 0``), ``isnan``, ``isinf`` (``detect_positive``, ``detect_negative``),
``where`` (condition, then, else; the three broadcast) and ``mod`` (``fmod``: C's ``fmod``,
the sign of the dividend; else numpy's ``mod``, the sign of the divisor). Every tensor is
float32: a boolean is a float32 mask, 1.0 for true and 0.0 for false, which is what those
operators write; where they read a condition (``where``'s first input, the logic operators'
inputs) any nonzero value, NaN among them, is true;
``reduce`` (``kind`` mean, sum or max over ``axes``, ``keepdims``); ``transpose`` (``perm``) and
``slice`` (ONNX's ``starts`` / ``ends`` / ``axes`` / ``steps``, negative and out-of-range values
clamped as ONNX does: ``slice_plan``); ``pad`` (``pads``: ONNX's begins then ends, one each
per axis, a negative one cropping first; ``mode`` constant, reflect or edge; ``value``, the
constant's: ``ops.pad``); ``resize`` (ONNX's ``Resize`` in mode nearest, linear or cubic: ``sizes``,
``scales`` as ``(numerator, denominator)`` pairs, ``mode``, ``coord``, ``rounding``, cubic's
``cubic_a`` and ``exclude_outside``: ``ops.resize``); ``conv3d`` (NCDHW data, OIDHW weight, groups,
``strides`` and ``dilations`` (d, h, w), ``pads`` ONNX's six: ``ops.conv3d``), ``max_pool3d`` and
``avg_pool3d`` (``kernel``, ``strides``, six ``pads``, ``count_include_pad``, ``ceil_mode``:
``ops.pool.pool3d``); ``take`` (``axis``: the first input gathered along it at the second,
integer indices held as float32, as ONNX's ``Gather``: ``ops.nn.take``); ``layer_norm`` (x,
scale and an optional bias; ``axis``, ``epsilon``: ``ops.nn.layer_norm``). After the fusion pass
a conv2d, conv3d, dense or pooling node also carries an ``epilogue``: a tuple of steps applied
to its output in order, ``("bias",)``,
``("add",)`` (a residual tensor of the output's shape), ``("relu",)`` and ``("clip", lo,
hi)``; the bias and residual tensors are extra inputs of the node, after its own (data,
weight), in the order their steps come. On
a CPU device ``passes.channels_last`` marks conv nodes ``attrs["layout"]`` /
``attrs["data_layout"]`` ``"NHWC"`` and adds ``layout_transform`` nodes (``PASS_OPS``: a
memory order the logical NCHW shapes do not show, so no graph built by hand or imported holds
one). A max_pool2d or avg_pool2d node with ``attrs["ceil_mode"]`` (ONNX's ``ceil_mode=1``;
the key is kept only where true) rounds its output size up (``ops.pool``). ``passes.fuse_injective``
makes each tree of ``INJECTIVE`` nodes one ``fused`` node (``_infer_fused``: its ``steps``, each
an operator of the tree; also one of ``PASS_OPS``), whose kernel computes them all.

Every tensor is float32, but callers may give and take an input or output of another element
type (``HOST_TYPES``: an ONNX model's int64 token ids, bool masks, float16 images), named by
``input(..., host=)`` and ``output(..., host=)``: ``feed`` converts a given array to the
float32 the graph holds (integers only where float32 holds them exactly, booleans as masks),
``fetch`` an output back (a mask to bool, integer values to integers). Both run where a graph
is run (``run_reference``, ``Net``), on the host.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import networkx as nx
import numpy as np

from ..errors import ComputeError, RuntimeCallError, TensorschedError
from ..ops.batch_matmul import matmul_shape
from ..ops.pad import PAD_MODES, pad_plan
from ..ops.pool import pool_mode, pooled_size
from ..ops.resize import COORDINATE_MODES, MODES, NEAREST_MODES, check_resize

DTYPES = ("float32",)
# the element types of the arrays callers give and take (``feed`` / ``fetch``)
HOST_TYPES = ("float32", "float16", "float64", "int32", "int64", "bool")
EXACT_INT = 2**24  # float32 holds every integer up to this magnitude exactly
MAX_ELEMENTS = 2**31 - 1  # a tensor's elements are indexed with 32-bit int
MAX_RANK = 8


class GraphError(TensorschedError):
    """A network is malformed: an unknown tensor, a shape that does not fit its operator, a bad
    attribute. The message names the node and what to change."""


@dataclass(frozen=True)
class TensorInfo:
    shape: tuple[int, ...]
    dtype: str = "float32"

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize


@dataclass
class Node:
    """One operator: ``op`` reads ``inputs`` (tensor names) and writes the tensor ``output``."""

    name: str
    op: str
    inputs: list[str]
    output: str
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def epilogue(self) -> tuple[tuple[Any, ...], ...]:
        return tuple(self.attrs.get("epilogue", ()))


def _pair(v: int | Sequence[int], what: str, node: str) -> tuple[int, int]:
    t = (v, v) if isinstance(v, (int, np.integer)) else tuple(v)
    if len(t) != 2 or not all(isinstance(x, (int, np.integer)) for x in t):
        raise GraphError(f"node '{node}': {what} must be an int or two ints, got {v!r}")
    return int(t[0]), int(t[1])


def _pads(v: int | Sequence[int], node: str) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` from an int, (h, w) or four ints (ONNX's order)."""
    if isinstance(v, (int, np.integer)):
        n = int(v)
        return (n, n, n, n)
    t = tuple(int(x) for x in v)
    if len(t) == 2:
        return (t[0], t[1], t[0], t[1])
    if len(t) != 4:
        raise GraphError(f"node '{node}': pads must be 1, 2 or 4 ints, got {v!r}")
    return (t[0], t[1], t[2], t[3])


def broadcasts_to(shape: Sequence[int], to: Sequence[int]) -> bool:
    """Whether ``shape`` broadcasts to ``to`` without growing it (numpy's rule, dims aligned
    on the right): a layer norm's scale or bias over its normalized axes."""
    return len(shape) <= len(to) and all(d in (1, t) for d, t in zip(shape[::-1], to[::-1]))


def broadcast_shape(a: Sequence[int], b: Sequence[int], node: str) -> tuple[int, ...]:
    """numpy's broadcast of two shapes, or a ``GraphError`` naming the node."""
    try:
        return tuple(int(x) for x in np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        raise GraphError(
            f"node '{node}': shapes {tuple(a)} and {tuple(b)} do not broadcast"
        ) from None


def _pool_attrs(
    kernel: Any, strides: Any, pads: Any, ceil_mode: bool, count_include_pad: bool | None = None
) -> dict[str, Any]:
    """A pool node's attributes (2-d or 3-d): ``ceil_mode`` kept only where set; an average
    pool's ``count_include_pad``."""
    attrs: dict[str, Any] = {"kernel": kernel, "strides": strides, "pads": pads}
    if count_include_pad is not None:
        attrs["count_include_pad"] = bool(count_include_pad)
    if ceil_mode:
        attrs["ceil_mode"] = True
    return attrs


class Graph:
    """A network: tensors, constants and operator nodes (see the module docstring)."""

    def __init__(self, name: str = "net") -> None:
        self.name = name
        self.dag = nx.DiGraph()
        self.nodes: dict[str, Node] = {}  # in insertion order
        self.tensors: dict[str, TensorInfo] = {}
        self.constants: dict[str, np.ndarray] = {}
        self.producer: dict[str, str] = {}  # tensor -> node writing it
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        # the element types callers give and take, one per input and output (HOST_TYPES)
        self.input_types: list[str] = []
        self.output_types: list[str] = []
        self.plan: Any = None  # a passes.MemoryPlan once plan_memory has run

    # ---- building

    def fresh_name(self, base: str) -> str:
        """``base``, or ``base_1``, ``base_2`` ...: the first that names no tensor or node."""
        name, i = base, 1
        while name in self.tensors or name in self.nodes:
            name, i = f"{base}_{i}", i + 1
        return name

    def _check_new_tensor(self, name: str, shape: Sequence[int], dtype: str) -> TensorInfo:
        if not isinstance(name, str) or not name:
            raise GraphError(f"a tensor name must be non-empty text, got {name!r}")
        if name in self.tensors:
            raise GraphError(f"tensor '{name}' is defined twice; give each tensor its own name")
        if dtype not in DTYPES:
            raise GraphError(f"tensor '{name}': dtype {dtype!r}; supported: {', '.join(DTYPES)}")
        if len(shape) > MAX_RANK or not all(
            isinstance(d, (int, np.integer)) and 0 < d <= MAX_ELEMENTS for d in shape
        ):
            raise GraphError(
                f"tensor '{name}': shape {tuple(shape)!r} must be at most {MAX_RANK} positive ints"
            )
        info = TensorInfo(tuple(int(d) for d in shape), dtype)
        if info.size > MAX_ELEMENTS:
            raise GraphError(
                f"tensor '{name}': shape {info.shape} has {info.size} elements, more than "
                f"{MAX_ELEMENTS}"
            )
        return info

    def input(
        self, name: str, shape: Sequence[int], dtype: str = "float32", host: str = "float32"
    ) -> str:
        """Declare a network input (given by callers as ``host`` arrays); returns its name."""
        _check_host(host, f"input '{name}'")
        self.tensors[name] = self._check_new_tensor(name, shape, dtype)
        self.inputs.append(name)
        self.input_types.append(host)
        return name

    def constant(self, name: str, value: Any) -> str:
        """A constant tensor (a weight) holding ``value`` as float32; returns its name."""
        arr = np.ascontiguousarray(np.asarray(value, dtype=np.float32))
        if arr.ndim == 0:
            arr = arr.reshape(1)
        self.tensors[name] = self._check_new_tensor(name, arr.shape, "float32")
        self.constants[name] = arr
        return name

    def output(self, *names: str, host: str = "float32") -> None:
        """Mark tensors as the network's outputs (taken by callers as ``host`` arrays)."""
        for n in names:
            if n not in self.tensors:
                raise GraphError(f"output '{n}' is not a tensor of the graph")
            _check_host(host, f"output '{n}'")
            self.outputs.append(n)
            self.output_types.append(host)

    def feed(self, name: str, value: Any, exact: int = EXACT_INT) -> np.ndarray:
        """The float32 array the graph holds for input ``name`` given ``value`` (its host
        type's array); integers must be within ``exact`` (what the storage holds exactly),
        else a ``RuntimeCallError``."""
        host = self.input_types[self.inputs.index(name)]
        arr = np.asarray(value)
        what = f"graph '{self.name}': input '{name}' is {host}"
        if host in ("int32", "int64", "bool"):
            if arr.dtype.kind not in ("b" if host == "bool" else "iu"):
                raise RuntimeCallError(f"{what}; got an array of {arr.dtype}: pass {host} values")
            peak = max(-int(arr.min()), int(arr.max())) if arr.size and host != "bool" else 0
            if peak > exact:
                held = "half (fp16=True)" if exact < EXACT_INT else "float32"
                raise RuntimeCallError(
                    f"{what} and holds {peak} in magnitude; the graph holds integers as {held}, "
                    f"exact up to {exact} only: keep the values within it"
                    + (", or build without fp16" if exact < EXACT_INT else "")
                )
        elif host == "float64" and arr.dtype.kind == "f":
            finite = arr[np.isfinite(arr)]
            if finite.size and float(np.max(np.abs(finite))) > float(np.finfo(np.float32).max):
                raise RuntimeCallError(
                    f"{what} and holds values beyond float32's range (the graph computes in "
                    "float32): scale the input into it"
                )
        return np.asarray(arr, dtype=np.float32)

    def fetch(self, k: int, value: np.ndarray) -> np.ndarray:
        """Output ``k`` as callers take it: the graph's float32 ``value`` in the output's host
        type (a mask as bool, integer values as integers, in range or a ``RuntimeCallError``)."""
        host = self.output_types[k]
        if host == "bool":
            return np.asarray(value != 0)
        if host in ("int32", "int64"):
            info = np.iinfo(host)
            fits = np.isfinite(value) & (value >= float(info.min)) & (value < -float(info.min))
            if not np.all(fits):
                raise RuntimeCallError(
                    f"graph '{self.name}': output '{self.outputs[k]}' is {host} but holds "
                    f"{value[~fits].reshape(-1)[0]} (inf, nan or beyond {host}'s range), which "
                    "has no integer value: check the model's inputs"
                )
            return np.rint(value).astype(host)
        return np.asarray(value, dtype=host)

    def add_node(
        self,
        op: str,
        inputs: Sequence[str],
        attrs: dict[str, Any] | None = None,
        name: str | None = None,
        output: str | None = None,
        internal: bool = False,
    ) -> str:
        """Add operator ``op`` reading ``inputs``; its output shape is inferred. Returns the
        output tensor's name. (``internal``: a graph pass adding one of ``PASS_OPS``.)"""
        if op not in OPS and not (op in PASS_OPS and internal):
            raise GraphError(f"unknown operator '{op}'; supported: {', '.join(sorted(OPS))}")
        name = name or self.fresh_name(op)
        if name in self.nodes:
            raise GraphError(f"node '{name}' is defined twice; give each node its own name")
        for t in inputs:
            if t not in self.tensors:
                raise GraphError(f"node '{name}' ({op}) reads '{t}', which no node defines")
        node = Node(name, op, list(inputs), "", dict(attrs or {}))
        info = infer_shape(self, node)
        if not info.shape:  # of scalar operands only (a 0-d model input): no loop to run it
            raise GraphError(
                f"node '{name}' ({op}): its output is a scalar (0-d), which the graph does "
                "not hold; give its operands a dim of 1"
            )
        out = output or self.fresh_name(name if name not in self.tensors else f"{name}_out")
        self.tensors[out] = self._check_new_tensor(out, info.shape, info.dtype)
        node.output = out
        self._insert(node)
        return out

    def _insert(self, node: Node) -> None:
        self.nodes[node.name] = node
        self.producer[node.output] = node.name
        self.dag.add_node(node.name)
        for t in node.inputs:
            if t in self.producer and self.producer[t] != node.name:
                self.dag.add_edge(self.producer[t], node.name, tensor=t)

    # the operators, by name
    def conv2d(
        self,
        x: str,
        w: str,
        b: str | None = None,
        strides: int | Sequence[int] = 1,
        pads: int | Sequence[int] = 0,
        groups: int = 1,
        name: str | None = None,
        dilations: int | Sequence[int] = 1,
    ) -> str:
        """A 2-d convolution; ``dilations`` (an int or (h, w)): the distance between the
        kernel's taps, kept in the node's attrs only where it is not (1, 1)."""
        attrs = {"strides": strides, "pads": pads, "groups": groups, "dilations": dilations}
        return self.add_node("conv2d", [x, w] + ([b] if b else []), attrs, name)

    def batch_norm(
        self,
        x: str,
        scale: str,
        bias: str,
        mean: str,
        var: str,
        epsilon: float = 1e-5,
        name: str | None = None,
    ) -> str:
        return self.add_node("batch_norm", [x, scale, bias, mean, var], {"epsilon": epsilon}, name)

    def relu(self, x: str, name: str | None = None) -> str:
        return self.add_node("relu", [x], {}, name)

    def clip(self, x: str, lo: float = 0.0, hi: float = 6.0, name: str | None = None) -> str:
        return self.add_node("clip", [x], {"min": float(lo), "max": float(hi)}, name)

    def add(self, a: str, b: str, name: str | None = None) -> str:
        return self.add_node("add", [a, b], {}, name)

    def max_pool2d(
        self, x: str, kernel: int | Sequence[int], strides: int | Sequence[int] = 1,
        pads: int | Sequence[int] = 0, name: str | None = None, ceil_mode: bool = False,
    ) -> str:  # fmt: skip
        """``ceil_mode``: ONNX's ``ceil_mode=1``, the output size rounded up (``ops.pool``)."""
        attrs = _pool_attrs(kernel, strides, pads, ceil_mode)
        return self.add_node("max_pool2d", [x], attrs, name)

    def avg_pool2d(
        self, x: str, kernel: int | Sequence[int], strides: int | Sequence[int] = 1,
        pads: int | Sequence[int] = 0, count_include_pad: bool = False, name: str | None = None,
        ceil_mode: bool = False,
    ) -> str:  # fmt: skip
        """``ceil_mode``: ONNX's ``ceil_mode=1``, the output size rounded up; what the last
        windows reach past the padded input is never counted (``ops.pool``)."""
        attrs = _pool_attrs(kernel, strides, pads, ceil_mode, count_include_pad)
        return self.add_node("avg_pool2d", [x], attrs, name)

    def conv3d(
        self, x: str, w: str, b: str | None = None, strides: int | Sequence[int] = 1,
        pads: int | Sequence[int] = 0, groups: int = 1, name: str | None = None,
        dilations: int | Sequence[int] = 1,
    ) -> str:  # fmt: skip
        """A 3-d convolution of NCDHW ``x`` by the OIDHW weight ``w`` (``ops.conv3d``):
        ``strides`` and ``dilations`` an int or (d, h, w); ``pads`` an int, (pd, ph, pw) or
        ONNX's six (front, top, left, back, bottom, right)."""
        attrs = {"strides": strides, "pads": pads, "groups": groups, "dilations": dilations}
        return self.add_node("conv3d", [x, w] + ([b] if b else []), attrs, name)

    def max_pool3d(
        self, x: str, kernel: int | Sequence[int], strides: int | Sequence[int] = 1,
        pads: int | Sequence[int] = 0, name: str | None = None, ceil_mode: bool = False,
    ) -> str:  # fmt: skip
        """3-d max pooling of NCDHW ``x`` (``ops.pool.pool3d``); arguments as ``conv3d``'s."""
        attrs = _pool_attrs(kernel, strides, pads, ceil_mode)
        return self.add_node("max_pool3d", [x], attrs, name)

    def avg_pool3d(
        self, x: str, kernel: int | Sequence[int], strides: int | Sequence[int] = 1,
        pads: int | Sequence[int] = 0, count_include_pad: bool = False, name: str | None = None,
        ceil_mode: bool = False,
    ) -> str:  # fmt: skip
        """3-d average pooling of NCDHW ``x``; the ceil mode's overhang is never counted."""
        attrs = _pool_attrs(kernel, strides, pads, ceil_mode, count_include_pad)
        return self.add_node("avg_pool3d", [x], attrs, name)

    def global_avg_pool2d(self, x: str, name: str | None = None) -> str:
        return self.add_node("global_avg_pool2d", [x], {}, name)

    def dense(self, x: str, w: str, b: str | None = None, name: str | None = None) -> str:
        """``x @ w.T (+ b)`` with ``x`` (N, K) and ``w`` (O, K)."""
        return self.add_node("dense", [x, w] + ([b] if b else []), {}, name)

    def batch_matmul(self, a: str, b: str, name: str | None = None) -> str:
        """``numpy.matmul(a, b)`` of two tensors (computed or constant): the last two axes
        multiply, the leading ones broadcast; a 1-d ``a`` is a row, a 1-d ``b`` a column."""
        return self.add_node("batch_matmul", [a, b], {}, name)

    def flatten(self, x: str, axis: int = 1, name: str | None = None) -> str:
        return self.add_node("flatten", [x], {"axis": axis}, name)

    def reshape(self, x: str, shape: Sequence[int], name: str | None = None) -> str:
        return self.add_node("reshape", [x], {"shape": tuple(int(s) for s in shape)}, name)

    def softmax(self, x: str, axis: int = -1, name: str | None = None) -> str:
        return self.add_node("softmax", [x], {"axis": axis}, name)

    def concat(self, xs: Sequence[str], axis: int = 1, name: str | None = None) -> str:
        return self.add_node("concat", list(xs), {"axis": axis}, name)

    def transpose(self, x: str, perm: Sequence[int] | None = None, name: str | None = None) -> str:
        """Output axis ``i`` is input axis ``perm[i]``; no ``perm`` reverses the axes (ONNX's
        default)."""
        return self.add_node("transpose", [x], {"perm": perm}, name)

    def slice(
        self, x: str, starts: Sequence[int], ends: Sequence[int],
        axes: Sequence[int] | None = None, steps: Sequence[int] | None = None,
        name: str | None = None,
    ) -> str:  # fmt: skip
        """ONNX's ``Slice`` with constant ``starts``, ``ends``, ``axes`` (default: the first
        ones) and ``steps`` (default 1): see ``slice_plan``."""
        attrs = {"starts": starts, "ends": ends, "axes": axes, "steps": steps}
        return self.add_node("slice", [x], attrs, name)

    def pad(
        self, x: str, pads: Sequence[int], mode: str = "constant", value: float = 0.0,
        name: str | None = None,
    ) -> str:  # fmt: skip
        """``x`` with ``pads[d]`` elements before and ``pads[rank + d]`` after axis ``d``."""
        return self.add_node("pad", [x], {"pads": pads, "mode": mode, "value": value}, name)

    def resize(
        self, x: str, sizes: Sequence[int], scales: Sequence[tuple[int, int]],
        mode: str = "nearest", coord: str = "half_pixel", rounding: str = "round_prefer_floor",
        name: str | None = None, cubic_a: float = -0.75, exclude_outside: bool = False,
    ) -> str:  # fmt: skip
        """ONNX's ``Resize`` (``ops.resize``): ``x`` resized to ``sizes``, each axis by its
        scale ``(numerator, denominator)``, in mode ``nearest``, ``linear`` or ``cubic``
        under the coordinate transformation mode ``coord`` and the nearest mode
        ``rounding``; ``cubic_a`` and ``exclude_outside`` are cubic's."""
        attrs = {"sizes": sizes, "scales": scales, "mode": mode, "coord": coord,
                 "rounding": rounding, "cubic_a": cubic_a,
                 "exclude_outside": exclude_outside}  # fmt: skip
        return self.add_node("resize", [x], attrs, name)

    def layer_norm(
        self, x: str, scale: str, bias: str | None = None, axis: int = -1,
        epsilon: float = 1e-5, name: str | None = None,
    ) -> str:  # fmt: skip
        """``x`` normalized over the axes from ``axis`` to the last, times ``scale`` plus
        ``bias`` (``ops.nn.layer_norm``)."""
        ins = [x, scale] + ([bias] if bias else [])
        return self.add_node("layer_norm", ins, {"axis": axis, "epsilon": epsilon}, name)

    def take(self, x: str, indices: str, axis: int = 0, name: str | None = None) -> str:
        """``x`` gathered along ``axis`` at the integers ``indices`` holds (``ops.nn.take``)."""
        return self.add_node("take", [x, indices], {"axis": axis}, name)

    def reduce(
        self, x: str, kind: str, axes: Sequence[int] | None = None, keepdims: bool = True,
        name: str | None = None,
    ) -> str:  # fmt: skip
        """The ``kind`` (``mean``, ``sum`` or ``max``) of ``x`` over ``axes`` (default: all)."""
        attrs = {"kind": kind, "axes": axes, "keepdims": keepdims}
        return self.add_node("reduce", [x], attrs, name)

    # ---- reading

    def topo_nodes(self) -> list[Node]:
        """The nodes in a topological order (insertion order among independent nodes)."""
        index = {n: i for i, n in enumerate(self.nodes)}
        return [self.nodes[n] for n in nx.lexicographical_topological_sort(self.dag, key=index.get)]

    def consumers(self, tensor: str) -> list[Node]:
        return [n for n in self.nodes.values() if tensor in n.inputs]

    def __iter__(self) -> Iterator[Node]:
        return iter(self.topo_nodes())

    def __len__(self) -> int:
        return len(self.nodes)

    def op_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.nodes.values():
            out[n.op] = out.get(n.op, 0) + 1
        return out

    # ---- editing (for passes)

    def remove_node(self, name: str) -> None:
        node = self.nodes.pop(name)
        self.dag.remove_node(name)
        if self.producer.get(node.output) == name:
            del self.producer[node.output]

    def replace_node(self, node: Node) -> None:
        """Put ``node`` in place of the node of the same name (inputs may have changed)."""
        self.dag.remove_node(node.name)
        self.nodes[node.name] = node
        self.producer[node.output] = node.name
        self.dag.add_node(node.name)
        for t in node.inputs:
            if t in self.producer:
                self.dag.add_edge(self.producer[t], node.name, tensor=t)
        for c in self.consumers(node.output):
            self.dag.add_edge(node.name, c.name, tensor=node.output)

    def rename_uses(self, old: str, new: str) -> None:
        """Every reader of tensor ``old`` (and the outputs list) reads ``new`` instead."""
        for n in list(self.nodes.values()):
            if old in n.inputs:
                n.inputs = [new if t == old else t for t in n.inputs]
                self.replace_node(n)
        self.outputs = [new if t == old else t for t in self.outputs]

    def prune(self) -> None:
        """Drop nodes and constants that no output depends on."""
        live = set(self.outputs)
        for node in reversed(self.topo_nodes()):
            if node.output in live:
                live.update(node.inputs)
            else:
                self.remove_node(node.name)
        for t in list(self.tensors):
            if t not in live and t not in self.inputs and t not in self.producer:
                self.tensors.pop(t)
                self.constants.pop(t, None)

    def copy(self) -> Graph:
        g = Graph(self.name)
        g.dag = self.dag.copy()
        g.nodes = {k: Node(n.name, n.op, list(n.inputs), n.output, dict(n.attrs))
                   for k, n in self.nodes.items()}  # fmt: skip
        g.tensors = dict(self.tensors)
        g.constants = dict(self.constants)
        g.producer = dict(self.producer)
        g.inputs, g.outputs = list(self.inputs), list(self.outputs)
        g.input_types, g.output_types = list(self.input_types), list(self.output_types)
        return g

    def summary(self) -> str:
        lines = [f"graph '{self.name}': {len(self.nodes)} nodes, {len(self.constants)} constants"]
        for n in self.topo_nodes():
            ep = "+" + "+".join(s[0] for s in n.epilogue) if n.epilogue else ""
            lines.append(f"  {n.name}: {n.op}{ep} {self.tensors[n.output].shape}")
        return "\n".join(lines)


def _check_host(host: str, what: str) -> None:
    if host not in HOST_TYPES:
        raise GraphError(f"{what}: host type {host!r}; supported: {', '.join(HOST_TYPES)}")


# ---- shape inference, one function per operator


def _shape(g: Graph, t: str) -> tuple[int, ...]:
    return g.tensors[t].shape


def _arity(node: Node, lo: int, hi: int | None = None) -> None:
    hi = lo if hi is None else hi
    if not lo <= len(node.inputs) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise GraphError(
            f"node '{node.name}' ({node.op}) takes {want} inputs, got {len(node.inputs)}"
        )


def _rank(g: Graph, node: Node, t: str, rank: int, what: str) -> tuple[int, ...]:
    s = _shape(g, t)
    if len(s) != rank:
        raise GraphError(
            f"node '{node.name}' ({node.op}): {what} '{t}' must have {rank} dims, got shape {s}"
        )
    return s


def _window(
    g: Graph, node: Node, kernel: tuple[int, int], ceil: bool = False
) -> tuple[int, int, int, int, tuple[int, int]]:
    """Checks strides and pads of a windowed op; returns ``N, C, OH, OW, strides``."""
    N, C, H, W = _rank(g, node, node.inputs[0], 4, "the input")
    a = node.attrs
    strides = _pair(a.get("strides", 1), "strides", node.name)
    pads = _pads(a.get("pads", 0), node.name)
    a["strides"], a["pads"] = strides, pads
    if min(strides) < 1 or min(pads) < 0 or min(kernel) < 1:
        raise GraphError(
            f"node '{node.name}' ({node.op}): strides {strides} must be positive, pads {pads} "
            f"non-negative and the kernel {kernel} positive"
        )
    if max(pads) >= max(kernel) + 64 or max(kernel) > 4096 or max(strides) > 4096:
        raise GraphError(
            f"node '{node.name}' ({node.op}): kernel {kernel}, strides {strides} or pads "
            f"{pads} out of range"
        )
    OH = pooled_size(H, kernel[0], strides[0], pads[0], pads[2], ceil)
    OW = pooled_size(W, kernel[1], strides[1], pads[1], pads[3], ceil)
    if OH < 1 or OW < 1:
        raise GraphError(
            f"node '{node.name}' ({node.op}): the {kernel[0]}x{kernel[1]} window does not fit "
            f"the padded {H}x{W} input (pads {pads})"
        )
    return N, C, OH, OW, strides


def _infer_conv2d(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 2, 2 + 2 + len(node.epilogue))
    CO, CIg, KH, KW = _rank(g, node, node.inputs[1], 4, "the weight")
    groups = node.attrs.setdefault("groups", 1)
    if not isinstance(groups, (int, np.integer)) or groups < 1:
        raise GraphError(f"node '{node.name}' (conv2d): groups must be a positive int")
    dil = _pair(node.attrs.pop("dilations", 1), "dilations", node.name)
    if min(dil) < 1 or max(dil) > 4096:
        raise GraphError(
            f"node '{node.name}' (conv2d): dilations {dil} must be ints from 1 to 4096"
        )
    if dil != (1, 1):  # kept only where the taps are apart
        node.attrs["dilations"] = dil
    # the window a dilated kernel spans
    N, C, OH, OW, _ = _window(g, node, ((KH - 1) * dil[0] + 1, (KW - 1) * dil[1] + 1))
    if C != CIg * groups or CO % groups:
        raise GraphError(
            f"node '{node.name}' (conv2d): the input has {C} channels but the weight "
            f"{(CO, CIg, KH, KW)} with groups={groups} expects {CIg * groups} (and output "
            f"channels divisible by groups)"
        )
    has_bias = len(node.inputs) - 2 - sum(1 for s in node.epilogue if s[0] in ("bias", "add"))
    if has_bias not in (0, 1):
        raise GraphError(f"node '{node.name}' (conv2d): too many inputs")
    if has_bias and _shape(g, node.inputs[2]) != (CO,):
        raise GraphError(
            f"node '{node.name}' (conv2d): bias '{node.inputs[2]}' must have shape ({CO},), "
            f"got {_shape(g, node.inputs[2])}"
        )
    return (N, CO, OH, OW)


def _epilogue_inputs(g: Graph, node: Node, shape: tuple[int, ...], first: int = 1) -> None:
    """A fused node's extra inputs (from input ``first`` on: after a pool's one input): one
    per bias (its channels) or add (the output's shape)."""
    steps = [s for s in node.epilogue if s[0] in ("bias", "add")]
    _arity(node, first + len(steps))
    for step, t in zip(steps, node.inputs[first:]):
        want = (shape[1],) if step[0] == "bias" else shape
        if _shape(g, t) != want:
            raise GraphError(f"node '{node.name}': epilogue input '{t}' must have shape {want}")


def _infer_pool(g: Graph, node: Node) -> tuple[int, ...]:
    kernel = _pair(node.attrs.get("kernel", 1), "kernel", node.name)
    node.attrs["kernel"] = kernel
    ceil = node.attrs.pop("ceil_mode", False)  # kept only where true
    if not isinstance(ceil, (bool, int, np.integer, np.bool_)) or ceil not in (0, 1):
        raise GraphError(
            f"node '{node.name}' ({node.op}): ceil_mode must be True or False, got {ceil!r}"
        )
    if ceil:
        node.attrs["ceil_mode"] = True
    N, C, OH, OW, _ = _window(g, node, kernel, bool(ceil))
    _epilogue_inputs(g, node, (N, C, OH, OW))
    pads = node.attrs["pads"]
    if max(pads[0], pads[2]) >= kernel[0] or max(pads[1], pads[3]) >= kernel[1]:
        raise GraphError(
            f"node '{node.name}' ({node.op}): pads {pads} must be smaller than the kernel "
            f"{kernel} (a window of padding only)"
        )
    return (N, C, OH, OW)


def node_pool_mode(node: Node) -> int:
    """The ``ops.pool.PoolShape.mode`` of a max or average pooling node (2-d or 3-d)."""
    a = node.attrs
    return pool_mode(
        node.op in ("max_pool2d", "max_pool3d"), bool(a.get("count_include_pad")),
        bool(a.get("ceil_mode")),
    )  # fmt: skip


def _triple(v: Any, what: str, node: Node) -> tuple[int, int, int]:
    t = (v, v, v) if isinstance(v, (int, np.integer)) else tuple(v)
    if len(t) != 3 or not all(isinstance(x, (int, np.integer)) and 1 <= x <= 4096 for x in t):
        raise GraphError(
            f"node '{node.name}' ({node.op}): {what} must be an int or three ints from 1 to "
            f"4096, got {v!r}"
        )
    return int(t[0]), int(t[1]), int(t[2])


def _pads3d(v: Any, node: Node) -> tuple[int, ...]:
    """ONNX's six pads (front, top, left, back, bottom, right) from an int, (d, h, w) or six
    ints."""
    t = (v,) if isinstance(v, (int, np.integer)) else tuple(v)
    if len(t) not in (1, 3, 6) or not all(
        isinstance(x, (int, np.integer)) and 0 <= x <= 4096 for x in t
    ):
        raise GraphError(
            f"node '{node.name}' ({node.op}): pads must be 1, 3 or 6 non-negative ints, got {v!r}"
        )
    p = [int(x) for x in t]
    return tuple(p * 6 if len(p) == 1 else p + p if len(p) == 3 else p)


def _window3d(
    g: Graph, node: Node, span: tuple[int, int, int], ceil: bool = False
) -> tuple[int, int, tuple[int, ...]]:
    """Checks strides and pads of a 3-d windowed op whose window covers ``span`` input
    elements per axis; returns ``N, C, (OD, OH, OW)``."""
    N, C, *sizes = _rank(g, node, node.inputs[0], 5, "the input")
    a = node.attrs
    a["strides"] = strides = _triple(a.get("strides", 1), "strides", node)
    a["pads"] = pads = _pads3d(a.get("pads", 0), node)
    out = tuple(
        pooled_size(n, k, s, pads[i], pads[3 + i], ceil)
        for i, (n, k, s) in enumerate(zip(sizes, span, strides))
    )
    if min(out) < 1:
        raise GraphError(
            f"node '{node.name}' ({node.op}): the {'x'.join(map(str, span))} window does not "
            f"fit the padded {'x'.join(map(str, sizes))} input (pads {pads})"
        )
    return N, C, out


def _infer_conv3d(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 2, 2 + 1 + len(node.epilogue))
    CO, CIg, KD, KH, KW = _rank(g, node, node.inputs[1], 5, "the weight")
    groups = node.attrs.setdefault("groups", 1)
    if not isinstance(groups, (int, np.integer)) or groups < 1:
        raise GraphError(f"node '{node.name}' (conv3d): groups must be a positive int")
    node.attrs["groups"] = int(groups)
    dil = _triple(node.attrs.get("dilations", 1), "dilations", node)
    node.attrs["dilations"] = dil
    span = ((KD - 1) * dil[0] + 1, (KH - 1) * dil[1] + 1, (KW - 1) * dil[2] + 1)
    N, C, out = _window3d(g, node, (span[0], span[1], span[2]))
    if C != CIg * groups or CO % groups:
        raise GraphError(
            f"node '{node.name}' (conv3d): the input has {C} channels but the weight "
            f"{(CO, CIg, KD, KH, KW)} with groups={groups} expects {CIg * groups} (and output "
            f"channels divisible by groups)"
        )
    has_bias = len(node.inputs) - 2 - sum(1 for s in node.epilogue if s[0] in ("bias", "add"))
    if has_bias not in (0, 1):
        raise GraphError(f"node '{node.name}' (conv3d): too many inputs")
    if has_bias and _shape(g, node.inputs[2]) != (CO,):
        raise GraphError(
            f"node '{node.name}' (conv3d): bias '{node.inputs[2]}' must have shape ({CO},), "
            f"got {_shape(g, node.inputs[2])}"
        )
    _epilogue_inputs(g, node, (N, CO, *out), first=2 + has_bias)
    return (N, CO, *out)


def _infer_pool3d(g: Graph, node: Node) -> tuple[int, ...]:
    kernel = _triple(node.attrs.get("kernel", 1), "kernel", node)
    node.attrs["kernel"] = kernel
    ceil = node.attrs.pop("ceil_mode", False)  # kept only where true
    if not isinstance(ceil, (bool, int, np.integer, np.bool_)) or ceil not in (0, 1):
        raise GraphError(
            f"node '{node.name}' ({node.op}): ceil_mode must be True or False, got {ceil!r}"
        )
    if ceil:
        node.attrs["ceil_mode"] = True
    N, C, out = _window3d(g, node, kernel, bool(ceil))
    _epilogue_inputs(g, node, (N, C, *out))
    pads = node.attrs["pads"]
    if any(max(pads[i], pads[3 + i]) >= k for i, k in enumerate(kernel)):
        raise GraphError(
            f"node '{node.name}' ({node.op}): pads {pads} must be smaller than the kernel "
            f"{kernel} (a window of padding only)"
        )
    return (N, C, *out)


def _infer_dense(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 2, 3 + len(node.epilogue))
    N, K = _rank(g, node, node.inputs[0], 2, "the input")
    O, K2 = _rank(g, node, node.inputs[1], 2, "the weight")
    if K != K2:
        raise GraphError(
            f"node '{node.name}' (dense): the input has {K} features but the weight "
            f"({O}, {K2}) expects {K2}"
        )
    extra = len(node.inputs) - 2 - sum(1 for s in node.epilogue if s[0] in ("bias", "add"))
    if extra == 1 and _shape(g, node.inputs[2]) != (O,):
        raise GraphError(f"node '{node.name}' (dense): bias must have shape ({O},)")
    return (N, O)


def _infer_batch_matmul(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 2)
    try:
        out = matmul_shape(_shape(g, node.inputs[0]), _shape(g, node.inputs[1]))
    except ComputeError as exc:
        raise GraphError(f"node '{node.name}' (batch_matmul): {exc}") from None
    if not out:
        raise GraphError(
            f"node '{node.name}' (batch_matmul): the product of two 1-d tensors is a scalar, "
            "which the graph does not hold; make one operand 2-d (a row or a column)"
        )
    return out


def _infer_batch_norm(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 5)
    s = _shape(g, node.inputs[0])
    if len(s) < 2:
        raise GraphError(f"node '{node.name}' (batch_norm): the input needs a channel axis")
    for t in node.inputs[1:]:
        if _shape(g, t) != (s[1],):
            raise GraphError(
                f"node '{node.name}' (batch_norm): '{t}' must have shape ({s[1]},), "
                f"got {_shape(g, t)}"
            )
    return s


def _infer_same(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 1)
    if node.op == "clip" and not node.attrs.get("min", 0.0) <= node.attrs.get("max", 0.0):
        raise GraphError(f"node '{node.name}' (clip): min {node.attrs['min']} > max")
    defaults = {"leaky_relu": {"alpha": 0.01}, "hard_sigmoid": {"alpha": 0.2, "beta": 0.5}}
    for key, default in defaults.get(node.op, {}).items():
        value = node.attrs.setdefault(key, default)
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise GraphError(f"node '{node.name}' ({node.op}): {key} must be a finite number")
        node.attrs[key] = float(value)
    return _shape(g, node.inputs[0])


def _axis(node: Node, axis: Any, rank: int, inclusive: bool = False) -> int:
    """``axis`` in ``-rank .. rank - 1`` (``.. rank`` when ``inclusive``), made non-negative."""
    top = rank + 1 if inclusive else rank
    if not isinstance(axis, (int, np.integer)) or not -rank <= axis < top:
        raise GraphError(f"node '{node.name}' ({node.op}): axis {axis!r} out of range")
    return int(axis) + rank if axis < 0 else int(axis)


def _infer_softmax(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 1)
    s = _shape(g, node.inputs[0])
    node.attrs["axis"] = _axis(node, node.attrs.get("axis", -1), len(s))
    return s


def _infer_add(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 2)
    return broadcast_shape(_shape(g, node.inputs[0]), _shape(g, node.inputs[1]), node.name)


def _infer_flatten(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 1)
    s = _shape(g, node.inputs[0])
    axis = _axis(node, node.attrs.get("axis", 1), len(s), inclusive=True)
    node.attrs["axis"] = axis
    return (math.prod(s[:axis]), math.prod(s[axis:]))


def _infer_reshape(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 1)
    s = _shape(g, node.inputs[0])
    want = list(node.attrs.get("shape", ()))
    if len(want) > MAX_RANK or want.count(-1) > 1 or any(d < -1 for d in want):
        raise GraphError(f"node '{node.name}' (reshape): bad target shape {tuple(want)}")
    want = [s[i] if d == 0 and i < len(s) else d for i, d in enumerate(want)]  # ONNX's 0: keep
    known = math.prod(d for d in want if d != -1)
    if -1 in want:
        if known == 0 or math.prod(s) % known:
            raise GraphError(
                f"node '{node.name}' (reshape): {s} cannot be reshaped to {tuple(want)}"
            )
        want[want.index(-1)] = math.prod(s) // known
    if math.prod(want) != math.prod(s):
        raise GraphError(f"node '{node.name}' (reshape): {s} cannot be reshaped to {tuple(want)}")
    node.attrs["shape"] = tuple(want)
    return tuple(want)


def _infer_concat(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 1, 1 << 16)
    shapes = [_shape(g, t) for t in node.inputs]
    axis = _axis(node, node.attrs.get("axis", 1), len(shapes[0]))
    node.attrs["axis"] = axis
    for s in shapes[1:]:
        if len(s) != len(shapes[0]) or any(
            a != b for i, (a, b) in enumerate(zip(s, shapes[0])) if i != axis
        ):
            raise GraphError(f"node '{node.name}' (concat): shapes {shapes} differ off axis {axis}")
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return tuple(out)


INT64 = (-(2**63), 2**63 - 1)


def _int_list(node: Node, key: str, default: Sequence[int] | None = None) -> tuple[int, ...]:
    """The attribute ``key``: a list of at most ``MAX_RANK`` int64 values (``default`` when
    it is missing or ``None``)."""
    v = node.attrs.get(key)
    if v is None and default is not None:
        v = tuple(default)
    if (
        not isinstance(v, (list, tuple))
        or len(v) > MAX_RANK
        or not all(isinstance(x, (int, np.integer)) and INT64[0] <= x <= INT64[1] for x in v)
    ):
        raise GraphError(
            f"node '{node.name}' ({node.op}): {key} must be a list of at most {MAX_RANK} "
            f"int64 values, got {v!r}"
        )
    return tuple(int(x) for x in v)


def _axes(node: Node, axes: Sequence[int], rank: int) -> tuple[int, ...]:
    """``axes`` made non-negative; each in range and listed once."""
    out = tuple(_axis(node, a, rank) for a in axes)
    if len(set(out)) != len(out):
        raise GraphError(f"node '{node.name}' ({node.op}): axes {tuple(axes)} repeat an axis")
    return out


def slice_plan(
    shape: Sequence[int], starts: Sequence[int], ends: Sequence[int], axes: Sequence[int],
    steps: Sequence[int],
) -> list[tuple[int, int, int]]:  # fmt: skip
    """ONNX's ``Slice``, per axis of ``shape``: ``(first index, step, count)``. ``axes`` are
    non-negative and ``steps`` non-zero. A negative start or end counts from the end; then
    both are clamped to the axis (``0 .. dim`` for a positive step, ``-1 .. dim - 1`` for a
    negative one, where -1 means before the first element)."""
    plan = [(0, 1, d) for d in shape]
    for start, end, axis, step in zip(starts, ends, axes, steps):
        dim = shape[axis]
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        count = max(0, -(-(end - start) // step))
        plan[axis] = (start, step, count)
    return plan


def _infer_slice(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 1)
    s = _shape(g, node.inputs[0])
    starts, ends = _int_list(node, "starts"), _int_list(node, "ends")
    axes = _axes(node, _int_list(node, "axes", range(len(starts))), len(s))
    steps = _int_list(node, "steps", (1,) * len(starts))
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise GraphError(
            f"node '{node.name}' (slice): starts {starts}, ends {ends}, axes {axes} and steps "
            f"{steps} must have the same length"
        )
    if 0 in steps:
        raise GraphError(f"node '{node.name}' (slice): steps {steps} must be non-zero")
    node.attrs.update(starts=starts, ends=ends, axes=axes, steps=steps)
    out = tuple(count for _, _, count in slice_plan(s, starts, ends, axes, steps))
    if 0 in out:
        raise GraphError(
            f"node '{node.name}' (slice): starts {starts}, ends {ends} (axes {axes}, steps "
            f"{steps}) select no element of the input of shape {s}; tensors are never empty"
        )
    return out


def _infer_transpose(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 1)
    s = _shape(g, node.inputs[0])
    perm = _int_list(node, "perm", tuple(range(len(s) - 1, -1, -1)))
    if sorted(perm) != list(range(len(s))):
        raise GraphError(
            f"node '{node.name}' (transpose): perm {perm} is not a permutation of the "
            f"{len(s)} axes of the input of shape {s}"
        )
    node.attrs["perm"] = perm
    return tuple(s[p] for p in perm)


def _infer_pad(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 1)
    s = _shape(g, node.inputs[0])
    a, where = node.attrs, f"node '{node.name}' (pad)"
    pads = a.get("pads")
    if (
        not isinstance(pads, (list, tuple))
        or len(pads) != 2 * len(s)
        or not all(isinstance(x, (int, np.integer)) and abs(int(x)) <= MAX_ELEMENTS for x in pads)
    ):
        raise GraphError(
            f"{where}: pads must be {2 * len(s)} ints (the begins, then the ends, of each axis "
            f"of the input of shape {s}), got {pads!r}"
        )
    if a.get("mode", "constant") not in PAD_MODES:
        raise GraphError(f"{where}: mode {a.get('mode')!r} must be one of {PAD_MODES}")
    value = a.get("value", 0.0)
    if not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value):
        raise GraphError(f"{where}: value must be a finite number, got {value!r}")
    pads = tuple(int(x) for x in pads)
    a.update(pads=pads, mode=a.get("mode", "constant"), value=float(value))
    plan = pad_plan(s, pads)
    for d, (_, count, before, after) in enumerate(plan):
        if count < 1:
            raise GraphError(
                f"{where}: pads {pads} crop all of axis {d} of the input of shape {s}; "
                "tensors are never empty"
            )
        if a["mode"] == "reflect" and max(before, after) >= count:
            raise GraphError(
                f"{where}: reflect pads of axis {d} ({before} before, {after} after) must be "
                f"smaller than the axis ({count}); use mode edge or constant"
            )
    out = tuple(count + before + after for _, count, before, after in plan)
    if math.prod(out) > MAX_ELEMENTS:
        raise GraphError(f"{where}: the output {out} has more than {MAX_ELEMENTS} elements")
    return out


def _infer_resize(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 1)
    s = _shape(g, node.inputs[0])
    a, where = node.attrs, f"node '{node.name}' (resize)"
    sizes = _int_list(node, "sizes")
    scales = a.get("scales")
    if (
        not isinstance(scales, (list, tuple))
        or len(scales) != len(s)
        or not all(
            isinstance(p, (list, tuple)) and len(p) == 2
            and all(isinstance(v, (int, np.integer)) and 0 < v <= MAX_ELEMENTS for v in p)
            for p in scales
        )
    ):  # fmt: skip
        raise GraphError(
            f"{where}: scales must be {len(s)} pairs (numerator, denominator) of positive "
            f"ints, one per axis of the input of shape {s}, got {scales!r}"
        )
    for key, allowed in (("mode", MODES), ("coord", COORDINATE_MODES),
                         ("rounding", NEAREST_MODES)):  # fmt: skip
        if a.get(key) not in allowed:
            raise GraphError(f"{where}: {key} {a.get(key)!r} must be one of {allowed}")
    if len(sizes) != len(s) or any(d < 1 for d in sizes) or math.prod(sizes) > MAX_ELEMENTS:
        raise GraphError(f"{where}: sizes {sizes} must be {len(s)} positive ints")
    cubic_a, exclude = a.setdefault("cubic_a", -0.75), a.setdefault("exclude_outside", False)
    if not isinstance(cubic_a, (int, float)) or not math.isfinite(cubic_a):
        raise GraphError(f"{where}: cubic_a must be a finite float, got {cubic_a!r}")
    if exclude not in (0, 1):
        raise GraphError(f"{where}: exclude_outside must be a bool, got {exclude!r}")
    pairs = tuple((int(p), int(q)) for p, q in scales)
    try:
        check_resize(s, sizes, [Fraction(p, q) for p, q in pairs], a["mode"], a["coord"],
                     a["rounding"], where)  # fmt: skip
    except ComputeError as exc:
        raise GraphError(str(exc)) from None
    a.update(sizes=sizes, scales=pairs, cubic_a=float(cubic_a), exclude_outside=bool(exclude))
    return sizes


REDUCE_KINDS = ("mean", "sum", "max")


def _infer_reduce(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 1)
    s = _shape(g, node.inputs[0])
    a = node.attrs
    if a.get("kind") not in REDUCE_KINDS:
        raise GraphError(
            f"node '{node.name}' (reduce): kind {a.get('kind')!r} must be one of {REDUCE_KINDS}"
        )
    axes = _axes(node, _int_list(node, "axes", ()), len(s)) or tuple(range(len(s)))
    keep = a.get("keepdims", True)
    if not isinstance(keep, (bool, int, np.integer, np.bool_)) or keep not in (0, 1):
        raise GraphError(f"node '{node.name}' (reduce): keepdims must be True or False")
    a["axes"], a["keepdims"] = tuple(sorted(axes)), bool(keep)
    if keep:
        return tuple(1 if i in axes else d for i, d in enumerate(s))
    out = tuple(d for i, d in enumerate(s) if i not in axes)
    if not out:
        raise GraphError(
            f"node '{node.name}' (reduce): reducing every axis of {s} without keepdims gives "
            "a scalar, which the graph does not hold; keep the dims (keepdims=1)"
        )
    return out


def _infer_power(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 1)
    e = node.attrs.get("exponent")
    if not isinstance(e, (int, float, np.integer, np.floating)) or not math.isfinite(e):
        raise GraphError(f"node '{node.name}' (power): exponent must be a finite number")
    node.attrs["exponent"] = float(e)
    return _shape(g, node.inputs[0])


def _infer_global_pool(g: Graph, node: Node) -> tuple[int, ...]:
    N, C, _, _ = _rank(g, node, node.inputs[0], 4, "the input")
    _epilogue_inputs(g, node, (N, C, 1, 1))
    return (N, C, 1, 1)


def _infer_scale_shift(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 3)
    s = _shape(g, node.inputs[0])
    if len(s) < 2 or _shape(g, node.inputs[1]) != (s[1],) or _shape(g, node.inputs[2]) != (s[1],):
        raise GraphError(f"node '{node.name}' (scale_shift): per-channel scale and shift needed")
    return s


LAYOUTS = ("NCHW", "NHWC")
# elementwise functions of one input, without attributes (numpy's and OpenCL C's meaning)
MATH = ("erf", "sqrt", "exp", "log", "neg", "abs", "reciprocal", "floor", "ceil", "sign",
        "trunc")  # fmt: skip
# masks (1.0 true, 0.0 false) of two broadcast tensors: a comparison, or logic of conditions
COMPARE = ("equal", "less", "less_equal", "greater", "greater_equal")
LOGIC = ("logical_and", "logical_or", "logical_xor")
# masks of one tensor: x == 0, x != 0, x is NaN, x is infinite
MASKS = ("logical_not", "to_bool", "isnan", "isinf")


def _infer_isinf(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 1)
    for key in ("detect_positive", "detect_negative"):
        v = node.attrs.get(key, True)
        if not isinstance(v, (bool, int, np.integer, np.bool_)) or v not in (0, 1):
            raise GraphError(f"node '{node.name}' (isinf): {key} must be True or False")
        node.attrs[key] = bool(v)
    return _shape(g, node.inputs[0])


def _infer_mod(g: Graph, node: Node) -> tuple[int, ...]:
    v = node.attrs.get("fmod", True)
    if not isinstance(v, (bool, int, np.integer, np.bool_)) or v not in (0, 1):
        raise GraphError(f"node '{node.name}' (mod): fmod must be True or False")
    node.attrs["fmod"] = bool(v)
    return _infer_add(g, node)


def _infer_layer_norm(g: Graph, node: Node) -> tuple[int, ...]:
    if len(node.inputs) not in (2, 3):
        raise GraphError(f"node '{node.name}' (layer_norm): takes x, scale and a bias or not")
    s = _shape(g, node.inputs[0])
    axis = _axis(node, node.attrs.get("axis", -1), len(s))
    inner = s[axis:]
    for t in node.inputs[1:]:
        own = _shape(g, t)
        if not broadcasts_to(own, inner):
            raise GraphError(
                f"node '{node.name}' (layer_norm): '{t}' {own} does not broadcast to {inner}"
            )
    eps = node.attrs.get("epsilon", 1e-5)
    if not isinstance(eps, (int, float)) or not 0 <= eps < 1:
        raise GraphError(f"node '{node.name}' (layer_norm): epsilon {eps!r} must be in [0, 1)")
    node.attrs.update(axis=axis, epsilon=float(eps))
    return s


def _infer_take(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 2)
    data, indices = (_shape(g, t) for t in node.inputs)
    axis = _axis(node, node.attrs.get("axis", 0), len(data))
    node.attrs["axis"] = axis
    return (*data[:axis], *indices, *data[axis + 1 :])


def _infer_where(g: Graph, node: Node) -> tuple[int, ...]:
    _arity(node, 3)
    c, a, b = (_shape(g, t) for t in node.inputs)
    return broadcast_shape(broadcast_shape(c, a, node.name), b, node.name)


def _infer_layout_transform(g: Graph, node: Node) -> tuple[int, ...]:
    """A change of memory order only (``passes.channels_last`` inserts it): the tensor's
    shape stays the logical NCHW one."""
    _arity(node, 1)
    src, dst = node.attrs.get("src"), node.attrs.get("dst")
    if src not in LAYOUTS or dst not in LAYOUTS or src == dst:
        raise GraphError(
            f"node '{node.name}' (layout_transform): src and dst must be two of {LAYOUTS}, "
            f"got {src!r} -> {dst!r}"
        )
    return _rank(g, node, node.inputs[0], 4, "input")


SHAPE_RULES = {
    "conv2d": _infer_conv2d,
    "batch_norm": _infer_batch_norm,
    "scale_shift": _infer_scale_shift,  # x * scale[c] + shift[c]: a batch norm with no conv
    "relu": _infer_same,
    "clip": _infer_same,
    "sigmoid": _infer_same,
    "tanh": _infer_same,
    "leaky_relu": _infer_same,
    "hard_sigmoid": _infer_same,
    "hard_swish": _infer_same,
    "add": _infer_add,
    "sub": _infer_add,
    "mul": _infer_add,
    "div": _infer_add,
    "max_pool2d": _infer_pool,
    "avg_pool2d": _infer_pool,
    "global_avg_pool2d": _infer_global_pool,
    "conv3d": _infer_conv3d,  # NCDHW data, OIDHW weight (ops.conv3d)
    "max_pool3d": _infer_pool3d,
    "avg_pool3d": _infer_pool3d,
    "dense": _infer_dense,
    "batch_matmul": _infer_batch_matmul,  # numpy's matmul of two tensors
    "flatten": _infer_flatten,
    "reshape": _infer_reshape,
    "softmax": _infer_softmax,
    "concat": _infer_concat,
    **{op: _infer_same for op in MATH},
    "power": _infer_power,  # x ** exponent (a constant)
    "pow": _infer_add,  # x ** y, numpy broadcasting
    **{op: _infer_add for op in COMPARE + LOGIC},
    **{op: _infer_same for op in MASKS if op != "isinf"},
    "isinf": _infer_isinf,
    "where": _infer_where,
    "take": _infer_take,
    "layer_norm": _infer_layer_norm,  # cond (nonzero: true), then, else
    "mod": _infer_mod,  # fmod: the sign of the dividend; else of the divisor
    "reduce": _infer_reduce,
    "transpose": _infer_transpose,
    "slice": _infer_slice,
    "pad": _infer_pad,
    "resize": _infer_resize,
    "layout_transform": _infer_layout_transform,
    "fused": lambda g, node: _infer_fused(g, node),  # defined below, with INJECTIVE
}
# operators each of whose output elements is a function of input elements at indices computed
# from its own (elementwise math and masks with numpy broadcasting, views, transposes, slices,
# concatenation, padding): a tree of them computes in one kernel (``passes.fuse_injective``)
INJECTIVE = frozenset({
    "scale_shift", "relu", "clip", "sigmoid", "tanh", "leaky_relu", "hard_sigmoid",
    "hard_swish", "add", "sub", "mul", "div", "pow", "power", *MATH, *COMPARE, *LOGIC, *MASKS,
    "where", "mod", "transpose", "slice", "reshape", "flatten", "concat", "pad",
})  # fmt: skip
FUSED_STEPS = 64  # at most, in one fused node
# operators that may end a fused tree, reading its injective steps as their data (a layer
# norm after a residual add, a mean after a transpose): their kernels inline the steps
FUSED_LAST = frozenset({"layer_norm", "reduce"})


def _infer_fused(g: Graph, node: Node) -> tuple[int, ...]:
    """A ``fused`` node (``passes.fuse_injective``): ``attrs["steps"]``, each ``(op, refs,
    attrs)`` with ``op`` one of ``INJECTIVE`` (the last one may be one of ``FUSED_LAST``) and
    ``refs`` its inputs, ``("in", i)`` the node's
    input ``i`` or ``("step", j)`` an earlier step's output; the last step's output is the
    node's. Each step is checked as the node it stands for."""
    steps = node.attrs.get("steps")
    where = f"node '{node.name}' (fused)"
    if not isinstance(steps, (tuple, list)) or not 0 < len(steps) <= FUSED_STEPS:
        raise GraphError(f"{where}: steps must be 1 to {FUSED_STEPS} (op, refs, attrs) tuples")
    scratch = Graph(node.name)
    names = [scratch.input(f"in{i}", g.tensors[t].shape) for i, t in enumerate(node.inputs)]
    outs: list[str] = []
    for k, step in enumerate(steps):
        if not (isinstance(step, (tuple, list)) and len(step) == 3):
            raise GraphError(f"{where}: step {k} is not an (op, refs, attrs) tuple")
        op, refs, attrs = step
        allowed = INJECTIVE | FUSED_LAST if k == len(steps) - 1 else INJECTIVE
        if not (isinstance(op, str) and op in allowed and isinstance(attrs, dict)) or not (
            isinstance(refs, (tuple, list))
        ):
            raise GraphError(f"{where}: step {k} ({op!r}) is not an injective operator's")
        ins = []
        for ref in refs:
            kind, i = ref if isinstance(ref, (tuple, list)) and len(ref) == 2 else (None, None)
            pool = names if kind == "in" else outs if kind == "step" else None
            if pool is None or not isinstance(i, int) or not 0 <= i < len(pool):
                raise GraphError(f"{where}: step {k} reads {ref!r}, no input or earlier step")
            ins.append(pool[i])
        outs.append(scratch.add_node(op, ins, dict(attrs), name=f"step{k}"))
    return scratch.tensors[outs[-1]].shape


# layout_transform and fused are the graph passes' own (a change of memory order that the
# graph's logical shapes do not show; a tree of injective nodes as one): a graph built by hand
# or imported cannot hold one
PASS_OPS = ("layout_transform", "fused")
OPS = tuple(op for op in SHAPE_RULES if op not in PASS_OPS)


def infer_shape(g: Graph, node: Node) -> TensorInfo:
    """The output of ``node`` in ``g`` (its attributes normalised in place: pairs, pads as
    four ints, axes non-negative), or a ``GraphError`` naming the node."""
    for t in node.inputs:
        if g.tensors[t].dtype != "float32":
            raise GraphError(f"node '{node.name}': input '{t}' is not float32")
    return TensorInfo(SHAPE_RULES[node.op](g, node))
