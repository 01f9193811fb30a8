"""Repository-wide pytest options (this file sits at the rootdir so that pytest reads its
``pytest_addoption`` however the tests are selected)."""


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


def pytest_terminal_summary(terminalreporter):
    """The schedule fuzzer's counts, when any fuzz test ran (tests/fuzzing: STATS)."""
    import sys

    fuzz = sys.modules.get("fuzzing")
    if fuzz is None or not fuzz.STATS:
        return
    terminalreporter.section("schedule fuzzer")
    for line in fuzz.summary_lines(fuzz.STATS):
        terminalreporter.write_line(line)
