"""Every crawl policy by name, in one place that the CLI, the benchmarks, the operator and the config read.

Policy classes are imported when a policy is made, not here, so that the config can validate names without
importing numpy-heavy modules, and without importing the config (the policies do)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

    from airflow_sbcrawl.crawler.policies.base import Policy


class PolicySettings(Protocol):
    """What ``make_policy`` reads of a crawl's settings (a ``CrawlConfig``): the policy's name; the factory
    it names reads the rest."""

    policy: str


@dataclass(frozen=True)
class PolicySpec:
    """A policy as the registry knows it, before its module is imported."""

    name: str
    factory: str  # "module:function" building the policy from (config, rng, is_target)
    description: str
    production: bool  # offered to users (CLI, UI); the others are baselines for the benchmark
    needs_truth: bool = False  # learns from the site's ground truth: simulated sites only
    # The early-stopping rule when the config names none. "drought" counts the pages the policy found
    # promising as progress: only a policy that can say so (``Policy.promising``) may use it, or a walk down
    # a listing chain would look like a drought.
    stop_rule: str = "paper"


DEFAULT_POLICY = "sb-classifier"

_SPECS = (
    PolicySpec("sb-classifier", "airflow_sbcrawl.crawler.policies.sb:make_credited",
               "SB-CLASSIFIER: learns which links lead to data files (recommended)", True, stop_rule="drought"),
    PolicySpec("sb-classifier-paper", "airflow_sbcrawl.crawler.policies.sb:make_paper",
               "SB-CLASSIFIER exactly as its paper specifies it, for comparison", True),
    PolicySpec("focused", "airflow_sbcrawl.crawler.policies.focused:make",
               "a classic focused crawler: logistic regression on URL, anchor and depth", False),
    PolicySpec("bfs", "airflow_sbcrawl.crawler.policies.fifo:make_bfs",
               "Breadth-first: every page in link order (small sites crawled completely)", True),
    PolicySpec("dfs", "airflow_sbcrawl.crawler.policies.fifo:make_dfs", "depth-first", False),
    PolicySpec("random", "airflow_sbcrawl.crawler.policies.fifo:make_random", "a random frontier link", False),
    PolicySpec("tres", "airflow_sbcrawl.crawler.policies.tres:make",
               "TRES adapted to datasets: Q-learning over a tree frontier, a keyword-seeded relevance classifier",
               False),
    PolicySpec("anthelion", "airflow_sbcrawl.crawler.policies.anthelion:make",
               "Anthelion adapted to datasets: an online link classifier and a bandit over site sections", False),
    PolicySpec("sb-oracle", "airflow_sbcrawl.crawler.policies.sb:make_oracle",
               "the paper's SB-ORACLE: SB-CLASSIFIER with the truth in place of the URL classifier", False,
               needs_truth=True),
    PolicySpec("tp-off", "airflow_sbcrawl.crawler.policies.oracles:make_tp_off",
               "TP-OFF: tag-path groups valued offline by an oracle", False, needs_truth=True),
)
REGISTRY: dict[str, PolicySpec] = {spec.name: spec for spec in _SPECS}
POLICIES = tuple(REGISTRY)
NEEDS_TRUTH = tuple(name for name, spec in REGISTRY.items() if spec.needs_truth)
PRODUCTION = tuple(name for name, spec in REGISTRY.items() if spec.production)
WITHOUT_TRUTH = tuple(name for name in POLICIES if name not in NEEDS_TRUTH)


def make_policy(config: PolicySettings, rng: np.random.Generator,
                is_target: Callable[[str], bool] | None = None) -> Policy:
    """The policy ``config.policy`` names; ``is_target`` is the truth, needed by the oracle baselines."""
    spec = REGISTRY.get(config.policy)
    if spec is None:
        raise ValueError(f"unknown policy {config.policy!r}; known: {', '.join(POLICIES)}")
    if spec.needs_truth and is_target is None:
        raise ValueError(f"policy {spec.name} learns from an oracle: pass is_target (known only for simulated sites)")
    module, function = spec.factory.split(":")
    return getattr(importlib.import_module(module), function)(config, rng, is_target)
