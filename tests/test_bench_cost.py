"""``sbcrawl bench cost`` on a small synthetic frontier: it measures, and the checkpoint round-trips."""

from __future__ import annotations

from airflow_sbcrawl.bench.cost import frontier_cost


def test_frontier_cost_checkpoints_and_restores_the_whole_frontier(tmp_path):
    result = frontier_cost(3000, tmp_path, pages=50)  # raises if the restored frontier differs in size
    assert result.frontier == 3000
    assert result.page_cpu_ms > 0 and result.save_s > 0 and result.restore_s > 0
    assert result.checkpoint_mb > 0
    assert not (tmp_path / "state-3000").exists()  # cleaned up
