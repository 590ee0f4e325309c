# ruff: noqa  (a one-off script of this results folder, kept as it was run)
"""Replay table: per site BFS/TREE, median gap before/after, best baseline. Args: before.jsonl after.jsonl baselines.jsonl"""
import json
import statistics
import sys
from collections import defaultdict


def load(p):
    rows = [json.loads(l) for l in open(p) if l.strip()]
    return rows
def gap(r): return (r["bfs_pct"] - r["pct_to_90"]) / (r["bfs_pct"] - r["tree_pct"])
before, after, base = (load(p) for p in sys.argv[1:4])
order = []
for r in before:
    if r["site"] not in order: order.append(r["site"])
held = {"jm", "ni-mt", "mx"}
def by_site(rows):
    d = defaultdict(list)
    for r in rows: d[r["site"]].append(r)
    return d
B, A = by_site(before), by_site(after)
bl = defaultdict(dict)
for r in base: bl[r["site"]][r["policy"]] = gap(r)
print("| site | BFS | TREE | before: %% to 90 (median of %d) | after | median gap before → after | gaps before | gaps after | best baseline | after − best |" % len(B[order[0]]))
print("|---|---|---|---|---|---|---|---|---|---|")
means = defaultdict(list)
for s in order:
    b, a = B[s], A.get(s, [])
    gb, ga = [gap(r) for r in b], [gap(r) for r in a]
    mb, ma = statistics.median(gb), statistics.median(ga) if ga else float("nan")
    best_p = max(("focused", "tres", "anthelion"), key=lambda p: bl[s].get(p, -9)) if s in bl else None
    best = bl[s][best_p] if best_p else float("nan")
    name = s + (" (held-out)" if s in held else "")
    print(f"| {name} | {b[0]['bfs_pct']:.1f} | {b[0]['tree_pct']:.1f} | {statistics.median(r['pct_to_90'] for r in b):.1f} | "
          f"{statistics.median(r['pct_to_90'] for r in a):.1f} | {mb:.2f} → {ma:.2f} | {' '.join(f'{g:.2f}' for g in gb)} | "
          f"{' '.join(f'{g:.2f}' for g in ga)} | {best:.2f} ({best_p}) | {ma - best:+.2f} |")
    grp = "held-out" if s in held else "dev"
    means[grp].append((mb, ma, best)); means["all"].append((mb, ma, best))
for g in ("dev", "held-out", "all"):
    m = means[g]
    if m: print(f"| **mean of medians, {g} ({len(m)})** | | | | | {statistics.mean(x[0] for x in m):.2f} → **{statistics.mean(x[1] for x in m):.2f}** | | | {statistics.mean(x[2] for x in m):.2f} (best per site) | |")
ok = all(r["exit_code"] == 0 and r["missing_from_outputs"] == 0 and r["requests"] <= r["budget"] for r in before + after)
print(f"\nall runs exit 0, within budget, nothing missing from outputs: {ok} ({len(before)} + {len(after)} runs)")
