"""Start the harness's ``evaluate.py`` with the held-out profiles registered.

Usage: ``python -m sbcrawl_dev.bench.evaluate_launcher EVAL_DIR [evaluate.py options]``. The harness
is imported from ``EVAL_DIR``, never copied."""

from __future__ import annotations

import importlib
import sys

from sbcrawl_dev.bench import heldout


def main(argv: list[str]) -> int:
    eval_dir, *rest = argv
    sys.path.insert(0, eval_dir)
    heldout.register(importlib.import_module("sitegen"))
    return importlib.import_module("evaluate").main(rest) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
