"""Line classifier: a multinomial logistic regression over ``features.FEATURE_NAMES``.

An estimator in scikit-learn's spirit (``fit`` / ``predict`` / ``predict_proba``) whose trained
parameters are a few kilobytes of JSON shipped in the package (``line_model.json``): readable, diffable,
and safe to load, unlike a pickle. scikit-learn is needed only to ``fit``; predicting is plain numpy.
A linear model was chosen over tree ensembles because it cross-validates as well on SAUS (grouped by
file) while being small, fast, and less able to memorise individual sheets.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np

from .features import FEATURE_NAMES, sheet_features
from .values import SheetCells

CLASSES = ("metadata", "header", "group", "data", "derived", "notes")
PARAMS_FILE = "line_model.json"


def _is_blank(row: Sequence[str]) -> bool:
    return not any(str(c).strip() for c in row)


class LineClassifier:
    """Classifies every line of a sheet as one of ``model.LINE_CLASSES`` (blank lines are ``empty``)."""

    def __init__(self, C: float = 1.0, max_iter: int = 3000) -> None:
        self.C = C
        self.max_iter = max_iter
        self.classes_: tuple[str, ...] = CLASSES
        self.mean_: np.ndarray | None = None
        self.scale_: np.ndarray | None = None
        self.coef_: np.ndarray | None = None
        self.intercept_: np.ndarray | None = None

    # -- training -------------------------------------------------------------------------------------
    @staticmethod
    def _stack(sheets: Sequence[Sequence[Sequence[str]]], labels=None):
        xs, ys = [], []
        for k, rows in enumerate(sheets):
            rows = [list(map(str, r)) for r in rows]
            feats = sheet_features(rows)
            keep = [i for i, r in enumerate(rows) if not _is_blank(r)]
            if labels is not None:
                keep = [i for i in keep if labels[k][i] != "empty"]
                ys.extend(labels[k][i] for i in keep)
            xs.append(feats[keep])
        x = np.vstack(xs) if xs else np.zeros((0, len(FEATURE_NAMES)))
        return x, ys

    def fit(self, sheets: Sequence[Sequence[Sequence[str]]], labels: Sequence[Sequence[str]],
            max_lines: int | None = None) -> LineClassifier:
        """Train on sheets (lists of rows of cell strings) and their per-line classes; returns ``self``.

        ``labels[k][i]`` is the class of line ``i`` of sheet ``k`` (``empty`` lines are left out); needs
        scikit-learn. ``max_lines``: a sheet's lines weigh at most that many lines together, so that a few
        sheets of thousands of lines do not outweigh all the others.
        """
        x, y = self._stack(sheets, labels)
        weight = None
        if max_lines:
            counts = [sum(1 for c in lab if c != "empty") for lab in labels]
            weight = np.concatenate([np.full(n, min(1.0, max_lines / max(n, 1))) for n in counts])
        return self.fit_features(x, y, weight)

    def fit_features(self, x: np.ndarray, y: Sequence[str], weight: np.ndarray | None = None) -> LineClassifier:
        """Train on a matrix of ``FEATURE_NAMES`` (one row per non-empty line) and the lines' classes."""
        from sklearn.linear_model import LogisticRegression

        self.mean_ = x.mean(axis=0)
        self.scale_ = x.std(axis=0)
        self.scale_[self.scale_ < 1e-9] = 1.0
        model = LogisticRegression(C=self.C, max_iter=self.max_iter)
        model.fit((x - self.mean_) / self.scale_, y, sample_weight=weight)
        order = [list(model.classes_).index(c) for c in CLASSES if c in model.classes_]
        self.classes_ = tuple(model.classes_[order])
        self.coef_ = model.coef_[order]
        self.intercept_ = model.intercept_[order]
        return self

    # -- prediction -----------------------------------------------------------------------------------
    def _proba(self, feats: np.ndarray) -> np.ndarray:
        if self.coef_ is None:
            raise RuntimeError("LineClassifier is not fitted; use LineClassifier.load()")
        # einsum, not @: on a sheet of a thousand lines @ hands the product to OpenBLAS's threads, which
        # then spin idle for a while and cost more CPU than the whole detection (a 10,000-cell sheet took
        # 65 ms of CPU instead of 40); einsum's own loop is single-threaded and as fast at this size
        z = np.einsum("lf,cf->lc", (feats - self.mean_) / self.scale_, self.coef_) + self.intercept_
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def predict_proba_sheet(
        self,
        rows: Sequence[Sequence[str]],
        cells: SheetCells | None = None,
        kinds_values: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> tuple[list[str], np.ndarray]:
        """Classes and class probabilities (columns in ``classes_`` order) for every line of one sheet.

        ``cells``: the sheet's parsed cells, when the caller keeps them to build tables afterwards;
        ``kinds_values``: their ``features.cell_kinds``, when the caller computed them already. Blank lines
        are ``empty`` with probabilities 0; ``repair``'s rules are applied to the classes, not to the
        probabilities. ``RuntimeError`` when the classifier is not fitted.
        """
        if cells is None:  # a caller passing cells made them from rows of strings already
            rows = [list(map(str, r)) for r in rows]
        feats = (
            sheet_features(rows, cells=cells, kinds_values=kinds_values)
            if rows
            else np.zeros((0, len(FEATURE_NAMES)))
        )
        return self.classify_features(feats)

    def classify_features(self, feats: np.ndarray) -> tuple[list[str], np.ndarray]:
        """Classes and class probabilities of lines given by their ``FEATURE_NAMES`` (``sheet_features``);
        blank lines (fill 0) are ``empty`` with probabilities 0, ``repair``'s rules apply to the classes."""
        proba = self._proba(feats) if len(feats) else np.zeros((0, len(self.classes_)))
        blank = feats[:, _F["fill"]] == 0  # a line's fill is its share of non-empty cells
        proba[blank] = 0.0
        names = self.classes_
        classes = [
            "empty" if b else names[k] for k, b in zip(proba.argmax(axis=1).tolist(), blank.tolist(), strict=True)
        ]
        return repair(classes, feats), proba

    def predict(self, sheets: Sequence[Sequence[Sequence[str]]]) -> list[list[str]]:
        """One class per line of each sheet, as ``predict_proba_sheet`` gives them; raises ``RuntimeError``
        when the classifier is not fitted."""
        return [self.predict_proba_sheet(rows)[0] for rows in sheets]

    # -- persistence ----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The fitted parameters as plain JSON (what ``line_model.json`` holds), rounded to 6 decimals."""
        assert self.coef_ is not None and self.mean_ is not None and self.scale_ is not None
        return {
            "kind": "multinomial-logistic-regression",
            "C": self.C,
            "features": FEATURE_NAMES,
            "classes": list(self.classes_),
            "mean": [round(float(v), 6) for v in self.mean_],
            "scale": [round(float(v), 6) for v in self.scale_],
            "coef": [[round(float(v), 6) for v in row] for row in self.coef_],
            "intercept": [round(float(v), 6) for v in self.intercept_],
        }

    @classmethod
    def from_dict(cls, params: dict) -> LineClassifier:
        """A classifier from ``to_dict``'s output; ``ValueError`` when it was trained on other features."""
        if params.get("features") != FEATURE_NAMES:
            raise ValueError("line model was trained on other features; retrain it (bench --train)")
        clf = cls(C=params.get("C", 1.0))
        clf.classes_ = tuple(params["classes"])
        clf.mean_ = np.asarray(params["mean"])
        clf.scale_ = np.asarray(params["scale"])
        clf.coef_ = np.asarray(params["coef"])
        clf.intercept_ = np.asarray(params["intercept"])
        return clf

    def save(self, path: str | Path) -> None:
        """Write the parameters as one line of JSON (never a pickle: loading it runs no code)."""
        Path(path).write_text(json.dumps(self.to_dict(), indent=None, separators=(",", ":")) + "\n")

    @classmethod
    def load(cls, path: str | Path | None = None) -> LineClassifier:
        """The given parameters, or those shipped with the package; ``ValueError`` as ``from_dict``."""
        if path is None:
            text = resources.files(__package__).joinpath(PARAMS_FILE).read_text()
        else:
            text = Path(path).read_text()
        return cls.from_dict(json.loads(text))


_F = {name: k for k, name in enumerate(FEATURE_NAMES)}


def repair(classes: list[str], feats: np.ndarray) -> list[str]:
    """Rules that follow from what the classes mean, applied after the model.

    The model learned from SAUS, where every sheet holds one table with totals on top. These rules state
    the definitions that hold for any sheet: a labelled total that is the sum of its neighbours is derived;
    a "Source"/"Note" line directly under a table's body is a note; a lone text line after notes and a
    blank gap opens a new table (its title); a row of years above numbers, below a title, is a header.
    """
    out = list(classes)
    nonempty = [i for i, c in enumerate(out) if c != "empty"]
    # The few features the rules read, as Python lists: reading numpy scalars line by line is slow
    read = ("total_and_sum", "kw_notes", "single_cell", "blank_above", "year_header")
    total_and_sum, kw_notes, single_cell, blank_above, year_header = (feats[:, _F[name]].tolist() for name in read)
    for pos, i in enumerate(nonempty):
        prev = out[nonempty[pos - 1]] if pos > 0 else "empty"
        nxt = out[nonempty[pos + 1]] if pos + 1 < len(nonempty) else "empty"
        if out[i] == "data" and total_and_sum[i] > 0:
            out[i] = "derived"
        elif out[i] == "metadata" and prev in ("data", "derived", "notes") and kw_notes[i] > 0:
            out[i] = "notes"
        elif (
            out[i] in ("group", "notes")
            and prev == "notes"
            and single_cell[i] > 0
            and blank_above[i] >= 0.5
            and kw_notes[i] == 0
            and nxt != "notes"
        ):
            out[i] = "metadata"
        elif out[i] == "data" and prev in ("metadata", "header") and year_header[i] > 0:
            out[i] = "header"
    return out


_DEFAULT: LineClassifier | None = None


def default_classifier() -> LineClassifier:
    """The shipped line model, loaded once per process and shared (it is only read)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = LineClassifier.load()
    return _DEFAULT
