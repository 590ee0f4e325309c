"""Table benchmark: line classification on annotated sheets (the SAUS set of Strudel, or any JSONL alike).

    python -m airflow_sbcrawl.tables.bench [--data FILE] [--cv K] [--train OUT.json]

Prints per-class precision/recall/F1, macro-F1 over the six non-empty classes, the number of sheets and
the median milliseconds per sheet (features + classification + table building). The shipped model was
trained on SAUS, so the plain figure is in-sample; ``--cv K`` retrains on K-1 folds grouped by
``file_name`` and scores the held-out fold, which is the honest number for unseen sheets.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .classifier import CLASSES, LineClassifier, default_classifier
from .detect import classify_and_detect
from .model import Provenance

ENV_VAR = "SBCRAWL_TABLES_DATA"


def default_data_path() -> Path:
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    return repo.parent / "shared" / "data" / "tables" / "saus.jl.gz"


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


def cross_validate(sheets: list[dict], k: int) -> tuple[list[str], list[str]]:
    truth: list[str] = []
    pred: list[str] = []
    for fold in group_folds(sheets, k):
        held = set(fold)
        train = [s for i, s in enumerate(sheets) if i not in held]
        clf = LineClassifier().fit([s["table_array"] for s in train], [s["line_annotation"] for s in train])
        for i in fold:
            truth.extend(sheets[i]["line_annotation"])
            pred.extend(clf.predict([sheets[i]["table_array"]])[0])
    return truth, pred


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sbcrawl bench tables", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data",
        help=f"annotated sheets, JSON Lines (.gz ok); default ${ENV_VAR} or "
        "../shared/data/tables/saus.jl.gz next to the repository",
    )
    parser.add_argument("--cv", type=int, default=0, metavar="K", help="also report K-fold CV grouped by file")
    parser.add_argument("--train", metavar="OUT", help="fit on all sheets and write the model JSON to OUT")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object too")
    args = parser.parse_args(argv)
    out = sys.stdout
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
    truth: list[str] = []
    pred: list[str] = []
    times = []
    for s in sheets:
        t0 = time.perf_counter()
        classes, _ = classify_and_detect(s["table_array"], Provenance("bench", "bench"), classifier=clf)
        times.append((time.perf_counter() - t0) * 1000)
        truth.extend(s["line_annotation"])
        pred.extend(classes)
    table = scores(truth, pred)
    print(f"data: {path}  sheets: {len(sheets)}  lines: {len(truth)}", file=out)
    _print("shipped model (in-sample if trained on this data):", table, out)
    print(f"  median ms per sheet (classify + build tables): {statistics.median(times):.1f}", file=out)
    result = {
        "sheets": len(sheets),
        "macro_f1": macro_f1(table),
        "per_class": table,
        "median_ms_per_sheet": statistics.median(times),
    }
    if args.cv:
        cv_truth, cv_pred = cross_validate(sheets, args.cv)
        cv_table = scores(cv_truth, cv_pred)
        _print(f"{args.cv}-fold cross-validation grouped by file_name (held-out sheets):", cv_table, out)
        result["cv_macro_f1"] = macro_f1(cv_table)
        result["cv_per_class"] = cv_table
    if args.json:
        print(json.dumps(result), file=out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
