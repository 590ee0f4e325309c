"""TRES (Kontogiannis et al., "Tree-based focused web crawling with reinforcement learning") adapted to
dataset retrieval the way the SB-CLASSIFIER paper adapted it (§4.3), as a baseline for the benchmark.

What is TRES's own logic, kept:
- The MDP: a state is the crawled subgraph; an action is a frontier link (parent page, URL); the reward is
  1 when the fetched page is relevant, else 0.
- The shared state-action vector (§2.4.1): the parent page's reward, the inverse distance from the parent
  to the closest relevant page on its path, the path's relevance ratio; a keyword in the URL, a keyword in
  the anchor, a relevance classifier's probability from the anchor text, the host's ratio of relevant
  pages so far and its "unknown host" feature (0.5 unseen, else 1).
- Tree-Frontier (§2.6, Algorithms 2 and 3): an online binary tree whose leaves hold both experience
  samples (crawled actions with their reward) and frontier samples; a leaf is split on the feature and
  threshold with the largest positive reduction of reward variance; each step samples one frontier
  representative per leaf and crawls the one with the highest estimated Q-value.
- Double Q-learning from an experience replay with a target network synced now and then.

Departures (also in the README):
- Targets: "relevant page" means the page yielded at least one dataset (or the link was itself one). Like
  the paper's adaptation, links that are not HTML pages are visited at once and counted if they are
  targets; but instead of the paper's oracle telling HTML from non-HTML links, this policy uses the
  engine's URL classifier (``classifies_links = True``), as our production crawler does, so it needs no
  ground truth and runs on real sites.
- The classifier: an online logistic regression on the anchor's hashed words in place of the Bi-LSTM,
  seeded with the paper's 74 keywords (appendix B.2) as positive anchors against featureless negatives.
  TRES was also given 1k positive HTML pages from prior crawls; we give it none.
- The Q-function is linear in the 8 features (plus a bias) in place of DDQN's two-hidden-layer MLP.
- No keyword expansion and no language filter (the paper disabled the latter too).
- A link's features are fixed when its parent's reward is known (TRES computes them once too); a page's
  links are held until its reward comes in, as the parent's reward is one of their features.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import numpy as np

from airflow_sbcrawl.crawler.policies.base import NewLink, Policy
from airflow_sbcrawl.crawler.policies.online import HashedLogistic, hashed, tokens

#: Appendix B.2 of the SB-CLASSIFIER paper: the keywords given to TRES to seed its classifier.
KEYWORDS = (
    "pdf", "xls", "csv", "tar", "zip", "rar", "rdf", "json", "doc", "xml", "yaml", "txt", "tsv", "ppt", "ods",
    "dta", "7z", "ttl", "file", "document", "report", "publication", "dataset", "data", "download", "archive",
    "spreadsheet", "table", "list", "resource", "annex", "supplement", "attachment", "proceedings", "survey",
    "material", "output", "content", "statistics", "article", "paper", "metadata", "fact", "download file",
    "download document", "available for download", "access data", "view report", "get dataset", "data file",
    "read more", "resource list", "get document", "download publication", "document archive",
    "supporting materials", "export data", "download csv", "download pdf", "download xls", "dataset download",
    "attached document", "official documents", "browse files", "download statistics", "download article",
    "annual report", "white paper", "technical documentation", "technical report", "raw data", "metadata file",
    "open data", "fact sheet",
)
_KEYWORD_WORDS = frozenset(k for k in KEYWORDS if " " not in k)
N_FEATURES = 8
_ANCHOR_DIM = 2**12


def _words(text: str) -> list[str]:
    return tokens(text, min_len=2)


def keyword_in_url(url: str) -> bool:
    return any(w in _KEYWORD_WORDS for w in _words(url))


def keyword_in_anchor(anchor: str) -> bool:
    text = " ".join(_words(anchor))
    return any(w in _KEYWORD_WORDS for w in text.split()) or any(k in text for k in KEYWORDS if " " in k)


def seeded_classifier() -> HashedLogistic:
    """The relevance classifier, trained on the keywords as positive anchors against empty ones."""
    model = HashedLogistic(_ANCHOR_DIM, rate=0.1)
    examples = [hashed(_words(k), _ANCHOR_DIM) for k in KEYWORDS]
    for _epoch in range(5):
        for features in examples:
            model.learn(features, 1)
            model.learn([], 0)
    return model


@dataclass
class _Leaf:
    exp_x: list[np.ndarray] = field(default_factory=list)
    exp_r: list[float] = field(default_factory=list)
    frontier: array = field(default_factory=lambda: array("q"))


class TreeFrontier:
    """Algorithms 2 and 3 of TRES: leaves split by reward-variance reduction over experience samples;
    frontier samples follow the same rules."""

    def __init__(self, min_leaf: int = 5, max_leaves: int = 64, split_every: int = 10) -> None:
        self.min_leaf = min_leaf
        self.max_leaves = max_leaves
        self.split_every = split_every
        self.feature: list[int] = [-1]  # node -> split feature, -1 for a leaf
        self.threshold: list[float] = [0.0]
        self.left: list[int] = [-1]
        self.right: list[int] = [-1]
        self.leaves: dict[int, _Leaf] = {0: _Leaf()}

    def leaf_of(self, x: np.ndarray) -> int:
        node = 0
        while self.feature[node] >= 0:
            node = self.left[node] if x[self.feature[node]] <= self.threshold[node] else self.right[node]
        return node

    def add_frontier(self, link_id: int, x: np.ndarray) -> None:
        self.leaves[self.leaf_of(x)].frontier.append(link_id)

    def add_experience(self, x: np.ndarray, reward: float, features: dict[int, np.ndarray]) -> None:
        node = self.leaf_of(x)
        leaf = self.leaves[node]
        leaf.exp_x.append(x)
        leaf.exp_r.append(reward)
        n = len(leaf.exp_r)
        if n >= 2 * self.min_leaf and n % self.split_every == 0 and len(self.leaves) < self.max_leaves:
            self._try_split(node, features)

    def _try_split(self, node: int, features: dict[int, np.ndarray]) -> None:
        leaf = self.leaves[node]
        X = np.vstack(leaf.exp_x)
        r = np.asarray(leaf.exp_r)
        n = len(r)
        parent_var = r.var()
        if parent_var <= 0:
            return
        best = (1e-12, -1, 0.0)  # (variance reduction, feature, threshold)
        m = self.min_leaf
        for f in range(X.shape[1]):
            order = np.argsort(X[:, f], kind="stable")
            xs, rs = X[order, f], r[order]
            s1, s2 = np.cumsum(rs), np.cumsum(rs * rs)
            k = np.arange(1, n)  # left side size for a cut after position k-1
            ok = (xs[1:] > xs[:-1]) & (k >= m) & (n - k >= m)
            if not ok.any():
                continue
            k = k[ok]
            left_var = s2[k - 1] / k - (s1[k - 1] / k) ** 2
            right_n = n - k
            right_s1, right_s2 = s1[-1] - s1[k - 1], s2[-1] - s2[k - 1]
            right_var = right_s2 / right_n - (right_s1 / right_n) ** 2
            reduction = parent_var - (k * left_var + right_n * right_var) / n
            i = int(np.argmax(reduction))
            if reduction[i] > best[0]:
                cut = k[i]
                best = (float(reduction[i]), f, float((xs[cut - 1] + xs[cut]) / 2))
        if best[1] >= 0:
            self.split(node, best[1], best[2], features)

    def split(self, node: int, feature: int, threshold: float, features: dict[int, np.ndarray]) -> None:
        leaf = self.leaves.pop(node)
        left, right = len(self.feature), len(self.feature) + 1
        self.feature[node], self.threshold[node], self.left[node], self.right[node] = feature, threshold, left, right
        for _ in range(2):
            self.feature.append(-1)
            self.threshold.append(0.0)
            self.left.append(-1)
            self.right.append(-1)
        self.leaves[left], self.leaves[right] = _Leaf(), _Leaf()
        for x, r in zip(leaf.exp_x, leaf.exp_r, strict=True):
            target = self.leaves[left if x[feature] <= threshold else right]
            target.exp_x.append(x)
            target.exp_r.append(r)
        for link_id in leaf.frontier:
            side = left if features[link_id][feature] <= threshold else right
            self.leaves[side].frontier.append(link_id)


class TresPolicy(Policy):
    """TRES adapted to dataset retrieval (see the module docstring for what is kept and what departs)."""

    name = "tres"
    classifies_links = True

    def __init__(self, rng: np.random.Generator, gamma: float = 0.9, rate: float = 0.05, batch: int = 32,
                 replay: int = 5000, sync_every: int = 100) -> None:
        self._rng = rng
        self.gamma, self.rate, self.batch, self.replay_size, self.sync_every = gamma, rate, batch, replay, sync_every
        self.tree = TreeFrontier()
        self.classifier = seeded_classifier()
        self.q = np.zeros(N_FEATURES + 1)
        self.q_target = self.q.copy()
        self._features: dict[int, np.ndarray] = {}  # frontier link id -> state-action vector
        self._info: dict[int, tuple[str, str, float, float, float]] = {}  # id -> url, anchor, path state
        # path state of a link: (relevant pages on its parent's path, path length, parent's distance to the
        # closest relevant page or -1)
        self._host_seen: dict[str, list[int]] = {}  # host -> [relevant pages, crawled pages]
        self._held: list[NewLink] = []  # links of the page in flight, waiting for its reward
        self._current: int | None = None
        self._current_x: np.ndarray | None = None
        self._current_info: tuple[str, str, float, float, float] | None = None
        self._current_target = False
        self._replay_x: list[np.ndarray] = []
        self._replay_r: list[float] = []
        self._replay_next: list[np.ndarray | None] = []
        self._awaiting_next = -1  # replay row whose next action is the next one chosen
        self.steps = 0
        self.relevant = 0

    # -- frontier --------------------------------------------------------------------------------------
    def add(self, links: Sequence[NewLink]) -> None:
        if self._current is not None:
            self._held.extend(links)  # their state features need this page's reward
        else:
            self._insert(links, 0.0, (0.0, 0.0, -1.0))

    def _insert(self, links: Sequence[NewLink], parent_reward: float, path: tuple[float, float, float]) -> None:
        rel, length, dist = path
        inv_dist = 1.0 / (1.0 + dist) if dist >= 0 else 0.0
        ratio = rel / length if length else 0.0
        for link in links:
            host = urlsplit(link.url).netloc
            seen = self._host_seen.get(host)
            x = np.array([
                parent_reward, inv_dist, ratio,
                float(keyword_in_url(link.url)), float(keyword_in_anchor(link.anchor)),
                self.classifier.proba(hashed(_words(link.anchor), _ANCHOR_DIM)),
                seen[0] / seen[1] if seen and seen[1] else 0.0,
                1.0 if seen else 0.5,
            ])
            self._features[link.id] = x
            self._info[link.id] = (link.url, link.anchor, rel, length, dist)
            self.tree.add_frontier(link.id, x)

    def next(self) -> int | None:
        if self._current is not None:  # no feedback came for the last page: take it as worth nothing
            self.feedback(self._current, 0.0)
        candidates = [(node, leaf) for node, leaf in self.tree.leaves.items() if leaf.frontier]
        if not candidates:
            return None
        picks = [int(self._rng.integers(len(leaf.frontier))) for _, leaf in candidates]
        X = np.vstack([self._features[leaf.frontier[i]] for (_, leaf), i in zip(candidates, picks, strict=True)])
        best = int(np.argmax(X @ self.q[:-1] + self.q[-1]))
        bag = candidates[best][1].frontier
        i = picks[best]
        link_id = bag[i]
        bag[i] = bag[-1]
        bag.pop()
        x = self._features.pop(link_id)
        if self._awaiting_next >= 0:
            self._replay_next[self._awaiting_next] = x
            self._awaiting_next = -1
        self._current, self._current_x = link_id, x
        self._current_info = self._info.pop(link_id)
        self._current_target = False
        return link_id

    def __len__(self) -> int:
        return len(self._features) + len(self._held)

    # -- learning --------------------------------------------------------------------------------------
    def outcome(self, link_id: int, kind: str) -> None:
        if link_id == self._current and kind == "target":
            self._current_target = True

    def feedback(self, link_id: int, reward: float) -> None:
        if link_id != self._current or self._current_x is None or self._current_info is None:
            return
        r = 1.0 if reward > 0 or self._current_target else 0.0
        url, anchor, rel, length, dist = self._current_info
        x = self._current_x
        self._current, self._current_x, self._current_info = None, None, None
        self.steps += 1
        self.relevant += int(r)
        host = urlsplit(url).netloc
        seen = self._host_seen.setdefault(host, [0, 0])
        seen[0] += int(r)
        seen[1] += 1
        self.classifier.learn(hashed(_words(anchor), _ANCHOR_DIM), int(r))
        self.tree.add_experience(x, r, self._features)
        self._remember(x, r)
        self._train()
        held, self._held = self._held, []
        path = (rel + r, length + 1, 0.0 if r else (dist + 1 if dist >= 0 else -1.0))
        self._insert(held, r, path)

    def _remember(self, x: np.ndarray, r: float) -> None:
        if len(self._replay_r) >= self.replay_size:  # a ring: overwrite the oldest row
            row = self.steps % self.replay_size
            self._replay_x[row], self._replay_r[row], self._replay_next[row] = x, r, None
        else:
            row = len(self._replay_r)
            self._replay_x.append(x)
            self._replay_r.append(r)
            self._replay_next.append(None)
        self._awaiting_next = row

    def _train(self) -> None:
        """One SGD step of double Q-learning on a replay mini-batch: y = r + gamma * Q_target(x'), where
        x' is the action the online Q-function chose next (its argmax over the tree's representatives)."""
        ready = [i for i in range(len(self._replay_r)) if self._replay_next[i] is not None]
        if not ready:
            return
        rows = self._rng.choice(ready, size=min(self.batch, len(ready)), replace=False)
        X = np.vstack([self._replay_x[i] for i in rows])
        X1 = np.vstack([self._replay_next[i] for i in rows])  # type: ignore[misc]
        y = np.asarray([self._replay_r[i] for i in rows]) + self.gamma * (X1 @ self.q_target[:-1] + self.q_target[-1])
        error = (X @ self.q[:-1] + self.q[-1]) - y
        self.q[:-1] -= self.rate * (error @ X) / len(rows)
        self.q[-1] -= self.rate * error.mean()
        if self.steps % self.sync_every == 0:
            self.q_target = self.q.copy()

    # -- checkpoints -----------------------------------------------------------------------------------
    def state(self) -> dict:
        return {
            "steps": self.steps, "relevant": self.relevant, "awaiting_next": self._awaiting_next,
            "tree": [self.tree.feature, self.tree.threshold, self.tree.left, self.tree.right],
            "info": [[i, *v] for i, v in self._info.items()],
            "host_seen": self._host_seen,
            "held": [[lk.id, lk.url, lk.tag_path, lk.anchor, lk.depth] for lk in self._held],
            "current": None if self._current is None else [self._current, list(self._current_info or ()),
                                                            self._current_target],
        }

    def arrays(self) -> dict[str, np.ndarray]:
        leaves = sorted(self.tree.leaves)
        frontier = [i for node in leaves for i in self.tree.leaves[node].frontier]
        exp_leaf = [node for node in leaves for _ in self.tree.leaves[node].exp_r]
        empty = np.zeros((0, N_FEATURES))
        nxt = [x if x is not None else np.full(N_FEATURES, np.nan) for x in self._replay_next]
        return {
            "frontier_ids": np.asarray(frontier, dtype=np.int64),
            "frontier_leaf": np.asarray([n for n in leaves for _ in self.tree.leaves[n].frontier], dtype=np.int64),
            "frontier_x": np.vstack([self._features[i] for i in frontier]) if frontier else empty,
            "exp_leaf": np.asarray(exp_leaf, dtype=np.int64),
            "exp_x": np.vstack([x for n in leaves for x in self.tree.leaves[n].exp_x]) if exp_leaf else empty,
            "exp_r": np.asarray([r for n in leaves for r in self.tree.leaves[n].exp_r]),
            "replay_x": np.vstack(self._replay_x) if self._replay_x else empty,
            "replay_r": np.asarray(self._replay_r),
            "replay_next": np.vstack(nxt) if nxt else empty,
            "current_x": self._current_x if self._current_x is not None else np.zeros(0),
            "q": self.q, "q_target": self.q_target, "classifier": self.classifier.weights,
        }

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self.__init__(self._rng, self.gamma, self.rate, self.batch, self.replay_size, self.sync_every)  # type: ignore[misc]
        self.steps, self.relevant = int(state["steps"]), int(state["relevant"])
        self._awaiting_next = int(state["awaiting_next"])
        tree = self.tree
        tree.feature, tree.threshold, tree.left, tree.right = ([type_(v) for v in values] for type_, values in
                                                               zip((int, float, int, int), state["tree"], strict=True))
        tree.leaves = {node: _Leaf() for node, f in enumerate(tree.feature) if f < 0}
        for link_id, leaf, x in zip(arrays["frontier_ids"], arrays["frontier_leaf"], arrays["frontier_x"], strict=True):
            self._features[int(link_id)] = x.astype(np.float64)
            tree.leaves[int(leaf)].frontier.append(int(link_id))
        for leaf, x, r in zip(arrays["exp_leaf"], arrays["exp_x"], arrays["exp_r"], strict=True):
            tree.leaves[int(leaf)].exp_x.append(x.astype(np.float64))
            tree.leaves[int(leaf)].exp_r.append(float(r))
        self._info = {int(i): (u, a, float(rel), float(n), float(d)) for i, u, a, rel, n, d in state["info"]}
        self._host_seen = {h: [int(a), int(b)] for h, (a, b) in state["host_seen"].items()}
        self._held = [NewLink(int(i), u, p, a, int(d)) for i, u, p, a, d in state["held"]]
        self._replay_x = [x.astype(np.float64) for x in arrays["replay_x"]]
        self._replay_r = [float(r) for r in arrays["replay_r"]]
        self._replay_next = [None if np.isnan(x).any() else x.astype(np.float64) for x in arrays["replay_next"]]
        self.q, self.q_target = arrays["q"].astype(np.float64), arrays["q_target"].astype(np.float64)
        self.classifier.weights = arrays["classifier"].astype(np.float64)
        if state["current"] is not None:
            link_id, info, target = state["current"]
            self._current = int(link_id)
            self._current_info = (info[0], info[1], float(info[2]), float(info[3]), float(info[4]))
            self._current_target = bool(target)
            self._current_x = arrays["current_x"].astype(np.float64)

    def describe(self) -> dict:
        return {"steps": self.steps, "relevant_pages": self.relevant, "leaves": len(self.tree.leaves),
                "q_weights": [round(float(w), 4) for w in self.q]}


def make(config, rng, is_target=None) -> TresPolicy:
    return TresPolicy(rng)
