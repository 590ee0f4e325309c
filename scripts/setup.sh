#!/usr/bin/env bash
# Creates .venv (if missing) and installs the project with every extra, from the package registries only.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# Some machines' pip configuration names local package folders that do not exist; pip warns once per
# package about them, which buries anything useful, so those lines are dropped.
quiet_pip() { .venv/bin/python -m pip "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
quiet_pip install --quiet --upgrade pip
# compat mode: a plain path entry, robust to packages added after the install
quiet_pip install --quiet -e ".[all,dev]" --config-settings editable_mode=compat
