"""Links the crawl knows of, stored compactly, and a bag of link ids with O(1) random pick and removal.

A link is an int id into ``LinkTable``'s parallel arrays (URL, depth, the page it was found on, its
interned tag path): a frontier of a million links then costs the URL strings plus a few bytes each."""

from __future__ import annotations

from array import array

import numpy as np


class LinkTable:
    """Every link the crawl met, by id: its URL, depth, the page it was found on, its tag path, and what the
    URL classifier predicted it was."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.depth = array("i")
        self.parent = array("i")  # id of the page the link was found on, -1 for the start URL
        self.path = array("i")  # interned tag path id, -1 when unknown
        # What the URL classifier predicted for the link (classify.HTML / classify.TARGET), -1 when it was not
        # asked (HEAD-labelled, start page, policies that do not classify): kept to measure the classifier.
        self.predicted = array("b")
        self.ids: dict[str, int] = {}  # every URL seen, to its id
        self.paths: list[str] = []
        self._path_ids: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.urls)

    def __contains__(self, url: str) -> bool:
        return url in self.ids

    def add(self, url: str, depth: int, parent: int, tag_path: str | None) -> int:
        """A new link (never one already there); returns its id."""
        link_id = len(self.urls)
        self.urls.append(url)
        self.depth.append(depth)
        self.parent.append(parent)
        self.predicted.append(-1)
        if tag_path is None:
            self.path.append(-1)
        else:
            pid = self._path_ids.get(tag_path)
            if pid is None:
                pid = self._path_ids[tag_path] = len(self.paths)
                self.paths.append(tag_path)
            self.path.append(pid)
        self.ids[url] = link_id
        return link_id

    def tag_path(self, link_id: int) -> str:
        """The tag path of a link's ``<a>`` element ("" when unknown)."""
        pid = self.path[link_id]
        return self.paths[pid] if pid >= 0 else ""

    def found_on(self, link_id: int) -> str:
        """The URL of the page a link was found on ("" for the start page)."""
        parent = self.parent[link_id]
        return self.urls[parent] if parent >= 0 else ""

    # -- checkpoints -----------------------------------------------------------------------------------
    def state(self) -> dict:
        """The URLs and tag paths (a checkpoint writes the URLs, its bulk, to a file of their own)."""
        return {"urls": self.urls, "paths": self.paths}

    def arrays(self) -> dict[str, np.ndarray]:
        """The per-link numbers."""
        return {
            "link_depth": np.frombuffer(self.depth, dtype=np.int32).copy(),
            "link_parent": np.frombuffer(self.parent, dtype=np.int32).copy(),
            "link_path": np.frombuffer(self.path, dtype=np.int32).copy(),
            "link_predicted": np.frombuffer(self.predicted, dtype=np.int8).copy(),
        }

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        """The table as saved, in place of this one's links."""
        urls, paths = state["urls"], state["paths"]
        depth = array("i", arrays["link_depth"].astype(np.int32).tobytes())
        parent = array("i", arrays["link_parent"].astype(np.int32).tobytes())
        path = array("i", arrays["link_path"].astype(np.int32).tobytes())
        predicted = array("b", arrays["link_predicted"].astype(np.int8).tobytes())
        if not len(urls) == len(depth) == len(parent) == len(path) == len(predicted):
            raise ValueError("link table arrays disagree in length")
        self.urls, self.depth, self.parent, self.path, self.predicted = urls, depth, parent, path, predicted
        self.ids = dict(zip(urls, range(len(urls)), strict=True))  # twice as fast as a comprehension
        self.paths = paths
        self._path_ids = dict(zip(paths, range(len(paths)), strict=True))


class RandomBag:
    """Ids with O(1) add, O(1) uniform random pop (swap with the last, then pop)."""

    __slots__ = ("items",)

    def __init__(self, items: array | None = None) -> None:
        self.items = items if items is not None else array("q")

    def __len__(self) -> int:
        return len(self.items)

    def add(self, item: int) -> None:
        self.items.append(item)

    def pop_random(self, rng: np.random.Generator) -> int:
        items = self.items
        i = int(rng.integers(len(items)))
        item = items[i]
        items[i] = items[-1]
        items.pop()
        return item


class LeveledQueue:
    """Ids in priority levels (small non-negative ints): ``pop`` takes a uniformly random id of the highest
    non-empty level. Random within a level, as the paper draws within an action: an action often mixes
    several parts of a site under one tag path, and first-in-first-out would serve whichever part filled
    the queue first. Each level is a ``RandomBag``, so a queue costs 8 bytes an id."""

    __slots__ = ("_levels", "_size")

    def __init__(self) -> None:
        self._levels: dict[int, RandomBag] = {}
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, item: int, level: int) -> None:
        bag = self._levels.get(level)
        if bag is None:
            bag = self._levels[level] = RandomBag()
        bag.add(item)
        self._size += 1

    def extend(self, items: list[int], level: int) -> None:
        bag = self._levels.get(level)
        if bag is None:
            bag = self._levels[level] = RandomBag()
        bag.items.extend(items)
        self._size += len(items)

    def pop(self, rng: np.random.Generator) -> int:
        level = max(self._levels)
        bag = self._levels[level]
        item = bag.pop_random(rng)
        if not len(bag):
            del self._levels[level]
        self._size -= 1
        return item

    def pop_best(self, rng: np.random.Generator, score, sample: int, reach: int) -> int:
        """The best-scored of up to ``sample`` random ids of each level within ``reach`` levels of the
        highest: ``score`` maps a list of ids to floats, added to each id's level. Ties go to the first of
        the random sample, so with equal scores this draws like ``pop`` from the top level."""
        _value, level, index = self.best(rng, score, sample, reach)
        return self.take(level, index)

    def best(self, rng: np.random.Generator, score, sample: int, reach: int) -> tuple[float, int, int]:
        """What ``pop_best`` would pop, left in place: (its level + score, its level, its index there)."""
        candidates = self.candidates(rng, sample, reach)
        values = np.array([level for level, _ in candidates], dtype=np.float64) + score(self.ids_at(candidates))
        best = int(np.argmax(values))
        return float(values[best]), *candidates[best]

    def candidates(self, rng: np.random.Generator, sample: int, reach: int) -> list[tuple[int, int]]:
        """Up to ``sample`` random (level, index) of each level within ``reach`` of the highest, highest
        level first, for ``take``."""
        top = max(self._levels)
        candidates: list[tuple[int, int]] = []  # (level, index in its bag)
        for level in sorted((lv for lv in self._levels if lv >= top - reach), reverse=True):
            n = len(self._levels[level])
            picks = rng.permutation(n).tolist() if n <= sample else rng.choice(n, sample, replace=False).tolist()
            candidates.extend((level, int(i)) for i in picks)
        return candidates

    def ids_at(self, candidates: list[tuple[int, int]]) -> list[int]:
        """The ids at the given (level, index) places."""
        levels = self._levels
        return [levels[level].items[i] for level, i in candidates]

    def take(self, level: int, index: int) -> int:
        """Remove and return the id ``best`` named (the queue unchanged since)."""
        bag = self._levels[level]
        item = bag.items[index]
        bag.items[index] = bag.items[-1]
        bag.items.pop()
        if not len(bag):
            del self._levels[level]
        self._size -= 1
        return item

    def to_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, levels), for checkpoints."""
        if not self._levels:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int16)
        ids = [np.frombuffer(bag.items, dtype=np.int64).copy() for bag in self._levels.values()]
        levels = [np.full(len(bag), level, dtype=np.int16) for level, bag in self._levels.items()]
        return np.concatenate(ids), np.concatenate(levels)

    @classmethod
    def from_arrays(cls, ids: np.ndarray, levels: np.ndarray) -> LeveledQueue:
        """The queue ``to_arrays`` described: each level's ids in their order, the levels in the order they
        first appear (so that a restored queue saves the same arrays)."""
        queue = cls()
        if not len(ids):
            return queue
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        found, first = np.unique(levels, return_index=True)
        for level in found[np.argsort(first)].tolist():
            mine = ids[levels == level]
            queue._levels[level] = RandomBag(array("q", mine.tobytes()))
            queue._size += len(mine)
        return queue
