"""Training the table detector's models on the annotated corpora (``tables_corpora``), and their validation.

    python -m sbcrawl_dev bench tables --regions --loco         (figures, leave-one-corpus-out)
    python -m sbcrawl_dev bench tables --regions --train-models  (refit on every corpus, write the JSON)

Line classes come from the corpora that annotate lines (SAUS, FUSTE); sheets annotated with table ranges
only (the real files) get classes from their ranges: the header rows are headers, the other rows of a
table are data (a row of one label and no figure: a group), rows above a sheet's first table are
metadata, rows after a table notes, rows between two tables the next one's title when nearer to it.
Long sheets weigh as ``MAX_LINES`` lines at most, so that a few sheets of thousands of lines (FUSTE's
triathlon results) do not outweigh all the others.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from airflow_sbcrawl.tables.classifier import LineClassifier
from airflow_sbcrawl.tables.features import FEATURE_NAMES, sheet_features
from airflow_sbcrawl.tables.regions import LINE_FEATURES

MAX_LINES = 150


def line_labels(sheet: dict) -> list[str]:
    """One class per row: the annotated ones, or those implied by the sheet's table ranges."""
    if sheet.get("lines"):
        return list(sheet["lines"])
    rows = sheet["rows"]
    blank = [not any(c.strip() for c in r) for r in rows]
    labels = ["empty" if b else "" for b in blank]
    tables = sorted(sheet["tables"], key=lambda t: t["range"][0])
    for t in tables:
        r0, r1, c0, c1 = t["range"]
        header = t.get("header") or [r0, r0 - 1]
        for i in range(r0, min(r1, len(rows) - 1) + 1):
            if blank[i]:
                continue
            if header[0] <= i <= header[1]:
                labels[i] = "header"
                continue
            cells = [c.strip() for c in rows[i][c0 : c1 + 1] if c.strip()]
            figures = sum(1 for c in cells if any(ch.isdigit() for ch in c))
            labels[i] = "group" if len(cells) == 1 and not figures else "data"
    starts = [t["range"][0] for t in tables]
    ends = [t["range"][1] for t in tables]
    for i, lab in enumerate(labels):
        if lab:
            continue
        before = [e for e in ends if e < i]
        after = [s for s in starts if s > i]
        if not before:
            labels[i] = "metadata"
        elif not after:
            labels[i] = "notes"
        else:
            labels[i] = "metadata" if after[0] - i < i - before[-1] else "notes"
    return labels


@dataclass
class SheetData:
    """A sheet's features and line classes, computed once for every model fitted on it."""

    corpus: str
    sheet: dict
    feats: np.ndarray  # (lines, FEATURE_NAMES)
    labels: list[str]

    @property
    def lines(self) -> np.ndarray:
        return np.flatnonzero(np.asarray(self.labels) != "empty")


def stacked(sheet: dict, rng: np.random.Generator, min_part: int = 3) -> dict | None:
    """A copy of a one-table sheet whose body is cut into 2 or 3 tables stacked one under the other, each
    under a blank line and its own copy of the header block (the first cell of a copy's first header line
    sometimes another label, as "People QuickFacts" then "Business QuickFacts" over the same columns);
    None when the sheet has no such table (no header block, a body under ``2 * min_part`` lines).

    Tables sharing their column headings, stacked with a blank line between, are common in statistics
    files and absent from SAUS (one table per sheet): without copies of this kind, a model learning from
    SAUS reads a repeated header under a blank line as the continuation of the table above.
    """
    if len(sheet["tables"]) != 1 or not sheet["tables"][0].get("header"):
        return None
    rows = sheet["rows"]
    r0, r1, c0, c1 = sheet["tables"][0]["range"]
    h0, h1 = sheet["tables"][0]["header"]
    r1 = min(r1, len(rows) - 1)
    if h0 != r0 or h1 >= r1:
        return None
    body = list(range(h1 + 1, r1 + 1))
    filled = [i for i in body if any(c.strip() for c in rows[i])]
    parts = int(rng.integers(2, 4))
    if len(filled) < parts * min_part:
        return None
    # cut points: a part begins at a non-blank body line, each part holding min_part non-blank lines or more
    cuts = sorted(rng.choice(np.arange(1, len(filled) // min_part), size=parts - 1, replace=False) * min_part)
    begins = [filled[0]] + [filled[k] for k in cuts]
    ends = [b - 1 for b in begins[1:]] + [r1]
    header = [list(r) for r in rows[h0 : h1 + 1]]
    lines = sheet.get("lines")
    width = max(len(r) for r in rows)
    labels = [r[c0].strip() for r in (rows[i] for i in filled) if c0 < len(r) and r[c0].strip()]
    new_rows: list[list[str]] = [list(r) for r in rows[:r0]]
    new_lines: list[str] = list(lines[:r0]) if lines else []
    tables = []
    for k, (a, b) in enumerate(zip(begins, ends, strict=True)):
        while b > a and not any(c.strip() for c in rows[b]):
            b -= 1  # the part ends at its last non-blank line; the blank line comes next
        if k:
            new_rows.append([""] * width)
            new_lines.append("empty")
        copy = [list(r) for r in header]
        if k and labels and header[0][c0:c0 + 1] and header[0][c0].strip() and rng.random() < 0.5:
            copy[0][c0] = str(rng.choice(labels))
        top = len(new_rows)
        new_rows.extend(copy)
        new_lines.extend(["header"] * len(copy))
        new_rows.extend(list(r) for r in rows[a : b + 1])
        new_lines.extend(list(lines[a : b + 1]) if lines else [])
        tables.append({"range": [top, len(new_rows) - 1, c0, c1], "header": [top, top + len(copy) - 1]})
    new_rows.extend(list(r) for r in rows[r1 + 1 :])
    if lines:
        new_lines.extend(lines[r1 + 1 :])
    return {**sheet, "id": sheet["id"] + "#stacked", "rows": new_rows, "tables": tables,
            "lines": new_lines if lines else None}


def prepare(corpora: dict[str, list[dict]], augment: bool = False, seed: int = 0) -> list[SheetData]:
    """Every sheet's features (with the layout features) and line classes; with ``augment``, also a
    ``stacked`` copy of every sheet that has one (same corpus and group as its sheet, so that a corpus
    held out takes its copies with it and cross-validation folds never part a sheet and its copy)."""
    rng = np.random.default_rng(seed)
    out = []
    for name, sheets in corpora.items():
        for s in list(sheets) + ([c for c in (stacked(s, rng) for s in sheets) if c] if augment else []):
            rows = s["rows"]
            feats = sheet_features(rows, layout=True) if rows else np.zeros((0, len(LINE_FEATURES)))
            out.append(SheetData(name, {**s, "group": s.get("group") or s["id"].removesuffix("#stacked")}, feats,
                                 line_labels(s)))
    return out


@contextmanager
def one_thread() -> Iterator[None]:
    """BLAS and OpenMP limited to one thread, so that a fit is a function of its data only.

    OpenBLAS shares a matrix product out among its threads and rounds its sums differently with their
    number (a logistic regression on 3,001 random rows already ends with other last bits on 2 threads
    than on 1, on 20,000 rows not): the line model then depends on ``OMP_NUM_THREADS`` and the machine's
    cores, and after a few thousand L-BFGS steps so do the region models learning from its predictions
    and their scores (the SAUS-held-out models of two LOCO runs differed by 0.014 in
    exact F1). On one thread it is also faster on a shared machine: idle OpenBLAS threads spin.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


def fit_lines(data: Sequence[SheetData], max_lines: int = MAX_LINES, C: float = 1.0) -> LineClassifier:
    """The line model fitted on the non-empty lines of ``data`` (on one thread: ``one_thread``)."""
    xs, ys, ws = [], [], []
    for d in data:
        keep = d.lines
        if not len(keep):
            continue
        xs.append(d.feats[keep][:, : len(FEATURE_NAMES)])
        ys.extend(d.labels[i] for i in keep)
        ws.append(np.full(len(keep), min(1.0, max_lines / len(keep))))
    with one_thread():
        return LineClassifier(C=C).fit_features(np.vstack(xs), ys, np.concatenate(ws))


# -- where the tables are ---------------------------------------------------------------------------------

ROLE_OF = {"metadata": 0, "header": 1, "group": 2, "data": 2, "derived": 2, "notes": 3}


def truth_decisions(sheet: dict) -> list[str]:
    """Per row: "start" on a table's first row, "continue" on its other non-blank rows, "outside" on the
    other non-blank rows, "" on blank rows."""
    rows = sheet["rows"]
    out = ["" if not any(c.strip() for c in r) else "outside" for r in rows]
    for t in sheet["tables"]:
        r0, r1 = t["range"][0], min(t["range"][1], len(rows) - 1)
        for i in range(r0, r1 + 1):
            if out[i]:
                out[i] = "continue"
        if r0 < len(rows):
            out[r0] = "start"
    return out


def group_folds(data: Sequence[SheetData], k: int, seed: int = 0) -> list[np.ndarray]:
    """Indices of ``data`` in ``k`` folds; the sheets of one group (template, file) stay together."""
    groups = sorted({(d.corpus, d.sheet.get("group") or d.sheet["id"]) for d in data})
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(groups))
    fold_of = {groups[g]: n % k for n, g in enumerate(order)}
    assign = np.array([fold_of[(d.corpus, d.sheet.get("group") or d.sheet["id"])] for d in data])
    return [np.flatnonzero(assign == f) for f in range(k)]


def _sample(d: SheetData, max_lines: int, rng: np.random.Generator) -> np.ndarray:
    """A sheet's non-empty lines, at most ``max_lines``: every line that is not a body line, then body
    lines drawn at random."""
    lines = d.lines
    if len(lines) <= max_lines:
        return lines
    body = np.array([ROLE_OF[d.labels[i]] == 2 for i in lines])
    keep = lines[~body]
    room = max(max_lines - len(keep), 0)
    picked = rng.choice(lines[body], size=min(room, int(body.sum())), replace=False)
    return np.sort(np.concatenate([keep, picked]))


def _hgb_fit(x: np.ndarray, y: np.ndarray, max_iter: int, depth: int):
    """The gradient-boosted trees both region models are (small, so that evaluating them stays cheap),
    fitted on one thread (``one_thread``; OpenMP threads spinning on a shared machine also make a small
    fit minutes long)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    with one_thread():
        return HistGradientBoostingClassifier(max_iter=max_iter, max_depth=depth, learning_rate=0.15,
                                              l2_regularization=1.0, min_samples_leaf=20, random_state=0).fit(x, y)


@dataclass
class Fitted:
    """The models of one fit, and the out-of-fold inputs it trained its later stages on."""

    line: LineClassifier
    regions: object  # airflow_sbcrawl.tables.regions.RegionModel


def fit_models(data: Sequence[SheetData], folds: int = 3, max_lines: int = MAX_LINES, seed: int = 0,
               line_corpora: Sequence[str] | None = None, role_iter: int = 80, start_iter: int = 80,
               depth: int = 4, line: LineClassifier | None = None) -> Fitted:
    """The line model, then the role and start models stacked on out-of-fold predictions of the stage
    before, all fitted on ``data``.

    ``line_corpora``: the corpora the line model learns from (default: all of ``data``). ``line``: a line
    model fitted beforehand (the shipped one), whose predictions the region models learn from as they are.
    """
    from airflow_sbcrawl.tables.boosted import BoostedTrees
    from airflow_sbcrawl.tables.regions import RegionModel

    rng = np.random.default_rng(seed)
    fold_idx = group_folds(data, folds, seed)
    # out-of-fold line probabilities (unless the line model is given), then out-of-fold role probabilities
    line_proba = [None] * len(data)
    width = len(FEATURE_NAMES)
    if line is not None:
        for n, d in enumerate(data):
            line_proba[n] = line.classify_features(d.feats[:, :width])[1]
    else:
        line = fit_lines([d for d in data if line_corpora is None or d.corpus in line_corpora], max_lines)
        for f in range(folds):
            held = set(fold_idx[f].tolist())
            model = fit_lines([d for n, d in enumerate(data)
                               if n not in held and (line_corpora is None or d.corpus in line_corpora)], max_lines)
            for n in fold_idx[f]:
                line_proba[n] = model.classify_features(data[n].feats[:, :width])[1]
    samples = [_sample(d, max_lines, rng) for d in data]

    def role_fit(which):
        x = np.vstack([np.hstack([data[n].feats[samples[n]], line_proba[n][samples[n]]]) for n in which])
        y = np.concatenate([[ROLE_OF[data[n].labels[i]] for i in samples[n]] for n in which])
        return BoostedTrees.from_sklearn(_hgb_fit(x, y, role_iter, depth))

    everyone = [n for n in range(len(data)) if len(samples[n])]
    roles = role_fit(everyone)
    role_proba = [None] * len(data)
    for f in range(folds):
        held = set(fold_idx[f].tolist())
        model = role_fit([n for n in everyone if n not in held])
        for n in fold_idx[f]:
            role_proba[n] = _roles(model, data[n], line_proba[n])
    xs, ys = [], []
    for n, d in enumerate(data):
        x, at_lines = _start_rows(d, role_proba[n])
        if not len(at_lines):
            continue
        truth = truth_decisions(d.sheet)
        cap = 4 * max_lines
        keep = at_lines if len(at_lines) <= cap else np.sort(rng.choice(at_lines, cap, replace=False))
        pick = np.isin(at_lines, keep)
        xs.append(x[pick])
        ys.extend(truth[i] for i in at_lines[pick])
    from airflow_sbcrawl.tables.regions import DECISIONS

    y = np.array([DECISIONS.index(v) for v in ys])
    starts = BoostedTrees.from_sklearn(_hgb_fit(np.vstack(xs), y, start_iter, depth))
    return Fitted(line, RegionModel(roles, starts))


def _roles(model, d: SheetData, line_proba: np.ndarray) -> np.ndarray:
    from airflow_sbcrawl.tables.regions import role_inputs

    out = np.zeros((len(d.feats), 4))
    lines = d.lines
    if len(lines):
        out[lines] = model.proba(role_inputs(d.feats[lines], line_proba[lines]))
    return out


def _start_rows(d: SheetData, role_proba: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The start model's inputs on a sheet's candidate lines, and those lines."""
    from airflow_sbcrawl.tables.features import EMPTY, MARKER, NUMBER, cell_kinds
    from airflow_sbcrawl.tables.regions import candidates, start_inputs
    from airflow_sbcrawl.tables.values import SheetCells

    rows = d.sheet["rows"]
    if not rows or not len(d.lines):
        return np.zeros((0, 0)), np.zeros(0, dtype=np.intp)
    cells = SheetCells.guess(rows)
    kinds, _ = cell_kinds(rows, cells.decimal, cells)
    order = np.flatnonzero((kinds != EMPTY).any(axis=1))
    k = kinds[order]
    figures = ((k == NUMBER) | (k == MARKER)).any(axis=1)
    rp = role_proba[order]
    at = candidates(rp.argmax(axis=1), order, figures)
    if not len(at):
        return np.zeros((0, 0)), np.zeros(0, dtype=np.intp)
    return start_inputs(d.feats, rp, order, k != EMPTY, figures, at), order[at]


# -- leave-one-corpus-out ---------------------------------------------------------------------------------


def loco_split(data: Sequence[SheetData], held_out: str) -> list[SheetData]:
    """The sheets a model scored on ``held_out`` may learn from: those of every other corpus."""
    return [d for d in data if d.corpus != held_out]


def loco_fit(data: Sequence[SheetData], held_out: str, shipped_line: LineClassifier, shipped_from: Sequence[str],
             **kw) -> tuple[LineClassifier, object]:
    """The line model and region model scored on ``held_out``, fitted without any of its sheets.

    The shipped line model is kept when it learnt from no sheet of ``held_out`` (``shipped_from``: the
    corpora it learnt from), else a line model is fitted on the other corpora; the region models learn
    from that line model's predictions, as the shipped ones do from the shipped line model's.
    """
    train = loco_split(data, held_out)
    line = shipped_line if held_out not in shipped_from else fit_lines(train)
    return line, fit_models(train, line=line, **kw).regions
