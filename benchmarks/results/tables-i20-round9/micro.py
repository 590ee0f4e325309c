"""micro.py: wall time of raw() (heap) and _walk() (ea55915's evaluation) on the role and start inputs of the
six median sheets (../tables-i20-speed2/medsheets.json) and of a 5-line sheet, fastest of 200 each."""

import json
import pathlib
import time

import numpy as np

from airflow_sbcrawl.tables import regions
from airflow_sbcrawl.tables.detect import classify_and_detect
from airflow_sbcrawl.tables.model import Provenance

MODEL = regions.default_region_model()
inputs = []


def keeping(trees, name):
    original = trees.raw

    def raw(x):
        inputs.append((name, trees, x.copy()))
        return original(x)

    return raw


for name in ("roles", "starts"):
    getattr(MODEL, name).raw = keeping(getattr(MODEL, name), name)
SHEETS = json.loads((pathlib.Path(__file__).resolve().parents[1] / "tables-i20-speed2" / "medsheets.json").read_text())
TINY = [["Area", "2000", "2001"], ["A", "1", "2"], ["B", "3", "4"], ["C", "5", "6"], ["Total", "9", "12"]]
for rows in [*SHEETS.values(), TINY]:
    classify_and_detect(rows, Provenance("b", "b"))
for name in ("roles", "starts"):
    del getattr(MODEL, name).raw


def fastest(f, x) -> float:
    t = time.perf_counter()
    f(x)
    return time.perf_counter() - t


for name, trees, x in inputs:
    x = np.ascontiguousarray(x, dtype=float)
    heap = min(fastest(trees.raw, x) for _ in range(200))
    walk = min(fastest(trees._walk, x) for _ in range(200))
    print(name, x.shape, f"heap {heap * 1e6:.0f} us  walk {walk * 1e6:.0f} us")
