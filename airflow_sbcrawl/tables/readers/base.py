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


@dataclass(frozen=True)
class ReadError:
    """A file (or archive member) that was not read, and why: recorded, never raised through a batch."""

    member: str
    reason: str
    format: str = ""


@dataclass
class ReadResult:
    sheets: list[Sheet] = field(default_factory=list)
    errors: list[ReadError] = field(default_factory=list)

    def extend(self, other: ReadResult) -> None:
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


DEFAULT_LIMITS = Limits()
