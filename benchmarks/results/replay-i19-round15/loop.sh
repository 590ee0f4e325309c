#!/bin/bash
# usage: loop.sh TREE N LOG  -- runs the tiny-site budget test N times from TREE, logs pass/fail
TREE=$1; N=$2; LOG=$3
cd $TREE
: > $LOG
for i in $(seq 1 $N); do
  out=$(PYTHONPATH=$TREE /work/main/.venv/bin/python -m pytest tests/test_engine.py -q -k request_budget_is_exact -p no:cacheprovider 2>&1)
  if echo "$out" | grep -q "1 passed"; then echo "$i pass" >> $LOG; else echo "$i FAIL" >> $LOG; echo "$out" | grep -E "^E " | head -5 >> $LOG; fi
done
echo done >> $LOG
