"""What the lake gets from real files: keyed observations and numbers true to the file's text.

    python -m sbcrawl_dev bench tables-observations [--fetch] [--mirror DIR] [--cache DIR] [--saus FILE]
                                                   [--corpus NAME ...] [--json] [--examples N]

Per corpus (the annotated real files of ``tests/data/tables_real``, the SAUS sheets, and each office of the
fetched files, ``tables_corpus``), over the numeric observations (a value was read):

* **unique key**: the share whose key, row labels + column path, no other observation of its table has
  (two observations with one key cannot be told apart in the lake);
* **labelled**: the share with at least one row label;
* **wrong numbers**: how many values no strict reading of their cell's text gives. The reading here is its
  own, not the detector's: one number in the cell (digit groups of three, one decimal separator, the
  table's own decimal convention when its cells show one), optionally signed, in parentheses, with a
  currency or percent sign, a ± margin or a footnote mark set apart; a code with a leading zero is no
  number;
* the CPU time of detection per non-empty cell (median over sheets).
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import statistics
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from airflow_sbcrawl.tables.api import detect_file
from airflow_sbcrawl.tables.detect import classify_and_detect
from airflow_sbcrawl.tables.model import DetectedTable, Provenance
from airflow_sbcrawl.tables.readers import read_bytes
from sbcrawl_dev.bench import tables_corpus

# -- an independent strict reading of a cell's text ---------------------------------------------------------

_MARK_TAIL = re.compile(
    r"(?:\s*\\\d+|\s*\[[^\]]{1,4}\]|\s*\([a-zA-Z]\)|[\u00b9\u00b2\u00b3\u2070-\u2079]+|\s*\*+|\s+[a-zA-Z]{1,2}"
    r"|(?<=\d)[a-z])$"
)
_MARK_HEAD = re.compile(r"^(?:\\\d+|\[[^\]]{1,4}\])\s*")
_EXPONENT = re.compile(r"^-?\d+(?:\.\d+)?[eE][+-]?\d+$")
_PLAIN = re.compile(r"^\d+(?:([.,])(\d+))?$")
_GROUPED = re.compile(r"^\d{1,3}(?:([,. '])\d{3})(?:\1\d{3})*(?:([.,])\d+)?$")
_LAKH = re.compile(r"^\d{1,2}(,)(?:\d{2},)+\d{3}(?:(\.)\d+)?$")  # Indian grouping: 1,23,45,678
_SPACES = str.maketrans({"\u00a0": " ", "\u202f": " ", "\u2009": " ", "\u2007": " ", "\u2212": "-",
                         "\u2013": "-"})


def _strip_marks(text: str) -> str:
    for _ in range(3):
        new = _MARK_HEAD.sub("", _MARK_TAIL.sub("", text).strip()).strip()
        if new == text:
            break
        text = new
    return text


def readings(text: str, decimal: str | None = None) -> set[float]:
    """Every number a person could read in ``text`` as a whole (empty when it is not one number).

    ``decimal``: the table's decimal separator when its cells show one, else both are tried.
    """
    t = unicodedata.normalize("NFKC", text).translate(_SPACES).strip()
    if "±" in t or "+/-" in t:
        t = t.replace("+/-", "±").split("±", 1)[0].strip()
    t = _strip_marks(t)
    negative = False
    if t.startswith("(") and t.endswith(")"):
        negative, t = True, t[1:-1].strip()
    t = re.sub(r"^[$€£¥]\s*|\s*(?:%|‰|[$€£¥])$", "", t).strip()
    if t[:1] in "+-":
        negative, t = negative or t[0] == "-", t[1:].strip()
    if not t:
        return set()
    if _EXPONENT.match(t):
        return {-float(t) if negative else float(t)}
    if len(t) > 1 and t[0] == "0" and t[1].isdigit():
        return set()  # "01001": a code, not a number
    out: set[float] = set()
    plain = _PLAIN.match(t)
    if plain:
        sep = plain.group(1)
        if sep is None:
            out.add(float(t))
        else:
            if decimal in (None, sep):
                out.add(float(t.replace(sep, ".")))
            if len(plain.group(2)) == 3 and decimal not in (None, sep):
                out.add(float(t.replace(sep, "")))  # "1,234" in a table of decimal points
    grouped = _GROUPED.match(t) or _LAKH.match(t)
    if grouped:
        group, dec = grouped.group(1), grouped.group(2)
        if dec is None or (dec != group and decimal in (None, dec)):
            body = t.replace(group, "")
            out.add(float(body.replace(dec, ".") if dec else body))
    return {-v if negative else v for v in out}


def table_decimal(texts: Iterable[str]) -> str | None:
    """The decimal separator a table's cells show ("3.25" against "3,25"), None when they show none or both."""
    dot = comma = 0
    for t in texts:
        t = t.strip()
        if re.fullmatch(r"-?\d+\.\d{1,2}|-?\d+\.\d{4,}|-?\d{1,3}(?:,\d{3})+\.\d+", t):
            dot += 1
        elif re.fullmatch(r"-?\d+,\d{1,2}|-?\d+,\d{4,}|-?\d{1,3}(?:\.\d{3})+,\d+", t):
            comma += 1
    if dot and not comma:
        return "."
    if comma and not dot:
        return ","
    return None


def matches_text(value: float, text: str, decimal: str | None) -> bool:
    """Whether ``value`` is one of the readings of ``text``."""
    return any(abs(value - r) <= 1e-9 * max(1.0, abs(r)) for r in readings(text, decimal))


# -- scores ---------------------------------------------------------------------------------------------------


@dataclass
class Score:
    """Observation figures of one corpus."""

    name: str
    files: int = 0
    sheets: int = 0
    tables: int = 0
    flagged_tables: int = 0  # tables whose keys are not unique, with the reason recorded
    observations: int = 0
    numeric: int = 0
    unique: int = 0
    labelled: int = 0
    wrong: int = 0
    errors: int = 0
    us_per_cell: list[float] = field(default_factory=list)
    wrong_examples: list[str] = field(default_factory=list)
    duplicate_examples: list[tuple[int, str]] = field(default_factory=list)
    unlabelled_examples: list[tuple[int, str]] = field(default_factory=list)

    def add_table(self, table: DetectedTable, where: str, examples: int) -> None:
        """Count one table's observations."""
        self.tables += 1
        self.flagged_tables += bool(getattr(table, "warnings", None))
        obs = table.observations
        self.observations += len(obs)
        keys = Counter((o.row_labels, o.column_path) for o in obs)
        decimal = table_decimal(o.raw for o in obs)
        dup = unlabelled = 0
        for o in obs:
            if o.value is None:
                continue
            self.numeric += 1
            if keys[(o.row_labels, o.column_path)] == 1:
                self.unique += 1
            else:
                dup += 1
            if o.row_labels:
                self.labelled += 1
            else:
                unlabelled += 1
            if o.status == "ok" and not matches_text(o.value, o.raw, decimal):
                self.wrong += 1
                if len(self.wrong_examples) < examples:
                    self.wrong_examples.append(f"{where} {table.cell_range} r{o.row}c{o.col}: {o.raw!r} -> {o.value!r}")
        if dup:
            self.duplicate_examples.append((dup, f"{where} {table.cell_range}"))
        if unlabelled:
            self.unlabelled_examples.append((unlabelled, f"{where} {table.cell_range}"))

    def as_dict(self) -> dict:
        """The figures, JSON-able."""
        return {
            "files": self.files, "sheets": self.sheets, "tables": self.tables, "flagged_tables": self.flagged_tables,
            "observations": self.observations, "numeric": self.numeric,
            "unique_key_share": _share(self.unique, self.numeric),
            "labelled_share": _share(self.labelled, self.numeric),
            "wrong_numbers": self.wrong, "read_errors": self.errors,
            "us_per_cell_median": statistics.median(self.us_per_cell) if self.us_per_cell else 0.0,
            "wrong_examples": self.wrong_examples,
            "most_duplicated": [w for _, w in sorted(self.duplicate_examples, reverse=True)[:5]],
            "most_unlabelled": [w for _, w in sorted(self.unlabelled_examples, reverse=True)[:5]],
        }


def _share(a: int, b: int) -> float:
    return a / b if b else 0.0


def _cells(rows: list[list[str]]) -> int:
    return sum(1 for r in rows for c in r if c.strip())


def _detection_us_per_cell(rows: list[list[str]], repeats: int) -> float | None:
    """CPU microseconds of detection per non-empty cell, the fastest of ``repeats`` runs (on a shared machine
    one run in several is charged for other processes' load on the caches), None for an empty sheet."""
    cells = _cells(rows)
    if not cells:
        return None
    prov = Provenance("bench", "bench")
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        classify_and_detect(rows, prov)
        best = min(best, time.process_time() - t0)
    return best * 1e6 / cells


def score_files(name: str, paths: list[Path], examples: int = 5, repeats: int = 3) -> Score:
    """Every file through ``detect_file`` (reader and detector, as the crawler runs them); the time is
    that of detection alone, per sheet, since readers are timed by their own benchmarks."""
    score = Score(name)
    for path in paths:
        data = path.read_bytes()
        result = detect_file(data, name=path.name)
        score.files += 1
        score.sheets += result.sheets
        score.errors += len(result.errors)
        for t in result.tables:
            score.add_table(t, f"{path.name}[{t.provenance.sheet}]", examples)
        if repeats:
            for sheet in read_bytes(data, name=path.name).sheets:
                us = _detection_us_per_cell(sheet.rows, repeats)
                if us is not None:
                    score.us_per_cell.append(us)
    return score


def score_sheets(name: str, sheets: list[dict], examples: int = 5, repeats: int = 3) -> Score:
    """The same on sheets given as cell grids (SAUS): detection only, no reader."""
    score = Score(name)
    prov = Provenance("bench", "bench")
    for k, sheet in enumerate(sheets):
        rows = sheet["table_array"]
        _, tables = classify_and_detect(rows, prov)
        score.sheets += 1
        us = _detection_us_per_cell(rows, repeats) if repeats else None
        if us is not None:
            score.us_per_cell.append(us)
        for t in tables:
            if t.observations:
                score.add_table(t, f"{sheet.get('file_name', k)}", examples)
    return score


def _print(scores: list[Score], out) -> None:
    print(f"  {'corpus':<12} {'files':>5} {'sheets':>6} {'tables':>6} {'flagged':>7} {'numeric':>8} {'unique key':>10} "
          f"{'labelled':>8} {'wrong':>5} {'us/cell':>7}", file=out)
    for s in scores:
        d = s.as_dict()
        print(f"  {s.name:<12} {s.files:5d} {s.sheets:6d} {s.tables:6d} {s.flagged_tables:7d} {s.numeric:8d} "
              f"{d['unique_key_share']:10.3f} {d['labelled_share']:8.3f} {s.wrong:5d} {d['us_per_cell_median']:7.2f}",
              file=out)
    for s in scores:
        d = s.as_dict()
        lines = [f"wrong: {w}" for w in d["wrong_examples"]]
        lines += [f"duplicate keys: {w}" for w in d["most_duplicated"]]
        lines += [f"no row label: {w}" for w in d["most_unlabelled"]]
        if lines:
            print(f"  {s.name}:", file=out)
            for line in lines:
                print(f"      {line}", file=out)


def main(argv: list[str] | None = None) -> int:
    from sbcrawl_dev.bench.tables_detection import default_data_path, load_sheets
    from sbcrawl_dev.bench.tables_real import default_dir

    parser = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench tables-observations",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--fetch", action="store_true", help="fetch the real files of the manifest first")
    parser.add_argument("--mirror", type=Path, help="folder of git mirrors (owner+name/repo) to fetch from")
    parser.add_argument("--cache", type=Path, help=f"where fetched files are kept (default ${tables_corpus.CACHE_ENV} "
                        "or ~/.cache/sbcrawl-tables-real)")
    parser.add_argument("--saus", type=Path, help="the SAUS sheets (default: as 'bench tables')")
    parser.add_argument("--corpus", action="append", help="only these corpora (tables_real, saus, or an office)")
    parser.add_argument("--examples", type=int, default=5, help="wrong numbers listed per corpus")
    parser.add_argument("--repeats", type=int, default=3, help="timed detections per sheet, the fastest kept "
                        "(0: no timing)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object too")
    args = parser.parse_args(argv)
    out = sys.stdout
    if args.fetch:
        print(f"fetching {len(tables_corpus.MANIFEST)} files into {args.cache or tables_corpus.default_cache()}",
              file=out)
        tables_corpus.fetch(args.cache, args.mirror, log=lambda m: print(m, file=out))
    wanted = set(args.corpus or [])
    corpora: list[tuple[str, object]] = [("tables_real", sorted(p for p in default_dir().iterdir()
                                                                if p.name not in ("expected.json", "SOURCES.md")))]
    saus = args.saus or default_data_path()
    corpora.append(("saus", saus))
    fetched = tables_corpus.cached(args.cache)
    corpora += sorted(fetched.items())
    gc.freeze()
    scores = []
    for name, what in corpora:
        if wanted and name not in wanted:
            continue
        if name == "saus":
            if not Path(what).exists():
                print(f"  saus: {what} not found, skipped", file=out)
                continue
            scores.append(score_sheets(name, load_sheets(what), args.examples, args.repeats))
        else:
            scores.append(score_files(name, what, args.examples, args.repeats))
    if not fetched:
        print("  no fetched files: run with --fetch (see tables_corpus)", file=out)
    print("numeric observations: share with a unique key (row labels + column path) in their table, share with a "
          "row label, values that differ from their cell's text; CPU us of detection per non-empty cell (fastest "
          "of the repeats per sheet), median over sheets", file=out)
    _print(scores, out)
    if args.json:
        print(json.dumps({s.name: s.as_dict() for s in scores}), file=out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
