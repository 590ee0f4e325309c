"""Per-line features for line classification, chosen to carry over to sheets nobody has seen.

Everything here describes a line by its shape (how full, how numeric, where in the sheet, how it relates
to the numeric block and to its neighbours) and by a handful of words that statistics offices use in
every language of their publications ("Total", "Source", "Note"). Nothing refers to a particular table.
The aggregation check (is this cell the sum of the cells just below or above it?) follows the idea of
Strudel (Jiang et al., EDBT 2021) that derived lines are recognisable by arithmetic, not only by words.
"""

from __future__ import annotations

import itertools
import re
import string
from collections.abc import Callable

import numpy as np

from .values import SheetCells, marker_status, rounding_unit

# Cell kinds
EMPTY, NUMBER, MARKER, TEXT, MARK = 0, 1, 2, 3, 4  # MARK: a bare footnote mark such as "\2" or "(1)"

_FOOTNOTE_ONLY = re.compile(r"^(?:\\\d+|\[\w{1,3}\]|\(\d{1,2}\)|[\u00b9\u00b2\u00b3\u2070-\u2079]+)$")
_MARK_FIRST = frozenset("\\[(\u00b9\u00b2\u00b3" + "".join(map(chr, range(0x2070, 0x207A))))  # _FOOTNOTE_ONLY starts
_YEAR = re.compile(r"^(1[89]\d\d|20\d\d)(?:\.0)?$")
_YEAR_TEXTS = frozenset(f"{y}{tail}" for y in range(1800, 2100) for tail in ("", ".0"))  # _YEAR's ASCII matches
# An ASCII text with a digit that holds three letters in a row, or a letter (not an exponent's e) before a
# digit, parse_value reads as a label when it holds no backslash, "[" or "+/-": without those, the footnote
# marks it strips at the ends never take a digit (nor the letters before one) and take at most two letters
# after a space or one after a digit, so such letters stay in front of its number pattern, which admits
# none, and no marker holds a digit. Labels with figures are common (titles, notes, "Rape1", "EU15").
_WORDY = re.compile(r"[A-Za-z]{3}|[A-DF-Za-df-z].*?[0-9]", re.S)
_ASCII_WORD = re.compile(r"[\x00-/:-\x7f]+")  # ASCII without a digit
# values.PLAIN_NUMBER in ASCII digits: a number, plain or with grouping commas, that float() reads without them
_ASCII_NUMBER = re.compile(r"[+-]?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?")
_YEARISH = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
# _YEARISH without its word boundaries: matched wherever it is, and re skips to the digits 1 and 2 to try it
# (a pattern opening with a boundary is tried at every position); _YEARISH then only on the texts it finds
_YEAR_DIGITS = re.compile(r"(1[89]\d\d|20\d\d)")
_TOTAL = re.compile(
    r"\b(total|totals|all|sum|subtotal|overall|insgesamt|gesamt|zusammen|ensemble|totale?|totaal|summe)\b", re.I
)
_AVERAGE = re.compile(r"\b(average|mean|median|per capita|rate|percent|durchschnitt|moyenne)\b", re.I)
_NOTES = re.compile(
    r"^(\W{0,3}(source|sources|note|notes|nota|notes?:|footnotes?|quelle|fuente|remarks?)\b|\\\d|\*|\(\d+\)\s|"
    r"\[\d+\]|\d{1,2}[\s.)]\s*[A-Z]|[a-z]\s{1,2}[A-Z]|(see|includes|excludes|represents|data are|based on|"
    r"figures|for|in|as of|beginning|prior to|except|minus sign)\b)",
    re.I,
)
_SOURCE = re.compile(r"\b(source|sources|quelle|fuente|bureau|office|department|ministry|institute)\b", re.I)
_TITLE = re.compile(r"^(table|tab\.|tabelle|tableau|cuadro|figure|chart)\s*[\w.-]*", re.I)
_UNIT = re.compile(r"\((in |millions?|billions?|thousands?|\d[\d,]*\)|dollars|percent|number|%|rate|per )", re.I)
_CONTINUED = re.compile(r"\b(continued|cont\.|concluded)\b", re.I)
# The patterns above that hold lower-case words only, without re.I, for lower-cased texts (see _Caseless)
_WITHOUT_IGNORECASE = {p: re.compile(p.pattern) for p in (_TOTAL, _AVERAGE, _SOURCE, _CONTINUED)}

BASE_FEATURES = [
    "fill",  # non-empty cells / sheet width
    "n_cells_log",
    "num_share",
    "marker_share",
    "text_share",
    "year_share",
    "mark_share",
    "starts_col0",
    "single_cell",
    "first_is_text",
    "first_is_number",
    "first_len_log",
    "text_len_log",
    "ends_colon",
    "kw_total",
    "kw_average",
    "kw_notes",
    "kw_source",
    "kw_title",
    "kw_unit",
    "kw_continued",
    "upper_share",
    "yearish_text",
    "first_col_rel",
    "last_col_rel",
    "indent",
    "text_in_numeric_cols",  # text cells where the sheet's columns are numeric: header-like
    "numeric_cols_empty",  # numeric columns left empty: group- or note-like
    "sum_below",  # share of numbers that are the sum of a run of numbers just below
    "sum_above",
    "long_text",
    "first_col_numeric_share",
]
CONTEXT_FEATURES = [
    "rel_pos",
    "rank_rel",
    "is_first",
    "is_last",
    "before_numeric",
    "after_numeric",
    "dist_first_numeric",
    "dist_last_numeric",
    "blank_above",
    "blank_below",
    "sheet_width_log",
    "sheet_numeric_lines",
    "since_numeric",  # non-empty lines since the previous numeric line: local, so a second table's
    "until_numeric",  # header looks like a header even below the first table
    "year_header",  # a row of years above numbers, the commonest header of time series
    "total_and_sum",
    "sum_any",
]
_NEIGHBOUR = ["fill", "num_share", "text_share", "single_cell", "kw_notes", "first_is_text", "kw_total", "year_share"]
NEIGHBOUR_FEATURES = [f"{side}{d}_{name}" for side in ("prev", "next") for d in (1, 2) for name in _NEIGHBOUR] + [
    f"{side}_blank_gap" for side in ("prev", "next")
]
FEATURE_NAMES = BASE_FEATURES + CONTEXT_FEATURES + NEIGHBOUR_FEATURES
# How a line sits among its neighbours, for the region model (``regions``): a table's lines share their
# columns and the kinds in them, a sparse body's label-only lines too (their labels stand where the
# body's labels stand), while a title or a new table's header breaks the pattern; a next table's header
# often repeats the first's. Not among the line model's features: ``sheet_features(layout=True)``.
LAYOUT_FEATURES = [
    "layout_prev",  # Jaccard of the non-empty columns with the previous non-empty line
    "layout_next",
    "kinds_prev",  # share of the two lines' columns holding the same kind (number, text) in both
    "kinds_next",
    "labels_only",  # no number, every cell in a column of labels of the body (a label line of a body)
    "repeats_first",  # share of the cells repeating the sheet's first line, column by column
    "repeats_above",  # ... repeating the nearest line of words above (two cells or more, no number)
]


_B = {name: k for k, name in enumerate(BASE_FEATURES)}
# Features of a line that come from its words rather than from its cells' kinds (see _text_features)
_TEXT_FEATURES = [
    "year_share",  # as a count of year cells, which _base_features divides by the line's cells
    "first_len_log",
    "text_len_log",
    "ends_colon",
    "kw_total",
    "kw_average",
    "kw_notes",
    "kw_source",
    "kw_title",
    "kw_unit",
    "kw_continued",
    "upper_share",
    "yearish_text",
    "indent",
    "long_text",
]
_TEXT_COLUMNS = [_B[name] for name in _TEXT_FEATURES]


def _base_features(
    rows: list[list[str]],
    text: list[list[str]],
    kinds: np.ndarray,
    values: np.ndarray,
    numeric_cols: np.ndarray,
    n_numeric_cols: int,
    per_line: np.ndarray,
) -> np.ndarray:
    """BASE_FEATURES of every line (zeros for blank lines, and for the run sums, which the caller fills).

    Counts come from the kinds grid for all lines at once (``per_line``: ``_kind_counts(kinds)``); only the
    word features loop over lines.
    """
    n = len(rows)
    width = max(kinds.shape[1], 1)
    base = np.zeros((n, len(BASE_FEATURES)))
    nonempty = kinds != EMPTY
    n_cells = kinds.shape[1] - per_line[:, EMPTY]
    lines = np.flatnonzero(n_cells > 0)
    if len(lines) == 0:
        return base
    k = kinds[lines]
    n_cells = n_cells[lines]
    counts = per_line[lines]
    in_numeric_cols = _kind_counts(k[:, numeric_cols])
    safe = n_cells  # non-zero on non-blank lines
    first_col = nonempty[lines].argmax(axis=1)
    last_col = width - 1 - nonempty[lines][:, ::-1].argmax(axis=1)
    first_kind = k[np.arange(len(lines)), first_col]

    words = _text_features(rows, text, kinds, values, lines, first_col)
    # The non-blank lines' features side by side, then scattered into ``base`` once (a fancy assignment per
    # feature cost more than computing most of them)
    block = np.zeros((len(lines), len(BASE_FEATURES)))
    block[:, _TEXT_COLUMNS] = words
    # The three raw counts and lengths, scaled
    block[:, _B["year_share"]] = words[:, 0] / safe
    block[:, _B["first_len_log"]] = np.log1p(words[:, 1])
    block[:, _B["text_len_log"]] = np.log1p(words[:, 2])

    block[:, _B["fill"]] = n_cells / width
    block[:, _B["n_cells_log"]] = np.log1p(n_cells)
    block[:, _B["num_share"]] = counts[:, NUMBER] / safe
    block[:, _B["marker_share"]] = counts[:, MARKER] / safe
    block[:, _B["text_share"]] = counts[:, TEXT] / safe
    block[:, _B["mark_share"]] = counts[:, MARK] / safe
    block[:, _B["starts_col0"]] = first_col == 0
    block[:, _B["single_cell"]] = n_cells == 1
    block[:, _B["first_is_text"]] = first_kind == TEXT
    block[:, _B["first_is_number"]] = first_kind == NUMBER
    block[:, _B["first_col_rel"]] = first_col / width
    block[:, _B["last_col_rel"]] = last_col / width
    block[:, _B["text_in_numeric_cols"]] = in_numeric_cols[:, TEXT] / n_numeric_cols
    block[:, _B["numeric_cols_empty"]] = in_numeric_cols[:, EMPTY] / n_numeric_cols
    block[:, _B["first_col_numeric_share"]] = (k[:, 0] == NUMBER) | (k[:, 0] == MARKER)
    base[lines] = block
    return base


_DIGITS = frozenset(string.digits)
_N_KINDS = 5


def _kind_counts(kinds: np.ndarray) -> np.ndarray:
    """How many cells of each kind every row of ``kinds`` holds: (rows, kinds) from one bincount, the same
    integers as a ``(kinds == kind).sum(axis=1)`` per kind (two numpy calls per kind on a sheet's few
    lines cost more)."""
    rows = len(kinds)
    at = (np.arange(rows) * _N_KINDS)[:, None] + kinds
    return np.bincount(at.ravel(), minlength=rows * _N_KINDS).reshape(rows, _N_KINDS)


def _text_features(rows: list[list[str]], text: list[list[str]], kinds: np.ndarray, values: np.ndarray,
                   lines: np.ndarray, first_col: np.ndarray) -> np.ndarray:
    """The _TEXT_FEATURES of the non-blank ``lines`` (counts and lengths raw; the caller scales them).

    Built a feature at a time over all lines: each pattern is mapped over the list of lines' texts in C,
    rather than a Python call per line and pattern.
    """
    fc = first_col.tolist()
    line_list = lines.tolist()
    line_text = [text[i] for i in line_list]
    firsts = [t[c] for t, c in zip(line_text, fc, strict=True)]
    raw_firsts = [rows[i][c] for i, c in zip(line_list, fc, strict=True)]
    joined = [" ".join(filter(None, t)) for t in line_text]
    # Words are only in text cells: numbers and markers cannot hold "source" or "continued"
    text_cells = kinds[lines] == TEXT
    is_text = text_cells.tolist()
    words = [" ".join(itertools.compress(t, m)) for t, m in zip(line_text, is_text, strict=True)]
    out = np.zeros((len(line_list), len(_TEXT_FEATURES)))
    # Year cells ("2008", "2008.0") are numbers of 1800-2099: only lines holding one are looked at cell by cell
    v = values[lines]
    with np.errstate(invalid="ignore"):
        maybe_year = ((v >= 1800) & (v < 2100) & (v == np.floor(v))).any(axis=1)
    for pos in np.flatnonzero(maybe_year).tolist():
        row = line_text[pos]
        out[pos, 0] = sum(map(_YEAR_TEXTS.__contains__, row))  # what _YEAR matches in ASCII
        if not "".join(row).isascii():  # digits of other scripts, which \d reads too
            out[pos, 0] += sum(1 for t in row if not t.isascii() and (len(t) == 4 or len(t) == 6) and t[0] in "12"
                               and _YEAR.match(t))
    out[:, 1] = np.fromiter(map(len, firsts), float, len(firsts))
    # the text cells' lengths: their words less the spaces between them (text cells are never empty)
    n_text = text_cells.sum(axis=1)
    out[:, 2] = np.fromiter(map(len, words), float, len(words)) - np.maximum(n_text - 1, 0)
    out[:, 3] = [f.endswith((":", "--", "\u2014")) for f in firsts]
    first_words, line_words = _Caseless(firsts), _Caseless(words)
    out[:, 4], out[:, 5] = first_words.found_each(_TOTAL, _AVERAGE)
    out[:, 6] = _found(_NOTES.match, firsts)
    out[:, 8] = _found(_TITLE.match, firsts)
    out[:, 9] = _found(_UNIT.search, joined)
    out[:, 7], out[:, 10] = line_words.found_each(_SOURCE, _CONTINUED)
    out[:, 11] = _upper_shares(joined)
    out[:, 12] = _found(_YEARISH.search, words, _YEAR_DIGITS)
    out[:, 13] = [min(len(r) - len(r.lstrip()), 8) / 8 for r in raw_firsts]
    out[:, 14] = [len(j) > 60 for j in joined]
    return out


def _found(test: Callable[[str], object], texts: list[str], wider: re.Pattern | None = None) -> np.ndarray:
    """Whether ``test`` finds something in each text; ``wider``: a pattern that finds something in every
    text ``test`` does, cheaper to search, so that ``test`` runs on the texts it finds only."""
    if wider is None:
        return np.fromiter(map(bool, map(test, texts)), bool, len(texts))
    out = np.zeros(len(texts), dtype=bool)
    for k in np.flatnonzero(_found(wider.search, texts)).tolist():
        out[k] = bool(test(texts[k]))
    return out


class _Caseless:
    """Texts to search with a case-insensitive pattern of lower-case words (_TOTAL, _SOURCE...).

    Python's re is several times slower with re.I; an ASCII text matches such a pattern exactly when its
    lower-case form matches the pattern without re.I, so only the few other texts are searched with it.
    """

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.lowered = list(map(str.lower, texts))
        self.other = np.flatnonzero(~np.fromiter(map(str.isascii, texts), bool, len(texts))).tolist()

    def found_each(self, first: re.Pattern, second: re.Pattern) -> tuple[np.ndarray, np.ndarray]:
        """``found`` of both patterns: the texts searched once for any of the two patterns' words without
        their word boundaries (``_loose_either``; what it misses neither pattern finds), the few that
        hold one then for each pattern."""
        loose = _LOOSE_EITHER.get((first, second))
        if loose is None:
            loose = _LOOSE_EITHER[first, second] = _loose_either(first, second)
        out = np.zeros(len(self.texts), dtype=bool), np.zeros(len(self.texts), dtype=bool)
        for k in np.flatnonzero(_found(loose.search, self.lowered)).tolist():
            out[0][k] = _WITHOUT_IGNORECASE[first].search(self.lowered[k]) is not None
            out[1][k] = _WITHOUT_IGNORECASE[second].search(self.lowered[k]) is not None
        for k in self.other:
            out[0][k] = first.search(self.texts[k]) is not None
            out[1][k] = second.search(self.texts[k]) is not None
        return out


_LOOSE_EITHER: dict[tuple[re.Pattern, re.Pattern], re.Pattern] = {}  # the patterns found_each searched for
_WORD_LIST = re.compile(r"\\b\((.*)\)\\b")  # a pattern of words between word boundaries: "\b(a|b)\b"


def _loose_either(first: re.Pattern, second: re.Pattern) -> re.Pattern:
    """One flat alternation of the two keyword patterns' words (lower case), without the word boundaries:
    it matches wherever either pattern does (dropping an assertion only widens a pattern), and, every
    alternative starting with a letter, re skips ahead to the positions holding one of their first
    letters, where a pattern opening with a boundary is tried at every position (3x slower on lines)."""
    words = [_WORD_LIST.fullmatch(_WITHOUT_IGNORECASE[p].pattern) for p in (first, second)]
    if None in words:
        raise ValueError("found_each takes patterns of words between word boundaries")
    return re.compile("|".join(m.group(1) for m in words))


_ASCII_LETTERS = string.ascii_letters.encode()
# ASCII capitals to "A", small letters to "a"; every other byte but the NUL that parts the texts deleted
_LETTER_CASE = bytes.maketrans(_ASCII_LETTERS, b"a" * 26 + b"A" * 26)
_NOT_LETTERS = bytes(c for c in range(1, 128) if c not in _ASCII_LETTERS)
_ASCII_BUT_NUL = re.compile(r"[\x01-\x7f]+")


def _case_share(text: str) -> float:
    """Share of upper-case letters among the letters of a text (0 without letters), by ``str`` methods."""
    letters = [c for c in text if c.isalpha()]
    return sum(map(str.isupper, letters)) / len(letters) if letters else 0.0


def _upper_shares(joined: list[str]) -> np.ndarray:
    """``_case_share`` of each text, counted in C rather than character by character in Python.

    All texts are joined, parted by NULs: their ASCII characters are translated at once as bytes (capitals
    to "A", small letters to "a", the rest deleted), and the few others (accented letters, dashes) are
    kept apart by deleting the ASCII ones, then read one by one. A text holding a NUL itself is counted
    alone.
    """
    blob = "\0".join(joined)
    if blob.count("\0") >= len(joined):
        return np.array(list(map(_case_share, joined)), dtype=float).reshape(len(joined))
    ascii_parts = blob.encode("ascii", "ignore").translate(_LETTER_CASE, _NOT_LETTERS).split(b"\0")
    shares = [part.count(b"A") / len(part) if part else 0.0 for part in ascii_parts]
    if not blob.isascii():
        for k in itertools.compress(range(len(joined)), map(_not_ascii, joined)):
            others = [c for c in _ASCII_BUT_NUL.sub("", joined[k]) if c.isalpha()]
            letters, capitals = len(ascii_parts[k]) + len(others), ascii_parts[k].count(b"A")
            capitals += sum(map(str.isupper, others))
            shares[k] = capitals / letters if letters else 0.0
    return np.array(shares, dtype=float)


def _not_ascii(text: str) -> bool:
    return not text.isascii()


def cell_kinds(
    rows: list[list[str]], decimal: str | None, cells: SheetCells | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Kind of every cell and its numeric value (NaN when not a number).

    Each distinct text is classified once and the grid is filled by indexing: sheets repeat texts a lot.
    """
    if cells is None:
        cells = SheetCells(rows, decimal)
    n = len(cells.text)
    width = max((len(r) for r in cells.text), default=0)
    text = cells.text
    if any(len(r) != width for r in text):
        text = [r + [""] * (width - len(r)) for r in text]
    # Codes of the flattened grid through dict lookups mapped in C (sheets are mostly empty cells)
    flat = list(itertools.chain.from_iterable(text))
    texts = list(dict.fromkeys(itertools.chain(("",), flat)))  # code 0: the empty cell
    code_of = dict(zip(texts, range(len(texts)), strict=True))
    codes = np.fromiter(map(code_of.__getitem__, flat), dtype=np.intp, count=len(flat)).reshape(n, width)
    kind_of = np.full(len(texts), NUMBER, dtype=np.int8)
    value_of = np.full(len(texts), np.nan)
    kind_of[0] = EMPTY
    # Most distinct texts are plain or grouped numbers in ASCII digits ("3929214.0", "-12", "1,234.5"):
    # when the decimal is not a comma parse_value reads them as float() does once the commas are gone, so
    # they are picked by one pattern mapped over the texts and converted by one float() map, both in C
    quick = np.zeros(len(texts), dtype=bool)
    if cells.decimal != ",":
        quick = np.fromiter(map(bool, map(_ASCII_NUMBER.fullmatch, texts)), dtype=bool, count=len(texts))
        if quick.any():
            numbers = " ".join(itertools.compress(texts, quick)).replace(",", "").split(" ")  # no spaces in them
            value_of[quick] = np.fromiter(map(float, numbers), dtype=float, count=len(numbers))
    plain = cells.decimal != ","
    for code in np.flatnonzero(~quick)[1:].tolist():
        text = texts[code]
        if plain and text[-1] in _DIGITS and text.isascii() and "_" not in text:
            try:  # what else float() reads ("1e5", ".5") it reads as parse_value would
                value_of[code] = float(text)
                continue
            except ValueError:
                pass
        kind_of[code], value_of[code] = _cell_kind(text, cells)
    return kind_of[codes], value_of[codes]


def _cell_kind(text: str, cells: SheetCells) -> tuple[int, float]:
    """Kind and value of one non-empty stripped cell."""
    if text[0] in _MARK_FIRST and _FOOTNOTE_ONLY.match(text):
        return MARK, np.nan
    if _ASCII_WORD.fullmatch(text):  # no digit: parse_value would find a marker or a label, nothing else
        return (TEXT if marker_status(text) is None else MARKER), np.nan
    if text.isascii() and _WORDY.search(text) and "\\" not in text and "[" not in text and "+/-" not in text:
        return TEXT, np.nan  # a label with a figure in it ("Table 12", "Rape1", "GROUP I (250,000 and over)")
    parsed = cells.parse(text)
    if parsed.status == "ok":
        return NUMBER, parsed.value
    return (TEXT if parsed.status == "text" else MARKER), np.nan


def _sum_matches(values: np.ndarray, max_run: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Share of each line's numbers equal to the sum of 2+ consecutive numbers below / above it.

    Rows without a number in that column are skipped (blank lines and group labels sit inside runs).
    """
    n = len(values)
    present = ~np.isnan(values)
    cols = np.flatnonzero(present.sum(axis=0) >= 3)  # a sum and two parts at least
    counts = present[:, cols].sum(axis=1).astype(float)
    below = np.zeros(n)
    above = np.zeros(n)
    if len(cols):
        rows, hits_below, hits_above = _run_sum_hits(values[:, cols], present[:, cols], max_run)
        below += np.bincount(rows, weights=hits_below, minlength=n)
        above += np.bincount(rows, weights=hits_above, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, np.minimum(below, counts) / np.maximum(counts, 1), 0.0), np.where(
            counts > 0, np.minimum(above, counts) / np.maximum(counts, 1), 0.0
        )


def _run_sum_hits(values: np.ndarray, present: np.ndarray, max_run: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of numbers of these columns, and how many runs of k = 2..max_run numbers just below (above)
    each in its column sum to it (numbers not listed have no such run).

    Runs skip the rows without a number: each column's numbers are laid out in order, and the sum of a run
    is the difference of two entries of the column's cumulative sum, the same float operations as a loop
    over columns and k would do, so the matches are identical to it, not merely close. Only numbers that
    can be a sum at all (``_may_be_run_sum``, most numbers of a table cannot) are checked at every k.
    """
    col, row = np.nonzero(present.T)  # the numbers, column by column, top to bottom
    m = present.sum(axis=0)  # numbers per column
    depth = int(m.max())
    col_start = np.concatenate([[0], np.cumsum(m)[:-1]])
    pos = np.arange(len(col)) - col_start[col]  # position of each number in its column
    number = values[row, col]
    v = np.zeros((len(m), depth))  # (column, position); 0 after a column's last number
    v[col, pos] = number
    csum = np.concatenate([np.zeros((len(m), 1)), np.cumsum(v, axis=1)], axis=1)
    tol = np.maximum(np.abs(number) * 0.002, 1.01 * rounding_unit(number))
    longest = min(max_run, depth - 1)
    ks = np.arange(2, longest + 1)[:, None]
    # csum flat, column c's sums from c * (depth + 1): a 1-D gather of the (run lengths x numbers) sums is
    # several times cheaper than the same elements picked by 2-D fancy indexing
    flat_csum = csum.ravel()
    found = []
    for below in (True, False):
        may = (number != 0) & _may_be_run_sum(number, pos, col, m, csum, tol, below, longest)
        hits = np.zeros(len(col), dtype=np.intp)
        step = max((1 << 19) // max(len(ks), 1), 1)  # (run lengths x numbers) arrays of bounded size
        todo = np.flatnonzero(may)
        for a in range(0, len(todo), step):
            at = todo[a : a + step]
            c, p = col[at], pos[at]
            sums_of_c = c * (depth + 1)
            if below:  # the k numbers after p sum to csum[p+1+k] - csum[p+1]; such a run exists while p+k < m
                end = p + 1 + ks
                s = flat_csum[sums_of_c + np.minimum(end, depth)] - flat_csum[sums_of_c + p + 1]
                exists = end <= m[c]
            else:  # the k numbers before p sum to csum[p] - csum[p-k]; such a run exists while p >= k
                start = p - ks
                s = flat_csum[sums_of_c + p] - flat_csum[sums_of_c + np.maximum(start, 0)]
                exists = start >= 0
            hits[at] = ((np.abs(s - number[at]) <= tol[at]) & exists).sum(axis=0)
        found.append(hits)
    return row, found[0], found[1]


def _may_be_run_sum(number: np.ndarray, pos: np.ndarray, col: np.ndarray, m: np.ndarray, csum: np.ndarray,
                    tol: np.ndarray, below: bool, longest: int) -> np.ndarray:
    """False where a number (laid out as in ``_run_sum_hits``) is surely the sum of no run of 2..``longest``
    numbers below (above) it in its column.

    Over numbers that are not negative a cumulative sum never decreases, in floats too, so a run's sum
    only grows with its length, and so does its float difference to the number: a number that the sum of
    its two neighbours exceeds by more than the tolerance is matched by no longer run either. Numbers
    with a negative number within ``longest`` of them on that side are all kept.
    """
    negatives = np.concatenate([[0], np.cumsum(number < 0)])  # over the numbers of all columns, in order
    first = np.arange(len(number)) - pos  # the column's first number
    if below:
        has_two = pos + 3 <= m[col]
        two = csum[col, np.where(has_two, pos + 3, 0)] - csum[col, pos + 1]
        last = first + m[col]  # after the column's last number
        signed = negatives[np.minimum(first + pos + 1 + longest, last)] > negatives[first + pos + 1]
    else:
        has_two = pos >= 2
        two = csum[col, pos] - csum[col, np.maximum(pos - 2, 0)]
        signed = negatives[first + pos] > negatives[first + np.maximum(pos - longest, 0)]
    return (has_two & ((two - number) <= tol)) | signed


def sheet_features(
    rows: list[list[str]],
    decimal: str | None = None,
    cells: SheetCells | None = None,
    kinds_values: tuple[np.ndarray, np.ndarray] | None = None,
    layout: bool = False,
) -> np.ndarray:
    """A (lines x FEATURE_NAMES) matrix for one sheet; empty lines get a row too (they are never classified).
    With ``layout``, the ``LAYOUT_FEATURES`` follow as more columns.

    ``cells`` (the sheet's parsed cells, decimal guessed when ``decimal`` is None) can be passed in by a
    caller that needs the same parses afterwards, and ``kinds_values`` (``cell_kinds`` of those cells) by
    one that needed them before.
    """
    n = len(rows)
    if n == 0:
        return np.zeros((0, len(FEATURE_NAMES) + (len(LAYOUT_FEATURES) if layout else 0)))
    if cells is None:
        cells = SheetCells.guess(rows) if decimal is None else SheetCells(rows, decimal)
    kinds, values = kinds_values if kinds_values is not None else cell_kinds(rows, cells.decimal, cells)
    width = max(kinds.shape[1], 1)
    per_line = _kind_counts(kinds)
    n_cells = kinds.shape[1] - per_line[:, EMPTY]
    blank = n_cells == 0
    safe = np.maximum(n_cells, 1)
    num = per_line[:, NUMBER]
    numeric_line = (num >= 1) & (num / safe >= 0.5) & (n_cells >= 2)

    # Column types from the lines that look like data
    data_like = numeric_line
    per_col = _kind_counts(kinds[data_like].T)
    col_num = per_col[:, NUMBER] + per_col[:, MARKER]
    col_text = per_col[:, TEXT]
    numeric_cols = (col_num > col_text) & (col_num >= 1)
    n_numeric_cols = max(int(numeric_cols.sum()), 1)

    sum_below, sum_above = _sum_matches(values)
    base = _base_features(rows, cells.text, kinds, values, numeric_cols, n_numeric_cols, per_line)
    base[:, _B["sum_below"]] = np.where(blank, 0.0, sum_below)
    base[:, _B["sum_above"]] = np.where(blank, 0.0, sum_above)

    # Position relative to the sheet and to its numeric block
    order = np.flatnonzero(~blank)
    rank = np.full(n, -1)
    rank[order] = np.arange(len(order))
    m = max(len(order), 1)
    numeric_rank = rank[numeric_line & ~blank]
    first_num = numeric_rank.min() if len(numeric_rank) else m
    last_num = numeric_rank.max() if len(numeric_rank) else -1
    blank_above = _blank_run_above(blank)
    blank_below = _blank_run_above(blank[::-1])[::-1]
    context = np.zeros((n, len(CONTEXT_FEATURES)))
    r = rank.astype(float)
    context[:, 0] = np.arange(n) / max(n - 1, 1)
    context[:, 1] = r / max(m - 1, 1)
    context[:, 2] = rank == 0
    context[:, 3] = rank == m - 1
    context[:, 4] = r < first_num
    context[:, 5] = r > last_num
    # (np.minimum of np.maximum: np.clip's result at half its cost on a sheet's few lines)
    context[:, 6] = np.minimum(np.maximum(r - first_num, -10), 10) / 10
    context[:, 7] = np.minimum(np.maximum(r - last_num, -10), 10) / 10
    context[:, 8] = np.minimum(blank_above, 4) / 4
    context[:, 9] = np.minimum(blank_below, 4) / 4
    context[:, 10] = np.log1p(width)
    context[:, 11] = numeric_line.sum() / m
    since = np.full(n, 10.0)
    until = np.full(n, 10.0)
    since[order] = _lines_since_numeric(numeric_line[order])
    until[order] = _lines_since_numeric(numeric_line[order][::-1])[::-1]
    context[:, 12] = since / 10
    context[:, 13] = until / 10
    year_share = base[:, BASE_FEATURES.index("year_share")]
    following_numbers = np.zeros(n)
    following_numbers[order[:-1]] = numeric_line[order[1:]] & (year_share[order[1:]] < 0.5)
    context[:, 14] = (year_share >= 0.5) * following_numbers
    sums = np.maximum(sum_above, sum_below)
    context[:, 15] = base[:, BASE_FEATURES.index("kw_total")] * (sums > 0)
    context[:, 16] = sums

    # The same descriptors of the two previous and two next non-empty lines
    neigh_idx = [BASE_FEATURES.index(name) for name in _NEIGHBOUR]
    neighbours = np.zeros((n, len(NEIGHBOUR_FEATURES)))
    nn = len(_NEIGHBOUR)
    # Two rows of -1 on each side stand for the missing neighbours of the first and last lines
    padded = np.full((len(order) + 4, nn), -1.0)
    padded[2:-2] = base[order][:, neigh_idx]
    m_order = len(order)
    # the non-empty lines' neighbour features side by side, scattered into ``neighbours`` once
    block = np.empty((m_order, len(NEIGHBOUR_FEATURES)))
    for slot, offset in enumerate((-1, -2, 1, 2)):
        block[:, slot * nn : (slot + 1) * nn] = padded[2 + offset : 2 + offset + m_order]
    gaps = np.minimum(np.diff(order) - 1, 4) / 4  # blank lines between consecutive non-empty lines
    block[:, -2] = np.concatenate([[1.0], gaps])
    block[:, -1] = np.concatenate([gaps, [1.0]])
    neighbours[order] = block
    if layout:
        extra = _neighbourhood(cells.text, kinds, order, numeric_cols, col_num, col_text)
        return np.hstack([base, context, neighbours, extra])
    return np.hstack([base, context, neighbours])


def _neighbourhood(text: list[list[str]], kinds: np.ndarray, order: np.ndarray, numeric_cols: np.ndarray,
                   col_num: np.ndarray, col_text: np.ndarray) -> np.ndarray:
    """The LAYOUT_FEATURES of every line (zeros for blank lines); ``order``: the non-empty lines.

    Layouts and kinds are compared in numpy over the lines' cells; texts are compared only on lines without
    a number (the header-like lines), cell by cell.
    """
    n = len(kinds)
    out = np.zeros((n, len(LAYOUT_FEATURES)))
    if len(order) == 0:
        return out
    used = kinds[order] != EMPTY
    figure = (kinds[order] == NUMBER) | (kinds[order] == MARKER)
    kind3 = np.where(figure, 1, np.where(used, 2, 0))
    for slot, shift in ((0, 1), (1, -1)):  # previous, next
        if len(order) < 2:
            continue
        a, b = (used[1:], used[:-1]) if shift == 1 else (used[:-1], used[1:])
        ka, kb = (kind3[1:], kind3[:-1]) if shift == 1 else (kind3[:-1], kind3[1:])
        union = (a | b).sum(axis=1)
        jaccard = (a & b).sum(axis=1) / np.maximum(union, 1)
        same = ((ka == kb) & (a | b)).sum(axis=1) / np.maximum(union, 1)
        at = order[1:] if shift == 1 else order[:-1]
        out[at, slot] = jaccard
        out[at, slot + 2] = same
    # a column of labels: the body's lines hold more text than figures there
    label_cols = (col_text > col_num) & (col_text > 0)
    no_figure = ~figure.any(axis=1)
    out[order, 4] = no_figure & ~(used & ~label_cols).any(axis=1) & label_cols.any()
    words = np.flatnonzero(no_figure).tolist()  # positions in order of the lines without a figure
    first = text[int(order[0])]
    n_used = used.sum(axis=1).tolist()
    above: int | None = None  # row of the nearest line of words (2+ cells, no figure) seen so far
    wordy = set(np.flatnonzero(no_figure & (used.sum(axis=1) >= 2)).tolist())
    for pos in words:
        row = text[int(order[pos])]
        if pos:
            out[order[pos], 5] = sum(1 for c, f in zip(row, first, strict=False) if c and c == f) / n_used[pos]
        if above is not None:
            ref = text[above]
            out[order[pos], 6] = sum(1 for c, f in zip(row, ref, strict=False) if c and c == f) / n_used[pos]
        if pos in wordy:
            above = int(order[pos])
    return out


def _blank_run_above(blank: np.ndarray) -> np.ndarray:
    """For every line, how many blank lines come directly above it."""
    lines = np.arange(len(blank))
    last_nonblank = np.maximum.accumulate(np.where(blank, -1, lines))
    before = np.concatenate([[-1], last_nonblank[:-1]])  # the last non-blank line strictly above
    return (lines - 1 - before).astype(float)


def _lines_since_numeric(numeric: np.ndarray) -> np.ndarray:
    """For a sheet's non-empty lines in order: how many lines back the previous numeric one is, at most 10."""
    pos = np.arange(len(numeric))
    last = np.maximum.accumulate(np.where(numeric, pos, -1))
    before = np.concatenate([[-1], last[:-1]])  # the last numeric line strictly above
    return np.where(before >= 0, np.minimum(pos - before, 10), 10).astype(float)
