"""The explainable crawl report: ``report.md`` and PNGs written next to a crawl's targets.

It answers what a user asks after a crawl: how fast did targets come in (harvest curve), where did the
crawler find them (the tag-path groups with the highest mean reward, with example links), how many
groups (actions) it formed, how good its URL classifier was (confusion matrix against the truth when
known, e.g. in the simulator, else against what the GET requests found), and why it stopped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from airflow_sbcrawl.crawler.classify import LABEL_NAMES

if TYPE_CHECKING:
    from airflow_sbcrawl.crawler.engine import Crawler, CrawlSummary

REPORT_NAME = "report.md"
_EXAMPLES = 3
_ACTUAL = ("html", "target", "neither")


def write_report(crawler: Crawler, summary: CrawlSummary, out_dir: str | Path,
                 truth: Callable[[str], str] | None = None) -> Path:
    """Write ``report.md``, ``report-harvest.png`` and ``report-groups.png`` into ``out_dir``.

    ``truth`` maps a URL to its kind ("html", "target", anything else meaning neither), e.g. the
    simulator's ``site.kind``; without it the classifier is judged on the links the crawl fetched.
    ``crawler`` is the finished crawl (its policy, link table, harvest arrays and resumes are read, never
    changed) and ``summary`` what its ``run()`` returned. Returns the path of ``report.md``; the folder is
    created if missing, and an unwritable one raises ``OSError``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    described = crawler.policy.describe()
    harvest_png = _harvest_png(crawler, summary, out / "report-harvest.png")
    groups = _top_groups(crawler, described)
    groups_png = _groups_png(groups, out / "report-groups.png") if groups else None
    sections = [
        f"# Crawl report: {summary.start_url}",
        _overview(summary, described),
        "## Why the crawl stopped\n\n" + _stop_section(summary),
        f"## Harvest\n\n![harvest curve]({harvest_png.name})\n\n"
        f"{summary.targets:,} targets in {summary.requests:,} requests ({summary.head_requests:,} HEAD) over "
        f"{summary.pages:,} pages." + _resumes_text(crawler.run_state.resumes),
        _groups_section(groups, groups_png, described, summary.policy),
        _confusion_section(crawler, summary, truth),
    ]
    path = out / REPORT_NAME
    path.write_text("\n\n".join(sections) + "\n")
    return path


# -- sections ------------------------------------------------------------------------------------------
def _overview(summary: CrawlSummary, described: dict[str, Any]) -> str:
    actions = described.get("actions", summary.actions)
    rows = [
        ("policy", summary.policy),
        ("run", summary.run_id),
        ("targets retrieved", f"{summary.targets:,}"),
        ("requests (GET + HEAD)", f"{summary.requests:,} ({summary.head_requests:,} HEAD)"),
        ("body bytes", f"{summary.bytes:,}"),
        ("pages crawled", f"{summary.pages:,}"),
        ("frontier left", f"{summary.frontier:,}"),
        ("actions (tag-path groups)", f"{actions:,}"),
        ("time", f"{summary.elapsed_s:.1f} s wall, {summary.cpu_s:.1f} s CPU"),
    ]
    return "## Overview\n\n" + _md_table(("", ""), rows)


def _resumes_text(resumes: list[dict[str, Any]]) -> str:
    """The crawl's history across runs: totals cover every run, pages only the checkpointed segments."""
    if not resumes:
        return ""
    lost = sum(r["lost_requests"] for r in resumes)
    replayed = sum(r["replayed_targets"] for r in resumes)
    sources = ", ".join("no checkpoint" if r["from_checkpoint"] is None else f"checkpoint {r['from_checkpoint']}"
                        for r in resumes)
    times = "once" if len(resumes) == 1 else f"{len(resumes)} times"
    return (f"\n\nThe crawl was resumed {times} ({sources}). The totals cover every run: {lost:,} requests and "
            f"{replayed:,} targets of segments cut off after their last checkpoint are included, but the pages of "
            "those segments are not known, so they are not counted; the harvest curve draws those segments "
            "dashed.")


def _stop_section(summary: CrawlSummary) -> str:
    text = f"**{summary.stop_reason or 'unknown'}**"
    if summary.start_error:
        text += f"\n\nThe start page could not be used: {summary.start_error}"
    if summary.frontier and "budget" in summary.stop_reason:
        text += (f"\n\n{summary.frontier:,} links met were never fetched: they are kept in the site memory, and "
                 "the next run of the site goes on exploring from there.")
    if summary.checks:
        checks = summary.checks
        text += (f"\n\nKnown datasets: {checks.get('verified', 0):,} verified by a request, "
                 f"{checks.get('vouched', 0):,} vouched for by a page read as before, "
                 f"{checks.get('estimated', 0):,} estimated unchanged by the change rate the site has shown "
                 f"({100 * checks.get('change_rate', 0.5):.1f} % of the known items compared over its runs).")
    if summary.outcomes:
        rows = sorted(summary.outcomes.items(), key=lambda kv: -kv[1])
        text += "\n\nResponses by kind:\n\n" + _md_table(("response", "count"), [(k, f"{v:,}") for k, v in rows])
    return text


def _top_groups(crawler: Crawler, described: dict[str, Any]) -> list[dict[str, Any]]:
    """The policy's top groups, each with a few links of the crawl that carried the same tag path."""
    top = described.get("top_actions") or []
    if not top:
        return []
    links = crawler.links
    path_ids = {p: i for i, p in enumerate(links.paths)}
    wanted = {path_ids[g["tag_path"]]: g for g in top if g.get("tag_path") in path_ids}
    examples: dict[int, list[str]] = {pid: [] for pid in wanted}
    path_of = np.frombuffer(links.path, dtype=np.int32)
    for pid in wanted:
        for link_id in np.flatnonzero(path_of == pid)[:_EXAMPLES]:
            examples[pid].append(links.urls[int(link_id)])
    out = []
    for g in top:
        pid = path_ids.get(g.get("tag_path", ""))
        out.append({**g, "examples": examples.get(pid, []) if pid is not None else []})
    return out


def _groups_section(groups: list[dict[str, Any]], png: Path | None, described: dict[str, Any],
                    policy: str) -> str:
    head = "## Where the targets were: top tag-path groups by mean reward\n\n"
    if not groups:
        extra = ", ".join(f"{k}: {v}" for k, v in described.items() if not isinstance(v, (list, dict)))
        return head + f"Policy {policy} does not group links by tag path" + (f" ({extra})." if extra else ".")
    rows = []
    for rank, g in enumerate(groups, 1):
        links = "<br>".join(f"`{u}`" for u in g["examples"]) or "(none kept)"
        rows.append((str(rank), f"{g['mean_reward']:.2f}", f"{g['pulls']:,}", f"`{g['tag_path']}`", links))
    text = head + f"{described.get('actions', len(groups)):,} actions in all. "
    text += "Mean reward = new targets found per page crawled from that group.\n\n"
    if png is not None:
        text += f"![top groups]({png.name})\n\n"
    return text + _md_table(("#", "mean reward", "pages", "example tag path", "example links"), rows)


def _confusion_section(crawler: Crawler, summary: CrawlSummary, truth: Callable[[str], str] | None) -> str:
    head = "## URL classifier\n\n"
    if not crawler.policy.classifies_links:
        return head + f"Policy {summary.policy} does not classify links: every link is fetched to learn its type."
    counts: Counter[tuple[str, str]] = Counter()
    if truth is not None:
        basis = "against the truth, for every link the classifier labelled (fetched or not)"
        predicted = np.frombuffer(crawler.links.predicted, dtype=np.int8)
        for link_id in np.flatnonzero(predicted >= 0):
            kind = truth(crawler.links.urls[int(link_id)])
            counts[(LABEL_NAMES[predicted[link_id]], kind if kind in _ACTUAL[:2] else "neither")] += 1
    else:
        basis = "against what the GET found, for the labelled links the crawl fetched"
        for key, n in crawler.run_state.confusion.items():
            pred, _, actual = key.partition("->")
            counts[(pred, actual)] += n
    total = sum(counts.values())
    if not total:
        return head + "No link was labelled by the classifier (the first batch is labelled by HEAD requests)."
    rows = [(pred, *(f"{counts[(pred, a)]:,}" for a in _ACTUAL)) for pred in LABEL_NAMES]
    wrong = counts[("HTML", "target")] + counts[("Target", "html")]
    text = head + f"Predicted (rows) vs actual (columns), {basis}; {summary.head_requests:,} HEAD requests labelled " \
                  "the first batch.\n\n"
    text += _md_table(("predicted \\ actual", *_ACTUAL), rows)
    return text + f"\n\nMisclassified between HTML and target: {wrong:,} of {total:,} ({100 * wrong / total:.1f} %)."


# -- figures -------------------------------------------------------------------------------------------
def _pyplot() -> Any:
    """matplotlib, imported when a figure is drawn: importing it costs about a second of CPU, which a
    crawl that writes no report (or a process that only imports this module) should not pay."""
    import matplotlib

    matplotlib.use("Agg")  # reports are written by workers without a display
    import matplotlib.pyplot as plt

    return plt


def _harvest_png(crawler: Crawler, summary: CrawlSummary, path: Path) -> Path:
    requests = np.frombuffer(crawler.run_state.harvest_requests, dtype=np.int64)
    targets = np.frombuffer(crawler.run_state.harvest_targets, dtype=np.int64)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    xs, ys = np.concatenate([[0], requests]), np.concatenate([[0], targets])
    # Segments lost to a kill end at the point a resume added (index at_page of the arrays, +1 here).
    cuts = sorted({r["at_page"] + 1 for r in crawler.run_state.resumes
                   if r.get("at_page") is not None and r["at_page"] + 1 < len(xs)})
    start = 0
    for cut in [*cuts, len(xs)]:
        ax.plot(xs[start:cut], ys[start:cut], lw=1.5, color="C0")
        if cut < len(xs):
            ax.plot(xs[cut - 1:cut + 1], ys[cut - 1:cut + 1], lw=1.5, ls="--", color="C1")
        start = cut
    ax.set_xlabel("requests (GET + HEAD)")
    ax.set_ylabel("targets retrieved")
    ax.set_title(f"{summary.policy}: {summary.targets:,} targets, {summary.requests:,} requests")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _groups_png(groups: list[dict[str, Any]], path: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    means = [max(g["mean_reward"], 1e-3) for g in groups]  # log scale, as the paper's Figure 5
    ax.bar(range(1, len(groups) + 1), means)
    ax.set_yscale("log")
    ax.set_xlabel("group rank")
    ax.set_ylabel("mean reward (log)")
    ax.set_title("top tag-path groups by mean reward")
    ax.set_xticks(range(1, len(groups) + 1))
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _md_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    def cell(x: str) -> str:
        return str(x).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)
