"""A model as torch's dynamo exporter writes it (opset 18): torchvision's VisionTransformer,
shrunk (32x32 images, 8x8 patches, 2 layers, 2 heads, width 32), exported on the GPU host with
torch 2.11 (``data/vit_small_dynamo.onnx``, its input ``data/vit_small_x.npy``). It has what
the hand-built models of the other ONNX tests only imitate: Reshape with ``allowzero=1``,
LayerNormalization, Erf GELU, attention through batched MatMul, the class token gathered.
torchvision initialises some of its parameters to zeros (the classifier's weight among them,
which makes every output 0): those are made random first, as any untrained model would be."""

from __future__ import annotations

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import numpy_helper  # noqa: E402

from tensorsched.frontend import from_onnx  # noqa: E402
from tensorsched.graph import build, run_reference  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
TOL = 1e-5


@pytest.fixture(scope="module")
def vit():
    model = onnx.load(os.path.join(DATA, "vit_small_dynamo.onnx"))
    rng = np.random.default_rng(0)
    for t in model.graph.initializer:
        a = numpy_helper.to_array(t)
        if a.dtype == np.float32 and not a.any():
            noise = (rng.standard_normal(a.shape) * 0.1).astype(np.float32)
            t.CopyFrom(numpy_helper.from_array(noise, t.name))
    x = np.load(os.path.join(DATA, "vit_small_x.npy"))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    assert np.abs(ref).max() > 0.1  # a meaningful comparison
    return model, x, ref


def rel_err(out, ref):
    return float(np.abs(np.asarray(out).reshape(ref.shape) - ref).max() / np.abs(ref).max())


def test_a_dynamo_exported_vit_imports_and_matches_onnxruntime(vit):
    model, x, ref = vit
    g = from_onnx(model)
    ops = g.op_counts()
    assert ops["batch_matmul"] == 4 and ops["layer_norm"] > 0  # attention, layer norms
    assert rel_err(run_reference(g, x)[g.outputs[0]], ref) < TOL


@pytest.mark.opencl
def test_a_dynamo_exported_vit_on_the_device(vit, device):
    model, x, ref = vit
    assert rel_err(build(from_onnx(model), device=device)(x), ref) < TOL
