"""`sbcrawl crawl` that, when the crawl ends, appends the default policy's frontier by sub-arm (action x URL
template: links waiting, pages handed out, targets they held, the shrunk rate ``expected_targets`` uses) to
/tmp/lead/diag.txt. Run it as the replay launcher's --cmd (README)."""

import sys

import numpy as np

from airflow_sbcrawl.crawler import engine

orig = engine.Crawler.run


def run(self, *a, **k):
    s = orig(self, *a, **k)
    p = self.policy
    n = len(p._sub_templates)
    pulls, targets = p.sub_bandit.rewarded[:n], p._sub_targets[:n]
    rate = targets.sum() / max(pulls.sum(), 1.0)
    per = (targets + 2.0 * rate) / (pulls + 2.0)
    with open("/tmp/lead/diag.txt", "a") as f:
        f.write(f"== stop: {s.stop_reason[:200]}\nexpected {p.expected_targets():.1f} crawl rate {rate:.3f} total waiting {len(p)}\n")
        for sub in np.argsort(-p._sub_sizes[:n]):
            if p._sub_sizes[sub] == 0 and pulls[sub] == 0:
                continue
            f.write(f"sub {sub} act {p._sub_action[sub]} size {p._sub_sizes[sub]} pulls {pulls[sub]:.0f} targets {targets[sub]:.0f} "
                    f"per {per[sub]:.3f} mean {p.sub_bandit.means[sub]:.2f} {p._sub_templates[sub]} | {p.examples.get(p._sub_action[sub], '')[-60:]}\n")
    return s


engine.Crawler.run = run
from airflow_sbcrawl.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
