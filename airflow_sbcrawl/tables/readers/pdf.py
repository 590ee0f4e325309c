"""PDF text tables: characters from PDFium, grouped into lines, phrases and whitespace columns.

Statistics PDFs mostly lay tables out with whitespace, not ruling lines, and run to hundreds of pages.
pdfplumber's text-alignment table finder costs about half a second a page and splits rows whose
numbers sit on slightly different baselines, so the page's characters are read once through PDFium
(pypdfium2, which pdfplumber already depends on; about 20 times faster than pdfminer's parser) and:

1. characters become *phrases*: runs of text with at most one ordinary space between words;
2. phrases become *lines* by their vertical centre;
3. lines become *blocks*, split where the vertical gap is much larger than the usual line pitch;
4. in a block, column boundaries lie where (almost) no phrase of the multi-phrase lines crosses;
   titles, notes and other single-phrase lines land in the column where they start.

pdfplumber's ruled-table extraction runs only on pages that draw enough straight lines to be a grid,
and its answer is kept only when it finds a real grid (two rows and two columns at least).
"""

from __future__ import annotations

import ctypes
import io
import itertools
import re
import statistics
import time
from dataclasses import dataclass

from .base import DEFAULT_LIMITS, Limits, ReadError, ReadResult, Sheet, cell_text, trim

MAX_SECONDS = 120.0  # per file, unless ``Limits`` has ``max_pdf_seconds``
PAGE_SECONDS = 10.0  # reading one page's characters; a page past it keeps what was read, and says so
_CHECK_EVERY = 4096  # characters between two looks at the clock
MIN_RULES = 6  # path objects a page needs before ruled-table extraction is worth its cost
MAX_RULES = 5000  # beyond this a page is a chart or a map, not a grid
_LIST_PAGES = 8  # page numbers quoted in one reason


@dataclass
class Phrase:
    """Text with at most single spaces inside, in top-down coordinates (y grows downwards)."""

    x0: float
    x1: float
    top: float
    bottom: float
    size: float
    text: str

    @property
    def middle(self) -> float:
        """The phrase's vertical centre, by which phrases are gathered into lines."""
        return (self.top + self.bottom) / 2


Line = list[Phrase]


# -- characters to phrases ---------------------------------------------------------------------------


def _display_box(box: object, rotation: int, width: float, height: float) -> tuple[float, float, float, float]:
    """A character box (PDF user space, y up) as the page is displayed: x0, x1, top, bottom, y down.

    Landscape tables are often portrait pages with /Rotate 90 and text running up the page."""
    left, right, low, high = box.left, box.right, box.bottom, box.top  # type: ignore[attr-defined]
    if rotation == 90:
        return low, high, left, right
    if rotation == 180:
        return width - right, width - left, low, high
    if rotation == 270:
        return height - high, height - low, width - right, width - left
    return left, right, height - high, height - low


class PageTimeout(Exception):
    """A page's characters took longer than PAGE_SECONDS; ``phrases`` holds those read until then."""

    def __init__(self, phrases: list[Phrase]) -> None:
        super().__init__(f"characters not all read within {PAGE_SECONDS:g} s")
        self.phrases = phrases


def _page_phrases(textpage: object, rotation: int, width: float, height: float) -> list[Phrase]:
    """The page's phrases, in content order. Raw PDFium calls: one wrapper call per character is the cost.

    Raises PageTimeout (carrying the phrases read so far) past PAGE_SECONDS."""
    import pypdfium2.raw as pdfium_c

    handle = textpage.raw  # type: ignore[attr-defined]
    box = pdfium_c.FS_RECTF()
    phrases: list[Phrase] = []
    current: list[str] = []
    cur: Phrase | None = None
    spaces = 0  # ordinary spaces seen since the last printed character
    deadline = time.perf_counter() + PAGE_SECONDS
    for i in range(pdfium_c.FPDFText_CountChars(handle)):
        if i % _CHECK_EVERY == _CHECK_EVERY - 1 and time.perf_counter() > deadline:
            if cur is not None:
                cur.text = "".join(current)
                phrases.append(cur)
            raise PageTimeout(phrases)
        char = chr(pdfium_c.FPDFText_GetUnicode(handle, i))
        if char.isspace() or char == "\x00":
            # pdfium "generates" spaces and line breaks where it guesses them; only typed ones count,
            # and a typed line break ends the phrase like two spaces do
            if pdfium_c.FPDFText_IsGenerated(handle, i) != 1:
                spaces += 2 if char in "\r\n" else 1
            continue
        if not pdfium_c.FPDFText_GetLooseCharBox(handle, i, ctypes.byref(box)):
            continue
        size = pdfium_c.FPDFText_GetFontSize(handle, i) or (box.top - box.bottom) or 1.0
        x0, x1, top, bottom = _display_box(box, rotation, width, height)
        if cur is not None and _continues(cur, x0, top, bottom, size, spaces):
            if spaces:
                current.append(" ")
            current.append(char)
            cur.x1 = max(cur.x1, x1)
            cur.top, cur.bottom = min(cur.top, top), max(cur.bottom, bottom)
        else:
            if cur is not None:
                cur.text = "".join(current)
                phrases.append(cur)
            cur = Phrase(x0, x1, top, bottom, size, "")
            current = [char]
        spaces = 0
    if cur is not None:
        cur.text = "".join(current)
        phrases.append(cur)
    return phrases


def _continues(cur: Phrase, x: float, top: float, bottom: float, size: float, spaces: int) -> bool:
    """Whether a character at ``x`` extends the phrase: same line, just after it, no column-sized gap.

    A single typed space may be wide (0.6 em in Courier, more in justified text); two spaces, or a
    jump without a space, is how fixed-width and positioned layouts separate columns."""
    em = max(size, cur.size)
    # A point or a comma sits low: its box inside the phrase's height is on the phrase's line
    inside = top >= cur.top - 0.1 * em and bottom <= cur.bottom + 0.1 * em
    if spaces > 1 or (abs((top + bottom) / 2 - cur.middle) > 0.4 * em and not inside):
        return False
    gap = x - cur.x1
    if gap < -0.2 * em:  # drawn to the left of the phrase: another column or an overprint
        return False
    return gap <= (0.8 if spaces == 1 else 0.35) * em


# -- phrases to lines and blocks ---------------------------------------------------------------------


def _lines(phrases: list[Phrase]) -> list[Line]:
    """Phrases grouped by vertical centre, top to bottom, each line sorted left to right."""
    lines: list[Line] = []
    centre = top = bottom = 0.0
    for p in sorted(phrases, key=lambda p: p.middle):
        # dot leaders and lone points sit low, but inside the height of the line's text
        if lines and (abs(p.middle - centre) <= 0.4 * p.size or (p.top >= top and p.bottom <= bottom)):
            lines[-1].append(p)
        else:
            lines.append([p])
            centre, top, bottom = p.middle, p.top, p.bottom
    return [sorted(line, key=lambda p: p.x0) for line in lines]


def _blocks(lines: list[Line]) -> list[list[Line]]:
    """Lines split where the gap is well above the usual pitch: two tables on one page, or table and prose."""
    if len(lines) < 2:
        return [lines] if lines else []
    middles = [statistics.median(p.middle for p in line) for line in lines]
    gaps = [b - a for a, b in itertools.pairwise(middles)]
    pitch = statistics.median(gaps)
    blocks = [[lines[0]]]
    for line, gap in zip(lines[1:], gaps, strict=True):
        if gap > 2.2 * pitch:
            blocks.append([])
        blocks[-1].append(line)
    return blocks


# -- columns -----------------------------------------------------------------------------------------


def _column_lines(block: list[Line]) -> list[Line]:
    """The lines that define columns: several phrases, and not far fewer than the block's usual count."""
    multi = [line for line in block if len(line) >= 2]
    if not multi:
        return []
    usual = statistics.median(len(line) for line in multi)
    return [line for line in multi if len(line) >= usual / 2]


def _boundaries(lines: list[Line]) -> list[float]:
    """x positions between columns: valleys where at most ``allow`` lines have a phrase crossing.

    ``allow`` tolerates a stray wide phrase (a spanning header, a two-part note) in longer tables;
    the boundary is the middle of the emptiest stretch of each valley, so ragged cells stay whole."""
    allow = len(lines) // 8
    events: list[tuple[float, int]] = []
    for line in lines:
        for p in line:
            events += [(p.x0, 1), (p.x1, -1)]
    events.sort()
    min_gap = 0.25 * statistics.median(p.size for line in lines for p in line)
    cuts: list[float] = []
    depth = 0
    valley: list[tuple[float, float, int]] = []  # stretches (x0, x1, coverage) of the current valley
    for (x, step), (nx, _) in itertools.pairwise(events):
        depth += step
        if depth <= allow:
            if nx > x:
                valley.append((x, nx, depth))
        elif valley:
            cuts += _cut(valley, min_gap)
            valley = []
    return cuts  # a valley still open at the right edge is the page margin, not a boundary


def _cut(valley: list[tuple[float, float, int]], min_gap: float) -> list[float]:
    """The middle of the valley's least-covered stretch, if the valley is wide enough to be a column gap."""
    if valley[-1][1] - valley[0][0] < min_gap:
        return []
    least = min(c for _, _, c in valley)
    stretch = [(a, b) for a, b, c in valley if c == least]
    return [(stretch[0][0] + stretch[-1][1]) / 2]


def _column(x: float, cuts: list[float]) -> int:
    return sum(1 for c in cuts if x > c)


def _rows(block: list[Line], cuts: list[float], defining: list[Line]) -> list[list[str]]:
    """Cells of each line: a phrase inside one column goes there; one that crosses a boundary goes
    where its centre is if its line defines columns, else (a title or note) where it starts."""
    defining_ids = {id(line) for line in defining}
    rows = []
    for line in block:
        row = [""] * (len(cuts) + 1)
        for p in line:
            first, last = _column(p.x0, cuts), _column(p.x1, cuts)
            if first != last and id(line) in defining_ids:
                first = _column((p.x0 + p.x1) / 2, cuts)
            row[first] = f"{row[first]} {p.text}" if row[first] else p.text
        rows.append(row)
    return rows


_FIGURE_CELL = re.compile(r"^[\d., ]+$")
_SPACED_POINT = re.compile(r"(?<=\d)(?: \. ?|\. )(?=\d)")


def _tighten(rows: list[list[str]]) -> list[list[str]]:
    """Figures whose decimal point the page set apart ("11,062 .6", "7,191 . 7") written as printed
    ("11,062.6"): the gap is typesetting, and a space inside a number would make it two."""
    for row in rows:
        for j, cell in enumerate(row):
            if (" ." in cell or ". " in cell) and _FIGURE_CELL.match(cell):
                row[j] = _SPACED_POINT.sub(".", cell)
    return rows


# A figure as printed: signs, brackets, separators, a unit or a dash for a missing value
_FIGURE = re.compile(r"^[-+(]?(?:[\d.,]*\d[\d.,]*|\.\d+)[)%]?$|^[-\u2013\u2014x]$|^\(?(?:NA|X|Z|D|S)\)?$")


def _figures(text: str) -> list[str]:
    """The figures of a text of figures only, one space apart; [] when a word is among them."""
    figures: list[str] = []
    for t in text.split(" "):
        glued = t[:1] in ".," or (len(t) == 3 and t.isdigit() and figures and figures[-1].isdigit())
        if figures and glued:
            figures[-1] += " " + t
        else:
            figures.append(t)
    return figures if all(_FIGURE.match(f.replace(" ", "")) for f in figures) else []


def _split_numbers(p: Phrase) -> list[Phrase]:
    """A phrase of figures only, one space apart ("11,062.6 1,540.0 9,522.0"), is one cell per figure:
    tables set with narrow gaps between columns give one typed space between their numbers. A space
    before a decimal part (".6") or a group of three digits ("1 234") stays inside the figure."""
    figures = _figures(p.text)
    if len(figures) < 2:
        return [p]
    per_char = (p.x1 - p.x0) / max(len(p.text), 1)  # positions inside the phrase, by its characters
    parts, start = [], 0
    for f in figures:
        x0 = p.x0 + start * per_char
        parts.append(Phrase(x0, x0 + len(f) * per_char, p.top, p.bottom, p.size, f))
        start += len(f) + 1
    return parts


def _with_headers(blocks: list[list[Line]]) -> list[list[Line]]:
    """A block without a single figure right above another block is that block's header or title (a
    header set apart by a wider gap than the body's pitch), not a table of its own."""
    out: list[list[Line]] = []
    pending: list[Line] = []
    for block in blocks:
        if any(_FIGURE.match(p.text.replace(" ", "")) for line in block for p in line):
            out.append(pending + block)
            pending = []
        else:
            pending += block
    if pending:
        out.append(pending)
    return out


def _word_tables(phrases: list[Phrase], bottoms: list[float] | None = None) -> list[list[list[str]]]:
    """Tables of cell strings from one page's phrases; blocks without a column structure are prose.

    ``bottoms``, when given, receives the lowest y of each table (to tell a table that fills its page)."""
    tables = []
    phrases = [part for p in phrases for part in _split_numbers(p)]
    for block in _with_headers(_blocks(_lines(phrases))):
        defining = _column_lines(block)
        if len(defining) < 2:
            continue
        cuts = _boundaries(defining)
        if cuts:
            tables.append(_rows(block, cuts, defining))
            if bottoms is not None:
                bottoms.append(max(p.bottom for p in block[-1]))
    return tables


# -- ruled tables ------------------------------------------------------------------------------------


def _path_count(page: object) -> int:
    """Vector path objects on the page, counted in C; a cheap hint that the page draws a grid."""
    import pypdfium2.raw as pdfium_c

    handle = page.raw  # type: ignore[attr-defined]
    count = pdfium_c.FPDFPage_CountObjects(handle)
    paths = 0
    for i in range(count):
        if pdfium_c.FPDFPageObj_GetType(pdfium_c.FPDFPage_GetObject(handle, i)) == pdfium_c.FPDF_PAGEOBJ_PATH:
            paths += 1
    return paths


def _ruled_tables(plumber_pdf: object, index: int) -> list[list[list[str]]]:
    """Grids found by pdfplumber from ruling lines, keeping only real ones (2 rows and 2 columns at least)."""
    page = plumber_pdf.pages[index]  # type: ignore[attr-defined]
    try:
        found = page.extract_tables() or []
    finally:
        page.flush_cache()  # pdfplumber keeps every parsed object otherwise
    tables = [unstack([[cell_text(c) for c in row] for row in t]) for t in found if t]
    return [t for t in tables if len(t) >= 2 and max(len(r) for r in t) >= 2]


def unstack(rows: list[list[str]]) -> list[list[str]]:
    """Rows of a ruled grid whose cells hold several lines each: a grid ruled around its header and body
    only puts all the body's rows in one cell per column, one value per line. When every non-empty cell
    of a row has the same number of lines, that row becomes that many rows; otherwise a cell's lines are
    one wrapped text and are joined with spaces."""
    out = []
    for row in rows:
        parts = [c.split("\n") if c else [] for c in row]
        counts = {len(p) for p in parts if p}
        if len(counts) == 1 and (n := counts.pop()) > 1:
            out.extend([p[k].strip() if p else "" for p in parts] for k in range(n))
        else:
            out.append([" ".join(x.strip() for x in p if x.strip()) for p in parts])
    return out


def _filled(tables: list[list[list[str]]]) -> int:
    """Non-empty cells: a ruled grid with half the cells of the page's words lumps rows or columns together."""
    return sum(1 for row in itertools.chain.from_iterable(tables) for cell in row if cell)


def _columns_merged(tables: list[list[list[str]]]) -> bool:
    """Whether a ruled grid is coarser than its table: most cells holding figures hold several, one space
    apart (rules drawn around groups of columns only); the page's words then tell the columns better."""
    figures = merged = 0
    for row in itertools.chain.from_iterable(tables):
        for cell in row:
            if cell and _FIGURE.match(cell.split(" ", 1)[0]):
                figures += 1
                merged += len(_figures(cell)) > 1
    return merged > 0.3 * figures


# -- the reader --------------------------------------------------------------------------------------


@dataclass
class _Skipped:
    """Pages passed over for the same reason, reported once per file rather than once per page."""

    reason: str
    pages: list[int]

    def error(self) -> ReadError:
        listed = ", ".join(map(str, self.pages[:_LIST_PAGES])) + (", …" if len(self.pages) > _LIST_PAGES else "")
        return ReadError("", f"{len(self.pages)} page(s) {self.reason}: {listed}", "pdf")


def read_pdf(data: bytes, *, limits: Limits = DEFAULT_LIMITS) -> ReadResult:
    """The text tables of a PDF: one sheet per table, named by its page ("page 3", "page 3 table 2"; a
    table continued on the next page is one sheet, "pages 3-4").

    Pages without text (scanned), pages over the per-page time bound (read in part), pages past
    ``limits.max_pdf_pages`` or the per-file time budget, and a page that fails are recorded as
    ``ReadError``; so are an unreadable or encrypted file and a missing pypdfium2. Never raises for bad input.
    """
    try:
        import pypdfium2 as pdfium
    except ImportError:
        return ReadResult(errors=[ReadError("", "pypdfium2 is not installed", "pdf")])
    try:
        doc = pdfium.PdfDocument(data)
    except Exception as exc:  # PdfiumError for damaged or encrypted files, ValueError for odd input
        return ReadResult(errors=[ReadError("", f"unreadable PDF: {exc}", "pdf")])
    try:
        return _read_document(doc, data, limits)
    finally:
        doc.close()


def _read_document(doc: object, data: bytes, limits: Limits) -> ReadResult:
    result = ReadResult()
    budget = float(getattr(limits, "max_pdf_seconds", MAX_SECONDS))
    total = len(doc)  # type: ignore[arg-type]
    no_text = _Skipped("without text (scanned or blank), skipped", [])
    slow = _Skipped(f"over the per-page time bound of {PAGE_SECONDS:g} s, read in part", [])
    failed: list[ReadError] = []
    plumber: list[object] = []  # opened on the first page that looks ruled, at most once
    start = time.perf_counter()
    pages = min(total, limits.max_pdf_pages)
    previous_page, previous_low = -1, False
    for index in range(pages):
        if time.perf_counter() - start > budget:
            reason = f"time budget of {budget:g} s spent: pages {index + 1}-{total} not read"
            result.errors.append(ReadError("", reason, "pdf"))
            break
        try:
            read = _read_page(doc, data, index, plumber, slow.pages)
        except Exception as exc:  # one broken page must not lose the others
            failed.append(ReadError("", f"page {index + 1}: {type(exc).__name__}: {exc}", "pdf"))
            continue
        if read is None:
            no_text.pages.append(index + 1)
            continue
        tables, ends_low = read
        for k, table in enumerate(tables):
            rows = trim(_tighten(table), limits.max_rows, limits.max_cols)
            if not rows:
                continue
            previous = result.sheets[-1] if result.sheets else None
            if k == 0 and previous is not None and previous_page == index:
                joined = _continued(previous.rows, rows, previous_low)
                if joined is not None:  # the table goes on from the previous page under the same header
                    previous.rows = trim(joined, limits.max_rows, limits.max_cols)
                    previous.name = f"pages {previous.name.split()[1].split('-')[0]}-{index + 1}"
                    continue
            name = f"page {index + 1}" if k == 0 else f"page {index + 1} table {k + 1}"
            result.sheets.append(Sheet(name=name, rows=rows, format="pdf"))
        if tables:
            previous_page, previous_low = index + 1, ends_low  # the next page may continue its last table
    for opened in plumber:
        opened.close()  # type: ignore[attr-defined]
    result.errors += failed
    for skipped in (no_text, slow):
        if skipped.pages:
            result.errors.append(skipped.error())
    if total > limits.max_pdf_pages:
        result.errors.append(ReadError("", f"only the first {limits.max_pdf_pages} of {total} pages were read", "pdf"))
    return result


_CONTINUED = re.compile(r"\b(continued|cont\.|suite|fortsetzung)\b", re.I)


def _continued(before: list[list[str]], after: list[list[str]], filled_page: bool) -> list[list[str]] | None:
    """``before`` and then ``after`` as one table, when ``after`` continues it on the next page: same
    columns, the header of ``before`` repeated at its top, and a title saying "continued" above it or
    ``before`` running to the bottom of its page (the same table printed twice is two tables).
    The repeated title and header are dropped. None when ``after`` is another table."""
    width = len(before[0])
    if len(after[0]) != width or len(before) < 2:
        return None
    start = 0
    first = [c for c in after[0] if c]
    if len(first) == 1 and _CONTINUED.search(first[0]):
        start = 1  # "Table 4.1 (continued)"
    elif not filled_page:
        return None
    # The header: the first row of ``before`` with two cells or more, and the rows up to the first number
    head = next((i for i, r in enumerate(before) if sum(1 for c in r if c) >= 2), None)
    if head is None:
        return None
    header = before[head : head + 3]
    repeated = 0
    while repeated < len(header) and start + repeated < len(after) and after[start + repeated] == header[repeated]:
        repeated += 1
    if repeated == 0:
        return None
    return before + after[start + repeated :]


def _read_page(
    doc: object, data: bytes, index: int, plumber: list[object], slow: list[int]
) -> tuple[list[list[list[str]]], bool] | None:
    """The page's tables and whether its last table runs into the page's bottom fifth (so it may go on
    on the next page); None when the page has no text at all."""
    page = doc[index]  # type: ignore[index]
    try:
        textpage = page.get_textpage()
        try:
            # the unrotated MediaBox size: pdfium's get_size() already swaps it for /Rotate 90 and 270
            rotation = page.get_rotation()
            width, height = page.get_size()
            if rotation in (90, 270):
                width, height = height, width
            shown_height = height if rotation in (0, 180) else width
            try:
                phrases = _page_phrases(textpage, rotation, width, height)
            except PageTimeout as timeout:  # the page's start is kept; the reader says what was cut
                phrases = timeout.phrases
                slow.append(index + 1)
        finally:
            textpage.close()
        if not phrases:
            return None
        paths = _path_count(page)
    finally:
        page.close()
    if MIN_RULES <= paths <= MAX_RULES:
        opened = _plumber(data, plumber)
        ruled = _ruled_tables(opened, index) if opened is not None else []
    else:
        ruled = []
    bottoms: list[float] = []
    tables = _word_tables(phrases, bottoms)
    if ruled and not _columns_merged(ruled) and _filled(tables) < 2 * _filled(ruled):
        return ruled, False
    return tables, bool(bottoms) and bottoms[-1] > 0.8 * shown_height


def _plumber(data: bytes, opened: list[object]) -> object | None:
    """pdfplumber on this file, opened once; None without pdfplumber (the word method still works)."""
    if not opened:
        try:
            import pdfplumber
        except ImportError:
            return None
        opened.append(pdfplumber.open(io.BytesIO(data)))
    return opened[0]
