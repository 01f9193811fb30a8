"""The catalogue of bad inputs (``tests/catalogue.py``): every row raises its error
class (a ``TensorschedError`` subclass; a ``UserWarning`` for a damaged tuning log; argparse's
``SystemExit`` for a command-line usage error), and ``docs/errors.md`` is the table that
``scripts/make_error_catalogue.py`` writes from the current list."""

import contextlib
import os
import re
from unittest import mock

import catalogue
import pytest

from tensorsched.errors import TensorschedError
from tensorsched.ops import templates

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "errors.md")


def _id(case):
    return re.sub(r"\W+", "_", f"{case.area} {case.what}").strip("_")[:80]


@pytest.fixture(scope="module")
def device_name():
    return catalogue.device_name()


@pytest.mark.parametrize("case", catalogue.CASES, ids=[_id(c) for c in catalogue.CASES])
def test_bad_input_raises_its_error(case, device_name):
    if case.device and not device_name:
        pytest.skip("needs an OpenCL device")
    outcome = catalogue.run(case)
    assert outcome.error is not None, f"{case.what}: nothing was raised"
    assert issubclass(outcome.error, case.error), (
        f"{case.what}: expected {case.error.__name__}, got {outcome.error.__name__}: "
        f"{outcome.message}"
    )
    if not issubclass(case.error, (Warning, SystemExit)):
        assert issubclass(outcome.error, TensorschedError)
    assert outcome.message.strip(), "the message is empty"


def test_trigger_is_a_callable_that_raises():
    case = next(c for c in catalogue.CASES if c.what == "split an axis twice")
    with pytest.raises(case.error, match="already split"):
        case.trigger()
    case = next(c for c in catalogue.CASES if c.area == "tuner files" and c.error is UserWarning)
    with pytest.warns(UserWarning, match="skipped a damaged log line"):
        case.trigger()


@contextlib.contextmanager
def _builtin_templates_only():
    """Hide the templates other test modules registered, as in the fresh process the script
    runs in (some messages list the registered templates)."""
    with contextlib.ExitStack() as stack:
        for kind, table in templates.TEMPLATES.items():
            builtin = {n: f for n, f in table.items() if (kind, n) in templates._BUILTIN}
            stack.enter_context(mock.patch.dict(table, builtin, clear=True))
        yield


def test_doc_is_up_to_date(device_name):
    """docs/errors.md is what the script writes now (rows that need a device are compared
    without their message when it names this machine, and kept as they are without one)."""
    assert os.path.exists(DOC), "run python scripts/make_error_catalogue.py"
    doc = open(DOC).read().splitlines()
    with _builtin_templates_only():
        outcomes = [
            catalogue.run(c) if device_name or not c.device else catalogue.Outcome(c.error, "")
            for c in catalogue.CASES
        ]
    new = catalogue.table(outcomes, device_name).splitlines()
    assert len(doc) == len(new), (
        "rows were added or removed: run python scripts/make_error_catalogue.py"
    )
    loose = {
        f"| {c.what} (device) |"
        for c in catalogue.CASES
        if c.machine or (c.device and not device_name)
    }
    for old, line in zip(doc, new):
        if any(line.startswith(p) for p in loose) or "generated the file" in line:
            old, line = old.rsplit("|", 2)[0], line.rsplit("|", 2)[0]
            if "generated the file" in line:
                old, line = old.split("generated the file")[0], line.split("generated the file")[0]
        assert old == line, (
            "docs/errors.md is out of date: run python scripts/make_error_catalogue.py"
        )
