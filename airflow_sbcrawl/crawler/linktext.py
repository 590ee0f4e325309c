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
#: Where the default policy lets the model order links (a crawl's ``link_text_scope``).
SCOPES = ("template", "action")

_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")
_DIM_LOG2 = 16
_MAX_WORDS = 24  # per group: the first words of a long row say what the row is about


def link_features(groups: Iterable[str], url: str, anchor: str, title: str, row: str) -> np.ndarray:
    """The hashed word features of a link (int32 indices, one per distinct word of each group read), each
    word tagged with its group, so "data" in an anchor and "data" in a URL are two features."""
    texts = {"anchor": anchor, "title": title, "row": row}
    found: list[int] = []
    for group in groups:
        # The host is the same for every link of a site: a URL's words are those of its path.
        text = url.partition("://")[2].partition("/")[2] if group == "url" else texts[group]
        if not text:
            continue
        cache = _TEXTS[group]
        indices = cache.get(text)
        if indices is None:
            if len(cache) >= _CACHE_MAX:
                cache.clear()
            indices = cache[text] = _indices(group, text)
        found.extend(indices)
    if not found:
        return _EMPTY
    unique = dict.fromkeys(found)  # in first-seen order: the same array for the same words, every run
    return np.fromiter(unique, dtype=np.int32, count=len(unique))


def _indices(group: str, text: str) -> list[int]:
    """The feature indices of one part's words."""
    hashes = _HASHES[group]
    out = []
    for word in _WORD.findall(_DIGITS.sub("0", text.lower()))[:_MAX_WORDS]:
        index = hashes.get(word)
        if index is None:
            if len(hashes) >= _CACHE_MAX:
                hashes.clear()
            index = hashes[word] = zlib.crc32(f"{group[0]}:{word}".encode()) & _MASK
        out.append(index)
    return out


# Each part's texts and words to their feature indices: a site's anchors, rows and words repeat on every
# page, and working them out again cost more than the rest of a link's handling.
_TEXTS: dict[str, dict[str, list[int]]] = {group: {} for group in GROUPS}
_HASHES: dict[str, dict[str, int]] = {group: {} for group in GROUPS}
_CACHE_MAX = 100_000
_MASK = (1 << _DIM_LOG2) - 1
#: How many features a link's words are hashed to.
DIM = 1 << _DIM_LOG2
_EMPTY = np.zeros(0, dtype=np.int32)


class LinkTextModel:
    """Logistic regression of "the page behind this link paid" on a link's hashed words, one SGD step per
    page fed back. Each link's words count 1/sqrt(n) (n its number of words), as an L2-normalised bag.

    The step ``eta`` is large for a logistic regression because a crawl gives it few examples (one per
    page, a few hundred on a small site) and a link has some 40 words, each moved eta/sqrt(40) a step: at
    0.5 the words that tell siblings apart ("Reported online") took some twenty pages of each kind to be
    worth one unit of log-odds. 1.5 was chosen on the development replay sites."""

    def __init__(self, eta: float = 1.5, dim_log2: int = _DIM_LOG2) -> None:
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
        n = len(features)
        if not n:
            return np.zeros(0)
        lengths = np.fromiter(map(len, features), dtype=np.int64, count=n)
        rows = np.repeat(np.arange(n), lengths)
        sums = np.bincount(rows, weights=self.coef[np.concatenate(features)], minlength=n)
        return sums / np.sqrt(np.maximum(lengths, 1)) + self.intercept

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
