"""Loop the tiny-site cold crawl at 8 in flight; report runs that miss a target, with what the log shows."""
import json, os, sys, tempfile
from pathlib import Path
from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from sbcrawl_dev.sim.site import build_site
from sbcrawl_dev.sim.server import SimServer

FAST = {"delay": 0.0, "es_window": 50, "es_patience": 4, "checkpoint_every_pages": 25}
n = int(sys.argv[1]); conc = int(sys.argv[2]) if len(sys.argv) > 2 else 8
site = build_site("tiny", 0)
srv = SimServer(site).start()
for k in ("HTTP_PROXY", "http_proxy"):
    os.environ[k] = srv.proxy_url
want = set(site.targets) - {u for u in site.targets if site.disallowed(u)}
parents = {}
for u in []:
    pass
miss_runs = 0
for i in range(n):
    srv.reset_log()
    with tempfile.TemporaryDirectory() as d:
        out = Path(d)
        cfg = CrawlConfig(site.start_url, **{**FAST, "max_requests": 2000, "concurrency": conc})
        c = Crawler(cfg, LocalSink(out), LocalStateStore(out / "state"))
        s = c.run()
        rows = [json.loads(l) for l in (out / "manifest.jsonl").read_text().splitlines()]
        got = {r["url"] for r in rows}
        miss = want - got
        fetched = [e.url for e in srv.log]
        if miss:
            miss_runs += 1
            for m in miss:
                par = [p for p in set(fetched) if site.kind(p) == "html" and m in site.links(p)]
                allpar = []
                lid = c.links.ids.get(m) if hasattr(c.links, "ids") else None
                req = [ (e.method, getattr(e,'status',None)) for e in srv.log if e.url == m]
                pred = c.links.predicted[lid] if lid is not None else None
                wait = lid in set(c.scheduler.waiting()) if lid is not None else None
                p = "http://data.stats.example/dataset/eco00015"
                pid = c.links.ids.get(p)
                print(f"   parent id={pid} pred={c.links.predicted[pid] if pid is not None else None} waiting={pid in set(c.scheduler.waiting()) if pid is not None else None} found_on={c.links.found_on(pid) if pid is not None else None}", flush=True)
                print(f"   id={lid} predicted={pred} requested={req} waiting={wait}", flush=True)
                print(f"run {i}: MISS {m} requests={s.requests} reason={s.stop_reason[:150]} fetched-parents={par[:3]}", flush=True)
        else:
            print(f"run {i}: ok requests={s.requests} {s.stop_reason[:60]}", flush=True)
print("miss runs", miss_runs, "of", n)
srv.stop()
