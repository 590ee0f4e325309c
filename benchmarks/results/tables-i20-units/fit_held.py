"""Fit the leave-one-corpus-out models once (``tables_regions.loco_models``, the code `--loco` runs) and save
them, so that the code before and after a change of the post-model rules is scored on the same models with
`bench tables --regions --held-out DIR` (two `--loco` runs refit them, and the SAUS-held-out fit varies
between runs). Usage: PYTHONPATH=$PWD python fit_held.py DIR"""

import sys
from pathlib import Path

from sbcrawl_dev.bench import tables_corpora
from sbcrawl_dev.bench.tables_regions import loco_models

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
models = loco_models({name: [] for name in tables_corpora.available()})
for name, (line, region) in models.items():
    region.save(out / f"{name}.json")
    line.save(out / f"{name}.line.json")
    print(name, "saved", flush=True)
