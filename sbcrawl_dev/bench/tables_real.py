"""Real statistics files through ``detect_file``: tables found against the tables a person counted.

    python -m sbcrawl_dev bench tables --real [DIR]

DIR (default ``tests/data/tables_real`` of the repository) holds the files and ``expected.json``:
per file, the tables expected in each sheet (``by_sheet``; a sheet not listed holds none) and, for some
sheets, the sheet row of the first table's first header line (``header_rows``). Prints per file the
tables found against expected, the observations, the CPU time, and what still goes wrong (sheets with
too many or too few tables, header lines elsewhere than annotated, tables left out and why).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from airflow_sbcrawl.tables.api import detect_file
from airflow_sbcrawl.tables.model import DetectedTable

EXPECTED_NAME = "expected.json"


def default_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "tests" / "data" / "tables_real"


def header_row(table: DetectedTable) -> int | None:
    """Sheet row of the table's first header line, or None when it has no header line."""
    for k, cls in enumerate(table.line_classes):
        if cls == "header":
            return table.first_row + k
    return None


@dataclass
class FileScore:
    """One file's tables against its annotation."""

    name: str
    expected: int
    found: int
    matched: int  # sum over sheets of min(found, expected): a table too many or too few is a miss
    observations: int
    ms: float
    problems: list[str] = field(default_factory=list)


def score_file(path: Path, spec: dict) -> FileScore:
    """Detect the tables of one annotated file and list where they differ from the annotation."""
    t0 = time.process_time()
    result = detect_file(path)
    ms = (time.process_time() - t0) * 1000
    by_sheet: dict[str, list[DetectedTable]] = {}
    for t in result.tables:
        by_sheet.setdefault(t.provenance.sheet, []).append(t)
    want: dict[str, int] = spec.get("by_sheet", {})
    problems = [f"read error: {e.reason}" for e in result.errors]
    matched = 0
    for sheet in sorted(set(want) | set(by_sheet)):
        n_want, n_found = want.get(sheet, 0), len(by_sheet.get(sheet, []))
        matched += min(n_want, n_found)
        if n_found != n_want:
            problems.append(f"sheet {sheet!r}: {n_found} tables, expected {n_want}")
    for sheet, row in spec.get("header_rows", {}).items():
        tables = by_sheet.get(sheet)
        if not tables:
            continue  # already reported as a missing table
        got = header_row(tables[0])
        if got != row:
            problems.append(f"sheet {sheet!r}: first header line at row {got}, expected row {row}")
    for item in result.no_tables:
        if want.get(item["sheet"], 0) > len(by_sheet.get(item["sheet"], [])):
            problems.append(f"sheet {item['sheet']!r} left out: {item['reason']}")
    return FileScore(
        name=path.name,
        expected=sum(want.values()),
        found=len(result.tables),
        matched=matched,
        observations=sum(len(t.observations) for t in result.tables),
        ms=ms,
        problems=problems,
    )


def load_expected(folder: Path) -> dict[str, dict]:
    return json.loads((folder / EXPECTED_NAME).read_text(encoding="utf-8"))["files"]


def main(folder: str | Path | None = None, out: TextIO = sys.stdout) -> dict:
    folder = Path(folder) if folder else default_dir()
    expected = load_expected(folder)
    scores = [score_file(folder / name, spec) for name, spec in sorted(expected.items())]
    print(f"real statistics files: {len(scores)} in {folder}", file=out)
    print(f"  {'file':<46} {'expected':>8} {'found':>5} {'matched':>7} {'obs':>6} {'CPU ms':>7}", file=out)
    for s in scores:
        print(f"  {s.name[:46]:<46} {s.expected:8d} {s.found:5d} {s.matched:7d} {s.observations:6d} {s.ms:7.0f}",
              file=out)
        for p in s.problems:
            print(f"      - {p}", file=out)
    expected_total = sum(s.expected for s in scores)
    found_total = sum(s.found for s in scores)
    matched_total = sum(s.matched for s in scores)
    clean = sum(1 for s in scores if not s.problems)
    summary = {
        "files": len(scores),
        "files_without_problems": clean,
        "tables_expected": expected_total,
        "tables_found": found_total,
        "recall": matched_total / expected_total if expected_total else 0.0,
        "precision": matched_total / found_total if found_total else 0.0,
        "per_file": {s.name: {"expected": s.expected, "found": s.found, "problems": s.problems} for s in scores},
    }
    print(
        f"  total: {expected_total} tables expected, {found_total} found, {matched_total} matched per sheet "
        f"(recall {summary['recall']:.3f}, precision {summary['precision']:.3f}); "
        f"{clean} of {len(scores)} files without a problem",
        file=out,
    )
    return summary
