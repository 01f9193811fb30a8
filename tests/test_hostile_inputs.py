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
import signal
import warnings

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
