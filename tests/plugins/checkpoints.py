"""Checkpoints at page counts only, for tests that break or pick a checkpoint: a crawl spaces its saves by
``CheckpointTimer.SHARE`` times the last save's duration, and on a loaded machine (a save of 0.3 s) a crawl
of a few seconds then saved once, leaving no older checkpoint to fall back to."""

from __future__ import annotations

import pytest

from airflow_sbcrawl.crawler.state import CheckpointTimer


@pytest.fixture
def checkpoints_by_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``checkpoint_every_pages`` pages, however long a save takes."""
    monkeypatch.setattr(CheckpointTimer, "SHARE", 0)
