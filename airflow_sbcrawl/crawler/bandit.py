"""AUER sleeping bandit over actions (§3.2), vectorised: one numpy expression scores every action."""

from __future__ import annotations

import numpy as np


class SleepingBandit:
    """Score of action a at step t: awake(a) * (R_a + alpha * sqrt(log t / (N_a + eps))).

    ``awake`` is supplied by the caller (actions with unvisited links). Among equal scores the choice is
    random, so that the many never-tried actions of a fresh crawl are not explored in creation order."""

    def __init__(self, alpha: float, epsilon: float = 1e-6) -> None:
        self.alpha = alpha
        self.epsilon = epsilon
        self.counts = np.zeros(0, dtype=np.float64)  # N_t(a): times a was selected
        self.means = np.zeros(0, dtype=np.float64)  # R_a: mean reward of a
        # Rewards received per action. With pages fetched concurrently, an action's pulls run ahead of its
        # rewards: the bonus counts the pulls (so that pulls in flight spread the choice), the mean the
        # rewards (a first reward arriving while two more pulls are out is the mean, not a third of it).
        self.rewarded = np.zeros(0, dtype=np.float64)
        self.steps = 0  # t
        self.scale = 1.0  # the bonus in units of the reward's scale (1 for the paper's raw target counts)

    def __len__(self) -> int:
        return len(self.counts)

    def grow(self, n_actions: int) -> None:
        if n_actions > len(self.counts):
            extra = n_actions - len(self.counts)
            self.counts = np.concatenate([self.counts, np.zeros(extra)])
            self.means = np.concatenate([self.means, np.zeros(extra)])
            self.rewarded = np.concatenate([self.rewarded, np.zeros(extra)])

    def scores(self, awake: np.ndarray, values: np.ndarray | None = None,
               explore: np.ndarray | None = None) -> np.ndarray:
        t = max(self.steps, 1)
        n = len(awake)
        bonus = self.alpha * self.scale * np.sqrt(np.log(t) / (self.counts[:n] + self.epsilon))
        if explore is not None:
            bonus = bonus * explore
        return np.where(awake, (self.means[:n] if values is None else values) + bonus, -np.inf)

    def select(self, awake: np.ndarray, rng: np.random.Generator, values: np.ndarray | None = None,
               explore: np.ndarray | None = None) -> int:
        """Pick an awake action and count the pull; ``awake`` must have at least one True. ``values``
        replaces the mean rewards when the caller knows better what an action is worth now; ``explore``
        (one factor per action, in [0, 1]) scales the exploration bonus where the caller knows there is
        less to learn."""
        scores = self.scores(awake, values, explore)
        best = np.flatnonzero(scores == scores.max())
        action = int(best[0] if len(best) == 1 else rng.choice(best))
        self.steps += 1
        self.counts[action] += 1
        return action

    def select_among(self, arms: np.ndarray, parent_steps: float, rng: np.random.Generator,
                     values: np.ndarray | None = None) -> int:
        """AUER among the given arms only (every one awake), with the pulls of their parent as the time
        step: the sub-arms of the action the parent bandit chose. Returns the position in ``arms`` and
        counts the pull. ``values`` (one per arm) replaces their mean rewards, as in ``select``."""
        if len(arms) == 1:
            best = 0
        else:
            log_t = np.log(max(parent_steps, 1.0))
            bonus = self.alpha * self.scale * np.sqrt(log_t / (self.counts[arms] + self.epsilon))
            scores = (self.means[arms] if values is None else values) + bonus
            top = np.flatnonzero(scores == scores.max())
            best = int(top[0] if len(top) == 1 else rng.choice(top))
        self.counts[arms[best]] += 1
        return best

    def reward(self, action: int, value: float) -> None:
        """Incremental mean update of Algorithm 4's last line."""
        self.rewarded[action] += 1
        self.means[action] += (value - self.means[action]) / self.rewarded[action]

    def add_to_mean(self, action: int, value: float) -> None:
        """``value`` more for one of the rewards already received (it was undercounted then)."""
        if self.rewarded[action]:
            self.means[action] += value / self.rewarded[action]

    def arrays(self) -> dict[str, np.ndarray]:
        return {"bandit_counts": self.counts.copy(), "bandit_means": self.means.copy(),
                "bandit_rewarded": self.rewarded.copy()}

    def restore(self, counts: np.ndarray, means: np.ndarray, steps: int, rewarded: np.ndarray | None = None) -> None:
        """``rewarded`` is absent from states saved before it was kept: pulls and rewards were equal then."""
        self.counts = counts.astype(np.float64)
        self.means = means.astype(np.float64)
        self.rewarded = (counts if rewarded is None else rewarded).astype(np.float64)
        self.steps = steps
