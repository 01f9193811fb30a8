"""torchvision's classification models (and, named ``segmentation.NAME``, its segmentation
models' ``out`` map; named ``video.NAME``, its video models on a 1x3x16x112x112 clip) through
tensorsched's ONNX import, on the GPU host.

Each model (random weights, seed 0, eval mode, batch 1, 224x224 unless named otherwise) is
exported by torch to ONNX (opset 13; TorchScript exporter, else the dynamo one), read with
``ts.frontend.from_onnx``, built with ``ts.graph.build`` on the OpenCL device in use (configs
predicted from the shipped logs) and run on a random image; its output is compared with
torch's (float32 on the GPU, TF32 off) by the largest error relative to the largest output.
Prints, per model, the ONNX operators tensorsched does not convert (all of them, not just the
first), or the first error, or the error and the times (tensorsched's ``Net`` call and torch
eager, medians of 20 after 3 warm-up calls):

    . benchmarks/gpu/gpu_env.sh && python benchmarks/gpu/torchvision_zoo.py [MODEL ...]
"""

import os
import statistics
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.frontend.onnx import SUPPORTED  # noqa: E402

MODELS = [
    "alexnet",
    "vgg11",
    "resnet18",
    "resnet50",
    "resnext50_32x4d",
    "wide_resnet50_2",
    "squeezenet1_0",
    "squeezenet1_1",
    "densenet121",
    "googlenet",
    "inception_v3",
    "mobilenet_v2",
    "mobilenet_v3_small",
    "mobilenet_v3_large",
    "shufflenet_v2_x1_0",
    "mnasnet1_0",
    "efficientnet_b0",
    "regnet_x_400mf",
    "regnet_y_400mf",
    "convnext_tiny",
    "vit_b_16",
    "swin_t",
    "maxvit_t",
]
SIZE = {"inception_v3": 299}


class _Out(torch.nn.Module):
    """A segmentation model's ``out`` map alone (its forward returns a dict)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def make(name):
    """The model ``name`` with random weights, in eval mode."""
    if name.startswith("video."):
        return getattr(torchvision.models.video, name.split(".", 1)[1])(weights=None).eval()
    if name.startswith("segmentation."):
        build = getattr(torchvision.models.segmentation, name.split(".", 1)[1])
        return _Out(build(weights=None, weights_backbone=None, aux_loss=False)).eval()
    inception = name in ("googlenet", "inception_v3")
    kw = {"aux_logits": False, "init_weights": True} if inception else {}
    return getattr(torchvision.models, name)(weights=None, **kw).eval()


def export(model, x, path):
    try:
        torch.onnx.export(model, (x,), path, opset_version=13, dynamo=False)
        return "torchscript"
    except Exception as first:  # noqa: BLE001
        try:
            torch.onnx.export(model, (x,), path, opset_version=18, dynamo=True)
            return f"dynamo (torchscript: {type(first).__name__}: {str(first)[:120]})"
        except Exception as second:  # noqa: BLE001
            raise RuntimeError(f"export failed: {first!s:.200} / {second!s:.200}") from None


def median_ms(call, n=20):
    for _ in range(3):
        call()
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        t.append(time.perf_counter() - t0)
    return statistics.median(t) * 1e3


def one(name, folder):
    torch.manual_seed(0)
    model = make(name)
    with torch.no_grad():  # parameters initialised to zeros (ViT's classifier: every output
        for p in model.parameters():  # 0, an error of 0/0) made random, as trained ones are
            if not p.any():
                p.normal_(0.0, 0.02)
    n = SIZE.get(name, 224)
    x = torch.randn(1, 3, 16, 112, 112) if name.startswith("video.") else torch.randn(1, 3, n, n)
    path = os.path.join(folder, f"{name}.onnx")
    with torch.no_grad():
        how = export(model, x, path)
    ops = {nd.op_type for nd in onnx.load(path, load_external_data=False).graph.node}
    missing = sorted(ops - set(SUPPORTED))
    line = f"{name:<20} export {how[:11]:<11} ops {len(ops):>2}"
    if missing:
        print(f"{line}  UNSUPPORTED: {' '.join(missing)}", flush=True)
        return
    t0 = time.perf_counter()
    # onnx.load reads the weights a large export keeps beside the model (from_onnx(path)
    # reads them too, from the model's folder only; this is how the zoo figures were made)
    g = ts.frontend.from_onnx(onnx.load(path))
    net = ts.graph.build(g)
    build_s = time.perf_counter() - t0
    y = np.asarray(net(x.numpy()))
    cuda = torch.device("cuda")
    model = model.to(cuda)
    xc = x.to(cuda)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with torch.no_grad():
        ref = model(xc).float().cpu().numpy()
        torch_ms = median_ms(lambda: (model(xc), torch.cuda.synchronize()))
    err = float(np.abs(y.reshape(ref.shape) - ref).max() / np.abs(ref).max())
    ts_ms = median_ms(lambda: net(x.numpy()))
    print(
        f"{line}  built in {build_s:5.1f} s  err {err:.1e} {'ok' if err < 1e-3 else 'WRONG'}"
        f"  tensorsched {ts_ms:7.2f} ms  torch {torch_ms:7.2f} ms",
        flush=True,
    )


def print_failure(label, exc, width):
    """One line: what failed, its first ``width`` characters, and where it was raised."""
    where = traceback.extract_tb(exc.__traceback__)[-1]
    print(
        f"{label} FAILED {type(exc).__name__}: {str(exc)[:width]}"
        f"  [{os.path.basename(where.filename)}:{where.lineno}]",
        flush=True,
    )


def main(names):
    print(
        f"# torch {torch.__version__}, torchvision {torchvision.__version__}; "
        f"device {ts.runtime.device.current_device().name}"
    )
    with tempfile.TemporaryDirectory() as folder:
        for name in names or MODELS:
            try:
                one(name, folder)
            except Exception as exc:  # noqa: BLE001
                print_failure(f"{name:<20}", exc, 400)


if __name__ == "__main__":
    main(sys.argv[1:])
