#!/usr/bin/env bash
# Creates .venv (if missing) and installs the project with every extra, from the package registries only.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
# Some machines' pip configuration names local package folders that do not exist; pip warns once per
# package about them, which buries anything useful, so those lines are dropped.
filtered_pip() { .venv/bin/python -m pip "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
echo "setup: upgrading pip"
filtered_pip install --quiet --upgrade pip
# Not --quiet: on a fresh machine this takes minutes (Airflow, pyiceberg, ...), and pip's lines per package
# (and its bars on a terminal) show it is moving.
echo "setup: installing airflow-sbcrawl with every extra into .venv (several minutes the first time)"
# compat mode: a plain path entry, robust to packages added after the install
filtered_pip install -e ".[all,dev]" --config-settings editable_mode=compat
echo "setup: done; run the tests with scripts/test.sh"
