#!/bin/bash
# usage: ing.sh TREE TAG SEEDS...  -- ingolstadt, 8 in flight, one run per seed
TREE=$1; TAG=$2; shift 2
cd $TREE
for s in "$@"; do
  PYTHONPATH=$TREE /work/main/.venv/bin/python -m sbcrawl_dev bench replay --sites ingolstadt --runs 1 --policies default --jobs 1 --extra-args "--seed $s" --eval-dir /work/shared/eval --out /tmp/h19n/ing-$TAG-s$s > /tmp/h19n/ing-$TAG-s$s.log 2>&1
  echo "$s $(grep '^| ingolstadt' /tmp/h19n/ing-$TAG-s$s/table.md)" >> /tmp/h19n/ing-$TAG.txt
done
