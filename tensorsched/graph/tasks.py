"""What each graph node compiles to: its tuning task (a registered template at its workload,
with its fused epilogue) for conv2d, depthwise / grouped conv2d, ungrouped conv3d, dense and
pooling, or a plain elementwise kernel for the rest (a grouped conv3d and 3-d pooling: direct
kernels at their defaults); and ``extract_tasks``, the distinct tunable workloads of a
network (deduplicated), which ``tensorsched net tune`` tunes one by one.

Template choice per conv (the layout): the GPU's ``implicit_gemm`` (one kernel, tiles read
straight from the NCHW image) or the CPU's ``gemm_cpu`` (the CPU GEMM over channels x pixels,
from the image itself for a 1x1 conv, else from its column matrix), unless a tuning log has a
faster record of another template of the same workload (seed 003's ``spatial_pack`` among them).
An ungrouped conv3d is the same GEMM over channels x output positions (``implicit_gemm`` on a
GPU, ``gemm_cpu`` on a CPU device; ``ops.templates.conv3d``), its config predicted from the
GEMM and conv logs of that GEMM template's family when no log holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..ir import intrin as I
from ..ir.expr import const
from ..ir.tensor import Tensor, compute, placeholder, thread_axis
from ..ops import nn
from ..ops.batch_matmul import BatchMatmulShape
from ..ops.conv2d import ConvShape
from ..ops.conv3d import Conv3dShape
from ..ops.pad import pad
from ..ops.pool import Pool3dShape
from ..ops.reduction import reduce
from ..ops.resize import resize
from ..ops.space import Config
from ..ops.templates import templates_of
from ..ops.templates.batch_matmul import batch_matmul_cpu, batch_matmul_gpu, small_tiles
from ..ops.templates.conv3d import conv3d_direct, pool3d_direct
from ..ops.templates.injective import inline_injective, schedule_injective, schedule_row_groups
from ..ops.transform import concat, flatten, reshape, strided_slice, transpose
from ..schedules.schedule import Schedule, create_schedule
from ..tune.dispatch import best_config, fewest_logged_rows, predicted_config
from ..tune.record import Record
from ..tune.task import Task
from .graph import Graph, GraphError, Node, node_pool_mode, slice_plan

# (kind, {device class: templates in order of preference}) per tunable operator
TEMPLATE_CHOICE: dict[str, dict[str, tuple[str, ...]]] = {
    "conv2d": {
        "gpu": ("implicit_gemm", "im2col_gpu"),
        "cpu": ("gemm_cpu", "spatial_pack", "im2col"),
    },
    "conv3d": {"gpu": ("implicit_gemm",), "cpu": ("gemm_cpu",)},  # groups == 1
    "depthwise_conv2d": {"gpu": ("direct",), "cpu": ("cpu", "direct")},
    "group_conv2d": {"gpu": ("direct",), "cpu": ("cpu", "direct")},
    "dense": {"gpu": ("gpu",), "cpu": ("cpu",)},
    "pool": {"gpu": ("direct",), "cpu": ("cpu", "direct")},  # cpu: a row of outputs each
    # a work-group per row: batch-1 networks have one row (0.007 ms, not 0.39, on PoCL)
    "softmax": {"gpu": ("rows_gpu", "rows"), "cpu": ("rows_gpu", "rows")},
}
# a dense layer of this many rows or more (a transformer's tokens, a batch) takes its device
# type's GEMM template first (benchmarks/dense_rows.py, O = 1024, K = 256, against the
# matrix-vector template: on PoCL 0.65x at 4 rows, 2.0x at 8, 3.2x at 128; on the H200 0.40x
# at 8 rows (the GEMM's defaults), 2.2x at 16 (a config predicted from the GEMM log), 4.1x at
# 128). On a GPU, fewer rows take it too where the logs hold GEMMs of as few rows, which its
# untuned config is predicted from: on the H200, with the shipped matrix-vector products, 0.99x
# - 1.88x at one row, 1.5x - 5.5x at 2-16 (O x K 1024x256, 1000x4096, 4096x4096, 4096x25088;
# benchmarks/gpu/results/stage_2026-11-29/dense_rows_*.txt); with the GEMM's defaults, 0.40x -
# 0.77x. The matrix-vector template reads the weight once a row. On PoCL the GEMM template lost
# at one row of 4096x4096 (0.62x) with such logs, so a CPU device keeps the row count.
DENSE_GEMM_ROWS = {"gpu": 16, "cpu": 8}
DENSE_GEMM = {"gpu": "gemm_gpu", "cpu": "gemm_cpu"}

# the templates of a node that passes.channels_last made channels-last (attrs["layout"]); a
# conv that writes NHWC from NCHW data (attrs["data_layout"]) is conv2d's "gemm_to_nhwc"
CHANNELS_LAST = {"conv2d": "gemm_nhwc", "depthwise_conv2d": "nhwc"}
# what ``net tune`` tunes
TUNABLE = ("conv2d", "depthwise_conv2d", "group_conv2d", "dense", "conv3d")


def epilogue_kinds(node: Node) -> tuple[str, ...]:
    """The node's fused steps as ``ops.nn.epilogue`` names (a clip to 0..6 is ``relu6``); a
    conv or dense node's own bias input comes first as ``bias``."""
    out = []
    if node.op in ("conv2d", "conv3d", "dense"):
        extra = sum(1 for s in node.epilogue if s[0] in ("bias", "add"))
        if len(node.inputs) - 2 > extra:  # its own bias input, not fused yet
            out.append("bias")
    for step in node.epilogue:
        if step[0] == "clip":
            if (step[1], step[2]) != (0.0, 6.0):
                raise GraphError(f"node '{node.name}': only a clip to 0..6 fuses (relu6)")
            out.append("relu6")
        else:
            out.append(step[0])
    return tuple(out)


@dataclass(frozen=True)
class Workload:
    """A node's tunable operator: the task kind and its shape (plain ints)."""

    kind: str
    shape: tuple[int, ...]
    flop: int


def workload(g: Graph, node: Node) -> Workload | None:
    """The tunable workload of ``node`` (``None`` for an elementwise or view node)."""
    a = node.attrs
    if node.op == "conv2d":
        N, CI, IH, IW = g.tensors[node.inputs[0]].shape
        CO, _, KH, KW = g.tensors[node.inputs[1]].shape
        _, _, OH, OW = g.tensors[node.output].shape
        (sh, sw), (t, l, b, r), groups = a["strides"], a["pads"], a["groups"]
        dh, dw = a.get("dilations", (1, 1))
        flop = 2 * N * CO * OH * OW * (CI // groups) * KH * KW  # the taps multiplied
        if groups == 1 and sh == sw and t == l == b == r and dh == dw:
            conv = ConvShape(N, CI, IH, IW, CO, KH, KW, sh, t, dh)
            return Workload("conv2d", conv.astuple(), flop)
        shape = (N, CI, IH, IW, CO, KH, KW, groups, sh, sw, t, l, b, r, dh, dw)
        return Workload("depthwise_conv2d" if groups == CI else "group_conv2d", shape, flop)
    if node.op == "conv3d" and a["groups"] == 1:  # grouped: volume_kernel's direct form
        x, w = (g.tensors[t].shape for t in node.inputs[:2])
        conv3d = Conv3dShape.make(x, w, a["strides"], a["pads"], a["dilations"], 1)
        return Workload("conv3d", conv3d.astuple(), conv3d.flop)
    if node.op == "dense":
        N, K = g.tensors[node.inputs[0]].shape
        O = g.tensors[node.inputs[1]].shape[0]
        return Workload("dense", (N, O, K), 2 * N * O * K)
    if node.op in ("max_pool2d", "avg_pool2d", "global_avg_pool2d"):
        N, C, IH, IW = g.tensors[node.inputs[0]].shape
        if node.op == "global_avg_pool2d":
            kh, kw, sh, sw, pads, mode = IH, IW, 1, 1, (0, 0, 0, 0), 1
        else:
            (kh, kw), (sh, sw), pads = a["kernel"], a["strides"], a["pads"]
            mode = node_pool_mode(node)  # ceil mode included
        _, _, OH, OW = g.tensors[node.output].shape
        return Workload(
            "pool", (N, C, IH, IW, kh, kw, sh, sw, *pads, mode), N * C * OH * OW * kh * kw
        )
    if node.op == "softmax" and node.attrs["axis"] == len(g.tensors[node.output].shape) - 1:
        out = g.tensors[node.output]
        rows = out.size // out.shape[-1]
        return Workload("softmax", (rows, out.shape[-1]), 4 * out.size)
    return None


def choose_template(kind: str, shape: tuple[int, ...], epilogue: Sequence[str], gpu: bool,
                    records: Sequence[Record] = ()) -> str:  # fmt: skip
    """The template for a workload: the fastest one in ``records`` (a tuning log's, of this
    kind, shape and epilogue), else the first registered one of ``TEMPLATE_CHOICE`` (for a
    dense layer of ``DENSE_GEMM_ROWS`` rows or more, its GEMM template first; on a GPU also
    of fewer, where the logs its config is predicted from hold a GEMM of as few rows)."""
    table = templates_of(kind)
    best: tuple[float, str] | None = None
    for r in records:
        t = r.task
        if r.status != "ok" or r.device_ms is None or not isinstance(t, dict):
            continue
        same = (t.get("kind"), tuple(t.get("shape", ())), tuple(t.get("epilogue", ())))
        name = t.get("template")
        if same == (kind, shape, tuple(epilogue)) and name in table:
            if best is None or r.device_ms < best[0]:
                best = (r.device_ms, str(name))
    if best is not None:
        return best[1]
    device = "gpu" if gpu else "cpu"
    choices = TEMPLATE_CHOICE[kind][device]
    if kind == "dense":
        rows = shape[0]
        gemm = Task(kind, DENSE_GEMM[device], shape, "float32", tuple(epilogue))
        if rows >= DENSE_GEMM_ROWS[device] or (gpu and fewest_logged_rows(gemm) <= rows):
            choices = (DENSE_GEMM[device], *choices)
    for name in choices:
        if name in table:
            return name
    return next(iter(table))


def node_task(g: Graph, node: Node, gpu: bool, records: Sequence[Record] = ()) -> Task | None:
    """The tuning task of ``node`` (``None`` for nodes built without a template)."""
    w = workload(g, node)
    if w is None:
        return None
    ep = epilogue_kinds(node)
    if node.attrs.get("layout") == "NHWC":
        name = CHANNELS_LAST[w.kind] if node.attrs.get("data_layout") == "NHWC" else "gemm_to_nhwc"
        return Task(w.kind, name, w.shape, "float32", ep)
    return Task(w.kind, choose_template(w.kind, w.shape, ep, gpu, records), w.shape, "float32", ep)


def task_config(task: Task) -> dict | None:
    """The best logged config of ``task`` (inside ``apply_best``), else the predicted one."""
    config = best_config(task)
    return config if config is not None else predicted_config(task)


# elementwise operators of one input: the function and the node attributes it takes, in order
UNARY: dict[str, tuple[Callable[..., Tensor], tuple[str, ...]]] = {
    "relu": (nn.relu, ()),
    "sigmoid": (nn.sigmoid, ()),
    "tanh": (nn.tanh, ()),
    "leaky_relu": (nn.leaky_relu, ("alpha",)),
    "hard_sigmoid": (nn.hard_sigmoid, ("alpha", "beta")),
    "hard_swish": (nn.hard_swish, ()),
    "erf": (nn.erf, ()),
    "sqrt": (nn.sqrt, ()),
    "exp": (nn.exp, ()),
    "log": (nn.log, ()),
    "neg": (nn.negative, ()),
    "abs": (nn.absolute, ()),
    "reciprocal": (nn.reciprocal, ()),
    "floor": (nn.floor, ()),
    "ceil": (nn.ceil, ()),
    "power": (nn.power_scalar, ("exponent",)),
    "sign": (nn.sign, ()),
    "trunc": (nn.trunc, ()),
    "logical_not": (nn.logical_not, ()),
    "to_bool": (nn.to_bool, ()),
    "isnan": (nn.isnan, ()),
    "isinf": (nn.isinf, ("detect_positive", "detect_negative")),
}
BINARY = {
    "add": nn.add, "sub": nn.subtract, "mul": nn.multiply, "div": nn.divide, "pow": nn.power,
}  # fmt: skip


def node_kernel(
    g: Graph, node: Node, gpu: bool, dtype: str = "float32"
) -> tuple[Schedule, list[Tensor]]:
    """``(schedule, [*inputs, output])`` of a node without a tuning task: a batch_matmul
    (``batch_matmul_kernel``) or any ``elementwise_kernel`` node."""
    if node.op == "batch_matmul":
        return batch_matmul_kernel(g, node, gpu, dtype)
    if node.op in VOLUME_OPS:
        return volume_kernel(g, node, dtype)
    return elementwise_kernel(g, node, dtype, gpu)


# 3-d windows: direct kernels, untuned (an ungrouped conv3d has a task: never built here)
VOLUME_OPS = ("conv3d", "max_pool3d", "avg_pool3d")


def volume_shape(g: Graph, node: Node) -> Conv3dShape | Pool3dShape:
    """The ``ops`` shape of a conv3d, max_pool3d or avg_pool3d node."""
    a = node.attrs
    x = g.tensors[node.inputs[0]].shape
    if node.op == "conv3d":
        w = g.tensors[node.inputs[1]].shape
        return Conv3dShape.make(x, w, a["strides"], a["pads"], a["dilations"], a["groups"])
    return Pool3dShape.make(x, a["kernel"], a["strides"], a["pads"], node_pool_mode(node))


def volume_kernel(g: Graph, node: Node, dtype: str = "float32") -> tuple[Schedule, list[Tensor]]:
    """A grouped 3-d convolution's or a 3-d pooling's kernel (``ops.templates.conv3d``: the
    direct form, a register tile of outputs per work-item, the reduction in registers) with
    the node's fused epilogue, at the template's default knobs (no tuning task; an ungrouped
    conv3d is a ``conv3d`` task, ``workload``)."""
    shape = volume_shape(g, node)
    ep = epilogue_kinds(node)
    if isinstance(shape, Conv3dShape):
        return conv3d_direct(Config({}), shape, dtype, ep)
    return pool3d_direct(Config({}), shape, dtype, ep)


def batch_matmul_kernel(
    g: Graph, node: Node, gpu: bool, dtype: str = "float32"
) -> tuple[Schedule, list[Tensor]]:
    """A batch_matmul node's kernel: the GPU (``__local`` tiles) or CPU (register tiles)
    GEMM schedule over each product, with tiles sized for the shape
    (``templates.batch_matmul.small_tiles``), else the GEMM templates' defaults. Its
    arguments are the kernel's view of the tensors (``ops.batch_matmul``: the same memory,
    three dims each)."""
    view = BatchMatmulShape.of(*(g.tensors[t].shape for t in node.inputs))
    template = batch_matmul_gpu if gpu else batch_matmul_cpu
    cfg = Config(small_tiles(view, gpu))
    s, args = template(cfg, view, dtype)
    if not cfg.valid:  # the sized tiles break a device limit: the defaults
        s, args = template(Config({}), view, dtype)
    return s, args


def batch_matmul_flop(g: Graph, node: Node) -> int:
    """The multiply-adds (times 2) of a batch_matmul node."""
    return BatchMatmulShape.of(*(g.tensors[t].shape for t in node.inputs)).flop


# On a GPU, softmax / layer_norm / reduce rows of 64 elements or more: one kernel, a work-group a
# row (False: the work-item-a-row kernels, for comparisons: benchmarks/gpu/text_zoo.py)
ROW_GROUPS = True


def elementwise_kernel(
    g: Graph, node: Node, dtype: str = "float32", gpu: bool = False
) -> tuple[Schedule, list[Tensor]]:
    """``(schedule, [*inputs, output])`` of a node without a template: the elementwise ones
    (``UNARY``, ``BINARY``, the masks' comparisons and logic, where, mod, clip, scale_shift,
    batch_norm), concat, transpose, slice, pad, resize
    (each work-item one output: its index arithmetic and one load, or the 2 ** k weighted
    loads of a linear resize of k axes, 4 ** k of a cubic one), reduce
    (a loop over the reduced elements in each work-item), softmax (along any axis) and
    layer_norm, each one flat kernel (softmax's max and sum, layer_norm's sum and squared
    deviations, are reductions in kernels of their own, a work-item a row). On a GPU
    (``gpu``), softmax and layer_norm along trailing axes and reduce are instead one kernel of
    a work-group a row (``schedule_row_groups``) where a row has 64 elements or more: a
    work-item a row leaves most of a GPU idle (a layer norm of 128 rows of 256: 33-38 us in
    three kernels on the H200). ``dtype``: of every tensor (``"float16"``: half storage)."""
    ins = [placeholder(g.tensors[t].shape, dtype, name=f"in{i}") for i, t in enumerate(node.inputs)]
    a = node.attrs
    out: Tensor
    if node.op == "fused":  # the steps' stages, inlined into the last one's: one kernel
        outs: list[Tensor] = []
        for op, refs, attrs in a["steps"]:
            args = [ins[i] if kind == "in" else outs[i] for kind, i in refs]
            outs.append(_compute(op, attrs, args, dtype, node.name))
        out = outs[-1]
    elif node.op == "layout_transform":  # NCHW <-> NHWC: a transpose of memory order
        N, C, H, W = g.tensors[node.inputs[0]].shape
        nhwc_in = a["src"] == "NHWC"
        x = placeholder((N, H, W, C) if nhwc_in else (N, C, H, W), dtype, name="in0")
        ins = [x]
        if nhwc_in:
            out = transpose(x, (0, 3, 1, 2), name="to_nchw")
        else:
            out = transpose(x, (0, 2, 3, 1), name="to_nhwc")
    else:
        out = _compute(node.op, a, ins, dtype, node.name)
    s = create_schedule(out.op)
    if node.op == "layout_transform":
        _schedule_transpose(s, out, to_nchw=nhwc_in)
        return s, [*ins, out]
    rows = gpu and ROW_GROUPS
    kind, a = (a["steps"][-1][0], a["steps"][-1][2]) if node.op == "fused" else (node.op, a)
    if kind in ("reduce", "softmax", "layer_norm"):  # a fused tree's steps: inlined
        inline_injective(s, out)
    if kind == "reduce" and rows and schedule_row_groups(s, out, []):
        return s, [*ins, out]
    if kind in ("softmax", "layer_norm"):  # each reduction a kernel, a work-item a row
        stages = [t for t in _stages(out) if t.op.reduce_axis]
        for t in _stages(out):
            if t.name.endswith("_exp"):
                s[t].compute_inline()
        ndim = len(out.shape)
        trailing = kind == "layer_norm" or a["axis"] % ndim == ndim - 1
        if rows and trailing and schedule_row_groups(s, out, stages):  # a work-group a row
            return s, [*ins, out]
        for t in stages:
            schedule_injective(Config({}), s, t)
    schedule_injective(Config({}), s, out)
    return s, [*ins, out]


def _compute(op: str, a: dict[str, Any], ins: list[Tensor], dtype: str, name: str) -> Tensor:
    """The output of operator ``op`` (attributes ``a``) on the tensors ``ins``: its compute
    stages, unscheduled (node ``name``'s, for errors)."""
    out: Tensor
    if op in BINARY:
        out = BINARY[op](ins[0], ins[1])
    elif op in nn.COMPARISONS:
        out = nn.compare(ins[0], ins[1], nn.COMPARISONS[op], op)
    elif op in nn.LOGIC:
        out = nn.logical(ins[0], ins[1], op, op)
    elif op == "where":
        out = nn.where(ins[0], ins[1], ins[2])
    elif op == "take":
        out = nn.take(ins[0], ins[1], a["axis"])
    elif op == "layer_norm":
        bias = ins[2] if len(ins) > 2 else None
        out = nn.layer_norm(ins[0], ins[1], bias, a["axis"], a["epsilon"])
    elif op == "mod":
        out = nn.mod(ins[0], ins[1], a["fmod"])
    elif op in UNARY:
        fn, attrs = UNARY[op]
        out = fn(ins[0], *(a[k] for k in attrs))
    elif op == "clip":
        out = nn.clip(ins[0], a["min"], a["max"])
    elif op == "reshape":
        out = reshape(ins[0], a["shape"])
    elif op == "flatten":
        out = flatten(ins[0], a["axis"])
    elif op == "concat":
        out = concat(ins, a["axis"])
    elif op == "transpose":
        out = transpose(ins[0], a["perm"])
    elif op == "slice":
        plan = slice_plan(
            tuple(int(d) for d in ins[0].shape), a["starts"], a["ends"], a["axes"], a["steps"]
        )
        begin, steps, shape = ([p[k] for p in plan] for k in range(3))
        out = strided_slice(ins[0], begin, steps, shape)
    elif op == "pad":
        p, rank = a["pads"], len(a["pads"]) // 2
        out = pad(ins[0], list(p[:rank]), list(p[rank:]), a["value"], "pad", a["mode"], True)
    elif op == "resize":
        scales = [Fraction(p, q) for p, q in a["scales"]]
        out = resize(ins[0], a["sizes"], scales, a["mode"], a["coord"], a["rounding"],
                     cubic_a=a["cubic_a"], exclude_outside=a["exclude_outside"])  # fmt: skip
    elif op == "reduce":
        out = reduce(ins[0], a["kind"], a["axes"], a["keepdims"])
    elif op == "scale_shift":
        x, sc, sh = ins
        out = compute(x.shape, lambda *i: x[i] * sc[i[1]] + sh[i[1]], name="scale_shift")
    elif op == "batch_norm":  # one left unfolded (passes.fold_batch_norm not run)
        x, gamma, beta, mean, var = ins
        eps = const(float(a["epsilon"]), dtype)
        out = compute(
            x.shape,
            lambda *i: (x[i] - mean[i[1]]) * (gamma[i[1]] / I.sqrt(var[i[1]] + eps)) + beta[i[1]],
            name="batch_norm",
        )
    elif op == "softmax":
        out = nn.softmax(ins[0], a["axis"])
    else:
        raise GraphError(f"node '{name}': no kernel for operator '{op}'")
    return out


def _schedule_transpose(s: Schedule, out: Tensor, to_nchw: bool) -> None:
    """A layout transform's kernel: each work-item reads a vector along the input's last
    axis (the channels of an NHWC input, a row of an NCHW one) and stores its lanes one by
    one, where a vector width divides that axis; else one element a work-item."""
    axes = s[out].op.axis
    # loop order with the input's contiguous axis last: (n, h, w, c) or (n, h, c, w)
    perm = (0, 2, 3, 1) if to_nchw else (0, 1, 3, 2)
    order = [axes[i] for i in perm]
    inner = order[-1]
    lanes = next((v for v in (16, 8, 4) if int(out.shape[perm[-1]]) % v == 0), 1)
    s[out].reorder(*order)
    if lanes > 1:
        outer, lane = s[out].split(inner, lanes)
        s[out].vectorize(lane)
        flat = s[out].fuse(*order[:-1], outer)
    else:
        flat = s[out].fuse(*order)
    bx, tx = s[out].split(flat, 64)
    s[out].bind(bx, thread_axis("blockIdx.x"))
    s[out].bind(tx, thread_axis("threadIdx.x"))


def _stages(out: Tensor) -> list[Tensor]:
    seen: dict[str, Tensor] = {}
    todo = [out]
    while todo:
        t = todo.pop()
        if t.name not in seen and hasattr(t.op, "body"):
            seen[t.name] = t
            todo += list(t.op.input_tensors)
    return list(seen.values())


def extract_tasks(g: Graph, gpu: bool, records: Sequence[Record] = ()) -> list[tuple[Task, int]]:
    """The distinct tunable tasks of an optimized graph (conv2d, depthwise and grouped conv2d,
    dense, ungrouped conv3d), each with how many nodes share it, in first-use order."""
    found: dict[str, tuple[Task, int]] = {}
    for node in g.topo_nodes():
        task = node_task(g, node, gpu, records)
        if task is None or task.kind not in TUNABLE:
            continue
        k = task.key()
        found[k] = (task, found[k][1] + 1) if k in found else (task, 1)
    return list(found.values())
