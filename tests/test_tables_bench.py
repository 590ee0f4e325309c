"""The table benchmark on a tiny synthetic JSON Lines file (never on SAUS in the test suite)."""

import gzip
import json

import pytest

from sbcrawl_dev.bench import tables_detection, tables_devset

from .test_tables_detect import SHEET

LABELS = ["metadata", "metadata", "empty", "header", "header", "empty", "group"] + ["data"] * 4 + ["derived"]
LABELS += ["group"] + ["data"] * 3 + ["derived", "empty", "notes", "notes"]


def _write(path, copies=4):
    with gzip.open(path, "wt") as fh:
        for k in range(copies):
            fh.write(json.dumps({"file_name": f"f{k}.xls", "table_array": SHEET, "line_annotation": LABELS}) + "\n")


def test_bench_reports_per_class_and_macro_f1(tmp_path, capsys):
    path = tmp_path / "tiny.jl.gz"
    _write(path)
    assert tables_detection.main(["--data", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    for cls in ("metadata", "header", "group", "data", "derived", "notes", "macro-F1", "table recall", "us per"):
        assert cls in out
    result = json.loads(out.strip().splitlines()[-1])
    assert result["sheets"] == 4
    assert 0.5 < result["macro_f1"] <= 1.0
    assert result["tables"]["recall"] == 1.0 and result["tables"]["precision"] == 1.0
    assert result["timing"]["us_per_cell"]["max"] >= result["timing"]["us_per_cell"]["median"] > 0
    assert result["timing"]["runs_per_sheet"] == 3


def test_bench_scores_composed_multi_table_sheets(tmp_path, capsys):
    path = tmp_path / "tiny.jl.gz"
    _write(path)
    assert tables_detection.main(["--data", str(path), "--multi", "12", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    layouts = result["multi"]["tables"]["by_layout"]
    assert set(layouts) <= {"stack", "split", "side"} and layouts
    assert sum(r["tables"] for r in layouts.values()) >= 24  # 12 sheets of 2-3 tables
    assert 0.0 <= result["multi"]["tables"]["recall"] <= 1.0


def test_composed_sheets_keep_their_annotations_and_regions():
    sheet = {"file_name": "a", "table_array": SHEET, "line_annotation": LABELS}
    composed = tables_devset.compose([sheet, {**sheet, "file_name": "b"}, {**sheet, "file_name": "c"}], n=20, seed=3)
    kinds = {s["kind"] for s in composed}
    assert kinds == {"stack", "split", "side"}
    for s in composed:
        grid = s["table_array"]
        if s["line_annotation"] is not None:
            assert len(s["line_annotation"]) == len(grid)
        for r0, r1, c0, c1 in s["tables"]:
            # every region holds non-empty cells in its first and last rows, and nothing else overlaps it
            assert any(c.strip() for c in grid[r0][c0 : c1 + 1]) and any(c.strip() for c in grid[r1][c0 : c1 + 1])
        regions = s["tables"]
        assert all(tables_devset.iou(a, b) == 0.0 for a in regions for b in regions if a is not b)


def test_region_matching_counts_each_table_once():
    truth = [(0, 9, 0, 4), (12, 20, 0, 4)]
    assert tables_devset.iou((0, 9, 0, 4), (0, 9, 0, 4)) == 1.0
    assert tables_devset.match(truth, [(0, 9, 0, 4), (0, 8, 0, 4)]) == 1  # a duplicate does not match twice
    assert tables_devset.match(truth, [(0, 20, 0, 4)]) == 0  # one table over both: IoU 10/21 and 9/21
    assert tables_devset.match(truth, [(0, 9, 0, 4), (13, 20, 0, 4)]) == 2


def test_bench_cross_validation_and_train(tmp_path, capsys):
    path = tmp_path / "tiny.jl.gz"
    _write(path)
    model = tmp_path / "m.json"
    assert tables_detection.main(["--data", str(path), "--cv", "2", "--train", str(model), "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert "cv_macro_f1" in result
    assert json.loads(model.read_text())["kind"] == "multinomial-logistic-regression"


def test_bench_says_when_data_is_absent(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(tables_detection.ENV_VAR, str(tmp_path / "nope.jl.gz"))
    assert tables_detection.main([]) == 2
    assert "not found" in capsys.readouterr().err


def test_large_sheets_are_timed_over_repeated_runs(tmp_path, capsys):
    path = tmp_path / "tiny.jl.gz"
    _write(path)
    sheets = tables_detection.load_sheets(path)
    res = tables_detection._print_large(sheets, tables_detection.default_classifier(), None, sizes=(200,))
    out = capsys.readouterr().out
    assert "median" in out and "min" in out
    (timing,) = res.values()
    assert timing["cells"] >= 200
    assert timing["repeats"] == 15
    assert 0 < timing["ms_min"] <= timing["ms"]
    assert timing["us_per_cell"] == pytest.approx(timing["ms"] * 1000 / timing["cells"])


def test_each_sheet_is_timed_by_its_fastest_run(tmp_path, monkeypatch):
    path = tmp_path / "tiny.jl.gz"
    _write(path, copies=1)
    (sheet,) = tables_detection.load_sheets(path)
    calls = []
    detect = tables_detection.classify_and_detect

    def counted(*args, **kwargs):
        calls.append(1)
        return detect(*args, **kwargs)

    monkeypatch.setattr(tables_detection, "classify_and_detect", counted)
    tally = tables_detection.Tally(repeats=4)
    tally.run(sheet, tables_detection.default_classifier())
    assert len(calls) == 4
    assert len(tally.ms) == 1 and tally.ms[0] > 0
    assert tally.truth == LABELS and len(tally.pred) == len(LABELS)  # one run's classes, not four
