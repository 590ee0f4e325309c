"""As probe3, but each page with changes says why: rows never met, or contexts not among those kept."""
import sys, tempfile
from pathlib import Path
from airflow_sbcrawl.crawler.warm import plan as P
from sbcrawl_dev.bench.budgeted_runs import crawl, found
from sbcrawl_dev.sim.site import build_site

CHG = []
orig = P.RevisitPlan.page_read
def page_read(self, url, page):
    contexts, described, dates = page
    ch0, c0 = self._changed, self._compared
    ctx_changed = []
    for link, hashes in contexts.items():
        i = self.links.ids.get(link)
        if i is None or not (i in self.index.known or i in self.index.pages): continue
        before = self.index.contexts(i)
        if before and self.index.was_described(i) and not hashes <= before:
            ctx_changed.append((link[-40:], len(before), len(hashes), link in described))
    out = orig(self, url, page)
    pid = self.links.ids.get(url)
    if self._changed != ch0:
        CHG.append((url, self._compared - c0, self._changed - ch0, len(self._new_rows.get(pid, ())), ctx_changed[:4],
                    sorted(self._new_rows.get(pid, ()))[:3]))
    return out
P.RevisitPlan.page_read = page_read
seed = int(sys.argv[1]); runs = int(sys.argv[2])
site = build_site("small", seed)
out = Path(tempfile.mkdtemp(prefix="i23d-"))
for i in range(runs):
    CHG.clear()
    s = crawl(site, out, 300, seed)
    print(f"run {i} found {found(site, out)} checks {s['checks']}", flush=True)
    for c in CHG[:20]: print("    page", c, flush=True)
print(out)
