"""The built-in networks (their layers, their ONNX form against onnxruntime, ResNet-18 at a
reduced resolution, 32x32, on the CPU OpenCL device) and the ``tensorsched net`` command.

Tolerance: max |out - ref| / max |ref| under 1e-5 against onnxruntime (float32 both); the
networks' outputs are their softmax, compared with the logits before it too."""

import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

from tensorsched import TensorschedError
from tensorsched.cli import main
from tensorsched.frontend import from_onnx, to_onnx
from tensorsched.graph import Graph, build, optimize, run_reference
from tensorsched.nets import NETS, mobilenet_v1, resnet18, vgg16

ort = pytest.importorskip("onnxruntime")

TOL = 1e-5


def rel_err(out, ref):
    return float(np.max(np.abs(np.asarray(out, np.float64) - ref)) / np.max(np.abs(ref)))


def ort_run(g, x, outputs=None):
    model = to_onnx(g)
    if outputs:  # expose inner tensors too
        from onnx import TensorProto, helper

        for t in outputs:
            model.graph.output.append(
                helper.make_tensor_value_info(t, TensorProto.FLOAT, list(g.tensors[t].shape))
            )
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, {g.inputs[0]: x})


def test_layers_of_the_networks():
    r = optimize(resnet18())
    m = optimize(mobilenet_v1())
    v = optimize(vgg16(image_size=32))  # 224 would make a 400 MB first dense layer
    assert r.op_counts()["conv2d"] == 20 and r.tensors[r.outputs[0]].shape == (1, 1000)
    assert m.op_counts()["conv2d"] == 27 and m.tensors[m.outputs[0]].shape == (1, 1000)
    assert v.op_counts()["conv2d"] == 13 and v.op_counts()["dense"] == 3
    dw = [n for n in m.topo_nodes() if n.op == "conv2d" and n.attrs["groups"] > 1]
    assert len(dw) == 13 and {n.attrs["strides"] for n in dw} == {(1, 1), (2, 2)}
    params = sum(a.size for a in resnet18().constants.values())
    assert 11.6e6 < params < 11.8e6  # torchvision's ResNet-18 has 11.69 M (with BN's 4 per channel)
    assert all(n.epilogue for n in r.topo_nodes() if n.op == "conv2d")  # BN folded, bias fused


@pytest.mark.parametrize("name", list(NETS))
def test_network_onnx_matches_onnxruntime(name):
    g = NETS[name](image_size=32, classes=10)
    x = np.random.default_rng(0).standard_normal(g.tensors["data"].shape).astype(np.float32)
    logits = [n.inputs[0] for n in g.topo_nodes() if n.op == "softmax"][0]
    prob, ref_logits = ort_run(g, x, [logits])
    ours = run_reference(g, x, keep=True)
    assert rel_err(ours[g.outputs[0]], prob) < TOL
    assert rel_err(ours[logits], ref_logits) < TOL
    if name != "vgg16":  # read back (VGG's 70 MB of weights would take seconds): the same net
        back = from_onnx(to_onnx(g))
        assert rel_err(run_reference(back, x)[g.outputs[0]], prob) < TOL


@pytest.mark.opencl
def test_resnet18_on_the_device_matches_onnxruntime(device):
    g = resnet18(image_size=32, classes=10)
    x = np.random.default_rng(0).standard_normal(g.tensors["data"].shape).astype(np.float32)
    logits = [n.inputs[0] for n in g.topo_nodes() if n.op == "softmax"][0]
    g.output(logits)  # the logits too, less flattened than the softmax
    ref_prob, ref_logits = ort_run(g, x)
    net = build(g, device=device)
    prob, out_logits = net(x)
    err, err_logits = rel_err(prob, ref_prob), rel_err(out_logits, ref_logits)
    print(f"ResNet-18 32x32 on {device.name}: max relative error against onnxruntime "
          f"{err:.2e} (softmax), {err_logits:.2e} (logits); tolerance {TOL}")  # fmt: skip
    assert err < TOL and err_logits < TOL
    # 20 convs with BN folded and their epilogues fused: no kernel of a BN, ReLU or add
    assert {layer.node.op for layer in net.layers} == {
        "conv2d", "max_pool2d", "global_avg_pool2d", "dense", "softmax",
    }  # fmt: skip
    assert len(net.layers) == 24
    assert len({id(layer.module) for layer in net.layers}) == 19  # same task, one program


FP16_TOL = 1e-2  # half storage: ~5e-4 per rounding, a few dozen layers


@pytest.mark.opencl
@pytest.mark.parametrize("name", ["vgg16", "resnet18", "mobilenet_v1"])
def test_fp16_storage_against_the_fp32_reference(device, name):
    """fp16=True: weights and activations stored as half (vload_half / vstore_half), float
    arithmetic; its error against the float64 reference, next to the float32 build's."""
    g = NETS[name](image_size=32, classes=10)
    x = np.random.default_rng(0).standard_normal(g.tensors["data"].shape).astype(np.float32)
    logits = [n.inputs[0] for n in g.topo_nodes() if n.op == "softmax"][0]
    g.output(logits)
    ref = run_reference(g, x)
    net = build(g, device=device, fp16=True)
    prob, out_logits = net(x)
    assert net.fp16 and prob.dtype == np.float32
    assert all("vload_half" in layer.module.get_source() for layer in net.layers)
    err, err_logits = rel_err(prob, ref[g.outputs[0]]), rel_err(out_logits, ref[logits])
    print(f"{name} 32x32 fp16 storage on {device.name}: max relative error against float64 "
          f"{err:.2e} (softmax), {err_logits:.2e} (logits); tolerance {FP16_TOL}")  # fmt: skip
    assert err < FP16_TOL and err_logits < FP16_TOL
    assert err_logits > 1e-5  # really rounded to half somewhere


def test_fp16_needs_opencl():
    with pytest.raises(TensorschedError, match="target='opencl'"):
        build(resnet18(image_size=32), target="python", fp16=True)


# ---- the command line


def run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def tiny_onnx(path):
    rng = np.random.default_rng(3)
    g = Graph("tiny")
    x = g.input("data", (1, 3, 9, 9))
    y = g.relu(g.conv2d(x, g.constant("w", rng.standard_normal((4, 3, 3, 3))), pads=1))
    g.output(g.softmax(g.flatten(g.global_avg_pool2d(y))))
    to_onnx(g, path)
    return g


@pytest.mark.opencl
def test_net_run_checks_against_numpy(device, tmp_path):
    path = str(tmp_path / "tiny.onnx")
    tiny_onnx(path)
    np.save(tmp_path / "x.npy", np.ones((1, 3, 9, 9), np.float32))
    code, out, err = run_cli(
        ["net", "run", path, "--input", str(tmp_path / "x.npy"), "--check", "--profile",
         "--repeat", "2", "--output", str(tmp_path / "y.npy")]
    )  # fmt: skip
    assert code == 0, err
    assert "max relative error against numpy" in out and "GFLOP/s" in out
    assert np.load(tmp_path / "y.npy").shape == (1, 4)


def test_net_run_and_bench_a_model_of_token_ids_and_a_mask(tmp_path):
    """int64 ids into an embedding and an int64 mask: random inputs are ids within the
    vocabulary and a 0/1 mask (a Gather out of range would give zeros), or a .npz by name;
    bench feeds onnxruntime the same typed arrays."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    n = helper.make_node
    nodes = [n("Gather", ["table", "ids"], ["e"]), n("Unsqueeze", ["mask", "two"], ["m3"]),
             n("Cast", ["m3"], ["mf"], to=TensorProto.FLOAT), n("Mul", ["e", "mf"], ["y"])]  # fmt: skip
    inits = [numpy_helper.from_array(rng.standard_normal((50, 6)).astype(np.float32), "table"),
             numpy_helper.from_array(np.array([2], np.int64), "two")]  # fmt: skip
    ins = [helper.make_tensor_value_info(k, TensorProto.INT64, [1, 7]) for k in ("ids", "mask")]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 7, 6])
    m = helper.make_model(helper.make_graph(nodes, "ids", ins, [out], inits),
                          opset_imports=[helper.make_opsetid("", 13)])  # fmt: skip
    m.ir_version = 8
    path = str(tmp_path / "ids.onnx")
    onnx.save(m, path)
    code, text, err = run_cli(["net", "run", path, "--target", "python", "--check"])
    assert code == 0 and "max relative error against numpy" in text, err
    feeds = {"ids": np.arange(7, dtype=np.int64)[None], "mask": np.ones((1, 7), np.int64)}
    np.savez(tmp_path / "in.npz", **feeds)
    argv = ["net", "run", path, "--target", "python", "--input", str(tmp_path / "in.npz"),
            "--output", str(tmp_path / "y.npy")]  # fmt: skip
    code, text, err = run_cli(argv)
    assert code == 0, err
    want = onnx.numpy_helper.to_array(m.graph.initializer[0])[:7][None]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want, rtol=1e-6)
    np.save(tmp_path / "one.npy", feeds["ids"])
    code, text, err = run_cli(["net", "run", path, "--input", str(tmp_path / "one.npy")])
    assert code != 0 and "give a .npz of arrays by those names" in err, err


def test_net_run_takes_the_shape_of_a_symbolic_input(tmp_path):
    """A model whose batch is symbolic (torch's dynamic_axes) runs with --shape; without it
    the error says what to pass."""
    import onnx

    path = str(tmp_path / "tiny.onnx")
    tiny_onnx(path)
    m = onnx.load(path)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.save(m, path)
    code, out, err = run_cli(["net", "run", path, "--target", "python", "--check"])
    assert code != 0 and "--shape data=1,3,224,224" in err, err
    argv = ["net", "run", path, "--target", "python", "--check", "--shape", "data=2,3,9,9"]
    code, out, err = run_cli(argv)
    assert code == 0, err
    assert "max relative error against numpy" in out
    code, out, err = run_cli(["net", "run", path, "--shape", "data=2,three"])
    assert code != 0 and "expected NAME=D0,D1" in err, err
    code, out, err = run_cli(["net", "run", "resnet18", "--shape", "x=1,3,9,9"])
    assert code != 0 and "ONNX models only" in err, err


@pytest.mark.opencl
def test_net_bench_prints_the_table(device, tmp_path):
    path = str(tmp_path / "tiny.onnx")
    tiny_onnx(path)
    code, out, err = run_cli(["net", "bench", path, "--repeat", "2"])
    assert code == 0, err
    assert "tensorsched" in out and "onnxruntime" in out and "median ms" in out


@pytest.mark.opencl
def test_net_bench_side_by_side(device, tmp_path):
    """net bench --fp16 --acl: tensorsched, its half-storage build, the ACL-style network
    (tuned into the folder) and onnxruntime in one table."""
    path = str(tmp_path / "tiny.onnx")
    tiny_onnx(path)
    acl = str(tmp_path / "acl")
    argv = ["net", "bench", path, "--repeat", "2", "--fp16", "--acl", acl, "--acl-configs", "1"]
    code, out, err = run_cli(argv)
    assert code == 0, err
    for engine in ("tensorsched fp16", "ACL-style", "onnxruntime", "speed-up"):
        assert engine in out
    assert os.path.exists(os.path.join(acl, "acl_best.json"))
    code, out, err = run_cli(["net", "run", path, "--fp16", "--check"])
    assert code == 0 and "fp16 storage" in out, err


def test_torch_baseline_matches_numpy():
    """The torch eager baseline (on the CPU here; cuDNN on a GPU host) computes the graph."""
    pytest.importorskip("torch")
    from tensorsched.baselines.torch_net import TorchNet

    for name in NETS:
        g = NETS[name](image_size=32, classes=10)
        x = np.random.default_rng(0).standard_normal(g.tensors["data"].shape).astype(np.float32)
        assert rel_err(TorchNet(g, "cpu")(x), run_reference(g, x)[g.outputs[0]]) < TOL


@pytest.mark.opencl
def test_net_tune_writes_one_log(device, tmp_path):
    path = str(tmp_path / "tiny.onnx")
    tiny_onnx(path)
    log = tmp_path / "net.jsonl"
    code, out, err = run_cli(
        ["net", "tune", path, "--log", str(log), "--trials", "1", "--strategy", "random",
         "--quiet", "--timeout", "60"]
    )  # fmt: skip
    assert code == 0, err
    assert "1 distinct tasks" in out
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert all(r["config"] == records[0]["config"] for r in records)  # measured again
    records = [r for r in records if not r.get("remeasure")]
    assert len(records) == 1 and {r["task"]["kind"] for r in records} == {"conv2d"}
    code, out, err = run_cli(["net", "run", path, "--log", str(log), "--check"])
    assert code == 0, err
    if records[0]["status"] == "ok":  # the logged config is the one built
        net = build(from_onnx(path), device=device, log=str(log))
        assert json.loads(json.dumps(net.layers[0].config)) == records[0]["config"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["net", "run", "alexnet"], "unknown model 'alexnet'"),
        (["net", "tune", "resnet18"], "needs --log"),
        (["net", "export", "resnet18"], "needs --out"),
        (["net", "run", "resnet18", "--image-size", "8"], "at least 32"),
        (["net", "bench", "resnet18", "--acl-configs", "2"], "go with --acl"),
        (["net", "run", "resnet18", "--fp16", "--target", "python"], "target='opencl'"),
    ],
)
def test_net_mistakes_exit_2(argv, message):
    code, _, err = run_cli(argv)
    assert code == 2 and message in err


def test_net_export_writes_onnx(tmp_path):
    path = tmp_path / "m.onnx"
    code, _, err = run_cli(
        ["net", "export", "mobilenet_v1", "--image-size", "32", "--out", str(path)]
    )
    assert code == 0, err
    assert from_onnx(str(path)).op_counts()["conv2d"] == 27
    code, _, err = run_cli(["net", "export", "mobilenet_v1", "--out", str(path)])
    assert code == 2 and "--force" in err


def test_unknown_input_is_an_error(tmp_path):
    with pytest.raises(TensorschedError):
        from_onnx(str(tmp_path / "missing.onnx"))


@pytest.mark.opencl
def test_a_layer_whose_k_split_is_added_by_the_last_work_group(device, tmp_path):
    """A conv layer whose logged config adds its K split in the same kernel
    (``split_sum="group"``): the net creates the layer's arrival counters zeroed, and every
    call (each leaving them zero again) gives numpy's result."""
    from dataclasses import asdict, replace

    from tensorsched.tune.record import Record, jsonable

    g = tiny_onnx(str(tmp_path / "tiny.onnx"))
    task = replace(build(g, device=device).layers[0].task, template="implicit_gemm")
    config = {"tile_y": (1, 8, 1), "tile_x": (1, 8, 4), "tile_k": (4,), "a_pad": 0,
              "split_k": 4, "split_sum": "group"}  # fmt: skip
    assert task.instantiate(config)[2].valid
    name = f"{device.platform_name} / {device.name}"
    rec = Record(asdict(task), name, config, "ok", device_ms=0.01)
    log = tmp_path / "group.jsonl"
    log.write_text(json.dumps(jsonable(asdict(rec))) + "\n")
    net = build(g, device=device, log=str(log))
    assert net.layers[0].config["split_sum"] == "group"
    assert "atomic_inc" in net.layers[0].module.get_source()
    x = np.random.default_rng(0).standard_normal((1, 3, 9, 9)).astype(np.float32)
    want = run_reference(g, x)[g.outputs[0]]
    for _ in range(3):
        assert rel_err(net(x), want) < TOL
