"""Number parsing: separators, signs, footnote marks and missing-value markers."""

import pytest

from airflow_sbcrawl.tables.model import VALUE_STATUSES
from airflow_sbcrawl.tables.values import guess_decimal, parse_value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1,234", 1234.0),
        ("1,234,567.5", 1234567.5),
        ("1.234,5", 1234.5),
        ("1 234,5", 1234.5),
        ("1\u00a0234", 1234.0),
        ("(12)", -12.0),
        ("−3.2", -3.2),
        ("45\\2", 45.0),
        ("12.5 p", 12.5),
        ("[1] 7", 7.0),
        ("45*", 45.0),
        ("12%", 12.0),
        ("$1,000", 1000.0),
        ("3,25", 3.25),
        ("2007", 2007.0),
    ],
)
def test_numbers(text, value):
    parsed = parse_value(text)
    assert parsed.status == "ok"
    assert parsed.value == pytest.approx(value)


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("..", "missing"),
        ("…", "missing"),
        (":", "missing"),
        ("-", "missing"),
        ("–", "missing"),
        ("x", "confidential"),
        ("X", "confidential"),
        ("n/a", "not_applicable"),
        ("NA", "missing"),
        ("(D)", "confidential"),
        ("(NA)", "missing"),
        ("(X)", "not_applicable"),
        ("(S)", "confidential"),
        ("(Z)", "missing"),
        ("*", "confidential"),
        ("Total", "text"),
        ("1990 (April 1)", "text"),
    ],
)
def test_markers_keep_a_status(text, status):
    parsed = parse_value(text)
    assert parsed.value is None
    assert parsed.status == status
    assert parsed.status in VALUE_STATUSES


def test_sheet_decimal_comma_changes_ambiguous_cells():
    assert guess_decimal(["3,25", "12,5", "1,234"]) == ","
    assert guess_decimal(["3.25", "1,234"]) == "."
    assert parse_value("1,234", decimal=",").value == pytest.approx(1.234)
    assert parse_value("1.234", decimal=",").value == pytest.approx(1234.0)


def test_margin_of_error_keeps_the_estimate():
    from airflow_sbcrawl.tables.values import parse_value

    assert parse_value("76.3±1.2").value == 76.3 and parse_value("76.3±1.2").status == "ok"
    assert parse_value("1.234,5 ± 2,1", ",").value == 1234.5
    assert parse_value("± 3").status == "text" and parse_value("n/a ± 2").status == "text"
