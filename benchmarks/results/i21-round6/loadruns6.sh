#!/usr/bin/env bash
# Three whole-suite runs in a row on the clone, under a kept background load.
HERE="$(cd "$(dirname "$0")" && pwd)"
cd /tmp/sbclone
rm -f /tmp/loadkeeper.stop
/usr/bin/python3 "$HERE/../i21-round4/load-runs/loadkeeper.py" 10 10800 /tmp/loadruns6/load.log &
KP=$!
for i in 1 2 3; do
  s=$(date +%s)
  bash scripts/test.sh > /tmp/loadruns6/run$i.log 2>&1; rc=$?
  echo "run $i rc=$rc seconds=$(( $(date +%s) - s )) $(tail -1 /tmp/loadruns6/run$i.log)" >> /tmp/loadruns6/summary.txt
done
touch /tmp/loadkeeper.stop; wait $KP
