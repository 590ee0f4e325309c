"""PDF reader speed: build a multi-page statistics PDF by hand, read it, print pages per second.

    python -m sbcrawl_dev bench tables-pdf [--pages N] [--runs R]

The PDF is written here (no reportlab) so the benchmark and the tests share the same layouts: numeric
tables placed cell by cell in Helvetica with a title and a footnote, two tables on one page, and the
monospaced fixed-width layout the simulator publishes. The figure is the median of ``--runs`` reads.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from airflow_sbcrawl.tables.readers.base import Limits
from airflow_sbcrawl.tables.readers.pdf import read_pdf

PAGE_W, PAGE_H = 612, 792


@dataclass
class Page:
    """What one hand-written page holds: text runs, ruling lines and (for a scan) an image."""

    texts: list[tuple[float, float, str, str]] = field(default_factory=list)  # x, y, text, font (F1/F2)
    rules: list[tuple[float, float, float, float]] = field(default_factory=list)  # x0, y0, x1, y1
    image: bool = False
    size: float = 9.0
    rotate: int = 0  # 90: a landscape table on a portrait page, positions given as the reader sees them

    def text(self, x: float, y: float, text: str, font: str = "F1") -> None:
        self.texts.append((x, y, text, font))


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _matrix(page: Page, x: float, y: float) -> str:
    """Text matrix putting a run at display position (x, y); on a /Rotate 90 page the text runs upwards."""
    if page.rotate == 90:
        return f"0 1 -1 0 {PAGE_W - y} {x}"
    return f"1 0 0 1 {x} {y}"


def _content(page: Page) -> bytes:
    ops = []
    if page.image:  # a full-page 1x1 grey image stands in for a scanned page
        ops.append(f"q {PAGE_W} 0 0 {PAGE_H} 0 0 cm /Im1 Do Q")
    if page.rules:
        ops.append("0.5 w " + " ".join(f"{a} {b} m {c} {d} l S" for a, b, c, d in page.rules))
    if page.texts:
        runs = " ".join(f"/{f} {page.size} Tf {_matrix(page, x, y)} Tm ({_escape(t)}) Tj" for x, y, t, f in page.texts)
        ops.append(f"BT {runs} ET")
    return "\n".join(ops).encode("latin-1")


def build_pdf(pages: Sequence[Page]) -> bytes:
    """A PDF 1.4 file with one page per ``Page``; fonts F1 = Helvetica, F2 = Courier, image Im1."""
    fixed = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, filled in once the page object numbers are known
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier >>",
        b"<< /Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray "
        b"/BitsPerComponent 8 /Length 1 >>\nstream\n\x80\nendstream",
    ]
    objects = list(fixed)
    kids = []
    resources = b"<< /Font << /F1 3 0 R /F2 4 0 R >> /XObject << /Im1 5 0 R >> >>"
    for page in pages:
        stream = _content(page)
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        page_obj = b"<< /Type /Page /Parent 2 0 R /Rotate %d /MediaBox [0 0 %d %d] /Contents %d 0 R /Resources %s >>"
        objects.append(page_obj % (page.rotate, PAGE_W, PAGE_H, len(objects), resources))
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>".encode()
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def table_rows(n_rows: int, n_years: int, seed: int = 0) -> list[list[str]]:
    """Header plus ``n_rows`` rows of a region-by-year table with deterministic, ragged numbers."""
    header = ["Region", *(str(2010 + j) for j in range(n_years))]
    regions = ["North", "North East", "South", "South West", "East Midlands", "West", "Capital region"]
    rows = [header]
    for i in range(n_rows):
        label = f"{regions[i % len(regions)]} {i // len(regions) + 1}" if n_rows > len(regions) else regions[i]
        rows.append([label, *(f"{((seed + 7) * (i + 3) * (j + 11) * 7919) % 98765:,}" for j in range(n_years))])
    return rows


def place_table(
    page: Page, rows: Sequence[Sequence[str]], top: float, *, title: str = "", note: str = "", pitch: float = 12
) -> float:
    """Put a table on ``page`` cell by cell (label left-aligned, numbers right-aligned); returns the next free y."""
    y = top
    if title:
        page.text(50, y, title)
        y -= pitch * 1.5
    for row in rows:
        page.text(50, y, row[0])
        for j, cell in enumerate(row[1:]):
            right = 190 + 55 * (j + 1)
            page.text(right - 5.0 * len(cell), y, cell)  # Helvetica digits are 0.556 em wide at 9 pt
        y -= pitch
    if note:
        y -= pitch * 0.5
        page.text(50, y, note)
        y -= pitch
    return y


def fixed_width_page(rows: Sequence[Sequence[str]], title: str, note: str) -> Page:
    """The simulator's layout: whole lines of Courier text, label padded to 22 characters, numbers to 10."""
    page = Page(size=8)
    y = 760.0
    for row in [[title], *rows, [note]]:
        line = row[0] if len(row) == 1 else row[0].ljust(22) + "".join(c.rjust(10) for c in row[1:])
        page.text(36, y, line, "F2")
        y -= 10
    return page


def bench_pages(n: int) -> list[Page]:
    """A mix of the layouts statistics offices publish, repeated to ``n`` pages."""
    pages = []
    for k in range(n):
        page = Page()
        if k % 3 == 0:
            rows = table_rows(41, 6, seed=k)
            place_table(page, rows, 760, title=f"Table {k}.1: Population by region", note="Source: Census office.")
        elif k % 3 == 1:
            y = place_table(page, table_rows(12, 6, seed=k), 760, title=f"Table {k}.1: Births", note="p: provisional")
            place_table(page, table_rows(15, 4, seed=k + 1), y - 30, title=f"Table {k}.2: Deaths", note="Source: X.")
        else:
            page = fixed_width_page(table_rows(40, 8, seed=k), f"Table {k}: Road accidents", "Source: Police.")
        pages.append(page)
    return pages


def pages_per_second(data: bytes, n_pages: int, runs: int) -> tuple[float, int]:
    """Median pages per second over ``runs`` reads, and the number of sheets the reader returned."""
    times = []
    sheets = 0
    limits = Limits(max_pdf_pages=max(n_pages, 1))
    for _ in range(runs):
        start = time.perf_counter()
        result = read_pdf(data, limits=limits)
        times.append(time.perf_counter() - start)
        sheets = len(result.sheets)
    return n_pages / statistics.median(times), sheets


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench tables-pdf",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=30, help="pages in the generated PDF")
    parser.add_argument("--runs", type=int, default=3, help="reads; the median is reported")
    args = parser.parse_args(argv)
    data = build_pdf(bench_pages(args.pages))
    rate, sheets = pages_per_second(data, args.pages, args.runs)
    print(f"{args.pages} pages, {len(data) // 1024} KiB, {sheets} sheets: {rate:.1f} pages/s (median of {args.runs})")
    return 0

