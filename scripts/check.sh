#!/usr/bin/env bash
# The whole check, as CI runs it: lint and format (ruff), types (mypy on tensorsched/), tests.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
# tests in parallel, one worker process per core (pytest-xdist); each test file runs whole in one
# worker, in file order, so module fixtures (a Dask cluster, built networks) are made once.
# `-n 0` runs the tests in this process.
.venv/bin/python -m pytest -n auto --dist loadfile "$@"
