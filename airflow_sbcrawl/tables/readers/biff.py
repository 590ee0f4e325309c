"""Bare BIFF2-BIFF5 streams: the ``.xls`` files of Excel 2 to 4 (and stream-saved Excel 5 books), which
hold their records without the OLE2 container calamine expects.

Only cell values are read: labels, numbers (IEEE, RK and integer forms), cached formula results and
booleans; formats are not, so a date is its serial number. Unknown records are skipped by their length,
so a stream from a later writer still gives its cells. Dimensions are checked against ``Limits`` on the
cells present before a grid is built.
"""

from __future__ import annotations

import struct

from .base import DEFAULT_LIMITS, Limits, ReadError, ReadResult, Sheet, cap_cells, cell_text, trim
from .sheet_size import OverLimit, SheetSize

BOF_TYPES = (0x0009, 0x0209, 0x0409, 0x0809)
_EOF = 0x000A
_SHEET_KINDS = (0x0010,)  # a worksheet (0x0005 workbook globals, 0x0020 chart, 0x0040 macro sheet)
_CODEPAGES = {367: "ascii", 1200: "utf-16-le", 10000: "mac_roman", 32768: "mac_roman", 32769: "cp1252"}


def looks_like_biff(data: bytes) -> bool:
    """Whether the bytes start with the BOF record of a BIFF2-BIFF5 stream."""
    if len(data) < 8:
        return False
    kind, length = struct.unpack_from("<HH", data)
    if kind not in BOF_TYPES or not 4 <= length <= 20:
        return False
    dt = struct.unpack_from("<H", data, 6)[0]  # after the version word, in every BIFF version
    return dt in (0x0005, 0x0010, 0x0020, 0x0040, 0x0100)


def _rk(value: int) -> float:
    """An RK number: a 30-bit integer or the high 30 bits of a double, maybe divided by 100."""
    if value & 2:
        number = float(value >> 2 if not value & 0x80000000 else (value >> 2) - (1 << 30))
    else:
        number = struct.unpack("<d", struct.pack("<Q", (value & 0xFFFFFFFC) << 32))[0]
    return number / 100 if value & 1 else number


class _Book:
    """The sheets of one stream as they are read: names, cells by position, the text encoding."""

    def __init__(self) -> None:
        self.encoding = "cp1252"
        self.names: list[str] = []
        self.sheets: list[tuple[str, dict[tuple[int, int], str]]] = []
        self.cells: dict[tuple[int, int], str] | None = None
        self.pending: tuple[int, int] | None = None  # a formula whose string result comes next

    def text(self, raw: bytes) -> str:
        try:
            return raw.decode(self.encoding, "replace")
        except LookupError:
            return raw.decode("cp1252", "replace")

    def put(self, row: int, col: int, value: object) -> None:
        if self.cells is not None:
            text = cell_text(value)
            if text:
                self.cells[(row, col)] = text


def _cell(book: _Book, kind: int, body: bytes) -> None:
    """One cell record into the current sheet (records too short for their kind are skipped)."""
    if len(body) < 4:
        return
    row, col = struct.unpack_from("<HH", body)
    if kind == 0x0203 and len(body) >= 14:  # NUMBER
        book.put(row, col, struct.unpack_from("<d", body, 6)[0])
    elif kind == 0x0003 and len(body) >= 15:  # NUMBER, BIFF2
        book.put(row, col, struct.unpack_from("<d", body, 7)[0])
    elif kind == 0x0002 and len(body) >= 9:  # INTEGER, BIFF2
        book.put(row, col, float(struct.unpack_from("<H", body, 7)[0]))
    elif kind == 0x027E and len(body) >= 10:  # RK
        book.put(row, col, _rk(struct.unpack_from("<I", body, 6)[0]))
    elif kind == 0x00BD and len(body) >= 6:  # MULRK: columns col.. of one row
        for k in range((len(body) - 6) // 6):
            book.put(row, col + k, _rk(struct.unpack_from("<I", body, 4 + 6 * k + 2)[0]))
    elif kind in (0x0204, 0x00D6) and len(body) >= 8:  # LABEL, RSTRING
        length = struct.unpack_from("<H", body, 6)[0]
        book.put(row, col, book.text(body[8 : 8 + length]))
    elif kind == 0x0004 and len(body) >= 8:  # LABEL, BIFF2
        book.put(row, col, book.text(body[8 : 8 + body[7]]))
    elif kind in (0x0006, 0x0206, 0x0406) and len(body) >= 14:  # FORMULA: its cached result
        result = body[6:14]
        if result[6:8] != b"\xff\xff":
            book.put(row, col, struct.unpack("<d", result)[0])
        elif result[0] == 0:
            book.pending = (row, col)  # the string follows in a STRING record
        elif result[0] == 1:
            book.put(row, col, bool(result[2]))
    elif kind in (0x0205, 0x0005) and len(body) >= 8:  # BOOLERR
        at = 6 if kind == 0x0205 else 7
        if len(body) >= at + 2 and not body[at + 1]:
            book.put(row, col, bool(body[at]))


def read_biff(data: bytes, *, limits: Limits = DEFAULT_LIMITS) -> ReadResult:
    """Every worksheet of a bare BIFF2-BIFF5 stream; a stream that is not one is a ``ReadError``. Never
    raises for bad input."""
    if not looks_like_biff(data):
        return ReadResult(errors=[ReadError("", "not an Excel workbook: neither OLE2 nor a BIFF stream", "xls")])
    book = _Book()
    pos = 0
    while pos + 4 <= len(data):
        kind, length = struct.unpack_from("<HH", data, pos)
        body = data[pos + 4 : pos + 4 + length]
        pos += 4 + length
        if kind in BOF_TYPES:
            dt = struct.unpack_from("<H", body, 2)[0] if len(body) >= 4 else 0
            if dt in _SHEET_KINDS:
                n = len(book.sheets)
                book.sheets.append((book.names[n] if n < len(book.names) else f"Sheet{n + 1}", {}))
                book.cells = book.sheets[-1][1]
            else:
                book.cells = None
        elif kind == _EOF:
            book.cells = None
        elif kind == 0x0042 and len(body) >= 2:  # CODEPAGE
            page = struct.unpack_from("<H", body)[0]
            book.encoding = _CODEPAGES.get(page, f"cp{page}")
        elif kind in (0x0085, 0x008F) and len(body) >= 7:  # BOUNDSHEET (BIFF5), BUNDLESHEET (BIFF4): the name
            book.names.append(book.text(body[7 : 7 + body[6]]))
        elif kind in (0x0207, 0x0007) and book.pending is not None:  # STRING: a formula's text result
            text = body[2 : 2 + struct.unpack_from("<H", body)[0]] if kind == 0x0207 else body[1 : 1 + body[:1][0]]
            book.put(*book.pending, book.text(text))
            book.pending = None
        elif book.cells is not None:
            _cell(book, kind, body)
    return _sheets(book, limits)


def _sheets(book: _Book, limits: Limits) -> ReadResult:
    result = ReadResult()
    for name, cells in book.sheets:
        size = SheetSize()
        for r, c in cells:
            size.add(r + 1, c + 1)
        try:
            size.check(limits)
        except OverLimit as exc:
            result.errors.append(ReadError("", f"sheet {name!r}: {exc}", "xls"))
            continue
        rows = [[""] * size.cols for _ in range(size.rows)]
        for (r, c), text in cells.items():
            rows[r][c] = text
        rows, reason = cap_cells(rows, limits)
        if reason:
            result.errors.append(ReadError("", f"sheet {name!r}: {reason}", "xls"))
        rows = trim(rows, limits.max_rows, limits.max_cols)
        if rows:
            result.sheets.append(Sheet(name=name, rows=rows, format="xls"))
    if not book.sheets:
        result.errors.append(ReadError("", "BIFF stream without a worksheet", "xls"))
    return result
