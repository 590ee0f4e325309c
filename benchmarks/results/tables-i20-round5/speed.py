# speed.py CORPUS learned|rules: CPU us per non-empty cell of classify_and_detect, fastest of 3 runs per sheet, median
import statistics, sys, time
from sbcrawl_dev.bench import tables_corpora
from airflow_sbcrawl.tables.detect import classify_and_detect
from airflow_sbcrawl.tables.model import Provenance
P = Provenance("b", "b")
S = tables_corpora.load_corpus(sys.argv[1])
reg = None if sys.argv[2] == "learned" else "rules"
res = []
for s in S:
    rows = s["rows"]; cells = sum(1 for r in rows for c in r if c.strip())
    if not cells: continue
    best = 1e9
    for _ in range(3):
        t = time.process_time(); classify_and_detect(rows, P, regions=reg); best = min(best, time.process_time() - t)
    res.append(best * 1e6 / cells)
print(sys.argv[1], sys.argv[2], "median us/cell", round(statistics.median(res), 2), len(res), flush=True)
