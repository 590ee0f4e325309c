#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs the whole test suite: lint, then pytest. Tests start their own
# SeaweedFS, simulated sites and Airflow (SQLite) and stop them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
exec .venv/bin/pytest -q -p no:cacheprovider "$@"
