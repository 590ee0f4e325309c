"""Crawl policies: one module per family, one registry (``registry``) naming them all.

``base`` holds the interface the engine drives; ``sb`` SB-CLASSIFIER (the paper's variant and the default),
``fifo`` BFS/DFS/RANDOM, ``focused`` the classic focused crawler, ``oracles`` the baselines that need a
site's ground truth, ``tres`` and ``anthelion`` the two other systems of the papers (baselines), over the
small online learners of ``online``."""

from airflow_sbcrawl.crawler.policies.base import NewLink, Policy
from airflow_sbcrawl.crawler.policies.registry import (
    DEFAULT_POLICY,
    NEEDS_TRUTH,
    POLICIES,
    PRODUCTION,
    REGISTRY,
    WITHOUT_TRUTH,
    make_policy,
)

__all__ = ["DEFAULT_POLICY", "NEEDS_TRUTH", "POLICIES", "PRODUCTION", "REGISTRY", "WITHOUT_TRUTH", "NewLink",
           "Policy", "make_policy"]
