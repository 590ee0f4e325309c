"""Where the tables are: detected table regions against annotated ones, per corpus.

    python -m sbcrawl_dev bench tables --regions [--corpora saus,fuste,real] [--loco | --held-out DIR] [--json]

The corpora are the cached annotated sheets of ``tables_corpora`` (``bench tables-corpora fetch``). A
table's region is its header block and body (titles, units, sources and notes outside it). A detected
region matches an annotated one of the same sheet when their intersection over union reaches the
threshold (0.5, 0.75, or 1.0 for exact), each region matched at most once, best pairs first; precision,
recall and F1 are counted over all tables of the corpus. "Header exact": of the tables matched at 0.5,
the share whose header block (first to last header line above the body) is the annotated one. "Unique
key": the share of the numeric observations of the detected tables whose key (row labels + column path) no
other observation of their table has.

Beside the detector: the baseline "the used range is one table" (the bounding box of a sheet's non-empty
cells), whose header is its first line. Timings are the CPU time of ``classify_and_detect`` per sheet,
fastest of ``repeats`` runs, in microseconds per non-empty cell (median over sheets).
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from airflow_sbcrawl.tables.classifier import LineClassifier
from airflow_sbcrawl.tables.detect import classify_and_detect
from airflow_sbcrawl.tables.model import DetectedTable, Provenance
from sbcrawl_dev.bench.tables_devset import Region, iou

THRESHOLDS = (0.5, 0.75, 1.0)
_PROV = Provenance("bench", "bench")

#: A region, its header block (first and last line, or None when it has no header) and its numeric
#: observations: how many, and how many of them uniquely keyed
Found = tuple[Region, tuple[int, int] | None, tuple[int, int]]
Detector = Callable[[list[list[str]]], list[Found]]


def table_found(table: DetectedTable) -> Found:
    """A detected table's region, its header block (the header lines above its first body line) and its
    numeric observations (count, uniquely keyed)."""
    region = (table.first_row, table.last_row, table.first_col, table.last_col)
    header = []
    for k, cls in enumerate(table.line_classes):
        if cls in ("data", "derived", "group"):
            break
        if cls == "header":
            header.append(table.first_row + k)
    keys = Counter((o.row_labels, o.column_path) for o in table.observations if o.value is not None)
    return region, ((header[0], header[-1]) if header else None), (sum(keys.values()), sum(keys[k] == 1 for k in keys))


def detector(classifier: LineClassifier | None = None, regions=None) -> Detector:
    """The project's detector: the tables that hold observations (what ``detect_file`` keeps); ``regions``
    as ``classify_and_detect`` takes it (a ``RegionModel``, "rules", or None for the shipped one)."""

    def run(rows: list[list[str]]) -> list[Found]:
        _, tables = classify_and_detect(rows, _PROV, classifier=classifier, regions=regions)
        return [table_found(t) for t in tables if t.observations]

    return run


def used_range(rows: list[list[str]]) -> list[Found]:
    """The baseline: the bounding box of the non-empty cells is one table, headed by its first line."""
    cells = [(i, j) for i, r in enumerate(rows) for j, c in enumerate(r) if c.strip()]
    if not cells:
        return []
    r0, r1 = cells[0][0], cells[-1][0]
    c0, c1 = min(j for _, j in cells), max(j for _, j in cells)
    return [((r0, r1, c0, c1), (r0, r0), (0, 0))]


def _pairs(truth: Sequence[Region], found: Sequence[Region], threshold: float) -> list[tuple[int, int]]:
    """One-to-one matches (truth index, found index) at IoU >= threshold, best pairs first."""
    scored = sorted(((iou(t, f), i, j) for i, t in enumerate(truth) for j, f in enumerate(found)), reverse=True)
    used_t: set[int] = set()
    used_f: set[int] = set()
    out = []
    for score, i, j in scored:
        if score < threshold - 1e-12:
            break
        if i not in used_t and j not in used_f:
            used_t.add(i)
            used_f.add(j)
            out.append((i, j))
    return out


@dataclass
class RegionTally:
    """Region matches of one detector over one corpus."""

    true_tables: int = 0
    found_tables: int = 0
    matched: dict[float, int] = field(default_factory=lambda: {t: 0 for t in THRESHOLDS})
    header_matched: int = 0  # tables matched at 0.5 whose header block is the annotated one
    header_total: int = 0  # tables matched at 0.5
    sheets: int = 0
    exact_sheets: int = 0  # sheets whose every table is found exactly and nothing else
    us_per_cell: list[float] = field(default_factory=list)
    numeric: int = 0  # numeric observations of the detected tables
    unique: int = 0  # ... whose key no other observation of their table has
    misses: list[str] = field(default_factory=list)  # sheets with a table missed or one too many at 0.5

    def add(self, sheet: dict, found: list[Found]) -> None:
        truth = [tuple(t["range"]) for t in sheet["tables"]]
        headers = [tuple(t["header"]) if t.get("header") else None for t in sheet["tables"]]
        regions = [f[0] for f in found]
        self.sheets += 1
        self.true_tables += len(truth)
        self.found_tables += len(regions)
        self.numeric += sum(f[2][0] for f in found)
        self.unique += sum(f[2][1] for f in found)
        for threshold in THRESHOLDS:
            pairs = _pairs(truth, regions, threshold)
            self.matched[threshold] += len(pairs)
            if threshold == 0.5:
                self.header_total += len(pairs)
                self.header_matched += sum(1 for i, j in pairs if found[j][1] == headers[i])
                if len(pairs) != len(truth) or len(pairs) != len(regions):
                    self.misses.append(
                        f"{sheet['id']}: {len(truth)} tables, {len(regions)} found, {len(pairs)} matched")
            if threshold == 1.0 and len(pairs) == len(truth) == len(regions):
                self.exact_sheets += 1

    def scores(self) -> dict:
        out: dict = {"sheets": self.sheets, "tables": self.true_tables, "found": self.found_tables}
        for threshold in THRESHOLDS:
            m = self.matched[threshold]
            p = m / self.found_tables if self.found_tables else 0.0
            r = m / self.true_tables if self.true_tables else 0.0
            f1 = 2 * p * r / (p + r) if p + r else 0.0
            out[_key(threshold)] = {"precision": p, "recall": r, "f1": f1}
        out["header_exact"] = self.header_matched / self.header_total if self.header_total else 0.0
        out["exact_sheets"] = self.exact_sheets / self.sheets if self.sheets else 0.0
        out["unique_key_share"] = self.unique / self.numeric if self.numeric else 0.0
        if self.us_per_cell:
            out["us_per_cell_median"] = statistics.median(self.us_per_cell)
        return out


def _key(threshold: float) -> str:
    return "exact" if threshold == 1.0 else f"iou{threshold:g}"


def score(sheets: Sequence[dict], find: Detector, repeats: int = 0) -> RegionTally:
    """Regions of ``find`` against the annotated ``sheets``; with ``repeats`` > 0 each sheet is also timed
    (CPU time, fastest of that many runs)."""
    tally = RegionTally()
    for sheet in sheets:
        rows = sheet["rows"]
        found = find(rows)
        if repeats:
            cells = sum(1 for r in rows for c in r if c.strip())
            best = float("inf")
            for _ in range(repeats):
                t0 = time.process_time()
                find(rows)
                best = min(best, time.process_time() - t0)
            if cells:
                tally.us_per_cell.append(best * 1e6 / cells)
        tally.add(sheet, found)
    return tally


def format_row(name: str, s: dict) -> str:
    """One line of the per-corpus table: P/R/F1 at each threshold, header exact, unique key, speed."""
    parts = [f"{name:<22}"]
    for threshold in THRESHOLDS:
        r = s[_key(threshold)]
        parts.append(f"{r['precision']:5.3f} {r['recall']:5.3f} {r['f1']:5.3f}")
    parts.append(f"{s['header_exact']:6.3f}")
    parts.append(f"{s.get('unique_key_share', 0.0):6.3f}")
    parts.append(f"{s['us_per_cell_median']:6.1f}" if "us_per_cell_median" in s else "     -")
    return " | ".join(parts)


HEADER_LINE = (f"{'':<22} | {'IoU>=0.5  P     R     F1':<17} | {'IoU>=0.75 P     R     F1':<17} | "
               f"{'exact     P     R     F1':<17} | header | unique | us/cell")


def a1_region(region: Region) -> str:
    """(6, 39, 1, 10) -> "B7:K40"."""
    from airflow_sbcrawl.tables.model import column_letter

    r0, r1, c0, c1 = region
    return f"{column_letter(c0)}{r0 + 1}:{column_letter(c1)}{r1 + 1}"


def sheet_differences(sheets: Sequence[dict], find: Detector) -> list[str]:
    """The sheets whose tables ``find`` does not frame exactly (range and header block), one line each: the
    annotated tables and the found ones, as range/header rows (how the annotation files write them)."""

    def text(region: Region, header: tuple[int, int] | None) -> str:
        return f"{a1_region(region)}/{header[1] - header[0] + 1 if header else 0}"

    out = []
    for sheet in sheets:
        truth = [(tuple(t["range"]), tuple(t["header"]) if t.get("header") else None) for t in sheet["tables"]]
        found = [(f[0], f[1]) for f in find(sheet["rows"])]
        if sorted(truth) != sorted(found):
            out.append(f"{sheet['id']}: annotated {[text(*t) for t in truth]} found {[text(*f) for f in found]}")
    return out


def by_organisation(sheets: Sequence[dict], finders: dict[str, Detector]) -> dict[str, dict[str, dict]]:
    """Per organisation (the sheets' ``org``), the scores of each detector over its sheets."""
    orgs = sorted({s.get("org", "") for s in sheets})
    return {org: {label: score([s for s in sheets if s.get("org", "") == org], find).scores()
                  for label, find in finders.items()} for org in orgs}


def main(corpora: Sequence[str] = (), loco: bool = False, out=None, repeats: int = 3, held_out: str = "",
         per_org: bool = False, differences: bool = False) -> dict:
    """Print and return the region figures of every cached corpus (or of ``corpora``): the used-range
    baseline, the detector framing tables by its rules (``regions="rules"``) and the shipped one; with
    ``loco``, the learned models fitted without the corpus (``tables_train.loco_fit``), scored on it;
    with ``held_out``, those models read from that folder instead of fitted (``held_out_models``); with
    ``per_org``, the baseline and the shipped detector per organisation too (under ``"<corpus> by org"``);
    with ``differences``, the sheets the shipped detector does not frame exactly.

    Returns {} when no corpus is cached (the message says how to fetch them).
    """
    import sys

    from sbcrawl_dev.bench import tables_corpora

    out = out or sys.stdout
    names = list(corpora) or tables_corpora.available(evaluation=True)
    if not names:
        print(f"no annotated corpora in {tables_corpora.default_cache()}: run "
              "'python -m sbcrawl_dev bench tables-corpora fetch' first", file=out)
        return {}
    loaded = {name: tables_corpora.load_corpus(name) for name in names}
    held_models = loco_models(loaded) if loco else held_out_models(held_out, names) if held_out else {}
    print(HEADER_LINE, file=out)
    result: dict = {}
    for name, sheets in loaded.items():
        rows = {"used_range": score(sheets, used_range).scores(),
                "rules": score(sheets, detector(regions="rules"), repeats=repeats).scores(),
                "shipped": score(sheets, detector(), repeats=repeats).scores()}
        if name in held_models:
            line, region_model = held_models[name]
            rows["loco rules"] = score(sheets, detector(line, "rules")).scores()
            rows["loco"] = score(sheets, detector(line, region_model), repeats=repeats).scores()
        for label, s in rows.items():
            print(format_row(f"{name} {label}", s), file=out)
        result[name] = rows
        if per_org:
            orgs = by_organisation(sheets, {"used_range": used_range, "shipped": detector()})
            for org, org_rows in orgs.items():
                for label, s in org_rows.items():
                    print(format_row(f"  {org[:14]} {label[:7]}", s), file=out)
            result[f"{name} by org"] = orgs
        if differences:
            for line in sheet_differences(sheets, detector()):
                print(f"  {name}: {line}", file=out)
    return result


#: The corpora the shipped line model learnt from (``line_model.json``)
SHIPPED_LINE_CORPORA = ("saus",)


def loco_models(corpora: dict[str, list[dict]]) -> dict[str, tuple]:
    """Per corpus, the (line model, region model) fitted on every other cached corpus a model may learn from
    (all of them are loaded for this, whichever are scored; an evaluation-only corpus is never among them)."""
    from airflow_sbcrawl.tables.classifier import default_classifier
    from sbcrawl_dev.bench import tables_corpora, tables_train

    everything = {name: tables_corpora.load_corpus(name) for name in tables_corpora.available()}
    data = tables_train.prepare(everything, augment=True)
    return {name: tables_train.loco_fit(data, name, default_classifier(), SHIPPED_LINE_CORPORA)
            for name in corpora}


def held_out_models(folder: str, corpora: Sequence[str]) -> dict[str, tuple]:
    """Per corpus, the (line model, region model) held out from it, read from JSON files in ``folder``:
    ``<corpus>.json`` (a ``RegionModel``) and, when the line model was refitted without the corpus too,
    ``<corpus>.line.json`` (else the shipped line model). Corpora without a file are left out.

    Fitting them takes an hour on a shared machine (benchmarks/results/tables-real/README.md gives the
    script), scoring them seconds.
    """
    from pathlib import Path

    from airflow_sbcrawl.tables.classifier import default_classifier
    from airflow_sbcrawl.tables.regions import RegionModel

    out = {}
    for name in corpora:
        path = Path(folder) / f"{name}.json"
        if path.is_file():
            line_path = path.with_name(f"{name}.line.json")
            line = LineClassifier.load(line_path) if line_path.is_file() else default_classifier()
            out[name] = (line, RegionModel.load(path))
    return out


def train_shipped(path=None) -> str:
    """Fit the region models on every cached training corpus (not the evaluation-only ones) over the shipped
    line model's predictions, and write them as JSON (``regions.PARAMS_FILE`` in the package unless ``path``);
    returns the path written."""
    from pathlib import Path

    from airflow_sbcrawl.tables import regions
    from airflow_sbcrawl.tables.classifier import default_classifier
    from sbcrawl_dev.bench import tables_corpora, tables_train

    everything = {name: tables_corpora.load_corpus(name) for name in tables_corpora.available()}
    fitted = tables_train.fit_models(tables_train.prepare(everything, augment=True), line=default_classifier())
    target = Path(path) if path else Path(regions.__file__).with_name(regions.PARAMS_FILE)
    fitted.regions.save(target)
    return str(target)
