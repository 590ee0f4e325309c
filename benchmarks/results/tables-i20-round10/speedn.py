"""speedn.py CORPUS learned|rules N: CPU us per non-empty cell of classify_and_detect, fastest of N runs per sheet;
median over the sheets, and total CPU over total cells ("all") (round 7's script)."""

import statistics
import sys
import time

from airflow_sbcrawl.tables.detect import classify_and_detect
from airflow_sbcrawl.tables.model import Provenance
from sbcrawl_dev.bench import tables_corpora

P = Provenance("b", "b")
regions = None if sys.argv[2] == "learned" else "rules"
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
per_cell = []
total_time = total_cells = 0
for s in tables_corpora.load_corpus(sys.argv[1]):
    rows = s["rows"]
    cells = sum(1 for r in rows for c in r if c.strip())
    if not cells:
        continue
    best = 1e9
    for _ in range(runs):
        t = time.process_time()
        classify_and_detect(rows, P, regions=regions)
        best = min(best, time.process_time() - t)
    per_cell.append(best * 1e6 / cells)
    total_time += best
    total_cells += cells
print(sys.argv[1], sys.argv[2], "median us/cell", round(statistics.median(per_cell), 2), len(per_cell),
      "all cells us/cell", round(total_time * 1e6 / total_cells, 2), flush=True)
