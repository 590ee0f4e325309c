"""A header whose last line numbers the columns (Destatis' weekly deaths: "Nr. | | unter … Jahren | 1 | 2 …
53", calendar weeks) under a line naming the column groups, with the sheet's titles repeated over each
printed page's width above it (issue 20: these sheets lost every column path when learned regions became
the default, c503115)."""

from airflow_sbcrawl.tables.detect import classify_and_detect
from airflow_sbcrawl.tables.model import Provenance

WEEKS = 20
PAGE = 8  # the titles are repeated every PAGE columns, as when the sheet is printed page by page
AGES = ["Insgesamt", "0-30", "30-35", "35-40", "40-45", "45-50", "50-55", "55-60", "60-65", "65 u. mehr"]


def _weekly_deaths() -> list[list[str]]:
    width = 3 + WEEKS

    def repeated(text: str) -> list[str]:
        return ["" if j < 3 or (j - 3) % PAGE else text for j in range(width)]

    rows = [["Stand: 24.10.2022", *[""] * (width - 1)], [""] * width,
            repeated("Sterbefälle nach Kalenderwochen und Altersgruppen 2016 bis 2022 in Deutschland"),
            repeated("Ergebnisse für das Jahr 2022 aus Rohdaten"), repeated("Männlich"), [""] * width,
            ["Lfd.", "Jahr", "Alter von ... bis", *repeated("Kalenderwoche")[3:]],
            ["Nr.", "", "unter … Jahren", *[str(w) for w in range(1, WEEKS + 1)]]]
    n = 0
    for year in (2022, 2021, 2020):
        for k, age in enumerate(AGES):
            n += 1
            base = 9000 if k == 0 else 40 * k + year % 7
            rows.append([str(n), str(year), age, *[str(base + (w * 37 + n * 11) % 97) for w in range(WEEKS)]])
    return rows


def test_a_line_numbering_the_columns_stays_in_the_header_and_the_titles_above_are_metadata():
    rows = _weekly_deaths()
    classes, tables = classify_and_detect(rows, Provenance("weekly-deaths.xlsx", "0"))
    assert len(tables) == 1
    assert classes[6:8] == ["header", "header"]
    assert set(classes[2:5]) == {"metadata"}  # the titles, not a header naming every column
    obs = list(tables[0].observations)
    assert len(obs) == 3 * len(AGES) * WEEKS  # every week a value, none taken for a label
    keys = {(o.row_labels, o.column_path) for o in obs}
    assert len(keys) == len(obs)
    first = next(o for o in obs if o.col == 3)
    assert first.row_labels == ("1", "2022", "Insgesamt")
    assert first.column_path[-1] == "1" and "Kalenderwoche" in first.column_path
