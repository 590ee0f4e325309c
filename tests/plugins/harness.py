"""The shared evaluation harness (``../shared/eval`` beside the repository, as in CI): ``eval_dir`` is its
folder, taken from ``--eval-dir`` or ``SBCRAWL_EVAL_DIR`` when given; the tests that call it are skipped,
with the reason, on a clone that has no harness beside it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sbcrawl_dev.bench.harness import default_eval_dir


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--eval-dir", default=None,
                     help="the shared evaluation harness (default: $SBCRAWL_EVAL_DIR, else ../shared/eval)")


@pytest.fixture(scope="session")
def eval_dir(request: pytest.FixtureRequest) -> Path:
    """The harness's folder (holding evaluate.py); skips the test when there is none."""
    given = request.config.getoption("--eval-dir") or os.environ.get("SBCRAWL_EVAL_DIR")
    path = Path(given).resolve() if given else default_eval_dir()
    if not (path / "evaluate.py").is_file():
        pytest.skip(f"no evaluation harness (evaluate.py) in {path}: give --eval-dir or SBCRAWL_EVAL_DIR")
    return path
