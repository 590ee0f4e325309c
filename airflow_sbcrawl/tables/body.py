"""What is inside a table once its region is known: which columns label the rows, each value column's header
path, and the body in long form, every observation keyed by its row labels and column path.

* **Label columns.** A wide table's leading columns of text label its rows, and so do the columns people
  write as numbers but which identify a row: years, codes (``01001``, a code left of the names it codes),
  row numbers, age bands and ranks. A long-format table (a column named "Value" next to several columns of
  text: UN, Statistics Canada, Eurostat exports) has every other column as a label, but for the columns of
  notes, sources and flags, which key nothing, and the unit columns, which give the unit.
* **Carried labels.** A label written once for its block (the state on the block's first row, the year on
  January only) is carried down its column; a header cell spanning columns (merged, or written once over
  them) is carried across; a line of labels without values above a block is its section label.
* **Lines that look like the body are body.** A line the classifier took for a header but whose cells are
  of the kinds of the body's columns (a long-format row full of text) is read as data, and a header line
  repeated inside the body is not read again: a header block stays a few lines, not thousands.
* **Keys.** Each observation's row labels + column path are unique in its table, or the table says why
  not (``DetectedTable.warnings``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import repeat
from operator import itemgetter

import numpy as np

from .features import EMPTY, MARK, MARKER, NUMBER, TEXT
from .model import Observation
from .values import SheetCells, parse_range

_FOOTNOTE_MARK = re.compile(r"\s*(\\\d+|\[\w{1,3}\]|[\u00b9\u00b2\u00b3\u2070-\u2079]+)\s*$")
# The first characters a stripped cell that is only a footnote mark can start with: a cheap test first
_MARK_FIRST = frozenset("\\[\u00b9\u00b2\u00b3" + "".join(map(chr, range(0x2070, 0x207A))))
_PUNCTUATION = re.compile(r"^[\W_]+$")
_LEADER = re.compile(r"(?:\s*\.){2,}\s*$")  # dot leaders between a label and its figures: "Robbery. . . . ."
# a footnote's number after a label ("PERCENT CHANGE FROM PRIOR YEAR SHOWN \\1")
_FOOTNOTE_REF = re.compile(r"\\\d+")
_YEAR = re.compile(r"^(1[5-9]\d\d|20\d\d)(\.0)?(\s*\W.*)?$")
_CODE = re.compile(r"^0\d+$")  # a leading zero: "01001" is a commune, not one thousand and one

# Headers that name the one value column of a long-format table, and the columns around it
_VALUE_HEADER = re.compile(r"^(value|values|obs_?value|observation value|wert|werte|valeur|valor|valore|waarde|"
                           r"verdi|värde|arvo|wartość|hodnota|érték|vrednost|amount)$", re.I)
_SKIP_HEADER = re.compile(r"^(value footnotes?|footnotes?|notes?|source|sources|comments?|remarks?|anmerkung(en)?|"
                          r"fußnoten?|"
                          r"quelle|status|symbol|flags?|obs_?status|obs_?flag|conf_status|terminated|decimals|"
                          r"nota|notas|fuente|remarques?)$", re.I)
_UNIT_HEADER = re.compile(r"^(uom|unit|units|unit of measure|unit_measure|einheit|maßeinheit|unité|unidad|unidade|"
                          r"unit_mult|scalar_factor|multiplier)$", re.I)
_ID_HEADER = re.compile(r"\b(code|codes|id|rank|rang|year|years|jahr|jahre|année|años?|anno|period|periode|période|"
                        r"ref_date|time_period|fips|ags|geo|kennziffer|schlüssel|date|month|day|week|quarter)\b|"
                        r"^\W*((lfd|sl|s)\.?\s*)?(no|nr|n[°º]|№)\.?\W*$",  # "No." alone numbers rows; "No. Obs" counts
                        re.I)
# A date written as text ("1973-01-01 00:00:00", "2013-03-23", "3/31/2001"); the rest of its column may be the
# spreadsheet's serial day numbers of the same dates (27638 is 1975-09-01)
_DATE_TEXT = re.compile(r"^(1[5-9]\d\d|20\d\d)-[01]\d(-[0-3]\d)?([ T]\d\d:\d\d(:\d\d(\.\d+)?)?)?$|"
                        r"^[01]?\d/[0-3]?\d/(\d\d|1[5-9]\d\d|20\d\d)$")
# A unit in a label: "(millions)", "(in 1 000)", "(EUR)", "in thousands", "%"
_UNIT_WORDS = (r"thousands?|millions?|billions?|hundreds?|per ?cent|percent(?:age)?|%|‰|per 1[ ,.]?000|"
               r"per 100[ ,.]?000|number|persons|people|units?|tonnes?|tons?|kt|t|kg|hectares?|ha|km2|km²|"
               r"sq\.? ?km|acres?|dollars|us\$|\$|eur|euros?|€|£|gbp|usd|chf|yen|¥|anzahl|personen|prozent|"
               r"tausend|mio\.?|mrd\.?|milliers|millions d'euros|nombre|index|rate|ratio|years|days|hours")
_UNIT_IN_PARENS = re.compile(rf"\(((?:in )?(?:[\d ,.]+ )?(?:{_UNIT_WORDS})(?:[^()]{{0,30}}))\)\s*$", re.I)
_UNIT_PHRASE = re.compile(rf"\b(?:in|en|unit:|einheit:)\s+((?:1[ .,]?000 |[\d ,.]+ )?(?:{_UNIT_WORDS})\b[^.;]{{0,20}})",
                          re.I)

# A legend line that defines a marker as zero: '"-" = nichts vorhanden', "– Nil", "- represents zero"
_ZERO_WORDS = r"(nichts vorhanden|nil|zero|null|nul|néant|cero|nada|magnitude zero|none|0\b)"
_LEGEND_HINT = re.compile(_ZERO_WORDS, re.I)
_LEGEND_START = frozenset("\"'„“‘-–—")
_LEGEND_SPLIT = re.compile(r"[;,]\s*|\s{2,}|\t")
_LEGEND_ZERO = re.compile(
    rf"""^\W{{0,3}}(?:[^:"'„“‘\-–—]{{0,30}}:\s*)?["'„“‘]?(-{{2,3}}|[-–—])["'“”’]?\s*"""  # "Symbols: '-'"
    rf"""(?:=|:|\bis\b|\brepresents\b|\bindicates\b|\bdenotes\b|\bmeans\b|–|-)?\s*{_ZERO_WORDS}""",
    re.I,
)


@lru_cache(maxsize=1 << 16)  # labels repeat across lines, tables and sheets of a batch
def clean_label(text: str) -> str:
    """Labels lose their footnote marks, dot leaders and inner runs of spaces ("Supply,      total   \\1")."""
    last = text.rstrip()[-1:]
    if last == "]" or last.isdigit():  # every footnote mark ends so (superscripts are digits to isdigit)
        text = _FOOTNOTE_MARK.sub("", text)
    if text.endswith("."):
        text = _LEADER.sub("", text)
    return " ".join(text.split())


def legend_zero_markers(first_cells: Iterable[str]) -> frozenset[str]:
    """Markers the sheet's own legend defines as zero ('"-" = nichts vorhanden', "– nil", "Symbols: .. not
    available; - zero"), read from the first cell of each line (``first_cells``: where legends are written)."""
    found = set()
    for first in first_cells:
        if not first or len(first) > 300 or (first[0] not in _LEGEND_START and ":" not in first[:40]):
            continue  # a legend line starts with its marker, or with a word such as "Symbols:"
        if not _LEGEND_HINT.search(first):
            continue
        for part in _LEGEND_SPLIT.split(first):
            m = _LEGEND_ZERO.match(part.strip())
            if m:
                found.add(m.group(1))
    return frozenset(found)


def all_years(text: list[list[str]], body: list[int], j: int) -> bool:
    """Whether every non-empty cell of column ``j`` on the body lines is a year."""
    cells = [text[i][j] for i in body if j < len(text[i]) and text[i][j]]
    return bool(cells) and all(_YEAR.match(c) for c in cells)


# -- which lines are header, which are body ---------------------------------------------------------------


def _kind_class(kinds: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Cells as 0 empty, 1 text, 2 number, 3 year (whole numbers 1500-2100): the kinds a body column keeps."""
    out = np.zeros(kinds.shape, dtype=np.int8)
    out[kinds == TEXT] = 1
    numeric = (kinds == NUMBER) | (kinds == MARKER)
    out[numeric] = 2
    with np.errstate(invalid="ignore"):
        year = (kinds == NUMBER) & (values == np.round(values)) & (values >= 1500) & (values <= 2100)
    out[year] = 3
    return out


def body_like(lines: list[int], body: list[int], kinds: np.ndarray, values: np.ndarray, lo: int, hi: int,
              inside: bool = False) -> set[int]:
    """The ``lines`` whose every cell is of the kind its column keeps in the ``body`` (at least three cells,
    one of them a number where the body has numbers): rows of the body the classifier took for a header.
    ``inside``: the lines lie under the first body line, where a figure that reads as a year (a count of
    1993 deaths) is a figure."""
    if len(body) < 2:
        return set()
    # a body line has three cells, one a number that is not a year (a header's years look like numbers)
    with np.errstate(invalid="ignore"):
        rows = values[lines, lo : hi + 1]
        figures = np.isfinite(rows)
        if not inside:
            figures &= ~((rows == np.round(rows)) & (rows >= 1500) & (rows <= 2100))
    keep = figures.any(axis=1) & (np.count_nonzero(kinds[lines, lo : hi + 1], axis=1) >= 3)
    lines = [i for i, k in zip(lines, keep.tolist(), strict=True) if k]
    if not lines:
        return set()
    in_body = _kind_class(kinds[body, lo : hi + 1], values[body, lo : hi + 1])
    line_kinds = _kind_class(kinds[lines, lo : hi + 1], values[lines, lo : hi + 1])
    if inside:
        in_body[in_body == 3] = 2
        line_kinds[line_kinds == 3] = 2
    dominant = np.zeros(in_body.shape[1], dtype=np.int8)
    for k in (1, 2, 3):
        share = (in_body == k).sum(axis=0) / np.maximum((in_body != 0).sum(axis=0), 1)
        dominant[share >= 0.7] = k
    out = set()
    for i, row in zip(lines, line_kinds, strict=True):
        filled = np.flatnonzero(row != 0)
        if len(filled) < 3 or (dominant[filled] == 0).any():
            continue
        kind = row[filled]
        # a number in a column of words that the body's rows also hold there is one of its labels (a
        # "Unit" column of "Percent", "Mil. dol." and "1000")
        label = (kind == 2) & (dominant[filled] == 1)
        for k in np.flatnonzero(label).tolist():
            j = lo + filled[k]
            if values[i, j] in values[body, j]:
                kind[k] = 1
        if (kind == dominant[filled]).all() and (kind == 2).any():
            out.add(i)
    return out


def label_lines(headers: list[int], body: list[int], kinds: np.ndarray, values: np.ndarray, lo: int,
                hi: int) -> list[int]:
    """The ``headers`` lines that are rows of the body without values: words only in the body's columns of
    words (two at least), under a header line that names those columns and the columns of figures
    ("Aruba | ABW | Road sector energy consumption | IS.ROD.ENGY.ZS" and no figure, under "Country Name |
    Country Code | Indicator Name | Indicator Code | 1960 | 1961 ...": a sparse row of a World Bank export)."""
    if len(headers) < 2 or len(body) < 2:
        return []
    in_body = _kind_class(kinds[body, lo : hi + 1], values[body, lo : hi + 1])
    filled = np.maximum((in_body != 0).sum(axis=0), 1)
    words = (in_body == 1).sum(axis=0) / filled >= 0.7
    figures = (in_body >= 2).sum(axis=0) / filled >= 0.7
    if not words.any() or not figures.any():
        return []
    out = []
    named = None  # the columns named by the header lines above, once one of them names columns of figures
    for i in headers:
        row = kinds[i, lo : hi + 1]
        cells = row != EMPTY
        if named is not None and cells.sum() >= 2 and (row[cells] == TEXT).all() and words[cells].all() \
                and named[cells].all():
            out.append(i)
            continue
        if named is None and (cells & figures).any():
            named = cells.copy()
        elif named is not None:
            named |= cells
    return out


# -- label columns ------------------------------------------------------------------------------------------


class Columns:
    """A table's columns (sheet columns of its block): labels in order, the values, those skipped, units."""

    def __init__(self, labels: list[int], values: list[int], unit_cols: list[int], long_format: bool) -> None:
        self.labels = labels
        self.values = values
        self.unit_cols = unit_cols
        self.long_format = long_format

    @property
    def stub_end(self) -> int:
        """First value column (the old "stub width" boundary)."""
        return self.values[0] if self.values else (self.labels[-1] + 1 if self.labels else 0)


def _column_header(text: list[list[str]], header_rows: list[int], j: int) -> str:
    return " ".join(text[i][j] for i in header_rows if j < len(text[i]) and text[i][j])


def label_columns(
    text: list[list[str]],
    body: list[int],
    header_rows: list[int],
    lo: int,
    hi: int,
    cells: SheetCells,
    kinds: np.ndarray,
    values: np.ndarray,
) -> Columns:
    """Which columns of ``lo..hi`` label the rows and which hold values (see the module's docstring)."""
    if not body:
        return Columns([], list(range(lo, hi + 1)), [], False)
    block = kinds[body, lo : hi + 1]
    used = (block != EMPTY).sum(axis=0)
    texts = (block == TEXT).sum(axis=0)
    counted: dict[int, int] = {}

    def n_text(j: int) -> int:
        """Cells of words in column ``j``: TEXT cells, and the bare footnote marks and digits that read as
        no number ("212, 213", a list of codes) among its other cells: rare, read one by one, per column
        asked (the scan for labels stops at the first column of values)."""
        if j not in counted:
            odd = np.flatnonzero((block[:, j - lo] == MARK) | (block[:, j - lo] == MARKER))
            counted[j] = int(texts[j - lo]) + sum(
                cells.parse(text[body[k]][j]).status in ("text", "unreadable") for k in odd.tolist())
        return counted[j]

    names_row = text[header_rows[-1]] if header_rows else []
    last_names = {j: names_row[j] for j in range(lo, min(hi + 1, len(names_row))) if names_row[j]}
    long = _long_format(last_names, used, n_text, lo, hi) if any(
        map(_VALUE_HEADER.match, last_names.values())) else None
    if long is not None:
        return long
    labels: list[int] = []
    skipped: set[int] = set()
    first_text = next((j for j in range(lo, hi + 1) if used[j - lo] and n_text(j) * 2 > used[j - lo]), None)
    start = hi + 1
    for j in range(lo, hi + 1):
        n_used = int(used[j - lo])
        if not n_used:
            continue  # an empty spacer column inside the stub
        if labels and _leader_column(text, body, j):
            skipped.add(j)  # the last points of dot leaders, in a column of their own
            continue
        if n_text(j) * 2 > n_used or _identifies(text, body, j, values, _column_header(text, header_rows, j),
                                                 first_text):
            labels.append(j)
            continue
        start = j
        break
    start = min(start, labels[-1] + 1 if labels else lo)
    skipped |= {j for j, name in last_names.items() if j >= start and _SKIP_HEADER.match(name.strip(" :"))}
    value_cols = [j for j in range(start, hi + 1) if j not in skipped]
    return Columns(labels, value_cols, [], False)


def _leader_column(text: list[list[str]], body: list[int], j: int) -> bool:
    """Whether a column holds only points: dot leaders cut off from their labels (PDF tables)."""
    return all(not text[i][j] or set(text[i][j]) <= {".", " ", "…"} for i in body)


def _long_format(names: dict[int, str], used: np.ndarray, n_text, lo: int, hi: int) -> Columns | None:
    """The columns of a long-format table, when one column is named as its values and holds numbers."""
    value_cols = [j for j, name in names.items() if _VALUE_HEADER.match(name.strip()) and used[j - lo]
                  and n_text(j) * 5 < used[j - lo]]
    others = [j for j in range(lo, hi + 1) if used[j - lo] and j not in value_cols]
    if len(value_cols) != 1 or len(others) < 2:
        return None
    named = {name.strip().lower() for name in names.values()}
    labels, unit_cols = [], []
    for j in others:
        name = names.get(j, "").strip()
        if _UNIT_HEADER.match(name):
            unit_cols.append(j)
        elif _SKIP_HEADER.match(name) or (name.lower().endswith("_id") and any(
                other.startswith(name.lower()[:-3]) and other != name.lower() for other in named)):
            continue  # notes, flags, and the code of a column given in words
        else:
            labels.append(j)
    return Columns(labels, value_cols, unit_cols, True)


def _identifies(text: list[list[str]], body: list[int], j: int, values: np.ndarray, name: str,
                first_text: int | None) -> bool:
    """Whether a column of numbers identifies rows rather than measuring them: years (a few lines of text
    among them, "Percent change", allowed), codes with a leading zero, row numbers and whole-number codes
    left of the labels, or whole numbers under a header naming an identifier ("Code", "Rank", "Year")."""
    cells = [text[i][j] for i in body if text[i][j]]
    years = [c for c in cells if _YEAR.match(c)]
    if years and all(_YEAR.match(c) or not any(map(str.isdigit, _FOOTNOTE_REF.sub("", c))) for c in cells):
        return True
    if any(map(_DATE_TEXT.match, cells)) and all(
            _DATE_TEXT.match(c) or (c.replace(".0", "").isdigit() and 0 < float(c) < 80000) for c in cells):
        return True  # dates, some as text, the others as serial day numbers: the months of a time series
    col = values[body, j]
    col = col[np.isfinite(col)]
    figures = [c for c in cells if any(map(str.isdigit, c))]  # a "Total" line may label the column's end
    plain = all(c.replace(".0", "").isdigit() for c in figures)  # no grouping, no decimals ("50.0" is 50)
    whole = plain and len(col) > 0 and bool((col == np.round(col)).all())
    if not whole:
        return False
    if any(_CODE.match(c) for c in figures):
        return True
    if first_text is None or j < first_text:
        if len(col) >= 3 and (np.diff(col) == 1).mean() >= 0.9:
            return True  # 1, 2, 3... before the labels: row numbers
        if first_text is not None:
            return True  # a code left of the names it codes
    return bool(_ID_HEADER.search(name))


# -- header paths -----------------------------------------------------------------------------------------


def expand_merged(rows: list[list[str]], merged: Sequence[tuple[tuple[int, int], tuple[int, int]]],
                  lines: set[int]) -> list[list[str]]:
    """Copies of the ``lines`` of ``rows`` whose merged ranges hold their text in every cell (the merged text
    is stored in the first cell only). Other lines are returned as they are."""
    out = list(rows)
    for (r0, c0), (r1, c1) in merged:
        if r0 >= len(rows) or c0 >= len(rows[r0]):
            continue
        value = rows[r0][c0]
        if not value:
            continue
        for i in range(r0, min(r1, len(rows) - 1) + 1):
            if i not in lines:
                continue
            if out[i] is rows[i]:
                out[i] = list(rows[i])
            for j in range(c0, min(c1, len(out[i]) - 1) + 1):
                out[i][j] = out[i][j] or value
    return out


def merge_ends(merged: Sequence[tuple[tuple[int, int], tuple[int, int]]], line: int) -> set[int]:
    """Columns of ``line`` just right of a merged range that holds text: a carried header cell stops there,
    the merge says how far the cell spans."""
    return {c1 + 1 for (r0, _), (r1, c1) in merged if r0 <= line <= r1}


def _label_keeping_marks(text: str) -> str:
    """``clean_label`` but for the footnote marks, which it keeps."""
    if text.endswith("."):
        text = _LEADER.sub("", text)
    return " ".join(text.split())


def header_paths(header_rows: list[list[str]], columns: list[int],
                 stops: Sequence[set[int]] | None = None, marks: bool = False) -> dict[int, tuple[str, ...]]:
    """Column path per value column; a spanning cell is carried right until the next cell at its level or
    above starts, since spreadsheets store a merged cell's text only in its first column. In a line where
    names repeat ("2009-10 | Footnotes | Survey type | 2010-11 | Footnotes | Survey type"), each repeated
    name is qualified by the nearest name left of it that the line holds fewer times (its group's anchor).
    ``stops``: per header row, columns where a carried cell ends (``merge_ends``). ``marks``: names keep
    their footnote marks (see ``marked_paths``)."""
    clean = _label_keeping_marks if marks else clean_label
    paths: dict[int, list[str]] = {j: [] for j in columns}
    boundaries: set[int] = set()
    for k, row in enumerate(header_rows):
        ends = stops[k] if stops else set()
        cleaned = {j: clean(row[j]) if j < len(row) else "" for j in columns}
        counts = Counter(c for c in cleaned.values() if c)
        # a repeated name needs an anchor only where the lines above do not tell its columns apart already
        # (counted only on a line that repeats a name: most lines do not, and nothing else asks)
        repeats = len(counts) < sum(counts.values())
        ambiguous = Counter((tuple(paths[j]), c) for j, c in cleaned.items() if c) if repeats else {}
        carried = ""
        left: list[str] = []  # the line's names so far, nearest last
        new_bounds = set()
        for j in columns:
            cell = cleaned[j]
            if cell and counts[cell] > 1 and ambiguous[(tuple(paths[j]), cell)] > 1:
                anchor = next((c for c in reversed(left) if counts[c] < counts[cell]), "")
                if anchor and (not paths[j] or paths[j][-1] != anchor):
                    paths[j].append(anchor)
            if cell:
                left.append(cell)
                carried = cell
                new_bounds.add(j)
            elif j in boundaries or j in ends:
                carried = ""
            if carried and (not paths[j] or paths[j][-1] != carried):
                paths[j].append(carried)
        boundaries |= new_bounds
    return {j: tuple(p) for j, p in paths.items()}


def marked_paths(header_rows: list[list[str]], columns: list[int], stops: Sequence[set[int]] | None,
                 paths: dict[int, tuple[str, ...]]) -> dict[int, tuple[str, ...]]:
    """``paths`` (``header_paths``' output), but where columns share a path that their names' footnote
    marks tell apart, the marked paths of those columns: "2006 \\1" over revised figures beside "2006"."""
    shared: dict[tuple[str, ...], list[int]] = {}
    for j, path in paths.items():
        if path:
            shared.setdefault(path, []).append(j)
    groups = [js for js in shared.values() if len(js) > 1]
    if not groups:
        return paths
    marked = header_paths(header_rows, columns, stops, marks=True)
    out = dict(paths)
    for js in groups:
        if len({marked[j] for j in js}) > 1:
            out.update((j, marked[j]) for j in js)
    return out


# -- units --------------------------------------------------------------------------------------------------


def _may_name_unit(label: str) -> bool:
    """Whether ``unit_of`` can find a unit in the label: every unit it finds follows one of these."""
    return "(" in label or "in " in label or "In " in label or ":" in label


def unit_of(*labels: str) -> str:
    """The unit named at the end of the first label that names one ("Population (millions)" -> "millions")."""
    for label in labels:
        if not label or not _may_name_unit(label):
            continue
        m = _UNIT_IN_PARENS.search(label) or _UNIT_PHRASE.search(label)
        if m:
            return " ".join(m.group(1).split())
    return ""


# -- the body in long form ----------------------------------------------------------------------------------


def observations(
    text: list[list[str]],
    classes: list[str],
    lines: list[int],
    cells: SheetCells,
    grid: tuple[np.ndarray, np.ndarray],
    columns: Columns,
    paths: dict[int, tuple[str, ...]],
    col_offset: int,
    as_groups: set[int],
    body_classes: tuple[str, ...] = ("data", "derived"),
    zero_markers: frozenset[str] = frozenset(),
    units: dict[int, str] | None = None,
    line_units: dict[int, str] | None = None,
    qualify: bool = False,
) -> list[Observation]:
    """The body of a table in long form; lines in ``as_groups`` are read as group labels.

    ``grid``: the kinds and values of the block's cells (``features.cell_kinds``). The labels are made per
    line; the cells are picked in numpy and the observations built by ``map`` over columns of fields, since
    a table has many more cells than lines (per cell, Python only looks up its text). ``units``: the unit
    of each value column, when its header or the title names one; ``line_units``: of each body line, for
    the columns without (long-format tables give it per line). ``qualify``: a line whose labels another
    line also has is qualified by the last label of the nearest line above with labels of its own (the
    parent a hierarchy written by indentation loses in cells: "Sales" over "Residential").
    """
    groups: list[tuple[str, str]] = []
    # a "group" line whose label is also a row's label in its column of the body is one of those rows (a
    # stray cell), not a section
    rows_of = [i for i in lines if classes[i] in body_classes]
    body: list[int] = []
    line_groups: list[tuple[str, ...]] = []
    stub_rows: list[list[str]] = []
    line_classes: list[str] = []
    group_labels: tuple[str, ...] = ()  # the labels of ``groups``, made again only when a group line changes them
    for i in lines:
        cls = classes[i]
        if cls == "group" or i in as_groups:
            at = next((j for j, c in enumerate(text[i]) if c), 0)
            label = text[i][at]
            if cls == "group" and i not in as_groups and at in columns.labels and label and \
                    any(text[r][at] == label for r in rows_of):
                continue
            style = _group_style(label)
            while groups and any(s == style for s, _ in groups):
                groups.pop()
            groups.append((style, clean_label(label)))
            group_labels = tuple(g for _, g in groups)
            stub_rows.append(None)  # type: ignore[arg-type]  # a block boundary for carried labels
            continue
        if cls not in body_classes:
            continue
        body.append(i)
        line_groups.append(group_labels)
        # a stub cell of punctuation only (a dot leader's last point in a column of its own) labels nothing
        row = text[i]
        stub = [clean_label(row[j]) if row[j] else "" for j in columns.labels]
        stub_rows.append(["" if x and _PUNCTUATION.match(x) else x for x in stub])
        line_classes.append(cls)
    if not body or not columns.values:
        return []
    body_labels = _row_labels(stub_rows, line_groups, columns, qualify)
    value_cols = np.asarray(columns.values)
    kinds, values = grid[0][np.ix_(body, value_cols)], grid[1][np.ix_(body, value_cols)]
    k_idx, j_idx = np.nonzero(kinds != EMPTY)  # row-major: the order of a loop over lines, then columns
    k_list, j_list = k_idx.tolist(), j_idx.tolist()
    cols = value_cols.tolist()
    if cols[-1] - cols[0] == len(cols) - 1:  # contiguous: slices of the rows, as C copies them
        a, b = cols[0], cols[-1] + 1
        raws = [c for i in body for c in text[i][a:b] if c]  # the same cells, in the same order
    else:
        pick = itemgetter(*cols) if len(cols) > 1 else (lambda row: (row[cols[0]],))
        raws = [c for i in body for c in pick(text[i]) if c]
    value_list: list[float | None] = values[k_idx, j_idx].tolist()
    statuses = ["ok"] * len(raws)
    keep = None
    # Cells that are not plain numbers (markers, text, footnote marks) are few: their parse, one by one
    for n in np.flatnonzero(kinds[k_idx, j_idx] != NUMBER).tolist():
        raw = raws[n]
        if raw[0] in _MARK_FIRST and _FOOTNOTE_MARK.fullmatch(raw):
            keep = keep or set(range(len(raws)))
            keep.discard(n)
            continue
        if raw in zero_markers:
            value_list[n], statuses[n] = 0.0, "nil"
            continue
        parsed = cells.parse(raw)
        if parsed.status == "text":
            parsed = parse_range(raw, cells.decimal) or parsed
        value_list[n], statuses[n] = parsed.value, parsed.status
    col_paths = [paths.get(j, ()) for j in cols]
    col_units = [(units or {}).get(j, "") for j in cols]
    by_line: list[str] = []
    if not all(col_units):
        if line_units is not None:  # given per line (a long-format table's unit columns)
            by_line = [line_units[i] for i in body]
        else:  # named in a line's labels ("Gross domestic product (billions of dollars)")
            by_line = [unit_of(*reversed(stub)) if _may_name_unit("\x1f".join(stub)) else ""
                       for stub in (r for r in stub_rows if r is not None)]
    if any(by_line):
        unit_list = [col_units[j] or by_line[k] for k, j in zip(k_list, j_list, strict=True)]
    elif any(col_units):
        unit_list = list(map(col_units.__getitem__, j_list))
    else:
        unit_list = repeat("", len(raws))
    fields = zip(
        np.asarray(body)[k_idx].tolist(),
        (value_cols[j_idx] + col_offset).tolist(),
        map(body_labels.__getitem__, k_list),
        map(col_paths.__getitem__, j_list),
        raws,
        value_list,
        statuses,
        map(line_classes.__getitem__, k_list),
        unit_list,
        strict=True,
    )
    out = Body(map(tuple.__new__, repeat(Observation), fields))
    if keep is not None:
        out = Body(o for n, o in enumerate(out) if n in keep)
    # Lines with labels of their own and columns with paths of their own make every key unique: known
    # without hashing each observation's key
    out.unique = _known_unique(body_labels, col_paths, kinds != EMPTY)
    return out


def _known_unique(labels: list[tuple[str, ...]], paths: list[tuple[str, ...]], filled: np.ndarray) -> bool:
    """Whether every key is unique, known from the lines and columns alone: lines with labels of their own,
    and columns that share a path never filled on one line (an unnamed spacer beside its neighbour)."""
    if len(set(labels)) != len(labels):
        return False
    if len(set(paths)) == len(paths):
        return True
    groups: dict[tuple[str, ...], list[int]] = {}
    for j, path in enumerate(paths):
        groups.setdefault(path, []).append(j)
    return not any((filled[:, js].sum(axis=1) > 1).any() for js in groups.values() if len(js) > 1)


def _row_labels(stub_rows: list[list[str] | None], line_groups: list[tuple[str, ...]], columns: Columns,
                qualify: bool) -> list[tuple[str, ...]]:
    """Each body line's labels: its groups, then its label cells, carried down where written once a block
    (and qualified by their parent line when ``qualify``, see ``observations``)."""
    n = len(columns.labels)
    rows = [r for r in stub_rows if r is not None]
    # Columns written once per block have blanks under their value; a column filled on every line (row
    # numbers, years) is no block, and its changes carry nothing away
    sparse = [not columns.long_format and k < n - 1 and any(not r[k] and any(r[k + 1 :]) for r in rows)
              for k in range(n)]
    stubs: list[tuple[str, ...]] = []
    last = [""] * n
    for row in stub_rows:
        if row is None:  # a group line: labels carried from the block above stop here
            last = [""] * n
            continue
        filled = list(row)
        for m in range(n):
            if not sparse[m]:
                continue
            if filled[m]:
                if filled[m] != last[m]:
                    for below in range(m + 1, n):  # a new block: what hung under the old one stops
                        last[below] = ""
                last[m] = filled[m]
            elif last[m] and any(filled[m + 1 :]):
                filled[m] = last[m]
        stubs.append(tuple(filter(None, filled)))
    labels = [g + s for g, s in zip(line_groups, stubs, strict=True)]
    if qualify:
        counts = Counter(labels)
        parent: tuple[str, ...] = ()
        for k, own in enumerate(labels):
            if counts[own] == 1:
                parent = stubs[k] or parent
            elif parent and stubs[k]:
                # the parent's last label that the line does not share: a unit column ("Percent") is no name
                name = next((x for x in reversed(parent) if x not in stubs[k]), parent[-1])
                labels[k] = line_groups[k] + (name,) + stubs[k]
    return labels


def _group_style(text: str) -> str:
    letters = [c for c in text if c.isalpha()]
    if letters and all(c.isupper() for c in letters):
        return "upper"
    if text.rstrip().endswith((":", "--")):
        return "colon"
    return f"indent{len(text) - len(text.lstrip())}"


class Body(list):
    """A table's observations, and whether their keys are known to be unique (``observations`` knows it
    from its lines' labels and its columns' paths).

    The keys are counted once (``key_counts``): a table's readings are compared by their shared keys
    several times (``duplicates``, then ``key_warnings``). A Body is not changed once built.
    """

    unique = False
    _counts: Counter | None = None

    def key_counts(self) -> Counter:
        """How many observations have each key (row labels, column path)."""
        if self._counts is None:
            self._counts = Counter((o.row_labels, o.column_path) for o in self)
        return self._counts

    def same_keys(self, observations: Iterable[Observation]) -> Body:
        """``observations``, each with the key of this one's at its place (their line classes changed)."""
        out = Body(observations)
        out.unique, out._counts = self.unique, self._counts
        return out


def _key_counts(obs: list[Observation]) -> Counter:
    return obs.key_counts() if isinstance(obs, Body) else Counter((o.row_labels, o.column_path) for o in obs)


def duplicates(obs: list[Observation]) -> int:
    """How many observations share their key with another one of the table."""
    if getattr(obs, "unique", False):
        return 0
    return sum(c for c in _key_counts(obs).values() if c > 1)


def key_warnings(obs: list[Observation]) -> list[str]:
    """Why the table's keys do not tell its observations apart, or nothing when every key is unique."""
    if getattr(obs, "unique", False):
        return []
    keys = _key_counts(obs)
    shared = {k: c for k, c in keys.items() if c > 1}
    if not shared:
        return []
    n_obs = sum(shared.values())
    (labels, path), _ = max(shared.items(), key=lambda kv: kv[1])
    unlabelled = sum(c for (lab, _), c in shared.items() if not lab)
    why = "rows without a label" if unlabelled * 2 > n_obs else "rows or columns with the same labels"
    return [f"duplicate keys: {n_obs} of {len(obs)} observations share {len(shared)} keys ({why}), e.g. "
            f"row labels {list(labels)} x column path {list(path)}"]
