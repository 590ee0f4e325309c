"""The project's own replayed real sites (``replay_sites.json``) beside the shared harness's, in two groups.

The shared replay harness (``replay/`` of the evaluation folder) knows the sites of its own ``sites.json``.
The project adds more in ``replay_sites.json``, in the same format plus a ``group`` ("dev" or "held-out")
and ``notes``. The harness's code is called, never copied: :func:`register` points its ``replaysite.load``
and ``extract.load_sites`` at both files, so its ``evaluate_replay.py`` and ``extract.py`` work on the
project's sites as on its own.

Groups: ``dev`` is every harness site plus the project's development sites (policy work may trace and tune
against them); ``held-out`` is only measured, at the end of a piece of work, never traced or tuned against.

``python -m sbcrawl_dev bench replay-extract --site NAME|GROUP --mirror-root ROOT`` writes a site's pinned
git trees into the replay data folder (the harness's ``extract.py`` run on the merged site list).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType

from sbcrawl_dev.bench.harness import default_eval_dir

#: The project's sites, beside this module.
SITES_JSON = Path(__file__).with_name("replay_sites.json")
GROUPS = ("dev", "held-out")


class SiteListError(ValueError):
    """A site list that cannot be used: an unknown name or group, a name taken twice, a bad group."""


def harness_modules(eval_dir: Path) -> tuple[ModuleType, ModuleType]:
    """The harness's ``replaysite`` and ``extract`` modules, imported from ``eval_dir/replay``."""
    replay_dir = str(Path(eval_dir) / "replay")
    if replay_dir not in sys.path:
        sys.path.insert(0, replay_dir)
    return importlib.import_module("replaysite"), importlib.import_module("extract")


def _load_sites(extract: ModuleType):
    """The harness's own ``extract.load_sites``, also once :func:`register` has wrapped it."""
    return getattr(extract.load_sites, "harness_load", extract.load_sites)


def harness_sites(eval_dir: Path) -> dict[str, dict]:
    """The harness's own sites (its ``sites.json``), read by its ``extract.load_sites``."""
    return _load_sites(harness_modules(eval_dir)[1])()


def project_sites(eval_dir: Path, sites_json: Path = SITES_JSON) -> dict[str, dict]:
    """The project's sites, read by the harness's ``extract.load_sites``; each must name a known group and
    no harness site's name."""
    load_sites = _load_sites(harness_modules(eval_dir)[1])
    ours = load_sites(str(sites_json))
    taken = set(load_sites())
    for name, spec in ours.items():
        if name in taken:
            raise SiteListError(f"{sites_json}: site {name!r} is already one of the harness's sites")
        if spec.get("group") not in GROUPS:
            raise SiteListError(f"{sites_json}: site {name!r} has group {spec.get('group')!r}, "
                                f"not one of {', '.join(GROUPS)}")
        if not spec.get("start_url") or not spec.get("mounts"):
            raise SiteListError(f"{sites_json}: site {name!r} lacks a start_url or mounts")
    return ours


def groups(eval_dir: Path, sites_json: Path = SITES_JSON) -> dict[str, list[str]]:
    """Group name -> site names: the harness's sites are development sites."""
    out: dict[str, list[str]] = {"dev": list(harness_sites(eval_dir)), "held-out": []}
    for name, spec in project_sites(eval_dir, sites_json).items():
        out[spec["group"]].append(name)
    return out


def select(spec: str, eval_dir: Path, sites_json: Path = SITES_JSON) -> list[str]:
    """Site names for a comma-separated list of names and groups ('dev', 'held-out', 'all'), in order,
    each once; an unknown name is an error."""
    by_group = groups(eval_dir, sites_json)
    by_group["all"] = by_group["dev"] + by_group["held-out"]
    known = set(by_group["all"])
    names: list[str] = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        if item not in by_group and item not in known:
            raise SiteListError(f"unknown replay site or group {item!r} (groups: dev, held-out, all; "
                                f"sites: {', '.join(sorted(known))})")
        names += by_group.get(item, [item])
    return list(dict.fromkeys(names))


def register(replaysite: ModuleType, extract: ModuleType, sites_json: Path = SITES_JSON) -> None:
    """Make the harness's ``replaysite.load`` and ``extract.load_sites`` know the sites of ``sites_json`` too.
    A site name of the harness's own file keeps reading that file; registering again replaces the project
    file registered before."""
    load_site = getattr(replaysite.load, "harness_load", replaysite.load)
    load_sites = _load_sites(extract)
    ours_json = str(sites_json)
    ours = set(load_sites(ours_json))

    def load(name: str, data_dir: str | None = None, sites_json: str | None = None):
        return load_site(name, data_dir, ours_json if sites_json is None and name in ours else sites_json)

    def load_both(path: str | None = None) -> dict:
        return load_sites(path) if path else {**load_sites(), **load_sites(ours_json)}

    load.harness_load, load_both.harness_load = load_site, load_sites
    replaysite.load, extract.load_sites = load, load_both


def manifest_missing(names: list[str], data_dir: Path | None, eval_dir: Path) -> list[str]:
    """The sites among ``names`` not extracted yet under ``data_dir`` (default: the harness's)."""
    root = Path(data_dir) if data_dir else Path(harness_modules(eval_dir)[1].DEFAULT_DATA)
    return [n for n in names if not (root / n / "MANIFEST.json").is_file()]


def main(argv: list[str] | None = None) -> int:
    """``bench replay-extract``: extract replay sites (names or groups) from git mirrors."""
    ap = argparse.ArgumentParser(
        prog="python -m sbcrawl_dev bench replay-extract",
        description="Write the pinned git trees of replay sites (the harness's and the project's "
                    "replay_sites.json) into the replay data folder, with the harness's extract.py.")
    ap.add_argument("--site", action="append", required=True,
                    help="a site name or group (dev, held-out, all); repeatable, or comma-separated")
    ap.add_argument("--mirror-root", help="folder of <owner>+<name>/repo git copies (default: $MIRROR_ROOT)")
    ap.add_argument("--data-dir", help="replay data folder (default: $REPLAY_DATA or ~/.cache/sbcrawl-replay)")
    ap.add_argument("--git", action="append", default=[], metavar="OWNER/NAME=PATH",
                    help="the git directory of one repository")
    ap.add_argument("--eval-dir", type=Path, default=default_eval_dir())
    ap.add_argument("--sites-json", type=Path, default=SITES_JSON, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    eval_dir = args.eval_dir.resolve()
    if not (eval_dir / "replay" / "extract.py").exists():
        print(f"{ap.prog}: no replay/extract.py in {eval_dir} (set --eval-dir)", file=sys.stderr)
        return 2
    try:
        names = select(",".join(args.site), eval_dir, args.sites_json)
    except SiteListError as exc:
        print(f"{ap.prog}: {exc}", file=sys.stderr)
        return 2
    replaysite, extract = harness_modules(eval_dir)
    register(replaysite, extract, args.sites_json)
    forwarded = [a for n in names for a in ("--site", n)]
    forwarded += [a for g in args.git for a in ("--git", g)]
    if args.mirror_root:
        forwarded += ["--mirror-root", args.mirror_root]
    if args.data_dir:
        forwarded += ["--data-dir", args.data_dir]
    return extract.main(forwarded) or 0


if __name__ == "__main__":
    sys.exit(main())
