"""The torch eager baseline of a whole network: the same graph, the same weights, run op by op
with ``torch.nn.functional`` (cuDNN on a CUDA device), as the issue's GPU comparison asks.

    model = TorchNet(graph, device="cuda")  # fp32, TF32 off (cuDNN and matmul)
    y = model(x)                             # numpy in, numpy out (input copied in, output back)

The graph is taken after constant folding and batch-norm folding (``passes.fold_constants``,
``passes.fold_batch_norm``) and before epilogue fusion: each conv (its batch norm folded into
its weights and bias), ReLU, ReLU6, residual add, pooling, dense, flatten and softmax is one
torch call, as an ``nn.Module`` of those layers would run them. ``cudnn.benchmark`` is on (cuDNN
picks its fastest algorithm per shape: the stronger baseline). torch is optional: nothing here
imports it until a ``TorchNet`` is made; ``torch_device()`` says whether one can run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import TensorschedError
from ..graph.graph import Graph, Node
from ..graph.passes import PIPELINE, optimize

__all__ = ["TorchNet", "torch_device"]

BN_FOLDED = tuple(p for p in PIPELINE if p.name in ("fold_constants", "fold_batch_norm"))


def torch_device(want: str = "cuda") -> str | None:
    """``want`` when torch is installed and can use it (``"cuda"``: a CUDA GPU), else None."""
    try:
        import torch
    except ImportError:
        return None
    if want.startswith("cuda") and not torch.cuda.is_available():
        return None
    return want


class TorchNet:
    """``graph`` as torch eager calls on ``device`` (``"cuda"`` or ``"cpu"``), fp32, TF32 off."""

    def __init__(self, graph: Graph, device: str = "cuda") -> None:
        try:
            import torch
        except ImportError:
            raise TensorschedError("the torch baseline needs torch: pip install torch") from None
        self.torch = torch
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
        self.device = torch.device(device)
        self.graph = optimize(graph, BN_FOLDED)
        self.weights = {
            name: torch.from_numpy(np.array(value, np.float32)).to(self.device)
            for name, value in self.graph.constants.items()
        }
        self.nodes = self.graph.topo_nodes()
        for node in self.nodes:
            if node.epilogue:
                raise TensorschedError(
                    f"node '{node.name}' has a fused epilogue; give the torch baseline the graph "
                    "before the graph passes"
                )
            if node.op not in OPS:
                raise TensorschedError(f"node '{node.name}': the torch baseline has no '{node.op}'")

    def forward(self, x: Any) -> Any:
        """The outputs (torch tensors on the device) for the input tensor ``x``."""
        g, F = self.graph, self.torch.nn.functional
        values: dict[str, Any] = {**self.weights, g.inputs[0]: x}
        for node in self.nodes:
            args = [values[t] for t in node.inputs]
            values[node.output] = OPS[node.op](self.torch, F, node, args, g)
        return [values[t] for t in g.outputs]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """One inference: ``x`` (numpy) copied to the device, the output copied back."""
        with self.torch.inference_mode():
            t = self.torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
            out = self.forward(t.to(self.device))[0]
            return out.cpu().numpy()


def _conv(torch: Any, F: Any, node: Node, args: list[Any], g: Graph) -> Any:
    x, w, *b = args
    (t, l, bo, r) = node.attrs["pads"]
    pad: Any = (t, l)
    if (t, l) != (bo, r):
        x, pad = F.pad(x, (l, r, t, bo)), 0
    dilation = tuple(node.attrs.get("dilations", (1, 1)))
    return F.conv2d(
        x, w, b[0] if b else None, node.attrs["strides"], pad, dilation, node.attrs["groups"]
    )


def _pool(torch: Any, F: Any, node: Node, args: list[Any], g: Graph) -> Any:
    x, a = args[0], node.attrs
    (t, l, b, r), k, s = a["pads"], a["kernel"], a["strides"]
    ceil = bool(a.get("ceil_mode", False))  # torch's rule for the last window is ONNX's
    if node.op == "max_pool2d":
        if (t, l) != (b, r):
            padded = F.pad(x, (l, r, t, b), value=float("-inf"))
            return F.max_pool2d(padded, k, s, ceil_mode=ceil)
        return F.max_pool2d(x, k, s, (t, l), ceil_mode=ceil)
    if (t, l) != (b, r):
        raise TensorschedError(f"node '{node.name}': asymmetric average pooling pads")
    return F.avg_pool2d(
        x, k, s, (t, l), ceil_mode=ceil, count_include_pad=a.get("count_include_pad", False)
    )


def _scale_shift(torch: Any, F: Any, node: Node, args: list[Any], g: Graph) -> Any:
    x, s, t = args
    shape = (1, -1) + (1,) * (x.dim() - 2)
    return x * s.reshape(shape) + t.reshape(shape)


OPS: dict[str, Callable[..., Any]] = {
    "conv2d": _conv,
    "scale_shift": _scale_shift,
    "relu": lambda torch, F, n, a, g: F.relu(a[0]),
    "clip": lambda torch, F, n, a, g: torch.clamp(a[0], n.attrs["min"], n.attrs["max"]),
    "add": lambda torch, F, n, a, g: a[0] + a[1],
    "max_pool2d": _pool,
    "avg_pool2d": _pool,
    "global_avg_pool2d": lambda torch, F, n, a, g: a[0].mean(dim=(2, 3), keepdim=True),
    "dense": lambda torch, F, n, a, g: F.linear(*a),
    "flatten": lambda torch, F, n, a, g: a[0].reshape(g.tensors[n.output].shape),
    "reshape": lambda torch, F, n, a, g: a[0].reshape(g.tensors[n.output].shape),
    "softmax": lambda torch, F, n, a, g: torch.softmax(a[0], n.attrs["axis"]),
    "concat": lambda torch, F, n, a, g: torch.cat(a, n.attrs["axis"]),
}
