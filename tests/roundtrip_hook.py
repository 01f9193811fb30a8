"""The IR text round trip, applied to every test: an autouse fixture turns on
``config.roundtrip`` (and ``TS_ROUNDTRIP=1`` for the example scripts and tuning workers that
tests start as subprocesses), so every function that ``ts.lower`` produces while a test runs is
printed, parsed back with ``ts.parse_ir`` and compared with ``structural_equal`` (the function
form), and its bare body is reparsed and reprinted to the same text. A failure raises
``InternalError`` in the test that lowered the function; so does ``parse_ir`` refusing an
index it cannot prove inside its buffer (only a lowering that really indexes past a buffer,
with the loop values that do, is compared unchecked: see ``roundtrip_problem``).

``tests/conftest.py`` imports the fixture, which is all it takes to apply it everywhere.
"""

import pytest

from tensorsched.config import config


@pytest.fixture(autouse=True)
def ir_text_roundtrip(monkeypatch):
    monkeypatch.setattr(config, "roundtrip", True)
    monkeypatch.setenv("TS_ROUNDTRIP", "1")
    yield
