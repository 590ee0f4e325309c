"""Real statistics files from public GitHub repositories, fetched into a cache outside the repository.

    python -m sbcrawl_dev bench tables-observations --fetch [--mirror DIR] [--cache DIR]

The files are named here by repository, commit and path and never committed (their offices' terms allow
reading, not always redistributing). Each is taken from a local git mirror when one is given (``--mirror``:
a folder of ``owner+name/repo`` git directories, as the development machine keeps them), else from
raw.githubusercontent.com; its size is checked against the manifest. The cache defaults to
``~/.cache/sbcrawl-tables-real`` (``$SBCRAWL_TABLES_REAL_CACHE``).
"""

from __future__ import annotations

import os
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path

CACHE_ENV = "SBCRAWL_TABLES_REAL_CACHE"


@dataclass(frozen=True)
class Source:
    """One real file: which office published it, and where it is kept on GitHub."""

    corpus: str  # the publishing office, so that figures come per office
    repo: str  # owner/name
    commit: str
    path: str
    size: int

    @property
    def name(self) -> str:
        """The cached file's name: the office, then the file's own name."""
        return f"{self.corpus}-{self.path.rsplit('/', 1)[-1]}"

    @property
    def url(self) -> str:
        """Where the file can be downloaded without a git mirror."""
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{urllib.request.quote(self.path)}"


_DATABAKER = "sensiblecodeio/databaker"
_SMUNGS = "nacnudus/smungs"
_DESTATIS = "Byggvir/DESTATIS"

#: The fetched corpus: ONS (UK), Destatis (DE), Statistics Canada, UN Statistics Division, ABS (AU), FBI and
#: CDC (US) files, as their offices published them
MANIFEST: tuple[Source, ...] = (
    Source("ons", _DATABAKER, "0559642a4b25a1cd843bcf41d6526b046fffde94", "databaker/tutorial/ott.xls", 193536),
    Source("ons", _DATABAKER, "1ec6fca4042a0698f1aa21428764ba0f8b428486",
           "features/fixtures/2018internationaltradeinservicesdatatables.xls", 1190912),
    Source("ons", _DATABAKER, "e41360b4a0f1d2e9133d964141a32fa14cbcb53a",
           "features/fixtures/balanceofpayments2020q1.xls", 219648),
    Source("ons", _DATABAKER, "1ec6fca4042a0698f1aa21428764ba0f8b428486",
           "features/fixtures/bulletindataset2v2.xls", 1189888),
    Source("ons", _DATABAKER, "9703f11581e864fc7a729401041eccd5b3b0137c", "resource/ashe_prov_2014.xls", 1328128),
    Source("ons", _DATABAKER, "9703f11581e864fc7a729401041eccd5b3b0137c", "resource/ashe_rev_cv_2013.xls", 493568),
    Source("ons", _DATABAKER, "498df2bfc2e2581f389bfaca0f8f617913e7354e", "resource/table-a02.xls", 1177600),
    Source("destatis", _DESTATIS, "5dc1fbc91ac8b63930d3fe7f81102a1efeb8bb06", "data/23211-0002.csv", 2714),
    Source("destatis", _DESTATIS, "fc44f02ee7640b942653b7aff3292976adfba78c", "data/12411-0006.csv", 205101),
    Source("destatis", _DESTATIS, "911967731e6a7f3276d8654c1cda91a5f250e825", "data/12613-0004.csv", 117118),
    Source("destatis", _DESTATIS, "911967731e6a7f3276d8654c1cda91a5f250e825", "data/12612-0002.csv", 26641),
    Source("destatis", _DESTATIS, "4fe2af013c934fa330edaf59c031f350b63e1658",
           "Periodensterbetafeln/tafel-18-20.xlsx", 174369),
    Source("destatis", _DESTATIS, "9821c7082bab3b50f3dbde5f53a3dd572d8c570d",
           "data/sonderauswertung-sterbefaelle.xlsx", 1156352),
    Source("statcan", "CarrieJLiu/project-test", "04e215f11ae4ddb928a9eb167f58f2d9cf2d2185", "32100358.csv", 934995),
    Source("un", "egunadi/dsci554-a3", "00d129fe2e3f76bb6a0c31d91b3a05008df8a6c7",
           "data/SYB65_1_202209_Population, Surface Area and Density.csv", 2289497),
    Source("abs", _SMUNGS, "e8fe36615cf004c44fbdd469526e0e2aba98b42b", "inst/extdata/ozmarriage.xlsx", 116593),
    Source("fbi", _SMUNGS, "e93ef3ab84409e085936812e4b87afdc6de9b8db", "inst/extdata/us-crime-2.xlsx", 35799),
    Source("fbi", _SMUNGS, "e93ef3ab84409e085936812e4b87afdc6de9b8db", "inst/extdata/us-crime-3.xlsx", 44688),
    Source("cdc", _SMUNGS, "a90fddac8880695ac2d5630db515d47d25be0b33", "inst/extdata/vaccinations.xlsx", 81339),
)


def default_cache() -> Path:
    """Where fetched files are kept: ``$SBCRAWL_TABLES_REAL_CACHE`` or ``~/.cache/sbcrawl-tables-real``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "sbcrawl-tables-real"


def _from_mirror(source: Source, mirror: Path) -> bytes | None:
    base = mirror / source.repo.replace("/", "+") / "repo"
    git_dir = base / ".git" if (base / ".git").is_dir() else base
    if not git_dir.is_dir():
        return None
    done = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{source.commit}:{source.path}"],
                          capture_output=True, check=False)
    return done.stdout if done.returncode == 0 else None


def _download(source: Source) -> bytes:
    with urllib.request.urlopen(source.url, timeout=60) as resp:
        return resp.read(source.size + 1)


def fetch(cache: Path | None = None, mirror: Path | None = None, log=print) -> list[Path]:
    """Bring every file of the manifest into ``cache`` (those already there with the right size are kept);
    returns the paths present afterwards. A file that cannot be had is reported and skipped."""
    cache = cache or default_cache()
    cache.mkdir(parents=True, exist_ok=True)
    present = []
    for source in MANIFEST:
        target = cache / source.name
        if target.is_file() and target.stat().st_size == source.size:
            present.append(target)
            continue
        data = _from_mirror(source, mirror) if mirror else None
        if data is None:
            try:
                data = _download(source)
            except OSError as exc:
                log(f"  {source.name}: not fetched ({exc})")
                continue
        if len(data) != source.size:
            log(f"  {source.name}: {len(data)} bytes, expected {source.size}: not kept")
            continue
        tmp = target.with_suffix(target.suffix + ".part")
        tmp.write_bytes(data)
        tmp.replace(target)
        present.append(target)
    return present


def cached(cache: Path | None = None) -> dict[str, list[Path]]:
    """The manifest's files present in ``cache``, by corpus (office)."""
    cache = cache or default_cache()
    out: dict[str, list[Path]] = {}
    for source in MANIFEST:
        path = cache / source.name
        if path.is_file():
            out.setdefault(source.corpus, []).append(path)
    return out
