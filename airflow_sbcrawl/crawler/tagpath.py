"""Tag paths as fixed-size vectors (§3.2): n-gram bag of words hashed to 2**m dimensions.

Each n-gram token is hashed itself (a stable 64-bit digest, then the paper's multiplicative hash h), rather
than its position in a growing vocabulary, so a tag path's vector never changes as the crawl goes on and
checkpoints need no vocabulary. Colliding tokens share their dimension with the mean of their counts, as
in the paper."""

from __future__ import annotations

import hashlib
import re
from collections import Counter

import numpy as np

BOS, EOS = "<s>", "</s>"
_DIGITS = re.compile(r"\d+")


class TagPathVectorizer:
    """Tag path -> vector of 2**dim_log2 floats: its n-grams hashed, with digits ignored by default."""

    def __init__(self, n: int = 2, dim_log2: int = 12, hash_width: int = 15, prime: int = 766_245_317,
                 cache_size: int = 100_000, ignore_digits: bool = True) -> None:
        self.n = n
        # CMS themes number their elements (Drupal's div#node-48213, WordPress' li.menu-item-4521): with
        # the digits kept, every page gets tag paths of its own and actions fragment into thousands.
        self.ignore_digits = ignore_digits
        self.dim = 1 << dim_log2
        self._mask = (1 << hash_width) - 1
        self._shift = hash_width - dim_log2
        self._prime = prime
        self._buckets: dict[str, int] = {}
        self._cache: dict[str, np.ndarray] = {}
        self._cache_size = cache_size

    def tokens(self, tag_path: str) -> list[str]:
        if self.ignore_digits:
            tag_path = _DIGITS.sub("0", tag_path)
        parts = [BOS, *tag_path.split(), EOS]
        n = min(self.n, len(parts))
        return ["\x1f".join(parts[i:i + n]) for i in range(len(parts) - n + 1)]

    def bucket(self, token: str) -> int:
        b = self._buckets.get(token)
        if b is None:
            x = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
            b = self._buckets[token] = ((self._prime * x) & self._mask) >> self._shift
        return b

    def transform_one(self, tag_path: str) -> np.ndarray:
        """The projected vector p_D of one tag path (float32, read-only, cached)."""
        vec = self._cache.get(tag_path)
        if vec is not None:
            return vec
        sums: dict[int, float] = {}
        hits: dict[int, int] = {}
        for token, count in Counter(self.tokens(tag_path)).items():
            b = self.bucket(token)
            sums[b] = sums.get(b, 0.0) + count
            hits[b] = hits.get(b, 0) + 1
        vec = np.zeros(self.dim, dtype=np.float32)
        for b, total in sums.items():
            vec[b] = total / hits[b]
        vec.setflags(write=False)
        if len(self._cache) >= self._cache_size:
            self._cache.clear()  # a bounded cache; tag paths of one site repeat, so it refills quickly
        self._cache[tag_path] = vec
        return vec

    def transform(self, tag_paths: list[str]) -> np.ndarray:
        if not tag_paths:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.transform_one(p) for p in tag_paths])
