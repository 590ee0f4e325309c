"""irtiny.py N: classify_and_detect N times on the 5-line sheet of tiny.py (the fixed cost per sheet)."""

import sys

from airflow_sbcrawl.tables.detect import classify_and_detect
from airflow_sbcrawl.tables.model import Provenance

P = Provenance("b", "b")
ROWS = [["Table 1. Population", "", ""], ["", "2019", "2020"], ["Men", "10", "12"], ["Women", "11", "13"],
        ["Total", "21", "25"]]
classify_and_detect(ROWS, P)
for _ in range(int(sys.argv[1])):
    classify_and_detect(ROWS, P)
