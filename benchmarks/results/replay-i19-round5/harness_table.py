# ruff: noqa  (a one-off script of this results folder, kept as it was run)
"""Harness pair table from the bench logs (one line per run). Args: before.log after.log"""
import re
import statistics
import sys

pat = re.compile(r"^(\S+) s(\d+) default: ([\d.]+) % \(BFS ([\d.]+), TREE ([\d.]+)\)")
def load(p):
    d = {}
    for line in open(p):
        m = pat.match(line)
        if m:
            prof, seed, pct, bfs, tree = m.group(1), int(m.group(2)), *map(float, m.groups()[2:])
            d[(prof, seed)] = (pct, bfs, tree, (bfs - pct) / (bfs - tree))
    return d
B, A = load(sys.argv[1]), load(sys.argv[2])
profs = []
for k in B:
    if k[0] not in profs: profs.append(k[0])
print("| profile | BFS | TREE | before s1 / s2: % (gap) | after s1 / s2: % (gap) | after − before (mean gap of the seeds) |")
print("|---|---|---|---|---|---|")
db, da = [], []
for p in profs:
    b = [B.get((p, s)) for s in (1, 2)]; a = [A.get((p, s)) for s in (1, 2)]
    fmt = lambda x: f"{x[0]:.1f} ({x[3]:.2f})" if x else "–"
    pairs = [(x[3], y[3]) for x, y in zip(b, a) if x and y]
    diff = statistics.mean(y for _, y in pairs) - statistics.mean(x for x, _ in pairs) if pairs else float("nan")
    db += [x for x, _ in pairs]; da += [y for _, y in pairs]
    ref = next(x for x in b + a if x)
    print(f"| {p} | {ref[1]:.1f} | {ref[2]:.1f} | {fmt(b[0])} / {fmt(b[1])} | {fmt(a[0])} / {fmt(a[1])} | {diff:+.2f} |")
if db:
    print(f"| **mean gap over the {len(db)} paired runs** | | | **{statistics.mean(db):.3f}** | **{statistics.mean(da):.3f}** | **{statistics.mean(da) - statistics.mean(db):+.3f}** |")
