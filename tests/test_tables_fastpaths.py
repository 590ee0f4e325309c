"""The vectorised shortcuts of detection give exactly what the plain per-cell reading gives."""

import itertools

import numpy as np

from airflow_sbcrawl.tables.detect import _FOOTNOTE_MARK, _LEADER, _clean_label, _last_digit
from airflow_sbcrawl.tables.features import (
    _WITHOUT_IGNORECASE,
    _YEAR_DIGITS,
    _YEARISH,
    EMPTY,
    MARK,
    MARKER,
    NUMBER,
    TEXT,
    _Caseless,
    _found,
    _sum_matches,
    _upper_shares,
    cell_kinds,
)
from airflow_sbcrawl.tables.values import parse_value, rounding_unit


def _sum_matches_by_loop(values: np.ndarray, max_run: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """The definition, one column, number and run length at a time."""
    n = len(values)
    present = ~np.isnan(values)
    cols = [j for j in range(values.shape[1]) if present[:, j].sum() >= 3]
    below, above, counts = np.zeros(n), np.zeros(n), np.zeros(n)
    for j in cols:
        rows = np.flatnonzero(present[:, j])
        v = values[rows, j]
        csum = np.concatenate([[0.0], np.cumsum(v)])
        tol = np.maximum(np.abs(v) * 0.002, 1.01 * rounding_unit(v))
        counts[rows] += 1
        for p, row in enumerate(rows):
            if v[p] == 0:
                continue
            for k in range(2, min(max_run, len(v) - 1) + 1):
                if p + k < len(v) and abs((csum[p + 1 + k] - csum[p + 1]) - v[p]) <= tol[p]:
                    below[row] += 1
                if p >= k and abs((csum[p] - csum[p - k]) - v[p]) <= tol[p]:
                    above[row] += 1
    share = np.maximum(counts, 1)
    return (np.where(counts > 0, np.minimum(below, counts) / share, 0.0),
            np.where(counts > 0, np.minimum(above, counts) / share, 0.0))


def _random_grid(rng: np.random.Generator, negative: float) -> np.ndarray:
    rows, cols = int(rng.integers(3, 60)), int(rng.integers(1, 8))
    grid = np.round(rng.exponential(100, (rows, cols)), int(rng.integers(0, 3)))
    grid[rng.random(grid.shape) < negative] *= -1
    grid[rng.random(grid.shape) < 0.1] = 0.0
    grid[rng.random(grid.shape) < 0.2] = np.nan
    # totals of the runs above and below, so that there is something to find
    for j in range(cols):
        for i in rng.choice(rows, size=rows // 6, replace=False):
            k = int(rng.integers(2, 6))
            part = grid[i + 1 : i + 1 + k, j] if rng.random() < 0.5 else grid[max(i - k, 0) : i, j]
            part = part[~np.isnan(part)]
            if len(part) >= 2:
                grid[i, j] = part.sum() + rng.choice([0.0, 0.4, 3.0])
    return grid


def test_run_sums_equal_the_loop_on_random_columns_with_and_without_negatives():
    rng = np.random.default_rng(12)
    found = 0
    for trial in range(120):
        grid = _random_grid(rng, negative=(0.0, 0.05, 0.5)[trial % 3])
        fast, loop = _sum_matches(grid), _sum_matches_by_loop(grid)
        assert np.array_equal(fast[0], loop[0]) and np.array_equal(fast[1], loop[1]), trial
        found += int((loop[0] > 0).sum() + (loop[1] > 0).sum())
    assert found > 500  # the grids do hold sums, so equality is not between two empty answers


def test_run_sums_on_a_long_column_and_short_runs():
    column = np.array([10.0, 4.0, 6.0, 3.0, 3.0, 7.0, 1.0, 2.0, 4.0, np.nan, 30.0])[:, None]
    below, above = _sum_matches(column, max_run=3)
    assert np.array_equal(below, _sum_matches_by_loop(column, max_run=3)[0])
    assert np.array_equal(above, _sum_matches_by_loop(column, max_run=3)[1])
    assert below[0] > 0 and below[2] > 0  # 10 = 4 + 6, 6 = 3 + 3
    assert below[10] == 0  # 30 is the sum of all ten, a run longer than 3


TEXTS = ["3929214.0", "-12", "+7", "4.5", "1,234", "1,234.5", "01,234", "12,34", "1,2345", "1.234,5", "1e5", ".5",
         "1.", "1_000", "(D)", "..", "-", "x", "\\1", "(1)", "²", "76.3±1.2", "10-14", "(1,234)", "1 234", "٣٤",
         "12%", "$5", "2008", "2008.0", "Total", "NA", "0", "-0", "00012", "1,23,456", "[a]", "[1]", "(X)", "n/a",
         "N.A.", "x", "X", "Total \\1", "See notes:", "\u2013", "\u00dcber", "[abcd]", "(a)", "*", "**", "c", "Np"]


def test_cell_kinds_read_every_text_as_parse_value_does():
    for decimal in (".", ",", None):
        kinds, values = cell_kinds([TEXTS, ["", *TEXTS[1:]]], decimal)
        assert kinds[1, 0] == EMPTY and np.isnan(values[1, 0])
        for text, kind, value in zip(TEXTS, kinds[0].tolist(), values[0].tolist(), strict=True):
            parsed = parse_value(text, decimal)
            if kind == MARK:
                assert text in ("\\1", "(1)", "²", "[a]", "[1]"), text
            elif parsed.status == "ok":
                assert (kind, value) == (NUMBER, parsed.value), (text, decimal)
            else:
                assert kind == (TEXT if parsed.status == "text" else MARKER) and np.isnan(value), (text, decimal)


def test_upper_shares_count_letters_as_str_methods_do():
    texts = ["UNITED STATES 2010", "Total", "", "12 345", "Ärzte und ÄRZTINNEN", "a", "ÉTATS-UNIS", "x Y z", "ǅ ß"]
    shares = _upper_shares(texts).tolist()
    for text, share in zip(texts, shares, strict=True):
        letters = [c for c in text if c.isalpha()]
        assert share == (sum(c.isupper() for c in letters) / len(letters) if letters else 0.0), text
    assert shares[0] == 1.0 and shares[1] == 0.2 and shares[3] == 0.0


def test_upper_shares_of_random_ascii_texts_count_as_str_methods_do():
    # every ASCII character, control characters and the empty text included, in texts of 0-60 characters
    rng = np.random.default_rng(8)
    texts = ["".join(map(chr, rng.integers(0, 128, rng.integers(0, 60)))) for _ in range(400)]
    texts += ["".join(map(chr, range(128))), "ABC", "abc", "!?"]
    # with and without a NUL in a text (the texts are counted together, parted by NULs, when none holds one)
    for some in (texts, [t.replace("\0", "") for t in texts]):
        shares = _upper_shares(some).tolist()
        for text, share in zip(some, shares, strict=True):
            letters = [c for c in text if c.isalpha()]
            assert share == (sum(c.isupper() for c in letters) / len(letters) if letters else 0.0), text
        assert shares[-3:] == [1.0, 0.0, 0.0]


def test_upper_shares_beyond_ascii_count_as_str_methods_do():
    # every BMP letter class at once, a lone surrogate, and a text beyond the BMP (counted one by one)
    bmp = ["".join(map(chr, range(start, start + 4096))) for start in range(0, 0x10000, 4096)]
    for texts in ([*bmp, "\ud800 Ab", "été Ⓐ ǅ"], ["𝐀bc É", "Ärzte", "x"]):
        shares = _upper_shares(texts).tolist()
        for text, share in zip(texts, shares, strict=True):
            letters = [c for c in text if c.isalpha()]
            assert share == (sum(c.isupper() for c in letters) / len(letters) if letters else 0.0), text


def test_last_digit_units_equal_trying_every_number_of_decimals():
    rng = np.random.default_rng(5)
    scale = 10.0 ** rng.integers(0, 8, (40, 9))
    v = np.round(rng.normal(0, 1000, (40, 9)) * scale) / scale
    v[rng.random(v.shape) < 0.1] = np.nan
    v[0, :4] = [np.inf, 0.0, 1e-7, 23.65]
    unit = np.full(v.shape, 1e-6)
    for d in range(6, -1, -1):
        scaled = v * 10.0**d
        with np.errstate(invalid="ignore"):
            unit = np.where(np.abs(scaled - np.round(scaled)) <= 1e-12 * np.maximum(1, np.abs(scaled)), 10.0**-d, unit)
    assert np.array_equal(_last_digit(v), unit)
    assert _last_digit(v)[0, 3] == 0.01 and len(set(unit.ravel().tolist())) == 7


def test_caseless_search_finds_what_the_ignorecase_patterns_find():
    texts = ["TOTAL", "Grand Total", "subtotal:", "Totalled", "All persons", "Insgesamt", "GESAMT Ärzte", "Ensemble",
             "Per Capita", "Source: Bureau", "SOURCES", "Table 3 (Continued)", "CONT. from p. 2", "Ｔotal", "ſum",
             "Kelvin \u212aelvin", "Median age", "", "12 345", "Concluded", "Nota bene"]
    searched = _Caseless(texts)
    hits = 0
    for pattern in _WITHOUT_IGNORECASE:
        expected = [pattern.search(t) is not None for t in texts]
        assert searched.found_each(pattern, pattern)[0].tolist() == expected, pattern.pattern
        hits += sum(expected)
    assert hits >= 12
    # both patterns of a pair at once (a text with words of both: each found), as each one alone
    texts += ["Total average", "Source: continued", "mean of all", "cont.x", "totals2019", "overall-rate"]
    searched = _Caseless(texts)
    for first, second in itertools.permutations(_WITHOUT_IGNORECASE, 2):
        one, two = searched.found_each(first, second)
        assert one.tolist() == [first.search(t) is not None for t in texts], first.pattern
        assert two.tolist() == [second.search(t) is not None for t in texts], second.pattern


def test_searching_the_wider_pattern_first_finds_what_the_pattern_alone_finds():
    texts = ["2019", "FY2019", "12019", "2019a", "in 1999 and 2000", "1799", "2100", "20199", "Year 1850:", "",
             "\uff12\uff10\uff11\uff19", "2\u0661\u0662\u0663", "19 99", "Total 2008\\1", "x2008 1908"]
    found = _found(_YEARISH.search, texts, _YEAR_DIGITS)
    assert found.tolist() == [_YEARISH.search(t) is not None for t in texts]
    assert 4 <= found.sum() < len(texts) - 4


def test_labels_lose_their_footnote_marks_as_with_the_pattern_alone():
    labels = ["Supply,      total   \\1", "Total \\12 ", "Men [a]", "Women[12]\n", "Persons²", "Persons ⁴⁵ \t",
              "Year 2010", "Robbery. . . . .", "Alpha", "", "  ", "[x]", "Index (1)", "Ratio ١",
              "Label \\1 more", "Count¹\n"]
    for label in labels:
        text = _FOOTNOTE_MARK.sub("", label)
        if text.endswith("."):
            text = _LEADER.sub("", text)
        assert _clean_label(label) == " ".join(text.split()), label
    assert _clean_label("Persons²") == "Persons" and _clean_label("Men [a]") == "Men"


def test_class_probabilities_of_a_long_sheet_equal_the_matrix_product():
    # a sheet long enough for @ to go to BLAS's threads, which the classifier avoids
    from airflow_sbcrawl.tables.classifier import default_classifier
    from airflow_sbcrawl.tables.features import sheet_features

    rng = np.random.default_rng(4)
    rows = [["Table 1. Things", "", ""], ["Item", "2020", "2021"]]
    rows += [[f"item {k}", str(int(rng.integers(0, 9999))), f"{rng.random() * 100:.1f}"] for k in range(1500)]
    clf = default_classifier()
    feats = sheet_features(rows)
    z = ((feats - clf.mean_) / clf.scale_) @ clf.coef_.T + clf.intercept_
    expected = np.exp(z - z.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    got = clf._proba(feats)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    assert (got.argmax(axis=1) == expected.argmax(axis=1)).all()


def _guess_decimal_cell_by_cell(cells, limit=5000):
    """The definition: every cell up to ``limit``, stripped and without spaces, votes by the first hint it matches."""
    from airflow_sbcrawl.tables.values import _DECIMAL_COMMA_HINT, _DECIMAL_DOT_HINT

    comma = dot = 0
    for cell in list(cells)[:limit]:
        cleaned = cell.strip().replace(" ", "")
        if _DECIMAL_COMMA_HINT.match(cleaned):
            comma += 1
        elif _DECIMAL_DOT_HINT.match(cleaned):
            dot += 1
    if comma == dot == 0:
        return None
    return "," if comma > dot else "."


def test_decimal_vote_counts_every_cell_as_the_cell_by_cell_vote_does():
    from airflow_sbcrawl.tables.values import guess_decimal

    rng = np.random.default_rng(7)
    pieces = ["1", "23", "456", "7890", ",", ".", " ", "-", "+", "\n", "a", "\u00a0", "12,5", "3.25", "1.234,5",
              "1,234.5", "1,234", "\t", "(", ")"]
    for _ in range(400):
        n = int(rng.integers(0, 40))
        cells = ["".join(rng.choice(pieces, size=int(rng.integers(0, 5)))) for _ in range(n)]
        limit = int(rng.integers(0, 45))
        assert guess_decimal(cells, limit) == _guess_decimal_cell_by_cell(cells, limit), (cells, limit)
        assert guess_decimal(iter(cells)) == _guess_decimal_cell_by_cell(cells), cells


def _total_columns_by_loop(values: np.ndarray, max_run: int = 20, share: float = 0.8) -> list[int]:
    """The definition: every column, side and run length, each number's tolerance from its last digit."""
    if values.ndim != 2 or values.shape[1] < 3 or values.shape[0] < 2:
        return []
    n = values.shape[1]
    present = ~np.isnan(values)
    lines = present & (values != 0)
    unit = 1.01 * _last_digit(values)
    zero = np.zeros((len(values), 1))
    csum = np.concatenate([zero, np.cumsum(np.where(present, values, 0.0), axis=1)], axis=1)
    out = []
    for j in range(n):
        if lines[:, j].sum() < 2:
            continue
        for k in range(2, min(max_run, n - 1) + 1):
            for lo, hi in ((j + 1, j + 1 + k), (j - k, j)):
                if lo < 0 or hi > n:
                    continue
                hits = sum(
                    1 for i in range(len(values))
                    if lines[i, j] and present[i, lo:hi].all()
                    and abs((csum[i, hi] - csum[i, lo]) - values[i, j]) <= unit[i, j] * (k + 1) / 2
                )
                if hits >= share * lines[:, j].sum() and j not in out:
                    out.append(j)
    return sorted(out)


def test_total_columns_equal_the_loop_over_columns_and_runs():
    from airflow_sbcrawl.tables.detect import total_columns

    rng = np.random.default_rng(11)
    found = 0
    for _ in range(300):
        rows, cols = int(rng.integers(2, 12)), int(rng.integers(3, 9))
        parts = np.round(rng.exponential(50, (rows, cols)), int(rng.integers(0, 3)))
        k = int(rng.integers(2, cols))
        at = int(rng.integers(0, cols - k))
        parts[:, at] = parts[:, at + 1 : at + 1 + k].sum(axis=1) + rng.choice([0, 0, 0, 0.1, 1], size=rows)
        if rng.random() < 0.3:
            parts[rng.random(parts.shape) < 0.2] *= -1
        parts[rng.random(parts.shape) < 0.03] = np.nan
        expected = _total_columns_by_loop(parts)
        assert total_columns(parts) == expected, parts
        found += bool(expected)
    assert found > 50  # the sums planted are found, not only columns that are no sum


def test_a_bodys_keys_are_counted_once_and_as_a_plain_list_counts_them():
    """``duplicates`` and ``key_warnings`` read a Body's keys counted once; the figures are those of the
    same observations in a plain list, and a copy with other line classes (``same_keys``) keeps them."""
    from airflow_sbcrawl.tables.body import Body, duplicates, key_warnings
    from airflow_sbcrawl.tables.model import Observation

    def obs(row: int, col: int, labels: tuple[str, ...], path: tuple[str, ...]) -> Observation:
        return Observation(row, col, labels, path, "1", 1.0, "ok", "data", "")

    plain = [obs(1, 1, ("Men",), ("2019",)), obs(1, 2, ("Men",), ("2019",)), obs(2, 1, ("Women",), ("2019",)),
             obs(3, 1, (), ("2020",)), obs(4, 1, (), ("2020",)), obs(4, 2, (), ("2020",))]
    body = Body(plain)
    assert duplicates(body) == duplicates(plain) == 5
    assert key_warnings(body) == key_warnings(plain) and "5 of 6 observations share 2 keys" in key_warnings(body)[0]
    assert body.key_counts() is body.key_counts()  # counted once
    derived = body.same_keys(o._replace(line_class="derived") for o in body)
    assert [o.line_class for o in derived] == ["derived"] * 6
    assert duplicates(derived) == 5 and key_warnings(derived) == key_warnings(body)
    unique = Body(plain[:1])
    unique.unique = True
    assert duplicates(unique) == 0 and key_warnings(unique) == [] and unique.same_keys(plain[:1]).unique


def _strip_footnotes_by_patterns(text: str) -> str:
    """values._strip_footnotes without its test of the text's ends: the patterns on every text."""
    from airflow_sbcrawl.tables.values import _FOOTNOTE_HEAD, _FOOTNOTE_TAIL

    for _ in range(3):
        new = _FOOTNOTE_HEAD.sub("", _FOOTNOTE_TAIL.sub("", text).strip()).strip()
        if new == text:
            break
        text = new
    return text


def test_footnote_marks_are_stripped_as_by_the_patterns_alone():
    from airflow_sbcrawl.tables.values import _strip_footnotes

    texts = ["12.5 p", "12.5 p \\1", "45\\2", "[a] 12", "12 [b]", "Persons²", "inclusion of", "in the future.",
             "12e", "12E", "2019 ab", "total abc", "x", "ab", " a", "12 *", "12**", "Ölpreis p", "12\u00a0p",
             "12\u2003pq", "\u0661\u0662b", "word\u0661b", "[x]", "", "Note: updated in July 2019 to include p",
             "1 234 r", "5,0 e"]
    rng = np.random.default_rng(5)
    alphabet = list("ab pqZ12 \\[]*.,\u00b9\u2075\u00a0\u2003\u0661-\n")
    texts += ["".join(rng.choice(alphabet, size=int(rng.integers(1, 9)))).strip() for _ in range(3000)]
    for text in texts:
        assert _strip_footnotes(text) == _strip_footnotes_by_patterns(text), repr(text)
