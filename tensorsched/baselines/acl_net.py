"""The ACL-style baseline of a whole network, as seed 003 compares: the same graph, with every
convolution run by the GEMM method (im2col + the tuned ACL-style GEMM + col2im) and every
depthwise convolution by a plain direct kernel; the other operators (pooling, dense, softmax,
grouped convs ...) run as the graph executor runs them.

    results = tune_acl_net(graph, "acl_dir", configs=8)  # the network's GEMM shapes, resumable
    net = build_acl_net(graph, results)                  # a ``graph.Net``: net(x), net.profile(x)

It is the executor's ``Net`` with those layers built here (``graph.build``'s ``custom``): the
same optimized graph (batch norms folded, epilogues fused), the same device buffers shared by
liveness, one queue. A conv layer is ``im2col`` (the M x K matrix, M = OH*OW, K = CI*KH*KW, in
a workspace shared by all conv layers), the GEMM kernels of the tuned strategy and config
(``acl_tuner.best_acl``: the shape's own tuned config, else the nearest tuned shape's) and a
``col2im`` back to NCHW that applies the node's fused epilogue (bias, residual add, ReLU,
ReLU6) on the way, as ACL fuses them into its GEMM's output stage. The weights become the K x
CO matrix and the RHS reshape runs once at build time (ACL's configure step), untimed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import TensorschedError
from ..graph.executor import Launch, Layer, Net, build
from ..graph.graph import Graph, Node
from ..graph.passes import optimize
from ..graph.tasks import epilogue_kinds, workload
from ..runtime.device import Device, resolve_device
from ..runtime.module import DEFAULT_OPTIONS, build_program
from .acl_gemm import AclGemm
from .acl_tuner import AclChoice, AclTuneResults, ConfigList, GemmParam, best_acl, tune_acl
from .configs import STRATEGIES, default_config_path, lhs_layout, load_config_list
from .kernels import conv_source

__all__ = [
    "conv_gemm_shapes",
    "tune_acl_net",
    "build_acl_net",
    "acl_search_lists",
]

# the fused epilogue of a conv / depthwise layer, applied to ``v`` (output channel ``co``,
# flat NCHW output index ``o``); ``e{i}`` is the node's i-th extra input
STEP_CODE = {
    "bias": "v += e{i}[co];",
    "add": "v += e{i}[o];",
    "relu": "v = fmax(v, 0.0f);",
    "relu6": "v = clamp(v, 0.0f, 6.0f);",
}

COL2IM_SOURCE = """\
// col2im of the ACL-style network baseline: the GEMM's output (per image, M = OH*OW rows of
// CO channels) back to NCHW, with the layer's fused epilogue.
__kernel void col2im_epilogue(__global const float* restrict gemm_out,
                              __global float* restrict out{params}, const int M, const int CO)
{{
    const int m = get_global_id(0), co = get_global_id(1), n = get_global_id(2);
    const int o = (n * CO + co) * M + m;
    float v = gemm_out[(n * M + m) * CO + co];
{steps}
    out[o] = v;
}}
"""

DEPTHWISE_SOURCE = """\
// A plain direct depthwise convolution (ACL-style network baseline): one work-item per output
// element, the window read straight from the NCHW image, the fused epilogue at the end.
#define C_IN {CI}
#define C_OUT {CO}
#define H {H}
#define W {W}
#define OH {OH}
#define OW {OW}
#define KH {KH}
#define KW {KW}
#define SH {SH}
#define SW {SW}
#define PT {PT}
#define PL {PL}
__kernel void depthwise_direct(__global const float* restrict in,
                               __global const float* restrict w,
                               __global float* restrict out{params})
{{
    const int ow = get_global_id(0), oh = get_global_id(1), nc = get_global_id(2);
    const int co = nc % C_OUT, n = nc / C_OUT, ci = co / (C_OUT / C_IN);
    const __global float* src = in + (n * C_IN + ci) * H * W;
    const __global float* wk = w + co * KH * KW;
    float v = 0.0f;
    for (int kh = 0; kh < KH; ++kh) {{
        const int ih = oh * SH - PT + kh;
        if (ih < 0 || ih >= H) continue;
        for (int kw = 0; kw < KW; ++kw) {{
            const int iw = ow * SW - PL + kw;
            if (iw >= 0 && iw < W) v += src[ih * W + iw] * wk[kh * KW + kw];
        }}
    }}
    const int o = (nc * OH + oh) * OW + ow;
{steps}
    out[o] = v;
}}
"""


def _epilogue(node: Node) -> tuple[str, str]:
    """``(extra kernel parameters, epilogue statements)`` of a conv node's fused steps."""
    params, steps, i = [], [], 0
    for kind in epilogue_kinds(node):
        if kind not in STEP_CODE:
            raise TensorschedError(
                f"node '{node.name}': the ACL-style baseline has no epilogue step '{kind}'"
            )
        if kind in ("bias", "add"):
            params.append(f",\n    __global const float* restrict e{i}")
            steps.append("    " + STEP_CODE[kind].format(i=i))
            i += 1
        else:
            steps.append("    " + STEP_CODE[kind])
    return "".join(params), "\n".join(steps)


def _dilated(node: Node) -> bool:
    """A dilated conv: the ACL-style kernels here read undilated windows only, so the
    network runs such a layer with tensorsched's own kernel."""
    return tuple(node.attrs.get("dilations", (1, 1))) != (1, 1)


def _is_gemm_conv(g: Graph, node: Node) -> bool:
    return (
        node.op == "conv2d"
        and node.attrs["groups"] == 1
        and node.inputs[1] in g.constants
        and not _dilated(node)
    )


def _is_depthwise(g: Graph, node: Node) -> bool:
    ci = g.tensors[node.inputs[0]].shape[1]
    return (
        node.op == "conv2d"
        and node.attrs["groups"] == ci > 1
        and len(node.inputs) >= 2
        and not _dilated(node)
    )


def _gemm_shape(g: Graph, node: Node) -> GemmParam:
    """The GEMMParam ``(M, N, K, B)`` of a conv node's GEMM method."""
    N, CI, _, _ = g.tensors[node.inputs[0]].shape
    CO, _, KH, KW = g.tensors[node.inputs[1]].shape
    _, _, OH, OW = g.tensors[node.output].shape
    return (OH * OW, CO, CI * KH * KW, N)


def conv_gemm_shapes(graph: Graph) -> list[GemmParam]:
    """The distinct GEMM shapes ``(M, N, K, B)`` of the network's convolutions (groups = 1),
    after the graph passes, in first-use order: what ``tune_acl_net`` tunes."""
    g = graph if graph.plan is not None else optimize(graph)
    out: list[GemmParam] = []
    for node in g.topo_nodes():
        if _is_gemm_conv(g, node) and _gemm_shape(g, node) not in out:
            out.append(_gemm_shape(g, node))
    return out


def acl_search_lists(folder: str) -> dict[str, str]:
    """``{strategy: path}`` of the ``acl_search_list_<strategy>.csv`` files that an earlier
    tuning saved in ``folder`` (every config that was equally fast as the best somewhere):
    a short search list for ``tune_acl_net``."""
    found = {
        s: os.path.join(folder, f"acl_search_list_{s}.csv")
        for s in STRATEGIES
        if os.path.exists(os.path.join(folder, f"acl_search_list_{s}.csv"))
    }
    if not found:
        raise TensorschedError(
            f"{folder} has no acl_search_list_<strategy>.csv; tune there first or give "
            "another folder"
        )
    return found


def tune_acl_net(
    graph: Graph,
    out_dir: str | None = None,
    device: Device | str | None = None,
    configs: int | None = None,
    config_lists: Mapping[str, ConfigList] | None = None,
    strategies: Sequence[str] | None = None,
    repeat: int = 5,
    progress: bool = False,
) -> AclTuneResults:
    """Tune the ACL-style GEMM on the network's conv GEMM shapes (``conv_gemm_shapes``) with
    ACL's tuner (``acl_tuner.tune_acl``: every config of every strategy, checked against
    numpy, then analysed), resuming from and saving into ``out_dir`` when given.
    ``config_lists``: ``{strategy: CSV path or configs}`` (default the shipped search lists);
    ``configs``: only the first that many configs of each list (a quick, weaker baseline)."""
    lists: dict[str, ConfigList] = {}
    for s in strategies or (list(config_lists) if config_lists else STRATEGIES):
        src = (config_lists or {}).get(s, default_config_path(s))
        if configs is not None:
            if configs < 1:
                raise TensorschedError(f"configs must be a positive count, got {configs}")
            loaded = load_config_list(s, src) if isinstance(src, (str, os.PathLike)) else src
            src = list(loaded)[:configs]
        lists[s] = src
    return tune_acl(
        conv_gemm_shapes(graph),
        lists,
        out_dir,
        device,
        repeat,
        strategies=list(lists),
        resume=True,
        progress=progress,
    )


class _AclBuilder:
    """``graph.build``'s ``custom``: the conv and depthwise layers of the baseline."""

    def __init__(self, g: Graph, results: AclTuneResults, dev: Device) -> None:
        import pyopencl as cl

        self.g, self.dev = g, dev
        self.choices: dict[str, AclChoice] = {}
        col = out = lhs = 4
        for node in g.topo_nodes():
            if not _is_gemm_conv(g, node):
                continue
            M, N, K, B = _gemm_shape(g, node)
            choice = best_acl(M, N, K, results, batch=B, device=dev)
            self.choices[node.name] = choice
            col, out = max(col, 4 * M * K * B), max(out, 4 * M * N * B)
            if choice.strategy == "reshaped":
                lhs = max(lhs, 4 * lhs_layout(choice.config, M, K).size * B)
        mf, ctx = cl.mem_flags, dev.context
        # workspaces shared by every conv layer: they run one after another on one queue
        self.work = {
            "A": cl.Buffer(ctx, mf.READ_WRITE, col),
            "C": cl.Buffer(ctx, mf.READ_WRITE, out),
            "Ars": cl.Buffer(ctx, mf.READ_WRITE, lhs),
        }

    def __call__(self, net: Net, node: Node) -> Layer | None:
        if node.name in self.choices:
            return self._conv(net, node, self.choices[node.name])
        if _is_depthwise(self.g, node):
            return self._depthwise(net, node)
        return None

    def _kernel(self, program: Any, name: str, args: Sequence[Any]) -> Any:
        import pyopencl as cl

        kern = cl.Kernel(program, name)
        kern.set_args(*args)
        return kern

    def _conv(self, net: Net, node: Node, choice: AclChoice) -> Layer:
        import pyopencl as cl

        g, dev, i32 = self.g, self.dev, np.int32
        N, CI, IH, IW = g.tensors[node.inputs[0]].shape
        CO, _, KH, KW = g.tensors[node.inputs[1]].shape
        _, _, OH, OW = g.tensors[node.output].shape
        (sh, sw), (pt, pl, _, _) = node.attrs["strides"], node.attrs["pads"]
        M, _, K, _ = _gemm_shape(g, node)
        gemm = AclGemm(
            choice.strategy, choice.config, M, CO, K, batch=N, device=dev, broadcast_b=True
        )
        bufs = gemm._allocate()  # then the shared workspaces in place of its own
        bufs.update({k: v for k, v in self.work.items() if k in bufs})
        weight = g.constants[node.inputs[1]]
        w_mat = np.ascontiguousarray(weight.reshape(CO, -1).T, dtype=np.float32)  # K x CO
        cl.enqueue_copy(dev.queue, bufs["B"], w_mat)
        layer = Layer(node, None, None, _flop(g, node), g.tensors[node.output].shape)
        layer.label = f"acl:{choice.strategy}[{choice.config.label}]"
        layer.buffers = {"gemm": gemm, "weight": w_mat}
        conv = build_program(dev, conv_source(KH, KW, (sh, sw), (pt, pl)), DEFAULT_OPTIONS)
        im2col = self._kernel(
            conv, "im2col", [net.buffer(node.inputs[0]), bufs["A"], *map(i32, (CI, IH, IW, OH, OW))]
        )
        layer.launches.append(Launch("im2col", im2col, (M, CI, N), None))
        for name, grid, args in gemm._plan():
            kern = self._kernel(gemm.program, name, args)
            if name == "reshape_rhs":  # constant weights: once, at build time
                cl.enqueue_nd_range_kernel(dev.queue, kern, grid, None)
                layer.prepacked += 1
            else:
                layer.launches.append(Launch(name, kern, grid, None))
        params, steps = _epilogue(node)
        prog = build_program(dev, COL2IM_SOURCE.format(params=params, steps=steps), DEFAULT_OPTIONS)
        extra = [net.buffer(t) for t in node.inputs[2:]]
        col2im = self._kernel(
            prog,
            "col2im_epilogue",
            [bufs["C"], net.buffer(node.output), *extra, i32(M), i32(CO)],
        )
        layer.launches.append(Launch("col2im", col2im, (M, CO, N), None))
        dev.queue.finish()
        return layer

    def _depthwise(self, net: Net, node: Node) -> Layer:
        g = self.g
        N, CI, IH, IW = g.tensors[node.inputs[0]].shape
        CO, _, KH, KW = g.tensors[node.inputs[1]].shape
        _, _, OH, OW = g.tensors[node.output].shape
        (sh, sw), (pt, pl, _, _) = node.attrs["strides"], node.attrs["pads"]
        params, steps = _epilogue(node)
        source = DEPTHWISE_SOURCE.format(
            CI=CI, CO=CO, H=IH, W=IW, OH=OH, OW=OW, KH=KH, KW=KW, SH=sh, SW=sw, PT=pt, PL=pl,
            params=params, steps=steps,
        )  # fmt: skip
        prog = build_program(self.dev, source, DEFAULT_OPTIONS)
        args = [net.buffer(t) for t in (*node.inputs[:2], node.output, *node.inputs[2:])]
        kern = self._kernel(prog, "depthwise_direct", args)
        layer = Layer(node, None, None, _flop(g, node), g.tensors[node.output].shape)
        layer.label = "acl:depthwise_direct"
        layer.launches.append(Launch("depthwise_direct", kern, (OW, OH, N * CO), None))
        return layer


def _flop(g: Graph, node: Node) -> int:
    w = workload(g, node)
    return w.flop if w is not None else 0


def build_acl_net(
    graph: Graph,
    results: AclTuneResults | str,
    device: Device | str | None = None,
    log: str | None = None,
) -> Net:
    """The ACL-style baseline of ``graph`` (see the module docstring) on ``device``:
    ``results`` are the ACL-style tuner's (``tune_acl_net``'s, or the folder it saved);
    ``log`` the tensorsched tuning log of the layers the executor builds (pooling, dense,
    grouped convs)."""
    if not isinstance(results, AclTuneResults):
        results = AclTuneResults.load(results)
    g = graph if graph.plan is not None else optimize(graph)
    dev = resolve_device(device)
    return build(g, target="opencl", device=dev, log=log, custom=_AclBuilder(g, results, dev))
