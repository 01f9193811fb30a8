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
- te text (``parse_expr``, ``tune --expr``): a name given twice in the shapes.

Inputs that were already handled and are kept so by a test here: ConstantOfShape / Range /
Expand / Tile / Pad / Resize asking for 10^12 elements or negative sizes, a cycle, an
undefined name, Loop / If / Scan, opset 1, raw_data of the wrong length, huge dims, a truncated
or non-protobuf model, external data through ``..``, an absolute path or a link, 10^5 nested
parentheses in IR and te text, integer literals of 5000 digits, ``--shape`` with zeros,
negatives, 2^63 or floats.

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

from tensorsched.cli import main
from tensorsched.tune.dispatch import apply_best
from tensorsched.tune.log import MAX_LINE_BYTES, LogError, read_log
from tensorsched.tune.record import PEAK_FLOPS

TASK = {
    "kind": "gemm",
    "template": "cpu",
    "shape": [16, 16, 16],
    "dtype": "float32",
    "epilogue": [],
    "expr": "",
    "expr_shapes": "",
}
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
