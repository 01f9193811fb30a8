"""Hostile inputs, an audit round after those of ``test_log_safety.py``, ``test_errors.py``,
``test_onnx.py``, ``test_onnx_external.py``, ``test_te_text.py``, ``test_parser.py`` and
``test_cli.py``: what users hand over is data, and each input below gets a
``TensorschedError`` naming what was wrong (or is accepted where it is valid), never a raw
Python exception, a read that blocks or does not end, or a file written where the user did
not say.

Covered here:

- tuning logs (``read_log``, ``apply_best``, ``tensorsched source --log``, ``tune --resume``
  and ``--transfer``, ``net run --log``) that are a folder, a FIFO no one writes, a character
  device (``/dev/zero``), that hold a line longer than ``MAX_LINE_BYTES``, bytes that are not
  UTF-8, or float literals beyond a float (``1e400``) and NaN / Infinity;
- command-line arguments: ``--shapes`` tables that are not UTF-8 or not regular files,
  ``--knob`` JSON nested deeper than Python recurses or with an integer of 5000 digits,
  ``net --seed -1``, ``net --timeout nan``, ``net --input`` of strings or from a FIFO,
  ``net --output`` / ``net export --out`` in folders that do not exist (and ``--output``
  written exactly where it says, not with ``.npy`` appended);
- ONNX models (``from_onnx``): a path that is a FIFO, ``/dev/zero`` or holds a NUL, an empty
  file, Gemm's alpha / beta of NaN or infinity, an empty constant used as an operand, an input
  declared twice with two shapes, opsets beyond the ``onnx`` package's, a model without
  outputs, ``shapes=`` that are not positive integers, external-data offsets spelt in non-ASCII
  digits;
- te text (``parse_expr``, ``tune --expr``): a name given twice in the shapes;
- the graph: a node whose output is a scalar (a Relu of a 0-d model input crashed its kernel).

Inputs that were already handled and are kept so by a test here: ConstantOfShape / Range /
Expand / Tile / Pad / Resize asking for 10^12 elements or negative sizes, a cycle, an
undefined name, Loop / If / Scan, opset 1, raw_data of the wrong length, huge dims, a truncated
or non-protobuf model, external data through ``..``, an absolute path or a link, 10^5 nested
parentheses in IR and te text, integer literals of 5000 digits, ``--shape`` with zeros,
negatives, 2^63 or floats, ``source --out`` in folders not there (made, as documented).

Every test is fast and none depends on timing: a read that would block is guarded by an alarm
that fails the test instead of hanging it.
"""

import contextlib
import json
import os
import re
import signal
import warnings

import numpy as np
import pytest
from test_log_safety import TASK  # the cpu GEMM at 16x16x16, as a log names it

from tensorsched.cli import main
from tensorsched.errors import ParseError, TensorschedError
from tensorsched.tune.dispatch import apply_best
from tensorsched.tune.log import MAX_LINE_BYTES, LogError, read_log
from tensorsched.tune.record import PEAK_FLOPS

GOOD = {"tile_y": [2, 4], "tile_x": [2, 8], "vec": 8, "tile_k": [4]}  # in cpu's space
FLOP = 2 * 16**3


def record(device_ms=1.0, **over):
    d = {
        "task": TASK,
        "device": "cl / dev",
        "config": GOOD,
        "status": "ok",
        "device_ms": device_ms,
        "host_ms": 1.1,
        "gflops": FLOP / device_ms / 1e6,
        "error": "",
        "timestamp": 1.0,
    }
    d.update(over)
    return json.dumps(d)


@contextlib.contextmanager
def no_hang(seconds=30):
    """Fails the test (instead of hanging it) where the block does not return."""

    def stuck(*_):
        raise AssertionError(f"blocked for {seconds} s")

    old = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return str(path)


# ---------------------------------------------------------------- tuning logs


def _not_files(tmp_path, fifo):
    return {"folder": str(tmp_path), "FIFO": fifo, "character device": "/dev/zero"}


@pytest.mark.parametrize("kind", ["folder", "FIFO", "character device"])
def test_a_log_that_is_not_a_file_is_a_log_error(tmp_path, fifo, kind):
    path = _not_files(tmp_path, fifo)[kind]
    with no_hang(), pytest.raises(LogError, match=f"{path}: it is a .*, not a file"):
        read_log(path)
    with no_hang(), pytest.raises(LogError, match="not a file"):
        with apply_best(path, device="cl / dev"):
            pass


@pytest.mark.parametrize("kind", ["folder", "FIFO", "character device"])
def test_source_of_a_log_that_is_not_a_file_exits_2(tmp_path, fifo, kind, capsys):
    path = _not_files(tmp_path, fifo)[kind]
    with no_hang():
        assert main(["source", "--log", path, "--out", str(tmp_path / "out")]) == 2
    assert "not a file" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_missing_log_holds_no_record(tmp_path):
    assert read_log(str(tmp_path / "none.jsonl")) == []


def test_a_line_longer_than_the_limit_is_skipped_and_the_rest_read(tmp_path):
    path = tmp_path / "log.jsonl"
    long = record(error="x" * (MAX_LINE_BYTES + 10))
    with open(path, "w") as f:
        f.write(record(2.0) + "\n" + long + "\n" + record(1.0) + "\n")
    with pytest.warns(UserWarning, match=rf":2: .*longer than {MAX_LINE_BYTES} bytes"):
        records = read_log(str(path))
    assert [r.device_ms for r in records] == [2.0, 1.0]


def test_a_long_last_line_without_newline_is_skipped(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(record().encode() + b"\n" + b"[" * (3 * MAX_LINE_BYTES))
    with pytest.warns(UserWarning, match=":2: .*longer than"):
        assert len(read_log(str(path))) == 1


def test_bytes_that_are_not_utf8_and_numbers_beyond_a_float(tmp_path):
    path = tmp_path / "log.jsonl"
    lines = [
        b"\xff\xfe\x00garbage",
        record().replace('"cl / dev"', '"cl / \\udcff"').encode(),  # a lone surrogate
        record().encode().replace(b'"cl / dev"', b'"cl / \xff"'),  # raw non-UTF-8 bytes
        record().replace('"device_ms": 1.0', '"device_ms": 1e400').encode(),
        record().replace('"host_ms": 1.1', '"host_ms": NaN').encode(),
        record().replace('"timestamp": 1.0', '"timestamp": -Infinity').encode(),
        record().encode(),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = read_log(str(path))
    skipped = sorted(int(str(w.message).split(":")[1]) for w in caught)
    assert skipped == [1, 4, 5, 6]
    # the device names read are text (the undecodable byte replaced), never bytes
    assert [r.device for r in records] == ["cl / \udcff", "cl / \ufffd", "cl / dev"]
    assert all(r.device_ms == 1.0 for r in records)
    assert FLOP / PEAK_FLOPS * 1e3 < 1.0


@pytest.mark.parametrize("kind", ["folder", "FIFO", "character device"])
def test_resume_and_transfer_from_what_is_not_a_file_exit_2(tmp_path, fifo, kind, capsys):
    path = _not_files(tmp_path, fifo)[kind]
    tune = ["tune", "gemm", "--shape", "8,8,8", "--trials", "1", "--template", "cpu"]
    with no_hang():
        assert main([*tune, "--log", path, "--resume"]) == 2
    assert "not a file" in capsys.readouterr().err
    with no_hang():
        assert main([*tune, "--log", str(tmp_path / "t.jsonl"), "--transfer", path]) == 2
    assert f"transfer log {path} is not a file" in capsys.readouterr().err
    assert not (tmp_path / "t.jsonl").exists()


# ---------------------------------------------------------------- command-line arguments


def test_a_shapes_table_that_is_not_utf8_or_not_a_file(tmp_path, fifo, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"8,8,8,1\n\xff\xfe16,16,16,1\n")
    tune = ["tune", "gemm", "--log", str(tmp_path / "t.jsonl"), "--template", "cpu"]
    assert main([*tune, "--shapes", str(bad)]) == 2
    assert f"--shapes {bad}:2: byte 0xff is not UTF-8 text" in capsys.readouterr().err
    for path in (fifo, "/dev/zero", str(tmp_path)):
        with no_hang():
            assert main([*tune, "--shapes", path]) == 2
        assert f"--shapes {path} is a" in capsys.readouterr().err
    assert main([*tune, "--shapes", str(tmp_path / "none.csv")]) == 2
    assert "cannot read --shapes" in capsys.readouterr().err
    assert not (tmp_path / "t.jsonl").exists()


@pytest.mark.parametrize(
    "knob",
    [
        "tile_k=" + "[" * 50_000 + "]" * 50_000,  # deeper than Python's recursion
        "vec=[" + "9" * 5000 + "]",  # more digits than int() converts
        "vec=[1,",
    ],
)
def test_a_knob_that_json_cannot_read_exits_2(tmp_path, knob, capsys):
    argv = ["tune", "gemm", "--shape", "8,8,8", "--template", "cpu"]
    assert main([*argv, "--log", str(tmp_path / "t.jsonl"), "--knob", knob]) == 2
    err = capsys.readouterr().err
    assert "expected NAME=JSON-LIST" in err and len(err) < 1000


@pytest.mark.parametrize(
    "shape, message",
    [
        ("0,16,16", "3 positive ints"),
        ("-16,16,16", "3 positive ints"),
        (f"{2**63},16,16", "is over 2147483647"),
        ("16.5,16,16", "comma-separated integers"),
        ("9" * 5000 + ",16,16", r"comma-separated integers, got '9+\.\.\. \(5006 characters\)'"),
    ],
)
def test_tune_shape_zeros_negatives_2_63_floats(tmp_path, shape, message, capsys):
    argv = ["tune", "gemm", f"--shape={shape}", "--template", "cpu"]
    assert main([*argv, "--log", str(tmp_path / "t.jsonl")]) == 2
    assert re.search(message, capsys.readouterr().err)


@pytest.mark.parametrize("extent", ["9" * 5000, str(2**63), "-3", "0", "2.5"])
def test_expr_extents_out_of_range(tmp_path, extent, capsys):
    argv = ["ir", "--expr", "C[i] = A[i] * 2.0", "--shape", f"i={extent}"]
    assert main(argv) == 2
    assert "tensorsched: " in capsys.readouterr().err
    assert main(["ir", "--expr", "C[i] = A[i] * 2.0", "--shape", "i=0004"]) == 0  # leading 0s


@pytest.mark.parametrize(
    "argv",
    [
        ["--expr", "C[i, j] = A[i, j] * 2.0", "--shape", "i=2000000000,j=2000000000"],
        ["gemm", "--shape", "100000,100000,100000", "--template", "cpu"],
    ],
)
def test_tune_of_tensors_larger_than_the_device_allocates_is_refused_up_front(
    tmp_path, argv, capsys
):
    """Every trial would fail making its inputs (numpy tracebacks in the log, no kernel):
    ``tune`` says which tensor is too large for the device before it starts, and writes no
    log."""
    log = tmp_path / "t.jsonl"
    assert main(["tune", *argv, "--trials", "2", "--log", str(log)]) == 2
    err = capsys.readouterr().err
    assert "CL_DEVICE_MAX_MEM_ALLOC_SIZE" in err and "give smaller extents" in err
    assert "tensor A needs" in err
    assert not log.exists()


@pytest.fixture
def onnx_file(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "relu.onnx"
    onnx.save(m, path)
    return str(path)


def test_net_seed_and_timeout_are_checked(onnx_file, tmp_path, capsys):
    run = ["net", "run", onnx_file, "--target", "python"]
    for bad in (["--seed", "-1"], ["--seed", str(2**64)]):
        with pytest.raises(SystemExit) as exc:
            main([*run, *bad])
        assert exc.value.code == 2
    for bad in ("nan", "-1", "inf"):
        with pytest.raises(SystemExit):
            main(["net", "tune", onnx_file, "--log", str(tmp_path / "t.jsonl"), "--timeout", bad])
    assert "expected a positive number of seconds" in capsys.readouterr().err


def _npy_claiming(shape, dtype="<f4"):
    """A ``.npy`` whose header claims ``shape`` but that holds 16 bytes of data."""
    header = f"{{'descr': '{dtype}', 'fortran_order': False, 'shape': {shape}, }}"
    header += " " * (117 - len(header)) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * 16


@pytest.mark.parametrize(
    "content, message",
    [
        (_npy_claiming((10**12,)), r"'x' has shape \(1000000000000,\); the network takes \(2, 3\)"),
        (_npy_claiming((2, 3), "<U1"), "holds <U1 elements; give numbers"),
        (_npy_claiming((2, 3), "<c8"), "holds complex64 elements"),
        (_npy_claiming((2, 3), "|O"), "holds object elements"),
        (_npy_claiming((2, 3), "<f8"), "'x' ends after 16 of its 48 bytes"),
        (b"PK\x03\x04 not a zip", "not a readable .npy or .npz file"),
        (b"garbage", "not a readable .npy or .npz file"),
    ],
)
def test_net_input_is_checked_before_its_data_is_read(
    onnx_file, tmp_path, content, message, capsys
):
    path = tmp_path / "in.npy"
    path.write_bytes(content)
    assert main(["net", "run", onnx_file, "--target", "python", "--input", str(path)]) == 2
    assert re.search(message, capsys.readouterr().err)


def test_net_input_of_a_npz_claiming_a_huge_shape(onnx_file, tmp_path, capsys):
    import zipfile

    with zipfile.ZipFile(tmp_path / "in.npz", "w") as z:
        z.writestr("x.npy", _npy_claiming((2**40, 2**20)))
    argv = ["net", "run", onnx_file, "--target", "python", "--input", str(tmp_path / "in.npz")]
    assert main(argv) == 2
    assert "the network takes (2, 3)" in capsys.readouterr().err


def test_net_input_that_is_not_a_file(onnx_file, tmp_path, fifo, capsys):
    for path in (fifo, "/dev/zero", str(tmp_path)):
        with no_hang():
            assert main(["net", "run", onnx_file, "--target", "python", "--input", path]) == 2
        assert f"--input {path} is a" in capsys.readouterr().err


def test_net_output_is_written_where_it_says_and_nowhere_else(onnx_file, tmp_path, capsys):
    out = tmp_path / "y"  # no .npy: np.save would have written y.npy
    assert main(["net", "run", onnx_file, "--target", "python", "--output", str(out)]) == 0
    assert out.exists() and not (tmp_path / "y.npy").exists()
    assert np.load(out).shape == (2, 3)
    before = sorted(os.listdir(tmp_path))
    for option, action in (("--output", "run"), ("--out", "export")):
        for path in (tmp_path / "none" / "y.npy", tmp_path / "relu.onnx" / "y", tmp_path):
            argv = ["net", action, onnx_file, "--target", "python", option, str(path)]
            assert main(argv) == 2
            assert f"tensorsched: {option} {path}" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == before


# ---------------------------------------------------------------- ONNX models

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tensorsched.frontend.onnx import MAX_FOLD, OnnxImportError, from_onnx  # noqa: E402

I64 = np.int64


def _vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def _init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def _model(nodes, inputs=None, outputs=None, inits=(), opset=17):
    inputs = [_vi("x", [2, 3])] if inputs is None else inputs
    outputs = [_vi("y", None)] if outputs is None else outputs
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _one(op, ins, inits=(), **attrs):
    return _model([helper.make_node(op, list(ins), ["y"], "n", **attrs)], inits=inits)


def _folded_then_added(op, consts, **attrs):
    """``op`` of constants only (folded at import), added to the input ``x`` of shape (1,)."""
    names = [f"c{k}" for k in range(len(consts))]
    nodes = [
        helper.make_node(op, names, ["r"], "fold", **attrs),
        helper.make_node("Add", ["x", "r"], ["y"]),
    ]
    inits = [_init(n, c) for n, c in zip(names, consts)]
    return _model(nodes, [_vi("x", [1])], inits=inits)


def _shape_model(op, shape):
    return _one(op, ["x", "s"], [_init("s", np.array(shape, I64))])


# (what, model, the message): the model must raise a TensorschedError matching the message
REFUSED = [
    # constant folding that asks for 10^12 elements or negative sizes
    ("ConstantOfShape 10^12", _folded_then_added("ConstantOfShape", [np.array([10**6, 10**6], I64)]), f"at most 8 dims and {MAX_FOLD} elements"),
    ("ConstantOfShape -1", _folded_then_added("ConstantOfShape", [np.array([-1], I64)]), "is more than tensorsched computes"),
    ("ConstantOfShape 2^32 x 2^32 x 4", _folded_then_added("ConstantOfShape", [np.array([2**32, 2**32, 4], I64)]), "is more than tensorsched computes"),
    ("Range of 10^12", _folded_then_added("Range", [np.array(0, I64), np.array(10**12, I64), np.array(1, I64)]), "is more than tensorsched computes"),
    ("Range by a float step of 1e-12", _folded_then_added("Range", [np.array(0, np.float32), np.array(1, np.float32), np.array(1e-12, np.float32)]), "is more than tensorsched computes"),
    ("Range by 0", _folded_then_added("Range", [np.array(0, I64), np.array(9, I64), np.array(0, I64)]), "delta must be non-zero"),
    ("Range of float64 extremes", _folded_then_added("Range", [np.array(-1e308), np.array(1e308), np.array(1e-308)]), "finite"),
    ("Expand of a constant to 10^12", _folded_then_added("Expand", [np.ones(1, np.float32), np.array([10**6, 10**6], I64)]), "is more than tensorsched computes"),
    ("Expand of a constant to 2^63-1 squared", _folded_then_added("Expand", [np.ones(1, np.float32), np.array([2**63 - 1] * 2, I64)]), "cannot evaluate it"),
    ("Tile of a constant 2^40 times", _folded_then_added("Tile", [np.ones(2, np.float32), np.array([2**40], I64)]), "must be at most 8 positive dims"),
    ("Pad of a constant by 10^12", _folded_then_added("Pad", [np.ones(2, np.float32), np.array([10**12, 10**12], I64)]), "are too large"),
    ("Reshape of a constant to 10^12", _folded_then_added("Reshape", [np.ones(4, np.float32), np.array([10**6, 10**6], I64)]), "cannot evaluate it"),
    ("Add broadcasting constants to 10^10", _folded_then_added("Add", [np.ones((10**5, 1), np.float32), np.ones((1, 10**5), np.float32)]), "is more than tensorsched computes"),
    ("Einsum of constants to 10^8", _folded_then_added("Einsum", [np.ones((100, 100), np.float32)] * 2, equation="ij,kl->ijkl"), "is more than tensorsched computes"),
    ("Concat of constants past the total", _folded_then_added("Concat", [np.ones(10**7, np.float32)] * 7, axis=0), "exceed 67108864 elements"),
    # shapes of computed tensors
    ("Expand to 10^6 x 10^6", _shape_model("Expand", [10**6, 10**6, 1]), "do not broadcast"),
    ("Expand to a negative size", _shape_model("Expand", [-1, 3]), "must be positive"),
    ("Expand to 0", _shape_model("Expand", [0, 3]), "must be positive"),
    ("Tile 10^6 x 10^6 times", _shape_model("Tile", [10**6, 10**6]), "has more than 2147483647 elements"),
    ("Tile 2^62 times", _shape_model("Tile", [2**62, 2**62]), "must be at most 8 positive dims"),
    ("Tile 0 times", _shape_model("Tile", [0, 2]), "must be 2 positive ints"),
    ("Reshape to -1, -1", _shape_model("Reshape", [-1, -1]), "bad target shape"),
    ("Reshape to 2^63-1", _shape_model("Reshape", [2**63 - 1]), "cannot be reshaped"),
    ("Pad by 10^6", _one("Pad", ["x", "p"], [_init("p", np.array([0, 0, 10**6, 10**6], I64))]), "more than 2147483647 elements"),
    ("Pad by 2^62", _one("Pad", ["x", "p"], [_init("p", np.array([2**62, 0, 2**62, 0], I64))]), "too large"),
    ("Pad cropping everything", _one("Pad", ["x", "p"], [_init("p", np.array([-5, 0, 0, 0], I64))]), "crop all of axis 0"),
    ("Resize to 10^12 elements", _one("Resize", ["x", "", "", "s"], [_init("s", np.array([10**6, 10**6], I64))]), "more than 2147483647 elements"),
    ("Resize by 1e9", _one("Resize", ["x", "", "s"], [_init("s", np.array([1e9, 1e9], np.float32))]), "give the output shape"),
    ("Resize by -2", _one("Resize", ["x", "", "s"], [_init("s", np.array([-2, 1], np.float32))]), "must be 2 positive"),
    ("Resize by infinity", _one("Resize", ["x", "", "s"], [_init("s", np.array([np.inf, 1], np.float32))]), "must be 2 positive"),
    ("Resize to size 2^63-1", _one("Resize", ["x", "", "", "s"], [_init("s", np.array([2**63 - 1, 3], I64))]), "must be 2 positive ints"),
    # graph structure
    ("a cycle", _model([helper.make_node("Relu", ["b"], ["a"]), helper.make_node("Add", ["a", "x"], ["b"]), helper.make_node("Relu", ["b"], ["y"])]), "reads 'b', which no earlier node defines"),
    ("a node reading an undefined name", _one("Relu", ["nowhere"]), "reads 'nowhere', which no earlier node defines"),
    ("two nodes writing one name", _model([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Sigmoid", ["x"], ["y"], "n2")]), "tensor 'y' is defined twice"),
    ("a node overwriting the input", _model([helper.make_node("Relu", ["x"], ["x"])], outputs=[_vi("x", None)]), "tensor 'x' is defined twice"),
    ("an input declared twice", _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2, 3]), _vi("x", [4])]), "input 'x' is declared twice"),
    ("an input and an initializer of two shapes", _model([helper.make_node("Relu", ["x"], ["y"])], inits=[_init("x", np.ones(7, np.float32))]), r"declared of shape \(2, 3\), but the initializer of that name has shape \(7,\)"),
    ("no outputs", _model([helper.make_node("Relu", ["x"], ["y"])], outputs=[]), "has no outputs"),
    ("Loop", _one("Loop", ["x"], body=helper.make_graph([], "b", [], [])), "operator 'Loop' is not supported"),
    ("If", _one("If", ["x"], then_branch=helper.make_graph([], "b", [], []), else_branch=helper.make_graph([], "b", [], [])), "operator 'If' is not supported"),
    ("Scan", _one("Scan", ["x"], body=helper.make_graph([], "b", [], []), num_scan_inputs=1), "operator 'Scan' is not supported"),
    ("a graph attribute on Relu", _one("Relu", ["x"], body=helper.make_graph([], "b", [], [])), "attribute body of type 5 is not supported"),
    # opsets
    ("opset 1", _model([helper.make_node("Relu", ["x"], ["y"])], opset=1), "default opset is 1"),
    ("opset 99", _model([helper.make_node("Relu", ["x"], ["y"])], opset=99), "default opset 99: tensorsched reads opsets 13 to"),
    ("opset 2^62", _model([helper.make_node("Relu", ["x"], ["y"])], opset=2**62), "reads opsets 13 to"),
    # attributes of the wrong type or value
    ("Gemm alpha NaN", _one("Gemm", ["x", "w"], [_init("w", np.ones((3, 4), np.float32))], alpha=float("nan")), "attribute alpha must be a finite float, got nan"),
    ("Gemm beta infinity", _one("Gemm", ["x", "w", "c"], [_init("w", np.ones((3, 4), np.float32)), _init("c", np.ones(4, np.float32))], beta=float("inf")), "attribute beta must be a finite float, got inf"),
    ("Gemm transB a string", _one("Gemm", ["x", "w"], [_init("w", np.ones((3, 4), np.float32))], transB="yes"), "attribute transB must be 0 or 1, got 'yes'"),
    ("AveragePool count_include_pad a string", _model([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], count_include_pad="x")], [_vi("x", [1, 1, 4, 4])]), "count_include_pad must be 0 or 1"),
    ("Conv strides of floats", _model([helper.make_node("Conv", ["x", "w"], ["y"], strides=[1.5, 1.0])], [_vi("x", [1, 3, 8, 8])], inits=[_init("w", np.ones((4, 3, 3, 3), np.float32))]), "strides must be a list of ints"),
    ("Conv group a string", _model([helper.make_node("Conv", ["x", "w"], ["y"], group="two")], [_vi("x", [1, 3, 8, 8])], inits=[_init("w", np.ones((4, 3, 3, 3), np.float32))]), "groups must be a positive int"),
    ("Softmax axis 2^63-1", _one("Softmax", ["x"], axis=2**63 - 1), "out of range"),
    ("Transpose perm of 10^5", _one("Transpose", ["x"], perm=list(range(10**5))), "attribute perm has 100000 values"),
    ("Cast to 100", _one("Cast", ["x"], to=100), "not an ONNX element type"),
    # tensors: 0-d and 0-sized, raw_data against dims, dims beyond int64
    ("a 0-d input computed on alone", _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [])]), r"its output is a scalar \(0-d\)"),
    ("a 0-sized input", _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [0, 3])]), "holds no empty tensor"),
    ("a 0-sized initializer as an operand", _one("Add", ["x", "w"], [_init("w", np.ones((0, 3), np.float32))]), r"input 'w' is an empty constant \(shape \(0, 3\)\)"),
    ("a ConstantOfShape of 0 elements as an operand", _folded_then_added("ConstantOfShape", [np.array([0], I64)]), r"input 'r' is an empty constant \(shape \(0,\)\)"),
]  # fmt: skip


def _raw_short():
    t = _init("w", np.ones((2, 3), np.float32))
    t.raw_data = t.raw_data[:-1]
    return _one("Add", ["x", "w"], [t])


def _dims(dims, data=True):
    t = _init("w", np.ones((2, 3), np.float32))
    del t.dims[:]
    t.dims.extend(dims)
    if not data:
        t.ClearField("raw_data")
    return _one("Add", ["x", "w"], [t])


REFUSED += [
    ("raw_data shorter than dims", _raw_short(), "23 bytes stored for dims"),
    ("dims 2^62 x 4 without data", _dims([2**62, 4], data=False), "bad dims"),
    ("dims whose product passes int64", _dims([2**32] * 3), "bad dims"),
    ("negative dims", _dims([-2, -3]), "bad dims"),
    ("dims of 2 x 3 without data", _dims([2, 3], data=False), "0 values stored"),
]


@pytest.mark.parametrize("what, model, message", REFUSED, ids=[c[0] for c in REFUSED])
def test_a_hostile_model_is_refused_saying_why(what, model, message):
    with pytest.raises(TensorschedError, match=message):
        from_onnx(model)


ACCEPTED = [
    ("Expand of a computed tensor to 10^6 x 2 x 3", _shape_model("Expand", [10**6, 2, 3]), (10**6, 2, 3)),
    ("Reshape copying a dim (0)", _shape_model("Reshape", [0, 3]), (2, 3)),
    ("Slice from -2^63 to 2^63-1", _one("Slice", ["x", "a", "b"], [_init("a", np.array([-(2**63)], I64)), _init("b", np.array([2**63 - 1], I64))]), (2, 3)),
    ("Pow by a 0-d input", _model([helper.make_node("Pow", ["x", "e"], ["y"])], [_vi("x", [2, 3]), _vi("e", [])]), (2, 3)),
    ("a 0-d initializer", _one("Add", ["x", "w"], [_init("w", np.array(2.0, np.float32))]), (2, 3)),
    ("Gemm alpha of an int attribute", _one("Gemm", ["x", "w"], [_init("w", np.ones((3, 4), np.float32))], alpha=2), (2, 4)),
    ("a graph output listed twice", _model([helper.make_node("Relu", ["x"], ["y"])], outputs=[_vi("y", None), _vi("y", None)]), (2, 3)),
    ("opset 13", _model([helper.make_node("Relu", ["x"], ["y"])], opset=13), (2, 3)),
]  # fmt: skip


@pytest.mark.parametrize("what, model, shape", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_a_valid_model_near_the_limits_is_read(what, model, shape):
    g = from_onnx(model)
    assert g.tensors[g.outputs[0]].shape == shape


def test_the_newest_opset_onnx_knows_is_read():
    newest = onnx.defs.onnx_opset_version()
    g = from_onnx(_model([helper.make_node("Relu", ["x"], ["y"])], opset=newest))
    assert g.tensors[g.outputs[0]].shape == (2, 3)
    m = _model([helper.make_node("Relu", ["x"], ["y"])], opset=13)
    m.opset_import.append(helper.make_opsetid("ai.onnx", newest + 1))
    with pytest.raises(OnnxImportError, match="opsets 13 and .* for the default domain"):
        from_onnx(m)


@pytest.mark.parametrize(
    "shapes, message",
    [
        ({"x": (1.5, 3)}, "give a tuple of positive ints"),
        ({"x": "13"}, "give a tuple of positive ints"),
        ({"x": 3}, "give a tuple of positive ints"),
        ({"x": (True, 3)}, "give a tuple of positive ints"),
        ({"x": (-1, 3)}, "must be at most 8 positive dims"),
        ({"x": (2**63, 3)}, "must be at most 8 positive dims"),
        (
            {"nope": (2, 3)},
            r"shapes name 'nope', which is not an input of the model \(its inputs: x\)",
        ),
    ],
)
def test_shapes_given_for_the_inputs_are_checked(shapes, message):
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", ["N", 3])])
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(m, shapes=shapes)
    assert from_onnx(m, shapes={"x": (np.int64(4), 3)}).tensors["y"].shape == (4, 3)


def _model_bytes():
    return _one("Add", ["x", "w"], [_init("w", np.ones((2, 3), np.float32))]).SerializeToString()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: d / "fifo.onnx", "not a regular file"),
        (lambda d: "/dev/zero", "not a regular file"),
        (lambda d: d, "it is a folder"),
        (lambda d: "a\x00b.onnx", "embedded null byte"),
        (lambda d: d / "none.onnx", "No such file or directory"),
        (lambda d: d / "empty.onnx", "it holds no graph and no opset \\(it is empty\\)"),
        (lambda d: d / "half.onnx", "is not an ONNX model"),
        (lambda d: d / "text.onnx", "is not an ONNX model"),
    ],
)
def test_a_model_file_that_is_not_one(tmp_path, make, message):
    os.mkfifo(tmp_path / "fifo.onnx")
    (tmp_path / "empty.onnx").write_bytes(b"")
    (tmp_path / "half.onnx").write_bytes(_model_bytes()[:40])
    (tmp_path / "text.onnx").write_text("ir_version: 8\ngraph { }\n")
    with no_hang(), pytest.raises(OnnxImportError, match=message):
        from_onnx(str(make(tmp_path)))
    with pytest.raises(OnnxImportError, match="holds no graph and no opset"):
        from_onnx(b"")


def test_a_model_that_is_a_link_to_a_model_is_read(tmp_path):
    (tmp_path / "m.onnx").write_bytes(_model_bytes())
    os.symlink(tmp_path / "m.onnx", tmp_path / "link.onnx")
    assert from_onnx(str(tmp_path / "link.onnx")).tensors["y"].shape == (2, 3)


def _external(tmp_path, location, **info):
    m = _one("Add", ["x", "w"], [_init("w", np.ones((2, 3), np.float32))])
    t = m.graph.initializer[0]
    (tmp_path / "w.bin").write_bytes(t.raw_data)
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=location)
    for k, v in info.items():
        t.external_data.add(key=k, value=v)
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    return str(path)


@pytest.mark.parametrize(
    "location, info, message",
    [
        ("w.bin", {"offset": "\u0663"}, "external data offset '\u0663' is not a byte count"),
        ("w.bin", {"length": "9" * 19}, "9999999999999999999 bytes at offset 0"),
        ("w.bin", {"offset": "-4"}, "is not a byte count"),
        ("fifo.bin", {}, "is not a file inside the model's folder"),
        ("zero.bin", {}, "is not a file inside the model's folder"),
        ("../w.bin", {}, "is not a file name inside the model's folder"),
        ("m.onnx", {}, "bytes at offset 0 of 'm.onnx'"),
    ],
)
def test_external_data_that_is_not_a_tensor_file(tmp_path, location, info, message):
    os.mkfifo(tmp_path / "fifo.bin")
    os.symlink("/dev/zero", tmp_path / "zero.bin")
    path = _external(tmp_path, location, **info)
    with no_hang(), pytest.raises(OnnxImportError, match=message):
        from_onnx(path)
    assert from_onnx(_external(tmp_path, "w.bin", offset="0", length="24")).tensors["w"].shape == (
        2,
        3,
    )


# ---------------------------------------------------------------- IR and te text

N = 10**5


@pytest.mark.parametrize(
    "text, message",
    [
        ("!" * N + "true", "nests more than 128 operators deep"),
        ("+".join(["1"] * N), "nests more than 128 operators deep"),
        ("(" * N + "1", "the text ends too early"),
        (
            "1" + "0" * 5000,
            r"the integer 10000000000000000000\.\.\. \(5001 digits\) is beyond int64",
        ),
        ("1e400f", "1e400 is beyond float32"),
        ("a\x00b", "unexpected character '\\\\x00'"),
    ],
)
def test_hostile_ir_expressions_are_parse_errors(text, message):
    from tensorsched.ir.parser import parse_ir_expr

    with pytest.raises(ParseError, match=message):
        parse_ir_expr(text)


def test_ir_text_nested_parentheses_and_loops():
    from tensorsched.ir.parser import parse_ir, parse_ir_expr

    assert str(parse_ir_expr("(" * N + "1" + ")" * N)) == "1"  # parentheses add no depth
    with pytest.raises(ParseError, match="blocks nest more than 64 deep"):
        parse_ir("for (i, 0, 4) {" * 10_000 + "}" * 10_000)


def test_te_text_nesting_literals_and_shapes():
    from tensorsched.ir.te_text import parse_expr

    assert parse_expr("C[i] = " + "(" * N + "A[i]" + ")" * N, "i=4")["C"].shape == (4,)
    bad = [
        ("C[i] = " + "-" * N + "A[i]", "i=4", "nests more than 128 operators deep"),
        ("C[i] = A[i] + " + "9" * 5000, "i=4", r"99999999999999999999\.\.\. \(5000 characters\)"),
        ("C[i] = A[i] + 1e400", "i=4", "the number 1e400 is beyond every type"),
        ("C[i] = A[i]", "i=4,i=5", "shapes: 'i' is given twice"),
        ("C[i] = A[i]", f"i={2**63}", "more than int64"),
        (
            "C[i,j,k] = A[i] + B[j] + D[k]",
            ",".join(f"{v}=2147483647" for v in "ijk"),
            "more than int64",
        ),
        ("C[i] = A[i + 4611686018427387904 * 4]", "i=4", "cannot size input .A. from this index"),
    ]
    for text, shapes, message in bad:
        with pytest.raises(TensorschedError, match=message):
            parse_expr(text, shapes)


def test_cli_expr_of_deep_text_exits_2(capsys):
    assert main(["ir", "--expr", "C[i] = " + "-" * N + "A[i]", "--shape", "i=4"]) == 2
    assert "nests more than 128 operators deep" in capsys.readouterr().err
    assert main(["ir", "--expr", "C[i] = A[i] * 2.0", "--shape", "i=4,i=8"]) == 2
    assert "shapes: 'i' is given twice" in capsys.readouterr().err


def test_source_out_in_a_folder_not_there_is_made_and_only_it(tmp_path, capsys):
    """``--out`` names a folder to write the kernels in; folders on its path are made (as
    ``tune --log`` makes the log's), nothing else is written."""
    log = tmp_path / "log.jsonl"
    log.write_text(record() + "\n")
    out = tmp_path / "a" / "b"
    assert main(["source", "--log", str(log), "--out", str(out)]) == 0
    assert sorted(os.listdir(out)) == ["gemm_cpu_16x16x16.cl", "gemm_cpu_16x16x16.json"]
    assert sorted(os.listdir(tmp_path)) == ["a", "log.jsonl"]
    assert main(["source", "--log", str(log), "--out", str(log / "x")]) == 2
    assert f"cannot make --out {log / 'x'}: Not a directory" in capsys.readouterr().err
