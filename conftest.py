"""Repository-wide pytest options (this file sits at the rootdir so that pytest reads its
``pytest_addoption`` however the tests are selected)."""


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/*.cl from the current code generator instead of "
                          "comparing against them")
