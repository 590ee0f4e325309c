"""Per-run gap closed ((BFS - default) / (BFS - TREE)) of two runs.jsonl side by side: `bench harness`'s
(per profile and seed) or `bench replay`'s (per site and run).

Usage: python pair_table.py BEFORE/runs.jsonl AFTER/runs.jsonl [before-name after-name]"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict


def gaps(path: str) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = defaultdict(dict)
    with open(path) as lines:
        for line in lines:
            if line.strip():
                r = json.loads(line)
                gap = (r["bfs_pct"] - r["pct_to_90"]) / (r["bfs_pct"] - r["tree_pct"])
                out[r.get("profile") or r["site"]][r.get("seed") or r["run"]] = gap
    return out


def main() -> None:
    before, after = gaps(sys.argv[1]), gaps(sys.argv[2])
    names = sys.argv[3:5] or ["before", "after"]
    print(f"| profile / site | {names[0]} per run (median) | {names[1]} per run (median) | difference of medians |")
    print("|---|---|---|---|")
    meds = [[], []]
    for profile in before:
        cells = []
        for i, side in enumerate((before, after)):
            seeds = side.get(profile, {})
            values = [seeds[s] for s in sorted(seeds)]
            med = statistics.median(values) if values else float("nan")
            meds[i].append(med)
            cells.append(" / ".join(f"{v:.2f}" for v in values) + f" ({med:.2f})")
        print(f"| {profile} | {cells[0]} | {cells[1]} | {meds[1][-1] - meds[0][-1]:+.2f} |")
    if len(meds[0]) > 1:
        a, b = statistics.mean(meds[0]), statistics.mean(meds[1])
        print(f"| **mean of medians** | **{a:.2f}** | **{b:.2f}** | {b - a:+.2f} |")


if __name__ == "__main__":
    main()
