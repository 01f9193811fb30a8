#!/usr/bin/env bash
# The whole check, as CI runs it: lint and format (ruff), types (mypy on tensorsched/), tests.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
