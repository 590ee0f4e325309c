"""What every reader returns: sheets of cell strings, or the reason a file could not be read."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Sheet:
    """A grid of cell strings: a spreadsheet sheet, a CSV file, a PDF page's table, a flattened JSON array."""

    name: str
    rows: list[list[str]]
    member: str = ""  # path inside an archive, "" for the top-level file
    format: str = ""
    # Merged ranges, ((first row, first col), (last row, last col)) inclusive, 0-based: the text of each is
    # in its first cell only
    merged: list[tuple[tuple[int, int], tuple[int, int]]] = field(default_factory=list)


@dataclass(frozen=True)
class ReadError:
    """A file (or archive member) that was not read, and why: recorded, never raised through a batch."""

    member: str
    reason: str
    format: str = ""


@dataclass
class ReadResult:
    """What a reader gives for one file: the sheets it read, and a ``ReadError`` for each part it could not
    (both may be non-empty: a file read in part)."""

    sheets: list[Sheet] = field(default_factory=list)
    errors: list[ReadError] = field(default_factory=list)

    def extend(self, other: ReadResult) -> None:
        """Add another result's sheets and errors (an archive's members into the archive's result)."""
        self.sheets.extend(other.sheets)
        self.errors.extend(other.errors)


@dataclass(frozen=True)
class Limits:
    """Bounds that keep one hostile or huge file from exhausting a worker."""

    max_total_bytes: int = 512 * 1024 * 1024  # uncompressed bytes read from one file, archives included
    max_depth: int = 3  # archives inside archives
    max_ratio: float = 200.0  # uncompressed/compressed size of one archive member
    max_members: int = 2000
    max_rows: int = 200_000  # per sheet
    max_cols: int = 2_000
    max_pdf_pages: int = 500
    max_cells: int = 2_000_000  # non-empty cells per sheet; rows past it are cut, and the cut is recorded
    # Dense cells a spreadsheet reader may allocate for one sheet (rows x columns of its used range, from A1):
    # calamine allocates the whole range, so a sheet with cells A1 and XFD1048576 would ask for 500 GB
    max_sheet_area: int = 8_000_000
    max_line_chars: int = 256 * 1024  # one physical line of a text file; longer lines are cut, and recorded
    sniff_bytes: int = 64 * 1024  # sample for encoding and CSV dialect detection


class LimitExceeded(Exception):
    """Raised inside archive reading when a bound is hit; turned into a ReadError at the boundary."""


def cell_text(value: object) -> str:
    """One cell as text; whole floats lose their ".0" so years and counts read as people wrote them."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value != value:  # NaN
            return ""
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    return str(value).strip()


def trim(rows: list[list[str]], max_rows: int, max_cols: int) -> list[list[str]]:
    """Cut to the limits, drop trailing empty rows and pad every row to the same width."""
    rows = [r[:max_cols] for r in rows[:max_rows]]
    while rows and not any(c.strip() for c in rows[-1]):
        rows.pop()
    width = 0
    for r in rows:
        for j in range(len(r) - 1, -1, -1):
            if r[j].strip():
                width = max(width, j + 1)
                break
    return [(r + [""] * (width - len(r)))[:width] for r in rows]


def cap_cells(rows: list[list[str]], limits: Limits) -> tuple[list[list[str]], str]:
    """Rows up to ``limits.max_cells`` non-empty cells, and the reason for the cut ("" when nothing was cut)."""
    total = 0
    for i, row in enumerate(rows):
        total += sum(1 for c in row if c)
        if total > limits.max_cells:
            return rows[:i], f"rows {i + 1}-{len(rows)} cut: more than {limits.max_cells} non-empty cells"
    return rows, ""


def looks_binary(data: bytes, sample_size: int = 64 * 1024) -> bool:
    """Whether bytes handed to a text reader are binary: NUL bytes, or many control characters.

    Text files of any 8-bit encoding or UTF-8 use almost no C0 controls besides tab, newline and
    form feed; random or compressed bytes have about one in eight. UTF-16 with a BOM is text.
    """
    sample = data[:sample_size]
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    if b"\x00" in sample:
        return True
    controls = sum(sample.count(bytes([b])) for b in range(32) if b not in (9, 10, 12, 13))
    return controls > max(len(sample) // 100, 2)


DEFAULT_LIMITS = Limits()
