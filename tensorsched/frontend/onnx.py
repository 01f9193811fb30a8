"""ONNX in and out: ``from_onnx(model_or_path)`` reads a model into a ``Graph``;
``to_onnx(graph)`` writes a graph as a model.

A model is untrusted data. It is parsed by the ``onnx`` package (protobuf) and then read, never
run: the file (a regular one, its size), the default opset (13 to the newest the ``onnx``
package knows), every tensor's shape and element count,
each initializer's stored bytes against its declared dims, and each operator's attributes are
checked before anything is allocated from them. Weights a model keeps in files beside it
(``external_data``, what torch's exporter writes for large models) are read only for a model
given by its path, as onnxruntime reads them: each from a regular file inside the model's
folder (no absolute path, no ``..``, no link out of it), at an offset and length within the
file that match the tensor's dims; a model given as bytes or a ``ModelProto`` names no folder,
so its external weights are refused. Operators read: Conv (with group and dilations, the
graph's own), ConvTranspose (3-d too; a stride-1, dilated convolution of the input with zeros
between its elements), the pools and these over a 1-d ``(N, C, L)`` too (as one row of 2-d),
BatchNormalization, Relu, Clip, Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish, Add, Sub,
Mul, Div, Pow (numpy broadcasting), Erf, Sqrt, Exp, Log, Neg, Abs, Reciprocal, Floor, Ceil,
MaxPool, AveragePool (both with ceil_mode), GlobalAveragePool, ReduceMean / ReduceSum /
ReduceMax (over any axes; a mean over H and W of an NCHW tensor is a global average pool),
LayerNormalization (as reductions and elementwise nodes; its Mean and InvStdDev outputs too),
Gemm (transA; a matrix C added after), MatMul (by a constant 2-d ``B``: a dense layer; any
other, two computed tensors among them: a ``batch_matmul``), Flatten, Reshape, Softmax, Concat,
Transpose, Slice, Split (as slices), Squeeze / Unsqueeze (as reshapes), Gather (at constant
indices: slices; at computed indices, an embedding lookup: the graph's ``take``), Expand (of a
computed tensor: a broadcast ``mul`` by ones), Cast (to float: the identity), Dropout
(inference, or a training_mode that drops nothing: the identity), Identity, Constant, Pad
(modes constant, reflect and edge; constant pads, a negative one
cropping; opset 18's axes; opset 2's attributes) and Einsum (one input: sums over axes and a
transpose; two: every letter a batch, a contracted or one input's own one, as transposes and
reshapes around a ``batch_matmul``), and as compositions of the graph's operators PRelu, Elu,
Selu, Softplus, Softsign, Sum, Mean, Max, Min, GlobalMaxPool, InstanceNormalization, LRN,
DepthToSpace, SpaceToDepth, Tile, Mish, Gelu, Celu, LogSoftmax, ReduceMin, ReduceL1, ReduceL2,
ReduceSumSquare, LpNormalization and MeanVarianceNormalization, and Resize (modes nearest and
linear, and cubic over one or two axes, up or down by any factor, as a ``resize`` node;
opset 18's axes and keep_aspect_ratio_policy); on computed tensors too Equal, Less,
LessOrEqual, Greater,
GreaterOrEqual, Not, And, Or, Xor, IsNaN, IsInf (boolean results held as float32 masks, 1.0 /
0.0), Where, Mod, Sign, and Cast to bool (``x != 0``) and to int32 / int64 (toward zero, held as
float32) where the result is read on only by ``KIND_READERS``; any other is an
``UnsupportedOperatorError`` naming its type and node.

A model's inputs and outputs may be float32, float16, float64, int32, int64 or bool
(``HOST_OF``): the graph holds each as float32, converted on the host where it is run
(``Graph.feed`` / ``Graph.fetch``), and callers give and take arrays of the declared types, as
with onnxruntime. An integer or boolean input is read as a computed one (``KIND_READERS``); its
values must be within 2**24 (float32 holds them exactly; checked at each run). An integer
output is rounded to its type, a boolean one is its mask. float16 is computed in float32
(rounded once, at the output: more accurate than onnxruntime's float16 arithmetic), float64 in
float32 (about 1e-7 relative, not float64's 1e-16; its values within float32's range: a
float64 constant beyond it becomes an infinity, as a mask's fill of float64's lowest value
does, without a warning).

Constants are folded at import (``FOLD``): any of those operators, and the shape arithmetic of
exporters (Shape, Size, ConstantOfShape, Range, Expand, Equal, Less, Greater, And, Or, Xor,
Not, Where, Min, Max, Mod, and ScatterND and Einsum of any equation), whose inputs are all
constants: integer and boolean ones stay the
reader's (``_Reader.ints``: the shapes, axes and indices other operators take), float ones
become the graph's constants. Each folded constant is size-checked before it is made
(``MAX_FOLD`` elements).
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import ComputeError, TensorschedError
from ..graph.graph import (
    MAX_ELEMENTS,
    MAX_RANK,
    PAD_MODES,
    Graph,
    GraphError,
    broadcasts_to,
    pad_plan,
    slice_plan,
)
from ..graph.passes import unfuse
from ..ops.resize import COORDINATE_MODES as RESIZE_COORDS
from ..ops.resize import MODES as RESIZE_MODES
from ..ops.resize import NEAREST_MODES as RESIZE_ROUNDING
from ..ops.resize import axis_map, check_resize, scale_fraction

MAX_FILE_BYTES = 2**31  # protobuf's own limit on one message
MAX_EXTERNAL_BYTES = 2**34  # weights read from files beside a model, in all
EXTERNAL_KEYS = ("location", "offset", "length", "checksum")  # ONNX's external_data keys
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
        data = _read_model_file(where)
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
    if not model.HasField("graph") and not len(model.opset_import):
        raise OnnxImportError(
            f"{where} is not an ONNX model: it holds no graph and no opset"
            + (" (it is empty)" if not data else "")
        )
    if where != "<bytes>":
        _read_external(model, os.path.dirname(os.path.abspath(where)), where)
    return model


def _read_model_file(where: Any) -> bytes:
    """The bytes of the model file ``where``: a regular file (a FIFO or a device such as
    ``/dev/zero`` would block or never end) of at most ``MAX_FILE_BYTES``."""
    try:  # non-blocking: opening a FIFO that no one writes returns at once (to be refused)
        fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL character
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        shown = where if isinstance(exc, OSError) else repr(where)
        raise OnnxImportError(f"cannot read ONNX model {shown}: {why}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
        os.close(fd)
        if stat.S_ISDIR(st.st_mode):
            raise OnnxImportError(f"cannot read ONNX model {where}: it is a folder")
        if not stat.S_ISREG(st.st_mode):
            raise OnnxImportError(
                f"cannot read ONNX model {where}: it is not a regular file (a FIFO or a "
                "device, say); give the path of an .onnx file"
            )
        raise OnnxImportError(f"{where}: {st.st_size} bytes, more than {MAX_FILE_BYTES}")
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise OnnxImportError(f"cannot read ONNX model {where}: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:  # it grew while read
        raise OnnxImportError(f"{where}: more than {MAX_FILE_BYTES} bytes")
    return data


def _tensors_of(graph: Any) -> Any:
    """Every TensorProto a graph holds: its initializers and its nodes' tensor attributes
    (a Constant's value), those of subgraphs too."""
    yield from graph.initializer
    for node in graph.node:
        for a in node.attribute:
            if a.HasField("t"):
                yield a.t
            yield from a.tensors
            if a.HasField("g"):
                yield from _tensors_of(a.g)
            for sub in a.graphs:
                yield from _tensors_of(sub)


def _external_int(info: dict[str, str], key: str, what: str) -> int | None:
    if key not in info:
        return None
    text = info[key]
    if not (text.isascii() and text.isdigit()) or len(text) > 19:
        raise OnnxImportError(f"{what}: external data {key} {text!r} is not a byte count")
    return int(text)


def _read_external(model: Any, folder: str, where: str) -> None:
    """Read the weights ``model`` (read from a file in ``folder``) keeps in external files
    into its tensors (see the module's docstring); each file is opened only after its
    location, offset and length are checked."""
    root = os.path.realpath(folder)
    total = 0
    for t in _tensors_of(model.graph):
        if t.data_location != 1 and not len(t.external_data):
            continue
        what = f"{where}: tensor '{t.name}'"
        info: dict[str, str] = {}
        for kv in t.external_data:
            if kv.key not in EXTERNAL_KEYS:
                raise OnnxImportError(
                    f"{what}: unknown external data key {kv.key!r} (ONNX has "
                    f"{', '.join(EXTERNAL_KEYS)})"
                )
            info[kv.key] = kv.value
        loc = info.get("location", "")
        parts = loc.replace("\\", "/").split("/")
        if not loc or os.path.isabs(loc) or ".." in parts or ":" in loc or "\x00" in loc:
            raise OnnxImportError(
                f"{what}: external data location {loc!r} is not a file name inside the "
                f"model's folder {folder}"
            )
        path = os.path.realpath(os.path.join(root, loc))
        if os.path.commonpath([root, path]) != root or not os.path.isfile(path):
            raise OnnxImportError(
                f"{what}: external data {loc!r} is not a file inside the model's folder "
                f"{folder} (a link out of it is not followed)"
            )
        if t.data_type not in _NP_OF:
            raise OnnxImportError(
                f"{what}: element type {_type_name(t.data_type)} is not supported; tensorsched "
                f"reads {READ_TYPES} tensors"
            )
        dims = tuple(t.dims)
        if len(dims) > MAX_RANK or any(d < 0 for d in dims) or math.prod(dims) > MAX_ELEMENTS:
            raise OnnxImportError(f"{what}: bad dims {dims}")
        need = math.prod(dims) * np.dtype(_NP_OF[t.data_type]).itemsize
        size = os.path.getsize(path)
        offset = _external_int(info, "offset", what) or 0
        length = _external_int(info, "length", what)
        length = size - offset if length is None else length
        if length != need or offset + length > size:
            raise OnnxImportError(
                f"{what}: {length} bytes at offset {offset} of {loc!r} ({size} bytes) for "
                f"dims {dims} of {np.dtype(_NP_OF[t.data_type])} ({need} expected)"
            )
        total += length
        if total > MAX_EXTERNAL_BYTES:
            raise OnnxImportError(f"{where}: more than {MAX_EXTERNAL_BYTES} bytes of weights")
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(length)
        if len(data) != length:
            raise OnnxImportError(f"{what}: {loc!r} ended after {len(data)} of {length} bytes")
        t.raw_data = data
        del t.external_data[:]
        t.data_location = 0


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


_NP_OF = {
    1: np.float32, 6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64,
}  # fmt: skip
_FIELD_OF = {
    1: "float_data", 6: "int32_data", 7: "int64_data", 9: "int32_data", 10: "int32_data",
    11: "double_data",
}  # fmt: skip


READ_TYPES = "float32, float16, float64, int32, int64 and bool"  # _NP_OF's, for messages
# a model's inputs and outputs of these element types are given and taken as such, converted on
# the host to and from the float32 the graph holds (``Graph.feed`` / ``Graph.fetch``)
HOST_OF = {code: np.dtype(t).name for code, t in _NP_OF.items()}
CODE_OF = {name: code for code, name in HOST_OF.items()}  # host type -> ONNX element type
KIND_OF = {"float32": "float", "float16": "float", "float64": "float", "int32": "int",
           "int64": "int", "bool": "bool"}  # fmt: skip


def _type_name(code: Any) -> str:
    """ONNX's element type ``code`` as its number and name (``10 (FLOAT16)``), for messages."""
    try:
        return f"{code} ({_onnx().TensorProto.DataType.Name(code)})"
    except (ValueError, TypeError):
        return f"{code!r} (not an ONNX element type)"


def _tensor(t: Any, what: str) -> np.ndarray:
    """An initializer or Constant value as numpy, checked: dims, stored bytes, no external
    data, a supported element type."""
    what = f"{what} '{t.name}'" if t.name else what
    if t.data_location == 1 or len(t.external_data):
        raise OnnxImportError(
            f"{what}: weights in external files are read only for a model given by its path "
            "(from its folder); give the path, or embed them"
        )
    if t.data_type not in _NP_OF:
        raise OnnxImportError(
            f"{what}: element type {_type_name(t.data_type)} is not supported; tensorsched "
            f"reads {READ_TYPES} tensors"
        )
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
        elif kind == 4 and a.name == "value":  # Constant's and ConstantOfShape's
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
        # integer and boolean constants (shapes, axes, indices): never graph tensors
        self.ints: dict[str, np.ndarray] = {}
        # float constants with their exact shapes (a scalar's is ()); those the graph can
        # hold (not empty) are its constants too
        self.floats: dict[str, np.ndarray] = {}
        self.folded = 0  # elements of the constants folded so far (MAX_FOLD_TOTAL at most)
        # computed tensors of a boolean or integer ONNX type, by the model's name: ("bool" or
        # "int", the node that wrote it); the graph holds them as float32 (masks 1.0 / 0.0,
        # integer values), see KIND_READERS
        self.kind: dict[str, tuple[str, str]] = {}
        self.opset = MIN_OPSET

    def name(self, t: str) -> str:
        return self.alias.get(t, t)

    def is_const(self, t: str) -> bool:
        t = self.name(t)
        return t in self.ints or t in self.floats or t in self.g.constants

    def known(self, t: str) -> bool:
        return t in self.g.tensors or t in self.ints or t in self.floats

    def const(self, t: str, where: str) -> np.ndarray:
        t = self.name(t)
        if t in self.ints:
            return self.ints[t]
        if t in self.floats:
            return self.floats[t]
        if t in self.g.constants:
            return self.g.constants[t]
        raise UnsupportedOperatorError(
            f"{where}: input '{t}' must be a constant (an initializer, or computed from "
            "constants and shapes only)"
        )

    def ints_of(self, t: str, where: str, what: str) -> list[int]:
        """The 1-d (or scalar) integer constant ``t`` as a list (axes, sizes, indices)."""
        t = self.name(t)
        if t not in self.ints or self.ints[t].dtype == np.bool_:
            raise UnsupportedOperatorError(
                f"{where}: the {what} '{t}' must be a constant integer tensor (an "
                "initializer, or computed from constants and shapes only)"
            )
        v = self.ints[t]
        if v.ndim > 1 or v.size > 64:
            raise OnnxImportError(f"{where}: the {what} '{t}' must be a 1-d list, got {v.shape}")
        return [int(x) for x in v.reshape(-1)]

    def shape_of(self, t: str) -> tuple[int, ...]:
        t = self.name(t)
        if t in self.ints:
            return tuple(self.ints[t].shape)
        if t in self.floats:
            return tuple(self.floats[t].shape)
        return self.g.tensors[t].shape

    def define(self, name: str, value: np.ndarray, where: str) -> None:
        """The constant ``name`` computed at import (folded)."""
        if name in self.g.tensors or self.known(name) or name in self.alias:
            raise OnnxImportError(f"{where}: tensor '{name}' is defined twice")
        self._add_constant(name, value, f"{where}: output")

    def read(self) -> Graph:
        m = self.model
        opsets = {o.domain: o.version for o in m.opset_import}
        version = opsets.get("", opsets.get("ai.onnx"))
        if version is None or version < MIN_OPSET:
            raise OnnxImportError(
                f"the model's default opset is {version}; tensorsched reads opset {MIN_OPSET} "
                "and later (convert it with onnx.version_converter.convert_version)"
            )
        newest = _onnx().defs.onnx_opset_version()
        both = {opsets[d] for d in ("", "ai.onnx") if d in opsets}
        if version > newest or len(both) > 1:
            what = (
                f"opsets {' and '.join(map(str, sorted(both)))} for the default domain"
                if len(both) > 1
                else f"default opset {version}"
            )
            raise OnnxImportError(
                f"the model's {what}: tensorsched reads opsets {MIN_OPSET} to {newest} (the "
                "newest the onnx package here knows; an operator's meaning may change in a "
                "later one), once each; convert it with onnx.version_converter.convert_version"
            )
        self.opset = version
        graph = m.graph
        if len(graph.node) > MAX_NODES:
            raise OnnxImportError(f"the model has {len(graph.node)} nodes, more than {MAX_NODES}")
        for init in graph.initializer:
            self._add_constant(init.name, _tensor(init, "initializer"), "initializer")
        names = [vi.name for vi in graph.input]
        unknown = sorted(set(self.shapes) - set(names))
        if unknown:
            raise OnnxImportError(
                f"shapes name '{unknown[0]}', which is not an input of the model (its inputs: "
                f"{', '.join(names) or 'none'})"
            )
        if not len(graph.output):
            raise OnnxImportError("the model has no outputs: its graph computes nothing")
        declared: set[str] = set()
        for vi in graph.input:
            if vi.name in declared:
                raise OnnxImportError(
                    f"input '{vi.name}' is declared twice; give each input its own name"
                )
            declared.add(vi.name)
            if self.known(vi.name):  # an initializer listed as an input (older exporters)
                self._check_initializer_input(vi)
                continue
            host = self._input_type(vi)
            self.g.input(vi.name, self._input_shape(vi), host=host)
            if KIND_OF[host] != "float":
                self.kind[vi.name] = (KIND_OF[host], f"input '{vi.name}'")
        for i, node in enumerate(graph.node):
            self._node(node, i)
        outs = [self.name(o.name) for o in graph.output]
        for o in outs:
            if o in self.ints or (o in self.floats and o not in self.g.tensors):
                v = self.const(o, "the model")
                raise OnnxImportError(
                    f"the model's output '{o}' is a constant ({v.dtype} of shape {v.shape}) "
                    "computed at import from constants and shapes only; tensorsched's outputs "
                    "are float tensors computed from the model's inputs"
                )
            if o not in self.g.tensors:
                raise OnnxImportError(f"the model's output '{o}' is not computed by any node")
        for o, vo in zip(outs, graph.output):
            if o in self.g.outputs:  # another output's tensor (a Cast or Identity of it): a
                # copy of its own, which may take its own host type (``Graph.fetch``)
                o = self.g.reshape(o, self.g.tensors[o].shape, name=self.g.fresh_name(o))
            self.g.output(o, host=self._output_type(vo))
        return self.g

    def _add_constant(self, name: str, arr: np.ndarray, what: str) -> None:
        """The constant ``name`` (``what`` it is, for messages: an initializer, a node's
        output computed at import)."""
        arr = np.asarray(arr)
        if arr.dtype == np.bool_:
            self.ints[name] = arr.copy()
        elif arr.dtype.kind in "iu":
            self.ints[name] = arr.astype(np.int64)
        else:
            with np.errstate(over="ignore"):  # beyond float32's range: an infinity
                value = arr.astype(np.float32)
            if np.any(np.isnan(value)):  # an infinity is a value (attention masks: -inf)
                raise OnnxImportError(
                    f"{what} '{name}' holds nan; tensorsched's constants are numbers (inf and "
                    "-inf included)"
                )
            self.floats[name] = value
            if value.size:  # the graph holds no empty tensor
                self.g.constant(name, value)

    def _check_initializer_input(self, vi: Any) -> None:
        """An input that an initializer gives: where the input declares every dim, the
        initializer has those dims."""
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is None or not tt.HasField("shape"):
            return
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        have = self.shape_of(vi.name)
        if None not in dims and tuple(dims) != tuple(have):
            raise OnnxImportError(
                f"input '{vi.name}' is declared of shape {tuple(dims)}, but the initializer of "
                f"that name has shape {tuple(have)}"
            )

    def _input_type(self, vi: Any) -> str:
        """The element type callers give input ``vi`` in (``HOST_OF``); the graph holds it as
        float32 (see ``Graph.feed``)."""
        kind = vi.type.WhichOneof("value")
        if kind != "tensor_type":
            what = kind.removesuffix("_type") if kind else "no type"
            raise OnnxImportError(
                f"input '{vi.name}' is of {what}, not a tensor; tensorsched reads tensor inputs "
                "only"
            )
        code = vi.type.tensor_type.elem_type
        if code not in HOST_OF:
            raise OnnxImportError(
                f"input '{vi.name}': element type {_type_name(code)}; tensorsched's inputs are "
                f"{READ_TYPES}" + (" (convert the model to float32)" if code == 16 else "")
            )
        return HOST_OF[code]

    def _output_type(self, vo: Any) -> str:
        """The element type callers take output ``vo`` in: its declared one, which must be of
        the kind computed (float, int or bool; see ``KIND_READERS``), or where it declares
        none, the kind's."""
        kind = self.kind.get(vo.name, ("float", ""))[0]
        code = vo.type.tensor_type.elem_type if vo.type.HasField("tensor_type") else 0
        if code == 0:
            return {"float": "float32", "int": "int64", "bool": "bool"}[kind]
        if code not in HOST_OF:
            raise OnnxImportError(
                f"output '{vo.name}': element type {_type_name(code)}; tensorsched's outputs "
                f"are {READ_TYPES}"
            )
        if KIND_OF[HOST_OF[code]] != kind:
            node = self.kind[vo.name][1] if vo.name in self.kind else ""
            head = f"{node}: its output" if node and vo.name not in self.g.inputs else "output"
            raise OnnxImportError(
                f"{head} '{vo.name}' is declared {_type_name(code)}, but the model computes "
                f"{KIND_WHAT.get(kind, 'a float tensor')} there; declare the type it computes "
                "(or cast it in the model)"
            )
        return HOST_OF[code]

    def _input_shape(self, vi: Any) -> tuple[int, ...]:
        if vi.name in self.shapes:
            given = self.shapes[vi.name]
            ok = isinstance(given, (tuple, list)) and all(
                isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in given
            )
            if not ok:
                raise OnnxImportError(
                    f"shapes['{vi.name}'] = {str(given)[:80]!r}: give a tuple of positive ints, "
                    "e.g. (1, 3, 224, 224)"
                )
            return _dims([int(d) for d in given], f"input '{vi.name}'")
        tt = vi.type.tensor_type
        give = (
            f"give its shape: from_onnx(model, shapes={{'{vi.name}': (1, 3, 224, 224)}}) "
            f"(tensorsched net: --shape {vi.name}=1,3,224,224)"
        )
        if not tt.HasField("shape"):
            raise OnnxImportError(f"input '{vi.name}' has no shape (not even a rank); {give}")
        dims = []
        for k, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
            elif d.HasField("dim_value"):
                shown = tuple(x.dim_value if x.HasField("dim_value") else "?" for x in tt.shape.dim)
                raise OnnxImportError(
                    f"input '{vi.name}' of shape {shown}: dim {k} is {d.dim_value}; tensorsched "
                    "holds no empty tensor (every dim must be positive)"
                )
            elif d.dim_param:
                raise OnnxImportError(
                    f"input '{vi.name}' has a symbolic dimension '{d.dim_param}'; {give}"
                )
            else:
                raise OnnxImportError(f"input '{vi.name}': dim {k} has no size; {give}")
        return _dims(dims, f"input '{vi.name}'")

    def _node(self, node: Any, i: int) -> None:
        op, name = node.op_type, node.name or f"{node.op_type}_{i}"
        where = f"node '{name}' ({op})"
        if node.domain not in ("", "ai.onnx"):
            raise UnsupportedOperatorError(
                f"{where}: operator domain '{node.domain}' is not supported"
            )
        if op not in SUPPORTED:
            raise UnsupportedOperatorError(
                f"{where}: operator '{op}' is not supported; supported: {', '.join(SUPPORTED)}"
            )
        a = _attrs(node, where)
        ins = [self.name(t) for t in node.input]
        for t in ins:
            if t and not self.known(t):
                raise OnnxImportError(f"{where} reads '{t}', which no earlier node defines")
        outs = list(node.output)
        if len(outs) < 1 or not outs[0]:
            raise OnnxImportError(f"{where}: no output")
        if any(outs[1:]) and op not in MULTI_OUTPUT:
            k = next(k for k, t in enumerate(outs) if k and t)
            raise UnsupportedOperatorError(
                f"{where}: its output {k} '{outs[k]}' is not supported; tensorsched computes "
                f"only the first output, '{outs[0]}' (leave the others' names empty)"
            )
        kinds = {self.kind[t][0] for t in node.input if t in self.kind}
        for kind in kinds:
            if op not in KIND_READERS[kind]:
                t = next(t for t in node.input if self.kind.get(t, ("",))[0] == kind)
                by = f"computed from the model's inputs (by {self.kind[t][1]})"
                raise UnsupportedOperatorError(
                    f"{where}: reads '{t}', {KIND_WHAT[kind]} "
                    f"{'(a model input)' if t in self.g.inputs else by}; tensorsched holds it as "
                    f"float32 and reads it only with {', '.join(sorted(KIND_READERS[kind]))}"
                )
        try:
            if op in FOLD and any(ins) and all(self.is_const(t) for t in ins if t):
                self._fold(op, where, {**a, "_opset": self.opset}, ins, outs)
            elif op in MULTI_OUTPUT:
                MULTI_OUTPUT[op](self, name, where, a, ins, outs)
            elif op in CONVERTERS:
                a = {
                    **a,
                    "_input": node.input[0] if node.input else "",
                    "_inputs": list(node.input),
                }
                CONVERTERS[op](self, name, where, a, ins, outs[0])
            else:
                computed = next(t for t in ins if t and not self.is_const(t))
                raise UnsupportedOperatorError(
                    f"{where}: '{op}' is read only where all its inputs are constants (shape "
                    f"arithmetic, folded at import); '{computed}' is computed from the "
                    "model's inputs"
                )
        except GraphError as exc:
            empty = [t for t in ins if t in self.floats and f"reads '{t}'," in str(exc)]
            if empty:  # a constant of no element, which the graph does not hold
                raise OnnxImportError(
                    f"{where}: input '{empty[0]}' is an empty constant (shape "
                    f"{self.floats[empty[0]].shape}); tensorsched's graph holds no empty tensor"
                ) from None
            raise OnnxImportError(f"{where}: {exc}") from None
        # layout operators (and KIND_EXACT of integers): the outputs keep the type of
        # the data (a Gather's first input; its indices are integers whatever it gathers)
        data = node.input[: 1 if op == "Gather" else None]
        kept = {self.kind[t][0] for t in data if t in self.kind}
        if kept and op in KIND_KEEPING | KIND_EXACT:
            kind = "int" if "int" in kept else "bool"
            for t in outs:
                if t and t not in self.kind:
                    self.kind[t] = (kind, where)

    def operand(self, t: str, where: str) -> str:
        """The graph tensor of input ``t``: itself where the graph holds it, else a constant
        made float32 (a boolean one a mask 1.0 / 0.0; an integer one where float32 holds its
        values exactly)."""
        t = self.name(t)
        if t in self.g.tensors:
            return t
        v = self.const(t, where)
        if v.size == 0:
            raise OnnxImportError(f"{where}: input '{t}' is empty; the graph holds no empty tensor")
        f = v.astype(np.float32)
        if v.dtype.kind in "iu" and not np.array_equal(f.astype(np.int64), v):
            raise UnsupportedOperatorError(
                f"{where}: the integer constant '{t}' holds values that float32 does not hold "
                "exactly (beyond 2**24); tensorsched computes float32 only"
            )
        return self.g.constant(self.g.fresh_name(f"{t}_f32"), f)

    def _fold(self, op: str, where: str, a: dict, ins: list[str], outs: list[str]) -> None:
        """Evaluate ``op`` on constant inputs now: its outputs are constants."""
        values = [self.const(t, where) if t else None for t in ins]
        try:
            with np.errstate(all="ignore"):
                result = FOLD[op](where, {**a, "_outputs": len(outs)}, values)
        except (ValueError, IndexError, TypeError, KeyError, ArithmeticError) as exc:
            raise OnnxImportError(
                f"{where}: cannot evaluate it on its constant inputs: {exc}"
            ) from None
        results = result if isinstance(result, list) else [result]
        self.folded += sum(np.size(v) for v in results)
        if self.folded > MAX_FOLD_TOTAL:
            raise OnnxImportError(
                f"{where}: the constants computed at import exceed {MAX_FOLD_TOTAL} elements"
            )
        for out, value in zip(outs, results):
            if out:
                self.define(out, np.asarray(value), where)


def _no_dilation(a: Mapping[str, Any], where: str) -> None:
    if any(d != 1 for d in a.get("dilations", [1, 1])):
        raise UnsupportedOperatorError(
            f"{where}: dilations {a['dilations']}; tensorsched pools windows without dilation "
            "only (dilations of 1)"
        )


def _window_pads(
    a: Mapping[str, Any], where: str, in_hw: Sequence[int], kernel: Sequence[int]
) -> tuple[int, int, int, int]:
    """ONNX's ``pads`` (top, left, bottom, right) or ``auto_pad``."""
    auto = a.get("auto_pad", "NOTSET")
    strides = _int_list(a.get("strides", [1, 1]), where, "strides") or []
    window = _int_list(list(kernel) if isinstance(kernel, tuple) else kernel, where, "kernel")
    if len(strides) != 2 or window is None or len(window) != 2:
        raise UnsupportedOperatorError(f"{where}: only 2-d windows are supported")
    if auto in ("NOTSET", ""):
        pads = _int_list(a.get("pads", [0, 0, 0, 0]), where, "pads") or []
        if len(pads) != 4:
            raise OnnxImportError(f"{where}: pads {pads} must be 4 ints")
        return (pads[0], pads[1], pads[2], pads[3])
    if auto == "VALID":
        return (0, 0, 0, 0)
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out: list[int] = []
        for size, k, s in zip(in_hw, window, strides):
            if s < 1:
                raise OnnxImportError(f"{where}: strides {strides} must be positive")
            total = max((-(-size // s) - 1) * s + k - size, 0)
            small = total // 2
            out.append(small if auto == "SAME_UPPER" else total - small)
            out.append(total - out[-1])
        return (out[0], out[2], out[1], out[3])
    raise OnnxImportError(f"{where}: auto_pad '{auto}' is not one ONNX defines")


MAX_DILATION = 64


def _dilations(a: Mapping[str, Any], where: str) -> tuple[int, int]:
    d = _int_list(a.get("dilations", [1, 1]), where, "dilations") or []
    if len(d) != 2 or not all(1 <= x <= MAX_DILATION for x in d):
        raise OnnxImportError(f"{where}: dilations {d} must be 2 ints from 1 to {MAX_DILATION}")
    return d[0], d[1]


def _span(kernel: Sequence[int], dil: tuple[int, int]) -> tuple[int, int]:
    """The input window a kernel of ``kernel`` taps, ``dil`` apart, covers."""
    return ((kernel[0] - 1) * dil[0] + 1, (kernel[1] - 1) * dil[1] + 1)


def _conv_weight(r: _Reader, ins: list[str], where: str, op: str) -> str:
    """A convolution's inputs checked (a float input, a constant weight, an optional bias);
    its weight."""
    if len(ins) not in (2, 3):
        raise OnnxImportError(f"{where}: {op} takes 2 or 3 inputs, got {len(ins)}")
    _float_input(r, ins, where)
    if ins[1] not in r.g.constants:
        raise UnsupportedOperatorError(f"{where}: the weight '{ins[1]}' must be an initializer")
    return ins[1]


def _pads_3d(
    a: Mapping[str, Any], where: str, sizes: Sequence[int], span: Sequence[int]
) -> list[int]:
    """ONNX's six ``pads`` (front, top, left, back, bottom, right) of a 3-d window covering
    ``span`` input elements per axis, or those ``auto_pad`` gives."""
    auto = a.get("auto_pad", "NOTSET")
    strides = _int_list(a.get("strides", [1, 1, 1]), where, "strides") or []
    if len(strides) != 3 or min(strides) < 1:
        raise OnnxImportError(f"{where}: strides {strides} must be 3 positive ints (3-d)")
    if auto in ("NOTSET", ""):
        pads = _int_list(a.get("pads", [0] * 6), where, "pads") or []
        if len(pads) != 6 or min(pads) < 0:
            raise OnnxImportError(f"{where}: pads {pads} must be 6 non-negative ints (3-d)")
        return pads
    if auto == "VALID":
        return [0] * 6
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for size, k, st in zip(sizes, span, strides):
            total = max((-(-size // st) - 1) * st + k - size, 0)
            small = total // 2
            begin.append(small if auto == "SAME_UPPER" else total - small)
            end.append(total - begin[-1])
        return begin + end
    raise OnnxImportError(f"{where}: auto_pad '{auto}' is not one ONNX defines")


def _dilations_3d(a: Mapping[str, Any], where: str) -> list[int]:
    dil = _int_list(a.get("dilations", [1, 1, 1]), where, "dilations") or []
    if len(dil) != 3 or not all(1 <= x <= MAX_DILATION for x in dil):
        raise OnnxImportError(f"{where}: dilations {dil} must be 3 ints from 1 to {MAX_DILATION}")
    return dil


def _conv3d(r: _Reader, name: str, where: str, a: dict, ins: list[str], w: str) -> None:
    """Conv over NCDHW data (a 5-d weight): a ``conv3d`` node (groups, strides, pads,
    dilations)."""
    wshape = r.g.tensors[w].shape
    xshape = r.g.tensors[ins[0]].shape
    if len(xshape) != 5:
        raise OnnxImportError(f"{where}: a 5-d weight {wshape} needs a 5-d input, got {xshape}")
    kernel = a.get("kernel_shape", list(wshape[2:]))
    if list(kernel) != list(wshape[2:]):
        raise OnnxImportError(f"{where}: kernel_shape {kernel} disagrees with the weight {wshape}")
    dil = _dilations_3d(a, where)
    span = [(k - 1) * d + 1 for k, d in zip(wshape[2:], dil)]
    pads = _pads_3d(a, where, xshape[2:], span)
    b = ins[2] if len(ins) == 3 and ins[2] else None
    strides = a.get("strides", [1, 1, 1])
    r.g.conv3d(ins[0], w, b, strides, pads, _int_attr(a, "group", 1, where), name, dil)


def _conv(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Conv (2-d, groups, dilations, a constant weight); 3-d (a 5-d weight) as ``conv3d``."""
    w = _conv_weight(r, ins, where, "Conv")
    wshape = r.g.tensors[w].shape
    if len(wshape) == 5:
        _conv3d(r, name, where, a, ins, w)
        _rename_output(r, name, out)
        return
    dil = _dilations(a, where)
    if len(wshape) != 4:
        raise UnsupportedOperatorError(
            f"{where}: a weight of shape {wshape}; tensorsched reads 1-d, 2-d and 3-d Conv, "
            "not 4-d or more"
        )
    kernel = a.get("kernel_shape", list(wshape[2:]))
    if list(kernel) != list(wshape[2:]):
        raise OnnxImportError(f"{where}: kernel_shape {kernel} disagrees with the weight {wshape}")
    xshape = r.g.tensors[ins[0]].shape
    pads = _window_pads(a, where, xshape[2:], _span(wshape[2:], dil))
    b = ins[2] if len(ins) == 3 and ins[2] else None
    r.g.conv2d(ins[0], w, b, a.get("strides", [1, 1]), pads, a.get("group", 1), name, dil)
    _rename_output(r, name, out)


def _conv_transpose(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """ConvTranspose (2-d, and 3-d by ``_conv_transpose3d``; groups, dilations, a constant weight;
    explicit pads, VALID, or pads that follow from SAME_UPPER / SAME_LOWER or ``output_shape``:
    ``_transpose_pads``; ``output_padding``) as a convolution of stride 1: the input with
    ``stride - 1`` zeros between its elements (reshaped with a size-1 axis after each spatial
    one, padded, reshaped back, its trailing zeros sliced off), padded by ``k - 1 - pad`` (``k``
    the dilated kernel's span; a negative amount crops), convolved (with the same dilations)
    with the weight's taps flipped and its in and out channels swapped within each group. The
    inserted zeros cost their multiply-adds."""
    w = _conv_weight(r, ins, where, "ConvTranspose")
    wk = r.g.constants[w]
    xshape = r.g.tensors[ins[0]].shape
    group = _int_attr(a, "group", 1, where)
    if wk.ndim == 5 and len(xshape) == 5:
        _conv_transpose3d(r, name, where, a, ins, w)
        _rename_output(r, name, out)
        return
    if wk.ndim != 4 or len(xshape) != 4:
        raise UnsupportedOperatorError(
            f"{where}: a weight of shape {wk.shape} on an input of shape {xshape}; tensorsched "
            "reads 1-d, 2-d and 3-d ConvTranspose (a 5-d weight on a 5-d input), not 4-d or more"
        )
    cin, cog, kh, kw = wk.shape
    if group < 1 or cin % group or xshape[1] != cin:
        raise OnnxImportError(
            f"{where}: the weight {wk.shape} and group {group} do not fit {xshape[1]} channels"
        )
    auto = a.get("auto_pad", "NOTSET")
    if auto not in ("NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise OnnxImportError(f"{where}: auto_pad '{auto}' is not one ONNX defines")
    dil = _dilations(a, where)
    strides = _int_list(a.get("strides", [1, 1]), where, "strides") or []
    pads = [0, 0, 0, 0] if auto == "VALID" else _int_list(a.get("pads", [0] * 4), where, "pads")
    extra = _int_list(a.get("output_padding", [0, 0]), where, "output_padding") or []
    if len(strides) != 2 or not all(1 <= x <= 64 for x in strides):
        raise OnnxImportError(f"{where}: strides {strides} must be 2 ints from 1 to 64")
    given = "output_shape" not in a and not auto.startswith("SAME")  # the model's own pads
    if not given:
        pads = _transpose_pads(a, where, xshape[2:], (kh, kw), strides, extra, auto, dil)
    if not pads or len(pads) != 4 or (given and any(p < 0 for p in pads)):
        raise OnnxImportError(f"{where}: pads {pads} must be 4 non-negative ints")
    if len(extra) != 2 or any(not 0 <= e < max(s, d) for e, s, d in
                              zip(extra, strides, dil)):  # fmt: skip
        raise OnnxImportError(f"{where}: output_padding {extra} must be below the strides")
    g, fresh = r.g, _fresh(r, name)
    # the flipped, channel-swapped weight: (group * cog, cin / group, kh, kw)
    cig = cin // group
    flipped = wk[:, :, ::-1, ::-1].reshape(group, cig, cog, kh, kw).transpose(0, 2, 1, 3, 4)
    wt = g.constant(
        fresh("weight"), np.ascontiguousarray(flipped.reshape(group * cog, cig, kh, kw))
    )
    kd = _span((kh, kw), dil)
    x = ins[0]
    n, c, h, wd = xshape
    if strides != [1, 1]:
        sh, sw = strides
        x = g.reshape(x, [n, c, h, 1, wd, 1], name=fresh("split"))
        x = g.pad(x, [0, 0, 0, 0, 0, 0] + [0, 0, 0, sh - 1, 0, sw - 1], name=fresh("zeros"))
        x = g.reshape(x, [n, c, h * sh, wd * sw], name=fresh("spread"))
        x = g.slice(x, [0, 0], [(h - 1) * sh + 1, (wd - 1) * sw + 1], [2, 3], name=fresh("cut"))
    before = [kd[0] - 1 - pads[0], kd[1] - 1 - pads[1]]
    after = [kd[0] - 1 - pads[2] + extra[0], kd[1] - 1 - pads[3] + extra[1]]
    size = [
        g.tensors[x].shape[2] + before[0] + after[0],
        g.tensors[x].shape[3] + before[1] + after[1],
    ]
    if size[0] < kd[0] or size[1] < kd[1]:
        raise OnnxImportError(f"{where}: pads {pads} leave no output")
    if any(before + after):
        x = g.pad(x, [0, 0, before[0], before[1], 0, 0, after[0], after[1]], name=fresh("pad"))
    b = ins[2] if len(ins) == 3 and ins[2] else None
    g.conv2d(x, wt, b, [1, 1], [0, 0, 0, 0], group, name, dil)
    _rename_output(r, name, out)


def _conv_transpose3d(r: _Reader, name: str, where: str, a: dict, ins: list[str], w: str) -> None:
    """ConvTranspose over NCDHW data (a 5-d weight) as ``_conv_transpose`` does it on three
    spatial axes: the input spread with ``stride - 1`` zeros per axis (a size-1 axis after
    each spatial one, padded, reshaped back, the trailing zeros sliced off), padded by
    ``k - 1 - pad`` (a negative amount crops), then a ``conv3d`` of stride 1 with the same
    dilations and the weight's taps flipped, its in and out channels swapped per group."""
    g, fresh = r.g, _fresh(r, name)
    wk = g.constants[w]
    xshape = g.tensors[ins[0]].shape
    group = _int_attr(a, "group", 1, where)
    cin, cog = wk.shape[:2]
    kernel = list(wk.shape[2:])
    if group < 1 or cin % group or xshape[1] != cin:
        raise OnnxImportError(
            f"{where}: the weight {wk.shape} and group {group} do not fit {xshape[1]} channels"
        )
    if list(a.get("kernel_shape", kernel)) != kernel:
        raise OnnxImportError(f"{where}: kernel_shape {a['kernel_shape']} disagrees with {kernel}")
    auto = a.get("auto_pad", "NOTSET")
    if auto not in ("NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise OnnxImportError(f"{where}: auto_pad '{auto}' is not one ONNX defines")
    dil = _dilations_3d(a, where)
    strides = _int_list(a.get("strides", [1, 1, 1]), where, "strides") or []
    if len(strides) != 3 or not all(1 <= x <= 64 for x in strides):
        raise OnnxImportError(f"{where}: strides {strides} must be 3 ints from 1 to 64")
    extra = _int_list(a.get("output_padding", [0, 0, 0]), where, "output_padding") or []
    if len(extra) != 3 or any(not 0 <= e < max(s, d) for e, s, d in zip(extra, strides, dil)):
        raise OnnxImportError(f"{where}: output_padding {extra} must be 3 ints below the strides")
    pads = [0] * 6 if auto == "VALID" else _int_list(a.get("pads", [0] * 6), where, "pads")
    given = "output_shape" not in a and not auto.startswith("SAME")  # the model's own pads
    if not given:
        pads = _transpose_pads(a, where, xshape[2:], kernel, strides, extra, auto, dil)
    if not pads or len(pads) != 6 or (given and any(p < 0 for p in pads)):
        raise OnnxImportError(f"{where}: pads {pads} must be 6 non-negative ints")
    # the flipped, channel-swapped weight: (group * cog, cin / group, kd, kh, kw)
    cig = cin // group
    flipped = wk[:, :, ::-1, ::-1, ::-1].reshape(group, cig, cog, *kernel)
    flipped = flipped.transpose(0, 2, 1, 3, 4, 5).reshape(group * cog, cig, *kernel)
    wt = g.constant(fresh("weight"), np.ascontiguousarray(flipped))
    span = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    x = ins[0]
    n, c, *sizes = xshape
    if strides != [1, 1, 1]:
        tall = [n, c] + [v for size in sizes for v in (size, 1)]
        x = g.reshape(x, tall, name=fresh("split"))
        x = g.pad(x, [0] * 8 + [0, 0] + [v for st in strides for v in (0, st - 1)],
                  name=fresh("zeros"))  # fmt: skip
        x = g.reshape(x, [n, c] + [v * st for v, st in zip(sizes, strides)], name=fresh("spread"))
        ends = [(v - 1) * st + 1 for v, st in zip(sizes, strides)]
        x = g.slice(x, [0, 0, 0], ends, [2, 3, 4], name=fresh("cut"))
    before = [k - 1 - p for k, p in zip(span, pads[:3])]
    after = [k - 1 - p + e for k, p, e in zip(span, pads[3:], extra)]
    for axis in range(3):
        if g.tensors[x].shape[2 + axis] + before[axis] + after[axis] < span[axis]:
            raise OnnxImportError(f"{where}: pads {pads} leave no output")
    if any(before + after):
        x = g.pad(x, [0, 0] + before + [0, 0] + after, name=fresh("pad"))
    b = ins[2] if len(ins) == 3 and ins[2] else None
    g.conv3d(x, wt, b, [1, 1, 1], [0] * 6, group, name, dil)


MAX_OUTPUT_GROWTH = 1024  # zeros a ConvTranspose's output_shape may add past its full output


def _transpose_pads(
    a: Mapping[str, Any], where: str, in_hw: Sequence[int], kernel: Sequence[int],
    strides: Sequence[int], extra: Sequence[int], auto: str, dil: Sequence[int],
) -> list[int]:  # fmt: skip
    """A ConvTranspose's pads (the starts of its spatial axes, then their ends) from its
    ``output_shape`` (its spatial sizes; with N and C first too) or, without one, ``auto_pad``
    SAME's output of ``input * stride``: ONNX's total padding ``stride * (in - 1) +
    output_padding + (kernel - 1) * dilation + 1 - out`` per axis, the larger half at the end
    for SAME_UPPER, at the start otherwise (a negative total: an output larger than the full
    one, its border the bias alone, as negative pads)."""
    rank = len(in_hw)
    if "output_shape" in a:
        shape = _int_list(a["output_shape"], where, "output_shape") or []
        if len(shape) not in (rank, rank + 2):
            raise OnnxImportError(
                f"{where}: output_shape {shape} must give the {rank} spatial sizes"
            )
        out = shape[-rank:]
    else:
        out = [n * s for n, s in zip(in_hw, strides)]
    if len(extra) != rank:
        raise OnnxImportError(f"{where}: output_padding {list(extra)} must be {rank} ints")
    begin, end = [], []
    for d in range(rank):
        full = strides[d] * (in_hw[d] - 1) + extra[d] + (kernel[d] - 1) * dil[d] + 1
        total = full - out[d]
        if out[d] < 1 or out[d] > full + MAX_OUTPUT_GROWTH:
            raise OnnxImportError(
                f"{where}: output_shape {out} on axis {d} is outside 1 .. "
                f"{full + MAX_OUTPUT_GROWTH} (the transposed convolution's full output is {full})"
            )
        start = total // 2 if auto == "SAME_UPPER" else total - total // 2
        begin.append(start)
        end.append(total - start)
    return begin + end


def _as_2d(convert: Any) -> Any:
    """A 2-d window operator (Conv, ConvTranspose, MaxPool, AveragePool) that also reads a
    1-d input ``(N, C, L)``: run on ``(N, C, 1, L)`` with a window one tall (the attributes
    and a constant weight given that axis), its output reshaped back to three axes."""

    def wrapped(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
        if not ins or ins[0] not in r.g.tensors or len(r.g.tensors[ins[0]].shape) != 3:
            convert(r, name, where, a, ins, out)
            return
        g = r.g
        n, c, length = g.tensors[ins[0]].shape
        a2 = dict(a)
        for key, one in (("strides", 1), ("dilations", 1), ("kernel_shape", 1),
                         ("output_padding", 0), ("output_shape", 1)):  # fmt: skip
            if key in a2:
                v = _int_list(a2[key], where, key)
                if v is None or len(v) != 1:
                    raise OnnxImportError(f"{where}: {key} {v} must be one int (a 1-d input)")
                a2[key] = [one, v[0]]
        if "pads" in a2:
            p = _int_list(a2["pads"], where, "pads")
            if p is None or len(p) != 2:
                raise OnnxImportError(f"{where}: pads {p} must be two ints (a 1-d input)")
            a2["pads"] = [0, p[0], 0, p[1]]
        ins2 = [g.reshape(ins[0], [n, c, 1, length], name=g.fresh_name(name + "_tall"))]
        ins2 += ins[1:]
        if len(ins) > 1 and ins[1] in g.constants and g.constants[ins[1]].ndim == 3:
            w = g.constants[ins[1]]
            tall = w.reshape(w.shape[0], w.shape[1], 1, w.shape[2])
            ins2[1] = g.constant(g.fresh_name(name + "_weight_tall"), tall)
        inner, flat = g.fresh_name(name + "_2d"), g.fresh_name(name + "_2d_out")
        convert(r, inner, where, a2, ins2, flat)
        shape = g.tensors[flat].shape
        g.reshape(flat, [shape[0], shape[1], shape[3]], name=name)
        _rename_output(r, name, out)

    return wrapped


def _rename_output(r: _Reader, node: str, out: str) -> None:
    """Give ``node``'s output the model's tensor name."""
    n = r.g.nodes[node]
    if n.output != out:
        if r.known(out) or out in r.alias:
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
    "Erf": ("erf", ()),
    "Sqrt": ("sqrt", ()),
    "Exp": ("exp", ()),
    "Log": ("log", ()),
    "Neg": ("neg", ()),
    "Abs": ("abs", ()),
    "Reciprocal": ("reciprocal", ()),
    "Floor": ("floor", ()),
    "Ceil": ("ceil", ()),
    "Sign": ("sign", ()),
}
BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}  # numpy broadcasting


def _batch_norm(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    if a.get("training_mode", 0):
        raise UnsupportedOperatorError(f"{where}: training_mode=1 (inference only)")
    if len(ins) != 5:
        raise OnnxImportError(f"{where}: BatchNormalization takes 5 inputs, got {len(ins)}")
    eps = a.get("epsilon", 1e-5)
    if not isinstance(eps, float) or not math.isfinite(eps):
        raise OnnxImportError(f"{where}: epsilon {eps!r} must be a finite float")
    if ins[4] in r.g.constants and not np.all(r.g.constants[ins[4]] + eps > 0):
        raise OnnxImportError(f"{where}: the variance plus epsilon must be positive")
    r.g.batch_norm(ins[0], ins[1], ins[2], ins[3], ins[4], eps, name=name)
    _rename_output(r, name, out)


def _clip(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Clip by constant bounds; a ``min`` above ``max`` sets every element to ``max``, as ONNX
    defines it (``min(max, max(x, min))``): a clip to ``[max, max]``."""
    bounds = []
    for k, default in ((1, -FLOAT_MAX), (2, FLOAT_MAX)):
        v = r.const(ins[k], where) if len(ins) > k and ins[k] else np.array(default)
        if v.size != 1 or v.dtype == np.bool_:
            raise OnnxImportError(f"{where}: {('min', 'max')[k - 1]} must be one number")
        bounds.append(float(v.reshape(-1)[0]))
    lo, hi = bounds
    r.g.clip(ins[0], min(lo, hi), hi, name=name)
    _rename_output(r, name, out)


def _binary(op: str) -> Any:
    def convert(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
        if len(ins) != 2 or not all(ins):
            raise OnnxImportError(f"{where}: takes 2 inputs")
        for t in ins:
            if t in r.ints:
                raise UnsupportedOperatorError(
                    f"{where}: '{t}' is an integer tensor and the other operand a computed "
                    "float one; tensorsched computes float32 only (cast the integers to float)"
                )
        r.g.add_node(op, ins, {}, name)
        _rename_output(r, name, out)

    return convert


def _dropout(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Inference: the identity. So is a constant ``training_mode`` input that is false, or
    true with a constant ``ratio`` of 0 (nothing dropped, nothing scaled); true with another
    ratio drops at random, which is refused."""
    if len(ins) > 2 and ins[2]:
        mode = r.const(ins[2], where)
        ratio = r.const(ins[1], where) if ins[1] else np.array(0.5)
        if mode.size != 1 or ratio.size != 1:
            raise OnnxImportError(f"{where}: ratio and training_mode must be one value each")
        if bool(mode.reshape(-1)[0]) and float(ratio.reshape(-1)[0]) != 0:
            raise UnsupportedOperatorError(
                f"{where}: training_mode is true and ratio {float(ratio.reshape(-1)[0])}: a "
                "random dropout; tensorsched reads inference models (training_mode false)"
            )
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
    xshape = r.g.tensors[ins[0]].shape
    if kernel is not None and len(kernel) == 3 and len(xshape) == 5:
        _pool3d(r, name, where, a, ins, op, bool(ceil))
        _rename_output(r, name, out)
        return
    if kernel is None or len(kernel) != 2:
        raise UnsupportedOperatorError(
            f"{where}: kernel_shape {kernel} must be two or three ints; tensorsched pools 1-d, "
            "2-d and 3-d windows, not 4-d or more"
        )
    if len(xshape) != 4:
        raise OnnxImportError(f"{where}: the input must be NCHW, got shape {xshape}")
    pads = _window_pads(a, where, xshape[2:], kernel)
    strides = a.get("strides", [1, 1])
    if op == "max_pool2d":
        r.g.max_pool2d(ins[0], kernel, strides, pads, name=name, ceil_mode=bool(ceil))
    else:
        include = _flag(a, "count_include_pad", where)
        r.g.avg_pool2d(ins[0], kernel, strides, pads, include, name=name, ceil_mode=bool(ceil))
    _rename_output(r, name, out)


def _pool3d(
    r: _Reader, name: str, where: str, a: dict, ins: list[str], op: str, ceil: bool
) -> None:
    """MaxPool / AveragePool over NCDHW data: a ``max_pool3d`` or ``avg_pool3d`` node."""
    kernel = _int_list(a["kernel_shape"], where, "kernel_shape") or []
    pads = _pads_3d(a, where, r.g.tensors[ins[0]].shape[2:], kernel)
    strides = a.get("strides", [1, 1, 1])
    if op == "max_pool2d":
        r.g.max_pool3d(ins[0], kernel, strides, pads, name=name, ceil_mode=ceil)
    else:
        include = bool(a.get("count_include_pad", 0))
        r.g.avg_pool3d(ins[0], kernel, strides, pads, include, name=name, ceil_mode=ceil)


def _global_avg_pool(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """GlobalAveragePool: a ``global_avg_pool2d`` node over NCHW data, else the mean over
    every axis after N and C (a ``reduce``; NCDHW data among them)."""
    _float_input(r, ins, where)
    rank = len(r.g.tensors[ins[0]].shape)
    if rank == 4:
        r.g.global_avg_pool2d(ins[0], name=name)
    elif rank >= 3:
        r.g.reduce(ins[0], "mean", list(range(2, rank)), True, name=name)
    else:
        raise OnnxImportError(f"{where}: the input must have N, C and spatial axes")
    _rename_output(r, name, out)


def _float_input(r: _Reader, ins: list[str], where: str) -> None:
    """The node's first input is a float tensor (not missing, not an integer constant)."""
    if not ins or ins[0] not in r.g.tensors:
        raise OnnxImportError(f"{where}: the first input must be a float tensor")


def _reduce(kind: str) -> Any:
    """ONNX's ReduceMean / ReduceSum / ReduceMax over any axes (negative ones too), with
    ``keepdims`` and ``noop_with_empty_axes``; the axes are an attribute or a constant input
    (the input form from opset 13 for ReduceSum, 18 for the others; either is read). A mean
    over H and W of an NCHW tensor (torch's ``x.mean([2, 3])``) is a global average pool
    (flattened to ``(N, C)`` where ``keepdims=0``), which the pooling templates build."""

    def convert(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
        if len(ins) > 1 and ins[1]:
            axes = r.ints_of(ins[1], where, "axes")
        else:
            axes = a.get("axes", [])
        keepdims = a.get("keepdims", 1)
        if not isinstance(axes, list) or not all(isinstance(x, int) for x in axes):
            raise OnnxImportError(f"{where}: axes {axes!r} must be ints")
        if not isinstance(keepdims, int) or keepdims not in (0, 1):
            raise OnnxImportError(f"{where}: keepdims {keepdims!r} must be 0 or 1")
        _float_input(r, ins, where)
        if not axes and _int_attr(a, "noop_with_empty_axes", 0, where):
            _identity(r, name, where, a, ins[:1], out)
            return
        shape = r.g.tensors[ins[0]].shape
        rank = len(shape)
        if any(not -rank <= x < rank for x in axes):
            raise OnnxImportError(
                f"{where}: axes {axes} out of range for the input of shape {shape}"
            )
        if kind == "mean" and rank == 4 and sorted(x % rank for x in axes) == [2, 3]:
            r.g.global_avg_pool2d(ins[0], name=name)
            if keepdims:
                _rename_output(r, name, out)
                return
            flat = r.g.fresh_name(name + "_flatten")
            r.g.flatten(r.g.nodes[name].output, 1, name=flat)
            _rename_output(r, flat, out)
            return
        r.g.reduce(ins[0], kind, axes or None, bool(keepdims), name=name)
        _rename_output(r, name, out)

    return convert


def _gemm(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Gemm of a computed ``A`` (``transA``: transposed first) by a constant ``B``: a dense
    layer, its bias a constant ``C`` of one row (a matrix ``C``: added after it)."""
    if len(ins) not in (2, 3):
        raise OnnxImportError(f"{where}: Gemm takes 2 or 3 inputs")
    _float_input(r, ins, where)
    B = r.const(ins[1], where).astype(np.float64)
    if B.ndim != 2:
        raise OnnxImportError(f"{where}: B must be 2-d, got shape {B.shape}")
    trans_a, trans_b = (_flag(a, k, where) for k in ("transA", "transB"))
    alpha, beta = (_float_attr(a, k, 1.0, where) for k in ("alpha", "beta"))
    W = (B if trans_b else B.T) * alpha
    x = ins[0]
    if len(r.g.tensors[x].shape) != 2:
        raise OnnxImportError(f"{where}: A must be 2-d, got {r.g.tensors[x].shape}")
    if trans_a:
        x = r.g.transpose(x, [1, 0], name=r.g.fresh_name(name + "_at"))
    m = r.g.tensors[x].shape[0]
    b, matrix = None, None
    if len(ins) == 3 and ins[2]:
        C = r.const(ins[2], where).astype(np.float64) * beta
        if C.ndim > 2 or np.broadcast_shapes(C.shape, (m, W.shape[0])) != (m, W.shape[0]):
            raise OnnxImportError(
                f"{where}: C of shape {C.shape} does not broadcast to ({m}, {W.shape[0]})"
            )
        if C.size in (1, W.shape[0]) and (C.ndim < 2 or C.shape[0] == 1):
            b = r.g.constant(
                r.g.fresh_name(name + "_bias"), np.broadcast_to(C.reshape(-1), W.shape[:1])
            )
        else:
            matrix = r.g.constant(r.g.fresh_name(name + "_c"), C.astype(np.float32))
    weight = r.g.constant(r.g.fresh_name(name + "_weight"), W)
    if matrix is None:
        r.g.dense(x, weight, b, name=name)
    else:
        y = r.g.dense(x, weight, None, name=r.g.fresh_name(name + "_ab"))
        r.g.add_node("add", [y, matrix], {}, name)
    _rename_output(r, name, out)


def _matmul(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """numpy's matmul. A computed tensor of 2 or more dims times a constant 2-d ``B`` is a
    dense layer over its rows (a transformer's projection of ``(batch, tokens, features)``:
    reshaped to rows and back), into which a following bias add fuses; any other product
    (two computed tensors, as attention's ``Q @ K^T``; a constant times a computed tensor;
    1-d operands) is a ``batch_matmul`` node."""
    if len(ins) != 2 or not all(ins):
        raise OnnxImportError(f"{where}: takes 2 inputs")
    for t in ins:
        if t in r.ints:
            raise UnsupportedOperatorError(
                f"{where}: '{t}' is an integer tensor; tensorsched multiplies float32 "
                "tensors only (cast it to float)"
            )
        if r.shape_of(t) == () or t not in r.g.tensors:
            raise OnnxImportError(
                f"{where}: '{t}' of shape {r.shape_of(t)} is a scalar or empty; MatMul "
                "multiplies tensors of 1 or more dims"
            )
    shape = r.g.tensors[ins[0]].shape
    if len(shape) < 2 or not r.is_const(ins[1]) or r.const(ins[1], where).ndim != 2:
        r.g.batch_matmul(ins[0], ins[1], name=name)
        _rename_output(r, name, out)
        return
    B = r.const(ins[1], where)
    if B.shape[0] != shape[-1]:
        raise OnnxImportError(
            f"{where}: A of shape {shape} has {shape[-1]} columns but B of shape {B.shape} "
            f"has {B.shape[0]} rows"
        )
    w = r.g.constant(r.g.fresh_name(name + "_weight"), B.T)
    if len(shape) == 2:
        r.g.dense(ins[0], w, name=name)
        _rename_output(r, name, out)
        return
    rows = r.g.reshape(ins[0], (-1, shape[-1]), name=r.g.fresh_name(name + "_rows"))
    y = r.g.dense(rows, w, name=r.g.fresh_name(name + "_dense"))
    _reshape_to(r, name, y, (*shape[:-1], B.shape[1]), out)


def _expand(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Expand of a computed tensor (its constant shape): a product by ones of the shape of
    the axes it repeats along (broadcast, as ``mul`` does), or the identity where it
    repeats along none."""
    if len(ins) != 2 or not all(ins):
        raise OnnxImportError(f"{where}: takes 2 inputs (input, shape)")
    _float_input(r, ins, where)
    want = r.ints_of(ins[1], where, "shape")
    x = r.g.tensors[ins[0]].shape
    if any(d < 1 for d in want):
        raise OnnxImportError(f"{where}: shape {want} must be positive")
    result = _broadcast(where, np.broadcast_to(0, x), np.broadcast_to(0, tuple(want)))
    if result == x:
        _identity(r, name, where, a, ins[:1], out)
        return
    pad = (1,) * (len(result) - len(x)) + tuple(x)
    ones = tuple(1 if p == d else d for p, d in zip(pad, result))
    c = r.g.constant(r.g.fresh_name(name + "_ones"), np.ones(ones, np.float32))
    r.g.add_node("mul", [ins[0], c], {}, name)
    _rename_output(r, name, out)


def _no_zero_with_allowzero(a: dict, shape: Any, where: str) -> None:
    """``allowzero=1`` makes a 0 in the target shape an empty dimension, which the graph
    holds none of; without a 0 it changes nothing (torch's dynamo exporter sets it)."""
    if _int_attr(a, "allowzero", 0, where) and any(int(d) == 0 for d in np.ravel(shape)):
        raise UnsupportedOperatorError(
            f"{where}: allowzero=1 with a 0 in the shape (an empty dimension) is not supported"
        )


def _reshape(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    shape = r.const(ins[1], where) if len(ins) > 1 else np.zeros(0)
    if shape.ndim != 1 or shape.size > MAX_RANK:
        raise OnnxImportError(f"{where}: the shape must be a 1-d tensor of at most {MAX_RANK}")
    _no_zero_with_allowzero(a, shape, where)
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
    if r.known(out) or out in r.alias:
        raise OnnxImportError(f"{where}: tensor '{out}' is defined twice")
    if not ins or not r.known(ins[0]):
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
    r.define(out, np.asarray(value), where)


# ---- constants folded at import: shape arithmetic (Shape, Gather, Unsqueeze, Concat ...
# feeding a Reshape) and any supported operator whose inputs are all constants

MAX_FOLD = 1 << 24  # elements of one folded constant (64 MiB of float32)
MAX_FOLD_TOTAL = 1 << 26  # of all of them together
Values = list[Any]  # the constant inputs, None for an input left out


def _fold_size(shape: Sequence[int], where: str) -> tuple[int, ...]:
    """``shape``, checked as the shape of a constant to compute at import."""
    shape = tuple(int(d) for d in shape)
    if len(shape) > MAX_RANK or any(d < 0 for d in shape) or math.prod(shape) > MAX_FOLD:
        raise OnnxImportError(
            f"{where}: a constant of shape {shape} is more than tensorsched computes at import "
            f"(at most {MAX_RANK} dims and {MAX_FOLD} elements)"
        )
    return shape


def _arity(x: Values, lo: int, hi: int, where: str) -> None:
    if not lo <= len(x) <= hi or any(v is None for v in x[:lo]):
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise OnnxImportError(f"{where}: takes {want} inputs, got {len(x)}")


def _flag(a: Mapping[str, Any], key: str, where: str) -> bool:
    """The 0-or-1 attribute ``key`` (transA, count_include_pad ...), default 0."""
    v = a.get(key, 0)
    if v not in (0, 1) or isinstance(v, (str, float)):
        raise OnnxImportError(f"{where}: attribute {key} must be 0 or 1, got {v!r}")
    return bool(v)


def _int_attr(a: Mapping[str, Any], key: str, default: int, where: str) -> int:
    v = a.get(key, default)
    if not isinstance(v, int):
        raise OnnxImportError(f"{where}: attribute {key} must be an int, got {v!r}")
    return v


def _axis_in(axis: int, rank: int, where: str, what: str = "axis") -> int:
    """``axis`` of a tensor of ``rank`` dims, made non-negative."""
    if not -rank <= axis < rank:
        raise OnnxImportError(f"{where}: {what} {axis} is out of range for {rank} dims")
    return axis % rank


def _axes_in(axes: Sequence[int], rank: int, where: str) -> list[int]:
    out = [_axis_in(x, rank, where, "axes entry") for x in axes]
    if len(set(out)) != len(out):
        raise OnnxImportError(f"{where}: axes {list(axes)} name an axis twice")
    return out


def _axes_arg(x: Values, a: Mapping[str, Any], where: str) -> list[int] | None:
    """The axes of Squeeze / Unsqueeze: the second input (opset 13) or the attribute."""
    if len(x) > 1 and x[1] is not None:
        v = np.asarray(x[1])
        if v.dtype.kind not in "iu" or v.ndim > 1:
            raise OnnxImportError(f"{where}: axes must be a 1-d integer tensor")
        return [int(i) for i in v.reshape(-1)]
    axes = a.get("axes")
    if axes is not None and not isinstance(axes, list):
        raise OnnxImportError(f"{where}: attribute axes must be ints")
    return axes


def _int_list(v: Any, where: str, what: str) -> list[int] | None:
    """An ints attribute (or ``None``), checked."""
    if v is not None and (not isinstance(v, list) or not all(isinstance(x, int) for x in v)):
        raise OnnxImportError(f"{where}: {what} must be a list of ints, got {v!r}")
    return v


def _squeezed(shape: Sequence[int], axes: list[int] | None, where: str) -> tuple[int, ...]:
    """Squeeze's output shape: ``axes`` (default: every size-1 dim) dropped."""
    axes = _int_list(axes, where, "axes")
    rank = len(shape)
    drop = (
        [i for i, d in enumerate(shape) if d == 1] if axes is None else _axes_in(axes, rank, where)
    )
    if any(shape[i] != 1 for i in drop):
        raise OnnxImportError(f"{where}: axes {axes} of shape {tuple(shape)} are not all size 1")
    return tuple(d for i, d in enumerate(shape) if i not in drop)


def _unsqueezed(shape: Sequence[int], axes: list[int] | None, where: str) -> tuple[int, ...]:
    """Unsqueeze's output shape: a size-1 dim at each of ``axes`` (of the output)."""
    axes = _int_list(axes, where, "axes")
    if not axes:
        raise OnnxImportError(f"{where}: Unsqueeze needs axes")
    rank = len(shape) + len(axes)
    if rank > MAX_RANK:
        raise OnnxImportError(f"{where}: {rank} dims, more than {MAX_RANK}")
    new = set(_axes_in(axes, rank, where))
    it = iter(shape)
    return tuple(1 if i in new else next(it) for i in range(rank))


def _slice_args(x: Values, rank: int, where: str) -> tuple[list[int], ...]:
    """Slice's constant ``starts, ends, axes, steps`` (axes non-negative), checked."""
    _arity(x, 3, 5, where)
    lists: list[list[int] | None] = []
    for v, what in zip(x[1:], ("starts", "ends", "axes", "steps")):
        if v is None:
            lists.append(None)
            continue
        arr = np.asarray(v)
        if arr.dtype.kind not in "iu" or arr.ndim != 1:
            raise OnnxImportError(f"{where}: {what} must be a 1-d integer tensor")
        lists.append([int(i) for i in arr])
    starts, ends = lists[0] or [], lists[1] or []
    axes = lists[2] if len(lists) > 2 and lists[2] is not None else list(range(len(starts)))
    steps = lists[3] if len(lists) > 3 and lists[3] is not None else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise OnnxImportError(
            f"{where}: starts {starts}, ends {ends}, axes {axes} and steps {steps} must have "
            "the same length"
        )
    if 0 in steps:
        raise OnnxImportError(f"{where}: steps {steps} must be non-zero")
    return starts, ends, _axes_in(axes, rank, where), steps


def _f_slice(where: str, a: dict, x: Values) -> np.ndarray:
    data = np.asarray(x[0])
    if data.ndim == 0:
        raise OnnxImportError(f"{where}: cannot slice a scalar")
    plan = slice_plan(data.shape, *_slice_args(x, data.ndim, where))
    index = tuple(slice(b, b + s * n if b + s * n >= 0 else None, s) for b, s, n in plan)
    return data[index]


def _f_gather(where: str, a: dict, x: Values) -> np.ndarray:
    _arity(x, 2, 2, where)
    data, idx = np.asarray(x[0]), np.asarray(x[1])
    if idx.dtype.kind not in "iu":
        raise OnnxImportError(f"{where}: the indices must be integers")
    if data.ndim == 0:
        raise OnnxImportError(f"{where}: cannot gather from a scalar")
    axis = _axis_in(_int_attr(a, "axis", 0, where), data.ndim, where)
    dim = data.shape[axis]
    if idx.size and (idx.min() < -dim or idx.max() >= dim):
        raise OnnxImportError(f"{where}: indices out of range for an axis of {dim}")
    _fold_size(data.shape[:axis] + idx.shape + data.shape[axis + 1 :], where)
    return np.take(data, np.where(idx < 0, idx + dim, idx), axis=axis)


def _f_concat(where: str, a: dict, x: Values) -> np.ndarray:
    arrs = [np.asarray(v) for v in x if v is not None]
    if not arrs or any(v.ndim == 0 or v.ndim != arrs[0].ndim for v in arrs):
        raise OnnxImportError(f"{where}: the inputs must have the same number of dims (>= 1)")
    if len({v.dtype.kind == "f" for v in arrs}) > 1:
        raise OnnxImportError(f"{where}: mixes integer and float inputs")
    axis = _axis_in(_int_attr(a, "axis", 0, where), arrs[0].ndim, where)
    return np.concatenate(arrs, axis=axis)


CAST_TO = {1: np.float32, 10: np.float32, 11: np.float32, 6: np.int64, 7: np.int64, 9: np.bool_}


def _f_cast(where: str, a: dict, x: Values) -> np.ndarray:
    _arity(x, 1, 1, where)
    to = a.get("to")
    if not isinstance(to, int) or to not in CAST_TO:
        raise UnsupportedOperatorError(
            f"{where}: cast to element type {_type_name(to)}; tensorsched reads float, int32, "
            "int64 and bool constants"
        )
    v = np.asarray(x[0])
    if CAST_TO[to] is np.bool_:
        return v != 0
    if CAST_TO[to] is np.int64 and v.dtype.kind == "f":
        if not np.all(np.abs(v) < 2.0**63):
            raise OnnxImportError(f"{where}: a float too large for int64")
        return np.trunc(v).astype(np.int64)
    return v.astype(CAST_TO[to])


def _f_reshape(where: str, a: dict, x: Values) -> np.ndarray:
    _arity(x, 2, 2, where)
    data, shape = np.asarray(x[0]), np.asarray(x[1])
    if shape.dtype.kind not in "iu" or shape.ndim != 1 or shape.size > MAX_RANK:
        raise OnnxImportError(f"{where}: the shape must be a 1-d integer tensor")
    want = [int(d) for d in shape]
    _no_zero_with_allowzero(a, want, where)
    want = [data.shape[i] if d == 0 and i < data.ndim else d for i, d in enumerate(want)]
    if want.count(-1) > 1 or any(d < -1 for d in want):
        raise OnnxImportError(f"{where}: bad shape {want}")
    return data.reshape(want)


def _f_transpose(where: str, a: dict, x: Values) -> np.ndarray:
    _arity(x, 1, 1, where)
    data = np.asarray(x[0])
    perm = a.get("perm", list(range(data.ndim - 1, -1, -1)))
    if not isinstance(perm, list) or sorted(perm) != list(range(data.ndim)):
        raise OnnxImportError(f"{where}: perm {perm} is not a permutation of {data.ndim} axes")
    return np.transpose(data, perm)


def _f_flatten(where: str, a: dict, x: Values) -> np.ndarray:
    _arity(x, 1, 1, where)
    data = np.asarray(x[0])
    axis = _int_attr(a, "axis", 1, where)
    if not -data.ndim <= axis <= data.ndim:
        raise OnnxImportError(f"{where}: axis {axis} out of range for {data.ndim} dims")
    axis %= data.ndim + 1
    return data.reshape(math.prod(data.shape[:axis]), math.prod(data.shape[axis:]))


def _f_split(where: str, a: dict, x: Values, parts: int) -> list[np.ndarray]:
    data = np.asarray(x[0])
    if data.ndim == 0:
        raise OnnxImportError(f"{where}: cannot split a scalar")
    axis = _axis_in(_int_attr(a, "axis", 0, where), data.ndim, where)
    sizes = _split_sizes(where, a, x[1] if len(x) > 1 else None, data.shape[axis], parts)
    ends = np.cumsum(sizes).tolist()
    return np.split(data, ends[:-1], axis=axis)


def _split_sizes(where: str, a: dict, given: Any, dim: int, parts: int) -> list[int]:
    """Split's sizes: the ``split`` input (opset 13) or attribute, else ``num_outputs``
    (opset 18: equal parts, the last one smaller) or as many equal parts as outputs."""
    if given is not None:
        arr = np.asarray(given)
        if arr.dtype.kind not in "iu" or arr.ndim != 1:
            raise OnnxImportError(f"{where}: split must be a 1-d integer tensor")
        sizes = [int(v) for v in arr]
    elif "split" in a:
        sizes = _int_list(a["split"], where, "split") or []
    else:
        n = _int_attr(a, "num_outputs", parts, where)
        if n != parts or n < 1:
            raise OnnxImportError(f"{where}: num_outputs {n} but {parts} outputs")
        if "num_outputs" not in a and dim % n:
            raise OnnxImportError(f"{where}: an axis of {dim} does not split in {n} equal parts")
        chunk = -(-dim // n)
        sizes = [min(chunk, dim - k * chunk) for k in range(n)]
    if len(sizes) != parts or any(v < 0 for v in sizes) or sum(sizes) != dim:
        raise OnnxImportError(
            f"{where}: split sizes {sizes} must be {parts} non-negative ints adding up to {dim}"
        )
    return sizes


def _broadcast(where: str, *arrs: np.ndarray) -> tuple[int, ...]:
    try:
        shape = np.broadcast_shapes(*(np.shape(v) for v in arrs))
    except ValueError:
        raise OnnxImportError(
            f"{where}: shapes {[np.shape(v) for v in arrs]} do not broadcast"
        ) from None
    return _fold_size(shape, where)


def _numeric(where: str, x: Values, n: int) -> list[np.ndarray]:
    _arity(x, n, n, where)
    arrs = [np.asarray(v) for v in x]
    _broadcast(where, *arrs)
    return arrs


def _same_kind(where: str, arrs: Sequence[np.ndarray]) -> bool:
    """True where the operands are floats, False where integers; a mix is refused."""
    kinds = {v.dtype.kind == "f" for v in arrs}
    if len(kinds) > 1:
        raise OnnxImportError(f"{where}: mixes integer and float operands")
    return kinds.pop()


def _arith(fn: Any, ints: Any = None) -> Any:
    """A binary arithmetic operator of numpy ``fn`` (``ints``: its integer form, which
    raises ``ArithmeticError`` for a division by zero)."""

    def fold(where: str, a: dict, x: Values) -> np.ndarray:
        p, q = _numeric(where, x, 2)
        if _same_kind(where, (p, q)):
            return fn(p.astype(np.float64), q.astype(np.float64)).astype(np.float32)
        if p.dtype == np.bool_ or q.dtype == np.bool_:
            raise OnnxImportError(f"{where}: arithmetic on booleans")
        return (ints or fn)(p.astype(np.int64), q.astype(np.int64))

    return fold


def _int_div(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Integer division rounded toward zero (C's, onnxruntime's)."""
    if np.any(q == 0):
        raise ZeroDivisionError("integer division by zero")
    quot = np.abs(p) // np.abs(q)
    return np.where((p < 0) != (q < 0), -quot, quot)


def _f_mod(where: str, a: dict, x: Values) -> np.ndarray:
    p, q = _numeric(where, x, 2)
    if _same_kind(where, (p, q)):
        _float_mod_ok(where, a)
        return (np.fmod if a.get("fmod", 0) else np.mod)(p, q).astype(np.float32)
    if np.any(q == 0):
        raise OnnxImportError(f"{where}: integer modulo by zero")
    return np.fmod(p, q) if a.get("fmod", 0) else np.mod(p, q)


def _float_mod_ok(where: str, a: Mapping[str, Any]) -> None:
    """ONNX's Mod of floats takes ``fmod=1`` (C's ``fmod``) before opset 28; from opset 28
    ``fmod=0`` too (the sign of the divisor, numpy's ``mod``)."""
    if not a.get("fmod", 0) and a.get("_opset", MIN_OPSET) < 28:
        raise OnnxImportError(
            f"{where}: Mod of floats needs fmod=1 before opset 28 (the model's is "
            f"{a.get('_opset', MIN_OPSET)})"
        )


def _f_pow(where: str, a: dict, x: Values) -> np.ndarray:
    p, q = _numeric(where, x, 2)
    if p.dtype.kind == "f":
        return np.power(p.astype(np.float64), q.astype(np.float64)).astype(np.float32)
    if q.dtype.kind == "f" or np.any(q < 0):
        raise OnnxImportError(f"{where}: an integer base needs a non-negative integer exponent")
    return np.power(p.astype(np.int64), q.astype(np.int64))


def _compare(fn: Any) -> Any:
    def fold(where: str, a: dict, x: Values) -> np.ndarray:
        p, q = _numeric(where, x, 2)
        _same_kind(where, (p, q))
        return fn(p, q)

    return fold


def _logic(fn: Any) -> Any:
    def fold(where: str, a: dict, x: Values) -> np.ndarray:
        p, q = _numeric(where, x, 2)
        if p.dtype != np.bool_ or q.dtype != np.bool_:
            raise OnnxImportError(f"{where}: takes boolean tensors")
        return fn(p, q)

    return fold


def _f_not(where: str, a: dict, x: Values) -> np.ndarray:
    _arity(x, 1, 1, where)
    if np.asarray(x[0]).dtype != np.bool_:
        raise OnnxImportError(f"{where}: takes a boolean tensor")
    return ~np.asarray(x[0])


def _f_where(where: str, a: dict, x: Values) -> np.ndarray:
    c, p, q = _numeric(where, x, 3)
    if c.dtype != np.bool_:
        raise OnnxImportError(f"{where}: the condition must be a boolean tensor")
    _same_kind(where, (p, q))
    return np.where(c, p, q)


def _variadic(fn: Any) -> Any:
    """Min / Max of any number of inputs."""

    def fold(where: str, a: dict, x: Values) -> np.ndarray:
        arrs = [np.asarray(v) for v in x if v is not None]
        if not arrs:
            raise OnnxImportError(f"{where}: takes at least one input")
        _broadcast(where, *arrs)
        _same_kind(where, arrs)
        return fn.reduce(np.broadcast_arrays(*arrs))

    return fold


def _float_fn(fn: Any, ints_too: bool = False) -> Any:
    """A function of one float tensor (``ints_too``: of an integer one too: Neg, Abs)."""

    def fold(where: str, a: dict, x: Values) -> np.ndarray:
        _arity(x, 1, 1, where)
        v = np.asarray(x[0])
        if v.dtype.kind != "f":
            if not ints_too or v.dtype == np.bool_:
                raise OnnxImportError(f"{where}: takes a float tensor")
            return fn(v)
        return np.asarray(fn(v.astype(np.float64))).astype(np.float32)

    return fold


def _f_constant_of_shape(where: str, a: dict, x: Values) -> np.ndarray:
    _arity(x, 1, 1, where)
    shape = np.asarray(x[0])
    if shape.dtype.kind not in "iu" or shape.ndim != 1:
        raise OnnxImportError(f"{where}: the shape must be a 1-d integer tensor")
    dims = _fold_size(shape.tolist(), where)
    value = a.get("value", np.zeros(1, np.float32))
    if not isinstance(value, np.ndarray) or value.size != 1:
        raise OnnxImportError(f"{where}: value must be a tensor of one element")
    return np.full(dims, value.reshape(-1)[0], value.dtype)


def _f_range(where: str, a: dict, x: Values) -> np.ndarray:
    start, limit, delta = _numeric(where, x, 3)
    if start.size != 1 or limit.size != 1 or delta.size != 1:
        raise OnnxImportError(f"{where}: start, limit and delta must be scalars")
    float_ = _same_kind(where, (start, limit, delta))
    s, lim, d = (float(v.reshape(-1)[0]) for v in (start, limit, delta))
    if d == 0 or not all(math.isfinite(v) for v in (s, lim, d)):
        raise OnnxImportError(f"{where}: delta must be non-zero and the values finite")
    n = _fold_size((max(math.ceil((lim - s) / d), 0),), where)[0]
    if float_:
        return (s + d * np.arange(n)).astype(np.float32)
    return int(s) + int(d) * np.arange(n, dtype=np.int64)


def _f_expand(where: str, a: dict, x: Values) -> np.ndarray:
    _arity(x, 2, 2, where)
    data, shape = np.asarray(x[0]), np.asarray(x[1])
    if shape.dtype.kind not in "iu" or shape.ndim != 1 or shape.size > MAX_RANK:
        raise OnnxImportError(f"{where}: the shape must be a 1-d integer tensor")
    if np.any(shape < 1):
        raise OnnxImportError(f"{where}: shape {shape.tolist()} must be positive")
    out = _broadcast(where, np.broadcast_to(0, data.shape), np.broadcast_to(0, tuple(shape)))
    return np.broadcast_to(data, out).copy()


def _f_unsqueeze(where: str, a: dict, x: Values) -> np.ndarray:
    data = np.asarray(x[0])
    return data.reshape(_unsqueezed(data.shape, _axes_arg(x, a, where), where))


def _f_squeeze(where: str, a: dict, x: Values) -> np.ndarray:
    data = np.asarray(x[0])
    return data.reshape(_squeezed(data.shape, _axes_arg(x, a, where), where))


def _pad_args(
    where: str, a: Mapping[str, Any], rank: int, x: Values
) -> tuple[list[int], str, float]:
    """Pad's ``pads`` (begins then ends of every axis), ``mode`` and constant ``value``: from
    the inputs (opset 11: ``pads``, ``constant_value``, opset 18's ``axes``) or from the
    attributes (opset 2's ``pads`` and ``value``)."""
    mode = a.get("mode", "constant")
    if mode not in PAD_MODES:
        raise UnsupportedOperatorError(
            f"{where}: mode {mode!r} is not supported; tensorsched pads with {PAD_MODES}"
        )
    if len(x) > 4:
        raise OnnxImportError(f"{where}: takes 1 to 4 inputs (data, pads, constant_value, axes)")
    given: list[Any] = [*x[1:], None, None, None][:3]
    if given[0] is None:
        if "pads" not in a:
            raise OnnxImportError(f"{where}: no pads (the second input)")
        raw = np.asarray(_int_list(a["pads"], where, "pads") or [], np.int64)
        given[1] = np.float32(_float_attr(a, "value", 0.0, where))
    else:
        raw = np.asarray(given[0])
    if raw.dtype.kind not in "iu" or raw.ndim != 1:
        raise OnnxImportError(f"{where}: pads must be a 1-d integer tensor")
    if given[2] is None:
        axes = list(range(rank))
    else:
        arr = np.asarray(given[2])
        if arr.dtype.kind not in "iu" or arr.ndim != 1:
            raise OnnxImportError(f"{where}: axes must be a 1-d integer tensor")
        axes = _axes_in([int(v) for v in arr], rank, where)
    if raw.size != 2 * len(axes):
        raise OnnxImportError(
            f"{where}: pads has {raw.size} values; give {2 * len(axes)} (the begins, then the "
            f"ends, of axes {axes})"
        )
    if np.any(np.abs(raw) > MAX_ELEMENTS):
        raise OnnxImportError(f"{where}: pads {raw.tolist()} are too large")
    pads = [0] * (2 * rank)
    for k, axis in enumerate(axes):
        pads[axis], pads[rank + axis] = int(raw[k]), int(raw[len(axes) + k])
    value = 0.0
    if given[1] is not None:
        v = np.asarray(given[1])
        if v.size != 1 or v.dtype == np.bool_:
            raise OnnxImportError(f"{where}: constant_value must be one number, got {v.shape}")
        value = float(v.reshape(-1)[0])
        if not math.isfinite(value):
            raise OnnxImportError(f"{where}: constant_value {value} is not finite")
    return pads, mode, value


def _float_attr(a: Mapping[str, Any], key: str, default: float, where: str) -> float:
    v = a.get(key, default)
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        raise OnnxImportError(f"{where}: attribute {key} must be a finite float, got {v!r}")
    return float(v)


def _pad_shape(where: str, shape: Sequence[int], pads: list[int], mode: str) -> tuple[int, ...]:
    plan = pad_plan(shape, pads)
    for d, (_, count, before, after) in enumerate(plan):
        if count < 1:
            raise OnnxImportError(
                f"{where}: pads {pads} crop all of axis {d} of shape {tuple(shape)}"
            )
        if mode == "reflect" and max(before, after) >= count:
            raise OnnxImportError(
                f"{where}: reflect pads of axis {d} ({before}, {after}) must be smaller than "
                f"the axis ({count}); use mode edge or constant"
            )
    return tuple(c + b + e for _, c, b, e in plan)


def _f_pad(where: str, a: dict, x: Values) -> np.ndarray:
    if not x or x[0] is None:
        raise OnnxImportError(f"{where}: no data input")
    data = np.asarray(x[0])
    if data.ndim == 0:
        raise OnnxImportError(f"{where}: cannot pad a scalar")
    pads, mode, value = _pad_args(where, a, data.ndim, x)
    _fold_size(_pad_shape(where, data.shape, pads, mode), where)
    plan = pad_plan(data.shape, pads)
    kept = data[tuple(slice(f, f + c) for f, c, _, _ in plan)]
    widths = [(b, e) for _, _, b, e in plan]
    if mode == "constant":
        return np.pad(kept, widths, constant_values=np.asarray(value).astype(data.dtype))
    return np.pad(kept, widths, mode="reflect" if mode == "reflect" else "edge")


def _f_scatter_nd(where: str, a: dict, x: Values) -> np.ndarray:
    """ScatterND: ``data`` with the slices at ``indices`` (its last axis indexes the leading
    axes of ``data``) replaced by (or, with ``reduction``, combined with) ``updates``."""
    _arity(x, 3, 3, where)
    data, idx, upd = (np.asarray(v) for v in x)
    how = a.get("reduction", "none")
    combine = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
    if how != "none" and how not in combine:
        raise OnnxImportError(f"{where}: reduction {how!r} must be none, add, mul, max or min")
    if idx.dtype.kind not in "iu" or idx.ndim < 1:
        raise OnnxImportError(f"{where}: indices must be an integer tensor of 1 or more dims")
    k = idx.shape[-1]
    if data.ndim == 0 or not 1 <= k <= data.ndim:
        raise OnnxImportError(
            f"{where}: indices' last dim {k} must be 1 to the data's rank {data.ndim}"
        )
    want = idx.shape[:-1] + data.shape[k:]
    if upd.shape != want:
        raise OnnxImportError(f"{where}: updates of shape {upd.shape}; expected {want}")
    if (data.dtype.kind == "f") != (upd.dtype.kind == "f") or (
        (data.dtype == np.bool_) != (upd.dtype == np.bool_)
    ):
        raise OnnxImportError(f"{where}: data and updates differ in element type")
    dims = np.asarray(data.shape[:k], np.int64)
    flat = idx.reshape(-1, k).astype(np.int64)
    if flat.size and (np.any(flat < -dims) or np.any(flat >= dims)):
        raise OnnxImportError(f"{where}: indices out of range for the data's shape {data.shape}")
    flat = np.where(flat < 0, flat + dims, flat)
    out = data.copy()
    rows = upd.reshape((-1, *data.shape[k:])).astype(data.dtype)
    at = tuple(flat.T)
    if how == "none":
        out[at] = rows
    else:
        combine[how].at(out, at, rows)
    return out


def _f_einsum(where: str, a: dict, x: Values) -> np.ndarray:
    if not x or any(v is None for v in x):
        raise OnnxImportError(f"{where}: an input is left out")
    arrs = [np.asarray(v) for v in x]
    eq = _einsum_parse(where, a, [v.shape for v in arrs])
    _fold_size(eq.out_shape, where)
    if math.prod(eq.sizes.values()) > MAX_EINSUM_WORK:
        raise OnnxImportError(
            f"{where}: Einsum '{eq.text}' on constants takes more than {MAX_EINSUM_WORK} "
            "multiply-adds; tensorsched folds smaller ones only"
        )
    floats = _same_kind(where, arrs)
    if any(v.dtype == np.bool_ for v in arrs):
        raise OnnxImportError(f"{where}: Einsum of booleans")
    subs = ",".join(eq.terms) + "->" + eq.out
    if floats:
        return np.einsum(subs, *(v.astype(np.float64) for v in arrs)).astype(np.float32)
    return np.asarray(np.einsum(subs, *(v.astype(np.int64) for v in arrs)), np.int64)


MAX_EINSUM_WORK = 1 << 28  # the product of an Einsum's index sizes, folded at import


class _Einsum:
    """An Einsum equation, checked against its operands' shapes: each term's letters (an
    ellipsis spelled out as letters the equation does not use), the output's (implicit:
    the letters used once, in alphabetical order, after the ellipsis) and each letter's size."""

    def __init__(self, text: str, terms: list[str], out: str, sizes: dict[str, int]):
        self.text, self.terms, self.out, self.sizes = text, terms, out, sizes
        self.out_shape = tuple(sizes[c] for c in out)


def _einsum_parse(where: str, a: Mapping[str, Any], shapes: list[tuple[int, ...]]) -> _Einsum:
    text = a.get("equation")
    if not isinstance(text, str) or len(text) > 256:
        raise OnnxImportError(f"{where}: Einsum needs an equation attribute (text)")

    def bad(why: str) -> OnnxImportError:
        return OnnxImportError(f"{where}: Einsum equation '{text}': {why}")

    eq = text.replace(" ", "")
    if eq.count("->") > 1:
        raise bad("more than one '->'")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise bad(f"{len(terms)} terms for {len(shapes)} inputs")
    letters = {c for c in eq if c.isalpha()}
    if any(not (c.isascii() and (c.isalpha() or c in ",.->")) for c in eq):
        raise bad("only letters, ',', '...' and '->' may appear")
    spare = iter(sorted(set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") - letters))
    ell_rank = 0
    for t, shape in zip(terms, shapes):
        if "." in t:
            if t.count("...") != 1 or t.count(".") != 3:
                raise bad(f"term '{t}': '.' only as one '...'")
            ell_rank = max(ell_rank, len(shape) - len(t) + 3)
    ell = "".join(next(spare) for _ in range(max(ell_rank, 0)))
    spelled: list[str] = []
    sizes: dict[str, int] = {}
    for t, shape in zip(terms, shapes):
        if "..." in t:
            n = len(shape) - len(t) + 3
            if n < 0:
                raise bad(f"term '{t}' has more letters than its input's {len(shape)} dims")
            t = t.replace("...", ell[len(ell) - n :])
        if len(t) != len(shape):
            raise bad(f"term '{t}' has {len(t)} letters for an input of shape {shape}")
        for c, d in zip(t, shape):
            if sizes.get(c, 1) != 1 and d not in (1, sizes[c]):
                raise bad(f"'{c}' is {sizes[c]} in one input and {d} in another")
            sizes[c] = max(sizes.get(c, 1), d)
        spelled.append(t)
    if arrow:
        if "." in rhs and ("..." not in rhs or rhs.count(".") != 3):
            raise bad("'.' only as one '...'")
        if "..." in rhs:
            rhs = rhs.replace("...", ell)
        elif ell:
            raise bad("the inputs have '...' but the output has none")
        out = rhs
    else:
        once = "".join(c for t in spelled for c in t)
        out = ell + "".join(sorted(c for c in letters if once.count(c) == 1))
    if len(set(out)) != len(out) or any(c not in sizes for c in out):
        raise bad(f"output '{out}' repeats a letter or names one no input has")
    return _Einsum(text, spelled, out, sizes)


_erf = np.frompyfunc(math.erf, 1, 1)

# ONNX operator -> its evaluation on constant inputs (numpy arrays, None for an input left
# out): a float result is float32, an integer one int64, a comparison's bool
FOLD: dict[str, Any] = {
    "Gather": _f_gather,
    "Unsqueeze": _f_unsqueeze,
    "Squeeze": _f_squeeze,
    "Concat": _f_concat,
    "Cast": _f_cast,
    "Slice": _f_slice,
    "Reshape": _f_reshape,
    "Transpose": _f_transpose,
    "Flatten": _f_flatten,
    "Split": lambda where, a, x: _f_split(where, a, x, a["_outputs"]),
    "Add": _arith(np.add),
    "Sub": _arith(np.subtract),
    "Mul": _arith(np.multiply),
    "Div": _arith(np.divide, _int_div),
    "Mod": _f_mod,
    "Pow": _f_pow,
    "Equal": _compare(np.equal),
    "Less": _compare(np.less),
    "Greater": _compare(np.greater),
    "LessOrEqual": _compare(np.less_equal),
    "GreaterOrEqual": _compare(np.greater_equal),
    "And": _logic(np.logical_and),
    "Or": _logic(np.logical_or),
    "Xor": _logic(np.logical_xor),
    "Not": _f_not,
    "Where": _f_where,
    "Min": _variadic(np.minimum),
    "Max": _variadic(np.maximum),
    "Neg": _float_fn(np.negative, ints_too=True),
    "Sign": _float_fn(np.sign, ints_too=True),
    "IsNaN": lambda where, a, x: np.isnan(_float_fn(lambda v: v)(where, a, x)),
    "IsInf": lambda where, a, x: np.isinf(_float_fn(lambda v: v)(where, a, x)),
    "Abs": _float_fn(np.abs, ints_too=True),
    "Sqrt": _float_fn(np.sqrt),
    "Exp": _float_fn(np.exp),
    "Log": _float_fn(np.log),
    "Reciprocal": _float_fn(lambda v: 1.0 / v),
    "Floor": _float_fn(np.floor),
    "Ceil": _float_fn(np.ceil),
    "Erf": _float_fn(lambda v: np.asarray(_erf(v), np.float64)),
    "ConstantOfShape": _f_constant_of_shape,
    "Range": _f_range,
    "Expand": _f_expand,
    "Pad": _f_pad,
    "ScatterND": _f_scatter_nd,
    "Einsum": _f_einsum,
}


# ---- shape operators on computed tensors


def _shape(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """The input's shape (known at import) as an int64 constant; opset 15's ``start`` and
    ``end`` slice it (negative from the end, clamped)."""
    if len(ins) != 1 or not ins[0]:
        raise OnnxImportError(f"{where}: takes 1 input")
    shape = r.shape_of(ins[0])
    rank = len(shape)
    lo, hi = _int_attr(a, "start", 0, where), _int_attr(a, "end", rank, where)
    lo, hi = (min(max(v + rank if v < 0 else v, 0), rank) for v in (lo, hi))
    r.define(out, np.array(shape[lo:hi], np.int64), where)


def _size(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    if len(ins) != 1 or not ins[0]:
        raise OnnxImportError(f"{where}: takes 1 input")
    r.define(out, np.array(math.prod(r.shape_of(ins[0])), np.int64), where)


def _cast(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """A computed tensor is float32 (a boolean one a mask, an integer one integer values):
    a cast to float is the identity; to bool a ``to_bool`` node (``x != 0``) unless it is
    boolean already; to int32 or int64 a ``trunc`` node (toward zero) unless it is boolean
    or integer already. A boolean or integer result is read on only by ``KIND_READERS``."""
    _float_input(r, ins, where)
    to = a.get("to")
    if not isinstance(to, int) or to not in CAST_TO:
        raise UnsupportedOperatorError(
            f"{where}: a cast of the computed tensor '{ins[0]}' to element type "
            f"{_type_name(to)}; tensorsched computes float32, and bool, int32 and int64 as "
            "float32"
        )
    kind = r.kind.get(a["_input"], ("float", ""))[0]
    want = {np.float32: "float", np.bool_: "bool", np.int64: "int"}[CAST_TO[to]]
    if want == "float" or want == kind or (want == "int" and kind == "bool"):
        _identity(r, name, where, a, ins[:1], out)
    else:
        r.g.add_node("to_bool" if want == "bool" else "trunc", ins[:1], {}, name)
        _rename_output(r, name, out)
    if want != "float":
        r.kind[out] = (want, where)


def _transpose(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    _float_input(r, ins, where)
    r.g.transpose(ins[0], a.get("perm"), name=name)
    _rename_output(r, name, out)


def _slice(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Starts, ends, axes and steps must be constants (folded shape arithmetic counts)."""
    _float_input(r, ins, where)
    what = ("starts", "ends", "axes", "steps")
    values = [None if not t else np.asarray(r.ints_of(t, where, w)) for t, w in zip(ins[1:], what)]
    rank = len(r.g.tensors[ins[0]].shape)
    starts, ends, axes, steps = _slice_args([ins[0], *values], rank, where)
    r.g.slice(ins[0], starts, ends, axes, steps, name=name)
    _rename_output(r, name, out)


def _split(r: _Reader, name: str, where: str, a: dict, ins: list[str], outs: list[str]) -> None:
    """One slice node per output."""
    _float_input(r, ins, where)
    if len(outs) > 1024:
        raise OnnxImportError(f"{where}: {len(outs)} outputs")
    shape = r.g.tensors[ins[0]].shape
    axis = _axis_in(_int_attr(a, "axis", 0, where), len(shape), where)
    given = np.asarray(r.ints_of(ins[1], where, "split")) if len(ins) > 1 and ins[1] else None
    sizes = _split_sizes(where, a, given, shape[axis], len(outs))
    begin = 0
    for k, (size, out) in enumerate(zip(sizes, outs)):
        if out:
            part = name if k == 0 else r.g.fresh_name(f"{name}_{k}")
            r.g.slice(ins[0], [begin], [begin + size], [axis], name=part)
            _rename_output(r, part, out)
        begin += size


def _reshape_to(r: _Reader, name: str, x: str, shape: Sequence[int], out: str) -> None:
    r.g.reshape(x, shape, name=name)
    _rename_output(r, name, out)


def _squeeze(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    _float_input(r, ins, where)
    axes = r.ints_of(ins[1], where, "axes") if len(ins) > 1 and ins[1] else a.get("axes")
    shape = _squeezed(r.g.tensors[ins[0]].shape, axes, where)
    if not shape:
        raise UnsupportedOperatorError(f"{where}: squeezing to a scalar (the graph holds none)")
    _reshape_to(r, name, ins[0], shape, out)


def _unsqueeze(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    _float_input(r, ins, where)
    axes = r.ints_of(ins[1], where, "axes") if len(ins) > 1 and ins[1] else a.get("axes")
    _reshape_to(r, name, ins[0], _unsqueezed(r.g.tensors[ins[0]].shape, axes, where), out)


def _gather(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """A computed tensor read at constant indices along one axis: a scalar index is a slice
    with the axis dropped; a list of them, slices joined by a concat; indices of 2 or more
    dims, that concat reshaped to put their dims in place of the axis. Computed indices
    (token ids) read a constant table: ``_gather_rows``."""
    if len(ins) != 2 or not ins[1]:
        raise OnnxImportError(f"{where}: takes 2 inputs")
    if ins[1] in r.g.tensors:
        _gather_rows(r, name, where, a, ins, out)
        return
    _float_input(r, ins, where)
    shape = r.g.tensors[ins[0]].shape
    axis = _axis_in(_int_attr(a, "axis", 0, where), len(shape), where)
    idx = r.const(ins[1], where)
    if idx.dtype.kind not in "iu" or idx.size > 64 or not idx.size:
        raise UnsupportedOperatorError(
            f"{where}: indices of shape {idx.shape}; at most 64 integers (a scalar or a tensor "
            "of any shape) are supported on a computed tensor"
        )
    dim = shape[axis]
    picks = [int(i) + dim if i < 0 else int(i) for i in idx.reshape(-1)]
    if any(not 0 <= i < dim for i in picks):
        raise OnnxImportError(f"{where}: indices {idx.tolist()} out of range for {dim}")
    final = shape[:axis] + idx.shape + shape[axis + 1 :]
    if not final:
        raise UnsupportedOperatorError(f"{where}: gathering a scalar (the graph holds none)")
    direct = idx.ndim == 1  # the slices (joined) are the output as they are
    single = direct and len(picks) == 1
    parts = [
        r.g.slice(ins[0], [i], [i + 1], [axis], name=name if single else f"{name}_pick{k}")
        for k, i in enumerate(picks)
    ]
    joined = parts[0]
    if len(parts) > 1:
        joined = r.g.concat(parts, axis, name=name if direct else f"{name}_picks")
    if not direct:
        r.g.reshape(joined, final, name=name)
    _rename_output(r, name, out)


def _gather_rows(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Gather at computed integer indices (an embedding lookup of token ids): the graph's
    ``take``, each output one load of the data (a constant table or a computed tensor). An
    index out of range gives 0 where onnxruntime raises an error."""
    table, idx = ins[0], ins[1]
    if _operand_kind(r, a["_inputs"][1], idx) != "int":
        raise OnnxImportError(f"{where}: the indices '{idx}' are not integers")
    if r.is_const(table):
        E = r.const(table, where)
        if E.dtype.kind in "iu" and np.any(np.abs(E) > 2**24):
            raise UnsupportedOperatorError(
                f"{where}: the integer table '{table}' holds values that float32 does not hold "
                "exactly (beyond 2**24); tensorsched computes float32 only"
            )
        kind = "float" if E.dtype.kind == "f" else "bool" if E.dtype == np.bool_ else "int"
    else:
        kind = _operand_kind(r, a["_inputs"][0], table)
    data = r.operand(table, where)
    rank = len(r.g.tensors[data].shape)
    if rank == 0:
        raise OnnxImportError(f"{where}: the data '{table}' is a scalar")
    axis = _axis_in(_int_attr(a, "axis", 0, where), rank, where)
    r.g.take(data, idx, axis, name=name)
    _rename_output(r, name, out)
    if kind != "float":
        r.kind[out] = (kind, where)


def _pow(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """``x ** y``: a constant scalar ``y`` (float or integer) is the node's ``exponent``
    (products for small integers); any other ``y`` broadcasts."""
    _float_input(r, ins, where)
    if len(ins) != 2 or not ins[1]:
        raise OnnxImportError(f"{where}: takes 2 inputs")
    if r.is_const(ins[1]) and r.const(ins[1], where).size == 1:
        e = r.const(ins[1], where)
        if e.dtype == np.bool_:
            raise OnnxImportError(f"{where}: a boolean exponent")
        r.g.add_node("power", ins[:1], {"exponent": float(e.reshape(-1)[0])}, name)
    else:
        y = ins[1]
        if y in r.ints:  # an integer exponent tensor: as floats
            y = r.g.constant(r.g.fresh_name(f"{name}_exponent"), r.ints[y].astype(np.float32))
        r.g.add_node("pow", [ins[0], y], {}, name)
    _rename_output(r, name, out)


def _normalized(
    r: _Reader, x: str, axes: list[int], eps: float, fresh: Any, name: str | None = None,
    mean_out: str = "",
) -> tuple[str, str]:  # fmt: skip
    """``(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps)``, the means over ``axes``
    (LayerNormalization's and InstanceNormalization's nodes before their scale and bias), and
    the root's tensor; ``mean_out`` names the mean's tensor (LayerNormalization's ``Mean``)."""
    g = r.g
    node = fresh("mean")
    mean = g.reduce(x, "mean", axes, True, name=node)
    if mean_out:
        _rename_output(r, node, mean_out)
        mean = mean_out
    d = g.add_node("sub", [x, mean], {}, fresh("centre"))
    var = g.reduce(g.add_node("power", [d], {"exponent": 2.0}, fresh("square")), "mean", axes,
                   True, name=fresh("var"))  # fmt: skip
    eps_t = g.constant(fresh("epsilon"), np.array([eps], np.float32))
    std = g.add_node("sqrt", [g.add_node("add", [var, eps_t], {}, fresh("var_eps"))], {},
                     fresh("std"))  # fmt: skip
    return g.add_node("div", [d, std], {}, name or fresh("normed")), std


def _layer_norm(
    r: _Reader, name: str, where: str, a: dict, ins: list[str], outs: list[str]
) -> None:
    """Opset 17's LayerNormalization: ``d = x - mean(x)``, ``d / sqrt(mean(d * d) + epsilon) *
    scale + bias``, the means over the axes from ``axis`` to the last; the graph's
    ``layer_norm``, or where its optional outputs ``Mean`` (that mean) and ``InvStdDev`` (``1 /
    sqrt(mean(d * d) + epsilon)``, both keeping the reduced axes as size 1) are read, or the
    scale or bias broadcasts beyond those axes, graph nodes of each step."""
    _float_input(r, ins, where)
    if len(ins) not in (2, 3) or not ins[1]:
        raise OnnxImportError(f"{where}: takes 2 or 3 inputs (X, Scale, B)")
    if len(outs) > 3:
        raise OnnxImportError(f"{where}: has {len(outs)} outputs; ONNX gives it 3 at most")
    shape = r.g.tensors[ins[0]].shape
    axis = _axis_in(_int_attr(a, "axis", -1, where), len(shape), where)
    eps = a.get("epsilon", 1e-5)
    if not isinstance(eps, float) or not 0 <= eps < 1:
        raise OnnxImportError(f"{where}: epsilon {eps!r} must be a small non-negative float")
    for t in ins[1:]:
        if t and t not in r.g.tensors:
            raise OnnxImportError(f"{where}: '{t}' must be a float tensor")
    g, axes, fresh = r.g, list(range(axis, len(shape))), _fresh(r, name)
    mean_out, inv_out = [*outs[1:], "", ""][:2]
    bias = ins[2] if len(ins) > 2 and ins[2] else None
    inner = shape[axis:]
    affine = [ins[1], *([bias] if bias else [])]
    fits = all(broadcasts_to(g.tensors[t].shape, inner) for t in affine)
    if not mean_out and not inv_out and fits:  # the graph's layer_norm: three kernels
        g.layer_norm(ins[0], ins[1], bias, axis, eps, name=name)
        _rename_output(r, name, outs[0])
        return
    y, std = _normalized(r, ins[0], axes, eps, fresh, mean_out=mean_out)
    y = g.add_node("mul", [y, ins[1]], {}, name if bias is None else fresh("scaled"))
    if bias is not None:
        g.add_node("add", [y, bias], {}, name)
    _rename_output(r, name, outs[0])
    if inv_out:
        inv = fresh("inv_std_dev")
        g.add_node("reciprocal", [std], {}, inv)
        _rename_output(r, inv, inv_out)


def _fresh(r: _Reader, name: str) -> Any:
    """A namer of a converter's intermediate nodes, from the node's name."""
    return lambda what: r.g.fresh_name(f"{name}_{what}")


def _same_shape(r: _Reader, node: str, x: str, where: str, what: str) -> None:
    """``node`` (a broadcast of ``x`` with another operand) kept ``x``'s shape."""
    got, want = r.g.tensors[r.g.nodes[node].output].shape, r.g.tensors[x].shape
    if got != want:
        raise OnnxImportError(f"{where}: {what} of shape {got} does not broadcast to {want}")


def _negative_part(r: _Reader, x: str, fresh: Any) -> tuple[str, str]:
    """``(relu(x), x - relu(x))``: the positive part and, exactly, ``min(x, 0)``."""
    pos = r.g.add_node("relu", [x], {}, fresh("pos"))
    return pos, r.g.add_node("sub", [x, pos], {}, fresh("neg"))


def _prelu(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """PRelu: ``relu(x) + slope * (x - relu(x))``, the slope broadcast to ``x``."""
    _float_input(r, ins, where)
    if len(ins) != 2 or ins[1] not in r.g.tensors:
        raise OnnxImportError(f"{where}: takes 2 float inputs (X, slope)")
    fresh = _fresh(r, name)
    pos, neg = _negative_part(r, ins[0], fresh)
    scaled = r.g.add_node("mul", [neg, ins[1]], {}, fresh("scaled"))
    _same_shape(r, scaled, ins[0], where, "slope")
    r.g.add_node("add", [pos, scaled], {}, name)
    _rename_output(r, name, out)


def _elu_of(r: _Reader, x: str, alpha: float, fresh: Any, inner: float = 1.0,
            name: str | None = None) -> str:  # fmt: skip
    """``relu(x) + alpha * (exp(inner * min(x, 0)) - 1)``: Elu's, Selu's and Celu's."""
    g = r.g
    pos, neg = _negative_part(r, x, fresh)
    if inner != 1.0:
        k = g.constant(fresh("inner"), np.array([inner], np.float32))
        neg = g.add_node("mul", [neg, k], {}, fresh("neg_scaled"))
    one = g.constant(fresh("one"), np.array([1.0], np.float32))
    em1 = g.add_node("sub", [g.add_node("exp", [neg], {}, fresh("exp")), one], {}, fresh("em1"))
    al = g.constant(fresh("alpha"), np.array([alpha], np.float32))
    scaled = g.add_node("mul", [em1, al], {}, fresh("scaled"))
    return g.add_node("add", [pos, scaled], {}, name or fresh("elu"))


def _elu_like(kind: str) -> Any:
    """Elu (``alpha``), Selu (``alpha``, ``gamma``: Elu's times ``gamma``) and Celu
    (``alpha``: ``relu(x) + alpha * (exp(min(x, 0) / alpha) - 1)``)."""

    def convert(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
        _float_input(r, ins, where)
        fresh = _fresh(r, name)
        alpha = _float_attr(a, "alpha", 1.6732632423543772 if kind == "selu" else 1.0, where)
        if kind == "celu" and alpha == 0:
            raise OnnxImportError(f"{where}: alpha must not be 0")
        inner = 1.0 / alpha if kind == "celu" else 1.0
        if kind != "selu":
            _elu_of(r, ins[0], alpha, fresh, inner, name)
        else:
            gamma = _float_attr(a, "gamma", 1.0507009873554805, where)
            ga = r.g.constant(fresh("gamma"), np.array([gamma], np.float32))
            r.g.add_node("mul", [_elu_of(r, ins[0], alpha, fresh), ga], {}, name)
        _rename_output(r, name, out)

    return convert


def _softplus(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Softplus, without overflow: ``relu(x) + log(exp(-|x|) + 1)``."""
    _float_input(r, ins, where)
    _softplus_of(r, ins[0], _fresh(r, name), name)
    _rename_output(r, name, out)


def _softplus_of(r: _Reader, x: str, fresh: Any, name: str | None = None) -> str:
    g = r.g
    pos = g.add_node("relu", [x], {}, fresh("pos"))
    e = g.add_node("exp", [g.add_node("neg", [g.add_node("abs", [x], {}, fresh("abs"))], {},
                                      fresh("negabs"))], {}, fresh("exp"))  # fmt: skip
    one = g.constant(fresh("one"), np.array([1.0], np.float32))
    lg = g.add_node("log", [g.add_node("add", [e, one], {}, fresh("e1"))], {}, fresh("log"))
    return g.add_node("add", [pos, lg], {}, name or fresh("softplus"))


def _mish(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Mish: ``x * tanh(softplus(x))``."""
    _float_input(r, ins, where)
    fresh = _fresh(r, name)
    t = r.g.add_node("tanh", [_softplus_of(r, ins[0], fresh)], {}, fresh("tanh"))
    r.g.add_node("mul", [ins[0], t], {}, name)
    _rename_output(r, name, out)


def _gelu(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Gelu (opset 20): ``x / 2 * (1 + erf(x / sqrt(2)))``, or with ``approximate="tanh"``
    ``x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))``."""
    _float_input(r, ins, where)
    how = a.get("approximate", "none")
    if how not in ("none", "tanh"):
        raise OnnxImportError(f"{where}: approximate {how!r} must be 'none' or 'tanh'")
    g, fresh, x = r.g, _fresh(r, name), ins[0]

    def const(what: str, v: float) -> str:
        return g.constant(fresh(what), np.array([v], np.float32))

    if how == "none":
        inner = g.add_node("erf", [g.add_node("mul", [x, const("rsqrt2", 0.5**0.5)], {},
                                              fresh("scaled"))], {}, fresh("erf"))  # fmt: skip
    else:
        cube = g.add_node("power", [x], {"exponent": 3.0}, fresh("cube"))
        poly = g.add_node("add", [x, g.add_node("mul", [cube, const("k", 0.044715)], {},
                                                fresh("kcube"))], {}, fresh("poly"))  # fmt: skip
        arg = g.add_node("mul", [poly, const("c", math.sqrt(2 / math.pi))], {}, fresh("arg"))
        inner = g.add_node("tanh", [arg], {}, fresh("tanh"))
    onep = g.add_node("add", [inner, const("one", 1.0)], {}, fresh("onep"))
    half = g.add_node("mul", [x, const("half", 0.5)], {}, fresh("half"))
    g.add_node("mul", [half, onep], {}, name)
    _rename_output(r, name, out)


def _log_softmax(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """LogSoftmax along ``axis``, stable: ``d - log(sum(exp(d)))``, ``d = x - max(x)``."""
    _float_input(r, ins, where)
    g, fresh = r.g, _fresh(r, name)
    axis = _axis_in(_int_attr(a, "axis", -1, where), len(g.tensors[ins[0]].shape), where)
    m = g.reduce(ins[0], "max", [axis], True, name=fresh("max"))
    d = g.add_node("sub", [ins[0], m], {}, fresh("shifted"))
    s_ = g.reduce(g.add_node("exp", [d], {}, fresh("exp")), "sum", [axis], True, name=fresh("sum"))
    g.add_node("sub", [d, g.add_node("log", [s_], {}, fresh("log"))], {}, name)
    _rename_output(r, name, out)


def _reduce_composed(kind: str) -> Any:
    """ReduceMin (minus the max of minus x), ReduceL1 (the sum of |x|), ReduceL2 (the root of
    the sum of squares) and ReduceSumSquare, around ReduceMax / ReduceSum's reading of the
    axes and keepdims."""
    base = "max" if kind == "min" else "sum"

    def convert(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
        _float_input(r, ins, where)
        g, fresh, x = r.g, _fresh(r, name), ins[0]
        if kind in ("min", "l1"):
            x = g.add_node("neg" if kind == "min" else "abs", [x], {}, fresh("pre"))
        elif kind in ("l2", "sum_square"):
            x = g.add_node("power", [x], {"exponent": 2.0}, fresh("square"))
        reduced = fresh("reduced")
        _reduce(base)(r, fresh("reduce"), where, a, [x, *ins[1:]], reduced)
        y = r.name(reduced)
        if kind in ("min", "l2"):
            g.add_node("neg" if kind == "min" else "sqrt", [y], {}, name)
            _rename_output(r, name, out)
        else:
            _identity(r, name, where, a, [y], out)

    return convert


def _softsign(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Softsign: ``x / (1 + |x|)``."""
    _float_input(r, ins, where)
    g, fresh = r.g, _fresh(r, name)
    one = g.constant(fresh("one"), np.array([1.0], np.float32))
    d = g.add_node("add", [g.add_node("abs", [ins[0]], {}, fresh("abs")), one], {}, fresh("den"))
    g.add_node("div", [ins[0], d], {}, name)
    _rename_output(r, name, out)


def _n_ary(kind: str) -> Any:
    """Sum, Mean, Max and Min of one or more float tensors (numpy broadcasting): chained adds
    (Mean: their sum over the count); ``max(a, b) = a + relu(b - a)``, ``min(a, b) = a -
    relu(a - b)``."""

    def convert(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
        if not ins or not all(t in r.g.tensors for t in ins):
            raise OnnxImportError(f"{where}: takes one or more float tensors")
        if len(ins) == 1:
            _identity(r, name, where, a, ins, out)
            return
        g, fresh = r.g, _fresh(r, name)
        acc = ins[0]
        for k, t in enumerate(ins[1:], 1):
            last = k == len(ins) - 1 and kind != "mean"
            to = name if last else fresh(f"acc{k}")
            if kind in ("sum", "mean"):
                acc = g.add_node("add", [acc, t], {}, to)
            else:
                d = [t, acc] if kind == "max" else [acc, t]
                gap = g.add_node("relu", [g.add_node("sub", d, {}, fresh(f"d{k}"))], {},
                                 fresh(f"gap{k}"))  # fmt: skip
                acc = g.add_node("add" if kind == "max" else "sub", [acc, gap], {}, to)
        if kind == "mean":
            count = g.constant(fresh("count"), np.array([float(len(ins))], np.float32))
            g.add_node("div", [acc, count], {}, name)
        _rename_output(r, name, out)

    return convert


def _global_max_pool(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """GlobalMaxPool: the max over every axis after N and C, kept as size-1 axes."""
    _float_input(r, ins, where)
    rank = len(r.g.tensors[ins[0]].shape)
    if rank < 3:
        raise OnnxImportError(f"{where}: the input must have N, C and spatial axes")
    r.g.reduce(ins[0], "max", list(range(2, rank)), True, name=name)
    _rename_output(r, name, out)


def _per_channel(r: _Reader, t: str, rank: int, fresh: Any, what: str, where: str) -> str:
    """A ``(C,)`` tensor shaped ``(C, 1, ...)`` to broadcast along axis 1 of ``rank`` axes."""
    shape = r.g.tensors[t].shape
    if len(shape) != 1:
        raise OnnxImportError(f"{where}: {what} must be 1-d (C,), got {shape}")
    want = [shape[0]] + [1] * (rank - 2)
    if t in r.g.constants:
        return r.g.constant(fresh(what), r.g.constants[t].reshape(want))
    return r.g.reshape(t, want, name=fresh(what))


def _lp_norm(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """LpNormalization (p 1 or 2) along ``axis``: ``x`` over the sum of ``|x|`` (p=1) or the
    root of the sum of squares (p=2) along it; where that norm is 0 (every element along the
    axis 0) the output is 0, as ONNX defines it (opset 22): the norm is clipped below at the
    smallest normal float32 first, so 0 / that is 0 and any other norm is kept."""
    _float_input(r, ins, where)
    g, fresh = r.g, _fresh(r, name)
    axis = _axis_in(_int_attr(a, "axis", -1, where), len(g.tensors[ins[0]].shape), where)
    p = _int_attr(a, "p", 2, where)
    if p not in (1, 2):
        raise OnnxImportError(f"{where}: p {p} must be 1 or 2")
    if p == 1:
        mag = g.add_node("abs", [ins[0]], {}, fresh("abs"))
    else:
        mag = g.add_node("power", [ins[0]], {"exponent": 2.0}, fresh("square"))
    norm = g.reduce(mag, "sum", [axis], True, name=fresh("sum"))
    if p == 2:
        norm = g.add_node("sqrt", [norm], {}, fresh("norm"))
    norm = g.clip(norm, float(np.finfo(np.float32).tiny), FLOAT_MAX, name=fresh("nonzero"))
    g.add_node("div", [ins[0], norm], {}, name)
    _rename_output(r, name, out)


def _mvn(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """MeanVarianceNormalization over ``axes`` (default N, H, W): ``(x - mean) / sqrt(var)``
    (onnxruntime's epsilon, 1e-9, under the root)."""
    _float_input(r, ins, where)
    rank = len(r.g.tensors[ins[0]].shape)
    axes = _axes_in(_int_list(a.get("axes", [0, 2, 3]), where, "axes") or [], rank, where)
    if not axes:
        raise OnnxImportError(f"{where}: axes must name at least one axis")
    _normalized(r, ins[0], axes, 1e-9, _fresh(r, name), name)  # its root unused
    _rename_output(r, name, out)


def _instance_norm(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """InstanceNormalization: each (n, c) slice normalised over its spatial axes (as
    LayerNormalization's nodes), then ``scale[c]`` and ``B[c]``."""
    _float_input(r, ins, where)
    if len(ins) != 3 or not all(t in r.g.tensors for t in ins):
        raise OnnxImportError(f"{where}: takes 3 float inputs (input, scale, B)")
    shape = r.g.tensors[ins[0]].shape
    if len(shape) < 3:
        raise OnnxImportError(f"{where}: the input must have N, C and spatial axes")
    eps = _float_attr(a, "epsilon", 1e-5, where)
    if not 0 <= eps < 1:
        raise OnnxImportError(f"{where}: epsilon {eps!r} must be a small non-negative float")
    g, fresh, axes = r.g, _fresh(r, name), list(range(2, len(shape)))
    for t in ins[1:]:
        if g.tensors[t].shape != (shape[1],):
            raise OnnxImportError(f"{where}: '{t}' must have shape ({shape[1]},)")
    y, _ = _normalized(r, ins[0], axes, eps, fresh)
    scale = _per_channel(r, ins[1], len(shape), fresh, "scale", where)
    bias = _per_channel(r, ins[2], len(shape), fresh, "bias", where)
    g.add_node("add", [g.add_node("mul", [y, scale], {}, fresh("scaled")), bias], {}, name)
    _rename_output(r, name, out)


def _lrn(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """LRN across channels: ``x / (bias + alpha / size * s) ** beta``, ``s`` the sum of the
    squares over the ``size`` channels around each (``floor((size - 1) / 2)`` before,
    ``ceil((size - 1) / 2)`` after, zero past the ends): the squares padded along C, ``size``
    slices of them added."""
    _float_input(r, ins, where)
    shape = r.g.tensors[ins[0]].shape
    size = _int_attr(a, "size", 0, where)
    if len(shape) < 3 or not 1 <= size <= 64:
        raise OnnxImportError(
            f"{where}: size {size} must be 1 to 64 and the input have N, C and spatial axes"
        )
    alpha = _float_attr(a, "alpha", 1e-4, where)
    beta = _float_attr(a, "beta", 0.75, where)
    bias = _float_attr(a, "bias", 1.0, where)
    g, fresh, rank, c = r.g, _fresh(r, name), len(shape), shape[1]
    sq = g.add_node("power", [ins[0]], {"exponent": 2.0}, fresh("square"))
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    pads = [0] * (2 * rank)
    pads[1], pads[rank + 1] = before, after
    padded = g.pad(sq, pads, name=fresh("padded")) if size > 1 else sq
    total = ""
    for k in range(size):
        part = g.slice(padded, [k], [k + c], [1], name=fresh(f"win{k}")) if size > 1 else sq
        total = part if not total else g.add_node("add", [total, part], {}, fresh(f"sum{k}"))
    k_t = g.constant(fresh("alpha"), np.array([alpha / size], np.float32))
    b_t = g.constant(fresh("bias"), np.array([bias], np.float32))
    base = g.add_node("add", [g.add_node("mul", [total, k_t], {}, fresh("scaled")), b_t], {},
                      fresh("base"))  # fmt: skip
    den = g.add_node("power", [base], {"exponent": beta}, fresh("den"))
    g.add_node("div", [ins[0], den], {}, name)
    _rename_output(r, name, out)


def _space_depth(to_space: bool) -> Any:
    """DepthToSpace and SpaceToDepth of an NCHW tensor, in mode DCR (the default) or CRD
    (SpaceToDepth's since opset 28), as a reshape, a transpose and a reshape: DCR orders the
    channels of the depth axis block row, block column, then input channel; CRD input channel
    first."""

    def convert(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
        _float_input(r, ins, where)
        shape = r.g.tensors[ins[0]].shape
        b = _int_attr(a, "blocksize", 0, where)
        mode = a.get("mode", "DCR")
        if len(shape) != 4 or b < 1 or mode not in ("DCR", "CRD"):
            raise OnnxImportError(
                f"{where}: takes an NCHW tensor, a positive blocksize and mode DCR or CRD"
            )
        nb, c, h, w = shape
        if to_space and c % (b * b) or not to_space and (h % b or w % b):
            raise OnnxImportError(f"{where}: blocksize {b} does not divide the shape {shape}")
        g, fresh = r.g, _fresh(r, name)
        if to_space and mode == "DCR":
            split, perm = (nb, b, b, c // (b * b), h, w), (0, 3, 4, 1, 5, 2)
        elif to_space:
            split, perm = (nb, c // (b * b), b, b, h, w), (0, 1, 4, 2, 5, 3)
        else:
            split = (nb, c, h // b, b, w // b, b)
            perm = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
        final = (nb, c // (b * b), h * b, w * b) if to_space else (nb, c * b * b, h // b, w // b)
        x = g.reshape(ins[0], split, name=fresh("split"))
        g.reshape(g.transpose(x, perm, name=fresh("moved")), final, name=name)
        _rename_output(r, name, out)

    return convert


def _repeated(r: _Reader, name: str, where: str, x: str, reps: list[int], whole: bool) -> str:
    """Node ``name``: ``x`` repeated ``reps[d]`` times along each axis ``d`` (``whole``: the
    whole axis after itself, Tile's; else each element in place, a nearest upsampling's).
    ``x`` reshaped with a size-1 axis beside each repeated one, broadcast by ones, reshaped
    back."""
    g, fresh, shape = r.g, _fresh(r, name), r.g.tensors[x].shape
    pairs = [((1, d), (k, 1)) if whole else ((d, 1), (1, k)) for d, k in zip(shape, reps)]
    split = [v for (p, _), k, d in zip(pairs, reps, shape) for v in (p if k > 1 else (d,))]
    ones = [v for (_, o), k in zip(pairs, reps) for v in (o if k > 1 else (1,))]
    if len(split) > MAX_RANK:
        raise UnsupportedOperatorError(
            f"{where}: repeating {len(shape)} axes needs rank {len(split)}, over {MAX_RANK}"
        )
    c = g.constant(fresh("ones"), np.ones(ones, np.float32))
    y = g.add_node("mul", [g.reshape(x, split, name=fresh("split")), c], {}, fresh("repeat"))
    return g.reshape(y, [d * k for d, k in zip(shape, reps)], name=name)


def _tile(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Tile of a computed tensor by constant repeats: reshaped with a size-1 axis before each
    repeated one, broadcast by ones, reshaped back."""
    _float_input(r, ins, where)
    if len(ins) != 2 or not ins[1]:
        raise OnnxImportError(f"{where}: takes 2 inputs (input, repeats)")
    shape = r.g.tensors[ins[0]].shape
    reps = r.ints_of(ins[1], where, "repeats")
    if len(reps) != len(shape) or any(k < 1 for k in reps):
        raise OnnxImportError(f"{where}: repeats {reps} must be {len(shape)} positive ints")
    final = [d * k for d, k in zip(shape, reps)]
    _dims(final, where)
    if all(k == 1 for k in reps):
        _identity(r, name, where, a, ins[:1], out)
        return
    _repeated(r, name, where, ins[0], reps, whole=True)
    _rename_output(r, name, out)


def _resize(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Resize in mode ``nearest`` (any nearest_mode), ``linear`` (over any one to three
    axes: bilinear over H and W) or ``cubic`` (over one or two axes: bicubic over H and W;
    ``cubic_coeff_a`` and ``exclude_outside`` read), under the coordinate transformation
    modes half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric
    and tf_half_pixel_for_nn, up or down by any factor: a ``resize`` node (``ops.resize``).
    Given scales are read as the simplest fractions that are those float32 values (0.6 is
    3/5), given sizes as ``size / input``. Opset 18's ``axes`` (the axes ``scales`` or
    ``sizes`` give, the others kept) and ``keep_aspect_ratio_policy`` (``sizes`` as bounds:
    one scale for all those axes, their smallest ratio or largest, each size that scale times
    the input's rounded half up) are read. tf_crop_and_resize, a cubic resize of more than
    two axes and a linear or cubic downscaling with antialias are refused."""
    _float_input(r, ins, where)
    mode = a.get("mode", "nearest")
    coord = a.get("coordinate_transformation_mode", "half_pixel")
    rounding = a.get("nearest_mode", "round_prefer_floor")
    if mode not in RESIZE_MODES:
        raise UnsupportedOperatorError(
            f"{where}: Resize mode {mode!r}; tensorsched reads {', '.join(RESIZE_MODES)}"
        )
    cubic_a = _float_attr(a, "cubic_coeff_a", -0.75, where)
    exclude_outside = _int_attr(a, "exclude_outside", 0, where)
    if exclude_outside not in (0, 1):
        raise OnnxImportError(f"{where}: exclude_outside {exclude_outside} must be 0 or 1")
    if coord not in RESIZE_COORDS:
        raise UnsupportedOperatorError(
            f"{where}: Resize coordinate_transformation_mode {coord!r}; tensorsched reads "
            f"{', '.join(RESIZE_COORDS)} (not tf_crop_and_resize, whose roi crops first)"
        )
    if rounding not in RESIZE_ROUNDING:
        raise UnsupportedOperatorError(
            f"{where}: Resize nearest_mode {rounding!r}; tensorsched reads "
            f"{', '.join(RESIZE_ROUNDING)}"
        )
    policy = a.get("keep_aspect_ratio_policy", "stretch")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        raise OnnxImportError(
            f"{where}: keep_aspect_ratio_policy {policy!r} must be stretch, not_larger or "
            "not_smaller"
        )
    shape = r.g.tensors[ins[0]].shape
    rank = len(shape)
    given_axes = _int_list(a.get("axes"), where, "axes")
    axes = list(range(rank)) if given_axes is None else _axes_in(given_axes, rank, where)
    if not axes:
        raise OnnxImportError(f"{where}: axes must name at least one axis")
    # scales or sizes (exporters leave the other one out, or an empty constant)
    raw = np.zeros(0)
    if len(ins) > 2 and ins[2]:
        raw = np.asarray(r.const(ins[2], where), np.float64).reshape(-1)
    sizes_t = ins[3] if len(ins) > 3 and ins[3] else ""
    if (raw.size == 0) == (not sizes_t):
        raise OnnxImportError(f"{where}: Resize takes scales or sizes (one of them)")
    scales, sizes = [Fraction(1)] * rank, list(shape)  # the axes not in ``axes`` kept
    if sizes_t:
        given = r.ints_of(sizes_t, where, "sizes")
        if len(given) != len(axes) or any(d < 1 or d > MAX_ELEMENTS for d in given):
            raise OnnxImportError(f"{where}: sizes {given} must be {len(axes)} positive ints")
        ratios = [Fraction(o, shape[d]) for o, d in zip(given, axes)]
        if policy != "stretch":
            one = min(ratios) if policy == "not_larger" else max(ratios)
            ratios = [one] * len(axes)
            given = [math.floor(one * shape[d] + Fraction(1, 2)) for d in axes]
        for d, ratio, size in zip(axes, ratios, given):
            scales[d], sizes[d] = ratio, size
    else:
        if raw.size != len(axes) or not np.all(np.isfinite(raw)) or np.any(raw <= 0):
            raise OnnxImportError(f"{where}: scales {raw.tolist()} must be {len(axes)} positive")
        for d, v in zip(axes, raw.tolist()):
            # floor(input * scale) in float32, as onnxruntime computes it (5 * 1.8 is 9)
            scales[d], sizes[d] = scale_fraction(v), int(np.float32(v) * np.float32(shape[d]))
            if coord == "align_corners" and scales[d] * shape[d] != sizes[d]:
                raise UnsupportedOperatorError(
                    f"{where}: Resize align_corners by scale {v:g} of axis {d} ({shape[d]} "
                    f"-> {sizes[d]}): the input times the scale is not whole, and ONNX's "
                    "reference (that product as the output length) and onnxruntime (the "
                    "floored size) disagree; give sizes"
                )
    if any(d < 1 or d > MAX_ELEMENTS for d in sizes):
        raise OnnxImportError(
            f"{where}: scales {[str(s) for s in scales]} give the output shape {sizes}"
        )
    _dims(sizes, where)
    if mode != "nearest" and _int_attr(a, "antialias", 0, where) and any(s < 1 for s in scales):
        raise UnsupportedOperatorError(
            f"{where}: Resize antialias {a['antialias']} when downscaling; tensorsched reads "
            f"{mode} Resize without antialiasing (0) or that only upscales"
        )
    if all(
        n_in == n_out and axis_map(n_in, n_out, s, coord).identity
        for n_in, n_out, s in zip(shape, sizes, scales)
    ):
        _identity(r, name, where, a, ins[:1], out)
        return
    try:
        check_resize(shape, sizes, scales, mode, coord, rounding, where)
    except ComputeError as exc:
        raise UnsupportedOperatorError(str(exc)) from None
    pairs = [(s.numerator, s.denominator) for s in scales]
    r.g.resize(ins[0], sizes, pairs, mode, coord, rounding, name=name, cubic_a=cubic_a,
               exclude_outside=bool(exclude_outside))  # fmt: skip
    _rename_output(r, name, out)


def _pad(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Pad of a computed tensor: its pads, constant_value and axes must be constants."""
    _float_input(r, ins, where)
    what = ("pads", "constant_value", "axes")
    values: list[Any] = [None] * len(ins[1:])
    for k, (t, w) in enumerate(zip(ins[1:], what)):
        if t:
            values[k] = r.const(t, where) if w == "constant_value" else r.ints_of(t, where, w)
    shape = r.g.tensors[ins[0]].shape
    pads, mode, value = _pad_args(where, a, len(shape), [ins[0], *values])
    if abs(value) > 2**24 and np.asarray(values[1]).dtype.kind in "iu":
        raise UnsupportedOperatorError(
            f"{where}: the integer constant_value {int(value)} is beyond 2**24, which float32 "
            "does not hold exactly; tensorsched computes float32 only"
        )
    _pad_shape(where, shape, pads, mode)
    if not any(pads):
        _identity(r, name, where, a, ins[:1], out)
        return
    r.g.pad(ins[0], pads, mode, value, name=name)
    _rename_output(r, name, out)


def _einsum(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Einsum of computed tensors: one input summed over some axes and transposed; two whose
    every letter is a batch one (both inputs and the output), a contracted one (both inputs,
    not the output) or one input's own (summed first where the output lacks it): transposes
    and reshapes around a ``batch_matmul`` (a ``dense`` where the right one is a constant
    matrix). Anything else is refused."""
    if not 1 <= len(ins) <= 2 or not all(ins):
        raise UnsupportedOperatorError(
            f"{where}: Einsum '{a.get('equation')}' of {len(ins)} inputs; tensorsched reads one "
            "or two on computed tensors (more only where all are constants)"
        )
    for t in ins:
        if t in r.ints or t not in r.g.tensors:
            raise UnsupportedOperatorError(
                f"{where}: Einsum input '{t}' must be a float tensor of 1 or more dims"
            )
    eq = _einsum_parse(where, a, [r.g.tensors[t].shape for t in ins])

    def refuse(why: str) -> UnsupportedOperatorError:
        return UnsupportedOperatorError(
            f"{where}: Einsum '{eq.text}' is not supported on computed tensors: {why}; "
            "tensorsched reads transposes, sums over axes and batched matrix products"
        )

    if not eq.out:
        raise refuse("the output is a scalar, which the graph holds none of")
    for t, term in zip(ins, eq.terms):
        if len(set(term)) != len(term):
            raise refuse(f"a letter repeats in '{term}' (a diagonal)")
        if any(d != eq.sizes[c] for c, d in zip(term, r.g.tensors[t].shape)):
            raise refuse("a dim of size 1 broadcasts against a larger one")
    g = r.g

    def fresh(what: str) -> str:
        return g.fresh_name(f"{name}_{what}")

    def arrange(x: str, term: str, keep: str, order: str) -> tuple[str, str]:
        """``x`` summed over the letters of ``term`` not in ``keep``, then transposed to
        ``order``'s letters (those it has)."""
        drop = [i for i, c in enumerate(term) if c not in keep]
        want = "".join(c for c in order if c in term and c in keep)
        if not want:
            raise refuse(f"every axis of '{term}' is summed away")
        if x in g.constants:  # a constant operand arranged now
            if drop or want != term:
                v = g.constants[x].astype(np.float64).sum(axis=tuple(drop))
                kept = "".join(c for c in term if c in keep)
                x = g.constant(fresh("arranged"), np.transpose(v, [kept.index(c) for c in want]))
            return x, want
        if drop:
            x = g.reduce(x, "sum", drop, False, name=fresh("sum"))
            term = "".join(c for c in term if c in keep)
        if want != term:
            x = g.transpose(x, [term.index(c) for c in want], name=fresh("transpose"))
        return x, want

    def finish(x: str, have: str) -> None:
        """``x`` (letters ``have``) transposed to the output's order, as ``out``."""
        if have == eq.out:
            _identity(r, name, where, a, [x], out)
            return
        g.transpose(x, [have.index(c) for c in eq.out], name=name)
        _rename_output(r, name, out)

    if len(ins) == 1:
        x, have = arrange(ins[0], eq.terms[0], eq.out, eq.out)
        finish(x, have)
        return
    ta, tb = eq.terms
    batch = "".join(c for c in ta if c in tb and c in eq.out)
    summed = "".join(c for c in ta if c in tb and c not in eq.out)
    own_a = "".join(c for c in ta if c not in tb and c in eq.out)
    own_b = "".join(c for c in tb if c not in ta and c in eq.out)
    if not summed:
        raise refuse("no letter is summed (an elementwise or outer product: write it as a Mul)")
    x, _ = arrange(ins[0], ta, batch + summed + own_a + own_b, batch + own_a + summed)
    y, _ = arrange(ins[1], tb, batch + summed + own_a + own_b, batch + summed + own_b)
    size = eq.sizes
    m, k, n = (math.prod(size[c] for c in part) for part in (own_a, summed, own_b))
    lead = [size[c] for c in batch]

    def to(t: str, shape: list[int], what: str) -> str:
        if g.tensors[t].shape == tuple(shape):
            return t
        if t in g.constants:
            return g.constant(fresh(what), g.constants[t].reshape(shape))
        return g.reshape(t, shape, name=fresh(what))

    x = to(x, [*lead, m, k], "rows")
    y = to(y, [*lead, k, n], "cols")
    if not batch and y in g.constants:
        w = g.constant(fresh("weight"), np.ascontiguousarray(g.constants[y].T))
        prod = g.dense(x, w, name=fresh("dense"))
    else:
        prod = g.batch_matmul(x, y, name=fresh("matmul"))
    have = batch + own_a + own_b
    prod = to(prod, [size[c] for c in have], "unflat")
    finish(prod, have)


# ---- comparisons, logic, Where and Mod on computed tensors: masks (1.0 / 0.0) in float32

COMPARISONS = {"Equal": "equal", "Less": "less", "LessOrEqual": "less_equal",
               "Greater": "greater", "GreaterOrEqual": "greater_equal", "And": "logical_and",
               "Or": "logical_or", "Xor": "logical_xor"}  # fmt: skip
# what reads a computed boolean or integer tensor (held as float32): the operators below and
# the layout ones (KIND_KEEPING), whose outputs keep its type
KIND_KEEPING = {
    "Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice", "Gather",
    "Expand", "Concat", "Split", "Tile", "Pad",
}  # fmt: skip
# of integers: integers, exact in float32 (no rounding, no overflow)
KIND_EXACT = {"Neg", "Abs", "Sign", "Max", "Min", "ReduceMax", "ReduceMin"}
KIND_READERS = {
    "bool": {"Cast", "Not", "And", "Or", "Xor", "Equal", "Where", *KIND_KEEPING},
    "int": {"Cast", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Where", "Mod",
            *KIND_EXACT, *KIND_KEEPING},
}  # fmt: skip
KIND_WHAT = {"bool": "a boolean tensor", "int": "an integer tensor"}


def _mask_node(op: str, arity: int) -> Any:
    """An ONNX comparison or logic operator: the graph's ``op`` of the operands (constants
    made float32), a boolean output."""

    def convert(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
        if len(ins) != arity or not all(ins):
            raise OnnxImportError(f"{where}: takes {arity} inputs")
        attrs = {}
        if op == "isinf":
            keys = ("detect_positive", "detect_negative")
            attrs = {k: bool(_int_attr(a, k, 1, where)) for k in keys}
        r.g.add_node(op, [r.operand(t, where) for t in ins], attrs, name)
        _rename_output(r, name, out)
        r.kind[out] = ("bool", where)

    return convert


def _operand_kind(r: _Reader, raw: str, t: str) -> str:
    """``float``, ``int`` or ``bool``: the ONNX type of input ``t`` (``raw``: its name in the
    model)."""
    if raw in r.kind:
        return r.kind[raw][0]
    if r.name(t) in r.ints:
        return "bool" if r.ints[r.name(t)].dtype == np.bool_ else "int"
    return "float"


def _where(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Where(cond, a, b): the graph's ``where``; the output has the branches' type."""
    if len(ins) != 3 or not all(ins):
        raise OnnxImportError(f"{where}: takes 3 inputs")
    kinds = {_operand_kind(r, raw, t) for raw, t in zip(a["_inputs"][1:], ins[1:])}
    if len(kinds) > 1:
        raise OnnxImportError(f"{where}: its branches are of types {sorted(kinds)}, not one")
    r.g.add_node("where", [r.operand(t, where) for t in ins], {}, name)
    _rename_output(r, name, out)
    kind = kinds.pop()
    if kind != "float":
        r.kind[out] = (kind, where)


def _mod(r: _Reader, name: str, where: str, a: dict, ins: list[str], out: str) -> None:
    """Mod: of floats, C's ``fmod`` (``fmod=1``) or from opset 28 numpy's ``mod`` (the sign of
    the divisor, ``fmod=0``); of integers (a computed one is a Cast of floats: integer values
    in float32) either, exact, where no divisor is a constant zero."""
    if len(ins) != 2 or not all(ins):
        raise OnnxImportError(f"{where}: takes 2 inputs")
    kinds = {_operand_kind(r, raw, t) for raw, t in zip(a["_inputs"], ins)}
    if kinds != {"float"} and kinds != {"int"}:
        raise OnnxImportError(f"{where}: its operands are of types {sorted(kinds)}, not one")
    fmod = _int_attr(a, "fmod", 0, where)
    if fmod not in (0, 1):
        raise OnnxImportError(f"{where}: fmod {fmod} must be 0 or 1")
    if kinds == {"float"}:
        _float_mod_ok(where, {"fmod": fmod, "_opset": r.opset})
    elif r.is_const(ins[1]) and np.any(r.const(ins[1], where) == 0):
        raise OnnxImportError(f"{where}: integer modulo by zero")
    r.g.add_node("mod", [r.operand(t, where) for t in ins], {"fmod": bool(fmod)}, name)
    _rename_output(r, name, out)
    if kinds == {"int"}:
        r.kind[out] = ("int", where)


CONVERTERS: dict[str, Any] = {
    **{onnx_op: _mask_node(op, 2) for onnx_op, op in COMPARISONS.items()},
    "Not": _mask_node("logical_not", 1),
    "IsNaN": _mask_node("isnan", 1),
    "IsInf": _mask_node("isinf", 1),
    "Where": _where,
    "Mod": _mod,
    "Conv": _as_2d(_conv),
    "BatchNormalization": _batch_norm,
    **{onnx_op: _simple(op, attrs) for onnx_op, (op, attrs) in UNARY.items()},
    **{onnx_op: _binary(op) for onnx_op, op in BINARY.items()},
    "Dropout": _dropout,
    "Clip": _clip,
    "MaxPool": _as_2d(lambda r, n, w, a, i, o: _pool(r, n, w, a, i, o, "max_pool2d")),
    "AveragePool": _as_2d(lambda r, n, w, a, i, o: _pool(r, n, w, a, i, o, "avg_pool2d")),
    "GlobalAveragePool": _global_avg_pool,
    "ReduceMean": _reduce("mean"),
    "ReduceSum": _reduce("sum"),
    "ReduceMax": _reduce("max"),
    "Gemm": _gemm,
    "MatMul": _matmul,
    "Expand": _expand,
    "Flatten": _axis_op("flatten", 1),
    "Reshape": _reshape,
    "Softmax": _axis_op("softmax", -1),
    "Concat": _axis_op("concat", 0),
    "Identity": _identity,
    "Constant": _constant,
    "Shape": _shape,
    "Size": _size,
    "Cast": _cast,
    "Transpose": _transpose,
    "Slice": _slice,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Gather": _gather,
    "Pow": _pow,
    "Pad": _pad,
    "Einsum": _einsum,
    "PRelu": _prelu,
    "Elu": _elu_like("elu"),
    "Selu": _elu_like("selu"),
    "Softplus": _softplus,
    "Softsign": _softsign,
    "Sum": _n_ary("sum"),
    "Mean": _n_ary("mean"),
    "Max": _n_ary("max"),
    "Min": _n_ary("min"),
    "GlobalMaxPool": _global_max_pool,
    "InstanceNormalization": _instance_norm,
    "Resize": _resize,
    "LRN": _lrn,
    "DepthToSpace": _space_depth(True),
    "SpaceToDepth": _space_depth(False),
    "Tile": _tile,
    "ConvTranspose": _as_2d(_conv_transpose),
    "Mish": _mish,
    "Gelu": _gelu,
    "Celu": _elu_like("celu"),
    "LogSoftmax": _log_softmax,
    "ReduceMin": _reduce_composed("min"),
    "ReduceL1": _reduce_composed("l1"),
    "ReduceL2": _reduce_composed("l2"),
    "ReduceSumSquare": _reduce_composed("sum_square"),
    "LpNormalization": _lp_norm,
    "MeanVarianceNormalization": _mvn,
}
# converters given every output's name
MULTI_OUTPUT: dict[str, Any] = {"Split": _split, "LayerNormalization": _layer_norm}
SUPPORTED = tuple(sorted({*CONVERTERS, *MULTI_OUTPUT, *FOLD}))


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
    "pow": ("Pow", ()),
    "transpose": ("Transpose", ("perm",)),
    "batch_matmul": ("MatMul", ()),
}
REDUCE_NAMES = {"mean": "ReduceMean", "sum": "ReduceSum", "max": "ReduceMax"}
# the opset from which each reads its axes as an input, not an attribute
REDUCE_AXES_INPUT = {"mean": 18, "sum": 13, "max": 18}


def _resize_node(g: Graph, n: Any, x: str, out: str, opset: int, inits: list, fresh: Any) -> Any:
    """A resize node as ONNX's Resize: by ``sizes`` where each axis's scale is its size
    ratio, else by float32 ``scales`` where each gives the node's size (ONNX's ``floor(input
    * scale)``); a GraphError where neither does, or for half_pixel_symmetric below opset 19."""
    from onnx import helper, numpy_helper

    a = n.attrs
    shape = g.tensors[n.inputs[0]].shape
    scales = [Fraction(p, q) for p, q in a["scales"]]
    if a["coord"] == "half_pixel_symmetric" and opset < 19:
        raise GraphError(
            f"to_onnx: node '{n.name}' (resize): half_pixel_symmetric needs opset 19 or later, "
            f"not {opset}"
        )
    empty = fresh(n.name + "_roi")
    inits.append(numpy_helper.from_array(np.zeros(0, np.float32), empty))
    if all(s == Fraction(o, i) for s, o, i in zip(scales, a["sizes"], shape)):
        sz = fresh(n.name + "_sizes")
        inits.append(numpy_helper.from_array(np.array(a["sizes"], np.int64), sz))
        ins = [x, empty, "", sz]
    else:
        f32 = np.array([float(s) for s in scales], np.float32)
        if any(int(np.float32(i) * v) != o for i, v, o in zip(shape, f32, a["sizes"])):
            raise GraphError(
                f"to_onnx: node '{n.name}' (resize): scales {[str(v) for v in scales]} of the "
                f"input {shape} do not give its size {a['sizes']} as float32 scales (ONNX "
                "floors input * scale), nor are they its size ratios; it has no ONNX form"
            )
        sc = fresh(n.name + "_scales")
        inits.append(numpy_helper.from_array(f32, sc))
        ins = [x, empty, sc]
    cubic = {}
    if a["mode"] == "cubic":
        cubic = {"cubic_coeff_a": a["cubic_a"], "exclude_outside": int(a["exclude_outside"])}
    return helper.make_node(
        "Resize", ins, [out], n.name, mode=a["mode"],
        coordinate_transformation_mode=a["coord"], nearest_mode=a["rounding"], **cubic,
    )  # fmt: skip


# graph operators that write a mask: the ONNX operator, whether its inputs are conditions
# (cast to bool first); the output is cast to float
MASK_EXPORT = {
    **{op: (onnx_op, onnx_op in ("And", "Or", "Xor")) for onnx_op, op in COMPARISONS.items()},
    "logical_not": ("Not", True), "to_bool": ("Identity", True), "isnan": ("IsNaN", False),
    "isinf": ("IsInf", False),
}  # fmt: skip


def _mask_export(n: Any, own: list[str], out: str, opset: int, fresh: Any) -> list[Any]:
    """A mask, ``where``, ``mod`` or ``trunc`` node as ONNX nodes: the operator with Casts to
    bool of the conditions it reads and to float of the booleans it writes; ``trunc`` as
    ``Sign(x) * Floor(Abs(x))`` (ONNX has no Trunc); a ``mod`` with the divisor's sign below
    opset 28 (where ONNX's Mod of floats takes ``fmod=1`` only) as ``r = fmod(x, y)`` plus
    ``y`` where ``r * y < 0``."""
    from onnx import TensorProto, helper

    def node(op: str, ins: list[str], suffix: str, dst: str | None = None, **kw: Any) -> str:
        dst = dst or fresh(f"{n.name}_{suffix}")
        made.append(helper.make_node(op, ins, [dst], f"{n.name}_{suffix}", **kw))
        return dst

    made: list[Any] = []
    if n.op == "trunc":
        sign = node("Sign", own, "sign")
        whole = node("Floor", [node("Abs", own, "abs")], "floor")
        node("Mul", [sign, whole], "mul", out)
    elif n.op == "mod" and (n.attrs["fmod"] or opset >= 28):
        node("Mod", own, "mod", out, fmod=int(n.attrs["fmod"]))
    elif n.op == "mod":  # the divisor's sign before opset 28: fmod, plus y where signs differ
        r = node("Mod", own, "fmod", fmod=1)
        zero = node(
            "Constant", [], "zero", value=helper.make_tensor("", TensorProto.FLOAT, [], [0])
        )
        differ = node("Less", [node("Mul", [r, own[1]], "ry"), zero], "differ")
        node("Where", [differ, node("Add", [r, own[1]], "plus"), r], "mod", out)
    elif n.op == "where":
        cond = node("Cast", own[:1], "cond", to=TensorProto.BOOL)
        node("Where", [cond, *own[1:]], "where", out)
    else:
        op, conditions = MASK_EXPORT[n.op]
        ins = own
        if conditions:
            ins = [node("Cast", [t], f"bool{i}", to=TensorProto.BOOL) for i, t in enumerate(own)]
        kw: dict[str, Any] = {}
        if n.op == "isinf":
            kw = {k: int(n.attrs[k]) for k in ("detect_positive", "detect_negative")}
        mask = ins[0] if op == "Identity" else node(op, ins, "op", **kw)
        node("Cast", [mask], "float", out, to=TensorProto.FLOAT)
    return made


def _layer_norm_export(
    g: Graph, n: Any, own: list[str], out: str, opset: int, inits: list, fresh: Any
) -> list[Any]:
    """A ``layer_norm`` node: LayerNormalization from opset 17; before it, its steps (two
    ReduceMeans over the axes, the deviation, its root)."""
    from onnx import helper, numpy_helper

    a = n.attrs
    if opset >= 17:
        return [helper.make_node("LayerNormalization", own, [out], n.name, axis=a["axis"],
                                 epsilon=a["epsilon"])]  # fmt: skip
    axes = list(range(a["axis"], len(g.tensors[own[0]].shape)))
    eps = fresh(n.name + "_epsilon")
    inits.append(numpy_helper.from_array(np.array(a["epsilon"], np.float32), eps))
    t = {k: fresh(f"{n.name}_{k}") for k in ("mean", "d", "d2", "var", "var_eps", "std", "y")}
    last = "y" if len(own) > 2 else None
    nodes = [
        helper.make_node("ReduceMean", [own[0]], [t["mean"]], axes=axes),
        helper.make_node("Sub", [own[0], t["mean"]], [t["d"]]),
        helper.make_node("Mul", [t["d"], t["d"]], [t["d2"]]),
        helper.make_node("ReduceMean", [t["d2"]], [t["var"]], axes=axes),
        helper.make_node("Add", [t["var"], eps], [t["var_eps"]]),
        helper.make_node("Sqrt", [t["var_eps"]], [t["std"]]),
        helper.make_node("Div", [t["d"], t["std"]], [t["y"] + "_n"]),
        helper.make_node("Mul", [t["y"] + "_n", own[1]], [t["y"] if last else out]),
    ]
    if last:
        nodes.append(helper.make_node("Add", [t["y"], own[2]], [out], n.name))
    return nodes


def _host_casts(g: Graph, nodes: list[Any]) -> None:
    """Casts at the model's boundary where an input or output is not float32 (``Graph.feed`` /
    ``fetch`` do them on the host): the nodes read an input's float32 copy, and an output is
    the Cast of what its node computes."""
    from onnx import TensorProto, helper

    for t, host in zip(g.inputs, g.input_types):
        if host != "float32":
            copy = f"{t}__float32"
            for n in nodes:
                n.input[:] = [copy if x == t else x for x in n.input]
            nodes.insert(0, helper.make_node("Cast", [t], [copy], copy, to=TensorProto.FLOAT))
    for t, host in zip(g.outputs, g.output_types):
        if host != "float32":
            value = f"{t}__float32"
            for n in nodes:
                n.output[:] = [value if x == t else x for x in n.output]
                n.input[:] = [value if x == t else x for x in n.input]
            nodes.append(helper.make_node("Cast", [value], [t], t + "__cast", to=CODE_OF[host]))


def to_onnx(g: Graph, path: str | os.PathLike | None = None, opset: int = 13) -> Any:
    """``g`` as an ONNX model (written to ``path`` when given); fused epilogues and fused
    injective nodes (``passes.fuse_injective``) are written out as their own nodes, a
    ``scale_shift`` as a BatchNormalization, a ``hard_swish`` below opset 14 as ``x *
    HardSigmoid(x)``; inputs and outputs of another host type than float32 (int64 token ids,
    bool masks) declared as such, with Casts to and from the float32 the graph computes."""
    onnx = _onnx()
    from onnx import TensorProto, helper, numpy_helper

    g = unfuse(g)  # fused injective nodes as the nodes they were
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
            dil: dict[str, Any] = {"dilations": list(a["dilations"])} if "dilations" in a else {}
            nodes.append(helper.make_node(
                "Conv", own, [out], n.name, kernel_shape=[kh, kw], strides=list(a["strides"]),
                pads=list(a["pads"]), group=a["groups"], **dil,
            ))  # fmt: skip
        elif n.op == "conv3d":
            nodes.append(helper.make_node(
                "Conv", own, [out], n.name, kernel_shape=list(g.tensors[n.inputs[1]].shape[2:]),
                strides=list(a["strides"]), pads=list(a["pads"]), group=a["groups"],
                dilations=list(a["dilations"]),
            ))  # fmt: skip
        elif n.op in ("max_pool3d", "avg_pool3d"):
            kw3: dict[str, Any] = {
                "kernel_shape": list(a["kernel"]), "strides": list(a["strides"]),
                "pads": list(a["pads"]),
            }  # fmt: skip
            if n.op == "avg_pool3d":
                kw3["count_include_pad"] = int(a.get("count_include_pad", False))
            if a.get("ceil_mode"):
                kw3["ceil_mode"] = 1
            op = "MaxPool" if n.op == "max_pool3d" else "AveragePool"
            nodes.append(helper.make_node(op, own, [out], n.name, **kw3))
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
        elif n.op == "slice":
            names = []
            for key in ("starts", "ends", "axes", "steps"):
                names.append(fresh(f"{n.name}_{key}"))
                inits.append(numpy_helper.from_array(np.array(a[key], np.int64), names[-1]))
            nodes.append(helper.make_node("Slice", [own[0], *names], [out], n.name))
        elif n.op == "pad":
            p, v = fresh(n.name + "_pads"), fresh(n.name + "_value")
            inits.append(numpy_helper.from_array(np.array(a["pads"], np.int64), p))
            inits.append(numpy_helper.from_array(np.array(a["value"], np.float32), v))
            nodes.append(helper.make_node("Pad", [own[0], p, v], [out], n.name, mode=a["mode"]))
        elif n.op == "resize":
            nodes.append(_resize_node(g, n, own[0], out, opset, inits, fresh))
        elif n.op == "layer_norm":
            nodes += _layer_norm_export(g, n, own, out, opset, inits, fresh)
        elif n.op == "take":  # the indices float32 in the graph: Gather reads integers
            ids = fresh(n.name + "_ids")
            nodes.append(helper.make_node("Cast", [own[1]], [ids], ids, to=TensorProto.INT64))
            nodes.append(helper.make_node("Gather", [own[0], ids], [out], n.name, axis=a["axis"]))
        elif n.op == "power":
            e = fresh(n.name + "_exponent")
            inits.append(numpy_helper.from_array(np.array(a["exponent"], np.float32), e))
            nodes.append(helper.make_node("Pow", [own[0], e], [out], n.name))
        elif n.op in MASK_EXPORT or n.op in ("where", "mod", "trunc"):
            nodes += _mask_export(n, own, out, opset, fresh)
        elif n.op == "reduce":
            kw_ = {"keepdims": int(a["keepdims"])}
            ins_ = list(own)
            if opset >= REDUCE_AXES_INPUT[a["kind"]]:
                ins_.append(fresh(n.name + "_axes"))
                inits.append(numpy_helper.from_array(np.array(a["axes"], np.int64), ins_[-1]))
            else:
                kw_["axes"] = list(a["axes"])
            nodes.append(helper.make_node(REDUCE_NAMES[a["kind"]], ins_, [out], n.name, **kw_))
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

    _host_casts(g, nodes)

    def info(t: str, host: str) -> Any:
        code = CODE_OF[host]
        return helper.make_tensor_value_info(t, code, list(g.tensors[t].shape))

    used = {t for n in nodes for t in n.input}
    inits = [t for t in inits if t.name in used]
    graph = helper.make_graph(
        nodes, g.name, [info(t, h) for t, h in zip(g.inputs, g.input_types)],
        [info(t, h) for t, h in zip(g.outputs, g.output_types)], inits,
    )  # fmt: skip
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="tensorsched"
    )
    model.ir_version = min(model.ir_version, 8)  # readable by onnxruntime releases of 2022 on
    if path is not None:
        onnx.save(model, os.fspath(path))
    return model
