"""Repository-wide pytest options (this file sits at the rootdir so that pytest reads its
``pytest_addoption`` however the tests are selected), and the schedule fuzzer's counts."""

import pytest

# the schedule fuzzer's FuzzStats for the session (the fixture ``fuzz_stats`` hands it out)
FUZZ_STATS = pytest.StashKey()


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/*.cl from the current code generator instead of "
        "comparing against them",
    )
    parser.addoption(
        "--fuzz-long",
        action="store_true",
        default=False,
        help="run the schedule fuzzer (tests/test_fuzz.py) with thousands of "
        "examples instead of a few hundred, and print its counts",
    )


@pytest.fixture(scope="session")
def fuzz_stats(pytestconfig):
    """The ``FuzzStats`` (tests/fuzzing) that the fuzz tests of this session count into."""
    from fuzzing import FuzzStats

    return pytestconfig.stash.setdefault(FUZZ_STATS, FuzzStats())


def pytest_terminal_summary(terminalreporter):
    """The schedule fuzzer's counts, when any fuzz test ran."""
    stats = terminalreporter.config.stash.get(FUZZ_STATS, None)
    if not stats:
        return
    terminalreporter.section("schedule fuzzer")
    for line in stats.lines():
        terminalreporter.write_line(line)
