"""Text models that take token ids (int64 ``input_ids``, and an int64 ``attention_mask`` where
named ``*_mask``) through tensorsched's ONNX import, on the GPU host: small transformers built
in torch with random weights (seed 0, eval mode, batch 1, 128 tokens, a vocabulary of 8000),
exported by torch to ONNX (opset 17; TorchScript exporter, else the dynamo one), read with
``ts.frontend.from_onnx``, built with ``ts.graph.build`` on the OpenCL device in use (configs
predicted from the shipped logs) and run on random ids (the mask's last 20 tokens padding).
The output is compared with torch's (float32 on the GPU, TF32 off) by the largest error
relative to the largest output. Prints, per model, the ONNX operators tensorsched does not
convert, or the first error, or the error and the times (``Net`` call, ids in and output
back, and torch eager; medians of 20 after 3 warm-up calls):

    . benchmarks/gpu/gpu_env.sh && \\
        python benchmarks/gpu/text_zoo.py [--profile] [--without-CHANGE ...] [MODEL ...]

``--profile``: then ``Net.profile``'s per-layer device times, the slowest 12 layers.
``--without-rows``, ``--without-twins``, ``--without-fusion``: each model also built with
that change undone (``without``), all builds timed alternately, with their device times by
``Net.profile``.

Models: ``encoder`` (nn.TransformerEncoder, 4 layers, width 256, 4 heads, learned positions,
mean-pooled into 2 classes), ``encoder_mask`` (the same with a padding mask input),
``gpt`` (4 causal blocks written out, logits over the vocabulary at every position).
"""

import contextlib
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torchvision_zoo import median_ms, print_failure  # noqa: E402

import tensorsched as ts  # noqa: E402
from tensorsched.frontend.onnx import SUPPORTED  # noqa: E402
from tensorsched.graph.graph import INJECTIVE  # noqa: E402

VOCAB, TOKENS, WIDTH, HEADS, LAYERS = 8000, 128, 256, 4, 4


class Encoder(nn.Module):
    def __init__(self, masked: bool):
        super().__init__()
        self.masked = masked
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.pos = nn.Parameter(torch.randn(1, TOKENS, WIDTH) * 0.02)
        layer = nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(WIDTH, 2)

    def forward(self, ids, mask=None):
        x = self.embed(ids) + self.pos
        pad = (mask == 0) if self.masked else None
        x = self.encoder(x, src_key_padding_mask=pad)
        return self.head(x.mean(dim=1))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv, self.proj = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
        wide = 4 * WIDTH
        self.mlp = nn.Sequential(nn.Linear(WIDTH, wide), nn.GELU(), nn.Linear(wide, WIDTH))
        self.register_buffer("causal", torch.triu(torch.ones(TOKENS, TOKENS), 1).bool())

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(WIDTH, dim=2)
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (c // HEADS) ** 0.5
        att = att.masked_fill(self.causal, float("-inf")).softmax(dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.pos = nn.Parameter(torch.randn(1, TOKENS, WIDTH) * 0.02)
        self.blocks = nn.Sequential(*(Block() for _ in range(LAYERS)))
        self.ln, self.out = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, VOCAB, bias=False)

    def forward(self, ids):
        return self.out(self.ln(self.blocks(self.embed(ids) + self.pos)))


MODELS = {"encoder": lambda: Encoder(False), "encoder_mask": lambda: Encoder(True), "gpt": Gpt}


def export(model, args, names, path):
    try:
        torch.onnx.export(model, args, path, input_names=names, opset_version=17, dynamo=False)
        return "torchscript"
    except Exception as first:  # noqa: BLE001
        try:
            torch.onnx.export(model, args, path, input_names=names, opset_version=18, dynamo=True)
            return f"dynamo (torchscript: {type(first).__name__}: {str(first)[:120]})"
        except Exception as second:  # noqa: BLE001
            raise RuntimeError(f"export failed: {first!s:.200} / {second!s:.200}") from None


def one(name, folder, profile=False, changes=()):
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    ids = torch.randint(0, VOCAB, (1, TOKENS), dtype=torch.int64)
    mask = torch.ones(1, TOKENS, dtype=torch.int64)
    mask[:, -20:] = 0
    masked = name.endswith("_mask")
    args = (ids, mask) if masked else (ids,)
    names = ["input_ids", "attention_mask"][: len(args)]
    path = os.path.join(folder, f"{name}.onnx")
    with torch.no_grad():
        how = export(model, args, names, path)
    ops = {nd.op_type for nd in onnx.load(path, load_external_data=False).graph.node}
    missing = sorted(ops - set(SUPPORTED))
    line = f"{name:<14} export {how[:11]:<11} ops {len(ops):>2}"
    if missing:
        print(f"{line}  UNSUPPORTED: {' '.join(missing)}", flush=True)
        return
    g = ts.frontend.from_onnx(onnx.load(path))
    feeds = {n: a.numpy() for n, a in zip(names, args)}
    if changes:
        compare(g, feeds, line, changes)
    net = ts.graph.build(g)
    y = np.asarray(net(feeds))
    cuda = torch.device("cuda")
    model = model.to(cuda)
    cargs = tuple(a.to(cuda) for a in args)
    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.no_grad():
        ref = model(*cargs).float().cpu().numpy()
        torch_ms = median_ms(lambda: (model(*cargs), torch.cuda.synchronize()))
    err = float(np.abs(y.reshape(ref.shape) - ref).max() / np.abs(ref).max())
    ts_ms = median_ms(lambda: net(feeds))
    print(
        f"{line}  err {err:.1e} {'ok' if err < 1e-3 else 'WRONG'}"
        f"  tensorsched {ts_ms:7.2f} ms  torch {torch_ms:7.2f} ms",
        flush=True,
    )
    if profile:
        table = net.profile(feeds, repeat=10)
        rows = sorted(table.rows, key=lambda r: -r.ms)
        total = sum(r.ms for r in table.rows)
        print(f"  device {total:.3f} ms in {len(table.rows)} layers; slowest:")
        for r in rows[:12]:
            print(f"    {r.layer:<40.40} {r.kernel:<22.22} {r.ms:7.3f} ms {r.percent:5.1f}%")


@contextlib.contextmanager
def without(change):
    """The graph compiler with one of this session's changes undone: ``rows``, softmax,
    layer_norm and reduce a work-item a row (``graph.tasks.ROW_GROUPS`` off); ``twins``, the
    dense layers' GEMM template predicted from GEMM logs only within ``model.NEAR_VIEW``
    (the dense entries of ``templates.TWINS`` dropped); ``fusion``, each injective node a
    kernel of its own (no ``passes.fuse_injective``: ``compare`` builds that graph)."""
    from tensorsched.graph import tasks
    from tensorsched.ops import templates

    saved = (tasks.ROW_GROUPS, dict(templates.TWINS))
    if change == "rows":
        tasks.ROW_GROUPS = False
    elif change == "twins":
        for key in [k for k in templates.TWINS if k[0] == "dense"]:
            del templates.TWINS[key]
    try:
        yield
    finally:
        tasks.ROW_GROUPS = saved[0]
        templates.TWINS.clear()
        templates.TWINS.update(saved[1])


def compare(g, feeds, line, changes):
    """The graph built as it is and with each of ``changes`` undone, timed alternately (wall
    clock of a call, medians of medians), with each one's device time by ``Net.profile``."""
    from tensorsched.graph.passes import PIPELINE, optimize

    nets = {"as is": ts.graph.build(g)}
    for change in changes:
        with without(change):
            if change == "fusion":  # the graph optimized without fuse_injective
                unfused = optimize(g, tuple(p for p in PIPELINE if p.name != "fuse_injective"))
                nets[f"no {change}"] = ts.graph.build(unfused)
            else:
                nets[f"no {change}"] = ts.graph.build(g)
    outs = {k: np.asarray(net(feeds)) for k, net in nets.items()}
    base = outs["as is"]
    times = {k: [] for k in nets}
    for r in range(5):
        for k in list(nets) if r % 2 == 0 else list(nets)[::-1]:
            times[k].append(median_ms(lambda: nets[k](feeds)))
    for k, net in nets.items():
        table = net.profile(feeds, repeat=10)
        device = sum(x.ms for x in table.rows)
        norm = sum(x.ms for x in table.rows if x.kernel in ("layer_norm", "softmax", "reduce"))
        injective = sum(x.ms for x in table.rows if x.kernel == "fused" or x.kernel in INJECTIVE)
        dense = sum(x.ms for x in table.rows if x.kernel.startswith("dense"))
        diff = float(np.abs(outs[k] - base).max() / np.abs(base).max())
        print(
            f"{line}  {k:<9} call {np.median(times[k]):6.3f} ms  device {device:.3f} ms "
            f"in {len(table.rows)} kernels (dense {dense:.3f}, layer_norm / softmax / reduce "
            f"{norm:.3f}, injective {injective:.3f})  "
            f"differs by {diff:.1e}",
            flush=True,
        )


def main(names):
    profile = "--profile" in names
    changes = [x.removeprefix("--without-") for x in names if x.startswith("--without-")]
    names = [x for x in names if x != "--profile" and not x.startswith("--without-")]
    print(f"# torch {torch.__version__}; device {ts.runtime.device.current_device().name}")
    with tempfile.TemporaryDirectory() as folder:
        for name in names or MODELS:
            try:
                one(name, folder, profile, changes)
            except Exception as exc:  # noqa: BLE001
                print_failure(f"{name:<14}", exc, 600)


if __name__ == "__main__":
    main(sys.argv[1:])
