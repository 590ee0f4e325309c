"""Small online learners over hashed tokens, shared by the TRES and Anthelion baselines.

Tokens are hashed with CRC-32 (stable across processes, unlike ``hash``), so a checkpoint's weights mean
the same after a resume in another process, and no vocabulary has to grow or be saved."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Sequence

import numpy as np

_SPLIT = re.compile(r"[^0-9a-z]+")
_NUMBER = re.compile(r"^[0-9]+$")


def tokens(text: str, min_len: int = 3) -> list[str]:
    """Lower-case alphanumeric tokens of a URL or an anchor; tokens shorter than ``min_len`` are dropped
    and numbers become one token (Anthelion's best preprocessing, §3.1)."""
    out = []
    for token in _SPLIT.split(text.lower()):
        if _NUMBER.match(token):
            out.append("[NUMBER]")
        elif len(token) >= min_len:
            out.append(token)
    return out


def hashed(words: Iterable[str], dim: int, prefix: str = "") -> list[int]:
    """Distinct feature indices of ``words`` in ``[0, dim)``; ``prefix`` keeps feature families apart."""
    return sorted({zlib.crc32(f"{prefix}{w}".encode()) % dim for w in words})


class HashedLogistic:
    """Logistic regression on binary hashed features, trained one example at a time by SGD."""

    def __init__(self, dim: int = 2**12, rate: float = 0.1) -> None:
        self.dim = dim
        self.rate = rate
        self.weights = np.zeros(dim + 1)  # the last one is the bias

    def proba(self, features: Sequence[int]) -> float:
        z = self.weights[list(features)].sum() + self.weights[-1]
        return float(1.0 / (1.0 + np.exp(-np.clip(z, -30, 30))))

    def learn(self, features: Sequence[int], label: int) -> None:
        step = self.rate * (label - self.proba(features))
        if features:
            self.weights[list(features)] += step
        self.weights[-1] += step


class HashedNaiveBayes:
    """Bernoulli-style naive Bayes over the features present, updated online: counts per class and
    feature with Laplace smoothing. Scores are log-odds of the positive class."""

    def __init__(self, dim: int = 10_000) -> None:
        self.dim = dim
        self.counts = np.zeros((2, dim))  # class -> feature -> examples of the class holding it
        self.totals = np.zeros(2)  # examples per class

    def log_odds(self, features: Sequence[int]) -> float:
        idx = list(features)
        prior = np.log((self.totals[1] + 1) / (self.totals[0] + 1))
        pos = np.log((self.counts[1, idx] + 1) / (self.totals[1] + 2)).sum()
        neg = np.log((self.counts[0, idx] + 1) / (self.totals[0] + 2)).sum()
        return float(prior + pos - neg)

    def learn(self, features: Sequence[int], label: int) -> None:
        self.counts[label, list(features)] += 1
        self.totals[label] += 1
