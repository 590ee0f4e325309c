"""XLS, XLSX, XLSB and ODS through python-calamine (Rust; no formula evaluation, cached values are read)."""

from __future__ import annotations

import io

from .base import DEFAULT_LIMITS, Limits, ReadError, ReadResult, Sheet, cell_text, trim


def read_spreadsheet(data: bytes, fmt: str, *, limits: Limits = DEFAULT_LIMITS) -> ReadResult:
    try:
        from python_calamine import CalamineWorkbook
    except ImportError:
        return ReadResult(errors=[ReadError("", "python-calamine is not installed", fmt)])
    result = ReadResult()
    try:
        wb = CalamineWorkbook.from_filelike(io.BytesIO(data))
    except Exception as exc:  # calamine raises several unrelated types for corrupt files
        return ReadResult(errors=[ReadError("", f"unreadable {fmt}: {exc}", fmt)])
    for name in wb.sheet_names:
        try:
            values = wb.get_sheet_by_name(name).to_python(skip_empty_area=False, nrows=limits.max_rows)
        except Exception as exc:
            result.errors.append(ReadError("", f"sheet {name!r}: {exc}", fmt))
            continue
        rows = [[cell_text(v) for v in row[: limits.max_cols]] for row in values]
        rows = trim(rows, limits.max_rows, limits.max_cols)
        if rows:
            result.sheets.append(Sheet(name=name, rows=rows, format=fmt))
    return result
