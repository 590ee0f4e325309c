"""XLS, XLSX and XLSB through python-calamine (Rust; no formula evaluation, cached values are read).

calamine allocates a sheet's range densely before anything can be cut, so no sheet reaches it unmeasured:
XLSX sheets are measured from their XML first (``sheet_size``), and a sheet over the limits is refused with
its reason; an XLS (at most 65,536 x 256 cells) or XLSB sheet is measured on the range calamine reports
before its cells are converted. ODS files are read by ``ods`` (calamine expands their repeated rows when it
opens them), bare BIFF2-BIFF5 streams, which calamine does not read, by ``biff``. Merged ranges are kept
with the sheet, so that detection can expand them.
"""

from __future__ import annotations

import io
import zipfile
import zlib

from .base import DEFAULT_LIMITS, Limits, ReadError, ReadResult, Sheet, cap_cells, cell_text, trim
from .sheet_size import (
    OverLimit,
    SheetSize,
    expands_too_much,
    measure_xlsx_part,
    xlsx_sheet_parts,
)

_ZIP_ERRORS = (zipfile.BadZipFile, OSError, ValueError, zlib.error, RuntimeError, NotImplementedError, KeyError)


def _xlsx_refusals(data: bytes, limits: Limits) -> dict[str, str]:
    """Sheets of an XLSX that must not be loaded, with the reason for each ("" for the whole file)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            whole = expands_too_much(zf, "xl/sharedStrings.xml", limits)
            if whole:
                return {"": whole}
            refused = {}
            for name, part in xlsx_sheet_parts(zf).items():
                try:
                    measure_xlsx_part(zf, part, limits)
                except OverLimit as exc:
                    refused[name] = str(exc)
            return refused
    except _ZIP_ERRORS:
        return {}  # calamine says what is wrong with the file


def _loaded_size(sheet: object) -> SheetSize:
    """The dense range calamine holds for a loaded sheet, from A1 (``to_python`` pads from there)."""
    end = getattr(sheet, "end", None)
    if not end:
        return SheetSize()
    return SheetSize(rows=end[0] + 1, cols=end[1] + 1)


def read_spreadsheet(data: bytes, fmt: str, *, limits: Limits = DEFAULT_LIMITS) -> ReadResult:
    """Every non-empty sheet of an XLS, XLSX, XLSB or ODS workbook (``fmt``), cached values as text.

    A sheet whose range of values or cell count is over ``limits`` is refused before its cells are
    converted (XLSX and ODS: before anything is allocated for it); a sheet that fails, cells past ``max_cells``, an
    unreadable workbook and a missing python-calamine are each a ``ReadError`` naming the sheet. Never
    raises for bad input.
    """
    if fmt == "xls" and not data.startswith(b"\xd0\xcf\x11\xe0"):
        from .biff import read_biff  # a bare BIFF2-BIFF5 stream: no OLE2 container around it

        return read_biff(data, limits=limits)
    if fmt == "ods":
        from .ods import read_ods

        return read_ods(data, limits=limits)
    try:
        from python_calamine import CalamineWorkbook
    except ImportError:
        return ReadResult(errors=[ReadError("", "python-calamine is not installed", fmt)])
    result = ReadResult()
    refused = _xlsx_refusals(data, limits) if fmt == "xlsx" else {}
    if "" in refused:
        return ReadResult(errors=[ReadError("", f"not read: {refused['']}", fmt)])
    try:
        wb = CalamineWorkbook.from_filelike(io.BytesIO(data))
    except Exception as exc:  # calamine raises several unrelated types for corrupt files
        return ReadResult(errors=[ReadError("", f"unreadable {fmt}: {exc}", fmt)])
    for name in wb.sheet_names:
        if name in refused:
            result.errors.append(ReadError("", f"sheet {name!r}: {refused[name]}", fmt))
            continue
        try:
            sheet = wb.get_sheet_by_name(name)
            _loaded_size(sheet).check(limits)
            values = sheet.to_python(skip_empty_area=False, nrows=limits.max_rows)
            merged = list(getattr(sheet, "merged_cell_ranges", None) or [])
        except OverLimit as exc:
            result.errors.append(ReadError("", f"sheet {name!r}: {exc}", fmt))
            continue
        except Exception as exc:
            result.errors.append(ReadError("", f"sheet {name!r}: {exc}", fmt))
            continue
        rows = [[cell_text(v) for v in row[: limits.max_cols]] for row in values]
        rows, reason = cap_cells(rows, limits)
        if reason:
            result.errors.append(ReadError("", f"sheet {name!r}: {reason}", fmt))
        rows = trim(rows, limits.max_rows, limits.max_cols)
        if rows:
            spans = [((r0, c0), (r1, c1)) for (r0, c0), (r1, c1) in merged if r0 < len(rows) and c0 < len(rows[0])]
            result.sheets.append(Sheet(name=name, rows=rows, format=fmt, merged=spans))
    return result
