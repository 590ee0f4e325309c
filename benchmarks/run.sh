#!/usr/bin/env bash
# The benchmark runs whose results are committed under benchmarks/results/ (each under ~10 min on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
out=benchmarks/results
# Tables 2-3 and harvest curves: every policy on tiny, small and deep, 3 repeats of the seeded policies.
.venv/bin/python -m sbcrawl_dev bench crawl --profiles tiny,small,deep --repeats 3 --out "$out/crawl"
# Sites nobody tuned for: the portal profile and two random profiles (structure drawn from the seed).
.venv/bin/python -m sbcrawl_dev bench crawl --profiles portal,random-7,random-11 --repeats 1 \
    --policies sb-classifier,focused,bfs,omniscient --out "$out/crawl-unseen"
# Table 4: alpha, n, theta one at a time, SB-CLASSIFIER, on small and deep.
.venv/bin/python -m sbcrawl_dev bench crawl --sweep --profiles small,deep --repeats 1 --policies sb-classifier --jobs 2 --out "$out/sweep"
# The shared evaluation harness (../shared/eval, server-side scoring): every development profile x 3 seeds,
# budget 1.5 x the site's URLs, the default policy next to the paper's algorithm and FOCUSED (~40 min).
.venv/bin/python -m sbcrawl_dev bench harness --seeds 1,2,3 --policies default,sb-classifier-paper,focused --jobs 2 \
    --out "$out/harness"
# The same harness on our held-out profiles (bench/heldout.py: structures the development profiles lack).
.venv/bin/python -m sbcrawl_dev bench harness --profiles held-out --seeds 1,2,3 --policies default --jobs 2 \
    --out "$out/harness-heldout"
# Real sites replayed (../shared/eval/replay): every site, development and held-out, 2 runs of each policy (~50 min);
# replay-before/ holds the figures from before issue 19.
# Needs the sites extracted first: python -m sbcrawl_dev bench replay-extract --site all --mirror-root ROOT.
.venv/bin/python -m sbcrawl_dev bench replay --sites all --runs 2 --policies default,sb-classifier-paper,focused,tres,anthelion \
    --jobs 2 --out "$out/replay-before"
# Cost at scale: synthetic frontiers, then real crawls of the large profile.
.venv/bin/python -m sbcrawl_dev bench cost --crawls 0 --out "$out/cost-frontier"
.venv/bin/python -m sbcrawl_dev bench cost --frontiers "" --crawls 1000,50000 --out "$out/cost-crawl"
# A sample crawl report (Markdown + plots) with the final engine.
.venv/bin/python -m sbcrawl_dev bench report-sample "$out/report-small"
# Recrawls: epoch 0 cold, epoch 1 cold and warm (from the memory of epoch 0); one line per profile.
.venv/bin/python -m sbcrawl_dev bench recrawl --profiles tiny small deep --json "$out/recrawl.json" | tee "$out/recrawl.txt"
# Table detection: SAUS 5-fold CV, 300 composed multi-table sheets, the large sheets, the real files.
.venv/bin/python -m sbcrawl_dev bench tables --cv 5 --multi 300 --large | tee "$out/tables.txt"
.venv/bin/python -m sbcrawl_dev bench tables --real | tee "$out/tables-real.txt"
