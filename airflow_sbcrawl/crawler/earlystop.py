"""Early stopping (§4.8): stop when the rate of target discovery stays low for long enough."""

from __future__ import annotations


class EarlyStopping:
    """Every ``window`` pages the slope of the target count is folded into an exponential moving average;
    ``patience`` averages in a row below ``epsilon`` stop the crawl. The average starts at the first slope
    (starting it at zero would stop a crawl that steadily finds targets at a rate below 2·epsilon)."""

    def __init__(self, window: int = 1000, epsilon: float = 0.2, decay: float = 0.05, patience: int = 15) -> None:
        self.window = window
        self.epsilon = epsilon
        self.decay = decay
        self.patience = patience
        self.mean: float | None = None
        self.low_streak = 0
        self._last_pages = 0
        self._last_targets = 0

    def update(self, pages: int, targets: int) -> None:
        if pages - self._last_pages < self.window:
            return
        slope = (targets - self._last_targets) / (pages - self._last_pages)
        self._last_pages, self._last_targets = pages, targets
        self.mean = slope if self.mean is None else self.decay * slope + (1 - self.decay) * self.mean
        self.low_streak = self.low_streak + 1 if self.mean < self.epsilon else 0

    @property
    def should_stop(self) -> bool:
        return self.low_streak >= self.patience

    def state(self) -> dict:
        return {"mean": self.mean, "low_streak": self.low_streak, "last_pages": self._last_pages,
                "last_targets": self._last_targets}

    def restore(self, state: dict) -> None:
        self.mean = state["mean"]
        self.low_streak = state["low_streak"]
        self._last_pages = state["last_pages"]
        self._last_targets = state["last_targets"]
