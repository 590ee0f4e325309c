"""Where the tables of a sheet are: line classes corrected by their neighbours, tables' line spans, and
tables side by side.

The line model reads one line at a time; what a line is often shows only next to the others (a header
repeated under a table, a row of units under a header, the title above a block of numbers). These rules
correct its classes, then cut the sheet into tables: ``detect`` builds each table from a span.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from .features import EMPTY, MARKER, NUMBER, TEXT

#: The line classes of a table's body: the lines whose cells become observations.
BODY = ("data", "derived")


def refine_classes(classes: list[str], text: list[list[str]], kinds: np.ndarray, values: np.ndarray) -> list[str]:
    """The line model's ``classes`` of one block of columns, corrected by what the lines around each say.

    ``text``: the block's stripped cells; ``kinds``, ``values``: their ``features.cell_kinds``. Returns a
    new list (the argument is left as it is), one class per line, ``empty`` lines unchanged.
    """
    classes = _repeated_headers(classes, text)
    classes = attribute_rows(classes, text, kinds)
    return _frame_tables(classes, text, kinds, values)


def segments(classes: Sequence[str]) -> list[tuple[int, int]]:
    """Split a sheet's lines into tables: [metadata] [header] body [notes], repeated.

    A new table starts when a metadata or header line comes after body lines and is itself followed by
    body lines, i.e. a new title or header block; notes close the table they follow.
    """
    spans: list[tuple[int, int]] = []
    start: int | None = None
    seen_body = False
    seen_notes = False
    n = len(classes)
    for i, cls in enumerate(classes):
        if cls == "empty":
            continue
        if start is None:
            start, seen_body, seen_notes = i, cls in BODY or cls == "group", cls == "notes"
            continue
        opens = cls in ("metadata", "header") and (seen_body or seen_notes)
        if cls in ("data", "group", "derived") and seen_notes:
            opens = True
        if opens and cls == "header":
            # A lone repeated header inside a body ("continued") does not open a table unless a title or a
            # blank line precedes it
            prev = i - 1
            while prev >= 0 and classes[prev] == "empty":
                prev -= 1
            opens = seen_notes or classes[prev] == "metadata" or (i - prev) > 1
        if opens:
            spans.append((start, _last_nonempty(classes, start, i - 1)))
            start, seen_body, seen_notes = i, False, False
        seen_body = seen_body or cls in BODY
        seen_notes = seen_notes or cls == "notes"
    if start is not None:
        spans.append((start, _last_nonempty(classes, start, n - 1)))
    return [s for s in spans if any(c in BODY for c in classes[s[0] : s[1] + 1])]


def _last_nonempty(classes: Sequence[str], lo: int, hi: int) -> int:
    while hi > lo and classes[hi] == "empty":
        hi -= 1
    return hi


def _repeated_headers(classes: list[str], text: list[list[str]]) -> list[str]:
    """A line that repeats a header line above it is a header too: the next table of a stack, laid out
    like the first, or a table continued under its header. The model sees lines, not this repetition."""
    seen: set[tuple[str, ...]] = set()
    out = classes
    for i, cls in enumerate(classes):
        if cls == "empty":
            continue
        key = tuple(text[i])
        if cls == "header":
            seen.add(key)
        elif key in seen:
            if out is classes:
                out = list(classes)
            out[i] = "header"
    return out


# Row labels of the metadata that time-series workbooks put under the column headers (ABS, ONS, ECB...)
ATTRIBUTE_LABEL = re.compile(
    r"^(units?|unit of measure(ment)?|series ?(type|id|identifier|key|start|end|code)|data ?type|frequency|"
    r"freq\.?|collection month|no\.? ?(of )?obs\.?|number of observations|observations|scale|currency|decimals|"
    r"base period|reference period|seasonal(ly)? adjust\w*|adjustment|measure type|price basis|table id)\s*:?$",
    re.I,
)


def attribute_rows(classes: list[str], text: list[list[str]], kinds: np.ndarray) -> list[str]:
    """Two corrections to the header block of a table, which the line model gets wrong on time series:

    - metadata rows under the header ("Unit", "Series ID", "No. Obs" ...) are header rows (kept as column
      attributes by ``build_table``), not data, though some hold numbers;
    - a row of missing-value markers below the body's first line is data, not a header.
    """
    out = list(classes)
    in_header = False
    seen_body = False
    for i, cls in enumerate(classes):
        if cls == "empty":
            continue
        if (in_header and cls in ("data", "derived", "group")
                and ATTRIBUTE_LABEL.match(next((c for c in text[i] if c), ""))):
            out[i] = "header"
            continue
        if cls == "header" and seen_body:
            rest = kinds[i][kinds[i] != EMPTY][1:]
            if len(rest) >= 2 and (rest == MARKER).all():
                out[i] = "data"
                cls = "data"
        in_header = cls == "header"
        seen_body = seen_body or cls in BODY
    return out


def _frame_tables(classes: list[str], text: list[list[str]], kinds: np.ndarray, values: np.ndarray) -> list[str]:
    """Where each table's column names, title and notes are, from which lines hold numbers; the line model
    reads lines one by one and misses these on sheets unlike SAUS (free text around a table, a header the
    model took for data, a stack of small tables under one-line titles):

    - a header line laid out like the body line right under it (numbers in the same columns, not only
      years nor one unit repeated) is data;
    - a line of two or more text cells just above a table's first line of numbers names its columns
      (a header) when the model found no header there; text lines above it are the title (metadata),
      and so are header lines standing alone between blank lines, above every header line over the
      numbers, with no cell over a column of numbers;
    - a text line just above a header line, after a blank line or a body, is a title, and so is a header
      line that reads "Table 4: ..." once its spaces are gone (letter-spaced titles of PDFs), and the
      title's unit in brackets under it;
    - lines without a number after a table's last line of numbers are notes, and so are lines without
      a number right under its notes.
    """
    out = list(classes)
    used = kinds != EMPTY
    # a line of numbers holds a number; a marker alone ("c", "-") may be a code or a dash in a text
    numeric = (kinds == NUMBER).any(axis=1).tolist()
    figures = ((kinds == NUMBER) | (kinds == MARKER)).any(axis=1).tolist()
    n_cells = used.sum(axis=1).tolist()
    lines = [i for i, c in enumerate(out) if c != "empty"]
    with np.errstate(invalid="ignore"):
        year = (values >= 1500) & (values <= 2099) & (values == np.round(values))
    for pos, i in enumerate(lines[:-1]):
        nxt = lines[pos + 1]
        if (out[i] == "header" and numeric[i] and nxt == i + 1 and out[nxt] in BODY
                and (kinds[i] == kinds[nxt]).all() and not year[i][kinds[i] == NUMBER].all()
                and not _one_unit_repeated(values[i][kinds[i] == NUMBER].tolist())):
            out[i] = "data"
    for pos, i in enumerate(lines[1:], start=1):
        prev = lines[pos - 1]
        gap = i - prev > 1
        if out[i] in ("data", "group") and not figures[i] and pos + 1 < len(lines):
            nxt = lines[pos + 1]
            if out[nxt] == "header" and nxt == i + 1 and (gap or out[prev] in BODY):
                out[i] = "metadata"
    for a, b in segments(out):
        span = [i for i in range(a, b + 1) if out[i] != "empty"]
        with_numbers = [i for i in span if out[i] in BODY and numeric[i]]
        if not with_numbers:
            if a > 0 and out[a - 1] == "notes":  # more words right under a table's notes: notes too
                for i in span:
                    out[i] = "notes"
            continue
        first, last = with_numbers[0], with_numbers[-1]
        for i in span:
            if i > last and out[i] in ("data", "derived", "group") and not figures[i]:
                out[i] = "notes"
        above = [i for i in span if i < first]
        if not above:
            continue
        for i in above:  # "T ABLE 4: ST A TE-WISE ..." spaced out over the columns is still a title
            if out[i] == "header" and _TABLE_TITLE.match("".join(text[i]).replace(" ", "")):
                out[i] = "metadata"
            elif out[i] == "header" and i > 0 and out[i - 1] == "metadata" and n_cells[i] == 1:
                cell = next(c for c in text[i] if c)
                if cell.startswith("(") and cell.endswith(")"):  # the title's unit: "(Per cent)"
                    out[i] = "metadata"
        names = above[-1]
        # (not when a header line is right above it: that header names the columns, this is a label line)
        header_above = len(above) > 1 and out[above[-2]] == "header" and above[-1] - above[-2] == 1
        if out[names] in BODY and not figures[names] and n_cells[names] >= 2 and not header_above:
            out[names] = "header"
            for i in above[:-1]:
                if out[i] in ("data", "derived", "group", "header"):
                    out[i] = "metadata"
        elif out[names] == "header":
            # Header lines parted by a blank line from the header block of the numbers, with no cell over a
            # column of numbers ("Data Source | World Development Indicators"), describe the file
            k = len(above) - 1
            while k > 0 and out[above[k - 1]] == "header" and above[k] - above[k - 1] == 1:
                k -= 1
            value_cols = ((kinds[with_numbers] == NUMBER) | (kinds[with_numbers] == MARKER)).any(axis=0)
            value_cols[: int(used[span].any(axis=0).argmax()) + 1] = False  # the stub (years, codes) is no value
            over_values = [i for i in above if out[i] == "header" and (used[i] & value_cols).any()]
            for i in above[:k]:
                if over_values and i < over_values[0] and out[i] == "header" and out[i + 1] == "empty" \
                        and (i == 0 or out[i - 1] == "empty") and not (used[i] & value_cols).any():
                    out[i] = "metadata"
    return out


_TABLE_TITLE = re.compile(r"^(table|tabelle|tableau|tabla|cuadro|tab\.)\d+[\w.]*[:.]", re.I)


def _one_unit_repeated(numbers: list[float]) -> bool:
    """A header line of units reads as numbers: "(1,000)" over every column."""
    return len(numbers) > 1 and len(set(numbers)) == 1


def column_blocks(kinds: np.ndarray, values: np.ndarray) -> list[tuple[int, int]]:
    """Column ranges of tables that sit side by side, or the whole width when there is one.

    Candidates are runs of used columns between empty ones; a run starts a new table only when it looks
    like one on its own (a first column of labels or years beside numbers, on two lines at least) and
    the columns before it hold numbers; otherwise it belongs to its left neighbour (a spacer column
    inside one table, or a stub set apart from its values).
    """
    width = kinds.shape[1]
    used = (kinds != EMPTY).any(axis=0)
    runs: list[list[int]] = []
    for j in np.flatnonzero(used):
        if runs and runs[-1][1] == j - 1:
            runs[-1][1] = j
        else:
            runs.append([j, j])
    if len(runs) <= 1:
        return [(0, width - 1)]
    number = kinds == NUMBER
    blocks = [[0, runs[0][1]]]
    for a, b in runs[1:]:
        left = blocks[-1]
        if _table_like(kinds, values, number, a, b) and number[:, left[0] : left[1] + 1].any(axis=1).sum() >= 2:
            blocks.append([a, b])
        else:
            left[1] = b
    blocks[-1][1] = width - 1
    for k in range(1, len(blocks)):  # the blank columns between two tables go to the left one
        blocks[k - 1][1] = blocks[k][0] - 1
    return [(int(a), int(b)) for a, b in blocks]


def _table_like(kinds: np.ndarray, values: np.ndarray, number: np.ndarray, a: int, b: int) -> bool:
    if b <= a:
        return False
    numeric_rows = number[:, a + 1 : b + 1].any(axis=1)
    if numeric_rows.sum() < 2:
        return False
    first = kinds[numeric_rows, a]
    year = values[numeric_rows, a]
    years = (first == NUMBER) & (year >= 1500) & (year <= 2099) & (year == np.round(year))
    return float(((first == TEXT) | years).mean()) >= 0.5
