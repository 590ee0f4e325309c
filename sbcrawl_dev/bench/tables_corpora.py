"""Annotated sheets for developing table regions, brought from public repositories into a cache.

    python -m sbcrawl_dev bench tables-corpora fetch [--cache DIR] [--mirror DIR]
    python -m sbcrawl_dev bench tables-corpora list
    python -m sbcrawl_dev bench tables-corpora show CORPUS [ID-PART] [--rows A:B]
    python -m sbcrawl_dev bench tables-corpora view owner/name@commit:path[!member] [SHEET] [--rows A:B]

``fetch`` reads every source below (a git mirror of its repository at the pinned commit, else a clone into
the cache), converts it to one format and writes ``<cache>/<corpus>.jl.gz``; nothing of it enters the
repository. ``show`` prints a sheet with row numbers and column letters, the view used to annotate.

One sheet per JSON line::

    {"corpus": "fuste", "id": "file.xlsx_Sheet1.csv", "org": "", "group": "census", "rows": [["", "..."], ...],
     "tables": [{"range": [first_row, last_row, first_col, last_col], "header": [first, last] | null}],
     "lines": ["metadata", "header", "data", ..., "empty"] | null}

``group`` puts together the sheets that are not independent of each other (FUSTE's template, SAUS's and
the real files' file): cross-validation folds never part them. ``range`` is the table proper, its header
block and body (0-based, inclusive); titles, units, sources and notes lie outside it. ``header`` is the
rows of its header block (null: no header). ``lines`` is a class per row where the source annotates one
(SAUS, FUSTE), in ``model.LINE_CLASSES``.

Corpora:

- ``saus``: the SAUS sheets of Strudel (``shared/data/tables/saus.jl.gz``), line-annotated, one table each.
- ``fuste``: FUSTE of the Mondrian repository: real spreadsheets (CSV) with table regions and their
  Header/Data/GroupHead/Derived elements, titles and notes as regions of their own.
- ``deco``: DECO of the same repository; its element annotations are not in the stored copy (the blob is
  absent, the file is over the snapshot's size limit), so it is reported unavailable.
- ``real``: statistics offices' files annotated by reading them (``tables_regions.json`` next to this
  module: repository, commit and path of each file, and per sheet its tables' ranges and header rows),
  with the files of ``tests/data/tables_real``.
- ``fresh``: real statistics files annotated the same way (``tables_regions_fresh.json``) for evaluation
  only (issue 20): scored by ``bench tables --regions``, never trained or tuned on (``EVAL_ONLY``:
  ``available`` leaves it out unless asked for evaluation, so every fit over "the cached corpora" skips it).

The other corpus of Strudel's repository, Troy_200 (``data/troy.jl.gz``), is an evaluation set kept out of
development: it is never fetched here.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

MONDRIAN = ("HPI-Information-Systems/Mondrian", "e7a4d62aefb1eef68af77dfbb00a8cd3e5d0ab60")
ANNOTATIONS = Path(__file__).with_name("tables_regions.json")
FRESH_ANNOTATIONS = Path(__file__).with_name("tables_regions_fresh.json")
REPO_ROOT = Path(__file__).resolve().parents[2]
CORPORA = ("saus", "fuste", "deco", "real", "fresh")
#: Corpora kept for an honest measure on files nobody tuned on: scored, never fitted on
EVAL_ONLY = frozenset({"fresh"})
CACHE_ENV = "SBCRAWL_TABLES_CACHE"
MIRROR_ENV = "SBCRAWL_MIRROR"

Region = tuple[int, int, int, int]


def default_cache() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "sbcrawl-tables")


def default_mirror() -> Path:
    return Path(os.environ.get(MIRROR_ENV) or "/work/.mirror")


# -- repositories -------------------------------------------------------------------------------------


class Repos:
    """Files of public repositories at pinned commits: from a local mirror (``<mirror>/owner+name/repo``, a
    bare git directory or a clone) when there is one, else from a bare clone made in the cache."""

    def __init__(self, mirror: Path, cache: Path) -> None:
        self.mirror = mirror
        self.cache = cache
        self._dirs: dict[str, Path] = {}

    def git_dir(self, repo: str) -> Path:
        if repo in self._dirs:
            return self._dirs[repo]
        key = repo.replace("/", "+")
        for base in (self.mirror / key / "repo", self.cache / "repos" / key):
            for candidate in (base / ".git", base):
                if (candidate / "objects").is_dir():
                    self._dirs[repo] = candidate
                    return candidate
        target = self.cache / "repos" / key
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "--bare", "--quiet", f"https://github.com/{repo}", str(target)], check=True)
        self._dirs[repo] = target
        return target

    def read(self, repo: str, commit: str, path: str) -> bytes:
        """The file's bytes at the commit; ``LookupError`` when it is not there (or its blob is absent)."""
        git = self.git_dir(repo)
        done = subprocess.run(["git", "--git-dir", str(git), "show", f"{commit}:{path}"], capture_output=True)
        if done.returncode != 0:
            raise LookupError(f"{repo}@{commit[:10]}:{path}: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout

    def listing(self, repo: str, commit: str, folder: str) -> list[str]:
        git = self.git_dir(repo)
        out = subprocess.run(["git", "--git-dir", str(git), "ls-tree", "--name-only", f"{commit}:{folder}"],
                             capture_output=True, check=True)
        return out.stdout.decode().splitlines()


# -- conversions ----------------------------------------------------------------------------------------


def parse_csv(data: bytes) -> list[list[str]]:
    """A CSV of the Mondrian corpora as a rectangular grid (its annotations index these rows and columns)."""
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    rows = [list(r) for r in csv.reader(io.StringIO(text, newline=""))]
    width = max(map(len, rows), default=0)
    return [r + [""] * (width - len(r)) for r in rows]


_FUSTE_LINE = {"MetaTitle": "metadata", "Notes": "notes", "Header": "header", "GroupHead": "group",
               "Derived": "derived", "Data": "data"}
# Where one line holds elements of several kinds, the one that says most about the line wins
_PRIORITY = ("header", "metadata", "notes", "group", "derived", "data")


def _box(element: dict) -> Region:
    (c0, r0), (c1, r1) = element["top_lx"], element["bot_rx"]
    return (min(r0, r1), max(r0, r1), min(c0, c1), max(c0, c1))


def mondrian_sheet(name: str, rows: list[list[str]], annotation: dict, corpus: str) -> dict:
    """One sheet of FUSTE/DECO in the common format.

    A ``Table`` region is a table; its header rows are the rows of its ``Header`` elements above its first
    ``Data`` row (a Header element beside the data is a stub, not a header line). Line classes come from
    the elements and from the title and notes regions; a line outside every region is ``empty`` when it
    is blank, else ``notes`` below a table and ``metadata`` above one.
    """
    tables = []
    line_sets: list[set[str]] = [set() for _ in rows]
    for region in annotation.get("regions", []):
        kind = region.get("region_type")
        box = _box(region)
        elements = region.get("elements") or [{"type": kind, "top_lx": region["top_lx"], "bot_rx": region["bot_rx"]}]
        for el in elements:
            cls = _FUSTE_LINE.get(el.get("type"))
            if cls is None:
                continue
            r0, r1, _, _ = _box(el)
            for i in range(max(r0, 0), min(r1, len(rows) - 1) + 1):
                line_sets[i].add(cls)
        if kind != "Table":
            continue
        data_rows = [_box(e)[0] for e in elements if e.get("type") in ("Data", "Derived", "GroupHead")]
        first_data = min(data_rows, default=box[1] + 1)
        header_rows = sorted({i for e in elements if e.get("type") == "Header"
                              for i in range(_box(e)[0], _box(e)[1] + 1) if i < first_data})
        header = [header_rows[0], header_rows[-1]] if header_rows else None
        tables.append({"range": list(box), "header": header})
    lines = []
    for i, found in enumerate(line_sets):
        if not any(c.strip() for c in rows[i]):
            lines.append("empty")
        elif found:
            lines.append(next(c for c in _PRIORITY if c in found))
        else:
            lines.append("")
    _fill_outside(lines, tables)
    tables.sort(key=lambda t: (t["range"][0], t["range"][2]))
    return {"corpus": corpus, "id": name, "org": "", "group": name, "rows": rows, "tables": tables, "lines": lines}


def _fill_outside(lines: list[str], tables: list[dict]) -> None:
    """Non-blank lines outside the annotated regions: metadata above the first table, notes after a table."""
    first = min((t["range"][0] for t in tables), default=len(lines))
    for i, cls in enumerate(lines):
        if cls == "":
            lines[i] = "metadata" if i < first else "notes"


def read_mondrian(repos: Repos, corpus: str) -> tuple[list[dict], str]:
    """FUSTE or DECO sheets, and "" or why the corpus is not available."""
    repo, commit = MONDRIAN
    folder = f"res/{corpus}"
    try:
        annotations = json.loads(repos.read(repo, commit, f"{folder}/annotations/annotations_elements.json"))
    except LookupError as exc:
        return [], f"annotations_elements.json not available ({exc})"
    try:  # sheets made from one template (FUSTE: 383 triathlon results, 170 census fact sheets) share a group
        templates = json.loads(repos.read(repo, commit, f"{folder}/annotations/annotations_templates.json"))
    except LookupError:
        templates = {}
    template_of = {f: k for k, files in templates.items() for f in files}
    sheets = []
    missing = 0
    for name in sorted(annotations):
        try:
            rows = parse_csv(repos.read(repo, commit, f"{folder}/csv/{name}"))
        except LookupError:
            missing += 1
            continue
        sheet = mondrian_sheet(name, rows, annotations[name], corpus)
        sheet["group"] = template_of.get(name, name)
        sheets.append(sheet)
    return sheets, (f"{missing} annotated files without their CSV" if missing else "")


def saus_sheets(path: Path) -> list[dict]:
    """The SAUS sheets: one table each, from the first header or body line to the last body line; its
    columns those of the cells of those lines."""
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            s = json.loads(line)
            rows = [[("" if c is None else str(c)) for c in r] for r in s["table_array"]]
            width = max(map(len, rows), default=0)
            rows = [r + [""] * (width - len(r)) for r in rows]
            lines = list(s["line_annotation"])
            out.append({"corpus": "saus", "id": f"{s.get('file_name', '')}#{s.get('table_id', '')}", "org": "US Census",
                        "group": str(s.get("file_name", "")), "rows": rows, "tables": tables_from_lines(rows, lines),
                        "lines": lines})
    return out


def tables_from_lines(rows: list[list[str]], lines: list[str]) -> list[dict]:
    """The table of a one-table sheet annotated line by line: header lines and body (data, group, derived)."""
    inside = [i for i, c in enumerate(lines) if c in ("header", "data", "group", "derived")]
    body = [i for i, c in enumerate(lines) if c in ("data", "derived")]
    if not body:
        return []
    a, b = inside[0], body[-1]
    cols = [j for i in range(a, b + 1) if lines[i] != "empty" for j, c in enumerate(rows[i]) if c.strip()]
    header = [i for i in range(a, b + 1) if lines[i] == "header" and i < body[0]]
    return [{"range": [a, b, min(cols), max(cols)], "header": [header[0], header[-1]] if header else None}]


# -- the annotated real files ---------------------------------------------------------------------------

_A1 = re.compile(r"^([A-Z]{1,3})(\d+)$")


def a1(ref: str) -> tuple[int, int]:
    """"B7" -> (row 6, column 1), 0-based."""
    m = _A1.match(ref.strip().upper())
    if not m:
        raise ValueError(f"not a cell reference: {ref!r}")
    col = 0
    for ch in m.group(1):
        col = col * 26 + ord(ch) - 64
    return int(m.group(2)) - 1, col - 1


def parse_range(text: str) -> Region:
    """"B7:K40" -> (6, 39, 1, 10)."""
    first, _, last = text.partition(":")
    (r0, c0), (r1, c1) = a1(first), a1(last or first)
    return (min(r0, r1), max(r0, r1), min(c0, c1), max(c0, c1))


def annotated_tables(spec: list) -> list[dict]:
    """A sheet's tables from the annotation: ``{"range": "B7:K40", "header": 2}`` (header: how many of the
    range's first rows are its header block; 0 for none)."""
    tables = []
    for t in spec:
        r0, r1, c0, c1 = parse_range(t["range"])
        n = int(t.get("header", 1))
        tables.append({"range": [r0, r1, c0, c1], "header": [r0, r0 + n - 1] if n else None})
    return tables


def load_annotations(path: Path = ANNOTATIONS) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["files"]


def file_bytes(entry: dict, repos: Repos) -> bytes:
    if "local" in entry:
        return (REPO_ROOT / entry["local"]).read_bytes()
    return repos.read(entry["repo"], entry["commit"], entry["path"])


def file_sheets(data: bytes, name: str, member: str = "") -> dict[str, list[list[str]]]:
    """The sheets of a file as the project's readers give them (``member`` picks one file of a ZIP)."""
    from airflow_sbcrawl.tables.readers import read_bytes

    result = read_bytes(data, name=name)
    return {s.name: s.rows for s in result.sheets if not member or s.member == member}


def real_sheets(repos: Repos, path: Path = ANNOTATIONS, corpus: str = "real") -> tuple[list[dict], list[str]]:
    """The annotated real files' sheets (of ``path``, named ``corpus``), and what could not be read."""
    out, problems = [], []
    for entry in load_annotations(path):
        label = entry.get("local") or f"{entry['repo']}:{entry['path']}"
        try:
            data = file_bytes(entry, repos)
        except (LookupError, OSError, subprocess.CalledProcessError) as exc:
            problems.append(f"{label}: {exc}")
            continue
        if entry.get("member"):
            import zipfile

            data = zipfile.ZipFile(io.BytesIO(data)).read(entry["member"])
        name = (entry.get("member") or entry.get("local") or entry["path"]).rsplit("/", 1)[-1]
        sheets = file_sheets(data, name)
        for sheet, spec in entry["sheets"].items():
            rows = sheets.get(sheet)
            if rows is None:
                problems.append(f"{label}: no sheet {sheet!r} (sheets: {sorted(sheets)[:8]})")
                continue
            out.append({"corpus": corpus, "id": f"{name}#{sheet}", "org": entry.get("org", ""), "group": label,
                        "rows": rows, "tables": annotated_tables(spec), "lines": None})
    return out, problems


# -- the cache ------------------------------------------------------------------------------------------


def write_corpus(cache: Path, corpus: str, sheets: list[dict]) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{corpus}.jl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for s in sheets:
            fh.write(json.dumps(s, ensure_ascii=False) + "\n")
    return path


def load_corpus(corpus: str, cache: Path | None = None) -> list[dict]:
    """The cached sheets of one corpus; ``FileNotFoundError`` when it was not fetched."""
    path = (cache or default_cache()) / f"{corpus}.jl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


ENV_VAR = "SBCRAWL_TABLES_DATA"


def default_data_path() -> Path:
    """The SAUS sheets with their line classes: ``$SBCRAWL_TABLES_DATA``, else the shared data folder."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    # next to the repository, or next to a folder holding it (a git worktree under wt/)
    candidates = [base / "shared" / "data" / "tables" / "saus.jl.gz" for base in repo.parents[:2]]
    return next((c for c in candidates if c.exists()), candidates[0])


def available(cache: Path | None = None, evaluation: bool = False) -> list[str]:
    """The corpora in the cache a model may learn from, in ``CORPORA`` order; with ``evaluation``, the
    evaluation-only ones (``EVAL_ONLY``) too. Leaving them out by default keeps them out of any fit that
    takes "every cached corpus", scripts included; only scoring asks for them."""
    base = cache or default_cache()
    return [c for c in CORPORA if (base / f"{c}.jl.gz").is_file() and (evaluation or c not in EVAL_ONLY)]


def fetch(cache: Path, mirror: Path, out=sys.stdout, only: frozenset[str] | None = None) -> dict[str, int]:
    """Build every corpus (or those in ``only``) into the cache; returns the sheets written per corpus."""
    repos = Repos(mirror, cache)
    counts = {}
    wanted = only or frozenset(CORPORA)
    saus = default_data_path()
    if "saus" in wanted and saus.is_file():
        counts["saus"] = len(sheets := saus_sheets(saus))
        print(f"saus: {counts['saus']} sheets -> {write_corpus(cache, 'saus', sheets)}", file=out)
    elif "saus" in wanted:
        print(f"saus: not found at {saus} (set SBCRAWL_TABLES_DATA)", file=out)
    for corpus in ("fuste", "deco"):
        if corpus not in wanted:
            continue
        sheets, why = read_mondrian(repos, corpus)
        if sheets:
            counts[corpus] = len(sheets)
            print(f"{corpus}: {len(sheets)} sheets -> {write_corpus(cache, corpus, sheets)}", file=out)
        if why:
            print(f"{corpus}: {'unavailable: ' if not sheets else ''}{why}", file=out)
    for corpus, path in (("real", ANNOTATIONS), ("fresh", FRESH_ANNOTATIONS)):
        if corpus not in wanted:
            continue
        sheets, problems = real_sheets(repos, path, corpus)
        counts[corpus] = len(sheets)
        orgs = sorted({s["org"] for s in sheets})
        print(f"{corpus}: {len(sheets)} sheets from {len(orgs)} organisations -> "
              f"{write_corpus(cache, corpus, sheets)}", file=out)
        for p in problems:
            print(f"  - {p}", file=out)
    return counts


def column_name(j: int) -> str:
    from airflow_sbcrawl.tables.model import column_letter

    return column_letter(j)


def show(sheet: dict, rows: tuple[int, int] | None = None, width: int = 18, out=sys.stdout) -> None:
    """Print a sheet as annotators read it: 1-based row numbers, column letters, cells cut to ``width``."""
    grid = sheet["rows"]
    used = [j for j in range(max(map(len, grid), default=0)) if any(j < len(r) and r[j].strip() for r in grid)]
    a, b = rows or (0, len(grid) - 1)
    print(f"{sheet['id']}  ({len(grid)} rows; tables {[t['range'] for t in sheet['tables']]})", file=out)
    print("      " + "|".join(f"{column_name(j):<{width}}" for j in used), file=out)
    for i in range(a, min(b, len(grid) - 1) + 1):
        r = grid[i]
        if not any(c.strip() for c in r):
            print(f"{i + 1:5d}", file=out)
            continue
        cls = (sheet.get("lines") or [""] * len(grid))[i][:4]
        cells = "|".join(f"{(r[j] if j < len(r) else '').strip()[:width]:<{width}}" for j in used)
        print(f"{i + 1:5d}{cls:>1} {cells}".rstrip(), file=out)


def view_sheets(source: str, repos: Repos) -> list[dict]:
    """The sheets of a file not yet annotated: ``owner/name@commit:path[!zip member]`` or a local path."""
    source, _, member = source.partition("!")
    if "@" in source and ":" in source:
        repo, _, rest = source.partition("@")
        commit, _, path = rest.partition(":")
        data = repos.read(repo, commit, path)
    else:
        path = source
        data = Path(source).read_bytes()
    if member:
        import zipfile

        data = zipfile.ZipFile(io.BytesIO(data)).read(member)
    name = (member or path).rsplit("/", 1)[-1]
    return [{"id": sheet, "rows": rows, "tables": [], "lines": None} for sheet, rows in file_sheets(data, name).items()]


def _iter_matching(sheets: list[dict], part: str) -> Iterator[dict]:
    return (s for s in sheets if part in s["id"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sbcrawl_dev bench tables-corpora",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("fetch", "list", "show", "view"))
    parser.add_argument("corpus", nargs="?", help="show: the corpus; view: owner/name@commit:path[!member] or a file")
    parser.add_argument("part", nargs="?", default="", help="show: part of the sheets' ids; view: the sheet")
    parser.add_argument("--only", default="", help="fetch: comma-separated corpora to build (default: all)")
    parser.add_argument("--rows", help="show: 1-based rows A:B")
    parser.add_argument("--width", type=int, default=18, help="show: characters per cell")
    parser.add_argument("--cache", type=Path, default=None, help=f"default ${CACHE_ENV} or ~/.cache/sbcrawl-tables")
    parser.add_argument("--mirror", type=Path, default=None,
                        help=f"git mirrors as <dir>/owner+name/repo (default ${MIRROR_ENV} or /work/.mirror)")
    args = parser.parse_args(argv)
    cache = args.cache or default_cache()
    if args.action == "fetch":
        only = frozenset(c for c in args.only.split(",") if c)
        unknown = sorted(only - set(CORPORA))
        if unknown:
            parser.error(f"unknown corpora {unknown} (known: {', '.join(CORPORA)})")
        fetch(cache, args.mirror or default_mirror(), only=only or None)
        return 0
    if args.action == "list":
        for corpus in available(cache, evaluation=True):
            sheets = load_corpus(corpus, cache)
            tables = sum(len(s["tables"]) for s in sheets)
            print(f"{corpus:<6} {len(sheets):5d} sheets {tables:5d} tables")
        return 0
    if not args.corpus:
        parser.error(f"{args.action} needs a corpus or a file")
    rows = None
    if args.rows:
        a, _, b = args.rows.partition(":")
        rows = (int(a) - 1, int(b or a) - 1)
    if args.action == "view":
        for sheet in view_sheets(args.corpus, Repos(args.mirror or default_mirror(), cache)):
            if args.part in ("", sheet["id"]):
                show(sheet, rows, args.width)
        return 0
    for sheet in _iter_matching(load_corpus(args.corpus, cache), args.part):
        show(sheet, rows, args.width)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
