"""Detection output of a few real files against what it was before detection was made faster.

Recorded with the detector before its hot paths were vectorised (issue 12, speed); any change to these
outputs must be one meant to change results, and then these expectations are recorded anew. Recorded anew
for issue 20: observations carry a unit, identifier columns (row numbers "NR.", "Collection Month" in an
index of series) label rows instead of being values, so some tables hold fewer observations. Per table:
sheet, cell range, runs of line classes (a letter per class), number of observations, digest of them.
Recorded anew when the learned region model became the default (issue 20): a table's range is its header
block and body, its titles and notes outside (their line classes too); the observations of every table are
the rules' ones (same digests) but for messytables' budget, whose two title lines ("Kengetallen clusters
provincies", "bedragen in Euro's ...") were header lines prefixed to every column path and are now its title,
which also ends its range at the last column of figures (N, not the title's "inwoners" in T).
"""

import hashlib
import itertools
import json
from pathlib import Path

import pytest

from airflow_sbcrawl.tables import detect_file

REAL = Path(__file__).parent / "data" / "tables_real"
LETTER = {"metadata": "m", "header": "h", "group": "g", "data": "d", "derived": "s", "notes": "n", "empty": "."}

EXPECTED = {
    'abs-6302002.xls': [
        ('Index', 'A11:L21', 'h1 .1 d1 s2 d1 s2 d1 s2', 45, '0938ce5cc9dea1b9'),
        ('Data1', 'A1:J113', 'h10 d103', 927, '2e85dc5c73bac69a'),
    ],
    'bfs-Weinverbrauch.xlsx': [
        ('T7.6.3', 'A4:J108', 'h2 .1 h2 .1 h1 .3' + ' s1 d2 .1' * 8 + ' d3 .1' * 15 + ' d3', 648, '0633f0ce081815ad'),
    ],
    'messytables-begrotingsanalyse-2011.csv': [
        ('messytables-begrotingsanalyse-2011.csv', 'A4:N43', 'h4 d6 g1 d24 g1 d1 g1 d2', 324, '49abdb3a99e77162'),
    ],
    'readxl-deaths.xlsx': [
        ('arts', 'A5:F15', 'h1 d10', 40, 'bdfc5bacf5b8f0ee'),
        ('other', 'A5:F15', 'h1 d10', 40, 'a8da08c0be159388'),
    ],
    'tidyxl-titanic.xlsx': [
        ('Sheet1', 'A1:G11', 'h3 d8', 32, 'e6d569fa006d5c9a'),
    ],
}


def _runs(classes: list[str]) -> str:
    """Line classes as runs of letters: "h3 d8" for three header lines and eight data lines."""
    return " ".join(f"{LETTER[c]}{len(list(run))}" for c, run in itertools.groupby(classes))


def _digest(observations) -> str:
    return hashlib.sha256(json.dumps([list(o) for o in observations]).encode()).hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_detection_output_is_unchanged(name):
    result = detect_file(REAL / name)
    got = [
        (t.provenance.sheet, t.cell_range, _runs(t.line_classes), len(t.observations),
         _digest(t.observations))
        for t in result.tables
    ]
    assert got == EXPECTED[name]


def test_the_digest_sees_one_changed_value():
    table = detect_file(REAL / "tidyxl-titanic.xlsx").tables[0]
    changed = [table.observations[0]._replace(value=(table.observations[0].value or 0) + 1), *table.observations[1:]]
    assert _digest(table.observations) == EXPECTED["tidyxl-titanic.xlsx"][0][4] != _digest(changed)
