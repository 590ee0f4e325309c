"""The README's main job, in its own process (it sets AIRFLOW_HOME before importing Airflow)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(960)  # above the subprocess's own guard: the suite's 300 s cut the demo at a load of 10
def test_demo_runs_end_to_end_and_says_where_targets_landed(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "sbcrawl_dev", "demo", "--workdir", str(tmp_path / "var"), "--profile", "tiny",
         "--max-requests", "200"],
        cwd=REPO, capture_output=True, text=True, timeout=900,  # a guard against a hang, not a speed test
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "s3://sbcrawl-demo" in out and "[7/7]" in out
    objects = int(re.search(r"objects\s+(\d+) distinct files", out).group(1))
    assert objects > 0
    assert len(re.findall(r"s3://sbcrawl-demo/crawls/stats\.example/objects/[0-9a-f]{64}", out)) == min(3, objects)
    assert re.search(r"summary\s+\d+ pages, \d+ requests", out)
    # the crawl's Asset event queued the ingestion DAG, which ended with rows in the lake
    assert "queued ['sbcrawl_ingest']" in out
    totals = re.search(r"totals\s+(\d+) rows in tables, (\d+) rows in observations", out)
    tables, observations = map(int, totals.groups())
    assert tables > 0 and observations > 0
    assert re.search(r"observation\s+.+ = \S+ \(value [0-9.]+, ok\)", out)
    # the observation's series, selected by its labels; every key in the lake tells one observation
    series = re.search(r"series\s+labels .*: (\d+) values", out)
    assert series and int(series.group(1)) >= 8  # a simulated table has 8 to 16 years
    assert re.search(r"keys\s+0 keys \(row labels \+ column path\) shared", out)
