"""XLS, XLSX, XLSB and ODS through python-calamine (Rust; no formula evaluation, cached values are read).

calamine allocates a sheet's whole used range, densely, before anything can be cut: a 1.5 KB XLSX with
cells A1 and XFD1048576 asks for 500 GB and aborts the process. So an XLSX's sheets are measured first
from their XML (cell references only, streamed, within the archive ratio limit), and a sheet whose range
or cell count is over the limits is not handed to calamine; its reason is recorded instead.
"""

from __future__ import annotations

import html
import io
import re
import zipfile
import zlib
from dataclasses import dataclass
from operator import itemgetter

from .base import DEFAULT_LIMITS, Limits, ReadError, ReadResult, Sheet, cap_cells, cell_text, trim

_CHUNK = 1 << 20
_SHEET_TAG = re.compile(rb"<(?:\w+:)?sheet\b[^>]*>")
_REL_TAG = re.compile(rb"<(?:\w+:)?Relationship\b[^>]*>")
_ATTR = re.compile(rb'([\w:]+)\s*=\s*"([^"]*)"')
# In a worksheet part only cells have an attribute r="A1" and only rows an attribute r="1" (merged ranges,
# selections and hyperlinks use ref/sqref), so plain attribute patterns find them without parsing tags
_CELL_REF = re.compile(rb' r="([A-Z]{1,3})([0-9]{1,7})"')
_FIRST, _SECOND = itemgetter(0), itemgetter(1)
_PREFIXED_CELL = re.compile(rb"<\w+:c[\s/>]")
_ROW_REF = re.compile(rb' r="([0-9]{1,7})"')


@dataclass
class SheetSize:
    """A worksheet's used range measured from its XML, before calamine would allocate it."""

    rows: int = 0  # last row used, 1-based
    cols: int = 0  # last column used, 1-based
    cells: int = 0  # cell elements (empty styled cells included)

    @property
    def area(self) -> int:
        """Cells of the dense range from A1 to the last used cell: what calamine would allocate."""
        return self.rows * self.cols


def _col_number(letters: bytes) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ch - 64
    return n


def _attrs(tag: bytes) -> dict[str, str]:
    return {k.decode().rsplit(":", 1)[-1]: html.unescape(v.decode("utf-8", "replace")) for k, v in _ATTR.findall(tag)}


def _sheet_parts(zf: zipfile.ZipFile) -> dict[str, str]:
    """Sheet name -> worksheet part name, from the workbook and its relationships."""
    try:
        workbook = zf.open("xl/workbook.xml").read(4 << 20)
        rels = zf.open("xl/_rels/workbook.xml.rels").read(4 << 20)
    except KeyError:
        return {}
    targets = {}
    for tag in _REL_TAG.findall(rels):
        a = _attrs(tag)
        target = a.get("Target", "")
        targets[a.get("Id", "")] = target.lstrip("/") if target.startswith("/") else "xl/" + target
    parts = {}
    for tag in _SHEET_TAG.findall(workbook):
        a = _attrs(tag)
        if a.get("id") in targets:
            parts[a.get("name", "")] = targets[a["id"]]
    return parts


def _measure(zf: zipfile.ZipFile, part: str, limits: Limits) -> SheetSize | str:
    """The used range of one worksheet part, read in chunks; stops as soon as it is over a limit.

    Returns the size, or the reason the sheet must not be loaded.
    """
    try:
        info = zf.getinfo(part)
    except KeyError:
        return SheetSize()
    size = SheetSize()
    tail = b""
    expanded = 0
    with zf.open(info) as stream:
        while True:
            chunk = stream.read(_CHUNK)
            if not chunk:
                break
            expanded += len(chunk)
            if expanded > 1 << 20 and expanded > limits.max_ratio * max(info.compress_size, 1):
                return f"compression ratio above {limits.max_ratio:g}: zip bomb?"
            # A tag cut by the chunk boundary is completed by the next chunk: keep the last partial tag
            text = tail + chunk
            cut = text.rfind(b"<")
            text, tail = (text[:cut], text[cut:]) if cut >= 0 else (text, b"")
            # Maxima over the chunk in C (map/max/set); only distinct column letters reach Python
            refs = _CELL_REF.findall(text)
            if refs:
                size.cols = max([size.cols, *map(_col_number, set(map(_FIRST, refs)))])
                size.rows = max(size.rows, max(map(int, map(_SECOND, refs))))
            size.rows = max(size.rows, max(map(int, _ROW_REF.findall(text)), default=0))
            size.cells += text.count(b"<c ") + text.count(b"<c>") + text.count(b"<c/>")
            if b":c" in text:  # cells written with a namespace prefix (<x:c r="A1">)
                size.cells += len(_PREFIXED_CELL.findall(text))
            over = _over(size, limits)
            if over:
                return over
    return size


def _over(size: SheetSize, limits: Limits) -> str:
    if size.area > limits.max_sheet_area:
        return (
            f"used range of {size.rows} rows x {size.cols} columns ({size.area} cells) is over the limit of "
            f"{limits.max_sheet_area} cells: not read"
        )
    if size.cells > limits.max_cells:
        return f"more than {limits.max_cells} cells: not read"
    return ""


def _expands_too_much(zf: zipfile.ZipFile, name: str, limits: Limits) -> str:
    """Why a member that calamine reads whole (the shared strings) must not be read, or ""."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        return ""
    expanded = 0
    with zf.open(info) as stream:
        while chunk := stream.read(_CHUNK):
            expanded += len(chunk)
            if expanded > limits.max_total_bytes:
                return f"{name} expands beyond {limits.max_total_bytes} bytes"
            if expanded > 1 << 20 and expanded > limits.max_ratio * max(info.compress_size, 1):
                return f"{name}: compression ratio above {limits.max_ratio:g}: zip bomb?"
    return ""


def _xlsx_refusals(data: bytes, limits: Limits) -> dict[str, str]:
    """Sheets of an XLSX that must not be loaded, with the reason for each ("" for the whole file)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            whole = _expands_too_much(zf, "xl/sharedStrings.xml", limits)
            if whole:
                return {"": whole}
            refused = {}
            for name, part in _sheet_parts(zf).items():
                measured = _measure(zf, part, limits)
                if isinstance(measured, str):
                    refused[name] = measured
            return refused
    except (zipfile.BadZipFile, OSError, ValueError, zlib.error, RuntimeError, NotImplementedError):
        return {}  # calamine says what is wrong with the file


def read_spreadsheet(data: bytes, fmt: str, *, limits: Limits = DEFAULT_LIMITS) -> ReadResult:
    """Every non-empty sheet of an XLS, XLSX, XLSB or ODS workbook (``fmt``), cached values as text.

    An XLSX sheet whose used range or cell count is over ``limits`` is refused before it is loaded; a sheet
    that fails, cells past ``max_cells``, an unreadable workbook and a missing python-calamine are each a
    ``ReadError`` naming the sheet. Never raises for bad input.
    """
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
            values = wb.get_sheet_by_name(name).to_python(skip_empty_area=False, nrows=limits.max_rows)
        except Exception as exc:
            result.errors.append(ReadError("", f"sheet {name!r}: {exc}", fmt))
            continue
        rows = [[cell_text(v) for v in row[: limits.max_cols]] for row in values]
        rows, reason = cap_cells(rows, limits)
        if reason:
            result.errors.append(ReadError("", f"sheet {name!r}: {reason}", fmt))
        rows = trim(rows, limits.max_rows, limits.max_cols)
        if rows:
            result.sheets.append(Sheet(name=name, rows=rows, format=fmt))
    return result
