"""The ACL-style baseline network (tensorsched/baselines/acl_net.py): every conv as im2col + the
tuned ACL-style GEMM + col2im with the fused epilogue, depthwise as a plain direct kernel, the
rest as the executor runs it; its output against the float64 numpy reference on a tiny CNN
(each GEMM strategy; bias, residual add, ReLU and ReLU6 epilogues; stride 2, asymmetric pads)
and on MobileNet-v1 at 32x32. Tolerance: max |out - ref| / max |ref| under 1e-5.

The tuning runs on a cut-down search list (the first config of each strategy's list) to stay
fast; the choice of config is the tuner's, tested in test_baselines.py."""

import numpy as np
import pytest

from tensorsched.baselines.acl_net import (
    acl_search_lists,
    build_acl_net,
    conv_gemm_shapes,
    tune_acl_net,
)
from tensorsched.baselines.configs import STRATEGIES
from tensorsched.errors import TensorschedError
from tensorsched.graph import Graph, run_reference
from tensorsched.nets import mobilenet_v1

TOL = 1e-5


def rel_err(out, ref):
    return float(np.max(np.abs(np.asarray(out, np.float64) - ref)) / np.max(np.abs(ref)))


def tiny_cnn() -> Graph:
    """conv+bias+ReLU, a depthwise stride-2 conv with ReLU6, a 1x1 conv with a residual add, a
    conv with asymmetric pads, pooling and a dense layer."""
    rng = np.random.default_rng(5)
    g = Graph("tiny_cnn")
    c = g.constant
    x = g.input("data", (1, 3, 13, 11))
    y = g.relu(g.conv2d(x, c("w1", rng.standard_normal((8, 3, 3, 3))), c("b1", rng.random(8)),
                        pads=1))  # fmt: skip
    d = g.clip(g.conv2d(y, c("dw", rng.standard_normal((8, 1, 3, 3))), None, 2, 1, groups=8))
    p = g.conv2d(d, c("pw", rng.standard_normal((8, 8, 1, 1))))
    z = g.relu(g.add(p, d))
    z = g.conv2d(z, c("w3", rng.standard_normal((6, 8, 3, 2))), strides=(1, 2), pads=(0, 1, 1, 0))
    z = g.flatten(g.global_avg_pool2d(g.max_pool2d(z, 2, 1)))
    g.output(g.dense(z, c("fc", rng.standard_normal((5, 6))), c("fcb", rng.random(5))))
    return g


@pytest.mark.opencl
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_tiny_cnn_matches_numpy(device, strategy, tmp_path):
    g = tiny_cnn()
    assert len(conv_gemm_shapes(g)) == 3  # the depthwise conv is no GEMM
    res = tune_acl_net(g, str(tmp_path), device, configs=1, strategies=[strategy], repeat=1)
    net = build_acl_net(g, res, device)
    x = np.random.default_rng(0).standard_normal((1, 3, 13, 11)).astype(np.float32)
    err = rel_err(net(x), run_reference(g, x)[g.outputs[0]])
    assert err < TOL, err
    kinds = [layer.kernel for layer in net.layers]
    assert sum(k.startswith(f"acl:{strategy}[") for k in kinds) == 3
    assert "acl:depthwise_direct" in kinds
    # epilogues fused: no relu / clip / add layer; the RHS reshape ran once, at build time
    assert not {"relu", "clip", "add"} & {layer.node.op for layer in net.layers}
    if strategy != "native":
        assert all(layer.prepacked == 1 for layer in net.layers if "acl:" in layer.kernel
                   and "depthwise" not in layer.kernel)  # fmt: skip
    names = [ln.name for ln in net.layers[0].launches]
    assert names[0] == "im2col" and names[-1] == "col2im" and "reshape_rhs" not in names
    assert "acl:depthwise_direct" in str(net.profile(x, repeat=1))
    # the results saved in tmp_path serve again, and as a short search list
    again = build_acl_net(g, str(tmp_path), device)
    assert rel_err(again(x), run_reference(g, x)[g.outputs[0]]) < TOL
    assert strategy in acl_search_lists(str(tmp_path))


@pytest.mark.opencl
def test_rhs_as_an_image(device):
    """The H200's winning config (reshaped_rhs_only, RHS exported to an image): each layer
    keeps its reshaped weights as an image, the workspaces shared."""
    if not device.cl_device.image_support:
        pytest.skip("the device has no image support")
    g = tiny_cnn()
    res = tune_acl_net(g, None, device, config_lists={"reshaped_rhs_only": ["8,4,4,2,0,0,1"]},
                       repeat=1)  # fmt: skip
    net = build_acl_net(g, res, device)
    x = np.random.default_rng(1).standard_normal((1, 3, 13, 11)).astype(np.float32)
    assert rel_err(net(x), run_reference(g, x)[g.outputs[0]]) < TOL
    kinds = [layer.kernel for layer in net.layers]
    assert kinds.count("acl:reshaped_rhs_only[8,4,4,2,0,0,1]") == 3


@pytest.mark.opencl
def test_mobilenet_32_matches_numpy(device, tmp_path):
    g = mobilenet_v1(image_size=32, classes=10)
    logits = [n.inputs[0] for n in g.topo_nodes() if n.op == "softmax"][0]
    g.output(logits)
    res = tune_acl_net(g, None, device, configs=1, strategies=["native"], repeat=1)
    net = build_acl_net(g, res, device)
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    ref = run_reference(g, x)
    prob, out_logits = net(x)
    err, err_logits = rel_err(prob, ref[g.outputs[0]]), rel_err(out_logits, ref[logits])
    print(f"MobileNet-v1 32x32 ACL-style on {device.name}: max relative error {err:.2e} "
          f"(softmax), {err_logits:.2e} (logits); tolerance {TOL}")  # fmt: skip
    assert err < TOL and err_logits < TOL
    kinds = [layer.kernel for layer in net.layers]
    assert kinds.count("acl:depthwise_direct") == 13 and kinds.count("acl:native[1,4,4]") == 14


def test_mistakes(tmp_path):
    with pytest.raises(TensorschedError, match="acl_search_list"):
        acl_search_lists(str(tmp_path))
    with pytest.raises(TensorschedError, match="positive count"):
        tune_acl_net(tiny_cnn(), None, configs=0)
