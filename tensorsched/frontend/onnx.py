"""ONNX in and out: ``from_onnx(model_or_path)`` reads a model into a ``Graph``;
``to_onnx(graph)`` writes a graph as a model.

A model is untrusted data. It is parsed by the ``onnx`` package (protobuf) and then read, never
run: the file's size, the default opset (13 or later), every tensor's shape and element count,
each initializer's stored bytes against its declared dims, and each operator's attributes are
checked before anything is allocated from them; weights held in external files are refused
(the model would name files to read). Operators read: Conv (with group), BatchNormalization,
Relu, Clip, Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish, Add, Sub, Mul, Div (numpy
broadcasting), MaxPool, AveragePool (both with ceil_mode), GlobalAveragePool, ReduceMean (over
H and W of an NCHW tensor: a global average pool), Gemm, MatMul (by a constant), Flatten,
Reshape, Softmax, Concat, Dropout (inference: the identity), Identity and Constant; any other
is an ``UnsupportedOperatorError`` naming its type and node.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import TensorschedError
from ..graph.graph import MAX_ELEMENTS, MAX_RANK, Graph, GraphError

MAX_FILE_BYTES = 2**31  # protobuf's own limit on one message
MAX_NODES = 100_000
MIN_OPSET = 13
FLOAT_MAX = float(np.finfo(np.float32).max)


class OnnxImportError(TensorschedError):
    """An ONNX model that cannot be read: malformed, too large, or using what is not
    supported. The message names the node and attribute."""


class UnsupportedOperatorError(OnnxImportError):
    """An ONNX operator that tensorsched does not implement."""


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise OnnxImportError(
            "reading ONNX models needs the onnx package: pip install 'tensorsched[onnx]'"
        ) from None
    return onnx


def _load(model_or_path: Any) -> Any:
    onnx = _onnx()
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path
    if isinstance(model_or_path, (bytes, bytearray)):
        data = bytes(model_or_path)
        where = "<bytes>"
    elif isinstance(model_or_path, (str, os.PathLike)):
        where = os.fspath(model_or_path)
        try:
            size = os.path.getsize(where)
            if size > MAX_FILE_BYTES:
                raise OnnxImportError(f"{where}: {size} bytes, more than {MAX_FILE_BYTES}")
            with open(where, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise OnnxImportError(f"cannot read ONNX model {where}: {exc.strerror}") from None
    else:
        raise OnnxImportError(
            "from_onnx takes an onnx.ModelProto, a path or bytes, got "
            f"{type(model_or_path).__name__}"
        )
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:  # noqa: BLE001  (protobuf's DecodeError and friends)
        raise OnnxImportError(f"{where} is not an ONNX model: {exc}") from None
    return model


def _check_names(model: Any, where: str) -> None:
    """Every name the reader uses is text (protobuf hands over bytes where a string field
    does not hold UTF-8)."""
    g = model.graph
    names: list[Any] = [g.name]
    for n in g.node:
        names += [n.name, n.op_type, n.domain, *n.input, *n.output]
    names += [t.name for t in g.initializer] + [v.name for v in (*g.input, *g.output)]
    if not all(isinstance(x, str) for x in names):
        raise OnnxImportError(f"{where}: a node or tensor name is not UTF-8 text")


def _dims(dims: Sequence[int], what: str) -> tuple[int, ...]:
    if len(dims) > MAX_RANK or any(d <= 0 or d > MAX_ELEMENTS for d in dims):
        raise OnnxImportError(
            f"{what}: shape {tuple(dims)} must be at most {MAX_RANK} positive dims"
        )
    if math.prod(dims) > MAX_ELEMENTS:
        raise OnnxImportError(f"{what}: shape {tuple(dims)} has more than {MAX_ELEMENTS} elements")
    return tuple(int(d) for d in dims)


_NP_OF = {1: np.float32, 6: np.int32, 7: np.int64, 10: np.float16, 11: np.float64}
_FIELD_OF = {1: "float_data", 6: "int32_data", 7: "int64_data", 10: "int32_data", 11: "double_data"}


def _tensor(t: Any, what: str) -> np.ndarray:
    """An initializer or Constant value as numpy, checked: dims, stored bytes, no external
    data, a supported element type."""
    what = f"{what} '{t.name}'" if t.name else what
    if t.data_location == 1 or len(t.external_data):
        raise OnnxImportError(f"{what}: weights in external files are not read; embed them")
    if t.data_type not in _NP_OF:
        raise OnnxImportError(f"{what}: element type {t.data_type} is not supported")
    dims = tuple(t.dims)
    if dims and (
        len(dims) > MAX_RANK or any(d < 0 for d in dims) or math.prod(dims) > MAX_ELEMENTS
    ):
        raise OnnxImportError(f"{what}: bad dims {dims}")
    count = math.prod(dims)  # 1 for a scalar
    dtype = np.dtype(_NP_OF[t.data_type])
    if t.raw_data:
        if len(t.raw_data) != count * dtype.itemsize:
            raise OnnxImportError(
                f"{what}: {len(t.raw_data)} bytes stored for dims {dims} of {dtype} "
                f"({count * dtype.itemsize} expected)"
            )
        arr = np.frombuffer(t.raw_data, dtype=dtype.newbyteorder("<")).astype(dtype)
    else:
        values = getattr(t, _FIELD_OF[t.data_type])
        if len(values) != count:
            raise OnnxImportError(f"{what}: {len(values)} values stored for dims {dims}")
        if t.data_type == 10:  # float16 kept as its bits in int32_data
            arr = np.asarray(values, dtype=np.uint16).view(np.float16)
        else:
            arr = np.asarray(values, dtype=dtype)
    return arr.reshape(dims)


def _attrs(node: Any, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in node.attribute:
        kind = a.type  # AttributeProto.AttributeType
        if kind == 1:
            out[a.name] = float(a.f)
        elif kind == 2:
            out[a.name] = int(a.i)
        elif kind == 3:
            out[a.name] = a.s.decode("utf-8", "replace")
        elif kind == 4:
            out[a.name] = _tensor(a.t, f"{where} attribute {a.name}")
        elif kind == 6:
            out[a.name] = [float(x) for x in a.floats]
        elif kind == 7:
            if len(a.ints) > 64:
                raise OnnxImportError(f"{where}: attribute {a.name} has {len(a.ints)} values")
            out[a.name] = [int(x) for x in a.ints]
        else:
            raise OnnxImportError(f"{where}: attribute {a.name} of type {kind} is not supported")
    return out


class _Reader:
    def __init__(self, model: Any, shapes: Mapping[str, Sequence[int]]):
        self.model, self.shapes = model, dict(shapes)
        self.g = Graph(model.graph.name or "onnx")
        self.alias: dict[str, str] = {}  # Identity outputs -> their input
        self.ints: dict[str, np.ndarray] = {}  # integer constants (Reshape's shape)

    def name(self, t: str) -> str:
        return self.alias.get(t, t)

    def const(self, t: str, where: str) -> np.ndarray:
        t = self.name(t)
        if t in self.ints:
            return self.ints[t]
        if t in self.g.constants:
            return self.g.constants[t]
        raise UnsupportedOperatorError(f"{where}: input '{t}' must be a constant (an initializer)")

    def read(self) -> Graph:
        m = self.model
        opsets = {o.domain: o.version for o in m.opset_import}
        version = opsets.get("", opsets.get("ai.onnx"))
        if version is None or version < MIN_OPSET:
            raise OnnxImportError(
                f"the model's default opset is {version}; tensorsched reads opset {MIN_OPSET} "
                "and later (convert it with onnx.version_converter.convert_version)"
            )
        graph = m.graph
        if len(graph.node) > MAX_NODES:
            raise OnnxImportError(f"the model has {len(graph.node)} nodes, more than {MAX_NODES}")
        for init in graph.initializer:
            self._add_constant(init.name, _tensor(init, "initializer"))
        for vi in graph.input:
            if vi.name in self.g.tensors or vi.name in self.ints:
                continue  # an initializer listed as an input (older exporters)
            self.g.input(vi.name, self._input_shape(vi))
        for i, node in enumerate(graph.node):
            self._node(node, i)
        outs = [self.name(o.name) for o in graph.output]
        for o in outs:
            if o not in self.g.tensors:
                raise OnnxImportError(f"the model's output '{o}' is not computed by any node")
        self.g.output(*outs)
        return self.g

    def _add_constant(self, name: str, arr: np.ndarray) -> None:
        if arr.dtype.kind in "iu":
            self.ints[name] = arr.astype(np.int64)
        else:
            if not np.all(np.isfinite(arr)):
                raise OnnxImportError(f"constant '{name}' holds inf or nan")
            self.g.constant(name, arr)

    def _input_shape(self, vi: Any) -> tuple[int, ...]:
        if vi.name in self.shapes:
            return _dims(list(self.shapes[vi.name]), f"input '{vi.name}'")
        tt = vi.type.tensor_type
        if tt.elem_type != 1:
            raise OnnxImportError(f"input '{vi.name}': element type {tt.elem_type}; float32 only")
        dims = []
        for d in tt.shape.dim:
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
            else:
                raise OnnxImportError(
                    f"input '{vi.name}' has a symbolic dimension '{d.dim_param}'; give its "
                    f"shape: from_onnx(model, shapes={{'{vi.name}': (1, 3, 224, 224)}})"
                )
        return _dims(dims, f"input '{vi.name}'")

    def _node(self, node: Any, i: int) -> None:
        op, name = node.op_type, node.name or f"{node.op_type}_{i}"
        where = f"node '{name}' ({op})"
        if node.domain not in ("", "ai.onnx"):
            raise UnsupportedOperatorError(
                f"{where}: operator domain '{node.domain}' is not supported"
            )
        if op not in CONVERTERS:
            raise UnsupportedOperatorError(
                f"{where}: operator '{op}' is not supported; supported: "
                f"{', '.join(sorted(CONVERTERS))}"
            )
        a = _attrs(node, where)
        ins = [self.name(t) for t in node.input]
        for t in ins:
            if t and t not in self.g.tensors and t not in self.ints:
                raise OnnxImportError(f"{where} reads '{t}', which no earlier node defines")
        outs = list(node.output)
        if len(outs) < 1 or not outs[0]:
            raise OnnxImportError(f"{where}: no output")
        if any(outs[1:]):
            raise UnsupportedOperatorError(f"{where}: only the first output is supported")
        try:
            CONVERTERS[op](self, name, where, a, ins, outs[0])
        except GraphError as exc:
            raise OnnxImportError(f"{where}: {exc}") from None


def _no_dilation(a: Mapping[str, Any], where: str) -> None:
    if any(d != 1 for d in a.get("dilations", [1, 1])):
        raise UnsupportedOperatorError(f"{where}: dilations {a['dilations']} (only 1 is supported)")


def _window_pads(
    a: Mapping[str, Any], where: str, in_hw: Sequence[int], kernel: Sequence[int]
) -> tuple[int, int, int, int]:
    """ONNX's ``pads`` (top, left, bottom, right) or ``auto_pad``."""
    auto = a.get("auto_pad", "NOTSET")
    strides = a.get("strides", [1, 1])
    if len(strides) != 2 or len(kernel) != 2:
        raise UnsupportedOperatorError(f"{where}: only 2-d windows are supported")
    if auto in ("NOTSET", ""):
        pads = a.get("pads", [0, 0, 0, 0])
        if len(pads) != 4:
            raise OnnxImportError(f"{where}: pads {pads} must be 4 ints")
        return (pads[0], pads[1], pads[2], pads[3])
    if auto == "VALID":
        return (0, 0, 0, 0)
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out: list[int] = []
        for size, k, s in zip(in_hw, kernel, strides):
            if s < 1:
                raise OnnxImportError(f"{where}: strides {strides} must be positive")
            total = max((-(-size // s) - 1) * s + k - size, 0)
            small = total // 2
            out.append(small if auto == "SAME_UPPER" else total - small)
            out.append(total - out[-1])
        return (out[0], out[2], out[1], out[3])
    raise OnnxImportError(f"{where}: auto_pad '{auto}' is not one ONNX defines")


def _conv(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    _no_dilation(a, where)
    if len(ins) not in (2, 3):
        raise OnnxImportError(f"{where}: Conv takes 2 or 3 inputs, got {len(ins)}")
    w = ins[1]
    if w not in r.g.constants:
        raise UnsupportedOperatorError(f"{where}: the weight '{w}' must be an initializer")
    wshape = r.g.tensors[w].shape
    if len(wshape) != 4:
        raise UnsupportedOperatorError(f"{where}: only 2-d convolution is supported")
    kernel = a.get("kernel_shape", list(wshape[2:]))
    if list(kernel) != list(wshape[2:]):
        raise OnnxImportError(f"{where}: kernel_shape {kernel} disagrees with the weight {wshape}")
    xshape = r.g.tensors[ins[0]].shape
    pads = _window_pads(a, where, xshape[2:], kernel)
    b = ins[2] if len(ins) == 3 and ins[2] else None
    r.g.conv2d(ins[0], w, b, a.get("strides", [1, 1]), pads, a.get("group", 1), name=name)
    _rename_output(r, name, out)


def _rename_output(r: _Reader, node: str, out: str) -> None:
    """Give ``node``'s output the model's tensor name."""
    n = r.g.nodes[node]
    if n.output != out:
        if out in r.g.tensors:
            raise OnnxImportError(f"node '{node}': tensor '{out}' is defined twice")
        r.g.tensors[out] = r.g.tensors.pop(n.output)
        del r.g.producer[n.output]
        n.output = out
        r.g.producer[out] = node


def _simple(op: str, attrs: tuple[str, ...] = ()) -> Any:
    """The graph operator ``op`` of the node's first input, with those of ``attrs`` the node
    gives (the graph checks them and fills in the others' defaults, which are ONNX's)."""

    def convert(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
        r.g.add_node(op, ins[:1], {k: a[k] for k in attrs if k in a}, name)
        _rename_output(r, name, out)

    return convert


# ONNX's elementwise operators of one input: graph operator and the attributes it takes
UNARY = {
    "Relu": ("relu", ()),
    "Sigmoid": ("sigmoid", ()),
    "Tanh": ("tanh", ()),
    "LeakyRelu": ("leaky_relu", ("alpha",)),
    "HardSigmoid": ("hard_sigmoid", ("alpha", "beta")),
    "HardSwish": ("hard_swish", ()),
}
BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}  # numpy broadcasting


def _batch_norm(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    if a.get("training_mode", 0):
        raise UnsupportedOperatorError(f"{where}: training_mode=1 (inference only)")
    if len(ins) != 5:
        raise OnnxImportError(f"{where}: BatchNormalization takes 5 inputs, got {len(ins)}")
    eps = a.get("epsilon", 1e-5)
    if ins[4] in r.g.constants and not np.all(r.g.constants[ins[4]] + eps > 0):
        raise OnnxImportError(f"{where}: the variance plus epsilon must be positive")
    r.g.batch_norm(ins[0], ins[1], ins[2], ins[3], ins[4], eps, name=name)
    _rename_output(r, name, out)


def _clip(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    lo = float(r.const(ins[1], where).reshape(-1)[0]) if len(ins) > 1 and ins[1] else -FLOAT_MAX
    hi = float(r.const(ins[2], where).reshape(-1)[0]) if len(ins) > 2 and ins[2] else FLOAT_MAX
    if not lo <= hi:
        raise OnnxImportError(f"{where}: min {lo} is above max {hi}")
    r.g.clip(ins[0], lo, hi, name=name)
    _rename_output(r, name, out)


def _binary(op: str) -> Any:
    def convert(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
        if len(ins) != 2 or not all(ins):
            raise OnnxImportError(f"{where}: takes 2 inputs")
        for t in ins:
            if t in r.ints:
                raise UnsupportedOperatorError(
                    f"{where}: '{t}' is an integer tensor (shape arithmetic is not supported)"
                )
        r.g.add_node(op, ins, {}, name)
        _rename_output(r, name, out)

    return convert


def _dropout(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Inference: the identity (a ``training_mode`` input is refused)."""
    if len(ins) > 2 and ins[2]:
        raise UnsupportedOperatorError(f"{where}: a training_mode input (inference only)")
    _identity(r, name, where, a, ins[:1], out)


def _pool(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str, op: str) -> None:
    _no_dilation(a, where)
    ceil = a.get("ceil_mode", 0)
    if ceil not in (0, 1):
        raise OnnxImportError(f"{where}: ceil_mode {ceil!r} must be 0 or 1")
    if a.get("storage_order", 0):
        raise UnsupportedOperatorError(f"{where}: storage_order=1 is not supported")
    _float_input(r, ins, where)
    kernel = a.get("kernel_shape")
    if kernel is None or len(kernel) != 2:
        raise UnsupportedOperatorError(f"{where}: kernel_shape must be two ints (2-d pooling)")
    xshape = r.g.tensors[ins[0]].shape
    if len(xshape) != 4:
        raise OnnxImportError(f"{where}: the input must be NCHW, got shape {xshape}")
    pads = _window_pads(a, where, xshape[2:], kernel)
    strides = a.get("strides", [1, 1])
    if op == "max_pool2d":
        r.g.max_pool2d(ins[0], kernel, strides, pads, name=name, ceil_mode=bool(ceil))
    else:
        include = bool(a.get("count_include_pad", 0))
        r.g.avg_pool2d(ins[0], kernel, strides, pads, include, name=name, ceil_mode=bool(ceil))
    _rename_output(r, name, out)


def _float_input(r: _Reader, ins: list[str], where: str) -> None:
    """The node's first input is a float tensor (not missing, not an integer constant)."""
    if not ins or ins[0] not in r.g.tensors:
        raise OnnxImportError(f"{where}: the first input must be a float tensor")


def _reduce_mean(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """The mean over H and W of an NCHW tensor (torch's ``x.mean([2, 3])``, axes in any order
    or negative) as a global average pool, flattened to ``(N, C)`` where ``keepdims=0``. The
    axes are an attribute before opset 18 and a constant input from opset 18 on; a mean over
    other axes is an ``UnsupportedOperatorError``."""
    if len(ins) > 1 and ins[1]:
        if ins[1] not in r.ints:
            raise UnsupportedOperatorError(
                f"{where}: the axes '{ins[1]}' must be a constant integer tensor"
            )
        axes = r.ints[ins[1]].reshape(-1).tolist()
    else:
        axes = a.get("axes", [])
    keepdims = a.get("keepdims", 1)
    if not isinstance(axes, list) or not all(isinstance(x, int) for x in axes):
        raise OnnxImportError(f"{where}: axes {axes!r} must be ints")
    if keepdims not in (0, 1):
        raise OnnxImportError(f"{where}: keepdims {keepdims!r} must be 0 or 1")
    _float_input(r, ins, where)
    if not axes and a.get("noop_with_empty_axes", 0):
        _identity(r, name, where, a, ins[:1], out)
        return
    shape = r.g.tensors[ins[0]].shape
    rank = len(shape)
    if any(not -rank <= x < rank for x in axes):
        raise OnnxImportError(f"{where}: axes {axes} out of range for the input of shape {shape}")
    if rank != 4 or sorted(x % rank for x in axes) != [2, 3]:
        what = f"axes {axes}" if axes else "every axis (no axes given)"
        raise UnsupportedOperatorError(
            f"{where}: a mean over {what} of the input of shape {shape}; only the mean over "
            "H and W of an NCHW tensor (axes [2, 3] or [-2, -1]) is supported"
        )
    r.g.global_avg_pool2d(ins[0], name=name)
    if keepdims:
        _rename_output(r, name, out)
        return
    flat = r.g.fresh_name(name + "_flatten")
    r.g.flatten(r.g.nodes[name].output, 1, name=flat)
    _rename_output(r, flat, out)


def _gemm(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    if a.get("transA", 0):
        raise UnsupportedOperatorError(f"{where}: transA=1 is not supported")
    if len(ins) not in (2, 3):
        raise OnnxImportError(f"{where}: Gemm takes 2 or 3 inputs")
    B = r.const(ins[1], where).astype(np.float64)
    if B.ndim != 2:
        raise OnnxImportError(f"{where}: B must be 2-d, got shape {B.shape}")
    W = (B if a.get("transB", 0) else B.T) * a.get("alpha", 1.0)
    b = None
    if len(ins) == 3 and ins[2]:
        C = r.const(ins[2], where).astype(np.float64) * a.get("beta", 1.0)
        if C.size not in (1, W.shape[0]) or C.ndim > 2 or (C.ndim == 2 and C.shape[0] != 1):
            raise UnsupportedOperatorError(
                f"{where}: C of shape {C.shape} (only a bias of ({W.shape[0]},) or (1, "
                f"{W.shape[0]}) is supported)"
            )
        b = r.g.constant(
            r.g.fresh_name(name + "_bias"), np.broadcast_to(C.reshape(-1), W.shape[:1])
        )
    r.g.dense(ins[0], r.g.constant(r.g.fresh_name(name + "_weight"), W), b, name=name)
    _rename_output(r, name, out)


def _matmul(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    if len(ins) != 2 or len(r.g.tensors[ins[0]].shape) != 2:
        raise UnsupportedOperatorError(f"{where}: only a 2-d input times a constant is supported")
    B = r.const(ins[1], where)
    if B.ndim != 2:
        raise UnsupportedOperatorError(f"{where}: only a 2-d constant B is supported")
    r.g.dense(ins[0], r.g.constant(r.g.fresh_name(name + "_weight"), B.T), name=name)
    _rename_output(r, name, out)


def _reshape(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    if a.get("allowzero", 0):
        raise UnsupportedOperatorError(f"{where}: allowzero=1 is not supported")
    shape = r.const(ins[1], where) if len(ins) > 1 else np.zeros(0)
    if shape.ndim != 1 or shape.size > MAX_RANK:
        raise OnnxImportError(f"{where}: the shape must be a 1-d tensor of at most {MAX_RANK}")
    r.g.reshape(ins[0], [int(x) for x in shape], name=name)
    _rename_output(r, name, out)


def _axis_op(op: str, default: int) -> Any:
    def convert(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
        axis = a.get("axis", default)
        if op == "concat":
            r.g.concat(ins, axis, name=name)
        else:
            r.g.add_node(op, ins[:1], {"axis": axis}, name)
        _rename_output(r, name, out)

    return convert


def _identity(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    if out in r.g.tensors or out in r.alias:
        raise OnnxImportError(f"{where}: tensor '{out}' is defined twice")
    if not ins or (ins[0] not in r.g.tensors and ins[0] not in r.ints):
        raise OnnxImportError(f"{where}: reads a tensor that no node defines")
    r.alias[out] = ins[0]


def _constant(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    if "value" in a:
        value = a["value"]
    elif "value_float" in a:
        value = np.float32(a["value_float"])
    elif "value_floats" in a:
        value = np.asarray(a["value_floats"], np.float32)
    elif "value_int" in a:
        value = np.int64(a["value_int"])
    elif "value_ints" in a:
        value = np.asarray(a["value_ints"], np.int64)
    else:
        raise UnsupportedOperatorError(f"{where}: only value / value_float(s) / value_int(s)")
    if out in r.g.tensors or out in r.ints:
        raise OnnxImportError(f"{where}: tensor '{out}' is defined twice")
    r._add_constant(out, np.asarray(value))


CONVERTERS: dict[str, Any] = {
    "Conv": _conv,
    "BatchNormalization": _batch_norm,
    **{onnx_op: _simple(op, attrs) for onnx_op, (op, attrs) in UNARY.items()},
    **{onnx_op: _binary(op) for onnx_op, op in BINARY.items()},
    "Dropout": _dropout,
    "Clip": _clip,
    "MaxPool": lambda r, n, w, a, i, o: _pool(r, n, w, a, i, o, "max_pool2d"),
    "AveragePool": lambda r, n, w, a, i, o: _pool(r, n, w, a, i, o, "avg_pool2d"),
    "GlobalAveragePool": _simple("global_avg_pool2d"),
    "ReduceMean": _reduce_mean,
    "Gemm": _gemm,
    "MatMul": _matmul,
    "Flatten": _axis_op("flatten", 1),
    "Reshape": _reshape,
    "Softmax": _axis_op("softmax", -1),
    "Concat": _axis_op("concat", 0),
    "Identity": _identity,
    "Constant": _constant,
}


def from_onnx(model_or_path: Any, shapes: Mapping[str, Sequence[int]] | None = None) -> Graph:
    """The ``Graph`` of an ONNX model (an ``onnx.ModelProto``, a path or the file's bytes).
    ``shapes`` gives input shapes where the model leaves a dimension symbolic. Raises
    ``OnnxImportError`` (``UnsupportedOperatorError`` for an operator not supported)."""
    model = _load(model_or_path)
    _check_names(model, "the model")
    return _Reader(model, shapes or {}).read()


# ---- writing


# graph operators written as one ONNX operator: its name and the attributes it takes
ONNX_NAMES: dict[str, tuple[str, tuple[str, ...]]] = {
    **{op: (onnx_op, attrs) for onnx_op, (op, attrs) in UNARY.items()},
    **{op: (onnx_op, ()) for onnx_op, op in BINARY.items()},
    "global_avg_pool2d": ("GlobalAveragePool", ()),
}


def to_onnx(g: Graph, path: str | os.PathLike | None = None, opset: int = 13) -> Any:
    """``g`` as an ONNX model (written to ``path`` when given); fused epilogues are written out
    as their own nodes, a ``scale_shift`` as a BatchNormalization, a ``hard_swish`` below opset
    14 as ``x * HardSigmoid(x)``."""
    onnx = _onnx()
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    inits = [numpy_helper.from_array(v, k) for k, v in g.constants.items()]
    extra = 0

    def fresh(base: str) -> str:
        nonlocal extra
        extra += 1
        return f"{base}__{extra}"

    for n in g.topo_nodes():
        a = n.attrs
        ep_inputs = sum(1 for s in n.epilogue if s[0] in ("bias", "add"))
        own = n.inputs[: len(n.inputs) - ep_inputs]
        rest = n.inputs[len(own) :]
        out = fresh(n.output) if n.epilogue else n.output
        if n.op == "conv2d":
            kh, kw = g.tensors[n.inputs[1]].shape[2:]
            nodes.append(helper.make_node(
                "Conv", own, [out], n.name, kernel_shape=[kh, kw], strides=list(a["strides"]),
                pads=list(a["pads"]), group=a["groups"],
            ))  # fmt: skip
        elif n.op == "dense":
            nodes.append(helper.make_node("Gemm", own, [out], n.name, transB=1))
        elif n.op == "batch_norm":
            nodes.append(helper.make_node(
                "BatchNormalization", own, [out], n.name, epsilon=a["epsilon"]
            ))  # fmt: skip
        elif n.op == "scale_shift":
            C = g.tensors[n.inputs[1]].shape[0]
            m, v = fresh(n.name + "_mean"), fresh(n.name + "_var")
            inits.append(numpy_helper.from_array(np.zeros(C, np.float32), m))
            inits.append(numpy_helper.from_array(np.ones(C, np.float32), v))
            nodes.append(helper.make_node(
                "BatchNormalization", [*own, m, v], [out], n.name, epsilon=0.0
            ))  # fmt: skip
        elif n.op == "hard_swish" and opset < 14:  # no HardSwish before opset 14
            gate = fresh(n.name + "_gate")
            nodes.append(helper.make_node(
                "HardSigmoid", own, [gate], n.name + "_gate", alpha=1.0 / 6.0, beta=0.5
            ))  # fmt: skip
            nodes.append(helper.make_node("Mul", [own[0], gate], [out], n.name))
        elif n.op in ONNX_NAMES:
            onnx_op, attrs = ONNX_NAMES[n.op]
            nodes.append(helper.make_node(onnx_op, own, [out], n.name, **{k: a[k] for k in attrs}))
        elif n.op == "clip":
            lo, hi = fresh(n.name + "_min"), fresh(n.name + "_max")
            inits.append(numpy_helper.from_array(np.array(a["min"], np.float32), lo))
            inits.append(numpy_helper.from_array(np.array(a["max"], np.float32), hi))
            nodes.append(helper.make_node("Clip", [own[0], lo, hi], [out], n.name))
        elif n.op in ("max_pool2d", "avg_pool2d"):
            kw_: dict[str, Any] = {
                "kernel_shape": list(a["kernel"]), "strides": list(a["strides"]),
                "pads": list(a["pads"]),
            }  # fmt: skip
            if n.op == "avg_pool2d":
                kw_["count_include_pad"] = int(a.get("count_include_pad", False))
            if a.get("ceil_mode"):
                kw_["ceil_mode"] = 1
            op = "MaxPool" if n.op == "max_pool2d" else "AveragePool"
            nodes.append(helper.make_node(op, own, [out], n.name, **kw_))
        elif n.op == "flatten":
            nodes.append(helper.make_node("Flatten", own, [out], n.name, axis=a["axis"]))
        elif n.op == "reshape":
            s = fresh(n.name + "_shape")
            inits.append(numpy_helper.from_array(np.array(a["shape"], np.int64), s))
            nodes.append(helper.make_node("Reshape", [own[0], s], [out], n.name))
        elif n.op in ("softmax", "concat"):
            op = "Softmax" if n.op == "softmax" else "Concat"
            nodes.append(helper.make_node(op, own, [out], n.name, axis=a["axis"]))
        else:
            raise GraphError(f"to_onnx: node '{n.name}' ({n.op}) has no ONNX form")
        steps = list(n.epilogue)
        it = iter(rest)
        for i, step in enumerate(steps):
            dst = n.output if i == len(steps) - 1 else fresh(n.output)
            name = f"{n.name}_{step[0]}{i}"
            if step[0] == "bias":
                b = next(it)
                shaped = fresh(b + "_shaped")
                rank = len(g.tensors[n.output].shape)
                shape = [1, -1] + [1] * (rank - 2)
                if b not in g.constants:
                    raise GraphError(f"to_onnx: node '{n.name}': bias '{b}' is not a constant")
                inits.append(numpy_helper.from_array(g.constants[b].reshape(shape), shaped))
                nodes.append(helper.make_node("Add", [out, shaped], [dst], name))
            elif step[0] == "add":
                nodes.append(helper.make_node("Add", [out, next(it)], [dst], name))
            elif step[0] == "relu":
                nodes.append(helper.make_node("Relu", [out], [dst], name))
            elif step[0] == "clip":
                lo, hi = fresh(name + "_min"), fresh(name + "_max")
                inits.append(numpy_helper.from_array(np.array(step[1], np.float32), lo))
                inits.append(numpy_helper.from_array(np.array(step[2], np.float32), hi))
                nodes.append(helper.make_node("Clip", [out, lo, hi], [dst], name))
            out = dst

    def info(t: str) -> Any:
        return helper.make_tensor_value_info(t, TensorProto.FLOAT, list(g.tensors[t].shape))

    used = {t for n in nodes for t in n.input}
    inits = [t for t in inits if t.name in used]
    graph = helper.make_graph(
        nodes, g.name, [info(t) for t in g.inputs], [info(t) for t in g.outputs], inits
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="tensorsched"
    )
    model.ir_version = min(model.ir_version, 8)  # readable by onnxruntime releases of 2022 on
    if path is not None:
        onnx.save(model, os.fspath(path))
    return model
