"""From a sheet's tables to their contents: `segment` says where the tables are, `body` what their columns
are and how their body reads in long form; this module joins them, and finds the total columns."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

import numpy as np

from .body import (
    _FOOTNOTE_MARK,
    _LEADER,
    _YEAR,
    Body,
    Columns,
    body_like,
    duplicates,
    expand_merged,
    header_paths,
    key_warnings,
    label_columns,
    label_lines,
    legend_zero_markers,
    marked_paths,
    merge_ends,
    observations,
    unit_of,
)
from .body import all_years as _all_years
from .body import clean_label as _clean_label
from .classifier import LineClassifier, default_classifier
from .features import EMPTY, FEATURE_NAMES, TEXT, cell_kinds, sheet_features
from .model import DetectedTable, Provenance
from .regions import RegionModel, default_region_model, final_classes, find_tables, rule_headers
from .segment import ATTRIBUTE_LABEL, BODY, column_blocks, refine_classes, segments
from .values import SheetCells

# 0.4: label columns (codes, years, row numbers), labels carried down, long-format tables, units, keys checked;
# 0.5: tables framed by the learned region model (region_model.json): a table's range is its header block and
# body, its titles and notes outside it (a lake re-detects files detected by an older version)
DETECTOR_VERSION = "sbcrawl-tables/0.5"
MAX_HEADER_LINES = 10  # a header block has a few lines: more means body lines taken for header ones

__all__ = ["DETECTOR_VERSION", "_FOOTNOTE_MARK", "_LEADER", "_all_years", "_clean_label", "build_table",
           "classify_and_detect", "detect_tables", "total_columns"]


def total_columns(values: np.ndarray, max_run: int = 20, share: float = 0.8) -> list[int]:
    """Columns of a table's body that are the sum of the columns just right or left of them ("Total" before
    or after "Men", "Women"): in ``share`` of the lines where they hold a number other than 0, at least two.

    ``values``: the body lines x the value columns (NaN where no number); a run of columns holding a blank
    is no sum. Published figures are rounded: the tolerance is the rounding of the parts to the total's
    last digit. All columns and run lengths at once, from one cumulative sum per line.
    """
    if values.ndim != 2 or values.shape[1] < 3 or values.shape[0] < 2:
        return []
    n = values.shape[1]
    present = ~np.isnan(values)
    lines = present & (values != 0)
    n_lines = lines.sum(axis=0)
    ks = np.arange(2, min(max_run, n - 1) + 1)[None, :]  # run lengths
    cols = np.flatnonzero(n_lines >= 2)
    if not (values[present] < 0).any():
        # Without a negative figure a run only grows: a total is at least its first two parts (within the
        # widest tolerance), which most columns are not; the others need no further look
        first_two = np.full(values.shape, np.inf), np.full(values.shape, np.inf)
        first_two[0][:, :-2] = values[:, 1:-1] + values[:, 2:]
        first_two[1][:, 2:] = values[:, 1:-1] + values[:, :-2]

        def fitting(cols: np.ndarray, unit: np.ndarray | float) -> np.ndarray:
            widest = unit * (ks.max() + 1) / 2 * 1.001
            v = values[:, cols]
            fit = ((first_two[0][:, cols] <= v + widest) | (first_two[1][:, cols] <= v + widest)) & lines[:, cols]
            return cols[fit.sum(axis=0) >= share * n_lines[cols]]

        # No unit exceeds 1.01: the columns that fit with it first, then each number's own unit on those
        cols = fitting(cols, 1.01)
        if len(cols):
            cols = fitting(cols, 1.01 * _last_digit(values[:, cols]))
    if len(cols) == 0:
        return []
    unit = 1.01 * _last_digit(values[:, cols])  # of the columns left
    zero = np.zeros((len(values), 1))
    csum = np.concatenate([zero, np.cumsum(np.where(present, values, 0.0), axis=1)], axis=1)
    blanks = np.concatenate([zero, np.cumsum(~present, axis=1)], axis=1)
    # Only the runs that fit in the table, right of a column (j+1 .. j+k) and left of it (j-k .. j-1), as
    # flat lists of (column, run length): about half the (column x run length x side) grid, whose runs
    # past an edge could never count
    col, k, lo, hi = _runs_within(cols, ks.ravel(), n)
    target = np.where(lines, values, np.nan)[:, cols[col]]
    tol = unit[:, col] * (k + 1) / 2
    sums = csum[:, hi] - csum[:, lo]
    whole = (blanks[:, hi] - blanks[:, lo]) == 0
    hits = ((np.abs(sums - target) <= tol) & whole).sum(axis=0)
    passed = np.zeros(len(cols), dtype=bool)
    passed[col[hits >= share * n_lines[cols][col]]] = True
    return cols[passed].tolist()


def _runs_within(cols: np.ndarray, ks: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The runs of ``ks`` columns right and left of each of ``cols`` that lie within ``n`` columns: each
    run's position in ``cols``, its length, and the first and past-the-last columns it sums."""
    c = np.repeat(np.arange(len(cols)), len(ks))
    k = np.tile(ks, len(cols))
    j = cols[c]
    right, left = j + k < n, j - k >= 0  # j+1 .. j+k, then j-k .. j-1
    return (np.concatenate([c[right], c[left]]), np.concatenate([k[right], k[left]]),
            np.concatenate([j[right] + 1, (j - k)[left]]), np.concatenate([(j + 1 + k)[right], j[left]]))


def _last_digit(v: np.ndarray) -> np.ndarray:
    """The unit of each number's last decimal digit, up to 6 decimals (1 for integers, 0.01 for 23.65).

    All 7 scales at once, the first that fits taken: a loop over scales dropping each number once placed
    cost more numpy calls than it saved on a table's few hundred numbers.
    """
    unit = np.full(v.shape, 1e-6)  # also for NaN and infinities, which no test below admits
    finite = np.isfinite(v)
    # (a number beyond 1e302 overflows at the larger scales, after its unit 1 was found at the first)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = v[finite][None, :] * _SCALES[:, None]  # (scale, number)
        fits = np.abs(scaled - np.round(scaled)) <= 1e-12 * np.maximum(1, np.abs(scaled))
    unit[finite] = np.where(fits.any(axis=0), _UNITS[fits.argmax(axis=0)], 1e-6)
    return unit


_SCALES = np.array([10.0**d for d in range(7)])  # a number's decimals shifted left by 0..6 places
_UNITS = np.array([10.0**-d for d in range(7)])  # the unit of its last digit then


def build_table(
    rows: list[list[str]],
    classes: list[str],
    proba: np.ndarray,
    span: tuple[int, int],
    provenance: Provenance,
    index: int,
    cells: SheetCells,
    col_offset: int = 0,
    kinds: np.ndarray | None = None,
    values: np.ndarray | None = None,
    merged: Sequence[tuple[tuple[int, int], tuple[int, int]]] = (),
    zero_markers: frozenset[str] = frozenset(),
    core: tuple[int, int] | None = None,
) -> DetectedTable:
    """One table of the sheet, lines ``span``; ``cells`` are the sheet's parsed cells (see SheetCells).

    ``span`` holds the table with its titles above and notes under it; ``core`` is the table proper, its
    header block and body (by default the whole span): the table's rows and ``line_classes``, its columns
    those of its lines that are neither metadata nor notes. ``rows`` may be a block of the sheet's
    columns (a table beside another); ``col_offset`` is the sheet column of its first one, so that the
    table's cells are placed in the sheet. ``kinds``, ``values``: the block's ``features.cell_kinds``, when
    the caller has them. ``merged``: the block's merged ranges; ``zero_markers``: markers the sheet's
    legend defines as zero. ``classes`` is not changed: lines read otherwise here (a body line the
    classifier took for a header) are so in the table's ``line_classes``.
    """
    if kinds is None or values is None:
        kinds, values = cell_kinds(cells.text, cells.decimal, cells)
    a, b = span
    lines = list(range(a, b + 1))
    used = [i for i in lines if classes[i] != "empty"]
    framed = [i for i in used if classes[i] not in ("metadata", "notes")]  # titles and notes overhang
    if core is None:
        core = span
    framed = [i for i in framed if core[0] <= i <= core[1]]
    cols = np.flatnonzero((kinds[framed] != EMPTY).any(axis=0)).tolist() if framed else []
    lo, hi = (min(cols), max(cols)) if cols else (0, max(len(rows[a]) - 1, 0))
    text = cells.text
    local, path_idx, attribute_idx, warnings = _header_block(rows, classes, lines, lo, hi, kinds, values, text)
    body = [i for i in lines if local[i] in BODY]
    columns = label_columns(text, body, path_idx, lo, hi, cells, kinds, values)
    header_rows = expand_merged(rows, merged, set(path_idx))
    stops = [merge_ends(merged, i) for i in path_idx]
    paths = header_paths([header_rows[i] for i in path_idx], columns.values, stops)
    paths = marked_paths([header_rows[i] for i in path_idx], columns.values, stops, paths)
    attributes: dict[int, dict[str, str]] = {}
    for i in attribute_idx:
        key = text[i][lo].rstrip(":").strip()
        for j in columns.values:
            if text[i][j]:
                attributes.setdefault(j + col_offset, {})[key] = text[i][j]

    title = " ".join(" ".join(c.strip() for c in rows[i] if c.strip()) for i in lines if classes[i] == "metadata")
    units = _units(columns, paths, attributes, col_offset, title)
    grid = (kinds, values)
    line_units = _line_units(text, columns)

    def read(as_groups: set[int], qualify: bool = False, cols: Columns = columns):
        return observations(text, local, lines, cells, grid, cols, paths, col_offset, as_groups,
                            zero_markers=zero_markers, units=units, line_units=line_units, qualify=qualify)

    obs = read(set())
    if duplicates(obs):
        obs = _told_apart(obs, read, _section_lines(text, body, columns, kinds, lo))
    if duplicates(obs) and not columns.long_format and paths and all(paths.get(j) for j in columns.values):
        obs, columns = _identifier_columns(obs, read, text, body, path_idx, columns, kinds, values)
    if body and columns.values:
        found = total_columns(values[np.ix_(body, columns.values)])
        totals = {columns.values[k] + col_offset for k in found}
        if totals:
            derived = (o._replace(line_class="derived") if o.col in totals else o for o in obs)
            obs = obs.same_keys(derived) if isinstance(obs, Body) else Body(derived)
    notes = [" ".join(c.strip() for c in rows[i] if c.strip()) for i in lines if classes[i] == "notes"]
    conf = float(proba[used].max(axis=1).mean()) if used else 0.0
    return DetectedTable(
        provenance=provenance,
        index=index,
        first_row=core[0],
        last_row=core[1],
        first_col=lo + col_offset,
        last_col=hi + col_offset,
        title=title,
        header=[list(rows[i][lo : hi + 1]) for i in sorted(path_idx + attribute_idx)],
        line_classes=[local[i] for i in range(core[0], core[1] + 1)],
        observations=obs,
        notes=notes,
        confidence=round(conf, 4),
        column_attributes=attributes,
        warnings=warnings + key_warnings(obs),
    )


def _section_lines(text: list[list[str]], body: list[int], columns, kinds: np.ndarray, lo: int) -> set[int]:
    """Body lines that may be section labels: a label and no values ("United States dollar" above its
    rates), or a label and words in the value columns (series codes above their block: "All persons |
    MGSL | MGSF")."""
    out = set()
    value_cols = columns.values
    for i in body:
        if not any(text[i][j] for j in columns.labels):
            continue
        filled = [j for j in value_cols if text[i][j]]
        words = len(filled) >= 2 and all(kinds[i, j] == TEXT for j in filled)
        if words or (not filled and not _all_years(text, [i], lo)):
            out.add(i)
    return out


# A header naming a column of identifiers by their number: "Game Number", "Case No.", "Serial number" (not
# "Total number", a count)
_NAMED_ID = re.compile(r"\b(id|code)\b|[a-z](?<!total)(?<!average)(?<!mean)\s+(number|num|no)\.?$", re.I)


def _column_name(text: list[list[str]], headers: list[int], j: int) -> str:
    return " ".join(text[i][j] for i in headers if text[i][j]).strip()


def _identifier_columns(obs, read, text: list[list[str]], body: list[int], headers: list[int], columns: Columns,
                        kinds: np.ndarray, values: np.ndarray) -> tuple[list, Columns]:
    """When rows share their labels, the first value columns (up to 4) taken as row labels too, if they
    tell the rows apart: identifiers that sit among the measures (a chromosome's "Start position" beside
    its name, a school's ID code after its district's name, a census line's county, district, page and
    line). A column may so identify when it holds words, or whole numbers without grouping that run upwards
    within each run of rows sharing the labels taken so far (a key sorts its rows; a measure seldom does)
    or that its header names as identifiers ("Game Number": games of a day listed out of order);
    only a reading that leaves at most 5 % of the observations sharing a key is taken (the fewest columns
    that do)."""
    by_row: dict[int, tuple[str, ...]] = {}
    for o in obs:
        by_row.setdefault(o.row, o.row_labels)
    rows = [i for i in body if i in by_row]
    if len(rows) < 5 or len(set(by_row.values())) > 0.9 * len(rows):
        return obs, columns  # the rows have labels of their own: the keys collide across columns
    keys = [by_row[i] for i in rows]
    tried: list[int] = []
    for j in columns.values[:4]:
        cells = [text[i][j] for i in rows]
        filled = [c for c in cells if c]
        if not filled:
            break
        if (kinds[rows, j] == TEXT).sum() * 2 <= len(filled):
            col = values[rows, j]
            if not all(c.replace(".0", "").isdigit() for c in filled) or not np.isfinite(col).all():
                break
            runs = [keys[k] == keys[k - 1] for k in range(1, len(keys))]
            steps = [col[k] >= col[k - 1] for k in range(1, len(keys)) if runs[k - 1]]
            if steps and sum(steps) < 0.95 * len(steps) and not _NAMED_ID.search(_column_name(text, headers, j)):
                break
        tried.append(j)
        keys = [(*key, cell) for key, cell in zip(keys, cells, strict=True)]
        cols = Columns(columns.labels + tried, [v for v in columns.values if v not in tried], columns.unit_cols,
                       False)
        again = read(set(), cols=cols)
        if duplicates(again) * 20 <= len(again):
            return again, cols
    return obs, columns


def _told_apart(obs, read, sections: set[int]):
    """The reading of the body whose keys collide least: section lines read as groups, then lines qualified
    by their parent line, each kept only when it tells more observations apart."""
    best, fewest = obs, duplicates(obs)
    groups: set[int] = set()
    if sections:
        again = read(sections)
        if duplicates(again) < fewest:
            best, fewest, groups = again, duplicates(again), sections
    if fewest:
        again = read(groups, qualify=True)
        if duplicates(again) < fewest:
            best = again
    return best


def _header_block(
    rows: list[list[str]], classes: list[str], lines: list[int], lo: int, hi: int, kinds: np.ndarray,
    values: np.ndarray, text: list[list[str]],
) -> tuple[list[str], list[int], list[int], list[str]]:
    """The table's line classes as read here, its header lines that name columns, those that describe them
    (attributes), and warnings. Header lines whose cells are of the kinds of the body's columns are body
    lines; a header line repeated under the body (a table continued under its header) is read once; a
    label alone in the first column inside the body is a section label."""
    local = list(classes)
    headers = [i for i in lines if classes[i] == "header"]
    units = _unit_lines_above(classes, lines, headers, kinds, text, lo, hi)
    for i in units:
        local[i] = "header"
    headers = sorted([*headers, *units])
    first_body = next((i for i in lines if local[i] in BODY), lines[-1] + 1)
    body = [i for i in lines if local[i] in BODY]
    # "No. Obs | 10 | 10" describes; a unit line is one whatever its kinds
    candidates = [i for i in headers if not ATTRIBUTE_LABEL.match(text[i][lo]) and i not in units]
    for i in body_like([i for i in candidates if i <= first_body], body, kinds, values, lo, hi):
        local[i] = "data"
    # under the first body line, a line repeating the header is the header continued, not a row
    names = {tuple(text[i][lo : hi + 1]) for i in headers if i < first_body}
    inside = [i for i in candidates if i > first_body and tuple(text[i][lo : hi + 1]) not in names]
    for i in body_like(inside, body, kinds, values, lo, hi, inside=True):
        local[i] = "data"
    for i in label_lines([i for i in headers if local[i] == "header" and i not in units], body, kinds, values, lo,
                         hi):
        local[i] = "data"
    year_line = _years_under_header(local, lines, text, lo, hi)
    if year_line is not None:
        local[year_line] = "header"
        headers = sorted([*headers, year_line])
    seen: set[tuple[str, ...]] = set()
    header_idx = []
    for i in headers:
        if local[i] != "header":
            continue
        key = tuple(rows[i][lo : hi + 1])
        if key in seen:
            continue  # a repeated header block: each column keeps one path
        seen.add(key)
        if i > first_body and text[i][lo] and not any(text[i][lo + 1 : hi + 1]):
            local[i] = "group"  # a lone label in the first column inside the body: the section below it
            continue
        header_idx.append(i)
    warnings = []
    if len(header_idx) > MAX_HEADER_LINES:
        warnings.append(f"header of {len(header_idx)} lines: only the {MAX_HEADER_LINES} nearest the body name "
                        "the columns")
        header_idx = header_idx[-MAX_HEADER_LINES:]
    # Attribute rows sit under the header row that names the columns, never first ("Currency | 2022")
    attribute_idx = [i for i in header_idx[1:] if ATTRIBUTE_LABEL.match(text[i][lo])]
    path_idx = [i for i in header_idx if i not in attribute_idx]
    return local, path_idx, attribute_idx, warnings


def _unit_lines_above(classes: list[str], lines: list[int], headers: list[int], kinds: np.ndarray,
                      text: list[list[str]], lo: int, hi: int) -> list[int]:
    """Body lines above the table's first header line that spans the columns, and before any other body
    line: a label and a unit ("STATE | (1,000)" between "ACREAGE" and the years, the unit repeated over
    each block of columns), two distinct texts at most where that header line fills more than half the
    columns. Read as rows, they made the header under them a row too, and no column had a name."""
    width = hi - lo + 1
    filled = (kinds[:, lo : hi + 1] != EMPTY).sum(axis=1)
    wide = next((h for h in headers if 2 * int(filled[h]) > width), None)
    if wide is None:
        return []
    above = [i for i in lines if i < wide and classes[i] in BODY]
    return above if above and all(len({c for c in text[i][lo : hi + 1] if c}) <= 2 for i in above) else []


def _years_under_header(local: list[str], lines: list[int], text: list[list[str]], lo: int, hi: int) -> int | None:
    """The first body line when it is the header's last line: right under a header line, years alone, no
    label, fewer than half the table's columns ("2006" under the blank beside "2006 \\1": which year a
    column of a second reading is, written a line lower)."""
    first = next((k for k, i in enumerate(lines) if local[i] in BODY), None)
    if not first or local[lines[first - 1]] != "header":
        return None
    i = lines[first]
    cells = [c for c in text[i][lo : hi + 1] if c]
    if not cells or text[i][lo] or 2 * len(cells) >= hi - lo + 1 or not all(_YEAR.match(c) for c in cells):
        return None
    return i


def _units(columns, paths: dict[int, tuple[str, ...]], attributes: dict[int, dict[str, str]], col_offset: int,
           title: str) -> dict[int, str]:
    """The unit of each value column: a "Unit" attribute row, else the column's header, else the title."""
    units = {}
    for j in columns.values:
        attrs = attributes.get(j + col_offset, {})
        named = next((v for k, v in attrs.items() if k.lower() in ("unit", "units", "unit of measure")), "")
        units[j] = named or unit_of(*reversed(paths.get(j, ()))) or unit_of(title)
    return units


def _line_units(text: list[list[str]], columns) -> dict[int, str] | None:
    """The unit of each body line, when columns give it (long format: UOM, with its SCALAR_FACTOR); None for
    other tables, whose lines' labels may name one (``observations`` reads those)."""
    if not columns.unit_cols:
        return None

    def unit(i: int) -> str:
        parts = [text[i][j] for j in columns.unit_cols if text[i][j] and text[i][j].lower() != "units"]
        return " ".join(reversed(parts))

    return _LazyUnits(unit)


class _LazyUnits(dict):
    """Line units computed on first look: most lines of most tables have no unit of their own."""

    def __init__(self, unit) -> None:
        super().__init__()
        self._unit = unit

    def __missing__(self, i: int) -> str:
        value = self[i] = self._unit(i)
        return value


def detect_tables(
    rows: Sequence[Sequence[str]],
    provenance: Provenance,
    classifier: LineClassifier | None = None,
    merged: Sequence[tuple[tuple[int, int], tuple[int, int]]] = (),
    regions: RegionModel | Literal["rules"] | None = None,
) -> list[DetectedTable]:
    """Every table in one sheet, with its lines classified and its body in long form.

    ``rows``: the sheet's cells as text (ragged rows are padded). ``provenance`` is stamped on every table
    (``DETECTOR_VERSION`` filled in when empty); ``classifier`` defaults to the shipped line model. Tables
    come in sheet order, blocks of columns left to right; a table of labels only has no observations (the
    caller decides whether to keep it). An empty sheet gives no table. ``merged``: the sheet's merged ranges
    (``readers.Sheet.merged``), whose text is carried over their cells in header lines.
    """
    return classify_and_detect(rows, provenance, classifier, merged, regions)[1]


def classify_and_detect(
    rows: Sequence[Sequence[str]],
    provenance: Provenance,
    classifier: LineClassifier | None = None,
    merged: Sequence[tuple[tuple[int, int], tuple[int, int]]] = (),
    regions: RegionModel | Literal["rules"] | None = None,
) -> tuple[list[str], list[DetectedTable]]:
    """The class of every line of the sheet, and the tables built from them.

    Tables side by side are classified apart, each on its block of columns; a line's class is then the
    one it has in the first block where it is not empty. ``classifier`` (the line model) and ``regions``
    (where the tables are, ``regions.RegionModel``) default to the shipped models; ``regions="rules"``
    frames the tables by the line classes alone (``segment.segments``), as when no region model is shipped.
    """
    width = max(map(len, rows), default=0)
    grid = [[*map(str, r), *[""] * (width - len(r))] for r in rows]
    if not grid or width == 0:
        return ["empty"] * len(grid), []
    clf = classifier or default_classifier()
    model = default_region_model() if regions is None else None if regions == "rules" else regions
    cells = SheetCells.guess(grid)  # parsed once, for the line features and the tables alike
    kinds, values = cell_kinds(grid, cells.decimal, cells)
    if not provenance.detector_version:
        provenance = replace(provenance, detector_version=DETECTOR_VERSION)
    blocks = column_blocks(kinds, values)
    filled = kinds != 0
    first = filled.argmax(axis=1)
    zero_markers = legend_zero_markers(cells.text[i][first[i]] for i in np.flatnonzero(filled.any(axis=1)).tolist())
    line_classes = ["empty"] * len(grid)
    tables: list[DetectedTable] = []
    for lo, hi in blocks:
        whole = (lo, hi) == (0, width - 1)
        part = grid if whole else [r[lo : hi + 1] for r in grid]
        part_cells = cells if whole else cells.columns(lo, hi)
        kv = (kinds, values) if whole else (kinds[:, lo : hi + 1], values[:, lo : hi + 1])
        spans = [((r0, c0 - lo), (r1, min(c1, hi) - lo)) for (r0, c0), (r1, c1) in merged if lo <= c0 <= hi]
        if model is None:
            classes, proba = clf.predict_proba_sheet(part, cells=part_cells, kinds_values=kv)
            classes = refine_classes(classes, part_cells.text, *kv)
            found = [(a, a, b, b) for a, b in segments(classes)]
        else:
            feats = sheet_features(part, cells=part_cells, kinds_values=kv, layout=True)
            classes, proba = clf.classify_features(feats[:, : len(FEATURE_NAMES)])
            role_proba, decisions = model.decide(feats, proba, kv[0])
            found = find_tables(decisions, role_proba)
            final = final_classes(classes, proba, role_proba, decisions, found)
            ruled = refine_classes(classes, part_cells.text, *kv)
            found, classes = rule_headers(found, final, ruled, part_cells.text, kv[0])
        for top, first, last, bottom in found:
            if model is not None and not any(c in BODY for c in classes[first : last + 1]):
                continue  # a header without a body is no table
            tables.append(build_table(part, classes, proba, (top, bottom), provenance, len(tables), part_cells, lo,
                                      *kv, merged=spans, zero_markers=zero_markers,
                                      core=None if model is None else (first, last)))
        line_classes = [c if c != "empty" else b for c, b in zip(line_classes, classes, strict=True)]
    return line_classes, tables
