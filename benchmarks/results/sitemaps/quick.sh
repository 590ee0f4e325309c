#!/bin/bash
# Used for the figures in README.md: the command line of `python -m sbcrawl_dev bench harness` (its
# crawl_command) through the same evaluate_launcher, without the harness baselines (taken once from the
# harness runs of main, which are the same for every crawler of one site).
# quick.sh <tree> <profile> <seed> <tag> [extra crawl args]: one crawl scored by the harness, no baselines
TREE=$1; PROFILE=$2; SEED=$3; TAG=$4; shift 4
cd /work/shared/eval
OUT=/tmp/h23/quick/$TAG-$PROFILE-s$SEED; rm -rf $OUT; mkdir -p /tmp/h23/quick
BUDGET=$(PYTHONPATH=$TREE /work/main/.venv/bin/python -c "
import sys; sys.path.insert(0,'/work/shared/eval'); import sitegen; print(int(1.5*sitegen.generate('$PROFILE',$SEED,1.0).total_urls))")
PYTHONPATH=$TREE /work/main/.venv/bin/python -m sbcrawl_dev.bench.evaluate_launcher /work/shared/eval --profile $PROFILE --seed $SEED --scale 1 \
  --cmd "/work/main/.venv/bin/sbcrawl crawl {start_url} --out {outdir} --max-requests {budget} --delay 0 --quiet --no-report $*" \
  --budget $BUDGET --timeout 1800 --outdir $OUT --verify-glob "$OUT/objects/*" --json $OUT.json --grace 0.2 --no-baselines >/dev/null 2>&1
/work/main/.venv/bin/python -c "
import json; d=json.load(open('$OUT.json')); c=d['crawler']; cur=c['curve']; m=max(y for x,y in cur)
print('$TAG $PROFILE s$SEED', 'to90%', c['requests_to_90_pct_site'], 'to90', c['requests_to_90'], 'to100', min(x for x,y in cur if y==m), 'total', c['requests'], 'targets', c['targets_retrieved'], '/', c['targets_total'], 'trap', c['trap_requests'], 'sitemap', c['requests_by_kind'].get('sitemap'))"
