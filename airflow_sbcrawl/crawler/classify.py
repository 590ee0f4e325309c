"""Online URL classifier (§3.3, Algorithm 2): HTML page or target, from the URL's character 2-grams.

The model is a logistic regression trained by SGD on mini-batches, written in numpy rather than taken from
scikit-learn so that its whole state is two arrays and a step counter: it is saved in checkpoints as plain
numbers and read back without unpickling anything. Its API follows scikit-learn's estimators."""

from __future__ import annotations

import numpy as np

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
        self.intercept_ = 0.0
        self.t_ = 0
        self._rng = np.random.default_rng(seed)

    def decision_function(self, urls: list[str]) -> np.ndarray:
        indptr, indices, values = url_features(urls)
        contrib = self.coef_[indices] * values
        sums = np.add.reduceat(contrib, indptr[:-1]) if len(indices) else np.zeros(len(urls))
        empty = indptr[1:] == indptr[:-1]  # reduceat repeats a value for empty rows
        sums[empty] = 0.0
        return sums + self.intercept_

    def predict_proba(self, urls: list[str]) -> np.ndarray:
        p = 1.0 / (1.0 + np.exp(-np.clip(self.decision_function(urls), -30, 30)))
        return np.column_stack([1 - p, p])

    def predict(self, urls: list[str]) -> np.ndarray:
        return (self.decision_function(urls) > 0).astype(np.int8)

    def partial_fit(self, urls: list[str], labels: list[int],
                    sample_weight: list[float] | None = None) -> OnlineLogisticRegression:
        indptr, indices, values = url_features(urls)
        y = np.asarray(labels, dtype=np.float64)
        weights = np.ones(len(urls)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        for _ in range(self.epochs):
            for i in self._rng.permutation(len(urls)):
                lo, hi = indptr[i], indptr[i + 1]
                idx, val = indices[lo:hi], values[lo:hi]
                margin = float(self.coef_[idx] @ val) + self.intercept_
                p = 1.0 / (1.0 + np.exp(-max(min(margin, 30.0), -30.0)))
                self.t_ += 1
                eta = self.eta0 / np.sqrt(self.t_)
                grad = (p - y[i]) * weights[i]
                if self.alpha:
                    self.coef_[idx] *= 1.0 - eta * self.alpha
                self.coef_[idx] -= eta * grad * val
                self.intercept_ -= eta * grad
        return self


class UrlClassifier:
    """Algorithm 2: the first ``batch_size`` labels come from HEAD requests; afterwards the model predicts,
    and every GET outcome is a free label, trained on in batches of ``batch_size``.

    A URL whose extension is one of ``dataset_extensions`` is a target whatever the model says: a link is
    labelled once, when its page is read, and a catalogue page read before the model met its first
    ``.xlsx`` would otherwise send its 400 spreadsheets to the frontier as pages."""

    def __init__(self, batch_size: int = 10, seed: int = 0, dataset_extensions: frozenset[str] = frozenset()) -> None:
        self.batch_size = batch_size
        self.dataset_extensions = dataset_extensions
        self.model = OnlineLogisticRegression(seed=seed)
        self.initial_phase = True
        # Labels seen per class. Pages outnumber targets on most sites (10:1 and more), and an unweighted
        # model then calls every URL a page; calling a page a target costs little (its GET is read as a
        # page anyway) while calling a target a page hides it from the reward, so classes are balanced.
        self.class_counts = [0, 0]
        self._batch_urls: list[str] = []
        self._batch_labels: list[int] = []

    @property
    def needs_head(self) -> bool:
        """Whether links are still labelled by HEAD requests (the first batch)."""
        return self.initial_phase

    def observe(self, url: str, label: int) -> None:
        """A URL's label (HTML or TARGET) as a request found it; learned from once a batch is full."""
        self._batch_urls.append(url)
        self._batch_labels.append(label)
        self.class_counts[label] += 1
        if len(self._batch_urls) >= self.batch_size:
            total = sum(self.class_counts)
            weights = [total / (2 * self.class_counts[y]) for y in self._batch_labels]
            self.model.partial_fit(self._batch_urls, self._batch_labels, weights)
            self._batch_urls, self._batch_labels = [], []
            self.initial_phase = False

    def predict(self, urls: list[str]) -> np.ndarray:
        """HTML or TARGET per URL."""
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
            "class_counts": self.class_counts,
            "rng": self.model._rng.bit_generator.state,
        }

    def arrays(self) -> dict[str, np.ndarray]:
        """The model's weights."""
        return {"classifier_coef": self.model.coef_.copy()}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        """Take back a ``state()`` and ``arrays()``."""
        coef = arrays["classifier_coef"]
        self.initial_phase = bool(state["initial_phase"])
        self.model.t_ = int(state["t"])
        self.model.intercept_ = float(state["intercept"])
        self.model.coef_ = coef.astype(np.float64)
        self._batch_urls = list(state["batch_urls"])
        self._batch_labels = [int(x) for x in state["batch_labels"]]
        self.class_counts = [int(x) for x in state["class_counts"]]
        self.model._rng.bit_generator.state = state["rng"]


class OracleClassifier:
    """SB-ORACLE: the URL classifier replaced by the truth (known in the simulator)."""

    needs_head = False

    def __init__(self, is_target) -> None:  # is_target: Callable[[str], bool]
        self._is_target = is_target

    def observe(self, url: str, label: int) -> None:
        pass

    def predict(self, urls: list[str]) -> np.ndarray:
        return np.array([TARGET if self._is_target(u) else HTML for u in urls], dtype=np.int8)

    def state(self) -> dict:
        return {}

    def arrays(self) -> dict[str, np.ndarray]:
        return {}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        pass
