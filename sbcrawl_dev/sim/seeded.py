"""Stateless seeded randomness: every value is a hash of ``(seed, *key)``.

The simulator never keeps a global RNG whose state depends on the order in which pages are requested:
page ``/news/17`` must look the same whether it is the first or the millionth page served, and whether or
not the rest of the site was ever built.  A keyed hash gives that for the cost of one BLAKE2b call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

_SCALE = float(1 << 64)


def h64(seed: int, *key: object) -> int:
    """A 64-bit integer determined by ``seed`` and ``key`` alone."""
    data = repr((seed, *key)).encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def unit(seed: int, *key: object) -> float:
    """A float in [0, 1)."""
    return h64(seed, *key) / _SCALE


def chance(p: float, seed: int, *key: object) -> bool:
    return unit(seed, *key) < p


def randint(lo: int, hi: int, seed: int, *key: object) -> int:
    """An integer in [lo, hi], both ends included."""
    if hi <= lo:
        return lo
    return lo + h64(seed, *key) % (hi - lo + 1)


def pick(items: Sequence[T], seed: int, *key: object) -> T:
    return items[h64(seed, *key) % len(items)]


def sample(n: int, k: int, seed: int, *key: object) -> list[int]:
    """``k`` distinct integers of ``range(n)`` (fewer if ``n < k``), in a seeded order."""
    k = min(k, n)
    out: list[int] = []
    seen: set[int] = set()
    i = 0
    while len(out) < k:
        v = h64(seed, *key, i) % n
        i += 1
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def stream(seed: int, *key: object) -> Iterator[int]:
    """Endless 32-bit integers from one hash (a 64-bit LCG): cheap when a page needs many small draws."""
    x = h64(seed, *key)
    while True:
        x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        yield x >> 32


def weighted(choices: Sequence[tuple[T, float]], seed: int, *key: object) -> T:
    total = sum(w for _, w in choices)
    x = unit(seed, *key) * total
    for value, w in choices:
        x -= w
        if x < 0:
            return value
    return choices[-1][0]
