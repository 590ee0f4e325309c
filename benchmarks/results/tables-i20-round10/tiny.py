"""tiny.py: CPU ms of classify_and_detect on a 5-line sheet, fastest of 200 (the fixed cost per sheet)."""

import time

from airflow_sbcrawl.tables.detect import classify_and_detect
from airflow_sbcrawl.tables.model import Provenance

P = Provenance("b", "b")
ROWS = [["Table 1. Population", "", ""], ["", "2019", "2020"], ["Men", "10", "12"], ["Women", "11", "13"],
        ["Total", "21", "25"]]
classify_and_detect(ROWS, P)
best = 1e9
for _ in range(200):
    t = time.process_time()
    classify_and_detect(ROWS, P)
    best = min(best, time.process_time() - t)
print("tiny ms", best * 1e3)
