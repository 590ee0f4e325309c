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


@pytest.mark.parametrize(
    "text, value",
    [("10-14", 12.0), ("10\u201314", 12.0), ("0.5 - 1.2", 0.85), ("10 to 14", 12.0), ("1,000-2,000", 1500.0),
     ("5-9 \\1", 7.0)],
)
def test_ranges_read_as_their_midpoint(text, value):
    from airflow_sbcrawl.tables.values import parse_range

    parsed = parse_range(text)
    assert parsed is not None and parsed.status == "range" and parsed.value == pytest.approx(value)
    assert parsed.status in VALUE_STATUSES
    assert parse_value(text).status == "text"  # a label in a stub ("15-24" years): never a number there


@pytest.mark.parametrize("text", ["2016-12", "1990-91", "1947-01-08", "abc", "-5", "10-", "a-b"])
def test_dates_periods_and_words_are_not_ranges(text):
    from airflow_sbcrawl.tables.values import parse_range

    assert parse_range(text) is None


def test_a_range_in_a_value_column_is_an_observation_with_its_raw_text():
    from airflow_sbcrawl.tables import Provenance, detect_tables

    rows = [["Table 3. Waiting times by age", "", ""], ["", "", ""], ["Age", "Persons", "Wait (days)"],
            ["15-24", "120", "10-14"], ["25-44", "340", "7\u20139"], ["45-64", "280", "5"], ["65-74", "150", "3"],
            ["75+", "90", "2"], ["Total", "980", "6"]]
    (table,) = detect_tables(rows, Provenance("t", "t"))
    cells = {(o.row_labels, o.column_path[-1]): o for o in table.observations}
    wait = cells[(("15-24",), "Wait (days)")]
    assert (wait.raw, wait.value, wait.status) == ("10-14", 12.0, "range")
    assert cells[(("25-44",), "Wait (days)")].value == 8.0
    assert cells[(("45-64",), "Wait (days)")].status == "ok"
    # the first line of the body holds a range where numbers stand below: data, not a second header line
    assert table.header == [["Age", "Persons", "Wait (days)"]]
    assert {o.row_labels[0] for o in table.observations} == {"15-24", "25-44", "45-64", "65-74", "75+", "Total"}


@pytest.mark.parametrize(
    ("text", "decimal", "value"),
    [
        ("１，６４６", None, 1646.0),  # full-width digits and comma (Japanese tables)
        ("１２．５", None, 12.5),
        ("1,23,45,678", None, 12345678.0),  # Indian lakh grouping
        ("1'234'567", None, 1234567.0),
        ("1.5e-05", None, 1.5e-05),
        ("97,98", ",", 97.98),  # a decimal comma where the table writes them
    ],
)
def test_numbers_written_other_ways(text, decimal, value):
    parsed = parse_value(text, decimal)
    assert parsed.status == "ok" and parsed.value == pytest.approx(value)


@pytest.mark.parametrize(
    ("text", "decimal"),
    [
        ("9 931 690 10 115 966", None),  # two PDF columns run together
        ("9 931 690 10 115 966", "."),
        ("212, 213", None),  # a list of codes
        ("97,98", "."),  # footnote references in a table of decimal points, not 97.98
        ("12 34", None),
        ("1.2.3", None),
        ("3.25", ","),  # a decimal point in a table of decimal commas: which is it?
    ],
)
def test_digits_that_are_not_one_number_are_never_a_guess(text, decimal):
    parsed = parse_value(text, decimal)
    assert parsed.value is None and parsed.status == "unreadable"


@pytest.mark.parametrize(
    ("text", "status"),
    [(".", "missing"), ("--", "missing"), ("---", "missing"), ("#", "confidential"), ("nd", "missing"),
     ("n.d.", "missing"), ("/", "confidential"), ("[c]", "confidential"), ("[x]", "missing"),
     ("[z]", "not_applicable"), ("k.A.", "missing"), ("31.12.1970", "text")],
)
def test_more_markers_of_statistics_offices(text, status):
    parsed = parse_value(text)
    assert parsed.value is None and parsed.status == status


def test_nil_is_zero_with_its_own_status():
    assert parse_value("nil") == parse_value(" Nil ")
    parsed = parse_value("nil")
    assert parsed.value == 0.0 and parsed.status == "nil" and "nil" in VALUE_STATUSES
