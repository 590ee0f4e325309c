"""``python -m sbcrawl_dev bench cost`` on a small synthetic frontier: it measures, and the checkpoint round-trips."""

from __future__ import annotations

from sbcrawl_dev.bench.cost import frontier_cost
from sbcrawl_dev.bench.pagecost import capture_sources, format_page_cost, page_cost


def test_frontier_cost_checkpoints_and_restores_the_whole_frontier(tmp_path):
    result = frontier_cost(3000, tmp_path, pages=50)  # raises if the restored frontier differs in size
    assert result.frontier == 3000
    assert result.page_cpu_ms > 0 and result.save_s > 0 and result.restore_s > 0 and result.restore_cpu_s > 0
    assert result.checkpoint_mb > 0
    assert not (tmp_path / "state-3000").exists()  # cleaned up


def test_page_cost_times_the_crawler_page_path_against_the_floor_on_saved_pages(tmp_path):
    sites = capture_sources(["sim:tiny"], 8, tmp_path, eval_dir=None)
    assert len(sites) == 1 and len(sites[0].pages) == 8
    assert all((sites[0].folder / name).read_bytes().lstrip().lower().startswith(b"<!doctype html")
               for _, name in sites[0].pages)
    site, total = page_cost(sites, repeats=1, out=tmp_path / "runs")
    assert site.source == "sim:tiny" and total.source == "all" and total.pages == 8
    # The crawler read the pages' links (its link table holds more URLs than the pages it was given).
    assert site.links > 8
    assert site.floor_ms > 0 and site.crawler_ms > site.crawler_process_ms > 0
    assert site.ratio == site.crawler_ms / site.floor_ms
    assert "sim:tiny" in "\n".join(format_page_cost([site, total], 1))


def test_bench_cost_prints_each_table_once(tmp_path, capsys):
    """The figures go to stdout once, as they are measured (they were streamed to stderr, then the whole
    text printed again at the end); cost.txt holds the same text."""
    from sbcrawl_dev.bench.cost import main

    assert main(["--pages", "0", "--crawls", "0", "--frontiers", "1000", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    shown = (captured.out + captured.err).splitlines()
    table = [line for line in (tmp_path / "cost.txt").read_text().splitlines() if line.strip()]
    assert len(table) == 3 and [shown.count(line) for line in table] == [1, 1, 1]  # title, header, 1,000 URLs
    assert captured.out == (tmp_path / "cost.txt").read_text()
