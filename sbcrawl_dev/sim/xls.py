"""Legacy Excel files as the simulator serves them: a BIFF8 workbook in an OLE2 compound file.

Written by hand with ``struct`` (the simulator has no dependency): one sheet of labels and numbers, the
records every reader needs (BOF, the code page, one font, the 16 style XFs and one cell XF, the sheet's
BOUNDSHEET with its stream offset, DIMENSIONS, LABEL and NUMBER cells, EOF), in a ``Workbook`` stream of at
least 4,096 bytes so that it lives in regular sectors (no mini stream to write).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

_SECTOR = 512
_FREE, _END, _FAT = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD
_NO_STREAM = 0xFFFFFFFF


def _record(kind: int, body: bytes = b"") -> bytes:
    return struct.pack("<HH", kind, len(body)) + body


def _unicode(text: str, length_bytes: int = 2) -> bytes:
    """A BIFF8 unicode string: its length, the "uncompressed UTF-16" flag, the characters."""
    chars = text.encode("utf-16-le")
    head = struct.pack("<H" if length_bytes == 2 else "<B", len(text))
    return head + b"\x01" + chars


def _globals(sheet_name: str, sheet_offset: int) -> bytes:
    out = _record(0x0809, struct.pack("<HHHHII", 0x0600, 0x0005, 0x0DBB, 0x07CC, 0, 0x06))  # BOF: globals
    out += _record(0x0042, struct.pack("<H", 1200))  # CODEPAGE: UTF-16
    out += _record(0x003D, struct.pack("<HHHHHHHHH", 0, 0, 0x4000, 0x2000, 0x38, 0, 0, 1, 0x258))  # WINDOW1
    font = struct.pack("<HHHHHBBBB", 200, 0, 0x7FFF, 400, 0, 0, 0, 0, 0) + _unicode("Arial", 1)
    out += _record(0x0031, font) * 5  # FONT (index 4 is never used, so five of them)
    style_xf = struct.pack("<HHHBBBBIIH", 0, 0, 0xFFF5, 0x20, 0, 0, 0, 0, 0, 0x20C0)
    cell_xf = struct.pack("<HHHBBBBIIH", 0, 0, 0x0001, 0x20, 0, 0, 0, 0, 0, 0x20C0)
    out += _record(0x00E0, style_xf) * 15 + _record(0x00E0, cell_xf)  # XF 0-14 styles, 15 the cells'
    out += _record(0x0293, struct.pack("<HBB", 0x8000, 0, 0xFF))  # STYLE: Normal
    out += _record(0x0085, struct.pack("<IBB", sheet_offset, 0, 0) + _unicode(sheet_name, 1))  # BOUNDSHEET
    return out + _record(0x000A)


def _sheet(rows: list[list[str]], numeric: Callable[[int, str], bool]) -> bytes:
    width = max((len(r) for r in rows), default=0)
    out = _record(0x0809, struct.pack("<HHHHII", 0x0600, 0x0010, 0x0DBB, 0x07CC, 0, 0x06))  # BOF: worksheet
    out += _record(0x0200, struct.pack("<IIHHH", 0, len(rows), 0, width, 0))  # DIMENSIONS
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            if not cell:
                continue
            if numeric(i, cell):
                out += _record(0x0203, struct.pack("<HHHd", i, j, 15, float(cell)))  # NUMBER
            else:
                out += _record(0x0204, struct.pack("<HHH", i, j, 15) + _unicode(cell))  # LABEL
    return out + _record(0x000A)


def biff8_workbook(sheet_name: str, rows: list[list[str]], numeric: Callable[[int, str], bool]) -> bytes:
    """The ``Workbook`` stream: globals, then the one sheet; ``numeric(row, text)`` says which cells are
    written as numbers (the others as labels)."""
    size = len(_globals(sheet_name, 0))  # the offset field has a fixed size: measure once, then fill it in
    stream = _globals(sheet_name, size) + _sheet(rows, numeric)
    return stream.ljust(4096, b"\x00")  # under 4,096 bytes a stream would belong in the mini stream


def _dir_entry(name: str, kind: int, child: int, start: int, size: int) -> bytes:
    encoded = (name + "\x00").encode("utf-16-le") if name else b""
    return (encoded.ljust(64, b"\x00") + struct.pack("<HBBIII", len(encoded), kind, 1, _NO_STREAM, _NO_STREAM, child)
            + bytes(16) + struct.pack("<IQQIII", 0, 0, 0, start, size, 0))


def compound_file(stream: bytes, name: str = "Workbook") -> bytes:
    """An OLE2 compound file (version 3, 512-byte sectors) holding one stream in regular sectors."""
    data_sectors = -(-len(stream) // _SECTOR)
    fat_sectors = 1
    while fat_sectors * (_SECTOR // 4) < data_sectors + 1 + fat_sectors:
        fat_sectors += 1
    directory_at = data_sectors
    fat = [k + 1 for k in range(data_sectors - 1)] + [_END]  # the stream's chain
    fat += [_END]  # the directory's single sector
    fat += [_FAT] * fat_sectors
    fat += [_FREE] * (fat_sectors * (_SECTOR // 4) - len(fat))
    difat = list(range(directory_at + 1, directory_at + 1 + fat_sectors)) + [_FREE] * (109 - fat_sectors)
    header = (bytes.fromhex("D0CF11E0A1B11AE1") + bytes(16) + struct.pack("<HHHHH", 0x3E, 3, 0xFFFE, 9, 6)
              + bytes(6) + struct.pack("<IIIIIIIII", 0, fat_sectors, directory_at, 0, 4096, _END, 0, _END, 0)
              + struct.pack("<109I", *difat))
    directory = (_dir_entry("Root Entry", 5, 1, _END, 0) + _dir_entry(name, 2, _NO_STREAM, 0, len(stream))
                 + _dir_entry("", 0, _NO_STREAM, 0, 0) * 2)
    body = stream.ljust(data_sectors * _SECTOR, b"\x00") + directory + struct.pack(f"<{len(fat)}I", *fat)
    return header + body
