"""The table benchmark on a tiny synthetic JSON Lines file (never on SAUS in the test suite)."""

import gzip
import json

from airflow_sbcrawl.tables import bench

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
    assert bench.main(["--data", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    for cls in ("metadata", "header", "group", "data", "derived", "notes", "macro-F1", "median ms per sheet"):
        assert cls in out
    result = json.loads(out.strip().splitlines()[-1])
    assert result["sheets"] == 4
    assert 0.5 < result["macro_f1"] <= 1.0


def test_bench_cross_validation_and_train(tmp_path, capsys):
    path = tmp_path / "tiny.jl.gz"
    _write(path)
    model = tmp_path / "m.json"
    assert bench.main(["--data", str(path), "--cv", "2", "--train", str(model), "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert "cv_macro_f1" in result
    assert json.loads(model.read_text())["kind"] == "multinomial-logistic-regression"


def test_bench_says_when_data_is_absent(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(bench.ENV_VAR, str(tmp_path / "nope.jl.gz"))
    assert bench.main([]) == 2
    assert "not found" in capsys.readouterr().err
