"""Weights an ONNX model keeps in files beside it (``external_data``, what torch's exporter
writes for large models), read as onnxruntime reads them: only for a model given by its path,
only from regular files inside its folder, at offsets and lengths checked against the
tensors' dims; every hostile location (an absolute path, ``..``, a link out of the folder, a
folder, a short file) refused with an ``OnnxImportError``, nothing written."""

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tensorsched.frontend import OnnxImportError, from_onnx  # noqa: E402
from tensorsched.graph import run_reference  # noqa: E402


def dense_model(rng):
    """x (2, 16) @ W (16, 8) + b, then a Constant-scaled output: one initializer big enough to
    go external, a small one and a Constant node's tensor."""
    w = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    scale = numpy_helper.from_array(np.array(0.5, np.float32), "s")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["y0"]),
            helper.make_node("Constant", [], ["s"], value=scale),
            helper.make_node("Mul", ["y0", "s"], ["y"]),
        ],
        "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model, w, b


def save_external(model, folder, location="weights.bin"):
    """``model`` saved in ``folder`` with every tensor in the one file ``location``."""
    os.makedirs(os.path.dirname(os.path.join(folder, location)), exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    onnx.save_model(
        model,
        path,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=location,
        size_threshold=0,
    )
    return path


def first_external(path):
    """The saved model and its first tensor that points to a file."""
    m = onnx.load(path, load_external_data=False)
    t = next(t for t in m.graph.initializer if t.data_location == TensorProto.EXTERNAL)
    return m, t


def set_key(t, key, value):
    for kv in t.external_data:
        if kv.key == key:
            kv.value = value
            return
    t.external_data.add(key=key, value=value)


def test_weights_beside_the_model_are_read_from_its_path(tmp_path):
    rng = np.random.default_rng(0)
    model, w, b = dense_model(rng)
    path = save_external(model, str(tmp_path / "m"))
    assert os.path.getsize(path) < w.nbytes  # the weights really are outside
    before = sorted(os.listdir(tmp_path / "m"))
    g = from_onnx(path)
    x = rng.standard_normal((2, 16)).astype(np.float32)
    y = run_reference(g, {"x": x})["y"]
    np.testing.assert_allclose(y, (x @ w + b) * 0.5, rtol=1e-5, atol=1e-5)
    assert sorted(os.listdir(tmp_path / "m")) == before  # nothing written


def test_a_location_in_a_subfolder_is_read(tmp_path):
    rng = np.random.default_rng(1)
    model, w, b = dense_model(rng)
    path = save_external(model, str(tmp_path / "m"), location="data/w.bin")
    g = from_onnx(path)
    x = rng.standard_normal((2, 16)).astype(np.float32)
    np.testing.assert_allclose(run_reference(g, {"x": x})["y"], (x @ w + b) * 0.5, rtol=1e-5)


def test_bytes_and_a_model_proto_name_no_folder(tmp_path):
    model, _, _ = dense_model(np.random.default_rng(2))
    path = save_external(model, str(tmp_path / "m"))
    with pytest.raises(OnnxImportError, match="given by its path"):
        from_onnx(open(path, "rb").read())
    with pytest.raises(OnnxImportError, match="given by its path"):
        from_onnx(onnx.load(path, load_external_data=False))


def _rewrite(path, change):
    m, t = first_external(path)
    change(t)
    onnx.save_model(m, path)  # tensors keep their external references
    return path


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda t: set_key(t, "location", "../secret.bin"), "not a file name inside"),
        (lambda t: set_key(t, "location", "/etc/passwd"), "not a file name inside"),
        (lambda t: set_key(t, "location", "sub/../../secret.bin"), "not a file name inside"),
        (lambda t: set_key(t, "location", ""), "not a file name inside"),
        (lambda t: set_key(t, "location", "missing.bin"), "not a file inside"),
        (lambda t: set_key(t, "location", "link.bin"), "link out of it"),
        (lambda t: set_key(t, "location", "folder"), "not a file inside"),
        (lambda t: set_key(t, "offset", "-4"), "not a byte count"),
        (lambda t: set_key(t, "offset", "999999999"), "expected"),
        (lambda t: set_key(t, "length", "12"), "expected"),
        (lambda t: t.external_data.add(key="run", value="rm -rf /"), "unknown external data key"),
    ],
    ids=[
        "dotdot", "absolute", "dotdot-inside", "empty", "missing", "link-out", "folder",
        "negative-offset", "offset-past-end", "wrong-length", "unknown-key",
    ],
)  # fmt: skip
def test_a_hostile_location_is_refused_and_nothing_else_is_read(tmp_path, change, message):
    model, _, _ = dense_model(np.random.default_rng(3))
    folder = tmp_path / "m"
    path = save_external(model, str(folder))
    (tmp_path / "secret.bin").write_bytes(b"\x00" * 4096)
    os.symlink(tmp_path / "secret.bin", folder / "link.bin")
    (folder / "folder").mkdir()
    before = sorted(os.listdir(folder))
    _rewrite(path, change)
    with pytest.raises(OnnxImportError, match=message) as info:
        from_onnx(path)
    assert "model.onnx: tensor 'w'" in str(info.value) or "unknown" in str(info.value)
    assert sorted(os.listdir(folder)) == before


def test_a_file_shorter_than_its_tensors_is_refused(tmp_path):
    model, _, _ = dense_model(np.random.default_rng(4))
    path = save_external(model, str(tmp_path / "m"))
    data = tmp_path / "m" / "weights.bin"
    data.write_bytes(data.read_bytes()[:100])
    with pytest.raises(OnnxImportError, match="expected"):
        from_onnx(path)
