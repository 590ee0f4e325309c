"""A multi-table development set made from single-table annotated sheets (SAUS), and the region metric.

Real statistics workbooks often hold several tables in one sheet: stacked (a blank line and a title, or
only a repeated header, between them) or side by side (a blank column between them). SAUS has one table
per sheet, so multi-table sheets are composed from its sheets, keeping their line annotations:

- ``stack``: 2-3 tables one under the other, 0-2 blank lines between them;
- ``split``: one table cut in two inside its body, the second part under a blank line with the header
  repeated and no title (the layout of "the same table for another year");
- ``side``: 2 tables side by side, 1-2 blank columns between them, tops aligned.

The truth of every composed sheet is the list of its tables' cell rectangles; a detected table matches a
true one when their intersection over union is at least 0.5 (each matched once, best pairs first).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

Region = tuple[int, int, int, int]  # first row, last row, first column, last column (inclusive)


def _nonempty(row: Sequence[str]) -> bool:
    return any(c.strip() for c in row)


def crop(sheet: dict) -> tuple[list[list[str]], list[str]]:
    """A sheet's rows and line classes cut to the bounding box of its non-empty cells."""
    rows, labels = sheet["table_array"], sheet["line_annotation"]
    keep = [i for i, r in enumerate(rows) if _nonempty(r)]
    if not keep:
        return [], []
    rows, labels = rows[keep[0] : keep[-1] + 1], labels[keep[0] : keep[-1] + 1]
    width = max(len(r) for r in rows)
    used = [j for j in range(width) if any(j < len(r) and r[j].strip() for r in rows)]
    lo, hi = used[0], used[-1]
    return [[(r[j] if j < len(r) else "") for j in range(lo, hi + 1)] for r in rows], list(labels)


def _region(top: int, left: int, rows: list[list[str]]) -> Region:
    return (top, top + len(rows) - 1, left, left + len(rows[0]) - 1)


def _stack(parts: list[tuple[list[list[str]], list[str]]], gaps: list[int]) -> dict:
    grid: list[list[str]] = []
    labels: list[str] = []
    regions: list[Region] = []
    width = max(len(p[0][0]) for p in parts)
    for k, (rows, lab) in enumerate(parts):
        if k:
            grid += [[""] * width for _ in range(gaps[k - 1])]
            labels += ["empty"] * gaps[k - 1]
        regions.append(_region(len(grid), 0, rows))
        grid += [r + [""] * (width - len(r)) for r in rows]
        labels += lab
    return {"table_array": grid, "line_annotation": labels, "tables": regions}


def _side(parts: list[tuple[list[list[str]], list[str]]], gap: int) -> dict:
    height = max(len(p[0]) for p in parts)
    grid = [[] for _ in range(height)]
    regions: list[Region] = []
    for k, (rows, _) in enumerate(parts):
        if k:
            for r in grid:
                r.extend([""] * gap)
        width = len(rows[0])
        regions.append(_region(0, len(grid[0]), rows))
        for i in range(height):
            grid[i].extend(rows[i] if i < len(rows) else [""] * width)
    # Line classes are not defined when a line crosses two tables
    return {"table_array": grid, "line_annotation": None, "tables": regions}


def _split(rows: list[list[str]], labels: list[str]) -> dict | None:
    """One table cut inside its body; the second part repeats the header under one blank line."""
    header = [i for i, c in enumerate(labels) if c == "header"]
    body = [i for i, c in enumerate(labels) if c in ("data", "derived", "group")]
    if not header or len(body) < 8 or body[0] < header[-1]:
        return None
    cut = body[len(body) // 2]
    while cut < len(labels) and labels[cut] not in ("data", "group"):
        cut += 1
    first = (rows[:cut], labels[:cut])
    block = range(header[0], header[-1] + 1)
    second = ([rows[i] for i in block] + rows[cut:], [labels[i] for i in block] + labels[cut:])
    while first[1] and first[1][-1] == "empty":
        first = (first[0][:-1], first[1][:-1])
    return _stack([first, second], [1])


def compose(sheets: list[dict], n: int = 300, seed: int = 12) -> list[dict]:
    """``n`` multi-table sheets from the annotated single-table ``sheets``; the same seed gives the same set."""
    rng = random.Random(seed)
    cropped = [(s, *crop(s)) for s in sheets]
    pool = [(s, rows, lab) for s, rows, lab in cropped if rows and len(rows) <= 120 and len(rows[0]) <= 30]
    out = []
    while len(out) < n:
        kind = rng.choice(("stack", "stack", "split", "side"))
        picks = rng.sample(pool, min(3 if kind == "stack" and rng.random() < 0.4 else 2, len(pool)))
        parts = [(rows, lab) for _, rows, lab in picks]
        if kind == "stack":
            sheet = _stack(parts, [rng.choice((0, 1, 1, 2)) for _ in parts[1:]])
        elif kind == "side":
            sheet = _side(parts, rng.choice((1, 1, 2)))
        else:
            sheet = _split(*parts[0])
            picks = picks[:1]
            if sheet is None:
                continue
        sheet["kind"] = kind
        sheet["file_name"] = "+".join(str(p[0].get("file_name", "")) for p in picks)
        out.append(sheet)
    return out


def iou(a: Region, b: Region) -> float:
    rows = min(a[1], b[1]) - max(a[0], b[0]) + 1
    cols = min(a[3], b[3]) - max(a[2], b[2]) + 1
    if rows <= 0 or cols <= 0:
        return 0.0
    inter = rows * cols
    area = (a[1] - a[0] + 1) * (a[3] - a[2] + 1) + (b[1] - b[0] + 1) * (b[3] - b[2] + 1)
    return inter / (area - inter)


def match(truth: list[Region], found: list[Region], threshold: float = 0.5) -> int:
    """How many true tables a found one matches at IoU >= threshold, each used once, best pairs first."""
    pairs = sorted(((iou(t, f), i, j) for i, t in enumerate(truth) for j, f in enumerate(found)), reverse=True)
    used_t: set[int] = set()
    used_f: set[int] = set()
    hits = 0
    for score, i, j in pairs:
        if score < threshold:
            break
        if i not in used_t and j not in used_f:
            used_t.add(i)
            used_f.add(j)
            hits += 1
    return hits
