"""How much a spreadsheet reader would allocate for each sheet, measured from the XML before it does.

calamine builds a sheet as one dense range from A1 to the last cell that holds a value (an empty styled
cell does not count, a declared ``<dimension>`` neither): a 1.5 KB XLSX with values in A1 and XFD1048576
asks for 500 GB and aborts the process, and an 800-byte ODS whose rows and cells are repeated asks for
3 GB. So every XLSX sheet is measured first, streaming and within the archive's ratio limit, and a sheet over
``Limits`` is not handed to calamine. The measure counts cells holding a value, so a real export that
formats a million empty rows (Eurostat's do) is measured by the cells it holds, and read.

XLSX: a fast path counts ``<c r="A1"`` references with regular expressions, exact when every cell tag is
written that way (as Excel and every common writer do); a part that is not (single-quoted attributes, other
whitespace, ``r`` not first, cells placed by position without ``r``) is parsed with expat instead.
ODS sheets are measured by the ODS reader itself (``ods``), which never asks calamine.
"""

from __future__ import annotations

import html
import re
import xml.parsers.expat
import zipfile
from dataclasses import dataclass
from operator import itemgetter

from .base import Limits

_CHUNK = 1 << 20
_SHEET_TAG = re.compile(rb"<(?:\w+:)?sheet\b[^>]*>")
_REL_TAG = re.compile(rb"<(?:\w+:)?Relationship\b[^>]*>")
_ATTR = re.compile(rb"""([\w:]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
# Every cell start tag, however written; and those of the regular form, with a value or empty (self-closed)
_ANY_CELL = re.compile(rb"<(?:[\w.-]+:)?c[\s/>]")
_REGULAR_CELL = re.compile(rb'<c r="[A-Z]{1,3}[0-9]{1,7}"[\s/>]')
_VALUE_CELL = re.compile(rb'<c r="([A-Z]{1,3})([0-9]{1,7})"[^>]*(?<!/)>(?!</c>)')
_FIRST, _SECOND = itemgetter(0), itemgetter(1)
_REF = re.compile(r"^\$?([A-Za-z]{1,3})\$?([0-9]{1,7})$")


class OverLimit(Exception):
    """A sheet is over a limit; the message is the reason recorded."""


@dataclass
class SheetSize:
    """A sheet's cells that hold a value: the last row and column used (1-based) and how many there are."""

    rows: int = 0
    cols: int = 0
    cells: int = 0

    @property
    def area(self) -> int:
        """Cells of the dense range from A1 to the last value: what calamine allocates for the sheet."""
        return self.rows * self.cols

    def check(self, limits: Limits) -> None:
        """``OverLimit`` with the reason when the sheet is over ``limits``."""
        if self.area > limits.max_sheet_area:
            raise OverLimit(
                f"used range of {self.rows} rows x {self.cols} columns ({self.area} cells) is over the limit of "
                f"{limits.max_sheet_area} cells: not read"
            )
        if self.cells > limits.max_cells:
            raise OverLimit(f"more than {limits.max_cells} cells: not read")

    def add(self, row: int, col: int, copies: int = 1) -> None:
        """Count a value at 1-based ``row``, ``col`` (``copies`` counts a repeated cell's copies)."""
        self.rows = max(self.rows, row)
        self.cols = max(self.cols, col)
        self.cells += copies


def _col_number(letters: bytes | str) -> int:
    n = 0
    for ch in letters.upper() if isinstance(letters, str) else letters:
        n = n * 26 + (ord(ch) if isinstance(ch, str) else ch) - 64
    return n


def _attrs(tag: bytes) -> dict[str, str]:
    out = {}
    for k, dq, sq in _ATTR.findall(tag):
        out[k.decode().rsplit(":", 1)[-1]] = html.unescape((dq or sq).decode("utf-8", "replace"))
    return out


def _chunks(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limits: Limits):
    """The member's bytes in chunks; ``OverLimit`` when it expands like a zip bomb."""
    expanded = 0
    with zf.open(info) as stream:
        while chunk := stream.read(_CHUNK):
            expanded += len(chunk)
            if expanded > limits.max_total_bytes:
                raise OverLimit(f"{info.filename} expands beyond {limits.max_total_bytes} bytes")
            if expanded > 1 << 20 and expanded > limits.max_ratio * max(info.compress_size, 1):
                raise OverLimit(f"{info.filename}: compression ratio above {limits.max_ratio:g}: zip bomb?")
            yield chunk


def expands_too_much(zf: zipfile.ZipFile, name: str, limits: Limits) -> str:
    """Why a member that a reader reads whole (the shared strings) must not be read, or ""."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        return ""
    try:
        for _ in _chunks(zf, info, limits):
            pass
    except OverLimit as exc:
        return str(exc)
    return ""


# -- XLSX -----------------------------------------------------------------------------------------------------


def xlsx_sheet_parts(zf: zipfile.ZipFile) -> dict[str, str]:
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


def measure_xlsx_part(zf: zipfile.ZipFile, part: str, limits: Limits) -> SheetSize:
    """The cells holding a value in one worksheet part; ``OverLimit`` as soon as it is over ``limits``."""
    try:
        info = zf.getinfo(part)
    except KeyError:
        return SheetSize()
    size = SheetSize()
    tail = b""
    for chunk in _chunks(zf, info, limits):
        # A tag cut by the chunk boundary is completed by the next chunk: keep the last partial tag
        text = tail + chunk
        cut = text.rfind(b"<")
        text, tail = (text[:cut], text[cut:]) if cut >= 0 else (text, b"")
        if len(_ANY_CELL.findall(text)) != len(_REGULAR_CELL.findall(text)):
            return _measure_xlsx_exact(zf, info, limits)  # some cell is written another way
        refs = _VALUE_CELL.findall(text)
        if refs:  # maxima in C (map/max/set); only distinct column letters reach Python
            size.add(max(map(int, map(_SECOND, refs))), max(map(_col_number, set(map(_FIRST, refs)))), len(refs))
            size.check(limits)
    if tail and _ANY_CELL.search(tail + b">"):
        return _measure_xlsx_exact(zf, info, limits)
    return size


class _XlsxCounter:
    """expat handlers that follow rows and cells as a spreadsheet application places them."""

    def __init__(self, size: SheetSize, limits: Limits) -> None:
        self.size, self.limits = size, limits
        self.row = 0
        self.col = 0
        self.cell: tuple[int, int] | None = None  # the open cell's position
        self.valued = False
        self.seen = 0

    def start(self, name: str, attrs: dict[str, str]) -> None:
        local = name.rsplit(":", 1)[-1]
        if local == "row":
            self.row = number(attr(attrs, "r"), self.row + 1)
            self.col = 0
        elif local == "c":
            ref = _REF.match(attr(attrs, "r") or "")
            if ref:
                self.col, self.row = _col_number(ref.group(1)), int(ref.group(2))
            else:
                self.col += 1
            self.cell, self.valued = (max(self.row, 1), self.col), False
        elif self.cell is not None:
            self.valued = True  # <v>, <is>, <f>: calamine may give the cell a value

    def end(self, name: str) -> None:
        if self.cell is not None and name.rsplit(":", 1)[-1] == "c":
            if self.valued:
                self.size.add(*self.cell)
                self.seen += 1
                if self.seen % 4096 == 0:
                    self.size.check(self.limits)
            self.cell = None


def attr(attrs: dict[str, str], local: str) -> str | None:
    """The value of the attribute named ``local`` whatever its namespace prefix, or None."""
    for k, v in attrs.items():
        if k.rsplit(":", 1)[-1] == local:
            return v
    return None


def number(text: str | None, default: int) -> int:
    """``text`` as an integer; ``default`` when it is absent or not an integer."""
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


def parse_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limits: Limits, start, end, chars=None) -> None:
    """Stream one XML member through expat handlers, within the archive limits (``OverLimit`` otherwise,
    and for XML that is not well-formed)."""
    parser = xml.parsers.expat.ParserCreate()
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    if chars is not None:
        parser.CharacterDataHandler = chars
        parser.buffer_text = True
    try:
        for chunk in _chunks(zf, info, limits):
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except xml.parsers.expat.ExpatError as exc:
        raise OverLimit(f"{info.filename} is not well-formed XML ({exc}): not read") from exc


def _measure_xlsx_exact(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limits: Limits) -> SheetSize:
    size = SheetSize()
    counter = _XlsxCounter(size, limits)
    parse_member(zf, info, limits, counter.start, counter.end)
    size.check(limits)
    return size
