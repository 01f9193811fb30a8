"""The executor: ``build(graph, target, device, log)`` compiles every node of the optimized
graph and returns a ``Net``; ``net(x)`` runs it, ``net.profile(x)`` times it layer by layer.

On ``target="opencl"`` the weights are uploaded once; intermediate tensors live in device
buffers shared by liveness (``passes.plan_memory``) and never come back to the host between
layers; every kernel runs on the device's one queue, with its arguments set once at build
time. Kernels of a layer that read only weights (the packed kernel of seed 003's
``kernel_vec``, im2col's ``kernel_mat``) run once at build time: the weights are pre-packed.
Where the device shares memory with the host (``CL_DEVICE_HOST_UNIFIED_MEMORY``: CPU devices,
mobile GPUs), the input and output buffers are allocated host-visible
(``CL_MEM_ALLOC_HOST_PTR``) and mapped, not copied. ``target="python"`` runs each layer in the
exact Python backend on numpy arrays (slow; for small networks in tests). ``net(x)`` takes
and returns arrays of the graph's host types, converted on the host (``Graph.feed`` and
``Graph.fetch``: an ONNX model's int64 ids and bool masks in, int and bool results out).

``fp16=True`` (OpenCL only) stores every tensor -- weights, activations, the input and the
output buffers -- as half: the kernels read and write global memory with ``vload_half`` /
``vstore_half`` and compute in float (the codegen's ``fp16="storage"``: no ``cl_khr_fp16``
needed), so memory traffic halves and the accuracy is that of half storage (about 1e-3
relative per rounding). ``net(x)`` still takes and returns the arrays it does without (integer
inputs only up to 2048, what half holds exactly). Each layer takes
the config of its float32 task (the tuning logs hold float32 records).

Each conv2d, grouped conv2d, dense and pooling node is built from its template (``tasks.py``)
with the best config of the tuning ``log`` when given, else the config predicted from the
logs of other shapes, else the template's defaults; layers of the same task (workload and
epilogue) share one compiled program, each with its own kernel objects.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..ir import dtype as dt
from ..runtime.build import build as build_module
from ..runtime.device import Device, resolve_device
from ..runtime.module import temp_buffer
from ..runtime.table import format_table
from ..schedules.lower import lower
from ..tune.dispatch import apply_best
from ..tune.log import read_log
from ..tune.task import Task
from .graph import EXACT_INT, Graph, GraphError, Node
from .passes import VIEWS, for_device, optimize
from .tasks import (
    VOLUME_OPS,
    batch_matmul_flop,
    node_kernel,
    node_task,
    task_config,
    volume_shape,
    workload,
)

TARGETS = ("opencl", "python")


@dataclass
class Launch:
    """One kernel launch: the pyopencl kernel with its arguments set, and its NDRange."""

    name: str
    kernel: Any
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None  # None: the driver's choice


@dataclass
class Layer:
    """A compiled node: its module, its per-inference launches, and its workload."""

    node: Node
    task: Task | None
    module: Any
    flop: int
    shape: tuple[int, ...]
    launches: list[Launch] = field(default_factory=list)
    prepacked: int = 0  # kernels run once at build time
    buffers: dict[Any, Any] = field(default_factory=dict)  # held: the kernels' arguments
    config: dict[str, Any] | None = None  # the template's knobs (None: its defaults)
    label: str | None = None  # the profile's kernel column when not the task's

    @property
    def kernel(self) -> str:
        if self.label is not None:
            return self.label
        if self.task is not None:
            return f"{self.task.kind}[{self.task.template}]"
        return self.node.op


@dataclass(frozen=True)
class ProfileRow:
    layer: str
    kernel: str
    shape: tuple[int, ...]
    ms: float
    gflops: float
    percent: float


@dataclass(frozen=True)
class Profile:
    """Per-layer median device times of ``Net.profile``; ``str()`` is the table."""

    rows: tuple[ProfileRow, ...]
    total_ms: float

    def __str__(self) -> str:
        body = [
            (r.layer, r.kernel, "x".join(map(str, r.shape)), f"{r.ms:.3f}",
             f"{r.gflops:.1f}" if r.gflops else "-", f"{r.percent:.1f}")
            for r in self.rows
        ]  # fmt: skip
        body.append(("total", "", "", f"{self.total_ms:.3f}", "", "100.0"))
        head = ("layer", "kernel", "output shape", "ms", "GFLOP/s", "% of total")
        return format_table(head, body, "<<<>>>")


def _cname(i: int, name: str) -> str:
    return f"l{i}_" + re.sub(r"[^A-Za-z0-9_]", "_", name)[:40]


class Net:
    """A built network: ``net(x)`` returns the output array (a tuple for several outputs)."""

    def __init__(
        self, graph: Graph, target: str, device: Device | None, fp16: bool = False
    ) -> None:
        self.graph, self.target, self.device = graph, target, device
        self.fp16 = fp16  # tensors stored as half (see the module docstring)
        self.layers: list[Layer] = []
        self._bufs: dict[str, Any] = {}  # tensor name -> cl.Buffer (OpenCL)
        self.zero_copy = False

    @property
    def storage(self) -> np.dtype:
        """The element type of the device buffers: float16 with ``fp16``, else float32."""
        return np.dtype(np.float16 if self.fp16 else np.float32)

    def buffer(self, tensor: str) -> Any:
        """The device buffer holding ``tensor`` (OpenCL target): for layers built outside the
        templates (``build``'s ``custom``)."""
        if tensor not in self._bufs:
            raise GraphError(f"network '{self.graph.name}' has no device buffer for '{tensor}'")
        return self._bufs[tensor]

    # ---- information

    @property
    def kernels_per_run(self) -> int:
        """How many kernels one inference launches (OpenCL; on the Python target, how many
        layer functions it runs)."""
        if self.target == "python":
            return len(self.layers)
        return sum(len(layer.launches) for layer in self.layers)

    def _feeds(self, x: Any) -> dict[str, np.ndarray]:
        g = self.graph
        feeds = x if isinstance(x, Mapping) else ({g.inputs[0]: x} if len(g.inputs) == 1 else None)
        if feeds is None:
            raise GraphError(f"network '{g.name}' has inputs {g.inputs}; pass a dict of arrays")
        out = {}
        for name in g.inputs:
            if name not in feeds:
                raise GraphError(f"network '{g.name}': no array given for input '{name}'")
            arr = np.ascontiguousarray(g.feed(name, feeds[name], 2**11 if self.fp16 else EXACT_INT))
            if arr.shape != g.tensors[name].shape:
                raise GraphError(
                    f"network '{g.name}': input '{name}' has shape {arr.shape}, expected "
                    f"{g.tensors[name].shape}"
                )
            out[name] = arr
        return out

    def __call__(self, x: Any) -> Any:
        feeds = self._feeds(x)
        outs = self._run_python(feeds) if self.target == "python" else self._run_opencl(feeds)
        outs = [self.graph.fetch(k, v) for k, v in enumerate(outs)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    # ---- python

    def _run_python(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        g = self.graph
        values: dict[str, np.ndarray] = {**g.constants, **feeds}
        layers = {layer.node.name: layer for layer in self.layers}
        for node in g.topo_nodes():
            if node.op in VIEWS:
                values[node.output] = values[node.inputs[0]].reshape(g.tensors[node.output].shape)
                continue
            mod = layers[node.name].module
            shapes = [tuple(b.shape) for b in mod.func.args]
            out = np.full(shapes[-1], np.nan, np.float32)
            mod(*[values[t].reshape(sh) for t, sh in zip(node.inputs, shapes)], out)
            values[node.output] = out.reshape(g.tensors[node.output].shape)
        return [values[t] for t in g.outputs]

    # ---- opencl

    def _run_opencl(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        # untimed, so on the queue without profiling (cheaper launches); it is drained
        # before returning, as profile() drains the profiling queue
        assert self.device is not None
        q = self.device.run_queue
        self._write_inputs(feeds, q)
        self._enqueue_all(q)
        return self._read_outputs(q)

    def _write_inputs(self, feeds: dict[str, np.ndarray], q: Any) -> None:
        import pyopencl as cl

        for name, arr in feeds.items():
            arr = arr.astype(self.storage, copy=False)
            if self.zero_copy:
                mapped, _ = cl.enqueue_map_buffer(
                    q, self._bufs[name], cl.map_flags.WRITE_INVALIDATE_REGION, 0, arr.shape,
                    arr.dtype, is_blocking=True,
                )  # fmt: skip
                mapped[...] = arr
                mapped.base.release(q)
            else:
                cl.enqueue_copy(q, self._bufs[name], arr, is_blocking=False)

    def _enqueue_all(self, q: Any, events: list[tuple[Layer, Any]] | None = None) -> None:
        import pyopencl as cl

        for layer in self.layers:
            for ln in layer.launches:
                ev = cl.enqueue_nd_range_kernel(q, ln.kernel, ln.global_size, ln.local_size)
                if events is not None:
                    events.append((layer, ev))

    def _read_outputs(self, q: Any) -> list[np.ndarray]:
        import pyopencl as cl

        g = self.graph
        outs = []
        for name in g.outputs:
            shape = g.tensors[name].shape
            buf = self._bufs[name]
            if self.zero_copy:
                mapped, _ = cl.enqueue_map_buffer(
                    q, buf, cl.map_flags.READ, 0, shape, self.storage, is_blocking=True
                )
                outs.append(np.array(mapped, dtype=np.float32))
                mapped.base.release(q)
            else:
                host = np.empty(shape, self.storage)
                cl.enqueue_copy(q, host, buf)
                outs.append(host.astype(np.float32, copy=False))
        q.finish()
        return outs

    def profile(self, x: Any, repeat: int = 10, warmup: int = 2) -> Profile:
        """Per-layer device times (median over ``repeat`` runs, from the queue's profiling
        events), with GFLOP/s and the share of the total. OpenCL target only."""
        if self.target != "opencl":
            raise GraphError("profile: build the network with target='opencl'")
        feeds = self._feeds(x)
        for _ in range(warmup):
            self._run_opencl(feeds)
        per: dict[str, list[float]] = {layer.node.name: [] for layer in self.layers}
        assert self.device is not None
        q = self.device.queue
        self._write_inputs(feeds, q)
        for _ in range(max(1, repeat)):
            events: list[tuple[Layer, Any]] = []
            self._enqueue_all(q, events)
            q.finish()
            sums: dict[str, float] = {}
            for layer, ev in events:
                ms = (ev.profile.end - ev.profile.start) * 1e-6
                sums[layer.node.name] = sums.get(layer.node.name, 0.0) + ms
            for k in per:
                per[k].append(sums.get(k, 0.0))
        med = {k: float(np.median(v)) for k, v in per.items()}
        total = sum(med.values())
        rows = tuple(
            ProfileRow(
                layer.node.name, layer.kernel, layer.shape, med[layer.node.name],
                layer.flop / (med[layer.node.name] * 1e6) if med[layer.node.name] > 0 else 0.0,
                100 * med[layer.node.name] / total if total else 0.0,
            )
            for layer in self.layers
        )  # fmt: skip
        return Profile(rows, total)


def _allocate(net: Net, g: Graph, device: Device) -> None:
    """Device buffers: constants uploaded, inputs/outputs (host-mapped where the device shares
    host memory), one buffer per memory-plan slot; views share their source's buffer."""
    import pyopencl as cl

    mf, ctx = cl.mem_flags, device.context
    net.zero_copy = bool(device.cl_device.host_unified_memory)
    plan = g.plan
    used = {t for n in g.nodes.values() for t in n.inputs}
    half = 2 if net.fp16 else 1  # the plan's sizes are float32 bytes
    for name, value in g.constants.items():
        if name in used:
            host_value = value.astype(net.storage)
            net._bufs[name] = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host_value)
    host = mf.ALLOC_HOST_PTR if net.zero_copy else 0
    for name in g.inputs:
        net._bufs[name] = cl.Buffer(ctx, mf.READ_ONLY | host, g.tensors[name].nbytes // half)
    for name in g.outputs:
        src = plan.alias.get(name, name)
        if src in g.inputs or src in g.constants:
            raise GraphError(f"network output '{name}' is an input or a constant; compute it")
        if src not in net._bufs:
            net._bufs[src] = cl.Buffer(ctx, mf.READ_WRITE | host, g.tensors[src].nbytes // half)
        net._bufs[name] = net._bufs[src]
    slots = [cl.Buffer(ctx, mf.READ_WRITE, max(size // half, 4)) for size in plan.sizes]
    for name, s in plan.slot.items():
        net._bufs.setdefault(name, slots[s])
    for alias, src in plan.alias.items():
        net._bufs[alias] = net._bufs[src]


def _attach(net: Net, layer: Layer, device: Device) -> None:
    """Set each kernel's arguments once; run the weight-only kernels now (pre-packing)."""
    import pyopencl as cl

    mod, node = layer.module, layer.node
    tensors = [*node.inputs, node.output]
    if len(tensors) != len(mod.func.args):
        raise GraphError(
            f"node '{node.name}': its kernel takes {len(mod.func.args)} arrays, the node has "
            f"{len(tensors)} tensors"
        )
    bufs: dict[Any, Any] = {b: net._bufs[t] for b, t in zip(mod.func.args, tensors)}
    for t in mod.source.temps:
        nbytes = t.size * dt.itemsize(t.dtype)
        bufs[t] = temp_buffer(device.context, nbytes, t in mod.source.zeroed)
    constants = set(net.graph.constants)
    packing = mod.weight_only_kernels(b for b, t in zip(mod.func.args, tensors) if t in constants)
    layer.buffers = bufs  # pyopencl's set_args keeps no reference to them
    q = device.queue
    for info in mod.source.kernels:
        kern = cl.Kernel(mod.program, info.name)  # its own: a module may serve several layers
        kern.set_args(*[bufs[b] for b in info.params])
        if info.name in packing:
            cl.enqueue_nd_range_kernel(q, kern, info.global_size, info.local_size)
            layer.prepacked += 1
        else:
            layer.launches.append(Launch(info.name, kern, info.global_size, info.local_size))
    q.finish()


def _compile(
    g: Graph,
    node: Node,
    name: str,
    gpu: bool,
    records: Sequence[Any],
    target: str,
    dev: Device | None,
    modules: dict[str, tuple[Any, dict[str, Any] | None]],
    fp16: bool = False,
) -> tuple[Any, Task | None, dict[str, Any] | None]:
    """``(module, task, config)`` of ``node``; layers of the same task share one module.
    With ``fp16`` the task is built with float16 tensors and the config of its float32 task."""
    task = node_task(g, node, gpu, records)
    if task is not None and fp16:
        config = task_config(task)
        task = replace(task, dtype="float16")
    else:
        config = task_config(task) if task is not None else None
    if task is not None and task.key() in modules:
        return (*modules[task.key()][:1], task, modules[task.key()][1])
    if task is not None:
        s, args, _ = task.instantiate(config)
    else:
        s, args = node_kernel(g, node, gpu, "float16" if fp16 else "float32")
    func = lower(s, args, name=name)
    mod = (
        build_module(func, target=target, device=dev) if dev else build_module(func, target=target)
    )
    if task is not None:
        modules[task.key()] = (mod, config)
    return mod, task, config


def build(
    graph: Graph,
    target: str = "opencl",
    device: Device | str | None = None,
    log: str | None = None,
    fp16: bool = False,
    custom: Callable[[Net, Node], Layer | None] | None = None,
) -> Net:
    """Optimize ``graph`` (``passes.PIPELINE``) and compile it for ``target`` (``"opencl"`` or
    ``"python"``) on ``device`` (default: the device in use), with the configs of the tuning
    ``log`` where it has them. Returns the ``Net``.

    ``fp16=True`` stores weights and activations as half, computing in float (OpenCL only; see
    the module docstring). ``custom(net, node)`` (OpenCL only) may build a node's layer itself:
    it returns a ``Layer`` whose launches read and write ``net.buffer(tensor)``, or ``None`` to
    leave the node to its template (the ACL-style baseline network uses it); with ``custom``
    the graph keeps NCHW throughout (no ``passes.for_device``). Otherwise a CPU device's
    graph goes through ``passes.for_device`` (channels-last runs) first."""
    if target not in TARGETS:
        raise GraphError(f"build: unknown target {target!r}; use one of {', '.join(TARGETS)}")
    if target != "opencl" and (fp16 or custom is not None):
        raise GraphError(
            f"build: fp16 storage and custom layers need target='opencl', not {target!r}"
        )
    g = graph if graph.plan is not None else optimize(graph)
    dev = resolve_device(device) if target == "opencl" else None
    gpu = bool(dev.is_gpu) if dev is not None else False
    if dev is not None and custom is None:  # custom layers (the ACL-style network): NCHW
        g = for_device(g, gpu)
    records = read_log(log) if log else []
    if dev is not None:
        records = [r for r in records if r.device == f"{dev.platform_name} / {dev.name}"]
    net = Net(g, target, dev, bool(fp16))
    if dev is not None:
        _allocate(net, g, dev)
    ctx = apply_best(log, dev.name if dev else None) if log else contextlib.nullcontext()
    modules: dict[str, tuple[Any, dict[str, Any] | None]] = {}
    with ctx:
        for i, node in enumerate(g.topo_nodes()):
            if node.op in VIEWS:
                continue
            own = custom(net, node) if custom is not None else None
            if own is not None:
                net.layers.append(own)
                continue
            name = _cname(i, node.name)
            mod, task, config = _compile(
                g, node, name, gpu, records, target, dev, modules, bool(fp16)
            )
            w = workload(g, node)
            flop = w.flop if w is not None else g.tensors[node.output].size
            if node.op == "batch_matmul":
                flop = batch_matmul_flop(g, node)
            elif node.op in VOLUME_OPS:
                flop = volume_shape(g, node).flop
            layer = Layer(node, task, mod, flop, g.tensors[node.output].shape, config=config)
            if dev is not None:
                _attach(net, layer, dev)
            net.layers.append(layer)
    return net
