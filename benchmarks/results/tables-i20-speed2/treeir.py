"""treeir.py N: the role and start trees' raw() alone, on the inputs decide() gives them on each median sheet, N
times (under valgrind: the trees' share of decide's instructions, treeir.sh)."""

import json
import pathlib
import sys

from airflow_sbcrawl.tables import regions
from airflow_sbcrawl.tables.detect import classify_and_detect
from airflow_sbcrawl.tables.model import Provenance

MODEL = regions.default_region_model()
inputs = []
for name in ("roles", "starts"):
    trees = getattr(MODEL, name)
    original = trees.raw

    def keep(x, original=original, trees=trees):
        inputs.append((trees, x.copy()))
        return original(x)

    trees.raw = keep
SHEETS = json.loads((pathlib.Path(__file__).parent / "medsheets.json").read_text())
for rows in SHEETS.values():
    classify_and_detect(rows, Provenance("b", "b"))
for name in ("roles", "starts"):
    del getattr(MODEL, name).raw  # back to the class's method
for _ in range(int(sys.argv[1])):
    for trees, x in inputs:
        trees.raw(x)
