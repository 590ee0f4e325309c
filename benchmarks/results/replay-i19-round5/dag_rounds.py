# ruff: noqa  (a one-off script of this results folder, kept as it was run)
"""The shared-budget DAG's rounds without Airflow: three tiny sites, plan_round, resumed crawls."""
import collections
import dataclasses
import os
import tempfile
from pathlib import Path

import airflow_sbcrawl.crawler.classify as C
from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from airflow_sbcrawl.crawler.shared_budget import plan_round
from sbcrawl_dev.sim.multisite import MultiSiteServer
from sbcrawl_dev.sim.profiles import get_profile
from sbcrawl_dev.sim.site import Site

if os.environ.get("WORDS") == "0":
    orig = C.UrlClassifier.__init__
    def init(self, *a, **k):
        k["context_groups"] = ()
        orig(self, *a, **k)
    C.UrlClassifier.__init__ = init
RICHNESS = {"poor": (1, 1), "modest": (3, 4), "rich": (8, 12)}
tiny = get_profile("tiny")
sites = [Site(dataclasses.replace(tiny, name=f"tiny-{n}", datasets_per_section=p), seed=0) for n, p in RICHNESS.items()]
srv = MultiSiteServer(sites).start()
os.environ["HTTP_PROXY"] = os.environ["http_proxy"] = srv.proxy_url
urls = srv.start_urls
root = Path(tempfile.mkdtemp())
caps, reports = [], []
while True:
    plan = plan_round(360, urls, caps, reports, rounds=3)
    if not plan: break
    rep = {}
    for url, cap in plan.items():
        i = urls.index(url)
        out = root / str(i)
        cfg = CrawlConfig(url, delay=0.0, concurrency=1, max_requests=cap)
        cr = Crawler(cfg, LocalSink(out), LocalStateStore(out / "state"))
        s = cr.run(resume=True)
        conf = collections.Counter()
        truth = srv.targets(i)
        for lid, lab in enumerate(cr.links.predicted):
            if lab >= 0: conf[("T" if lab else "H") + ("t" if cr.links.urls[lid] in truth else "h")] += 1
        rep[url] = {"requests": s.requests if hasattr(s, "requests") else s["requests"],
                    "targets": s.targets if hasattr(s, "targets") else s["targets"],
                    "stop_reason": s.stop_reason if hasattr(s, "stop_reason") else s["stop_reason"]}
        print(len(caps) + 1, list(RICHNESS)[i], cap, rep[url], dict(conf), flush=True)
    caps.append(plan); reports.append(rep)
srv.stop()
