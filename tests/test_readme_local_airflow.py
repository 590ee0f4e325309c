"""The README's "The DAGs in a local Airflow" section works as written: its providers file makes the DAG it
names, its settings are the ones the DAGs read, and ``serve-sim`` prints what the section relies on (a proxy
to crawl through, no "direct" URL that finds a fraction of the site)."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _section() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index("### The DAGs in a local Airflow")
    end = text.index("\n#", start + 4)
    return text[start:end]


def test_the_sections_providers_file_makes_the_dag_it_names(monkeypatch, tmp_path):
    from airflow.dag_processing.dagbag import DagBag

    section = _section()
    yaml_text = re.search(r"<<'YAML'\n(.*?)\nYAML\n", section, re.S).group(1)
    (tmp_path / "providers.yaml").write_text(yaml_text)
    monkeypatch.setenv("SBCRAWL_PROVIDERS_FILE", str(tmp_path / "providers.yaml"))
    named = re.search(r"trigger `(sbcrawl_\w+)`", section).group(1)
    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert bag.import_errors == {}
    assert named in bag.dag_ids
    # every SBCRAWL_ setting the section exports is one the settings read
    settings_source = (REPO / "airflow_sbcrawl" / "settings.py").read_text()
    for name in re.findall(r"\b(SBCRAWL_[A-Z_]+)=", section):
        option = name.removeprefix("SBCRAWL_").lower()
        assert option in settings_source, f"the README exports {name}, which no setting reads"
    # and the sim commands it runs are commands of the dev CLI
    from sbcrawl_dev.__main__ import COMMANDS
    for command in re.findall(r"-m sbcrawl_dev ([\w-]+)", section):
        assert command in COMMANDS, command


@pytest.mark.timeout(120)
def test_serve_sim_advertises_the_proxy_and_no_direct_url(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "sbcrawl_dev", "serve-sim", "tiny", "--port", "0"],
                            stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        lines = []
        while not any(line.lstrip().startswith("start URL:") for line in lines):
            line = proc.stdout.readline()
            assert line, f"serve-sim ended before naming its start URL: {lines}"
            lines.append(line)
        banner = "".join(lines)
        assert "direct" not in banner.lower()
        proxy = re.search(r"HTTP_PROXY=(\S+)", banner).group(1)
        start = re.search(r"start URL:\s*(\S+)", banner).group(1)
        # the banner's instructions work: the start page comes through the advertised proxy
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy}))
        with opener.open(start, timeout=30) as resp:
            assert resp.status == 200 and b"<a " in resp.read()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
