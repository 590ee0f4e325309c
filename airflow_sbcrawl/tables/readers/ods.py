"""OpenDocument spreadsheets, read from content.xml with expat, streaming, bounded by what they hold.

An ODS writes a run of equal rows or cells once with a repeat count, and calamine materialises every copy
when it opens the workbook (all sheets at once): an 800-byte file asks for 3 GB. This reader keeps one copy
of a repeated row, counts the cells with a value as they come (repeats multiplied out) and gives a sheet up
with its reason the moment it is over ``Limits``; the other sheets are read. Merged ranges
(``number-columns-spanned`` / ``number-rows-spanned``) are kept with the sheet.
"""

from __future__ import annotations

import io
import zipfile
import zlib

from .base import DEFAULT_LIMITS, Limits, ReadError, ReadResult, Sheet, cap_cells, cell_text, trim
from .sheet_size import OverLimit, SheetSize, attr, number, parse_member

_TEXT_VALUE = {"date": "date-value", "time": "time-value"}
_NUMERIC = ("float", "percentage", "currency")


class _Table:
    """One table as it is read: its rows (a repeated row is one list, shared), its size, its merges."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.rows: list[tuple[int, int, dict[int, str]]] = []  # (first row, repeat, cells by column)
        self.size = SheetSize()
        self.merged: list[tuple[tuple[int, int], tuple[int, int]]] = []
        self.refused = ""


class _Reader:
    """expat handlers: tables, rows and cells with their repeats, a cell's text from its value attributes
    or its paragraphs (annotations left out)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.tables: list[_Table] = []
        self.table: _Table | None = None
        self.level = 0  # depth of the current element inside the table
        self.row = 0  # rows before the current one
        self.row_repeat = 1
        self.row_cells: dict[int, str] = {}
        self.col = 0
        self.cell: dict | None = None  # the open cell: first column, repeat, level, value, text parts
        self.skip = 0  # inside an annotation: its text is no cell text

    def start(self, name: str, attrs: dict[str, str]) -> None:
        local = name.rsplit(":", 1)[-1]
        if self.table is None:
            if local == "table":
                self.table = _Table(attr(attrs, "name") or f"Sheet{len(self.tables) + 1}")
                self.tables.append(self.table)
                self.row, self.level = 0, 0
            return
        self.level += 1
        if self.table.refused:
            return
        if self.cell is not None:
            if self.skip or local == "annotation":
                self.skip += 1
            elif local == "s":
                self.cell["text"].append(" " * max(number(attr(attrs, "c"), 1), 1))
            elif local == "tab":
                self.cell["text"].append("\t")
            elif local in ("line-break", "p") and self.cell["text"]:
                self.cell["text"].append("\n")
        elif local == "table-row":
            self.row_repeat = max(number(attr(attrs, "number-rows-repeated"), 1), 1)
            self.row_cells, self.col = {}, 0
        elif local in ("table-cell", "covered-table-cell"):
            self.cell = {"col": self.col, "repeat": max(number(attr(attrs, "number-columns-repeated"), 1), 1),
                         "level": self.level, "value": _value(attrs), "text": []}
            spans = number(attr(attrs, "number-columns-spanned"), 1), number(attr(attrs, "number-rows-spanned"), 1)
            if local == "table-cell" and (spans[0] > 1 or spans[1] > 1):
                first = (self.row, self.col)
                self.table.merged.append((first, (self.row + spans[1] - 1, self.col + spans[0] - 1)))

    def chars(self, data: str) -> None:
        if self.cell is not None and not self.skip and self.table is not None and not self.table.refused:
            self.cell["text"].append(data)

    def end(self, name: str) -> None:
        if self.table is None:
            return
        if self.level == 0:  # the table's own end tag
            self.table = None
            return
        level = self.level
        self.level -= 1
        if self.table.refused:
            return
        if self.cell is not None:
            if self.skip:
                self.skip -= 1
            elif level == self.cell["level"]:
                self._close_cell()
        elif name.rsplit(":", 1)[-1] == "table-row":
            if self.row_cells:
                self.table.rows.append((self.row, self.row_repeat, self.row_cells))
            self.row += self.row_repeat
            self.row_repeat = 1

    def _close_cell(self) -> None:
        cell, self.cell = self.cell, None
        assert cell is not None and self.table is not None
        first, repeat = cell["col"], cell["repeat"]
        self.col = first + repeat
        text = cell["value"] if cell["value"] is not None else "".join(cell["text"]).strip()
        if not text:
            return
        self.table.size.add(self.row + self.row_repeat, first + repeat, repeat * self.row_repeat)
        try:
            self.table.size.check(self.limits)
        except OverLimit as exc:
            self.table.refused = str(exc)
            self.table.rows = []
            return
        for j in range(first, first + repeat):
            self.row_cells[j] = text


def _value(attrs: dict[str, str]) -> str | None:
    """The cell's text from its typed value, when it has one (None: read its paragraphs)."""
    kind = attr(attrs, "value-type")
    if kind in _NUMERIC:
        raw = attr(attrs, "value")
        try:
            return cell_text(float(raw)) if raw is not None else None
        except ValueError:
            return None
    if kind == "boolean":
        return "TRUE" if (attr(attrs, "boolean-value") or "").lower() == "true" else "FALSE"
    if kind in _TEXT_VALUE:
        return attr(attrs, _TEXT_VALUE[kind])
    if kind == "string":
        return attr(attrs, "string-value")
    return None


def read_ods(data: bytes, *, limits: Limits = DEFAULT_LIMITS) -> ReadResult:
    """Every non-empty table of an ODS; a table over ``limits`` is a ``ReadError`` with its reason, the
    others are read. A file that is no readable ODS is one ``ReadError``. Never raises for bad input."""
    reader = _Reader(limits)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            parse_member(zf, zf.getinfo("content.xml"), limits, reader.start, reader.end, reader.chars)
    except KeyError:
        return ReadResult(errors=[ReadError("", "unreadable ods: no content.xml", "ods")])
    except OverLimit as exc:
        return ReadResult(errors=[ReadError("", f"not read: {exc}", "ods")])
    except (zipfile.BadZipFile, OSError, ValueError, zlib.error, RuntimeError, NotImplementedError) as exc:
        return ReadResult(errors=[ReadError("", f"unreadable ods: {exc}", "ods")])
    result = ReadResult()
    for table in reader.tables:
        if table.refused:
            result.errors.append(ReadError("", f"sheet {table.name!r}: {table.refused}", "ods"))
            continue
        width = table.size.cols
        rows: list[list[str]] = []
        for first, repeat, cells in table.rows:
            rows.extend([[""] * width for _ in range(first - len(rows))])
            line = [""] * width
            for j, text in cells.items():
                line[j] = text
            rows.extend([line] + [list(line) for _ in range(repeat - 1)])
        rows, reason = cap_cells(rows, limits)
        if reason:
            result.errors.append(ReadError("", f"sheet {table.name!r}: {reason}", "ods"))
        rows = trim(rows, limits.max_rows, limits.max_cols)
        if rows:
            merged = [m for m in table.merged if m[0][0] < len(rows) and m[0][1] < len(rows[0])]
            result.sheets.append(Sheet(name=table.name, rows=rows, format="ods", merged=merged))
    return result
