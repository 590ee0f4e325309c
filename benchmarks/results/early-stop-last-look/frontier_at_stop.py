"""`sbcrawl crawl` that, when the crawl ends, appends the default policy's frontier by sub-arm (action x URL
template: links waiting, pages handed out, targets they held, the shrunk rate ``expected_targets`` uses) to the
file named by $FRONTIER_DUMP (default frontier.txt). Run it as the replay launcher's --cmd (README)."""

import os
import sys

import numpy as np

from airflow_sbcrawl.cli import main
from airflow_sbcrawl.crawler import engine

PRIOR_PULLS = 2.0  # sb._YIELD_PRIOR_PULLS
_run = engine.Crawler.run


def _dump(crawler: engine.Crawler, reason: str) -> None:
    policy = crawler.policy
    n = len(policy._sub_templates)
    pulls, targets = policy.sub_bandit.rewarded[:n], policy._sub_targets[:n]
    rate = targets.sum() / max(pulls.sum(), 1.0)
    per_page = (targets + PRIOR_PULLS * rate) / (pulls + PRIOR_PULLS)
    lines = [f"== stop: {reason[:200]}",
             f"expected {policy.expected_targets():.1f} crawl rate {rate:.3f} total waiting {len(policy)}"]
    for sub in np.argsort(-policy._sub_sizes[:n]):
        if policy._sub_sizes[sub] == 0 and pulls[sub] == 0:
            continue
        action = policy._sub_action[sub]
        lines.append(f"sub {sub} act {action} size {policy._sub_sizes[sub]} pulls {pulls[sub]:.0f} "
                     f"targets {targets[sub]:.0f} per {per_page[sub]:.3f} mean {policy.sub_bandit.means[sub]:.2f} "
                     f"{policy._sub_templates[sub]} | {policy.examples.get(action, '')[-60:]}")
    with open(os.environ.get("FRONTIER_DUMP", "frontier.txt"), "a") as out:
        out.write("\n".join(lines) + "\n")


def _run_and_dump(self: engine.Crawler, *args, **kwargs):
    summary = _run(self, *args, **kwargs)
    _dump(self, summary.stop_reason)
    return summary


if __name__ == "__main__":
    engine.Crawler.run = _run_and_dump
    sys.exit(main(sys.argv[1:]))
