"""Reading the numbers of statistics tables: separators, signs, footnote marks and missing-value markers.

Statistics offices write the same number many ways ("1,234.5", "1.234,5", "1 234,5", "(12)" for -12,
"45\\2" with a footnote mark) and mark absent values with a zoo of symbols. Markers are kept with a status
so that the lake can tell "not published" from "zero" from "suppressed", instead of dropping the cell.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, compress, islice

import numpy as np

# Conventions differ between offices (a bare "x" is "suppressed" at ONS and Statistics Canada but "not
# applicable" at Destatis); we follow the most common reading and always keep the raw text next to it.
MISSING_MARKERS: dict[str, str] = {
    "..": "missing",
    "...": "missing",
    "…": "missing",
    ":": "missing",
    "-": "missing",
    "–": "missing",
    "—": "missing",
    "n/a": "not_applicable",
    "na": "missing",
    "n.a.": "missing",
    "(na)": "missing",
    "(x)": "not_applicable",
    "(z)": "missing",  # US Census: "rounds to zero"; the value is not published, so not a number here
    "(d)": "confidential",  # withheld to avoid disclosure
    "(s)": "confidential",  # suppressed, does not meet publication standards
    "x": "confidential",
    "*": "confidential",
    "c": "confidential",
    "np": "confidential",  # ABS "not published"
    "dnr": "missing",  # "did not report"
    "nsd": "missing",  # "no sufficient data"
    "nan": "missing",
    "null": "missing",
    "none": "missing",
    ".": "missing",  # Destatis: unknown or kept secret
    "--": "missing",
    "---": "missing",
    "#": "confidential",
    "nd": "missing",  # no data
    "n.d.": "missing",
    "n/d": "missing",
    "k.a.": "missing",  # keine Angabe
    "k. a.": "missing",
    "/": "confidential",  # Destatis: not reliable enough to publish
    "s": "confidential",  # US Census: withheld, does not meet publication standards
    "f": "confidential",  # Statistics Canada: too unreliable to be published
    "n.p.": "confidential",
    "[x]": "missing",  # the bracketed markers of the UK's Government Statistical Service
    "[c]": "confidential",
    "[z]": "not_applicable",
    "[low]": "missing",
    "[u]": "missing",
    "[w]": "confidential",
    "not available": "missing",  # spelt out (US Energy Information Administration)
    "not applicable": "not_applicable",
    "withheld": "confidential",
    "nil": "nil",  # a word meaning zero, not a missing value
}

_SPACES = str.maketrans({"\u00a0": " ", "\u202f": " ", "\u2009": " ", "\u2007": " ", "\u3000": " ",
                         # full-width forms (East Asian tables: "１，６４６") to their ASCII characters
                         **{chr(c): chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)}})
# A trailing footnote mark: SAUS-style "\1", bracketed "[2]", superscripts, or a flag letter such as
# Eurostat's "p" (provisional), "e" (estimated), "r" (revised), "b" (break in series).
_FOOTNOTE_TAIL = re.compile(
    r"(?:\s*\\\d+|\s*\[[^\]]{1,4}\]|[\u00b9\u00b2\u00b3\u2070-\u2079]+|\s*\*+|\s+[a-zA-Z]{1,2}|(?<=\d)[a-z])$"
)
_FOOTNOTE_HEAD = re.compile(r"^(?:\\\d+\s*|\[[^\]]{1,4}\]\s*)")
_NUMBER = re.compile(r"^[+-]?(?:\d[\d ',.]*)?(?:\d|[.,]\d+)(?:[eE][+-]?\d+)?$")
_UNITS = re.compile(r"^[$€£¥]\s*|\s*(?:%|‰|[$€£¥])$")
# Cheap tests that rule the patterns above out for most cells (a mark ends in one of these characters or
# needs a backslash or opening bracket; a unit is a currency sign in front or a sign at the end)
_MARK_LAST = frozenset("]*\u00b9\u00b2\u00b3" + "".join(map(chr, range(0x2070, 0x207A))) + string.ascii_letters)
_ASCII_LETTERS = frozenset(string.ascii_letters)
_UNIT_FIRST = frozenset("$€£¥")
_UNIT_LAST = frozenset("%‰$€£¥")
# "-12", "3.25", "1,234" or "1,234.5": read the same by every step of parse_value unless the decimal is ","
PLAIN_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_GROUPED_COMMA = re.compile(r"^\d{1,3}(?:,\d{3})+$")
_GROUPED_DOT = re.compile(r"^\d{1,3}(?:\.\d{3})+$")


@dataclass(frozen=True)
class ParsedValue:
    """One cell read: its number (None when it is not one) and its status, one of ``VALUE_STATUSES``."""

    value: float | None
    status: str  # one of model.VALUE_STATUSES


_EMPTY = ParsedValue(None, "missing")
_TEXT = ParsedValue(None, "text")
_UNREADABLE = ParsedValue(None, "unreadable")
_DATE = re.compile(r"^\d{1,2}\.\d{1,2}\.(?:\d{2}|\d{4})$")  # "31.12.1970": a day, not a number
_DIGIT = re.compile(r"\d")


def marker_status(text: str) -> str | None:
    """The status of a missing-value marker, or None when the text is not one."""
    return MISSING_MARKERS.get(text.strip().lower())


def _marker(status: str) -> ParsedValue:
    return ParsedValue(0.0 if status == "nil" else None, status)


def _strip_footnotes(text: str) -> str:
    """The (stripped) text without its footnote marks at either end, up to three of them."""
    for _ in range(3):  # "12.5 p \1" carries two marks
        if not _may_carry_mark(text):
            break
        new = _FOOTNOTE_TAIL.sub("", text).strip()
        new = _FOOTNOTE_HEAD.sub("", new).strip()
        if new == text:
            break
        text = new
    return text


def _may_carry_mark(text: str) -> bool:
    """False when neither _FOOTNOTE_TAIL nor _FOOTNOTE_HEAD can match the stripped text, told by its ends:
    the patterns are searched at every position, 10 us on a note's 100 characters, and most texts ending
    in a letter end in a word, not in a flag (" p", "12e")."""
    if not text or "\\" in text or text[0] == "[":
        return bool(text)
    last = text[-1]
    if last not in _MARK_LAST:
        return False
    if last not in _ASCII_LETTERS:  # "]", "*", a superscript
        return True
    # a flag: one or two ASCII letters after a space, or a lower-case letter right after a digit (\s and \d
    # of str patterns are str.isspace and str.isdecimal)
    before = text[-2:-1]
    return (before.isspace() or (before in _ASCII_LETTERS and text[-3:-2].isspace())
            or (before.isdecimal() and last in string.ascii_lowercase))


_DIGIT_RUNS = re.compile(r"\d+|[^\d]+")


def _to_float(body: str, decimal: str | None) -> float | None:
    """The number written in ``body`` (digits and separators, no sign), or None when its separators do not
    read as one number: digit groups after the first must be of three ("9 931 690 10 115 966" is two
    figures run together, "97,98" in a table of decimal points two footnote references), one decimal
    separator at most, and it must be the table's (``decimal``) when that is known."""
    if "e" in body or "E" in body:  # "1.5e-05", as spreadsheets store small numbers
        try:
            return float(body)
        except ValueError:
            return None
    parts = _DIGIT_RUNS.findall(body)
    if not parts:
        return None
    if parts[0][0].isdigit() is False:  # ".5", ",5"
        if len(parts) != 2 or parts[0] not in ".," or (decimal and parts[0] != decimal):
            return None
        return float("0." + parts[1])
    digits, seps = parts[0::2], parts[1::2]
    if len(digits) != len(seps) + 1 or any(len(sep) != 1 for sep in seps):
        return None  # "212, 213": a list, not a number
    if not seps:
        return float(digits[0])
    point = None
    last = seps[-1]
    if last in ".," and (len(seps) == 1 or seps[-2] != last):
        # The last separator is a decimal point when it differs from the others, or when it is the only
        # one and cannot be a group ("3,25", "1.5") or the table says it is the decimal
        alone = len(seps) == 1
        if not alone or decimal == last or (decimal is None and len(digits[-1]) != 3) or (
            decimal is None and last == "." and len(digits[-1]) == 3
        ):
            point = last
        if alone and decimal is not None and decimal != last and len(digits[-1]) != 3:
            return None  # "97,98" where the decimal is a point: not one number
    whole_digits, whole_seps = (digits[:-1], seps[:-1]) if point else (digits, seps)
    if whole_seps:
        group = whole_seps[0]
        if any(sep != group for sep in whole_seps) or group == point or group not in " ',.":
            return None
        indian = group == "," and len(whole_digits) > 2 and len(whole_digits[-1]) == 3 and all(
            len(d) == 2 for d in whole_digits[1:-1]) and len(whole_digits[0]) <= 2  # lakh: "1,23,45,678"
        if not indian and (len(whole_digits[0]) > 3 or any(len(d) != 3 for d in whole_digits[1:])):
            return None
    number = "".join(whole_digits)
    return float(f"{number}.{digits[-1]}" if point else number)


def parse_value(text: str, decimal: str | None = None) -> ParsedValue:
    """Parse one cell. ``decimal`` is the sheet's decimal separator when known ("," or "."), else guessed.

    Returns status "ok" with a float, a marker status with None (value 0 for "nil"), "text" when the cell
    is a word, or "unreadable" when it is digits and separators that do not read as one number.
    """
    raw = text.strip() if text.isascii() else text.translate(_SPACES).strip()
    if not raw:
        return _EMPTY
    # Fast paths for the commonest cells, in which no marker, mark or unit can be
    if raw.isascii() and raw.isdigit():
        return ParsedValue(float(raw), "ok")
    if decimal != "," and PLAIN_NUMBER.fullmatch(raw):
        return ParsedValue(float(raw.replace(",", "")), "ok")
    status = marker_status(raw)
    if status is not None:
        return _marker(status)
    if _DIGIT.search(raw) is None:  # a label: every number has a digit
        return _TEXT
    if "±" in raw or "+/-" in raw:
        # "76.3±1.2": an estimate and its margin of error; the estimate is the value, the raw keeps both
        estimate = raw.replace("+/-", "±").split("±", 1)[0].strip()
        if estimate:
            parsed = parse_value(estimate, decimal)
            return parsed if parsed.status == "ok" else ParsedValue(None, "text")
    body = _strip_footnotes(raw)
    status = marker_status(body)
    if status is not None:
        return _marker(status)
    negative = False
    if body.startswith("(") and body.endswith(")"):
        negative, body = True, body[1:-1].strip()
    body = body.replace("−", "-").replace("–", "-")
    if body and (body[0] in _UNIT_FIRST or body[-1] in _UNIT_LAST):
        body = _UNITS.sub("", body).strip()
    if not body or not _NUMBER.match(body) or _DATE.match(body):
        return ParsedValue(None, "text")
    sign = body[0] in "+-"
    value = _to_float(body[1:] if sign else body, decimal)
    if value is None:
        return _UNREADABLE  # digits and separators that are not one number: never a guess
    negative ^= body[0] == "-"
    return ParsedValue(-value if negative else value, "ok")


# "10-14", "10–14", "0.5 - 1.2", "10 to 14": two numbers, the first not above the second
_RANGE = re.compile(r"^(\d[\d,.]*)\s*(?:[-\u2013\u2014]|to)\s*(\d[\d,.]*)$")


def parse_range(text: str, decimal: str | None = None) -> ParsedValue | None:
    """A range in a value cell ("10-14"): its midpoint with status "range" (the raw keeps both ends), or
    None when the text is not one. A range is a label in a stub ("15-24" years of age), so parse_value
    leaves it text and only the cells of value columns are read with this."""
    match = _RANGE.match(_strip_footnotes(text.strip()))
    if match is None:
        return None
    lo, hi = (_to_float(g.rstrip(",."), decimal) for g in match.groups())
    if lo is None or hi is None or lo > hi:  # "2016-12", "1990-91": a date or a period, not a range
        return None
    return ParsedValue((lo + hi) / 2, "range")


def is_number(text: str, decimal: str | None = None) -> bool:
    """Whether ``parse_value`` reads a number in the cell (a marker or a word is not one)."""
    return parse_value(text, decimal).status == "ok"


_DECIMAL_COMMA_HINT = re.compile(r"^[+-]?\d+,\d{1,2}$|^[+-]?\d+,\d{4,}$|^\d{1,3}(?:\.\d{3})+,\d+$")
_DECIMAL_DOT_HINT = re.compile(r"^[+-]?\d+\.\d{1,2}$|^[+-]?\d+\.\d{4,}$|^\d{1,3}(?:,\d{3})+\.\d+$")
# The same hints, factored and without backtracking (what a possessive "++" took, the next character
# could never have matched), for the many cells of a sheet
_COMMA_VOTE = re.compile(r"(?:[+-]?\d++,(?:\d{1,2}|\d{4,})|\d{1,3}(?:\.\d{3})++,\d++)$")
_DOT_VOTE = re.compile(r"(?:[+-]?\d++\.(?:\d{1,2}|\d{4,})|\d{1,3}(?:,\d{3})++\.\d++)$")


def guess_decimal(cells: Iterable[str], limit: int = 5000) -> str | None:
    """Vote for the decimal separator of a sheet from cells that can only be read one way.

    "3,25" or "1.234,5" cannot be a grouped integer, so it is a vote for the comma; "3.25" for the dot.
    "1,234" alone proves nothing and casts no vote.
    """
    # A cell's vote depends on its text only: count the texts, then read each distinct one once
    counts = Counter(islice(cells, max(limit, 0)))
    # No text matches both hints (a comma hint ends in ",digits" with no dot after its comma, a dot hint
    # the other way round): each is counted apart, over the texts holding its separator
    comma = _votes(counts, [c for c in counts if "," in c], _COMMA_VOTE)
    # The dot's votes decide only whether they reach the comma's (and one at least): counted until they do,
    # which in a table of decimal points is its first few decimals, not every distinct number
    dot = _votes(counts, [c for c in counts if "." in c], _DOT_VOTE, enough=max(comma, 1))
    if comma == dot == 0:
        return None
    return "," if comma > dot else "."


def _votes(counts: Counter, texts: list[str], hint: re.Pattern, enough: int | None = None) -> int:
    """How many cells the texts that match ``hint`` (once stripped and without spaces) stand for; with
    ``enough``, counting stops once that many are found (the count returned is then at least ``enough``)."""
    cleaned = (c.strip().replace(" ", "") if " " in c else c.strip() for c in texts)
    voters = map(counts.__getitem__, compress(texts, map(hint.match, cleaned)))
    if enough is None:
        return sum(voters)
    total = 0
    for n in voters:
        total += n
        if total >= enough:
            break
    return total


class SheetCells:
    """One sheet's cells, stripped, with the sheet's decimal separator; each distinct text is parsed once.

    Line features, stub detection and observations all need the parse of the same cells, and a sheet
    repeats its texts a lot (years, markers, small counts), so detection shares one of these per sheet.
    """

    def __init__(self, rows: Sequence[Sequence[str]], decimal: str | None) -> None:
        self.text: list[list[str]] = [list(map(str.strip, row)) for row in rows]
        self.decimal = decimal
        self._parsed: dict[str, ParsedValue] = {}

    @classmethod
    def guess(cls, rows: Sequence[Sequence[str]]) -> SheetCells:
        """The cells with the decimal separator voted by ``guess_decimal``."""
        cells = cls(rows, None)
        cells.decimal = guess_decimal(chain.from_iterable(cells.text))
        return cells

    def columns(self, lo: int, hi: int) -> SheetCells:
        """The same cells cut to columns ``lo..hi``, sharing the parses (a table beside another one)."""
        part = SheetCells((), self.decimal)
        part.text = [row[lo : hi + 1] for row in self.text]
        part._parsed = self._parsed
        return part

    @property
    def parsed(self) -> dict[str, ParsedValue]:
        """The parses made so far, by text (read-only for callers)."""
        return self._parsed

    def parse(self, text: str) -> ParsedValue:
        """``parse_value(text, self.decimal)``, remembered for the next cell with the same text."""
        parsed = self._parsed.get(text)
        if parsed is None:
            parsed = self._parsed[text] = parse_value(text, self.decimal)
        return parsed


def rounding_unit(v: np.ndarray) -> np.ndarray:
    """Published figures are rounded: a total may differ from the sum of its parts by a few units."""
    frac = np.abs(v - np.round(v))
    unit = np.where(frac < 1e-9, 1.0, 0.1)
    return unit * 2
