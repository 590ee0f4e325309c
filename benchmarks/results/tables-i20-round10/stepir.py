"""stepir.py STOP N [tiny]: classify_and_detect's steps, as detect.classify_and_detect runs them on a sheet of one
block of columns, up to step STOP (0..10), N times on each median sheet (or the 5-line sheet), after one run of
every step. Under valgrind for STOP = 0..10, the differences are each step's instructions (stepir.sh)."""

import json
import pathlib
import sys

import numpy as np

from airflow_sbcrawl.tables import detect
from airflow_sbcrawl.tables.body import legend_zero_markers
from airflow_sbcrawl.tables.classifier import default_classifier
from airflow_sbcrawl.tables.features import FEATURE_NAMES, cell_kinds, sheet_features
from airflow_sbcrawl.tables.model import Provenance
from airflow_sbcrawl.tables.regions import default_region_model, final_classes, find_tables, rule_headers
from airflow_sbcrawl.tables.segment import BODY, column_blocks, refine_classes
from airflow_sbcrawl.tables.values import SheetCells

P = Provenance("b", "b", detector_version="x")
if len(sys.argv) > 3:
    SHEETS = {"tiny": [["Table 1. Population", "", ""], ["", "2019", "2020"], ["Men", "10", "12"],
                       ["Women", "11", "13"], ["Total", "21", "25"]]}
else:
    SHEETS = json.loads((pathlib.Path(__file__).parent / "medsheets.json").read_text())
CLF, MODEL = default_classifier(), default_region_model()


def run(rows: list[list[str]], stop: int) -> None:
    width = max(map(len, rows), default=0)
    grid = [[*map(str, r), *[""] * (width - len(r))] for r in rows]
    if stop < 1:
        return
    cells = SheetCells.guess(grid)
    if stop < 2:
        return
    kinds, values = cell_kinds(grid, cells.decimal, cells)
    if stop < 3:
        return
    assert column_blocks(kinds, values) == [(0, width - 1)]
    filled = kinds != 0
    first = filled.argmax(axis=1)
    zero = legend_zero_markers(cells.text[i][first[i]] for i in np.flatnonzero(filled.any(axis=1)).tolist())
    if stop < 4:
        return
    feats = sheet_features(grid, cells=cells, kinds_values=(kinds, values), layout=True)
    if stop < 5:
        return
    classes, proba = CLF.classify_features(feats[:, : len(FEATURE_NAMES)])
    if stop < 6:
        return
    role_proba, decisions = MODEL.decide(feats, proba, kinds)
    if stop < 7:
        return
    found = find_tables(decisions, role_proba)
    final = final_classes(classes, proba, role_proba, decisions, found)
    if stop < 8:
        return
    ruled = refine_classes(classes, cells.text, kinds, values)
    if stop < 9:
        return
    found, classes = rule_headers(found, final, ruled, cells.text, kinds)
    if stop < 10:
        return
    tables: list = []
    for top, a, b, bottom in found:
        if any(c in BODY for c in classes[a : b + 1]):
            tables.append(detect.build_table(grid, classes, proba, (top, bottom), P, len(tables), cells, 0, kinds,
                                             values, zero_markers=zero, core=(a, b)))


for sheet in SHEETS.values():
    run(sheet, 10)
for _ in range(int(sys.argv[2])):
    for sheet in SHEETS.values():
        run(sheet, int(sys.argv[1]))
