"""Online URL classifier (§3.3, Algorithm 2): HTML page or target, from the URL's character 2-grams and,
for the default policy, the words of the link's context (anchor, title, row, URL words; ``linktext``).

The model is a logistic regression trained by SGD on mini-batches, written in numpy rather than taken from
scikit-learn so that its whole state is a few arrays and a step counter: it is saved in checkpoints as plain
numbers and read back without unpickling anything. Its API follows scikit-learn's estimators.

Why the link's words (not in the paper): the URL alone misleads where a site names its pages and its files
alike. An SDG platform's indicator pages (``/1-2-1/``) and their files (``/data/indicator_1-2-1.csv``) share
most of their 2-grams, and once the first files are met a goal page's twenty indicator links were all
called targets and fetched at once, as part of the goal page, ahead of any ranking (64 of 244 on one
development site). Their anchors ("1.2.1 Reported online Proportion of ...") share words with each other and
none with a "Download CSV" button: after the first such page was read as HTML, its siblings are too."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import numpy as np

from airflow_sbcrawl.crawler.linktext import DIM as CONTEXT_FEATURES
from airflow_sbcrawl.crawler.urls import extension

HTML, TARGET = 0, 1
LABEL_NAMES = ("HTML", "Target")

_FIRST, _LAST = 32, 126  # printable ASCII; everything else shares one code
_ALPHABET = _LAST - _FIRST + 2
N_FEATURES = _ALPHABET * _ALPHABET


def url_features(urls: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Character 2-gram counts of each URL, L2-normalised, as CSR parts (indptr, indices, values), each row's
    2-grams in increasing order.

    All the URLs of a page in one pass of numpy: their characters are coded together, the 2-grams that
    would straddle two URLs dropped, and (URL, 2-gram) pairs counted at once."""
    if not urls:
        return np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0)
    raw = np.frombuffer("".join(urls).encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    codes = np.where((raw >= _FIRST) & (raw <= _LAST), raw - _FIRST, _ALPHABET - 1)
    lengths = np.fromiter(map(len, urls), dtype=np.int64, count=len(urls))
    rows = np.repeat(np.arange(len(urls), dtype=np.int64), lengths)
    same_url = rows[:-1] == rows[1:]
    grams = (codes[:-1] * _ALPHABET + codes[1:])[same_url]
    keys, counts = np.unique(rows[:-1][same_url] * N_FEATURES + grams, return_counts=True)
    key_rows = keys // N_FEATURES
    squares = np.bincount(key_rows, weights=counts.astype(np.float64) ** 2, minlength=len(urls))
    values = counts / np.sqrt(squares)[key_rows]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(key_rows, minlength=len(urls)))])
    return indptr, keys % N_FEATURES, values


class OnlineLogisticRegression:
    """Binary logistic regression fitted by SGD with an L2 penalty and a 1/sqrt(t) step size."""

    # eta0: features are L2-normalised, so large steps are safe; 0.5 left the model under-trained after the
    # few hundred labels of a small site (prequential target recall 0.12), anything in 2-8 did well.
    def __init__(self, n_features: int = N_FEATURES, alpha: float = 1e-4, eta0: float = 4.0,
                 epochs: int = 5, seed: int = 0) -> None:
        self.alpha = alpha
        self.eta0 = eta0
        self.epochs = epochs
        self.coef_ = np.zeros(n_features)
        # Weights of the link's hashed context words (``linktext.link_features``), a second block of features
        # L2-normalised on its own; untouched (zero) for a classifier given no context.
        self.context_coef_ = np.zeros(CONTEXT_FEATURES)
        self.intercept_ = 0.0
        self.t_ = 0
        self._rng = np.random.default_rng(seed)

    def decision_function(self, urls: list[str], contexts: list[np.ndarray] | None = None) -> np.ndarray:
        """The log-odds of TARGET per URL; ``contexts``: each URL's hashed context words, or None."""
        by_url, by_words = self.decision_parts(urls, contexts)
        return by_url + by_words

    def decision_parts(self, urls: list[str],
                       contexts: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The log-odds of TARGET per URL in two parts: the URL's 2-grams with the intercept, and the context
        words (zeros without ``contexts``)."""
        indptr, indices, values = url_features(urls)
        contrib = self.coef_[indices] * values
        sums = np.add.reduceat(contrib, indptr[:-1]) if len(indices) else np.zeros(len(urls))
        empty = indptr[1:] == indptr[:-1]  # reduceat repeats a value for empty rows
        sums[empty] = 0.0
        words = np.zeros(len(urls))
        if contexts is not None and len(urls):
            lengths = np.fromiter(map(len, contexts), dtype=np.int64, count=len(contexts))
            if lengths.any():
                rows = np.repeat(np.arange(len(urls)), lengths)
                words = np.bincount(rows, weights=self.context_coef_[np.concatenate(contexts)], minlength=len(urls))
                words = words / np.sqrt(np.maximum(lengths, 1))
        return sums + self.intercept_, words

    def predict_proba(self, urls: list[str], contexts: list[np.ndarray] | None = None) -> np.ndarray:
        p = 1.0 / (1.0 + np.exp(-np.clip(self.decision_function(urls, contexts), -30, 30)))
        return np.column_stack([1 - p, p])

    def predict(self, urls: list[str], contexts: list[np.ndarray] | None = None) -> np.ndarray:
        return (self.decision_function(urls, contexts) > 0).astype(np.int8)

    def partial_fit(self, urls: list[str], labels: list[int], sample_weight: list[float] | None = None,
                    contexts: list[np.ndarray] | None = None) -> OnlineLogisticRegression:
        indptr, indices, values = url_features(urls)
        y = np.asarray(labels, dtype=np.float64)
        weights = np.ones(len(urls)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        words = contexts if contexts is not None else [_NO_CONTEXT] * len(urls)
        for _ in range(self.epochs):
            for i in self._rng.permutation(len(urls)):
                lo, hi = indptr[i], indptr[i + 1]
                idx, val = indices[lo:hi], values[lo:hi]
                ctx = words[i]
                value = 1.0 / np.sqrt(len(ctx)) if len(ctx) else 0.0
                margin = float(self.coef_[idx] @ val) + float(self.context_coef_[ctx].sum()) * value + self.intercept_
                p = 1.0 / (1.0 + np.exp(-max(min(margin, 30.0), -30.0)))
                self.t_ += 1
                eta = self.eta0 / np.sqrt(self.t_)
                grad = (p - y[i]) * weights[i]
                if self.alpha:
                    self.coef_[idx] *= 1.0 - eta * self.alpha
                    self.context_coef_[ctx] *= 1.0 - eta * self.alpha
                self.coef_[idx] -= eta * grad * val
                self.context_coef_[ctx] -= eta * grad * value
                self.intercept_ -= eta * grad
        return self


_NO_CONTEXT = np.zeros(0, dtype=np.int32)

_TOKEN = re.compile(r"[^\W_]+")


def url_shape(url: str) -> str:
    """What a URL shares with its siblings: its host and path, the last segment and any segment holding a
    digit reduced to the kinds of its words (``0`` a word holding a digit, an id or a hash; ``a`` one
    without), the extension kept.

    ``/media/5731/download`` and ``/media/88/download`` share a shape, as ``/1-2-1/`` and ``/17-3-1/`` and
    ``/resource/00a3f9/`` and ``/resource/7b21c4e0/`` do; ``/media/5731/download`` and ``/news/5731/`` do
    not."""
    parts = urlsplit(url)
    segments = parts.path.split("/")
    out = []
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1 or (i == len(segments) - 2 and not segments[-1])
        if last or any(c.isdigit() for c in segment):
            stem, dot, ext = segment.rpartition(".") if "." in segment else (segment, "", "")
            segment = _TOKEN.sub(_token_kind, stem.lower()) + dot + ext.lower()
        out.append(segment[:40])
    return parts.netloc.lower() + "/".join(out) + ("?" if parts.query else "")


def _token_kind(match: re.Match) -> str:
    return "0" if any(c.isdigit() for c in match.group()) else "a"


#: At most this many URL shapes are followed for the veto (the shapes of a site's targets are few).
_MAX_SHAPES = 5_000


class UrlClassifier:
    """Algorithm 2: the first ``batch_size`` labels come from HEAD requests; afterwards the model predicts,
    and every GET outcome is a free label, trained on in batches of ``batch_size``.

    A URL whose extension is one of ``dataset_extensions`` is a target whatever the model says: a link is
    labelled once, when its page is read, and a catalogue page read before the model met its first
    ``.xlsx`` would otherwise send its 400 spreadsheets to the frontier as pages.

    ``context_groups``: the parts of a link (``linktext.GROUPS``) whose words the model reads beside the
    URL's 2-grams; empty, the paper's classifier. A link's words are given with its URL to ``predict`` and
    ``observe`` (``labelling.LinkLabeller`` keeps them from one to the other).

    The words may veto a URL the 2-grams call a target (take it back to a page), but not a URL whose
    siblings (same ``url_shape``) were found targets more often than pages by the requests so far: a site's
    extension-less files (``/media/5731/download``) share their link words with its pages ("Download",
    titles, years), and a veto would send each of them to the frontier as a page. For such a URL either
    part calling it a target is enough."""

    def __init__(self, batch_size: int = 10, seed: int = 0, dataset_extensions: frozenset[str] = frozenset(),
                 context_groups: tuple[str, ...] = ()) -> None:
        self.batch_size = batch_size
        self.dataset_extensions = dataset_extensions
        self.context_groups = tuple(context_groups)
        self.model = OnlineLogisticRegression(seed=seed)
        self.initial_phase = True
        # Labels seen per class. Pages outnumber targets on most sites (10:1 and more), and an unweighted
        # model then calls every URL a page; calling a page a target costs little (its GET is read as a
        # page anyway) while calling a target a page hides it from the reward, so classes are balanced.
        self.class_counts = [0, 0]
        self._batch_urls: list[str] = []
        self._batch_labels: list[int] = []
        self._batch_contexts: list[np.ndarray] = []
        # URL shape -> [pages, targets] found by requests, followed from a shape's first target on.
        self.shape_counts: dict[str, list[int]] = {}

    @property
    def needs_head(self) -> bool:
        """Whether links are still labelled by HEAD requests (the first batch)."""
        return self.initial_phase

    def observe(self, url: str, label: int, context: np.ndarray | None = None) -> None:
        """A URL's label (HTML or TARGET) as a request found it, with the link's context words when known;
        learned from once a batch is full."""
        self._batch_urls.append(url)
        self._batch_labels.append(label)
        self._batch_contexts.append(_NO_CONTEXT if context is None or not self.context_groups else context)
        self.class_counts[label] += 1
        if self.context_groups:
            self._count_shape(url, label)
        if len(self._batch_urls) >= self.batch_size:
            total = sum(self.class_counts)
            weights = [total / (2 * self.class_counts[y]) for y in self._batch_labels]
            self.model.partial_fit(self._batch_urls, self._batch_labels, weights,
                                   self._batch_contexts if self.context_groups else None)
            self._batch_urls, self._batch_labels, self._batch_contexts = [], [], []
            self.initial_phase = False

    def _count_shape(self, url: str, label: int) -> None:
        shape = url_shape(url)
        counts = self.shape_counts.get(shape)
        if counts is None:
            if label != TARGET or len(self.shape_counts) >= _MAX_SHAPES:
                return  # a shape is followed from its first target: pages alone never spare a veto
            counts = self.shape_counts[shape] = [0, 0]
        counts[label] += 1

    def _spared(self, url: str) -> bool:
        """Whether the words may not veto ``url``: its shape was found a target more often than a page."""
        counts = self.shape_counts.get(url_shape(url))
        return counts is not None and counts[TARGET] > counts[HTML]

    def predict(self, urls: list[str], contexts: list[np.ndarray] | None = None) -> np.ndarray:
        """HTML or TARGET per URL (``contexts``: each link's context words, read when ``context_groups``).

        Unless the link's siblings were found files (see the class), the words can only take back to a
        page a link its URL calls a target, never make a target of one its URL calls a page: they are here
        to stop pages named like files being fetched at once, outside the policy's order (a target the URL
        misses is the extension rule's job), and a site's rows of files share words (titles, years) with
        its other rows. Letting them call targets too was measured
        no better on the development replay sites, and on the simulator it is not known to be worse.
        """
        if contexts is not None and self.context_groups:
            by_url, by_words = self.model.decision_parts(urls, contexts)
            labels = ((by_url > 0) & (by_url + by_words > 0)).astype(np.int8)
            # Where the 2-grams and the words disagree, a URL whose siblings were found files is a target:
            # trained together, the two parts share the credit of a URL as they please (on one simulated
            # site the 2-grams came to call /media/N/download a page and its URL words a file).
            for i in np.flatnonzero((by_url > 0) != (by_url + by_words > 0)):
                if self._spared(urls[i]):
                    labels[i] = TARGET
        else:
            labels = self.model.predict(urls)
        if self.dataset_extensions:
            for i in np.flatnonzero(labels == HTML):
                if extension(urls[i]) in self.dataset_extensions:
                    labels[i] = TARGET
        return labels

    def state(self) -> dict:
        """What a checkpoint or a site memory keeps of the classifier, besides ``arrays()``."""
        return {
            "initial_phase": self.initial_phase,
            "t": self.model.t_,
            "intercept": self.model.intercept_,
            "batch_urls": self._batch_urls,
            "batch_labels": self._batch_labels,
            "batch_contexts": [c.tolist() for c in self._batch_contexts],
            "class_counts": self.class_counts,
            "shape_counts": self.shape_counts,
            "rng": self.model._rng.bit_generator.state,
        }

    def arrays(self) -> dict[str, np.ndarray]:
        """The model's weights."""
        out = {"classifier_coef": self.model.coef_.copy()}
        if self.context_groups:
            # float32: 2^16 weights a checkpoint, kept small (a crawl's state stays under 1 MB on a small site)
            out["classifier_context_coef"] = self.model.context_coef_.astype(np.float32)
        return out

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        """Take back a ``state()`` and ``arrays()``; the context words' weights stay zero when they were not
        saved (a classifier without context, or a checkpoint written before it had any)."""
        coef = arrays["classifier_coef"]
        self.initial_phase = bool(state["initial_phase"])
        self.model.t_ = int(state["t"])
        self.model.intercept_ = float(state["intercept"])
        self.model.coef_ = coef.astype(np.float64)
        context = arrays.get("classifier_context_coef")
        if context is not None and self.context_groups:
            if context.shape != self.model.context_coef_.shape:
                raise ValueError(f"context weights of shape {context.shape}, expected {self.model.context_coef_.shape}")
            self.model.context_coef_ = context.astype(np.float64)
        self._batch_urls = list(state["batch_urls"])
        self._batch_labels = [int(x) for x in state["batch_labels"]]
        saved = state.get("batch_contexts") or [[] for _ in self._batch_urls]
        self._batch_contexts = [np.array(c, dtype=np.int32) for c in saved]
        self.class_counts = [int(x) for x in state["class_counts"]]
        self.shape_counts = {str(k): [int(v[0]), int(v[1])] for k, v in (state.get("shape_counts") or {}).items()}
        self.model._rng.bit_generator.state = state["rng"]


class OracleClassifier:
    """SB-ORACLE: the URL classifier replaced by the truth (known in the simulator)."""

    needs_head = False
    context_groups: tuple[str, ...] = ()

    def __init__(self, is_target) -> None:  # is_target: Callable[[str], bool]
        self._is_target = is_target

    def observe(self, url: str, label: int, context: np.ndarray | None = None) -> None:
        pass

    def predict(self, urls: list[str], contexts: list[np.ndarray] | None = None) -> np.ndarray:
        return np.array([TARGET if self._is_target(u) else HTML for u in urls], dtype=np.int8)

    def state(self) -> dict:
        return {}

    def arrays(self) -> dict[str, np.ndarray]:
        return {}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        pass
