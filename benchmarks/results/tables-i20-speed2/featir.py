"""featir.py PART N: one piece of sheet_features (whole, text, upper, sums, neigh) N times on each median sheet,
its inputs made beforehand (under valgrind: that piece's instructions, featir.sh)."""

import json
import pathlib
import sys

import numpy as np

from airflow_sbcrawl.tables import features as F
from airflow_sbcrawl.tables.values import SheetCells

SHEETS = json.loads((pathlib.Path(__file__).parent / "medsheets.json").read_text())
inputs = []
for rows in SHEETS.values():
    width = max(map(len, rows))
    grid = [[*map(str, r), *[""] * (width - len(r))] for r in rows]
    cells = SheetCells.guess(grid)
    kinds, values = F.cell_kinds(grid, cells.decimal, cells)
    nonempty = kinds != F.EMPTY
    lines = np.flatnonzero(nonempty.any(axis=1))
    col_num, col_text = (kinds == F.NUMBER).sum(axis=0), (kinds == F.TEXT).sum(axis=0)
    joined = [" ".join(filter(None, cells.text[i])) for i in lines.tolist()]
    inputs.append((grid, cells, kinds, values, lines, nonempty[lines].argmax(axis=1), col_num, col_text, joined))
PART = sys.argv[1]


def run(grid, cells, kinds, values, lines, first_col, col_num, col_text, joined) -> None:
    if PART == "text":
        F._text_features(grid, cells.text, kinds, values, lines, first_col)
    elif PART == "sums":
        F._sum_matches(values)
    elif PART == "neigh":
        F._neighbourhood(cells.text, kinds, lines, col_num > col_text, col_num, col_text)
    elif PART == "upper":
        F._upper_shares(joined)
    else:
        F.sheet_features(grid, cells=cells, kinds_values=(kinds, values), layout=True)


for args in inputs:
    run(*args)
for _ in range(int(sys.argv[2])):
    for args in inputs:
        run(*args)
