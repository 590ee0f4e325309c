"""What a link says of the page behind it, learned per site as the crawl goes: the words of its anchor, its
``title``, the row around it and its URL, hashed, in an online logistic regression of "this page paid".

No word lists: a site's own words are learned from its own pages, in any language and script. On an SDG
platform "Reported online" beside an indicator's name marks exactly the indicator pages that link data, and
"Exploring data sources" those that link none; after a few pages of each the model ranks their siblings.
Its whole state is a weight array, an intercept and a step count: saved in checkpoints without pickling."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable

import numpy as np

#: The parts of a link the model may read; a crawl's ``link_context`` setting picks some of them.
GROUPS = ("anchor", "title", "row", "url")

_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")
_DIM_LOG2 = 16
_MAX_WORDS = 24  # per group: the first words of a long row say what the row is about


def link_features(groups: Iterable[str], url: str, anchor: str, title: str, row: str) -> np.ndarray:
    """The hashed word features of a link (int32 indices, one per distinct word of each group read), each
    word tagged with its group, so "data" in an anchor and "data" in a URL are two features."""
    texts = {"anchor": anchor, "title": title, "row": row}
    words: set[str] = set()
    for group in groups:
        if group == "url":
            path = url.partition("://")[2].partition("/")[2]  # the host is the same for every link of a site
            text = path
        else:
            text = texts[group]
        if not text:
            continue
        found = _WORD.findall(_DIGITS.sub("0", text.lower()))[:_MAX_WORDS]
        words.update(f"{group[0]}:{w}" for w in found)
    if not words:
        return _EMPTY
    mask = (1 << _DIM_LOG2) - 1
    return np.fromiter((zlib.crc32(w.encode()) & mask for w in words), dtype=np.int32, count=len(words))


_EMPTY = np.zeros(0, dtype=np.int32)


class LinkTextModel:
    """Logistic regression of "the page behind this link paid" on a link's hashed words, one SGD step per
    page fed back. Each link's words count 1/sqrt(n) (n its number of words), as an L2-normalised bag."""

    def __init__(self, eta: float = 0.5, dim_log2: int = _DIM_LOG2) -> None:
        self.eta = eta
        self.coef = np.zeros(1 << dim_log2)
        self.intercept = 0.0
        self.steps = 0
        self.positives = 0

    @property
    def trained(self) -> bool:
        """Whether the model has seen both a page that paid and one that did not: before that it ranks
        every link alike."""
        return 0 < self.positives < self.steps

    def scores(self, features: list[np.ndarray]) -> np.ndarray:
        """The decision value (log-odds that the page pays) of each link."""
        out = np.empty(len(features))
        for i, idx in enumerate(features):
            out[i] = self.coef[idx].sum() / np.sqrt(len(idx)) if len(idx) else 0.0
        return out + self.intercept

    def learn(self, features: np.ndarray, paid: bool) -> None:
        """One SGD step on one link whose page was fed back."""
        value = 1.0 / np.sqrt(len(features)) if len(features) else 0.0
        margin = float(self.coef[features].sum()) * value + self.intercept
        grad = 1.0 / (1.0 + np.exp(-max(min(margin, 30.0), -30.0))) - float(paid)
        self.coef[features] -= self.eta * grad * value
        self.intercept -= self.eta * grad
        self.steps += 1
        self.positives += bool(paid)

    def state(self) -> dict:
        """The model's scalars (its weights go in ``arrays``)."""
        return {"intercept": self.intercept, "steps": self.steps, "positives": self.positives}

    def arrays(self) -> dict[str, np.ndarray]:
        return {"linktext_coef": self.coef.copy()}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        """Take back a ``state()`` and ``arrays()``; a checkpoint written before the model existed leaves it
        untrained."""
        coef = arrays.get("linktext_coef")
        if coef is None or not state:
            return
        if coef.shape != self.coef.shape:
            raise ValueError(f"link text weights of shape {coef.shape}, expected {self.coef.shape}")
        self.coef = coef.astype(np.float64)
        self.intercept = float(state["intercept"])
        self.steps = int(state["steps"])
        self.positives = int(state["positives"])
