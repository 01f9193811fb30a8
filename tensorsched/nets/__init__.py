"""Built-in networks: ``vgg16()``, ``resnet18()``, ``mobilenet_v1()``, as ``Graph``s in NCHW
with batch 1 and 224x224 images by default, and seeded random weights (nothing downloaded).

Weights are He-initialised (normal, standard deviation ``sqrt(2 / fan_in)``) and each batch
norm has random statistics near identity, so activations stay finite through the network.
``image_size`` makes a smaller network of the same layers (for tests); each graph writes itself
out as ONNX with ``tensorsched.frontend.to_onnx(graph, path)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..graph.graph import Graph, GraphError


class _Builder:
    def __init__(self, name: str, seed: int, batch: int, image_size: int) -> None:
        if image_size < 32 or batch < 1:
            raise GraphError(
                f"{name}: image_size {image_size}, batch {batch}: the image side must be at "
                "least 32 (five stride-2 stages) and the batch at least 1"
            )
        self.g = Graph(name)
        self.rng = np.random.default_rng(seed)
        self.x = self.g.input("data", (batch, 3, image_size, image_size))

    def weight(self, name: str, shape: tuple[int, ...], fan_in: int) -> str:
        w = self.rng.standard_normal(shape, dtype=np.float32) * np.float32(np.sqrt(2.0 / fan_in))
        return self.g.constant(name, w)

    def conv_bn(
        self, x: str, name: str, co: int, k: int, stride: int = 1, groups: int = 1,
        act: str | None = "relu",
    ) -> str:  # fmt: skip
        ci = self.g.tensors[x].shape[1]
        w = self.weight(f"{name}.weight", (co, ci // groups, k, k), ci // groups * k * k)
        y = self.g.conv2d(x, w, None, stride, k // 2, groups, name=name)
        c = self.g.constant
        scale = c(f"{name}.bn.scale", self.rng.uniform(0.8, 1.2, co))
        bias = c(f"{name}.bn.bias", self.rng.uniform(-0.1, 0.1, co))
        mean = c(f"{name}.bn.mean", self.rng.uniform(-0.1, 0.1, co))
        var = c(f"{name}.bn.var", self.rng.uniform(0.8, 1.2, co))
        y = self.g.batch_norm(y, scale, bias, mean, var, 1e-5, name=f"{name}.bn")
        if act == "relu":
            y = self.g.relu(y, name=f"{name}.relu")
        elif act == "relu6":
            y = self.g.clip(y, 0.0, 6.0, name=f"{name}.relu6")
        return y

    def classifier(self, x: str, classes: int, name: str = "fc") -> str:
        k = self.g.tensors[x].shape[1]
        w = self.weight(f"{name}.weight", (classes, k), k)
        b = self.g.constant(f"{name}.bias", np.zeros(classes, np.float32))
        return self.g.dense(x, w, b, name=name)


def vgg16(seed: int = 0, batch: int = 1, image_size: int = 224, classes: int = 1000) -> Graph:
    """VGG-16 (configuration D): thirteen 3x3 convs with ReLU in five blocks each ended by a
    2x2 max pool, then three dense layers (4096, 4096, ``classes``) and a softmax."""
    b = _Builder("vgg16", seed, batch, image_size)
    g, x = b.g, b.x
    for i, (co, n) in enumerate(((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))):
        for j in range(n):
            ci = g.tensors[x].shape[1]
            name = f"conv{i + 1}_{j + 1}"
            w = b.weight(f"{name}.weight", (co, ci, 3, 3), ci * 9)
            bias = g.constant(f"{name}.bias", np.zeros(co, np.float32))
            x = g.relu(g.conv2d(x, w, bias, 1, 1, name=name), name=f"{name}.relu")
        x = g.max_pool2d(x, 2, 2, name=f"pool{i + 1}")
    x = g.flatten(x, name="flatten")
    for i, units in enumerate((4096, 4096)):
        x = g.relu(b.classifier(x, units, f"fc{i + 6}"), name=f"fc{i + 6}.relu")
    g.output(g.softmax(b.classifier(x, classes, "fc8"), name="prob"))
    return g


def resnet18(seed: int = 0, batch: int = 1, image_size: int = 224, classes: int = 1000) -> Graph:
    """ResNet-18: a 7x7 stride-2 conv and a 3x3 stride-2 max pool, four stages of two basic
    blocks (64, 128, 256, 512 channels; a 1x1 stride-2 projection where the shape changes),
    global average pooling, a dense layer and a softmax. Every conv is followed by a batch
    norm."""
    b = _Builder("resnet18", seed, batch, image_size)
    g = b.g
    x = b.conv_bn(b.x, "conv1", 64, 7, 2)
    x = g.max_pool2d(x, 3, 2, 1, name="pool1")
    for stage, co in enumerate((64, 128, 256, 512)):
        for block in range(2):
            name = f"layer{stage + 1}.{block}"
            stride = 2 if stage > 0 and block == 0 else 1
            y = b.conv_bn(x, f"{name}.conv1", co, 3, stride)
            y = b.conv_bn(y, f"{name}.conv2", co, 3, 1, act=None)
            if stride != 1 or g.tensors[x].shape[1] != co:
                x = b.conv_bn(x, f"{name}.downsample", co, 1, stride, act=None)
            x = g.relu(g.add(y, x, name=f"{name}.add"), name=f"{name}.relu")
    x = g.flatten(g.global_avg_pool2d(x, name="avgpool"), name="flatten")
    g.output(g.softmax(b.classifier(x, classes), name="prob"))
    return g


def mobilenet_v1(
    seed: int = 0, batch: int = 1, image_size: int = 224, classes: int = 1000
) -> Graph:
    """MobileNet-v1 (width 1.0): a 3x3 stride-2 conv, thirteen depthwise-separable blocks (a
    3x3 depthwise conv, then a 1x1 conv, each with batch norm and ReLU6), global average
    pooling, a dense layer and a softmax."""
    b = _Builder("mobilenet_v1", seed, batch, image_size)
    g = b.g
    x = b.conv_bn(b.x, "conv0", 32, 3, 2, act="relu6")
    blocks = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)]
    blocks += [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    for i, (co, stride) in enumerate(blocks):
        c = g.tensors[x].shape[1]
        x = b.conv_bn(x, f"block{i + 1}.dw", c, 3, stride, groups=c, act="relu6")
        x = b.conv_bn(x, f"block{i + 1}.pw", co, 1, 1, act="relu6")
    x = g.flatten(g.global_avg_pool2d(x, name="avgpool"), name="flatten")
    g.output(g.softmax(b.classifier(x, classes), name="prob"))
    return g


NETS: dict[str, Callable[..., Graph]] = {
    "vgg16": vgg16,
    "resnet18": resnet18,
    "mobilenet_v1": mobilenet_v1,
}

__all__ = ["vgg16", "resnet18", "mobilenet_v1", "NETS"]
