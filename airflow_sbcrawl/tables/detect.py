"""From a sheet's tables to their contents: the table's columns (stub, header paths, attributes), group labels,
total columns and the body in long form; `segment` says where the tables are."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from itertools import repeat

import numpy as np

from .classifier import LineClassifier, default_classifier
from .features import EMPTY, MARK, NUMBER, TEXT, cell_kinds, sheet_features
from .model import DetectedTable, Observation, Provenance
from .regions import RegionModel, default_region_model, final_classes, find_tables
from .segment import ATTRIBUTE_LABEL, BODY, column_blocks
from .values import SheetCells, parse_range

DETECTOR_VERSION = "sbcrawl-tables/0.3+lr1"  # 0.3: tables framed by their lines of numbers, ranges, total columns

_FOOTNOTE_MARK = re.compile(r"\s*(\\\d+|\[\w{1,3}\]|[\u00b9\u00b2\u00b3\u2070-\u2079]+)\s*$")
# The first characters a stripped cell that is only a footnote mark can start with: a cheap test first
_MARK_FIRST = frozenset("\\[\u00b9\u00b2\u00b3" + "".join(map(chr, range(0x2070, 0x207A))))


_PUNCTUATION = re.compile(r"^[\W_]+$")
_LEADER = re.compile(r"(?:\s*\.){2,}\s*$")  # dot leaders between a label and its figures: "Robbery. . . . ."


def _clean_label(text: str) -> str:
    """Labels lose their footnote marks, dot leaders and inner runs of spaces ("Supply,      total   \\1")."""
    last = text.rstrip()[-1:]
    if last == "]" or last.isdigit():  # every footnote mark ends so (superscripts are digits to isdigit)
        text = _FOOTNOTE_MARK.sub("", text)
    if text.endswith("."):
        text = _LEADER.sub("", text)
    return " ".join(text.split())


def _stub_width(rows: list[list[str]], body: list[int], lo: int, hi: int, cells: SheetCells,
                kinds: np.ndarray) -> int:
    """Leading columns of the body that hold labels rather than numbers (markers count as numbers)."""
    if not body:
        return 0
    block = kinds[body, lo : hi + 1]
    texts = (block == TEXT).sum(axis=0)
    used = (block != EMPTY).sum(axis=0)
    # A bare footnote mark is a number or a label as its parse says: rare, read one by one
    for k, j in zip(*np.nonzero(block == MARK), strict=True):
        if cells.parse(cells.text[body[k]][lo + j]).status == "text":
            texts[j] += 1
    width = 0
    for j in range(hi - lo + 1):
        nums = int(used[j] - texts[j])
        # A leading column of years is the stub of a time series, not a measure
        if texts[j] > nums or (j == 0 and nums and _all_years(rows, body, lo)):
            width += 1
        elif used[j] > 0 or width > 0:
            break
    return width


_YEAR = re.compile(r"^(1[5-9]\d\d|20\d\d)(\.0)?(\s*\W.*)?$")


def _all_years(rows: list[list[str]], body: list[int], j: int) -> bool:
    cells = [rows[i][j].strip() for i in body if j < len(rows[i]) and rows[i][j].strip()]
    return bool(cells) and all(_YEAR.match(c) for c in cells)


def _header_paths(header_rows: list[list[str]], lo: int, hi: int, stub_end: int) -> dict[int, tuple[str, ...]]:
    """Column path per value column; a spanning cell is carried right until the next cell at its level or
    above starts, since spreadsheets store a merged cell's text only in its first column."""
    paths: dict[int, list[str]] = {j: [] for j in range(stub_end, hi + 1)}
    boundaries: set[int] = set()
    for row in header_rows:
        carried = ""
        new_bounds = set()
        for j in range(stub_end, hi + 1):
            cell = _clean_label(row[j]) if j < len(row) else ""
            if cell:
                carried = cell
                new_bounds.add(j)
            elif j in boundaries:
                carried = ""
            if carried and (not paths[j] or paths[j][-1] != carried):
                paths[j].append(carried)
        boundaries |= new_bounds
    return {j: tuple(p) for j, p in paths.items()}


def _observations(
    rows: list[list[str]],
    classes: list[str],
    lines: list[int],
    cells: SheetCells,
    grid: tuple[np.ndarray, np.ndarray],
    lo: int,
    hi: int,
    stub_end: int,
    paths: dict[int, tuple[str, ...]],
    col_offset: int,
    as_groups: set[int],
) -> list[Observation]:
    """The body of a table in long form; lines in ``as_groups`` are read as group labels.

    ``grid``: the kinds and values of the block's cells (``features.cell_kinds``). The labels are made per
    line; the cells are picked in numpy and the observations built by ``map`` over columns of fields, since
    a table has many more cells than lines (per cell, Python only looks up its text).
    """
    groups: list[tuple[str, str]] = []
    body: list[int] = []
    body_labels: list[tuple[str, ...]] = []
    body_classes: list[str] = []
    for i in lines:
        cls = classes[i]
        if cls == "group" or i in as_groups:
            label = next((c for c in rows[i][lo : hi + 1] if c.strip()), "")
            style = _group_style(label)
            while groups and any(s == style for s, _ in groups):
                groups.pop()
            groups.append((style, _clean_label(label)))
            continue
        if cls not in BODY:
            continue
        # a stub cell of punctuation only (a dot leader's last point in a column of its own) labels nothing
        stub_cells = tuple(x for x in map(_clean_label, rows[i][lo:stub_end]) if x and not _PUNCTUATION.match(x))
        body.append(i)
        body_labels.append(tuple(g for _, g in groups) + stub_cells)
        body_classes.append(cls)
    if not body or stub_end > hi:
        return []
    kinds, values = grid[0][body, stub_end : hi + 1], grid[1][body, stub_end : hi + 1]
    k_idx, j_idx = np.nonzero(kinds != EMPTY)  # row-major: the order of a loop over lines, then columns
    text = cells.text
    k_list, j_list = k_idx.tolist(), j_idx.tolist()
    raws = [c for i in body for c in text[i][stub_end : hi + 1] if c]  # the same cells, in the same order
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
        parsed = cells.parse(raw)
        if parsed.status == "text":
            parsed = parse_range(raw, cells.decimal) or parsed
        value_list[n], statuses[n] = parsed.value, parsed.status
    col_paths = [paths.get(j, ()) for j in range(stub_end, hi + 1)]
    fields = zip(
        np.asarray(body)[k_idx].tolist(),
        (j_idx + (stub_end + col_offset)).tolist(),
        map(body_labels.__getitem__, k_list),
        map(col_paths.__getitem__, j_list),
        raws,
        value_list,
        statuses,
        map(body_classes.__getitem__, k_list),
        strict=True,
    )
    observations = list(map(tuple.__new__, repeat(Observation), fields))
    if keep is not None:
        observations = [o for n, o in enumerate(observations) if n in keep]
    return observations


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
    col = cols[:, None]
    target = np.where(lines, values, np.nan)[:, cols, None]
    tol = unit[:, :, None] * (ks + 1) / 2
    found = np.zeros(len(cols), dtype=bool)
    # right of j: columns j+1 .. j+k; left of j: columns j-k .. j-1
    for lo, hi, fits in ((col + 1, col + 1 + ks, col + 1 + ks <= n), (col - ks, col + 0 * ks, col - ks >= 0)):
        lo, hi = np.clip(lo, 0, n), np.clip(hi, 0, n)
        sums = csum[:, hi] - csum[:, lo]
        whole = (blanks[:, hi] - blanks[:, lo]) == 0
        hits = ((np.abs(sums - target) <= tol) & whole & fits[None]).sum(axis=0)  # (column, run length)
        found |= (hits >= share * n_lines[cols, None]).any(axis=1)
    return cols[found].tolist()


def _last_digit(v: np.ndarray) -> np.ndarray:
    """The unit of each number's last decimal digit, up to 6 decimals (1 for integers, 0.01 for 23.65).

    Fewest decimals first, each number dropped once its unit is found: most tables are whole numbers.
    """
    unit = np.full(v.shape, 1e-6)  # also for NaN and infinities, which no test below admits
    flat = unit.reshape(-1)
    todo = np.flatnonzero(np.isfinite(v))
    rest = v.reshape(-1)[todo]
    for d in range(7):
        scaled = rest * 10.0**d
        ok = np.abs(scaled - np.round(scaled)) <= 1e-12 * np.maximum(1, np.abs(scaled))
        flat[todo[ok]] = 10.0**-d
        todo, rest = todo[~ok], rest[~ok]
        if not len(todo):
            break
    return unit


def _has_duplicate_keys(observations: list[Observation]) -> bool:
    keys = {(o.row_labels, o.column_path) for o in observations}
    return len(keys) < len(observations)


def _group_style(text: str) -> str:
    letters = [c for c in text if c.isalpha()]
    if letters and all(c.isupper() for c in letters):
        return "upper"
    if text.rstrip().endswith((":", "--")):
        return "colon"
    return f"indent{len(text) - len(text.lstrip())}"


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
    core: tuple[int, int] | None = None,
) -> DetectedTable:
    """One table of the sheet, lines ``span``; ``cells`` are the sheet's parsed cells (see SheetCells).

    ``span`` holds the table with its titles above and notes under it; ``core`` is the table proper, its
    header block and body (by default from its first to its last line that is neither metadata nor
    notes): the table's range, its columns those of its lines. ``rows`` may be a block of the sheet's
    columns (a table beside another); ``col_offset`` is the sheet column of its first one, so that the
    table's cells are placed in the sheet. ``kinds``, ``values``: the block's ``features.cell_kinds``,
    when the caller has them.
    """
    if kinds is None or values is None:
        kinds, values = cell_kinds(cells.text, cells.decimal, cells)
    a, b = span
    lines = list(range(a, b + 1))
    used = [i for i in lines if classes[i] != "empty"]
    framed = [i for i in used if classes[i] not in ("metadata", "notes")]  # titles and notes overhang
    if core is None:
        core = (framed[0], framed[-1]) if framed else (a, b)
    framed = [i for i in framed if core[0] <= i <= core[1]]
    cols = np.flatnonzero((kinds[framed] != EMPTY).any(axis=0)).tolist() if framed else []
    lo, hi = (min(cols), max(cols)) if cols else (0, max(len(rows[a]) - 1, 0))
    body = [i for i in lines if classes[i] in BODY]
    # A header block repeated inside the table (continued under its header) gives each column one path
    header_idx = []
    seen_headers: set[tuple[str, ...]] = set()
    for i in lines:
        if classes[i] == "header" and tuple(rows[i]) not in seen_headers:
            seen_headers.add(tuple(rows[i]))
            header_idx.append(i)
    stub = _stub_width(rows, body, lo, hi, cells, kinds)
    stub_end = lo + stub
    # Attribute rows sit under the header row that names the columns, never first ("Currency | 2022")
    attribute_idx = [i for i in header_idx[1:] if ATTRIBUTE_LABEL.match(cells.text[i][lo])]
    path_idx = [i for i in header_idx if i not in attribute_idx]
    paths = _header_paths([rows[i] for i in path_idx], lo, hi, stub_end)
    attributes: dict[int, dict[str, str]] = {}
    for i in attribute_idx:
        key = cells.text[i][lo].rstrip(":").strip()
        for j in range(stub_end, hi + 1):
            if cells.text[i][j]:
                attributes.setdefault(j + col_offset, {})[key] = cells.text[i][j]

    label_only = [
        i for i in body if not any(cells.text[i][stub_end : hi + 1]) and not _all_years(rows, [i], lo)
    ]
    grid = (kinds, values)
    observations = _observations(rows, classes, lines, cells, grid, lo, hi, stub_end, paths, col_offset, set())
    if label_only and _has_duplicate_keys(observations):
        # Lines with a label and no values ("United States dollar" above its rates) were read as data, so
        # the series under two such labels share their labels: they are section labels (groups)
        observations = _observations(rows, classes, lines, cells, grid, lo, hi, stub_end, paths, col_offset,
                                     set(label_only))
    totals = {j + stub_end + col_offset for j in total_columns(values[body, stub_end : hi + 1])} if body else set()
    if totals:
        observations = [o._replace(line_class="derived") if o.col in totals else o for o in observations]

    title = " ".join(" ".join(c.strip() for c in rows[i] if c.strip()) for i in lines if classes[i] == "metadata")
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
        header=[[c for c in rows[i][lo : hi + 1]] for i in header_idx],
        line_classes=[classes[i] for i in range(core[0], core[1] + 1)],
        observations=observations,
        notes=notes,
        confidence=round(conf, 4),
        column_attributes=attributes,
    )


def detect_tables(
    rows: Sequence[Sequence[str]],
    provenance: Provenance,
    classifier: LineClassifier | None = None,
    regions: RegionModel | None = None,
) -> list[DetectedTable]:
    """Every table in one sheet, with its lines classified and its body in long form.

    ``rows``: the sheet's cells as text (ragged rows are padded). ``provenance`` is stamped on every table
    (``DETECTOR_VERSION`` filled in when empty); ``classifier`` defaults to the shipped line model. Tables
    come in sheet order, blocks of columns left to right; a table of labels only has no observations (the
    caller decides whether to keep it). An empty sheet gives no table.
    """
    return classify_and_detect(rows, provenance, classifier, regions)[1]


def classify_and_detect(
    rows: Sequence[Sequence[str]],
    provenance: Provenance,
    classifier: LineClassifier | None = None,
    regions: RegionModel | None = None,
) -> tuple[list[str], list[DetectedTable]]:
    """The class of every line of the sheet, and the tables built from them.

    Tables side by side are classified apart, each on its block of columns; a line's class is then the
    one it has in the first block where it is not empty. ``classifier`` (the line model) and ``regions``
    (where the tables are, ``regions.RegionModel``) default to the shipped models.
    """
    width = max(map(len, rows), default=0)
    grid = [[*map(str, r), *[""] * (width - len(r))] for r in rows]
    if not grid or width == 0:
        return ["empty"] * len(grid), []
    clf = classifier or default_classifier()
    model = regions or default_region_model()
    cells = SheetCells.guess(grid)  # parsed once, for the line features and the tables alike
    kinds, values = cell_kinds(grid, cells.decimal, cells)
    if not provenance.detector_version:
        provenance = replace(provenance, detector_version=DETECTOR_VERSION)
    blocks = column_blocks(kinds, values)
    line_classes = ["empty"] * len(grid)
    tables: list[DetectedTable] = []
    for lo, hi in blocks:
        whole = (lo, hi) == (0, width - 1)
        part = grid if whole else [r[lo : hi + 1] for r in grid]
        part_cells = cells if whole else cells.columns(lo, hi)
        kv = (kinds, values) if whole else (kinds[:, lo : hi + 1], values[:, lo : hi + 1])
        feats = sheet_features(part, cells=part_cells, kinds_values=kv)
        classes, proba = clf.classify_features(feats)
        role_proba, decisions = model.decide(feats, proba, kv[0])
        spans = find_tables(decisions, role_proba)
        classes = final_classes(classes, proba, role_proba, decisions, spans)
        for top, first, last, bottom in spans:
            if not any(c in BODY for c in classes[first : last + 1]):
                continue  # a header without a body is no table
            tables.append(build_table(part, classes, proba, (top, bottom), provenance, len(tables), part_cells, lo,
                                      *kv, core=(first, last)))
        line_classes = [c if c != "empty" else b for c, b in zip(line_classes, classes, strict=True)]
    return line_classes, tables
