"""The graph passes, as one ordered list of named passes (like ``passes/pipeline.py``'s for
loop IR). Each pass takes a graph and returns a new one (the input is never changed); what a
pass requires and guarantees is in its docstring. ``optimize`` runs them in order.

``PIPELINE``:
1. ``fold_constants``  -- a node whose inputs are all constants becomes a constant
2. ``fold_batch_norm`` -- a batch norm after a conv goes into the conv's weights and bias; any
   other one becomes a per-channel ``scale_shift``
3. ``fuse_epilogues``  -- bias, residual add, relu and relu6 after a conv (2-d or 3-d), dense or
   pool join it
4. ``plan_memory``     -- intermediate tensors share buffers by liveness (``Graph.plan``)

``for_device(g, gpu)`` runs what depends on the device, after them: on a CPU device,
``channels_last`` (then ``plan_memory`` again).

Weight pre-packing happens at build time (``executor.build``): each conv's weight-only
kernels (seed 003's ``kernel_vec``, im2col's ``kernel_mat``) run once there and never per
inference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx
import numpy as np

from .graph import FUSED_LAST, FUSED_STEPS, INJECTIVE, Graph, Node, broadcasts_to
from .reference import eval_node


@dataclass(frozen=True)
class GraphPass:
    name: str
    run: Callable[[Graph], Graph]


@dataclass(frozen=True)
class MemoryPlan:
    """``slot[tensor]``: the buffer an intermediate tensor lives in; ``sizes[slot]``: its bytes.
    Tensors that alias another (reshape, flatten) share its slot. Inputs, outputs and
    constants have their own buffers and no slot."""

    slot: dict[str, int]
    sizes: list[int]
    alias: dict[str, str]  # a reshape/flatten output -> the tensor whose buffer it is

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes)


VIEWS = ("reshape", "flatten")  # ops that only rename a contiguous buffer
# TVM's "out-elementwise-fusable" operators: an elementwise consumer joins their kernel
FUSING = ("conv2d", "conv3d", "dense", "max_pool2d", "avg_pool2d", "global_avg_pool2d",
          "max_pool3d", "avg_pool3d")  # fmt: skip
CONVS = ("conv2d", "conv3d")  # a batch norm after one folds into its weights


def fold_constants(g: Graph) -> Graph:
    """Requires: a graph. Guarantees: no node has only constant inputs (it was evaluated with
    numpy and its output is a constant); nodes no output needs are gone."""
    g = g.copy()
    for node in g.topo_nodes():
        if node.inputs and all(t in g.constants for t in node.inputs):
            value = eval_node(node, [g.constants[t] for t in node.inputs])
            g.remove_node(node.name)
            g.constants[node.output] = value
    g.prune()
    return g


def _single_use(g: Graph, tensor: str) -> Node | None:
    """The one node reading ``tensor``, when exactly one does (once) and it is no output."""
    users = g.consumers(tensor)
    if len(users) != 1 or tensor in g.outputs or users[0].inputs.count(tensor) != 1:
        return None
    return users[0]


def _bias_to_epilogue(g: Graph, node: Node) -> None:
    """Make a conv/dense node's own bias input its first epilogue step."""
    n_extra = sum(1 for s in node.epilogue if s[0] in ("bias", "add"))
    if len(node.inputs) - 2 > n_extra:
        node.attrs["epilogue"] = (("bias",),) + node.epilogue


def fold_batch_norm(g: Graph) -> Graph:
    """Requires: constants folded. Guarantees: no ``batch_norm`` node is left. One whose
    input comes from a conv2d or conv3d (read by nothing else, with constant weights and no
    epilogue) is folded into that conv: ``w' = w * s``, ``b' = (b - mean) * s + beta`` with
    ``s = gamma / sqrt(var + eps)``; any other becomes ``scale_shift(x, s, beta - mean * s)``."""
    g = g.copy()
    for bn in g.topo_nodes():
        if bn.op != "batch_norm" or not all(t in g.constants for t in bn.inputs[1:]):
            continue
        gamma, beta, mean, var = (g.constants[t].astype(np.float64) for t in bn.inputs[1:])
        s = gamma / np.sqrt(var + bn.attrs["epsilon"])
        shift = beta - mean * s
        conv = g.nodes.get(g.producer.get(bn.inputs[0], ""))
        if (
            conv is not None
            and conv.op in CONVS
            and not conv.epilogue
            and conv.inputs[1] in g.constants
            and all(t in g.constants for t in conv.inputs[2:])
            and _single_use(g, conv.output) is bn
        ):
            w = g.constants[conv.inputs[1]].astype(np.float64)
            b = g.constants[conv.inputs[2]] if len(conv.inputs) > 2 else np.zeros(len(s))
            per_out = s.reshape((-1,) + (1,) * (w.ndim - 1))  # along the output channels
            w_name = g.constant(g.fresh_name(conv.inputs[1] + "_bn"), w * per_out)
            b_name = g.constant(g.fresh_name(conv.name + "_bias_bn"), b * s + shift)
            g.remove_node(bn.name)
            g.tensors.pop(conv.output)
            conv.inputs = [conv.inputs[0], w_name, b_name]
            conv.output = bn.output
            g.replace_node(conv)
        else:
            s_name = g.constant(g.fresh_name(bn.name + "_scale"), s)
            t_name = g.constant(g.fresh_name(bn.name + "_shift"), shift)
            node = Node(bn.name, "scale_shift", [bn.inputs[0], s_name, t_name], bn.output)
            g.replace_node(node)
    g.prune()
    return g


def fuse_layer_norm(g: Graph) -> Graph:
    """Requires: constants folded. Guarantees: a layer norm written out as its steps, as
    exporters before ONNX's LayerNormalization write it (``mean`` over trailing axes, ``sub``,
    ``power`` 2 or ``mul`` by itself, ``mean``, ``add`` of a constant epsilon, ``sqrt``,
    ``div``, then a ``mul`` by a constant scale and an ``add`` of a constant bias or not), is
    one ``layer_norm`` node: three kernels in place of nine. Only where no step's result is
    read elsewhere or is an output."""
    g = g.copy()
    for node in g.topo_nodes():
        if node.name not in g.nodes or node.op != "div":
            continue
        found = _layer_norm_steps(g, node)
        if found is None:
            continue
        x, axis, eps = found
        last, scale, bias = node, None, None
        mul = _single_use(g, node.output)
        if mul is not None and mul.op == "mul" and _affine(g, mul, node.output, x, axis):
            last, scale = mul, next(t for t in mul.inputs if t != node.output)
            add = _single_use(g, mul.output)
            if add is not None and add.op == "add" and _affine(g, add, mul.output, x, axis):
                last, bias = add, next(t for t in add.inputs if t != mul.output)
        if scale is None:
            ones = np.ones(g.tensors[x].shape[axis:], np.float32)
            scale = g.constant(g.fresh_name(node.name + "_scale"), ones)
        ins = [x, scale] + ([bias] if bias is not None else [])
        attrs = {"axis": axis, "epsilon": eps}
        g.replace_node(Node(last.name, "layer_norm", ins, last.output, attrs))
    g.prune()
    return g


def _layer_norm_steps(g: Graph, div: Node) -> tuple[str, int, float] | None:
    """``(x, axis, epsilon)`` where ``div`` is ``(x - mean(x)) / sqrt(mean((x - mean(x))^2) +
    epsilon)`` over the axes from ``axis`` to the last, each step read only by the next."""

    def made(t: str, op: str) -> Node | None:
        n = g.nodes.get(g.producer.get(t, ""))
        return n if n is not None and n.op == op else None

    d, std = div.inputs
    sqrt = made(std, "sqrt")
    plus = made(sqrt.inputs[0], "add") if sqrt is not None else None
    sub = made(d, "sub")
    if plus is None or sub is None or _single_use(g, std) is not div:
        return None
    var_t, eps_t = plus.inputs if plus.inputs[1] in g.constants else plus.inputs[::-1]
    var, (x, mu_t) = made(var_t, "reduce"), sub.inputs
    mean = made(mu_t, "reduce")
    if var is None or mean is None or eps_t not in g.constants or g.constants[eps_t].size != 1:
        return None
    square = g.nodes.get(g.producer.get(var.inputs[0], ""))
    if square is None or not (
        (square.op == "power" and square.attrs.get("exponent") == 2 and square.inputs == [d])
        or (square.op == "mul" and square.inputs == [d, d])
    ):
        return None
    rank = len(g.tensors[x].shape)
    axes = tuple(mean.attrs.get("axes", ()))
    if not axes or axes != tuple(range(axes[0], rank)) or mean.inputs != [x]:
        return None
    for r in (mean, var):
        if (
            r.attrs.get("kind") != "mean"
            or tuple(r.attrs["axes"]) != axes
            or not r.attrs["keepdims"]
        ):
            return None
    readers = {n.name for n in g.consumers(d)}
    if readers != {square.name, div.name} or d in g.outputs:
        return None
    for t, reader in ((mu_t, sub), (var.inputs[0], var), (var_t, plus), (plus.output, sqrt)):
        if _single_use(g, t) is not reader:
            return None
    eps = float(g.constants[eps_t].reshape(-1)[0])
    return (x, axes[0], eps) if 0 <= eps < 1 else None


def _affine(g: Graph, node: Node, t: str, x: str, axis: int) -> bool:
    """``node`` combines ``t`` with a constant that broadcasts over the axes from ``axis`` of
    ``x`` (a layer norm's scale or bias)."""
    other = [u for u in node.inputs if u != t]
    if len(other) != 1 or other[0] not in g.constants:
        return False
    return broadcasts_to(g.constants[other[0]].shape, g.tensors[x].shape[axis:])


def _channel_shapes(shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """The shapes of a constant added along the channels of an output of ``shape``."""
    if len(shape) == 5:  # a 3-d conv's or pool's: only the (1, C, 1, 1, 1) broadcasts so
        return ((1, shape[1], 1, 1, 1),)
    return ((shape[1],), (1, shape[1], 1, 1), (1, shape[1]))


def fuse_epilogues(g: Graph) -> Graph:
    """Requires: batch norms folded. Guarantees: TVM's fusion rule for these operators: an
    elementwise consumer (bias, relu, relu6 -- a clip to 0..6 --, a residual add of the
    output's own shape) of a conv2d, dense or pooling node whose output nothing else reads is
    part of that node's ``epilogue`` (each kind of step at most once); a conv or dense node's
    bias input is its first epilogue step."""
    g = g.copy()
    for node in g.topo_nodes():
        if node.op not in FUSING or node.name not in g.nodes:
            continue
        if node.op in ("conv2d", "conv3d", "dense"):
            _bias_to_epilogue(g, node)
        while True:
            user = _single_use(g, node.output)
            if user is None:
                break
            if node.op == "dense" and user.op in VIEWS:  # a step behind a reshape
                if not _fuse_behind_view(g, node, user):
                    break
                continue
            found = _epilogue_step(g, node, user, node.output)
            if found is None or found[0][0] in {s[0] for s in node.epilogue}:
                break  # each step kind at most once (the kernels' epilogue inputs are named)
            step, extra = found
            g.remove_node(user.name)
            g.tensors.pop(node.output)
            node.attrs["epilogue"] = node.epilogue + (step,)
            node.inputs = node.inputs + extra
            node.output = user.output
            g.replace_node(node)
    g.prune()
    return g


def _epilogue_step(g: Graph, node: Node, user: Node, read: str) -> tuple[tuple, list[str]] | None:
    """``(step, extra inputs)`` where ``user``, reading ``read`` (``node``'s output or a view
    of it), is an epilogue step of ``node``: ReLU, ReLU6 (a clip to 0..6, the one clip the
    kernels fuse), a residual add of ``read``'s shape (read through a view of the node's
    shape where ``read`` is a view) or the add of a constant bias along the node's channels
    (axis 1; a dense node's outputs, the view's last axis, behind a view)."""
    if user.op == "relu":
        return ("relu",), []
    if user.op == "clip" and (user.attrs["min"], user.attrs["max"]) == (0.0, 6.0):
        return ("clip", 0.0, 6.0), []
    if user.op != "add":
        return None
    other = user.inputs[1] if user.inputs[0] == read else user.inputs[0]
    own = g.tensors[node.output].shape
    if g.tensors[other].shape == g.tensors[read].shape:
        if read == node.output:
            return ("add",), [other]
        return ("add",), [g.reshape(other, own, name=g.fresh_name(f"{other}_as_{node.name}"))]
    const = g.constants.get(other)
    if const is None:
        return None
    if read == node.output:
        bias = const.size == own[1] and const.shape in _channel_shapes(own)
    else:
        bias = const.size == own[-1] and const.shape[-1] == own[-1]
    if not bias:
        return None
    return ("bias",), [g.constant(g.fresh_name(other + "_vec"), const.reshape(-1))]


def _fuse_behind_view(g: Graph, node: Node, view: Node) -> bool:
    """A dense node's epilogue step read through a view of its output (an exporter's
    ``MatMul`` to ``(rows, 1, outputs)`` then ``Add`` of the bias, ``Relu``, a residual
    ``Add``): the step joins the node and the view moves behind it (``_epilogue_step``).
    False where the view's reader is none of these."""
    user = _single_use(g, view.output)
    shape, own = g.tensors[view.output].shape, g.tensors[node.output].shape
    if user is None or g.tensors[user.output].shape != shape or shape[-1] != own[-1]:
        return False
    found = _epilogue_step(g, node, user, view.output)
    if found is None or found[0][0] in {s[0] for s in node.epilogue}:
        return False
    step, extra = found
    g.remove_node(user.name)
    g.tensors.pop(view.output)
    node.attrs["epilogue"] = node.epilogue + (step,)
    node.inputs = node.inputs + extra
    g.replace_node(node)
    view.output = user.output
    g.replace_node(view)
    return True


def plan_memory(g: Graph) -> Graph:
    """Requires: the final node list. Guarantees: ``g.plan`` (a ``MemoryPlan``): each
    intermediate tensor gets a buffer slot that no tensor live at the same time uses (a
    tensor is live from its node to its last reader, in topological order), the smallest
    free slot that fits, else the largest free one grown, else a new one."""
    g = g.copy()
    order = g.topo_nodes()
    alias: dict[str, str] = {}
    for node in order:
        if node.op in VIEWS:
            src = node.inputs[0]
            alias[node.output] = alias.get(src, src)
    last: dict[str, int] = {}
    for i, node in enumerate(order):
        for t in node.inputs:
            last[alias.get(t, t)] = i
    pinned = set(g.inputs) | set(g.constants) | {alias.get(t, t) for t in g.outputs}
    slot: dict[str, int] = {}
    sizes: list[int] = []
    free: list[int] = []
    for i, node in enumerate(order):
        out = node.output
        if out not in alias and out not in pinned:
            need = g.tensors[out].nbytes
            fits = [s for s in free if sizes[s] >= need]
            if fits:
                s = min(fits, key=lambda s: sizes[s])
            elif free:
                s = max(free, key=lambda s: sizes[s])
                sizes[s] = need
            else:
                s = len(sizes)
                sizes.append(need)
            if s in free:
                free.remove(s)
            slot[out] = s
        for t in {alias.get(t, t) for t in node.inputs} | {alias.get(out, out)}:
            if t in slot and last.get(t, -1) <= i and slot[t] not in free:
                free.append(slot[t])
    for a, src in alias.items():
        if src in slot:
            slot[a] = slot[src]
    g.plan = MemoryPlan(slot, sizes, alias)
    return g


def _channels_last_able(g: Graph, node: Node) -> bool:
    """A conv that has a channels-last template worth running there: depthwise (channel
    vectors, padding read inline) or 1x1 (a GEMM of pixels by output channels)."""
    if node.op != "conv2d":
        return False
    CI = g.tensors[node.inputs[0]].shape[1]
    CO, _, KH, KW = g.tensors[node.inputs[1]].shape
    groups, dil = node.attrs.get("groups", 1), node.attrs.get("dilations", (1, 1))
    if tuple(dil) != (1, 1):
        return False
    if groups == CI and CO % CI == 0:
        return True
    return _plain_conv(node) and KH == KW == 1 and not any(node.attrs.get("pads", (0, 0, 0, 0)))


def _plain_conv(node: Node) -> bool:
    """A conv of task kind ``conv2d`` (one group, square strides, the same pad all round)."""
    (sh, sw), pads = node.attrs.get("strides", (1, 1)), node.attrs.get("pads", (0, 0, 0, 0))
    dil = tuple(node.attrs.get("dilations", (1, 1)))
    return node.attrs.get("groups", 1) == 1 and sh == sw and len(set(pads)) == 1 and dil == (1, 1)


def _depthwise(g: Graph, node: Node) -> bool:
    return node.attrs.get("groups", 1) == g.tensors[node.inputs[0]].shape[1] > 1


def channels_last(g: Graph) -> Graph:
    """Requires: fused epilogues (a CPU device's graph). Guarantees: each connected run of
    depthwise and 1x1 convs that holds a depthwise conv reads and writes its activations
    channels-last (``attrs["data_layout"]`` and ``attrs["layout"]`` ``"NHWC"``, a tensor
    ``<name>_nhwc``); a plain conv that only the run reads writes its output channels-last
    from NCHW data (``data_layout`` ``"NCHW"``); a ``layout_transform`` where the run meets
    other NCHW tensors (its inputs, and outputs that an NCHW node or the network reads). The
    graph's tensors keep their logical NCHW shapes.
    On PoCL (2 cores) MobileNet-v1's depthwise layers need no padded copies then (11 kernels
    fewer) and load a channel vector per tap."""
    if any(n.op == "layout_transform" or "layout" in n.attrs for n in g.nodes.values()):
        return g  # chosen already
    order = g.topo_nodes()
    able = {n.name for n in order if _channels_last_able(g, n)}
    runs = nx.Graph()
    runs.add_nodes_from(able)
    for n in order:
        for t in n.inputs if n.name in able else ():
            if g.producer.get(t) in able:
                runs.add_edge(g.producer[t], n.name)
    chosen = set[str]()
    for run in nx.connected_components(runs):
        if any(_depthwise(g, g.nodes[x]) for x in run):
            chosen |= run
    if not chosen:
        return g
    g = g.copy()
    order = g.topo_nodes()
    # a plain conv whose output only the run reads writes it channels-last itself
    heads = {
        n.name for n in order
        if n.name not in chosen and n.op == "conv2d" and _plain_conv(n)
        and n.output not in g.outputs and g.consumers(n.output)
        and all(c.name in chosen for c in g.consumers(n.output))
    }  # fmt: skip
    nhwc: dict[str, str] = {}  # an NCHW tensor -> its channels-last copy
    for n in order:
        if n.name not in chosen and n.name not in heads:
            continue
        inputs = list(n.inputs)
        for i, t in enumerate(inputs):
            if i == 0 and n.name in heads:
                continue  # a head reads its data NCHW
            if t not in nhwc:
                if t in g.constants or len(g.tensors[t].shape) != 4:
                    continue
                # made by an NCHW node, or a network input
                nhwc[t] = _transform(g, t, "NCHW", "NHWC", g.fresh_name(f"{t}_nhwc"))
            inputs[i] = nhwc[t]
        out = n.output
        new_out = g.fresh_name(f"{out}_nhwc")
        g.tensors[new_out] = g.tensors[out]
        del g.producer[out]
        data = "NCHW" if n.name in heads else "NHWC"
        attrs = {**n.attrs, "data_layout": data, "layout": "NHWC"}
        g.replace_node(Node(n.name, n.op, inputs, new_out, attrs))
        nhwc[out] = new_out
        del g.tensors[out]  # back under this name where NCHW readers need it
        if out in g.outputs or any(c.name not in chosen for c in g.consumers(out)):
            _transform(g, new_out, "NHWC", "NCHW", out)
    return plan_memory(g)


def fuse_injective(g: Graph) -> Graph:
    """Requires: epilogues fused. Guarantees: each tree of injective nodes (``INJECTIVE``:
    elementwise math and masks, views, transposes, slices, concatenation, padding) whose inner
    results are read once, by the next node of the tree alone, and are no output is one ``fused``
    node, one kernel (TVM's fusion of injective operators): a transformer block's head
    split (reshape, transpose, slice), its attention scale and mask, an activation written as
    several nodes (GELU's div, erf, add, mul, mul). A layer norm or a reduction
    (``FUSED_LAST``) may end a tree, its kernel reading the steps as its data (a residual add
    before a layer norm). A tree of views alone stays views (no kernel). ``unfuse`` undoes
    it."""
    order = g.topo_nodes()
    able = {n.name for n in order if n.op in INJECTIVE and not n.epilogue}
    last = {n.name for n in order if n.op in FUSED_LAST}  # end a tree, join none
    root: dict[str, str] = {n: n for n in last}
    size: dict[str, int] = dict.fromkeys(last, 1)
    for n in reversed(order):
        if n.name not in able:
            continue
        readers = g.consumers(n.output)
        # read once by one node: an inlined result read twice would be computed twice, and
        # a chain of squares (x * x, then that times itself, ...) 2 ** n times
        joins = n.output not in g.outputs and len(readers) == 1
        joins = joins and readers[0].inputs.count(n.output) == 1
        joins = joins and (readers[0].name in able or readers[0].name in last)
        joins = joins and size[root[readers[0].name]] < FUSED_STEPS
        root[n.name] = root[readers[0].name] if joins else n.name
        size[root[n.name]] = size.get(root[n.name], 0) + 1
    groups: dict[str, list[Node]] = {}
    for n in order:
        if n.name in root:
            groups.setdefault(root[n.name], []).append(n)
    todo = [
        members for members in groups.values()
        if len(members) > 1 and any(m.op not in VIEWS for m in members)
    ]  # fmt: skip
    if not todo:
        return g
    g = g.copy()
    for members in todo:
        _fuse(g, members)
    g.prune()
    return g


def _fuse(g: Graph, members: list[Node]) -> None:
    """Replace ``members`` (a tree in topological order, the last its root) with one
    ``fused`` node of the root's name and output."""
    made = {m.output: j for j, m in enumerate(members)}
    inputs: list[str] = []
    steps = []
    for m in members:
        refs = []
        for t in m.inputs:
            if t in made:
                refs.append(("step", made[t]))
            else:
                if t not in inputs:
                    inputs.append(t)
                refs.append(("in", inputs.index(t)))
        steps.append((m.op, tuple(refs), dict(m.attrs)))
    last = members[-1]
    for m in members[:-1]:
        g.remove_node(m.name)
        del g.tensors[m.output]
    g.replace_node(Node(last.name, "fused", inputs, last.output, {"steps": tuple(steps)}))


def unfuse(g: Graph) -> Graph:
    """``g`` with each ``fused`` node written out again as its steps (nodes named
    ``<node>_<k>``, the last one taking the node's name and output)."""
    if not any(n.op == "fused" for n in g.nodes.values()):
        return g
    g = g.copy()
    for node in g.topo_nodes():
        if node.op != "fused":
            continue
        steps = node.attrs["steps"]
        g.remove_node(node.name)
        outs: list[str] = []
        for k, (op, refs, attrs) in enumerate(steps):
            ins = [node.inputs[i] if kind == "in" else outs[i] for kind, i in refs]
            last = k == len(steps) - 1
            name = node.name if last else g.fresh_name(f"{node.name}_{k}")
            out = node.output if last else g.fresh_name(f"{node.output}_{k}")
            if last:
                del g.tensors[node.output]
            outs.append(g.add_node(op, ins, dict(attrs), name=name, output=out))
        for c in g.consumers(node.output):
            g.dag.add_edge(node.name, c.name, tensor=node.output)
    return g


def _transform(g: Graph, t: str, src: str, dst: str, out: str) -> str:
    """Add a ``layout_transform`` of ``t`` writing ``out``; its readers already in the graph
    follow it."""
    name = g.fresh_name(f"{t}_to_{dst.lower()}")
    g.add_node(
        "layout_transform", [t], {"src": src, "dst": dst}, name=name, output=out, internal=True
    )
    for c in g.consumers(out):
        if c.name != name:
            g.dag.add_edge(name, c.name, tensor=out)
    return out


def for_device(g: Graph, gpu: bool) -> Graph:
    """The passes that depend on the device, after ``PIPELINE``: ``channels_last`` on a CPU
    device (where its templates are the fast ones; a GPU keeps NCHW)."""
    return g if gpu else channels_last(g)


PIPELINE: tuple[GraphPass, ...] = (
    GraphPass("fold_constants", fold_constants),  # all-constant nodes become constants
    GraphPass("fold_batch_norm", fold_batch_norm),  # BN into the conv before it
    GraphPass("fuse_layer_norm", fuse_layer_norm),  # a layer norm's steps into one node
    GraphPass("fuse_epilogues", fuse_epilogues),  # bias/add/relu/clip into conv and dense
    GraphPass("fuse_injective", fuse_injective),  # trees of injective nodes: a kernel each
    GraphPass("plan_memory", plan_memory),  # buffers shared by liveness
)


def optimize(g: Graph, passes: tuple[GraphPass, ...] = PIPELINE) -> Graph:
    """Run ``passes`` in order; returns the new graph."""
    for p in passes:
        g = p.run(g)
    return g
