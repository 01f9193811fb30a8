"""The graph passes, as one ordered list of named passes (like ``passes/pipeline.py``'s for
loop IR). Each pass takes a graph and returns a new one (the input is never changed); what a
pass requires and guarantees is in its docstring. ``optimize`` runs them in order.

``PIPELINE``:
1. ``fold_constants``  -- a node whose inputs are all constants becomes a constant
2. ``fold_batch_norm`` -- a batch norm after a conv goes into the conv's weights and bias; any
   other one becomes a per-channel ``scale_shift``
3. ``fuse_epilogues``  -- bias, residual add, relu and relu6 after a conv, dense or pool join it
4. ``plan_memory``     -- intermediate tensors share buffers by liveness (``Graph.plan``)

Weight pre-packing happens at build time (``executor.build``): each conv's weight-only
kernels (seed 003's ``kernel_vec``, im2col's ``kernel_mat``) run once there and never per
inference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .graph import Graph, Node
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
FUSING = ("conv2d", "dense", "max_pool2d", "avg_pool2d", "global_avg_pool2d")


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
    input comes from a conv2d (read by nothing else, with constant weights and no epilogue)
    is folded into that conv: ``w' = w * s``, ``b' = (b - mean) * s + beta`` with ``s = gamma /
    sqrt(var + eps)``; any other becomes ``scale_shift(x, s, beta - mean * s)``."""
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
            and conv.op == "conv2d"
            and not conv.epilogue
            and conv.inputs[1] in g.constants
            and all(t in g.constants for t in conv.inputs[2:])
            and _single_use(g, conv.output) is bn
        ):
            w = g.constants[conv.inputs[1]].astype(np.float64)
            b = g.constants[conv.inputs[2]] if len(conv.inputs) > 2 else np.zeros(len(s))
            w_name = g.constant(g.fresh_name(conv.inputs[1] + "_bn"), w * s.reshape(-1, 1, 1, 1))
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
        if node.op in ("conv2d", "dense"):
            _bias_to_epilogue(g, node)
        while True:
            user = _single_use(g, node.output)
            if user is None:
                break
            step: tuple | None = None
            extra: list[str] = []
            if user.op == "relu":
                step = ("relu",)
            elif user.op == "clip" and (user.attrs["min"], user.attrs["max"]) == (0.0, 6.0):
                step = ("clip", 0.0, 6.0)  # ReLU6, the one clip the kernels fuse
            elif user.op == "add":
                other = user.inputs[1] if user.inputs[0] == node.output else user.inputs[0]
                shape = g.tensors[node.output].shape
                if g.tensors[other].shape == shape:
                    step, extra = ("add",), [other]
                elif (
                    other in g.constants
                    and g.constants[other].size == shape[1]
                    and (
                        g.tensors[other].shape in ((shape[1],), (1, shape[1], 1, 1), (1, shape[1]))
                    )
                ):
                    flat = g.constant(g.fresh_name(other + "_vec"), g.constants[other].reshape(-1))
                    step, extra = ("bias",), [flat]
            if step is None or step[0] in {s[0] for s in node.epilogue}:
                break  # each step kind at most once (the kernels' epilogue inputs are named)
            g.remove_node(user.name)
            g.tensors.pop(node.output)
            node.attrs["epilogue"] = node.epilogue + (step,)
            node.inputs = node.inputs + extra
            node.output = user.output
            g.replace_node(node)
    g.prune()
    return g


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


PIPELINE: tuple[GraphPass, ...] = (
    GraphPass("fold_constants", fold_constants),  # all-constant nodes become constants
    GraphPass("fold_batch_norm", fold_batch_norm),  # BN into the conv before it
    GraphPass("fuse_epilogues", fuse_epilogues),  # bias/add/relu/clip into conv and dense
    GraphPass("plan_memory", plan_memory),  # buffers shared by liveness
)


def optimize(g: Graph, passes: tuple[GraphPass, ...] = PIPELINE) -> Graph:
    """Run ``passes`` in order; returns the new graph."""
    for p in passes:
        g = p.run(g)
    return g
