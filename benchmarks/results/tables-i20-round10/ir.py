"""ir.py N: classify_and_detect N times on each median real sheet (medsheets.json), after one warm-up."""

import json
import pathlib
import sys

from airflow_sbcrawl.tables.detect import classify_and_detect
from airflow_sbcrawl.tables.model import Provenance

P = Provenance("b", "b")
SHEETS = json.loads((pathlib.Path(__file__).parent / "medsheets.json").read_text())
for rows in SHEETS.values():
    classify_and_detect(rows, P)
for _ in range(int(sys.argv[1])):
    for rows in SHEETS.values():
        classify_and_detect(rows, P)
