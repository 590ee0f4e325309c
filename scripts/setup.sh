#!/usr/bin/env bash
# Creates .venv (if missing) and installs the project with every extra, from the package registries only.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# compat mode: a plain path entry, robust to packages added after the install
.venv/bin/python -m pip install --quiet -e ".[all,dev]" --config-settings editable_mode=compat
