#!/usr/bin/env bash
# Installs what tensorsched needs on a fresh Debian machine (as root): Python, the PoCL OpenCL
# CPU device, and the package with its test extra in ./.venv. Quiet: only errors are printed
# (apt's and pip's progress, notices and root/upgrade warnings are not); set VERBOSE=1 to see
# everything.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${VERBOSE:-}" ]; then quiet=(); else quiet=(-qq); fi  # -qq: errors only
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore PIP_NO_WARN_SCRIPT_LOCATION=1
export PIP_PROGRESS_BAR=off
if command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  log=$(mktemp)
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      python3 python3-venv python3-pip pocl-opencl-icd; } >"$log" 2>&1; then
    cat "$log" >&2
    exit 1
  fi
  rm -f "$log"
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install "${quiet[@]}" --upgrade pip
.venv/bin/pip install "${quiet[@]}" -e '.[test]'
