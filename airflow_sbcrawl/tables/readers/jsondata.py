"""JSON: every array of records in the document becomes a sheet (header row of keys, one row per record); a
grid of arrays is a sheet under the column names a sibling key gives ("columns": [...], "data": [[...]])."""

from __future__ import annotations

import json
from typing import Any

from .base import DEFAULT_LIMITS, Limits, ReadError, ReadResult, Sheet, cell_text, trim
from .delimited import decode


def _flatten(record: dict[str, Any], prefix: str, out: dict[str, str], nested: list[tuple[str, list]]) -> None:
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            _flatten(value, name + ".", out, nested)
        elif isinstance(value, list):
            if value and all(isinstance(v, dict) for v in value):
                nested.append((name, value))  # a child table: its own sheet, not a blob in one cell
            else:
                out[name] = "; ".join(cell_text(v) for v in value if not isinstance(v, dict | list))
        else:
            out[name] = cell_text(value)


# Keys of an object that name the columns of a grid given beside them: {"columns": [...], "data": [[...]]}
_COLUMN_KEYS = ("columns", "column_names", "header", "headers", "fields", "dimensions")


def _column_names(node: dict[str, Any], grid: list[Any]) -> list[str] | None:
    """The names a sibling key gives the grid's columns, when there is one of the grid's width."""
    width = max((len(r) for r in grid if isinstance(r, list)), default=0)
    for key in _COLUMN_KEYS:
        names = node.get(key)
        if isinstance(names, list) and len(names) == width and all(isinstance(n, str | int) for n in names):
            return [cell_text(n) for n in names]
        if isinstance(names, list) and len(names) == width and all(isinstance(n, dict) for n in names):
            labels = [n.get("name") or n.get("label") or n.get("id") for n in names]
            if all(isinstance(x, str) for x in labels):
                return labels
    return None


def _records_sheet(path: str, records: list[Any], limits: Limits, sheets: list[Sheet],
                   header: list[str] | None = None) -> None:
    if all(isinstance(r, list) for r in records):  # already a grid: [[...], [...]]
        rows = ([header] if header else []) + [[cell_text(c) for c in r] for r in records]
        sheets.append(Sheet(name=path, rows=trim(rows, limits.max_rows, limits.max_cols), format="json"))
        return
    flat: list[dict[str, str]] = []
    nested: list[tuple[str, list]] = []
    for rec in records[: limits.max_rows]:
        row: dict[str, str] = {}
        if isinstance(rec, dict):
            _flatten(rec, "", row, nested)
        else:
            row["value"] = cell_text(rec)
        flat.append(row)
    columns: dict[str, None] = {}
    for row in flat:
        columns.update(dict.fromkeys(row))
    header = list(columns)
    rows = [header] + [[row.get(c, "") for c in header] for row in flat]
    sheets.append(Sheet(name=path, rows=trim(rows, limits.max_rows, limits.max_cols), format="json"))
    children: dict[str, list] = {}
    for name, value in nested:
        children.setdefault(name, []).extend(value)
    for name, value in children.items():
        _records_sheet(f"{path}.{name}[]" if path else f"{name}[]", value, limits, sheets)


def _walk(node: Any, path: str, limits: Limits, sheets: list[Sheet], depth: int = 0,
          header: list[str] | None = None) -> None:
    if depth > 20 or len(sheets) > 100:
        return
    if isinstance(node, list):
        if node and all(isinstance(r, dict | list) for r in node):
            _records_sheet(path or "$", node, limits, sheets, header)
        return
    if isinstance(node, dict):
        scalars = {k: v for k, v in node.items() if not isinstance(v, dict | list)}
        for key, value in node.items():
            if key in _COLUMN_KEYS and isinstance(value, list) and all(isinstance(v, str | int) for v in value):
                continue  # the names of a grid beside them, not a sheet of their own
            names = _column_names(node, value) if isinstance(value, list) and value and all(
                isinstance(r, list) for r in value) else None
            if isinstance(value, dict | list):
                _walk(value, f"{path}.{key}" if path else key, limits, sheets, depth + 1, names)
        if scalars and not path and not sheets:
            # A document of plain key/value pairs: a two-column sheet is the honest reading
            rows = [[k, cell_text(v)] for k, v in scalars.items()]
            sheets.append(Sheet(name="$", rows=rows, format="json"))


def read_json(data: bytes, *, limits: Limits = DEFAULT_LIMITS) -> ReadResult:
    """A JSON document or JSON Lines: one sheet per array of records (nested arrays of records are sheets
    of their own, named by their path), or a key/value sheet for a flat object. Invalid JSON, or JSON
    without a record, gives one ``ReadError``. Never raises for bad input."""
    text, _ = decode(data, limits.sniff_bytes)
    try:
        doc = json.loads(text)
    except ValueError:
        # JSON Lines: one record per line
        try:
            doc = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as exc:
            return ReadResult(errors=[ReadError("", f"invalid JSON: {exc}", "json")])
    sheets: list[Sheet] = []
    _walk(doc, "", limits, sheets)
    if not sheets:
        return ReadResult(errors=[ReadError("", "JSON holds no array of records", "json")])
    return ReadResult(sheets=sheets)
