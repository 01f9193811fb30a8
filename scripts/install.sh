#!/usr/bin/env bash
# Installs what tensorsched needs on a fresh Debian machine (as root): Python, the PoCL OpenCL
# CPU device, and the package with its test extra in ./.venv.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq python3 python3-venv python3-pip pocl-opencl-icd >/dev/null
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e '.[test]'
