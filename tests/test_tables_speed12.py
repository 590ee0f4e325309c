"""Round 12's shortcuts of detection give exactly what the plain reading gives."""

import random

import pytest

from airflow_sbcrawl.tables import features
from airflow_sbcrawl.tables.features import MARK, MARKER, NUMBER, TEXT, _cell_kind
from airflow_sbcrawl.tables.values import SheetCells, marker_status

# Labels with figures, and texts next to them that parse_value reads otherwise (a marker after a footnote
# mark, an estimate with its margin, an exponent, a flag letter after a number)
CHOSEN = ["Table 12", "Rape1", "EU15", "TOTAL1", "GROUP I (250,000 and over)", "by Sex, 2008-2017", "5+/-abc",
          "abc+/-5", "\\1 nil", "[1] n/a", "[x] 12", "12 p", "12 ab cd", "12e", "1e5", "1E5", "-1.5e-3 p",
          "2017 \nestimated \npopulation", "(12) r", "$ 12 abc", "12 abc", "a1", "e1", "E12", "ee1", "x 12",
          "1,234 (p)", "12 pp", "12 ppp", "n.a. 1", "12*", "abc 12*", "12 kg", "Jan 2019", "Q1 2019"]
ALPHABET = "0123456789   ,.-+/()*%$eEpabxnlQ\\[]:\n"


def _by_parse(text: str, cells: SheetCells) -> tuple[int, bool]:
    """``_cell_kind`` without the label shortcut (the kind, and whether the value is a number)."""
    if text[0] in features._MARK_FIRST and features._FOOTNOTE_ONLY.match(text):
        return MARK, False
    if features._ASCII_WORD.fullmatch(text):
        return (TEXT if marker_status(text) is None else MARKER), False
    parsed = cells.parse(text)
    if parsed.status == "ok":
        return NUMBER, True
    return (TEXT if parsed.status == "text" else MARKER), False


@pytest.mark.parametrize("decimal", [None, ".", ","])
def test_labels_with_figures_are_read_as_parse_value_reads_them(decimal):
    rng = random.Random(12)
    texts = CHOSEN + ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 9))) for _ in range(20000)]
    texts = sorted({t.strip() for t in texts if t.strip()})
    shortcut = 0
    for text in texts:
        kind, value = _cell_kind(text, SheetCells((), decimal))
        assert (kind, value == value) == _by_parse(text, SheetCells((), decimal)), text
        shortcut += bool(features._WORDY.search(text))
    assert shortcut > 1000  # the shortcut was tried on many texts, not only on the chosen ones


def test_total_columns_left_of_their_parts_and_short_runs_equal_the_loop():
    """Totals after their parts (runs left of them), runs longer than max_run, wide tables: only the runs
    within the table are summed, and the columns found are the loop's."""
    import numpy as np

    from airflow_sbcrawl.tables.detect import total_columns
    from tests.test_tables_fastpaths import _total_columns_by_loop

    rng = np.random.default_rng(12)
    found = 0
    for _ in range(300):
        rows, cols = int(rng.integers(2, 10)), int(rng.integers(3, 26))
        parts = np.round(rng.exponential(50, (rows, cols)), int(rng.integers(0, 3)))
        k = int(rng.integers(2, cols))
        at = int(rng.integers(k, cols))
        parts[:, at] = parts[:, at - k : at].sum(axis=1) + rng.choice([0, 0, 0, 0.1, 1], size=rows)
        if rng.random() < 0.5:
            parts[rng.random(parts.shape) < 0.2] *= -1
        parts[rng.random(parts.shape) < 0.03] = np.nan
        max_run = int(rng.choice([3, 5, 20]))
        expected = _total_columns_by_loop(parts, max_run=max_run)
        assert total_columns(parts, max_run=max_run) == expected, parts
        found += bool(expected)
    assert found > 30  # the sums planted are found, not only columns that are no sum


def test_year_cells_are_counted_as_the_year_pattern_counts_them():
    """The set of ASCII years stands for _YEAR on ASCII texts; texts in digits of other scripts (which \\d
    reads) still go through the pattern."""
    import itertools

    import numpy as np

    from airflow_sbcrawl.tables.features import _YEAR, _YEAR_TEXTS, _text_features, cell_kinds

    ascii_texts = [f"{n:04d}" for n in range(10000)] + [f"{n:04d}.0" for n in range(10000)]
    ascii_texts += ["".join(p) for p in itertools.product("12089.x", repeat=4)]
    ascii_texts += ["".join(p) for p in itertools.product("20.9", repeat=6)]
    for text in ascii_texts:
        assert (text in _YEAR_TEXTS) == bool(_YEAR.match(text)), text
    rows = [["Year", "2001", "19\u0669\u0660", "\u0661\u0669\u0669\u0660", "2002.0", "1999.5", "x"],
            ["", "1850", "2100", "1799", "2099", "\u0968\u0966\u0966\u0967", "18\u0665\u0660.0"]]
    cells = SheetCells(rows, ".")
    kinds, values = cell_kinds(rows, ".", cells)
    lines = np.arange(len(rows))
    first = (kinds != 0).argmax(axis=1)
    got = _text_features(rows, cells.text, kinds, values, lines, first)[:, 0].tolist()
    assert got == [sum(1 for t in row if _YEAR.match(t)) for row in cells.text] == [3, 3]
