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


def pytest_sessionfinish(session):
    """In a pytest-xdist worker: hand this worker's fuzzer counts to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    stats = session.config.stash.get(FUZZ_STATS, None)
    if workeroutput is not None and stats:
        workeroutput["fuzz_stats"] = dict(stats)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: the controller adds up the workers'
def pytest_testnodedown(node, error):
    counts = getattr(node, "workeroutput", {}).get("fuzz_stats")
    if counts:
        from fuzzing import FuzzStats

        node.config.stash.setdefault(FUZZ_STATS, FuzzStats()).update(counts)


def pytest_terminal_summary(terminalreporter):
    """The schedule fuzzer's counts, when any fuzz test ran (in this process or, with
    pytest-xdist, in any worker)."""
    stats = terminalreporter.config.stash.get(FUZZ_STATS, None)
    if not stats:
        return
    terminalreporter.section("schedule fuzzer")
    for line in stats.lines():
        terminalreporter.write_line(line)
