"""One Destatis weekly-deaths sheet: its observations, how many share their key, a few keys (issue 20, round 7).

    PYTHONPATH=<tree> python benchmarks/results/tables-i20-round7/sterbefaelle.py
"""

import collections
from pathlib import Path

from airflow_sbcrawl.tables.api import detect_file

f = Path.home() / ".cache/sbcrawl-tables-real/destatis-sonderauswertung-sterbefaelle.xlsx"
res = detect_file(f)
tabs = list(res if isinstance(res, list) else getattr(res, "tables", []))
for t in tabs:
    s = repr(t)[:2000]
    if "D_2016_2022_KW_AG_M" not in s:
        continue
    obs = list(t.observations)
    keys = collections.Counter((tuple(o.row_labels), tuple(o.column_path)) for o in obs)
    print(len(obs), "dup", sum(c for c in keys.values() if c > 1))
    for o in obs[:3] + obs[60:62]:
        print(" ", o.row_labels, o.column_path, o.value)
