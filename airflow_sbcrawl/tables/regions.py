"""Where the tables of a block of columns are: two learned models over its lines, and how their answers
become tables.

A table is a header block and a body; titles, units and sources above it and notes under it are its
metadata, not part of it. Two gradient-boosted models, fitted on annotated real sheets (SAUS, FUSTE and
statistics offices' files) and shipped as JSON (``region_model.json``), decide:

- the **role** of every line: ``metadata`` (a title, a unit, a source above a table), ``header``, ``body``
  (data, group labels, totals) or ``notes``, from the line's features and the line model's classes;
- for the lines where a table may begin or end (``candidates``: after a blank line or an outside line,
  header and outside lines, lines of labels without a figure), whether the line **starts** a table,
  **continues** the one above, or lies **outside** any table. A label line of a sparse body continues its
  table; a new header, or a title over one, starts the next.

``find_tables`` then reads the decisions top to bottom: a table runs from a start to the last line that
continues it; the outside lines between two tables are the next one's title when their role is metadata,
else the previous one's notes.
"""

from __future__ import annotations

import itertools
import json
import re
from importlib import resources
from pathlib import Path

import numpy as np

from .body import header_paths
from .boosted import BoostedTrees
from .features import EMPTY, FEATURE_NAMES, LAYOUT_FEATURES, MARKER, NUMBER, TEXT
from .segment import _TABLE_TITLE, attribute_rows

ROLES = ("metadata", "header", "body", "notes")
DECISIONS = ("start", "continue", "outside")
PARAMS_FILE = "region_model.json"
#: The line model's classes, in the order of its probabilities (``classifier.CLASSES``)
LINE_CLASSES = ("metadata", "header", "group", "data", "derived", "notes")
_BODY = 2
_BODY_CLASSES = ("group", "data", "derived")
_MAX_HEADER = 10  # lines of a header block (detect.MAX_HEADER_LINES)
# "Table 1360.", "T 7.6.3"
_NUMBERED_TITLE = re.compile(r"^(table|tabelle|tableau|tabla|cuadro|tab\.|t)\s*[A-Z]?\d", re.I)
_YEAR = re.compile(r"(1[89]|2[01])\d\d(\.0)?\b")
_SOURCE_LINE = re.compile(r"^\W{0,3}(source|sources|quelle|fuente|note|notes)\b", re.I)
START_EXTRA = [f"{side}_{role}" for side in ("this", "prev", "next") for role in ROLES] + [
    "shape_change",  # the columns of the 3 lines above against those of this line and the 2 below
    "figures_above",  # share of the 3 lines above holding a figure
    "figures_below",  # ... of this line and the 2 below
    "is_first",
]
#: The region model's line features: the line model's and how the line sits among its neighbours
LINE_FEATURES = FEATURE_NAMES + LAYOUT_FEATURES
ROLE_FEATURES = LINE_FEATURES + [f"line_{c}" for c in LINE_CLASSES]
START_FEATURES = LINE_FEATURES + START_EXTRA


def role_inputs(feats: np.ndarray, line_proba: np.ndarray) -> np.ndarray:
    """The role model's input: the line features and the line model's class probabilities."""
    return np.hstack([feats, line_proba])


def candidates(role: np.ndarray, order: np.ndarray, figures: np.ndarray) -> np.ndarray:
    """Positions (in ``order``, the non-empty lines) of the lines where a table may begin or end.

    Every line but a body line with a figure right under another body line, with no blank line between:
    those only continue their table.
    """
    if len(order) == 0:
        return np.zeros(0, dtype=np.intp)
    body = role == _BODY
    after_body = np.concatenate([[False], body[:-1] & (np.diff(order) == 1)])
    plain = body & after_body & figures
    return np.flatnonzero(~plain)


def start_inputs(feats: np.ndarray, role_proba: np.ndarray, order: np.ndarray, used: np.ndarray,
                 figures: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The start model's input for the candidate positions ``at`` (in ``order``).

    ``role_proba``, ``used`` (non-empty cells) and ``figures`` (a number or marker on the line) are those
    of the non-empty lines, in ``order``.
    """
    m = len(order)
    pad = np.zeros((1, role_proba.shape[1]))
    padded = np.vstack([pad, role_proba, pad])
    extra = np.zeros((len(at), len(START_EXTRA)))
    k = len(ROLES)
    extra[:, 0:k] = padded[at + 1]
    extra[:, k : 2 * k] = padded[at]
    extra[:, 2 * k : 3 * k] = padded[at + 2]
    # The union of the columns of up to 3 lines above / from this one down, by cumulative counts
    cum_used = np.vstack([np.zeros((1, used.shape[1]), dtype=np.int32), np.cumsum(used, axis=0, dtype=np.int32)])
    cum_fig = np.concatenate([[0], np.cumsum(figures)])
    lo, hi = np.maximum(at - 3, 0), np.minimum(at + 3, m)
    above = (cum_used[at] - cum_used[lo]) > 0
    below = (cum_used[hi] - cum_used[at]) > 0
    union = (above | below).sum(axis=1)
    extra[:, 3 * k] = np.where(at > 0, 1.0 - (above & below).sum(axis=1) / np.maximum(union, 1), 0.0)
    extra[:, 3 * k + 1] = (cum_fig[at] - cum_fig[lo]) / np.maximum(at - lo, 1)
    extra[:, 3 * k + 2] = (cum_fig[hi] - cum_fig[at]) / np.maximum(hi - at, 1)
    extra[:, 3 * k + 3] = at == 0
    return np.hstack([feats[order[at]], extra])


class RegionModel:
    """The role and start models (``BoostedTrees``), loaded from JSON; see the module's docstring."""

    def __init__(self, roles: BoostedTrees, starts: BoostedTrees) -> None:
        self.roles = roles
        self.starts = starts

    def decide(self, feats: np.ndarray, line_proba: np.ndarray, kinds: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """Role probabilities (lines x ``ROLES``, zeros on blank lines) and every line's decision (one of
        ``DECISIONS``, "" for blank lines)."""
        n = len(kinds)
        used_all = kinds != EMPTY
        order = np.flatnonzero(used_all.any(axis=1))
        role_proba = np.zeros((n, len(ROLES)))
        decisions = [""] * n
        if len(order) == 0:
            return role_proba, decisions
        rp = self.roles.proba(role_inputs(feats[order], line_proba[order]))
        role_proba[order] = rp
        role = rp.argmax(axis=1)
        k = kinds[order]
        figures = ((k == NUMBER) | (k == MARKER)).any(axis=1)
        at = candidates(role, order, figures)
        outcome = np.full(len(order), 1)  # continue
        if len(at):
            x = start_inputs(feats, rp, order, used_all[order], figures, at)
            outcome[at] = self.starts.proba(x).argmax(axis=1)
        for i, k in zip(order.tolist(), outcome.tolist(), strict=True):
            decisions[i] = DECISIONS[k]
        return role_proba, decisions

    def to_dict(self) -> dict:
        """The parameters as plain JSON (what ``region_model.json`` holds)."""
        return {"kind": "region-model", "roles": ROLES, "decisions": DECISIONS, "role_features": ROLE_FEATURES,
                "start_features": START_FEATURES, "role_model": self.roles.to_dict(),
                "start_model": self.starts.to_dict()}

    @classmethod
    def from_dict(cls, params: dict) -> RegionModel:
        """A model from ``to_dict``'s output; ``ValueError`` when it was fitted on other features."""
        if params.get("role_features") != ROLE_FEATURES or params.get("start_features") != START_FEATURES:
            raise ValueError("region model was fitted on other features; refit it (bench tables --regions --fit)")
        return cls(BoostedTrees.from_dict(params["role_model"]), BoostedTrees.from_dict(params["start_model"]))

    def save(self, path: str | Path) -> None:
        """Write the parameters as one line of JSON (never a pickle: loading it runs no code)."""
        Path(path).write_text(json.dumps(self.to_dict(), separators=(",", ":")) + "\n")

    @classmethod
    def load(cls, path: str | Path | None = None) -> RegionModel:
        """The given parameters, or those shipped with the package; ``ValueError`` as ``from_dict``."""
        if path is None:
            text = resources.files(__package__).joinpath(PARAMS_FILE).read_text()
        else:
            text = Path(path).read_text()
        return cls.from_dict(json.loads(text))


_DEFAULT: RegionModel | None = None
_LOADED = False


def default_region_model() -> RegionModel | None:
    """The shipped region model, loaded once per process and shared (it is only read); None when the
    package ships none (the detector then frames tables by its rules, ``segment.segments``)."""
    global _DEFAULT, _LOADED
    if not _LOADED:
        _LOADED = True
        if resources.files(__package__).joinpath(PARAMS_FILE).is_file():
            _DEFAULT = RegionModel.load()
    return _DEFAULT


def find_tables(decisions: list[str], role_proba: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Tables from the lines' decisions: for each, (span first, first, last, span last), where first..last
    is the table proper and the span adds its titles above and its notes under it.

    A table runs from a start (or a continuing line with no table above) to the last line continuing it.
    Above the first table every line is its title; between two tables, the run of metadata-role lines
    right above the second is its title and the lines before it notes of the first; under the last table
    every line is its notes.
    """
    cores: list[list[int]] = []
    for i, d in enumerate(decisions):
        if d == "start" or (d == "continue" and not cores):
            cores.append([i, i])
        elif d == "continue":
            cores[-1][1] = i
    tops = []
    for k, (a, _) in enumerate(cores):
        gap = [i for i in range(cores[k - 1][1] + 1 if k else 0, a) if decisions[i]]
        top = gap[0] if gap and not k else a
        if k:
            for i in reversed(gap):
                if int(role_proba[i].argmax()) != 0:
                    break
                top = i
        tops.append(top)
    out = []
    for k, (a, b) in enumerate(cores):
        limit = tops[k + 1] if k + 1 < len(cores) else len(decisions)
        tail = [i for i in range(b + 1, limit) if decisions[i]]
        out.append((tops[k], a, b, tail[-1] if tail else b))
    return out


def final_classes(line_classes: list[str], line_proba: np.ndarray, role_proba: np.ndarray, decisions: list[str],
                  tables: list[tuple[int, int, int, int]]) -> list[str]:
    """Every line's class once the tables are known: titles above a table are metadata and lines under it
    notes; inside, a header-role line is a header and a body-role line data, group or derived as the line
    model says (its class after ``classifier.repair``, which reads totals; else its likeliest body class); a line
    inside that the start model kept out (a note between two parts) is a note."""
    out = ["empty" if not d else c for c, d in zip(line_classes, decisions, strict=True)]
    inner = [LINE_CLASSES.index(c) for c in ("header", "group", "data", "derived")]
    names = ("header", "group", "data", "derived")
    # argmax over every line at once (a call per line cost more than the rest of this function)
    roles = role_proba.argmax(axis=1).tolist()
    as_body = line_proba[:, inner[1:]].argmax(axis=1).tolist()
    as_inner = line_proba[:, inner].argmax(axis=1).tolist()
    for top, a, b, bottom in tables:
        for i in range(top, a):
            if out[i] != "empty":
                out[i] = "metadata"
        for i in range(b + 1, bottom + 1):
            if out[i] != "empty":
                out[i] = "notes"
        for i in range(a, b + 1):
            if out[i] == "empty":
                continue
            role = roles[i]
            if decisions[i] == "outside":
                out[i] = "notes"
            elif role == 1:
                out[i] = "header"
            elif role == _BODY:
                # the line model's class after its rules (a labelled sum of its neighbours is derived),
                # else its likeliest body class
                c = line_classes[i]
                out[i] = c if c in _BODY_CLASSES else names[1 + as_body[i]]
            else:  # kept in the table although its role is outside: what the line model says it is inside
                out[i] = names[as_inner[i]]
    return out


def rule_headers(tables: list[tuple[int, int, int, int]], classes: list[str], rule_classes: list[str],
                 text: list[list[str]], kinds: np.ndarray) -> tuple[list[tuple[int, int, int, int]], list[str]]:
    """The learned tables with their header block checked against the rules' line classes
    (``segment.refine_classes``), where the role model is known to fail on real files.

    The rules' header of a table is the run of consecutive header lines (no blank line between) right
    above its first body line. Two cases take it:

    - it ends where the learned header ends and starts higher (below the table above), on lines of two
      cells or more (not a title nor its unit): the role model cut a header block short, taking its first
      lines for a title or for a table of their own;
    - it lies below the learned header (or the learned table has none), inside the table, and no line
      from the table's first line to its end holds a figure: the role model took lines of words above
      the real header (notes, links) into the table.

    Metadata rows of time series ("Unit", "Series ID", "No. Obs" ...) right under a header line are header
    lines though they may hold numbers (``segment.attribute_rows``). ``text``, ``kinds``: the block's cells
    and their ``features.cell_kinds``. Returns the tables with a body, (top, first, last, bottom), and new
    classes; the arguments are left as they are.
    """
    out = attribute_rows(classes, text, kinds)
    figures = ((kinds == NUMBER) | (kinds == MARKER)).any(axis=1)
    found: list[tuple[int, int, int, int]] = []
    tables = _split_after_notes(tables, out, rule_classes, figures, text)
    for top, first, last, bottom in _split_repeated(tables, out, text):
        if not any(c in ("data", "derived") for c in out[first : last + 1]):
            continue  # a header without a body is no table (its lines may be the next one's header)
        limit = found[-1][2] + 1 if found else 0
        learned = _header_run(out, first, last)
        ruled = _rule_run(rule_classes, limit, last)
        if ruled is not None:
            a, b = ruled
            if learned is not None and b == learned[1] and a < learned[0] and all(
                    sum(1 for c in text[i] if c) >= 2 for i in range(a, learned[0])):
                for i in range(a, learned[0]):
                    out[i] = "header"
                top, first = min(top, a), a
            elif learned is not None and learned[0] <= a <= learned[1] < b and all(
                    _numbers_columns(text[i], kinds[i]) for i in range(learned[1] + 1, b + 1)):
                # the rules' header ends lower: its last lines number the columns ("Nr. | | 1 | 2 ... 53",
                # calendar weeks), figures that the role model reads as a body line, so that every column
                # lost its name. Lines of one text above the rules' header are then its titles (a title
                # may be repeated over each printed page's width)
                for i in range(learned[1] + 1, b + 1):
                    out[i] = "header"
                above = [i for i in range(first, a) if out[i] != "empty"]
                if above and all(len({c for c in text[i] if c}) == 1 for i in above):
                    for i in above:
                        out[i] = "metadata"
                    first = a
            elif (learned is None or a > learned[1]) and first <= a and not figures[first : b + 1].any():
                for i in range(first, a):
                    if out[i] != "empty":
                        out[i] = "metadata"
                for i in range(a, b + 1):
                    out[i] = "header"
                first = a
        first = _spaced_header(out, text, kinds, figures, max(top, limit), first, last)
        first = _distinguishing_header(out, text, kinds, limit, first, last)
        first = _titles_over_header(out, text, kinds, first, last)
        top = min(top, first)
        # lines under the body that the rules read as notes (a source, a page footer) which the start
        # model kept in the table are its notes, from the first of them the learned path reads as no body
        # line (a label line ending a sparse body stays in)
        end = last
        while end > first and rule_classes[end] in ("notes", "empty"):
            end -= 1
        cut = next((i for i in range(end + 1, last + 1) if out[i] not in ("empty", *_BODY_CLASSES)), None)
        if cut is not None and out[end] in _BODY_CLASSES:
            end = cut - 1
            while out[end] == "empty":
                end -= 1
            for i in range(end + 1, last + 1):
                if out[i] != "empty":
                    out[i] = "notes"
            last = end
        # a header-role line inside the body that the rules read as body: a section's label line ("Male |
        # MGSM | MGSG" over its block of series, "Denmark: | DA" over its years), not a second header; it
        # is a group line when it holds no figure. The other way round, the table's header line repeated
        # inside its body (a table continued under its header) is a header line
        body = next((i for i in range(first, last + 1) if out[i] in ("data", "derived")), last)
        names = {tuple(text[i]) for i in range(first, body) if out[i] == "header"}
        for i in range(body + 1, last + 1):
            if out[i] == "header" and rule_classes[i] in _BODY_CLASSES:
                out[i] = rule_classes[i] if figures[i] else "group"
            elif out[i] in _BODY_CLASSES and rule_classes[i] == "header" and tuple(text[i]) in names:
                out[i] = "header"
        found.append((top, first, last, bottom))
    return _rule_titles(_headless_continued(found, out, text, kinds), out, rule_classes), out


def _spaced_header(classes: list[str], text: list[list[str]], kinds: np.ndarray, figures: np.ndarray, top: int,
                   first: int, last: int) -> int:
    """The table's first line once the header lines above its learned header are back: lines of two cells
    or more, words over the columns of the body's figures among them, with only blank lines between them
    and the header ("Country | FIPS Code | Market capitalization" two lines above "| | 1990 | 1995", as the
    Statistical Abstract spaces its headers), which the role model read as titles. ``classes`` is changed
    in place."""
    head = _header_run(classes, first, last)
    if head is None or head[0] != first:
        return first
    body = [i for i in range(head[1] + 1, last + 1) if classes[i] in ("data", "derived") and figures[i]]
    if not body:
        return first
    columns = ((kinds[body] == NUMBER) | (kinds[body] == MARKER)).any(axis=0)
    stub = int((kinds[body] != EMPTY).any(axis=0).argmax())  # the body's first column
    n_header = sum(1 for c in classes[first : head[1] + 1] if c == "header")
    i = first - 1
    while i >= top and n_header < _MAX_HEADER:
        if classes[i] == "empty":
            i -= 1
            continue
        if classes[i + 1] != "empty":
            break  # spaced: a line right on top of the header is the rules' to judge (words over it are a title)
        cells = kinds[i] != EMPTY
        lead = text[i][int(cells.argmax())]
        # not a title with its number ("Weinverbrauch | T 7.6.3"), a source, nor a line of links ("Related
        # Information: | Summary Publication | Explanatory Notes")
        # a header line names the stub or two columns of figures (a unit line names one: "bedragen in Euro's
        # per inwoner | inwoners")
        if classes[i] != "metadata" or cells.sum() < 2 or not (cells[stub] or (cells & columns).sum() >= 2) \
                or not (cells & columns).any() or figures[i] \
                or _SOURCE_LINE.match(lead) or lead.endswith(":") or any(map(_NUMBERED_TITLE.match, text[i])) \
                or len({c for c in text[i] if c}) < 2:  # a title over merged cells, its text in each
            break
        classes[i] = "header"
        first, n_header = i, n_header + 1
        i -= 1
    return first


def _headless_continued(tables: list[tuple[int, int, int, int]], classes: list[str], text: list[list[str]],
                        kinds: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Tables without a header line that continue the table above: its body goes on after blank lines,
    perhaps under a section's label ("CHANGE FROM PREVIOUS YEAR" over the same columns of years, the
    United States above its countries), its figures within the columns of the body above and its labels
    in the same first column. The start model begins a table there; without its header none of its
    observations has a column. A table whose one header line is shaped as its rows (``_row_shaped``:
    "Argentina | AR | 0.0 | 1.0 ..." after a blank line under the United States) is such a table too: that
    "header" is its first row. The lines between become the section's group line. ``classes`` is changed
    in place."""
    out: list[tuple[int, int, int, int]] = []
    for top, first, last, bottom in tables:
        run = _header_run(classes, first, last) if out else None
        as_rows = [run[0]] if run is not None and run[0] == run[1] and _row_shaped(run[0], classes, text, kinds,
                                                                                 last) else []
        if out and (run is None or as_rows):
            p_top, p_first, p_last, _ = out[-1]
            above = [i for i in range(p_first, p_last + 1) if classes[i] in ("data", "derived")]
            below = [i for i in range(first, last + 1) if classes[i] in ("data", "derived") or i in as_rows]
            between = [i for i in range(p_last + 1, first) if classes[i] != "empty"]
            if above and below and _header_run(classes, p_first, p_last) is not None and len(between) <= 1:
                figures_above = ((kinds[above] == NUMBER) | (kinds[above] == MARKER)).any(axis=0)
                figures_below = ((kinds[below] == NUMBER) | (kinds[below] == MARKER)).any(axis=0)
                stub_above = int((kinds[above] != EMPTY).any(axis=0).argmax())
                stub_below = int((kinds[below] != EMPTY).any(axis=0).argmax())
                lone = all(int((kinds[i] != EMPTY).sum()) == 1 and kinds[i, stub_above] != EMPTY
                           and kinds[i, stub_above] not in (NUMBER, MARKER) for i in between)  # a section's label
                if figures_below.any() and not (figures_below & ~figures_above).any() \
                        and stub_above == stub_below and lone:
                    for i in between:
                        classes[i] = "group"
                    for i in as_rows:
                        classes[i] = "data"
                    out[-1] = (p_top, p_first, last, bottom)
                    continue
        out.append((top, first, last, bottom))
    return out


def _row_shaped(i: int, classes: list[str], text: list[list[str]], kinds: np.ndarray, last: int) -> bool:
    """Whether header line ``i`` reads as the body line under it: a label first, figures (none of them a
    year, as a header of years would hold) in exactly the columns where the next body line has them."""
    nxt = next((k for k in range(i + 1, last + 1) if classes[k] in ("data", "derived")), None)
    if nxt is None:
        return False
    line, below = kinds[i], kinds[nxt]
    filled = np.flatnonzero(line != EMPTY)
    if not len(filled) or line[filled[0]] != TEXT:
        return False
    figures = (line == NUMBER) | (line == MARKER)
    if not figures.any() or not np.array_equal(figures, (below == NUMBER) | (below == MARKER)):
        return False
    return not any(_YEAR.fullmatch(text[i][j].strip()) for j in np.flatnonzero(figures).tolist())


def _distinguishing_header(classes: list[str], text: list[list[str]], kinds: np.ndarray, top: int, first: int,
                           last: int) -> int:
    """The table's first line once the spanning header lines that tell its columns apart are back: when
    columns of figures share their header path ("2001 ... 2008 | 2001 ... 2008"), lines of words (and
    years) above the header, from the table above's end on, whose spans, carried right, give the columns
    more distinct paths are header lines ("Annual hires | Annual separations" over the two runs of years),
    as are the lines between them and the header ("Industry" over the stub, "Manpower | Manpower"). The
    role model reads such lines, spaced and over few cells, as titles, group lines or a table without a body. Stops
    at a title with its number, a source, a line ending with ":" or a line with a figure other than a
    year. ``classes`` is changed in place."""
    head = _header_run(classes, first, last)
    if head is None or head[0] != first:
        return first
    lines = [i for i in range(head[1] + 1, last + 1) if classes[i] in ("data", "derived")]
    numeric = (kinds[lines] == NUMBER) | (kinds[lines] == MARKER)
    columns = np.flatnonzero(numeric.any(axis=0)).tolist()
    if not columns:
        return first

    def words(i: int) -> bool:  # no figure but years ("2008 | 2009" over the columns)
        row = (kinds[i] == NUMBER) | (kinds[i] == MARKER)
        return not any(not _YEAR.match(text[i][j]) for j in np.flatnonzero(row).tolist())

    def distinct(lines: list[int]) -> int:
        return len(set(header_paths([text[i] for i in lines], columns).values()))

    # (a header line of figures is a body line that _header_block reads so)
    headers = [i for i in range(head[0], head[1] + 1) if classes[i] == "header" and words(i)]
    known = distinct(headers)
    pending: list[int] = []
    i = first - 1
    while i >= top and known < len(columns) and len(headers) + len(pending) < _MAX_HEADER:
        if classes[i] == "empty":
            i -= 1
            continue
        cells = np.flatnonzero(kinds[i] != EMPTY)
        lead = text[i][int(cells[0])]
        if classes[i] not in ("metadata", "header", "group") or not words(i) or _SOURCE_LINE.match(lead) \
                or lead.endswith(":") or any(map(_NUMBERED_TITLE.match, text[i])) \
                or (len(cells) > 1 and (np.diff(cells) == 1).all() and len({text[i][j] for j in cells}) == 1):
            break  # (the last: a title over merged cells, its text in each)
        pending.insert(0, i)
        if cells[-1] >= columns[0]:  # over the columns of figures: a span, if it tells them apart
            n = distinct(pending + headers)
            if n > known:
                for k in pending:
                    classes[k] = "header"
                headers, pending, known, first = pending + headers, [], n, i
        i -= 1
    return first


def _titles_over_header(classes: list[str], text: list[list[str]], kinds: np.ndarray, first: int,
                        last: int) -> int:
    """The table's first line once the header lines on top of its header block that name no column are
    its titles: one text alone, either copied into every cell of the table's width (a title over merged
    cells: "CSII - Cardiovascular Systems, Inc." over "Date | Open | High ...") or in the table's last
    column only, the table being three columns wide or more (a unit: "thousands", "Percentage of
    households" over the last column of a wider header line). A header line under them must name two
    columns or more, else they are the header. Texts without a letter (a year spanning its columns, a
    rule "- | - | -") name columns or draw lines, and stay. ``classes`` is changed in place."""
    head = _header_run(classes, first, last)
    if head is None or head[0] != first:
        return first
    lines = [i for i in range(head[0], head[1] + 1) if classes[i] == "header"]

    def distinct(i: int) -> set[str]:
        return {text[i][j].strip() for j in np.flatnonzero(kinds[i] != EMPTY).tolist()}

    if len(lines) < 2 or len(distinct(lines[0])) != 1:
        return first  # (most tables: the body's columns below are not needed)
    body = [i for i in range(head[1] + 1, last + 1) if classes[i] in _BODY_CLASSES]
    if not body:
        return first
    used = (kinds[body] != EMPTY).any(axis=0)
    c0, c1 = int(used.argmax()), len(used) - 1 - int(used[::-1].argmax())  # the body's columns

    def title(i: int) -> bool:
        cells = np.flatnonzero(kinds[i] != EMPTY)
        texts = distinct(i)
        if len(texts) != 1 or not any(ch.isalpha() for ch in next(iter(texts))):
            return False
        if len(cells) >= 2:  # copied into each merged cell, over the whole width
            return cells[0] <= c0 + 1 and cells[-1] >= c1 and cells[-1] - cells[0] + 1 == len(cells)
        return int(cells[0]) == c1 and c1 - c0 >= 2

    k = 0
    while k < len(lines) - 1 and title(lines[k]):
        k += 1
    if k == 0 or not any(len(distinct(i)) >= 2 for i in lines[k:]):
        return first
    for i in range(first, lines[k]):
        if classes[i] != "empty":
            classes[i] = "metadata"
    return lines[k]


def _rule_titles(tables: list[tuple[int, int, int, int]], classes: list[str],
                 rule_classes: list[str]) -> list[tuple[int, int, int, int]]:
    """The lines right above a table that the learned path gave the table above as notes (or made a table
    of their own) and the rules read as a title (a one-cell line after a blank line, over a header:
    "Diploma" over "Sex | Value") are the table's title. ``classes`` is changed in place."""
    out = list(tables)
    for k in range(len(out)):
        top, first, last, bottom = out[k]
        prev = out[k - 1] if k else (-1, -1, -1, -1)
        i = first - 1
        # (a header line here is one the role model made a table of its own, dropped for want of a body)
        while i > prev[2] and (classes[i] == "empty" or (classes[i] in ("notes", "metadata", "header")
                                                          and rule_classes[i] == "metadata")):
            if classes[i] != "empty":
                classes[i] = "metadata"
                top = min(top, i)
            i -= 1
        if k and top < out[k][0]:
            end = top - 1
            while end > prev[2] and classes[end] == "empty":
                end -= 1
            out[k - 1] = (prev[0], prev[1], prev[2], min(prev[3], end))
            out[k] = (top, first, last, bottom)
    return out


def _split_after_notes(tables: list[tuple[int, int, int, int]], classes: list[str], rule_classes: list[str],
                       figures: np.ndarray, text: list[list[str]]) -> list[tuple[int, int, int, int]]:
    """Tables cut where the rules see one end and the next begin: after body lines with figures, lines the
    rules read as notes, among them a source or note ("Source: ...") or a table's title ("Table 325. ..."),
    then a header block (a header line, then up to a few header lines or lines of words without a figure)
    over body lines with figures. The start model read such a page of two tables (PDFs) as one; sparse
    bodies, whose label lines the rules may call notes, hold no source line between them. The notes are
    the upper table's; the lines of the gap right above the header that the rules read as a title, or
    that read "Table 325. ...", are the lower one's title. ``classes`` is changed in place."""
    out = []
    # body lines with a figure up to each line (exclusive), by the rules
    seen = np.concatenate([[0], np.cumsum([c in ("data", "derived") for c in rule_classes] & figures)])
    for top, first, last, bottom in tables:
        i = first
        while i <= last:
            if rule_classes[i] != "notes" or seen[i] == seen[first]:
                i += 1
                continue
            end = i  # the run of notes (and blank lines)
            while end + 1 <= last and rule_classes[end + 1] in ("notes", "metadata", "empty"):
                end += 1
            head = end + 1
            b = head  # the first body line with a figure under the header; lines between are words
            while b <= last and (rule_classes[b] in ("header", "empty") or (
                    rule_classes[b] in _BODY_CLASSES and not figures[b])):
                b += 1
            gap = [c for j in range(i, head) for c in text[j][:1]]
            if (head > last or rule_classes[head] != "header" or b > last or rule_classes[b] not in ("data", "derived")
                    or b - head > _MAX_HEADER
                    or not any(_SOURCE_LINE.match(c) or _TABLE_TITLE.match(c.replace(" ", "")) for c in gap)):
                i = end + 1
                continue
            core_end = i - 1
            while core_end > first and classes[core_end] in ("empty", "notes"):
                core_end -= 1
            title = head
            while title - 1 >= i and (rule_classes[title - 1] in ("metadata", "empty")
                                      or _TABLE_TITLE.match("".join(text[title - 1]).replace(" ", ""))):
                title -= 1
            while classes[title] == "empty":
                title += 1
            for j in range(i, title):
                if classes[j] != "empty":
                    classes[j] = "notes"
            for j in range(title, head):
                if classes[j] != "empty":
                    classes[j] = "metadata"
            for j in range(head, b):
                if classes[j] != "empty":
                    classes[j] = "header"
            notes_end = title - 1
            while notes_end > core_end and classes[notes_end] == "empty":
                notes_end -= 1
            out.append((top, first, core_end, notes_end))
            top, first = title, head
            i = b
        out.append((top, first, last, bottom))
    return out


def _split_repeated(tables: list[tuple[int, int, int, int]], classes: list[str],
                    text: list[list[str]]) -> list[tuple[int, int, int, int]]:
    """Tables cut where their header line comes again after a blank line (or after a blank line and a
    one-cell title) with a body under it: the next table of a stack laid out like the first, which the
    start model read as more of the same table. ``classes`` is changed in place: the repeated lines become
    header lines, their titles metadata."""
    out = []
    for top, first, last, bottom in tables:
        head = _header_run(classes, first, last)
        if head is None:
            out.append((top, first, last, bottom))
            continue
        names = {tuple(text[i]) for i in range(head[0], head[1] + 1) if classes[i] == "header"}
        for i in range(head[1] + 1, last + 1):
            if tuple(text[i]) not in names:
                continue
            after_blank = classes[i - 1] == "empty"
            after_title = i >= 2 and classes[i - 2] == "empty" and sum(1 for c in text[i - 1] if c) == 1
            if not (after_blank or after_title) or not any(c in ("data", "derived") for c in classes[i + 1 : last + 1]):
                continue
            new_top = i if after_blank else i - 1
            end = new_top - 1
            while end > first and classes[end] == "empty":
                end -= 1
            # the notes under the upper table ("Source: ...") are its notes, not part of it
            core_end = end
            while core_end > first and classes[core_end] in ("empty", "notes"):
                core_end -= 1
            out.append((top, first, core_end, end))
            classes[i] = "header"
            if new_top < i:
                classes[new_top] = "metadata"
            top, first = new_top, i
        out.append((top, first, last, bottom))
    return out


def _numbers_columns(row: list[str], kinds: np.ndarray) -> bool:
    """Whether a line's figures number its columns: 1, 2, 3 ... left to right (three at least), words
    around them allowed ("Nr. | | unter … Jahren | 1 | 2 ... 53")."""
    figures = [row[j] for j in np.flatnonzero((kinds == NUMBER) | (kinds == MARKER)).tolist()]
    if len(figures) < 3 or not all(c.isdigit() for c in figures):
        return False
    numbers = [int(c) for c in figures]
    return all(b == a + 1 for a, b in itertools.pairwise(numbers))


def _header_run(classes: list[str], first: int, last: int) -> tuple[int, int] | None:
    """First and last header line above the first body line of lines first..last, or None."""
    lines = []
    for i in range(first, last + 1):
        if classes[i] in ("data", "derived", "group"):
            break
        if classes[i] == "header":
            lines.append(i)
    return (lines[0], lines[-1]) if lines else None


def _rule_run(classes: list[str], top: int, last: int) -> tuple[int, int] | None:
    """The run of consecutive header lines right above the first body line of lines top..last (blank
    lines between the run and the body allowed), or None."""
    body = next((i for i in range(top, last + 1) if classes[i] in ("data", "derived")), None)
    if body is None:
        return None
    b = body - 1
    while b >= top and classes[b] == "empty":
        b -= 1
    if b < top or classes[b] != "header":
        return None
    a = b
    while a - 1 >= top and classes[a - 1] == "header":
        a -= 1
    return a, b
