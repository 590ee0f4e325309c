"""Table benchmark: line classification on annotated sheets (the SAUS set of Strudel, or any JSONL alike).

    python -m sbcrawl_dev bench tables [--data FILE] [--cv K] [--train OUT.json] [--multi N] [--large]
    python -m sbcrawl_dev bench tables --real [DIR]      (annotated real statistics files, tables_real.py)
    python -m sbcrawl_dev bench tables --regions [--corpora saus,fuste,real] [--loco]   (tables_regions.py)
    python -m sbcrawl_dev bench tables --regions --train-regions   (refit the shipped region_model.json)

Prints per-class precision/recall/F1, macro-F1 over the six non-empty classes, table recall and precision
at IoU >= 0.5 (every annotated sheet is one table), and the CPU time of detection (features + classification
+ table building, the fastest of 3 runs of each sheet): milliseconds per sheet and microseconds per
non-empty cell, median, p90 and max.
The shipped model was trained on SAUS, so the plain figure is in-sample; ``--cv K`` retrains on K-1
folds grouped by ``file_name`` and scores the held-out fold, which is the honest number for unseen sheets.

``--multi N`` also scores N multi-table sheets composed from the annotated ones (``tables_devset.compose``):
table recall/precision per layout, and line classes on the stacked layouts. With ``--cv K`` they are
composed from each fold's held-out sheets and scored with that fold's model.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from airflow_sbcrawl.tables.classifier import CLASSES, LineClassifier, default_classifier
from airflow_sbcrawl.tables.detect import classify_and_detect
from airflow_sbcrawl.tables.model import Provenance
from sbcrawl_dev.bench import tables_devset
from sbcrawl_dev.bench.tables_corpora import ENV_VAR, default_data_path

_PROV = Provenance("bench", "bench")

def load_sheets(path: str | Path) -> list[dict]:
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        sheets = [json.loads(line) for line in fh if line.strip()]
    for s in sheets:
        s["table_array"] = [[("" if c is None else str(c)) for c in row] for row in s["table_array"]]
        if len(s["line_annotation"]) != len(s["table_array"]):
            raise ValueError(
                f"{s.get('file_name')}: {len(s['line_annotation'])} labels for {len(s['table_array'])} rows"
            )
    return sheets


def scores(truth: Sequence[str], pred: Sequence[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for cls in CLASSES:
        tp = sum(1 for t, p in zip(truth, pred, strict=True) if t == cls and p == cls)
        fp = sum(1 for t, p in zip(truth, pred, strict=True) if t != cls and p == cls)
        fn = sum(1 for t, p in zip(truth, pred, strict=True) if t == cls and p != cls)
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        out[cls] = {"precision": prec, "recall": rec, "f1": f1, "support": tp + fn}
    return out


def macro_f1(table: dict[str, dict[str, float]]) -> float:
    return sum(table[c]["f1"] for c in CLASSES) / len(CLASSES)


def _print(title: str, table: dict[str, dict[str, float]], out) -> None:
    print(title, file=out)
    print(f"  {'class':<9} {'prec':>6} {'recall':>6} {'F1':>6} {'support':>8}", file=out)
    for cls in CLASSES:
        r = table[cls]
        print(f"  {cls:<9} {r['precision']:6.3f} {r['recall']:6.3f} {r['f1']:6.3f} {r['support']:8d}", file=out)
    print(f"  macro-F1 (6 classes): {macro_f1(table):.4f}", file=out)


def group_folds(sheets: list[dict], k: int) -> list[list[int]]:
    """Sheets of one file stay in one fold; files are dealt to folds by size, largest first."""
    by_file: dict[str, list[int]] = {}
    for i, s in enumerate(sheets):
        by_file.setdefault(str(s.get("file_name", i)), []).append(i)
    folds: list[list[int]] = [[] for _ in range(k)]
    for _, idx in sorted(by_file.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        min(folds, key=len).extend(idx)
    return folds


def fold_models(sheets: list[dict], k: int) -> list[tuple[list[int], LineClassifier]]:
    """Each fold's held-out sheets and the model trained on the other folds."""
    out = []
    for fold in group_folds(sheets, k):
        held = set(fold)
        train = [s for i, s in enumerate(sheets) if i not in held]
        clf = LineClassifier().fit([s["table_array"] for s in train], [s["line_annotation"] for s in train])
        out.append((fold, clf))
    return out


def sheet_region(sheet: dict) -> list[tables_devset.Region]:
    """The truth of an annotated single-table sheet: the bounding box of its non-empty cells."""
    rows = sheet["table_array"]
    used = [(i, j) for i, r in enumerate(rows) for j, c in enumerate(r) if c.strip()]
    if not used:
        return []
    return [(min(i for i, _ in used), max(i for i, _ in used), min(j for _, j in used), max(j for _, j in used))]


class Tally:
    """Line classes, table regions and timings of a run over sheets.

    Each sheet is detected ``repeats`` times and its fastest run is its time: a sheet takes a few
    milliseconds, and on a shared machine one run in several is charged for other processes' load on
    the caches, which the fastest run is not."""

    def __init__(self, repeats: int = 3) -> None:
        self.repeats = repeats
        self.truth: list[str] = []
        self.pred: list[str] = []
        self.true_tables = self.found_tables = self.matched = 0
        self.by_kind: dict[str, list[int]] = {}
        self.ms: list[float] = []
        self.us_per_cell: list[float] = []
        self.cells = 0

    def run(self, sheet: dict, clf: LineClassifier) -> None:
        rows = sheet["table_array"]
        cells = sum(1 for r in rows for c in r if c.strip())
        # CPU time of this process: on a shared machine, wall time would also count the other processes
        elapsed = float("inf")
        for _ in range(self.repeats):
            t0 = time.process_time()
            classes, tables = classify_and_detect(rows, _PROV, classifier=clf)
            elapsed = min(elapsed, time.process_time() - t0)
        self.ms.append(elapsed * 1000)
        self.cells += cells
        if cells:
            self.us_per_cell.append(elapsed * 1e6 / cells)
        if sheet.get("line_annotation") is not None:
            self.truth.extend(sheet["line_annotation"])
            self.pred.extend(classes)
        truth = sheet["tables"] if "tables" in sheet else sheet_region(sheet)
        found = [(t.first_row, t.last_row, t.first_col, t.last_col) for t in tables if t.observations]
        hits = tables_devset.match(truth, found)
        self.true_tables += len(truth)
        self.found_tables += len(found)
        self.matched += hits
        kind = self.by_kind.setdefault(sheet.get("kind", "single"), [0, 0, 0])
        kind[0] += len(truth)
        kind[1] += len(found)
        kind[2] += hits

    def table_scores(self) -> dict:
        out = {"recall": _ratio(self.matched, self.true_tables), "precision": _ratio(self.matched, self.found_tables)}
        out["by_layout"] = {
            k: {"tables": t, "found": f, "recall": _ratio(m, t), "precision": _ratio(m, f)}
            for k, (t, f, m) in sorted(self.by_kind.items())
        }
        return out

    def timing(self) -> dict:
        overall = sum(self.ms) * 1000 / self.cells if self.cells else 0.0
        return {
            "ms_per_sheet": _spread(self.ms),
            "us_per_cell": _spread(self.us_per_cell),
            "us_per_cell_overall": overall,
            "runs_per_sheet": self.repeats,
        }


def _ratio(a: int, b: int) -> float:
    return a / b if b else 0.0


def _spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {"median": 0.0, "p90": 0.0, "max": 0.0}
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "p90": ordered[min(int(0.9 * len(ordered)), len(ordered) - 1)],
        "max": ordered[-1],
    }


def _print_tables(title: str, tally: Tally, out) -> dict:
    scores = tally.table_scores()
    found = f"{tally.true_tables} tables, {tally.found_tables} found, {tally.matched} matched at IoU >= 0.5"
    print(f"{title}: {found}", file=out)
    print(f"  table recall {scores['recall']:.3f}  precision {scores['precision']:.3f}", file=out)
    if len(scores["by_layout"]) > 1:
        for kind, r in scores["by_layout"].items():
            print(
                f"  {kind:<6} {r['tables']:5d} tables {r['found']:5d} found  recall {r['recall']:.3f}  "
                f"precision {r['precision']:.3f}",
                file=out,
            )
    return scores


def _print_timing(tally: Tally, out) -> dict:
    t = tally.timing()
    ms, us = t["ms_per_sheet"], t["us_per_cell"]
    print(
        f"  CPU ms per sheet (fastest of {tally.repeats} runs): median {ms['median']:.1f}  p90 {ms['p90']:.1f}  "
        f"max {ms['max']:.1f}",
        file=out,
    )
    print(
        f"  CPU us per non-empty cell: median {us['median']:.1f}  p90 {us['p90']:.1f}  max {us['max']:.1f}  "
        f"(all cells: {t['us_per_cell_overall']:.1f})",
        file=out,
    )
    return t


def large_sheets(sheets: list[dict], sizes: tuple[int, ...] = (10_000, 100_000)) -> list[dict]:
    """Sheets of about ``sizes`` non-empty cells: annotated sheets stacked under one blank line each."""
    out = []
    for target in sizes:
        grid: list[list[str]] = []
        cells = 0
        k = 0
        while cells < target:
            rows, _ = tables_devset.crop(sheets[k % len(sheets)])
            k += 1
            grid += [*rows, []]
            cells += sum(1 for r in rows for c in r if c.strip())
        out.append({"table_array": grid, "line_annotation": None, "tables": [], "kind": f"{target}"})
    return out


def _print_large(
    sheets: list[dict], clf: LineClassifier, out, sizes: tuple[int, ...] = (10_000, 100_000)
) -> dict:
    """CPU time of detection on the large sheets, median and min over repeated runs: on a shared machine
    one run can be charged for another process's load on the caches or a collection of this one."""
    print("large sheets (annotated sheets stacked), CPU time of detection, median / min over repeats:", file=out)
    res = {}
    for sheet in large_sheets(sheets, sizes):
        rows = sheet["table_array"]
        cells = sum(1 for r in rows for c in r if c.strip())
        repeats = min(15, max(3, 150_000 // cells))  # 15 runs of 10,000 cells, 3 of 100,000
        times = []
        for _ in range(repeats):
            t0 = time.process_time()
            _, tables = classify_and_detect(rows, _PROV, classifier=clf)
            times.append(time.process_time() - t0)
        median, fastest = statistics.median(times), min(times)
        res[sheet["kind"]] = {
            "cells": cells,
            "repeats": repeats,
            "ms": median * 1000,
            "ms_min": fastest * 1000,
            "us_per_cell": median * 1e6 / cells,
        }
        print(
            f"  {cells:7d} cells, {len(rows):6d} rows: median {median * 1000:7.1f} ms  min {fastest * 1000:7.1f} ms"
            f"  ({repeats} runs)  {median * 1e6 / cells:.2f} us/cell  ({len(tables)} tables)",
            file=out,
        )
    return res


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench tables", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data",
        help=f"annotated sheets, JSON Lines (.gz ok); default ${ENV_VAR} or "
        "shared/data/tables/saus.jl.gz next to the repository or its parent folder",
    )
    parser.add_argument("--cv", type=int, default=0, metavar="K", help="also report K-fold CV grouped by file")
    parser.add_argument("--train", metavar="OUT", help="fit on all sheets and write the model JSON to OUT")
    parser.add_argument("--multi", type=int, default=0, metavar="N", help="also score N composed multi-table sheets")
    parser.add_argument("--seed", type=int, default=12, help="seed of the composed multi-table sheets")
    parser.add_argument(
        "--hostile",
        nargs="?",
        const="",
        metavar="DIR",
        help="only: read the hostile files of issue 9 (written to DIR, default a temporary folder)",
    )
    parser.add_argument(
        "--real",
        nargs="?",
        const="",
        metavar="DIR",
        help="only: annotated real statistics files (DIR with expected.json, default tests/data/tables_real)",
    )
    parser.add_argument("--large", action="store_true", help="also time sheets of 10,000 and 100,000 cells")
    parser.add_argument("--regions", action="store_true",
                        help="only: table regions per cached corpus ('bench tables-corpora fetch' first)")
    parser.add_argument("--corpora", default="", help="--regions: comma-separated corpora (default: all cached)")
    parser.add_argument("--loco", action="store_true",
                        help="--regions: also leave-one-corpus-out (train on the others, score the held-out one)")
    parser.add_argument("--held-out", default="", metavar="DIR",
                        help="--regions: score the models held out from each corpus read from DIR (<corpus>.json, "
                             "<corpus>.line.json) instead of fitting them")
    parser.add_argument("--by-org", action="store_true",
                        help="--regions: also the used range and the shipped detector per organisation")
    parser.add_argument("--differences", action="store_true",
                        help="--regions: list the sheets the shipped detector does not frame exactly")
    parser.add_argument("--train-regions", action="store_true",
                        help="--regions: refit the region models on every cached corpus and write region_model.json")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object too")
    args = parser.parse_args(argv)
    out = sys.stdout
    if args.regions and args.train_regions:
        from sbcrawl_dev.bench.tables_regions import train_shipped

        print(f"wrote {train_shipped()}", file=out)
        return 0
    if args.regions:
        from sbcrawl_dev.bench.tables_regions import main as regions_main

        result = regions_main([c for c in args.corpora.split(",") if c], loco=args.loco, out=out,
                              held_out=args.held_out, per_org=args.by_org, differences=args.differences)
        if args.json:
            print(json.dumps(result), file=out)
        return 0 if result else 2
    if args.hostile is not None:
        from sbcrawl_dev.bench.tables_hostile import main as hostile_main

        return hostile_main(args.hostile or None, out)
    if args.real is not None:
        from sbcrawl_dev.bench.tables_real import EXPECTED_NAME, default_dir
        from sbcrawl_dev.bench.tables_real import main as real_main

        folder = Path(args.real) if args.real else default_dir()
        if not (folder / EXPECTED_NAME).is_file():
            print(f"no {EXPECTED_NAME} in {folder}: give the folder of annotated files (--real DIR)", file=sys.stderr)
            return 2
        real = real_main(folder, out)
        if args.json:
            print(json.dumps(real), file=out)
        return 0
    path = Path(args.data) if args.data else default_data_path()
    if not path.exists():
        print(
            f"table benchmark data not found: {path}\n"
            f"  give --data FILE or set {ENV_VAR}; the SAUS set is data/saus.jl.gz of lanchiang/strudel",
            file=sys.stderr,
        )
        return 2
    sheets = load_sheets(path)
    if args.train:
        clf = LineClassifier().fit([s["table_array"] for s in sheets], [s["line_annotation"] for s in sheets])
        clf.save(args.train)
        print(f"model written to {args.train}", file=out)
    else:
        clf = default_classifier()
    # One detection first, so that the timings do not include loading the model and compiling patterns;
    # and the benchmark's own data out of the garbage collector's sight: a full collection over the
    # million strings of the annotated sheets would be charged to whichever sheet triggers it
    classify_and_detect(sheets[0]["table_array"], _PROV, classifier=clf)
    gc.freeze()
    tally = Tally()
    for s in sheets:
        tally.run(s, clf)
    table = scores(tally.truth, tally.pred)
    print(f"data: {path}  sheets: {len(sheets)}  lines: {len(tally.truth)}", file=out)
    _print("shipped model (in-sample if trained on this data):", table, out)
    result: dict = {"sheets": len(sheets), "macro_f1": macro_f1(table), "per_class": table}
    result["tables"] = _print_tables("  tables (one per annotated sheet)", tally, out)
    result["timing"] = _print_timing(tally, out)
    result["median_ms_per_sheet"] = result["timing"]["ms_per_sheet"]["median"]
    if args.large:
        result["large"] = _print_large(sheets, clf, out)
    if args.multi:
        multi = Tally()
        for s in tables_devset.compose(sheets, args.multi, args.seed):
            multi.run(s, clf)
        print(f"composed multi-table sheets: {args.multi} (seed {args.seed}), shipped model", file=out)
        result["multi"] = _score_multi(multi, out)
    if args.cv:
        cv = Tally(repeats=1)  # its timings are not reported
        cv_multi = Tally()
        for fold, fold_clf in fold_models(sheets, args.cv):
            held = [sheets[i] for i in fold]
            for s in held:
                cv.run(s, fold_clf)
            if args.multi:
                for s in tables_devset.compose(held, max(args.multi // args.cv, 1), args.seed):
                    cv_multi.run(s, fold_clf)
        cv_table = scores(cv.truth, cv.pred)
        _print(f"{args.cv}-fold cross-validation grouped by file_name (held-out sheets):", cv_table, out)
        result["cv_macro_f1"] = macro_f1(cv_table)
        result["cv_per_class"] = cv_table
        result["cv_tables"] = _print_tables("  tables (one per annotated sheet)", cv, out)
        if args.multi:
            print(f"{args.cv}-fold cross-validation, multi-table sheets composed from held-out sheets:", file=out)
            result["cv_multi"] = _score_multi(cv_multi, out)
    if args.json:
        print(json.dumps(result), file=out)
    return 0


def _score_multi(tally: Tally, out) -> dict:
    res = {"tables": _print_tables("  tables", tally, out)}
    lines = scores(tally.truth, tally.pred)
    print(f"  line classes on stacked layouts: macro-F1 {macro_f1(lines):.4f}", file=out)
    res["line_macro_f1"] = macro_f1(lines)
    res["timing"] = _print_timing(tally, out)
    return res


if __name__ == "__main__":
    raise SystemExit(main())
