"""The tiny-site budget test's two crawls in a loop (60 requests, then resumed to 2,000), in one process;
prints each run's misses and, for a run that misses, where the missed pages wait in the default policy.

    TREE=<code> python tiny.py RUNS [CONCURRENCY [FIRST_SEED]]   # no seed: the test's (config default)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.environ["TREE"])
os.chdir(os.environ["TREE"])

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore  # noqa: E402
from sbcrawl_dev.sim import SimServer, build_site  # noqa: E402

FAST = {"delay": 0.0, "es_window": 50, "es_patience": 4, "checkpoint_every_pages": 25}


def where(crawler: Crawler, server: SimServer, missed: list[str]) -> None:
    policy = crawler.policy
    explore = policy._exploration(len(policy.actions))
    for url, link in crawler.links.ids.items():
        if "archives" not in url and not any(m.split("/")[-2] in url for m in missed if "/files/" in m):
            continue
        subs = [(sub, int(policy._sub_action[sub])) for sub, queue in enumerate(policy._queues)
                if link in set(queue.to_arrays()[0].tolist())]
        print("   ", url, "fetched", any(e.url == url for e in server.log), subs)
        for sub, action in subs:
            print(f"      action {action}: explore {explore[action]:.2f} pulls {policy.bandit.counts[action]:.0f} "
                  f"mean {policy.bandit.means[action]:.3f} size {policy._sizes[action]} | sub "
                  f"{policy._sub_templates[sub]} size {policy._sub_sizes[sub]} mean {policy.sub_bandit.means[sub]:.3f} "
                  f"n {policy.sub_bandit.counts[sub]} | {policy.examples.get(action)}")


def main() -> None:
    runs = int(sys.argv[1])
    concurrency = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    first_seed = int(sys.argv[3]) if len(sys.argv) > 3 else -1
    fails = 0
    for i in range(runs):
        site = build_site("tiny", 0, None)
        server = SimServer(site).start()
        for name in ("HTTP_PROXY", "http_proxy"):
            os.environ[name] = server.proxy_url
        seed = {"seed": first_seed + i} if first_seed >= 0 else {}
        try:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp)
                options = {**FAST, "concurrency": concurrency, **seed}
                Crawler(CrawlConfig(site.start_url, **{**options, "max_requests": 60}), LocalSink(out),
                        LocalStateStore(out / "state")).run()
                crawler = Crawler(CrawlConfig(site.start_url, **{**options, "max_requests": 2000}), LocalSink(out),
                                  LocalStateStore(out / "state"))
                summary = crawler.run(resume=True)
                rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
                wanted = set(site.targets) - {u for u in site.targets if site.disallowed(u)}
                missed = sorted(wanted - {r["url"] for r in rows})
                fails += bool(missed)
                print(i, "MISS" if missed else "ok", len(missed), "req", summary.requests, "pages", summary.pages, "|",
                      summary.stop_reason[:140], flush=True)
                if missed:
                    print("   stop", summary.stop_reason, "| stopper", crawler.scheduler.stopper.state())
                    where(crawler, server, missed)
                    print("   miss", [m.rsplit("/", 1)[-1] for m in missed][:8], flush=True)
        finally:
            server.stop()
    print("fails", fails, "of", runs)


if __name__ == "__main__":
    main()
