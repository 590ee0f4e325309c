#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs the main job on embedded defaults: a simulated statistics site,
# a local SeaweedFS, Airflow on SQLite; prints where the targets landed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m sbcrawl_dev demo "$@"
