#!/bin/bash
# usage: tjrun.sh TREE TAG SEED [SITE] -- one crawl via the replay launcher; prints targets, requests, stop reason
TREE=$1; TAG=$2; S=$3; SITE=${4:-tj}
OUT=/tmp/h19n/runs/$SITE-$TAG-s$S-$RANDOM; mkdir -p $OUT
cd /work/shared/eval && PYTHONPATH=$TREE /work/main/.venv/bin/python -m sbcrawl_dev.bench.replay_launcher /work/shared/eval \
  --sites-json $TREE/sbcrawl_dev/bench/replay_sites.json --site $SITE \
  --cmd "/work/main/.venv/bin/python -m airflow_sbcrawl.cli crawl {start_url} --out {outdir} --max-requests {budget} --delay 0 --quiet --no-report --seed $S" \
  --outdir $OUT/crawl --json $OUT/r.json > $OUT/log 2>&1
/work/main/.venv/bin/python - $OUT $TAG $S <<'PY'
import json, sys
r = json.load(open(sys.argv[1] + "/r.json"))
c = r["crawler"]
reason = open(sys.argv[1] + "/r.json.crawler.log").readline().split("stopped: ", 1)[-1].strip()
print(sys.argv[2], "seed", sys.argv[3], "targets", c["targets_retrieved"], "of", c["targets_total"], "req", c["requests"], "gap", r.get("gap_closed_90_tree"), "|", reason[:230], flush=True)
PY
rm -rf $OUT/crawl
