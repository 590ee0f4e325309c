"""The shapes that table detection produces and the lake consumes.

This module is the contract between ``airflow_sbcrawl.tables`` (readers, detector, Parquet output) and
``airflow_sbcrawl.lake`` (Iceberg loading): both import from here and from nowhere else in each other.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import NamedTuple

#: Line classes of the SAUS/Strudel annotation scheme; ``empty`` is never reported as a table line.
LINE_CLASSES = ("metadata", "header", "group", "data", "derived", "notes", "empty")

#: Status of one observation: a number was read ("ok"); the cell held a missing-value marker of some kind
#: ("missing", "not_applicable", "confidential"); a marker the file's legend defines as zero ("nil", value
#: 0); a range ("range": "10-14", value its midpoint); words ("text"); or digits that do not read as one
#: number ("unreadable": two figures run together, digit groups not in threes), kept as text.
VALUE_STATUSES = ("ok", "missing", "not_applicable", "confidential", "nil", "range", "text", "unreadable")


@dataclass(frozen=True)
class Provenance:
    """Where a table came from: enough to find the bytes again and to say which code read them."""

    source_url: str
    sha256: str
    member: str = ""  # path inside an archive ("" when the file itself was read)
    sheet: str = ""  # sheet name, PDF page ("page 3"), or "" for single-table formats
    crawl_run: str = ""
    detector_version: str = ""


class Observation(NamedTuple):
    """One cell of a table's body in long form (a named tuple: detection makes one per cell, and a tuple
    is built several times faster than a frozen dataclass)."""

    row: int  # 0-based row index in the sheet
    col: int  # 0-based column index in the sheet
    row_labels: tuple[str, ...]  # group labels, then the row's label cells (codes, names, years...)
    column_path: tuple[str, ...]  # the header cells above the column, top to bottom
    raw: str  # the cell text as read
    value: float | None  # the parsed number, None when not numeric
    status: str  # one of VALUE_STATUSES
    line_class: str = "data"  # "data" or "derived" (totals)
    unit: str = ""  # as the table names it ("thousands", "EUR", "%"): its column, row or title; "" if none


@dataclass
class DetectedTable:
    """One statistics table found inside a sheet or page."""

    provenance: Provenance
    index: int  # position of the table within its sheet (0-based)
    first_row: int
    last_row: int  # inclusive
    first_col: int
    last_col: int  # inclusive
    title: str
    header: list[list[str]]  # the header rows as read, top to bottom
    line_classes: list[str]  # one class per sheet row from first_row to last_row
    observations: list[Observation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    confidence: float = 0.0
    # Header rows that describe a column rather than name it (unit, series id, frequency, number of
    # observations): sheet column -> {row label: cell}; not part of any column path
    column_attributes: dict[int, dict[str, str]] = field(default_factory=dict)
    # Why the observations cannot all be told apart by row labels + column path, or what else was odd in
    # reading them ("" when nothing): the lake keeps these with the table
    warnings: list[str] = field(default_factory=list)

    @property
    def table_id(self) -> str:
        """Stable id: the same file, member, sheet and position always give the same id."""
        p = self.provenance
        key = f"{p.sha256}\x1f{p.member}\x1f{p.sheet}\x1f{self.index}"
        return hashlib.sha256(key.encode()).hexdigest()[:24]

    @property
    def cell_range(self) -> str:
        """The table's cells in spreadsheet notation, 1-based rows ("B3:F20")."""
        first = f"{column_letter(self.first_col)}{self.first_row + 1}"
        return f"{first}:{column_letter(self.last_col)}{self.last_row + 1}"

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns) of the table's range, titles and notes included."""
        return (self.last_row - self.first_row + 1, self.last_col - self.first_col + 1)


def column_letter(index: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA (spreadsheet column names)."""
    letters = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        letters = chr(65 + rem) + letters
    return letters
