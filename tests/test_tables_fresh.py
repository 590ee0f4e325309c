"""The evaluation-only corpus of issue 20 (``fresh``): how it is loaded, and that no fit ever learns from it."""

from __future__ import annotations

import json
import re

import pytest

from sbcrawl_dev.bench import tables_corpora, tables_regions


def _sheet(corpus: str, k: int) -> dict:
    rows = [["Title", "", ""], ["Year", "A", "B"]] + [[str(2000 + i), str(i), str(2 * i)] for i in range(8)]
    return {"corpus": corpus, "id": f"{corpus}{k}", "org": "", "group": f"{corpus}{k}", "rows": rows,
            "tables": [{"range": [1, 9, 0, 2], "header": [1, 1]}], "lines": None}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache holding a training corpus and the evaluation-only one."""
    for corpus in ("real", "fresh"):
        tables_corpora.write_corpus(tmp_path, corpus, [_sheet(corpus, k) for k in range(3)])
    monkeypatch.setenv(tables_corpora.CACHE_ENV, str(tmp_path))
    return tmp_path


def _corpora_fitted_on(monkeypatch) -> list[set[str]]:
    """Record the corpora every preparation of training data is given; fitting itself is stubbed out."""
    from sbcrawl_dev.bench import tables_train

    seen: list[set[str]] = []

    def prepare(corpora, augment=False, seed=0):
        seen.append(set(corpora))
        return []

    class Regions:  # stands for a fitted RegionModel
        @staticmethod
        def save(path):
            path.write_text("{}")

    class Fitted:
        regions = Regions

    monkeypatch.setattr(tables_train, "prepare", prepare)
    monkeypatch.setattr(tables_train, "fit_models", lambda data, **kw: Fitted)
    monkeypatch.setattr(tables_train, "loco_fit", lambda data, held, line, shipped, **kw: (line, None))
    return seen


def test_fresh_is_cached_and_scored_but_never_trained_on(cache, tmp_path, monkeypatch):
    assert tables_corpora.available(cache, evaluation=True) == ["real", "fresh"]
    assert tables_corpora.available(cache) == ["real"]  # what a script fitting "every cached corpus" gets
    seen = _corpora_fitted_on(monkeypatch)
    tables_regions.train_shipped(tmp_path / "region_model.json")  # --train-regions
    tables_regions.loco_models({"real": [], "fresh": []})  # --loco, scoring both
    assert seen == [{"real"}, {"real"}]


def test_the_fresh_loader_reads_its_own_annotations_and_names_their_corpus(tmp_path):
    local = "tests/data/tables_real/bfs-Alkoholkonsum.xlsx"
    spec = {"about": "", "files": [{"local": local, "org": "BFS", "sheets": {"2012": [{"range": "A5:O49",
                                                                                           "header": 2}]}}]}
    path = tmp_path / "fresh.json"
    path.write_text(json.dumps(spec))
    sheets, problems = tables_corpora.real_sheets(tables_corpora.Repos(tmp_path, tmp_path), path, "fresh")
    assert problems == []
    assert [(s["corpus"], s["id"], s["org"], s["tables"]) for s in sheets] == [
        ("fresh", "bfs-Alkoholkonsum.xlsx#2012", "BFS", [{"range": [4, 48, 0, 14], "header": [4, 5]}])]


def test_fetch_only_fresh_writes_that_corpus_alone(tmp_path, monkeypatch):
    import io

    spec = {"about": "", "files": [{"local": "tests/data/tables_real/bfs-Alkoholkonsum.xlsx", "org": "BFS",
                                    "sheets": {"2012": [{"range": "A5:O49", "header": 2}]}}]}
    annotations = tmp_path / "fresh.json"
    annotations.write_text(json.dumps(spec))
    monkeypatch.setattr(tables_corpora, "FRESH_ANNOTATIONS", annotations)
    cache = tmp_path / "cache"
    counts = tables_corpora.fetch(cache, tmp_path, out=io.StringIO(), only=frozenset({"fresh"}))
    assert counts == {"fresh": 1}
    assert sorted(p.name for p in cache.glob("*.jl.gz")) == ["fresh.jl.gz"]
    assert tables_corpora.load_corpus("fresh", cache)[0]["corpus"] == "fresh"


def test_the_fresh_annotations_are_pinned_and_share_no_file_with_the_real_corpus():
    fresh = tables_corpora.load_annotations(tables_corpora.FRESH_ANNOTATIONS)
    real = tables_corpora.load_annotations(tables_corpora.ANNOTATIONS)
    used = {(e.get("repo"), e.get("path"), e.get("member")) for e in real}
    assert len(fresh) >= 20
    for entry in fresh:
        assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]) and entry["repo"] and entry["path"] and entry["org"]
        assert (entry["repo"], entry["path"], entry.get("member")) not in used
        for spec in entry["sheets"].values():
            for table, parsed in zip(spec, tables_corpora.annotated_tables(spec), strict=True):
                r0, r1, _, _ = parsed["range"]
                assert 0 <= int(table["header"]) <= r1 - r0 + 1


def test_differences_and_per_organisation_scores_name_the_sheets_and_publishers():
    exact = _sheet("fresh", 0) | {"org": "B", "rows": _sheet("fresh", 0)["rows"][1:],
                                  "tables": [{"range": [0, 8, 0, 2], "header": [0, 0]}]}
    titled = _sheet("fresh", 1) | {"org": "A"}  # the used range takes its title line in
    lines = tables_regions.sheet_differences([exact, titled], tables_regions.used_range)
    assert lines == ["fresh1: annotated ['A2:C10/1'] found ['A1:C10/1']"]
    orgs = tables_regions.by_organisation([exact, titled], {"used_range": tables_regions.used_range})
    assert list(orgs) == ["A", "B"]
    assert orgs["A"]["used_range"]["exact"]["f1"] == 0.0 and orgs["B"]["used_range"]["exact"]["f1"] == 1.0
