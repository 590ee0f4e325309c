"""Checkpoints of version 1 (written before issue 22), read into today's layout: a crawl interrupted before
an upgrade resumes after it. Version 1 kept every figure at the top level and the warm crawl as eight
queues; what it did not keep (the listings' next pages) starts empty."""

from __future__ import annotations

import numpy as np

from airflow_sbcrawl.crawler.warm.plan import state_from_v1

_RUN = ("run_id", "rng", "pages", "targets", "head_requests", "rows_written", "outcomes", "confusion", "resumes")


def upgrade(state: dict, arrays: dict[str, np.ndarray]) -> tuple[dict, dict[str, np.ndarray]]:
    """A version-1 ``state`` and ``arrays`` in the layout of version 2."""
    old = state.get("recrawl") or {}
    new = {
        "format": state["format"], "version": 2, "config": state["config"],
        "budget": {"requests": state["requests"], "bytes": state["bytes"]},
        "run": {key: state[key] for key in _RUN if key != "resumes"} | {"resumes": state.get("resumes", [])},
        "links": {"paths": state["paths"]},
        "policy": state["policy"], "classifier": state["classifier"],
        "scheduler": {"parked": state["parked"], "early_stopping": state["early_stopping"]},
        "robots": {"texts": state["robots"]},
        "changes": {key: old.get(key, {}) for key in ("status", "by_name", "borrowed")},
        "observations": {key: old.get(key, {}) for key in ("page_validators", "contexts", "listers")}
        | {"unchanged_pages": old.get("unchanged_pages", [])},
    }
    if old.get("warm"):
        new["plan"] = state_from_v1(old)
    renamed = {"harvest_requests": "run.harvest_requests", "harvest_targets": "run.harvest_targets",
               "classifier_coef": "classifier.classifier_coef"}
    out = {}
    for key, value in arrays.items():
        if key.startswith("link_"):
            out[f"links.{key}"] = value
        else:
            out[renamed.get(key, key)] = value  # policy.* keep their names
    return new, out
