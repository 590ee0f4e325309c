"""The learned region model: its trees evaluated in numpy as scikit-learn does, its JSON, the tables it
finds on a hand-built sheet, and the leave-one-corpus-out split."""

from __future__ import annotations

import json

import numpy as np
import pytest

from airflow_sbcrawl.tables.boosted import BoostedTrees
from airflow_sbcrawl.tables.detect import classify_and_detect
from airflow_sbcrawl.tables.model import Provenance
from airflow_sbcrawl.tables.regions import PARAMS_FILE, RegionModel, find_tables

PROV = Provenance("test", "test")


@pytest.mark.parametrize("classes", [2, 3])
def test_boosted_trees_give_scikit_learns_probabilities_after_a_json_round_trip(classes):
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(1)
    x = rng.normal(size=(600, 5))
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(int) + (classes == 3) * (x[:, 2] > 1)
    model = HistGradientBoostingClassifier(max_iter=20, max_depth=3, random_state=0).fit(x, y)
    trees = BoostedTrees.from_dict(json.loads(json.dumps(BoostedTrees.from_sklearn(model).to_dict())))
    test = rng.normal(size=(200, 5))
    np.testing.assert_allclose(trees.proba(test), model.predict_proba(test), atol=1e-6)


def _sheet(rng: np.random.Generator, tables: int) -> dict:
    """A sheet of ``tables`` stacked tables, each under a title and a unit line with a source under it,
    some body lines a label without figures (a sparse body); its annotated ranges and line classes."""
    rows: list[list[str]] = []
    lines: list[str] = []
    ranges = []
    width = int(rng.integers(3, 6))
    for t in range(tables):
        if t:
            rows.append([""] * width)
            lines.append("empty")
        rows.append([f"Table {t + 1}. Persons by area and year"] + [""] * (width - 1))
        rows.append(["(in thousands)"] + [""] * (width - 1))
        lines += ["metadata", "metadata"]
        first = len(rows)
        rows.append(["Area"] + [str(2000 + k) for k in range(width - 1)])
        lines.append("header")
        for k in range(int(rng.integers(6, 14))):
            if rng.random() < 0.2:
                rows.append([f"Group {k}"] + [""] * (width - 1))
                lines.append("group")
            else:
                rows.append([f"Area {k}"] + [str(int(v)) for v in rng.integers(10, 999, width - 1)])
                lines.append("data")
        ranges.append({"range": [first, len(rows) - 1, 0, width - 1], "header": [first, first]})
        rows.append(["Source: statistics office"] + [""] * (width - 1))
        lines.append("notes")
    return {"id": str(rng.integers(1 << 30)), "rows": rows, "tables": ranges, "lines": lines}


@pytest.fixture(scope="module")
def fitted_on_sheets(tmp_path_factory):
    """Region models fitted on generated sheets, written as JSON and read back."""
    from airflow_sbcrawl.tables.classifier import default_classifier
    from sbcrawl_dev.bench.tables_train import fit_models, prepare

    rng = np.random.default_rng(7)
    sheets = [_sheet(rng, int(rng.integers(1, 4))) for _ in range(60)]
    fitted = fit_models(prepare({"generated": sheets}), line=default_classifier(), role_iter=30, start_iter=30)
    path = tmp_path_factory.mktemp("regions") / PARAMS_FILE
    fitted.regions.save(path)
    return path, rng


def test_region_models_are_saved_as_json_and_find_stacked_tables_apart(fitted_on_sheets):
    path, rng = fitted_on_sheets
    params = json.loads(path.read_text())  # plain JSON, nothing to unpickle
    assert params["kind"] == "region-model"
    model = RegionModel.load(path)
    for _ in range(5):
        sheet = _sheet(rng, 2)
        _, tables = classify_and_detect(sheet["rows"], PROV, regions=model)
        found = [[t.first_row, t.last_row, t.first_col, t.last_col] for t in tables if t.observations]
        assert found == [t["range"] for t in sheet["tables"]]
        assert [t.title.startswith("Table") for t in tables] == [True, True]


def test_a_model_fitted_on_other_features_is_refused(fitted_on_sheets):
    params = json.loads(fitted_on_sheets[0].read_text())
    params["role_features"] = params["role_features"][:-1]
    with pytest.raises(ValueError, match="other features"):
        RegionModel.from_dict(params)


def test_find_tables_reads_decisions_top_to_bottom():
    # title, header, 2 body lines, a note, a blank, a title, a new header, a body line
    decisions = ["outside", "start", "continue", "continue", "outside", "", "outside", "start", "continue"]
    role = np.zeros((len(decisions), 4))
    for i, r in enumerate([0, 1, 2, 2, 3, 0, 0, 1, 2]):
        role[i, r] = 1.0
    assert find_tables(decisions, role) == [(0, 1, 3, 4), (6, 7, 8, 8)]


def test_leave_one_corpus_out_never_learns_from_the_held_out_corpus():
    from sbcrawl_dev.bench.tables_train import SheetData, loco_split

    data = [SheetData(c, {"id": f"{c}{k}", "rows": [], "tables": []}, np.zeros((0, 1)), [])
            for c in ("saus", "fuste", "real") for k in range(3)]
    for held in ("saus", "fuste", "real"):
        train = loco_split(data, held)
        assert {d.corpus for d in train} == {"saus", "fuste", "real"} - {held} and len(train) == 6


def test_stacked_copies_cut_a_body_into_tables_each_under_its_header():
    from sbcrawl_dev.bench.tables_train import prepare, stacked

    rng = np.random.default_rng(3)
    sheet = _sheet(rng, 1)
    (r0, r1, c0, c1), header = sheet["tables"][0]["range"], sheet["tables"][0]["header"]
    # a draw of more parts than the body holds (3 parts of 3 lines or more) gives no copy: draw again
    copy = next(c for c in (stacked(sheet, np.random.default_rng(k)) for k in range(20)) if c)
    assert 2 <= len(copy["tables"]) <= 3
    rows, body = copy["rows"], []
    for k, t in enumerate(copy["tables"]):
        a, b, ca, cb = t["range"]
        assert (ca, cb) == (c0, c1) and t["header"] == [a, a]
        assert rows[a][1:] == sheet["rows"][header[0]][1:]  # the header's columns, repeated
        assert not any(rows[a - 1]) if k else a == r0  # a blank line between two tables
        body += rows[a + 1 : b + 1]
    assert body == sheet["rows"][header[1] + 1 : r1 + 1]  # every body line once, in order
    assert len(copy["lines"]) == len(rows) and rows[r1 + 1 + len(rows) - len(sheet["rows"])] == sheet["rows"][r1 + 1]
    # no copy of a sheet of two tables; a corpus held out takes its copies with it (same corpus and group)
    assert stacked(_sheet(rng, 2), rng) is None
    sheets = [_sheet(rng, 1) for _ in range(6)]
    data = prepare({"g": sheets}, augment=True)
    copies = [d for d in data if d.sheet["id"].endswith("#stacked")]
    assert copies and {d.corpus for d in data} == {"g"}
    assert all(d.sheet["group"] == d.sheet["id"].removesuffix("#stacked") for d in copies)


def _kinds(text: list[list[str]]) -> np.ndarray:
    from airflow_sbcrawl.tables.features import cell_kinds
    from airflow_sbcrawl.tables.values import SheetCells

    return cell_kinds(text, ".", SheetCells(text, "."))[0]


def test_rule_headers_restore_a_time_series_header_block_the_role_model_cut_short():
    from airflow_sbcrawl.tables.regions import rule_headers

    # An ABS-like sheet: series names, then attribute rows (some with figures) over the observations; the
    # role model made the names line a table of its own and read "Collection Month | 3 | 3" as body
    text = [["", "Hours worked ; Total", "Hours worked ; Male"], ["Unit", "000 Hours", "000 Hours"],
            ["Collection Month", "3", "3"], ["Series ID", "A84426298K", "A84426294A"],
            ["1984-12-01", "2939234.1", "2372693.4"], ["1985-03-01", "2954148.2", "2385067.4"]]
    learned = ["header", "header", "derived", "header", "data", "data"]
    ruled = ["header", "header", "header", "header", "data", "data"]
    found, classes = rule_headers([(0, 0, 0, 0), (1, 1, 5, 5)], learned, ruled, text, _kinds(text))
    assert found == [(0, 0, 5, 5)]
    assert classes == ["header"] * 4 + ["data"] * 2
    assert learned[2] == "derived"  # the arguments are left as they were


def test_rule_headers_leave_out_lines_of_words_above_the_header_and_split_a_repeated_header():
    from airflow_sbcrawl.tables.regions import rule_headers

    text = [["Some notes", "", ""], ["at the top", "of the", "sheet"], ["Name", "Age", "Born"],
            ["Ann", "69", "1947"], ["Bob", "60", "1956"], ["", "", ""], ["Diploma", "", ""],
            ["Name", "Age", "Born"], ["Cy", "90", "1926"], ["Di", "88", "1928"]]
    # the role model took the words above the header in, as a header: they are the table's title
    learned = ["metadata", "header", "data", "data", "data"]
    ruled = ["metadata", "metadata", "header", "data", "data"]
    found, classes = rule_headers([(0, 1, 4, 4)], learned, ruled, text[:5], _kinds(text[:5]))
    assert found == [(0, 2, 4, 4)] and classes == ["metadata", "metadata", "header", "data", "data"]
    # the header repeated after a blank line and a one-cell title starts the next table
    learned = ["metadata", "metadata", "header", "data", "data", "empty", "data", "data", "data", "data"]
    found, classes = rule_headers([(0, 2, 9, 9)], learned, learned, text, _kinds(text))
    assert found == [(0, 2, 4, 4), (6, 7, 9, 9)]
    assert classes[6:8] == ["metadata", "header"]
    # a header of figures (a year over a body) is not the rules' to move
    years = [["Table 1", "", ""], ["", "2001", "2002"], ["Ann", "69", "70"], ["Bob", "60", "61"]]
    found, _ = rule_headers([(0, 1, 3, 3)], ["metadata", "header", "data", "data"],
                            ["metadata", "metadata", "header", "data"], years, _kinds(years))
    assert found == [(0, 1, 3, 3)]


def test_rule_headers_end_a_table_at_its_notes_and_cut_a_page_of_two_tables():
    from airflow_sbcrawl.tables.regions import rule_headers

    # A PDF page: a table, its source, the next table's title and header, its body, a page footer; the
    # start model read the whole page as one table
    text = [["Table 1. Arrests", "", ""], ["Offense", "Male", "Female"], ["Robbery", "90", "12"],
            ["Arson", "8", "2"], ["Source: FBI", "", ""], ["Table 2. Arrests by race", "", ""],
            ["Offense", "White", "Black"], ["Robbery", "43", "55"], ["Arson", "5", "3"],
            ["Statistical Abstract", "", "2012"]]
    learned = ["metadata", "header", "data", "data", "data", "header", "header", "data", "data", "header"]
    ruled = ["metadata", "header", "data", "data", "notes", "notes", "header", "data", "data", "notes"]
    found, classes = rule_headers([(0, 1, 9, 9)], learned, ruled, text, _kinds(text))
    assert found == [(0, 1, 3, 4), (5, 6, 8, 9)]
    assert classes[4:7] == ["notes", "metadata", "header"] and classes[9] == "notes"
    # a label line ending a sparse body stays in its table though the rules call it a note
    sparse = [["Area", "2001", "2002"], ["North", "1", "2"], ["Group 7", "", ""], ["Source: office", "", ""]]
    found, _ = rule_headers([(0, 0, 2, 3)], ["header", "data", "group", "notes"],
                            ["header", "data", "notes", "notes"], sparse, _kinds(sparse))
    assert found == [(0, 0, 2, 3)]


def test_rule_headers_give_a_title_back_and_read_section_lines_inside_a_body():
    from airflow_sbcrawl.tables.regions import rule_headers

    # small multiples: the role model made "Certificate" a table of its own (dropped: no body)
    text = [["Diploma", ""], ["Sex", "Value"], ["Female", "210"], ["Male", "173"], ["", ""], ["Certificate", ""],
            ["Sex", "Value"], ["Female", "732"], ["Male", "807"]]
    learned = ["metadata", "header", "data", "data", "empty", "header", "header", "data", "data"]
    ruled = ["metadata", "header", "data", "data", "empty", "metadata", "header", "data", "data"]
    found, classes = rule_headers([(0, 1, 3, 3), (5, 5, 5, 5), (6, 6, 8, 8)], learned, ruled, text, _kinds(text))
    assert found == [(0, 1, 3, 3), (5, 6, 8, 8)] and classes[5] == "metadata"
    # a section's label line over its block of series read as a header by the role model: a group line;
    # the table's header repeated in its body stays a header
    text = [["", "All aged 16+", "Unemployed"], ["Jan 1971", "40513", "980"], ["Male", "MGSM", "MGSD"],
            ["Feb 1971", "40600", "990"], ["", "All aged 16+", "Unemployed"], ["Mar 1971", "40700", "995"]]
    learned = ["header", "data", "header", "data", "data", "data"]
    ruled = ["header", "data", "data", "data", "header", "data"]
    _, classes = rule_headers([(0, 0, 5, 5)], learned, ruled, text, _kinds(text))
    assert classes == ["header", "data", "group", "data", "header", "data"]


def test_rule_headers_leave_a_title_over_merged_cells_and_a_unit_over_the_last_column_out_of_the_header():
    from airflow_sbcrawl.tables.regions import rule_headers

    # a company's name copied into every cell of a merged title, over "Date | Open | ..."; the role model
    # read it as the header's first line
    text = [["CSII - Inc.", "CSII - Inc.", "CSII - Inc."], ["Date", "Open", "Close"], ["2014-03-10", "34.8", "33.85"],
            ["2014-03-07", "34.52", "34.2"]]
    found, classes = rule_headers([(0, 0, 3, 3)], ["header", "header", "data", "data"],
                                  ["metadata", "header", "data", "data"], text, _kinds(text))
    assert found == [(0, 1, 3, 3)] and classes[:2] == ["metadata", "header"]
    # a unit alone over the last column of a table three columns wide, above a header line naming the columns
    text = [["", "", "£ million"], ["Region", "2019", "2020"], ["North", "1", "2"], ["South", "3", "4"]]
    found, classes = rule_headers([(0, 0, 3, 3)], ["header", "header", "data", "data"],
                                  ["header", "header", "data", "data"], text, _kinds(text))
    assert found == [(0, 1, 3, 3)] and classes[:2] == ["metadata", "header"]
    # the same line over the one value column of a two-column table names that column: it stays a header;
    # so does a year copied over the columns it spans, and a spanning header under which nothing names
    # two columns
    for text in ([["", "Population"], ["Area", "2020"], ["North", "1"], ["South", "3"]],
                 [["", "1993", "1993"], ["Area", "Men", "Women"], ["North", "1", "2"], ["South", "3", "4"]],
                 [["Persons", "Persons", "Persons"], ["Total", "Total", "Total"], ["North", "1", "2"],
                  ["South", "3", "4"]]):
        found, classes = rule_headers([(0, 0, 3, 3)], ["header", "header", "data", "data"],
                                      ["header", "header", "data", "data"], text, _kinds(text))
        assert found == [(0, 0, 3, 3)] and classes[:2] == ["header", "header"], text


def test_the_package_ships_a_region_model_and_detection_uses_it_by_default():
    from airflow_sbcrawl.tables.regions import default_region_model

    assert isinstance(default_region_model(), RegionModel)
    sheet = [["Table 1. Persons", "", ""], ["Area", "2001", "2002"], ["North", "120", "130"], ["South", "80", "95"],
             ["Source: office", "", ""]]
    (learned,) = classify_and_detect(sheet, PROV)[1]
    (ruled,) = classify_and_detect(sheet, PROV, regions="rules")[1]
    # the learned regions frame the table proper, the rules its titles and notes with it
    assert (learned.first_row, learned.last_row) == (1, 3) and (ruled.first_row, ruled.last_row) == (0, 4)
    assert learned.title == ruled.title == "Table 1. Persons" and learned.notes == ["Source: office"]
