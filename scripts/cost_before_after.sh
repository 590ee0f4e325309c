#!/usr/bin/env bash
# Interleaved runs of `python -m sbcrawl_dev bench cost` on the code of a git revision ("before") and on the
# working tree ("after"), both timed by the working tree's benchmark code, for side-by-side figures on a
# shared machine.
#
#   scripts/cost_before_after.sh REV ROUNDS [bench cost arguments...]
#   e.g. scripts/cost_before_after.sh main 3 --saved-pages /tmp/pages --repeats 1 --frontiers "" --crawls 0
#
# Each run writes its own table (--out is set per run); the tables are printed as they come.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=$1 rounds=$2
shift 2
work=$(mktemp -d /tmp/sbcrawl-before-after-XXXX)
mkdir -p "$work/before" "$work/after"
git archive "$rev" airflow_sbcrawl | tar -x -C "$work/before"
cp -r airflow_sbcrawl "$work/after/"  # a snapshot: editing the tree meanwhile changes nothing
for side in before after; do
  # the benchmark (and the simulator it serves) is the working tree's on both sides
  cp -r sbcrawl_dev "$work/$side/"
done
python=$PWD/.venv/bin/python
for round in $(seq 1 "$rounds"); do
  for side in before after; do
    echo "== $side, round $round"
    # Run from the snapshot's folder: the current directory comes first on sys.path.
    (cd "$work/$side" && PYTHONPATH="$work/$side" "$python" -m sbcrawl_dev bench cost \
      "$@" --out "$work/out-$side-$round" 2>/dev/null)
  done
done
