"""featdump.py OUT.npz: sheet_features (with layout) of every sheet of real, saus, fuste (round 8's script)."""

import sys

import numpy as np

from airflow_sbcrawl.tables.features import sheet_features
from sbcrawl_dev.bench import tables_corpora

out = {}
for corpus in ("real", "saus", "fuste"):
    for k, s in enumerate(tables_corpora.load_corpus(corpus)):
        rows = s["rows"]
        width = max(map(len, rows), default=0)
        grid = [[*map(str, r), *[""] * (width - len(r))] for r in rows]
        if grid and width:
            out[f"{corpus}/{k}"] = sheet_features(grid, layout=True)
np.savez(sys.argv[1], **out)
