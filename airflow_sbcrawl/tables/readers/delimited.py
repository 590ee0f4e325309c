"""CSV/TSV: encoding and dialect found on a bounded sample, so a 1 GB file costs one pass."""

from __future__ import annotations

import codecs
import csv
import re
from collections.abc import Iterator

from .base import DEFAULT_LIMITS, Limits, ReadError, ReadResult, Sheet, looks_binary, trim

_DELIMITERS = (",", ";", "\t", "|")


def decode(data: bytes, sample_size: int = 64 * 1024) -> tuple[str, str]:
    """Bytes to text: BOM, then strict UTF-8, then a detector on the sample, then cp1252/latin-1.

    latin-1 maps every byte, so decoding never fails; the worst case is a few wrong accented letters.
    """
    for bom, enc in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(enc, errors="replace"), enc
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    candidates = []
    sample = data[:sample_size]
    # A detector needs evidence: on a few accented words it happily picks a CJK code page, while
    # cp1252 is what western statistics offices write when they do not write UTF-8.
    enough = sum(b > 127 for b in sample) >= 200
    try:
        from charset_normalizer import from_bytes

        best = from_bytes(sample).best() if enough else None
        if best is not None and best.encoding:
            candidates.append(best.encoding)
    except ImportError:  # optional: the fallbacks below are good enough for western offices
        pass
    candidates += ["cp1252", "latin-1"]
    for enc in candidates:
        try:
            return data.decode(enc), enc
        except (UnicodeDecodeError, LookupError):
            continue
    return data.decode("latin-1"), "latin-1"  # pragma: no cover - latin-1 cannot fail


def sniff_delimiter(sample: str, hint: str | None = None) -> str:
    """The delimiter that splits the sample's lines into the most consistent number of fields.

    csv.Sniffer guesses badly on statistics files (titles and notes above and below the table), so we
    score each candidate by how many lines share its most common field count, weighted by that count.
    """
    lines = [ln for ln in sample.splitlines()[:200] if ln.strip()]
    if len(lines) > 1 and not sample.endswith("\n"):
        lines = lines[:-1]  # probably cut by the sample boundary
    if not lines:
        return hint or ","
    best, best_score = hint or ",", 0.0
    for delim in _DELIMITERS:
        counts: dict[int, int] = {}
        try:
            for row in csv.reader(lines, delimiter=delim):
                counts[len(row)] = counts.get(len(row), 0) + 1
        except csv.Error:
            continue
        fields, lines_with = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        if fields < 2:
            continue
        score = lines_with * (1 + min(fields, 20) / 20)
        if delim == hint:
            score *= 1.5
        if score > best_score:
            best, best_score = delim, score
    return best


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _bounded_lines(text: str, max_chars: int, cut: list[int]) -> Iterator[str]:
    """The text's physical lines, each cut to ``max_chars`` (the count of cut lines goes to ``cut``).

    Slices of the text rather than io.StringIO, which would hold a 4-bytes-per-character copy of it.
    """
    for match in _LINE.finditer(text):
        line = match.group()
        if len(line) > max_chars:
            cut[0] += 1
            line = line[:max_chars] + "\n"
        yield line


def read_delimited(data: bytes, name: str = "", *, limits: Limits = DEFAULT_LIMITS, tsv: bool = False) -> ReadResult:
    """A CSV or TSV file as one sheet named ``name``; ``tsv`` makes the tab the delimiter, else it is sniffed.

    Binary bytes give no sheet and one ``ReadError``. Rows past ``limits`` (rows, cells), lines cut at
    ``max_line_chars`` and a malformed line that stops the CSV parser are recorded as errors next to the
    rows read until then. Never raises for bad input.
    """
    if looks_binary(data, limits.sniff_bytes):
        return ReadResult(errors=[ReadError("", "binary content, not delimited text", "tsv" if tsv else "csv")])
    text, _encoding = decode(data, limits.sniff_bytes)
    delim = sniff_delimiter(text[: limits.sniff_bytes], "\t" if tsv else None)
    rows: list[list[str]] = []
    cut_lines = [0]
    lines = _bounded_lines(text, limits.max_line_chars, cut_lines)
    reader = csv.reader(lines, delimiter=delim, quotechar='"')
    errors: list[ReadError] = []
    cells = 0
    try:
        for row in reader:
            row = [c.strip() for c in row[: limits.max_cols]]
            rows.append(row)
            cells += sum(1 for c in row if c)
            if len(rows) >= limits.max_rows:
                errors.append(ReadError("", f"rows after {limits.max_rows} not read (row limit)"))
                break
            if cells > limits.max_cells:
                rows.pop()
                errors.append(ReadError("", f"rows after {len(rows)} not read: more than {limits.max_cells} cells"))
                break
    except csv.Error as exc:
        # A stray quote or NUL byte: keep the rows read so far rather than nothing, and say so
        errors.append(ReadError("", f"rows after {len(rows)} not read: {exc}"))
    if cut_lines[0]:
        errors.append(ReadError("", f"{cut_lines[0]} line(s) longer than {limits.max_line_chars} characters cut"))
    fmt = "tsv" if delim == "\t" else "csv"
    sheet = Sheet(name=name, rows=trim(rows, limits.max_rows, limits.max_cols), format=fmt)
    return ReadResult(sheets=[sheet], errors=[ReadError(e.member, e.reason, fmt) for e in errors])
