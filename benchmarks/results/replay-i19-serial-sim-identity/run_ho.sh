#!/bin/bash
cd /work/shared/eval
for P in ho-rulings ho-footer-hub ho-portal ho-series ho-inline ho-small; do for S in 1 2; do for T in d3f:/work/wt/d3f main:/work/base-main; do
  n=${T%%:*}; t=${T#*:}; D=/tmp/lead/serial/$P-$S-$n; mkdir -p $D
  [ -f $D/r.json ] && continue
  nice -n 10 env PYTHONPATH=$t /work/main/.venv/bin/python -m sbcrawl_dev.bench.evaluate_launcher /work/shared/eval --profile $P --seed $S --no-baselines --timeout 2400 \
    --outdir $D/out --json $D/r.json --cmd "env PYTHONPATH=$t /work/main/.venv/bin/sbcrawl crawl {start_url} --out {outdir} --max-requests {budget} --delay 0 --quiet --concurrency 1 --json > $D/summary.json" > $D/eval.log 2>&1
  rm -rf $D/out
  echo "$P $S $n $(date -u +%H:%M)"
done; done; done
