"""Start the harness's ``replay/evaluate_replay.py`` with the project's replay sites registered.

Usage: ``python -m sbcrawl_dev.bench.replay_launcher EVAL_DIR [--sites-json PATH] [evaluate_replay.py
options]``, e.g. ``... replay_launcher ../shared/eval --site jm`` for a site's statistics and baselines. The
harness is imported from ``EVAL_DIR``, never copied; ``--site`` takes the harness's sites and those of the
project's ``replay_sites.json`` (or of ``--sites-json``)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from sbcrawl_dev.bench import replay_sites


def main(argv: list[str]) -> int:
    eval_dir, *rest = argv
    sites_json = replay_sites.SITES_JSON
    if rest[:1] == ["--sites-json"]:
        sites_json, rest = Path(rest[1]), rest[2:]
    replaysite, extract = replay_sites.harness_modules(Path(eval_dir))
    replay_sites.register(replaysite, extract, sites_json)
    return importlib.import_module("evaluate_replay").main(rest) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
