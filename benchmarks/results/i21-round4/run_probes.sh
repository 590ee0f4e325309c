#!/usr/bin/env bash
# Issue 21's outside probes (closing-note list), against the tree given as $1, with the scripts of earlier
# rounds (benchmarks/results/i21-network, benchmarks/results/replay-urls) and the hostile-sheet bench's files.
# Usage: bash benchmarks/results/i21-round4/run_probes.sh TREE [probe...]   (run from the worktree's root)
set -u
TREE=$1; shift
PY=/work/main/.venv/bin/python
P=benchmarks/results/i21-network
PROBES=${*:-sheets long-urls retry-after handshake s3-cuts}
for probe in $PROBES; do
  echo "== $probe ($(date -u +%H:%M:%S), tree $TREE at $(git -C "$TREE" rev-parse --short HEAD))"
  case $probe in
    sheets)  # the four XLSX variants and two ODS files of item 1, each read by detect_file in a child process
      env PYTHONPATH="$TREE" $PY benchmarks/results/i21-round4/probe_sheets.py ;;
    long-urls)  # item 2: a 45-request CLI crawl of pages linking 60 kB URLs, under /usr/bin/time
      env -u HTTP_PROXY -u http_proxy PYTHONPATH="$TREE" $PY benchmarks/results/replay-urls/probe_long_urls.py "$TREE" ;;
    retry-after)  # item 3
      env -u HTTP_PROXY -u http_proxy PYTHONPATH="$TREE" $PY $P/probe_network.py retry-after --seconds 3600 --links 14
      env -u HTTP_PROXY -u http_proxy PYTHONPATH="$TREE" $PY $P/probe_network.py retry-after --seconds 5 --links 6 ;;
    handshake)  # item 4
      env -u HTTP_PROXY -u http_proxy PYTHONPATH="$TREE" $PY $P/probe_network.py handshake ;;
    s3-cuts)  # item 5
      env -u HTTP_PROXY -u http_proxy PYTHONPATH="$TREE" $PY $P/probe_s3_cuts.py --profile small --max-requests 600 ;;
  esac
done
echo "== done $(date -u +%H:%M:%S)"
