"""Page bodies, one function per page type, plus menus, robots.txt and the RSS feed.

Where the links sit is the point of this module: downloads in ``div.downloads ul li a`` on dataset and
publication pages, a few targets in running text, format badges in some catalogue rows, long pagers, and
all around them the navigation repeated on every page.  News, blog and event pages, most of the site as on
real portals, hold no target at all except the odd file cited in an article.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qsl

from sbcrawl_dev.sim import epochs, hostile, seeded, sitemap_docs
from sbcrawl_dev.sim.render import Html, paragraph, sentence
from sbcrawl_dev.sim.structure import SiteLayout
from sbcrawl_dev.sim.web import DATA, PARTNERS, PUB, STATIC_PAGES, WWW, Route

_HEADLINE_WORDS_TEXT = (
    "new figures on regional labour market growth prices census survey release households energy trade "
    "quarterly annual results show record rise fall in the for of and tourism health education housing "
    "report update revised estimates municipalities exports wages population inflation"
)
HEADLINE_WORDS = tuple(_HEADLINE_WORDS_TEXT.split())

# robots.txt rules per host, for every user agent (Site.disallowed applies the same prefixes).
ROBOTS_DISALLOW: dict[str, tuple[str, ...]] = {
    "www.stats.example": ("/search", "/user/", "/print/"),
    "data.stats.example": ("/api/",),
    "pub.stats.example": ("/admin/",),
}

_FACETS_SEARCH = {
    "type": ("dataset", "publication", "news"),
    "year": tuple(str(y) for y in range(2016, 2025)),
    "sort": ("relevance", "date"),
}
_FACETS_FILTER = {
    "format": ("csv", "xlsx", "pdf", "json", "sdmx"),
    "frequency": ("annual", "quarterly", "monthly"),
    "licence": ("open", "restricted"),
}


def robots_txt(site: SiteLayout, host: str) -> str:
    lines = [f"# robots.txt for {host}", "", "User-agent: BadBot", "Disallow: /", "", "User-agent: *",
             f"Crawl-delay: {site.crawl_delay:g}"]
    rules = list(ROBOTS_DISALLOW.get(host, ()))
    if site.profile.hostile:
        rules += hostile.DISALLOW.get(host, ())
    lines += [f"Disallow: {r}" for r in rules]
    lines.append("")
    lines += sitemap_docs.robots_lines(site, host)
    if site.profile.hostile:
        lines = hostile.robots_noise(lines)
    return "\n".join(lines) + "\n"


def rss(site: SiteLayout) -> str:
    n = site.listing_size("news")
    items = "".join(
        f"<item><title>{site.news_title('news', i)}</title><link>{site.item_url('news', i)}</link></item>"
        for i in range(n - 1, max(-1, n - 11), -1)
    )
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>News</title>'
            f"<link>{site.start_url}</link>{items}</channel></rss>\n")


def has_broken_preview(site: SiteLayout, did: int) -> bool:
    return seeded.chance(site.profile.server_error_share, site.seed, "preview-500", did)


def node_id(site: SiteLayout, *key: object) -> int:
    return 1000 + seeded.h64(site.seed, "node", *key) % 90000


def main_menu(site: SiteLayout) -> list[tuple[str, str, list[tuple[str, str]]]]:
    items = []
    for t, name in enumerate(site.theme_names):
        children = []
        if site.profile.mega_menu:
            children = [(site.section_url(s), sub) for s, (tt, sub, _) in enumerate(site.sections) if tt == t]
        items.append((site.theme_url(t), name, children))
    items.append(("http://data.stats.example/", "Data", []))
    items.append((site.listing_url("publications"), "Publications", []))
    items.append((site.listing_url("news"), "News", []))
    if site.profile.events:
        items.append((site.listing_url("events"), "Events", []))
    if site.profile.blog:
        items.append((site.listing_url("blog"), "Blog", []))
    return items


def footer_links(site: SiteLayout) -> list[tuple[str, str]]:
    links = [(site.static_url(slug), label) for slug, label in STATIC_PAGES]
    links.append(("http://www.stats.example/user/login", "Staff login"))
    links += [(f"http://www.stats.example/go/{p}", p.replace("-", " ").title()) for p in PARTNERS]
    if site.profile.hostile:
        links.append(("http://www.stats.example/archive", "Archive"))
    return links


def _crumbs_www() -> list[tuple[str, str]]:
    return [("http://www.stats.example/", "Home")]


def _pager(b: Html, site: SiteLayout, url_of: Callable[[int], str], page: int, total: int) -> None:
    if total <= 1:
        return
    w = site.profile.pager_window
    with b.tag("nav", "pager", role="navigation"), b.tag("ul", "pager__items"):
        if page > 1:
            with b.tag("li", "pager__item pager__item--previous"):
                b.a(url_of(page - 1), "‹ Previous", rel="prev")
        if w:
            shown = sorted({1, total, *range(max(1, page - w), min(total, page + w) + 1)})
            for p in shown:
                with b.tag("li", "pager__item" + (" is-active" if p == page else "")):
                    b.a(url_of(p), str(p))
        if page < total:
            with b.tag("li", "pager__item pager__item--next"):
                b.a(url_of(page + 1), "Next ›", rel="next")


def _teaser(b: Html, site: SiteLayout, href: str, title: str, key: tuple[object, ...], cls: str) -> None:
    nid = f"node-{node_id(site, *key)}" if site.profile.unique_ids else None
    with b.tag("div", f"views-row {cls}", id=nid):
        with b.tag("h3", "teaser-title"):
            b.a(href, title)
        b.el("p", sentence(site.seed, "teaser", *key), cls="teaser-summary")
        if key[0] == "publications":  # listings of reports say when their files last changed
            files = site.live(site.publication_files(int(key[1])))  # type: ignore[call-overload]
            if files:
                when = max(epochs.last_modified(site.seed, r.table_key, site.file_state(r)) for r in files)
                b.el("p", f"Updated {when.date().isoformat()}", cls="teaser-date")


def _latest(site: SiteLayout, kind: str, k: int) -> list[tuple[str, str]]:
    n = site.listing_size(kind)
    return [(site.item_url(kind, i), site.news_title(kind, i)) for i in range(n - 1, max(-1, n - 1 - k), -1)]


def _featured(site: SiteLayout, k: int, sec: int | None = None) -> list[int]:
    """Datasets promoted on the home page (one per data section) or a section page (``k`` of its own)."""
    if sec is None:
        return [site.ds_offset[s] + seeded.randint(0, site.n_datasets[s] - 1, site.seed, "feat", s)
                for s in site.data_sections[:k]]
    n = site.n_datasets[sec]
    return [site.ds_offset[sec] + j for j in sorted(seeded.sample(n, k, site.seed, "feat-sec", sec))]


# ---------------------------------------------------------------------- page types
def home(site: SiteLayout, b: Html) -> tuple[str, list, list]:
    p = site.profile
    b.el("h1", "Official statistics for everyone")
    b.el("p", paragraph(site.seed, "home-intro"), cls="lead")
    with b.tag("div", "themes-grid"):
        for t, name in enumerate(site.theme_names):
            with b.tag("div", "card"), b.tag("h3", "card-title"):
                b.a(site.theme_url(t), name)
    b.raw('<img src="/static/map.png" usemap="#regions" alt="Regions">')
    with b.tag("map", name="regions"):
        for t in range(min(3, p.themes)):
            b.area(site.theme_url(t), site.theme_names[t], f"{t * 40},0,{t * 40 + 40},40")
    with b.tag("section", "block-latest-news"):
        b.el("h2", "Latest news")
        b.link_list(_latest(site, "news", 5), ul_cls="news-list")
    if p.publications:
        with b.tag("section", "block-latest-publications"):
            b.el("h2", "Latest publications")
            b.link_list(_latest(site, "publications", 3), ul_cls="publication-list")
    if site.datasets_now > site.total_datasets:
        with b.tag("section", "block-new-data"):
            b.el("h2", "New datasets")
            newest = range(site.datasets_now - 1, max(site.total_datasets, site.datasets_now - 5) - 1, -1)
            b.link_list([(site.dataset_url(d), site.dataset_title(d)) for d in newest], ul_cls="new-data-list")
    featured = [(site.dataset_url(d), site.dataset_title(d)) for d in _featured(site, p.featured)]
    if featured:
        with b.tag("section", "block-featured-data"):
            b.el("h2", "Featured datasets")
            b.link_list(featured, ul_cls="featured-list")
    if p.events:
        with b.tag("section", "block-events"):
            b.el("h2", "Upcoming events")
            b.link_list(_latest(site, "events", 3), ul_cls="event-list")
    return "Home", [], []


def theme(site: SiteLayout, b: Html, t: int) -> tuple[str, list, list]:
    name = site.theme_names[t]
    b.el("h1", name)
    b.el("p", paragraph(site.seed, "theme", t), cls="intro")
    with b.tag("div", "section-cards"):
        for sec, (tt, sub, _) in enumerate(site.sections):
            if tt == t:
                with b.tag("div", "card"):
                    with b.tag("h2", "card-title"):
                        b.a(site.section_url(sec), sub)
                    b.el("p", sentence(site.seed, "section-teaser", sec))
    related = [(site.item_url("news", i), site.news_title("news", i))
               for i in seeded.sample(site.profile.news, 4, site.seed, "theme-news", t)]
    return name, _crumbs_www(), [("In the news", related)]


def section(site: SiteLayout, b: Html, sec: int) -> tuple[str, list, list]:
    t, sub, _ = site.sections[sec]
    title = f"{site.theme_names[t]}: {sub}"
    b.el("h1", title)
    for i in range(2):
        b.el("p", paragraph(site.seed, "section", sec, i))
    n = site.section_size(sec)
    if n:
        with b.tag("div", "section-data"):
            b.a(site.catalogue_url(sec), f"Browse the {n} datasets", cls="button button--primary")
            key = [(site.dataset_url(d), site.dataset_title(d))
                   for d in _featured(site, site.profile.featured, sec)]
            if key:
                b.el("h2", "Key datasets")
                b.link_list(key, ul_cls="key-datasets")
    pubs = [(site.item_url("publications", i), site.news_title("publications", i))
            for i in seeded.sample(site.profile.publications, 3, site.seed, "section-pubs", sec)]
    if pubs:
        with b.tag("div", "related-publications"):
            b.el("h2", "Publications")
            b.link_list(pubs)
    crumbs = [*_crumbs_www(), (site.theme_url(t), site.theme_names[t])]
    siblings = [(site.section_url(s), ss) for s, (tt, ss, _) in enumerate(site.sections) if tt == t]
    return title, crumbs, [("In this theme", siblings[: max(1, site.profile.sidebar_items)])]


def listing(site: SiteLayout, b: Html, kind: str, page: int) -> tuple[str, list, list]:
    title = {"news": "News", "blog": "Blog", "events": "Events", "publications": "Publications"}[kind]
    b.el("h1", title + (f" — page {page}" if page > 1 else ""))
    n, size = site.listing_size(kind), site.listing_page_size(kind)
    first = n - 1 - (page - 1) * size
    with b.tag("div", f"view view-{kind}"), b.tag("div", "view-content"):
        for i in range(first, max(-1, first - size), -1):
            _teaser(b, site, site.item_url(kind, i), site.news_title(kind, i), (kind, i), kind + "-teaser")
    _pager(b, site, lambda p: site.listing_url(kind, p), page, site.listing_pages(kind))
    side = []
    if kind == "news":
        side.append(("Follow", [("http://www.stats.example/news/rss.xml", "RSS feed")]))
    if kind == "events":
        y, m = site.event_month(max(0, first))
        side.append(("Calendar", [(site.calendar_url(y, m), "Events calendar")]))
    return title, _crumbs_www(), side


def _article_links(site: SiteLayout, b: Html, kind: str, n: int) -> None:
    """A body paragraph that may cite a dataset, a file, a broken page or another website."""
    p, seed = site.profile, site.seed
    b.open("p")
    b.text(sentence(seed, kind, n, "cite") + " ")
    if kind == "news" and n >= p.news and site.new_per_epoch:
        # News after epoch 0 announce a dataset of their own epoch.
        epoch = (n - p.news) // max(1, site.items_per_epoch["news"]) + 1
        first = site.total_datasets + (epoch - 1) * site.new_per_epoch
        did = first + seeded.randint(0, site.new_per_epoch - 1, seed, "announce", n)
        b.text("A new dataset is out: ")
        b.a(site.dataset_url(did), site.dataset_title(did))
        b.text(". ")
    if site.total_datasets and seeded.chance(p.article_dataset_link_share, seed, "art-ds", kind, n):
        did = seeded.randint(0, site.total_datasets - 1, seed, "art-ds-id", kind, n)
        u = seeded.unit(seed, "art-ds-redirect", kind, n)
        if u < p.redirect_share / 2:
            href = site.short_dataset_url(did)
        elif u < p.redirect_share:
            href = site.legacy_dataset_url(did)
        else:
            href = site.dataset_url(did)
        b.text("The figures are published in ")
        b.a(href, site.dataset_title(did))
        b.text(". ")
    if site.total_datasets and seeded.chance(p.article_target_link_share, seed, "art-t", kind, n):
        did = seeded.randint(0, site.total_datasets - 1, seed, "art-t-id", kind, n)
        res = site.resources(did)[0]
        b.text("Download ")
        b.a(res.url, f"the full table ({res.fmt.upper()})")
        b.text(". ")
    if seeded.chance(p.broken_link_share, seed, "art-broken", kind, n):
        gone = site.listing_size(kind) + seeded.randint(1, 500, seed, "art-gone", kind, n)
        b.text("See also ")
        b.a(site.item_url(kind, gone), "an earlier release")
        b.text(". ")
    if seeded.chance(0.2, seed, "art-out", kind, n):
        b.a(f"http://twitter.example/nso_stats/status/{seeded.h64(seed, kind, n) % 10**9}", "Share this")
    b.close("p")


def item(site: SiteLayout, b: Html, kind: str, n: int) -> tuple[str, list, list]:
    p, seed = site.profile, site.seed
    title = site.news_title(kind, n)
    art_id = f"node-{node_id(site, kind, n)}" if p.unique_ids else None
    with b.tag("article", f"node node--type-{kind}", id=art_id):
        b.el("h1", title, cls="page-title")
        y, m = site.event_month(n)
        b.el("div", f"Published {y}-{m:02d}-{n % 28 + 1:02d}", cls="node-date")
        if kind in ("news", "blog") and seeded.chance(p.article_image_share, seed, "img", kind, n):
            img = site.image_url(kind, n)
            with b.tag("figure", "field-image"):
                b.a(img, "Enlarge image", cls="image-link")
                b.el("figcaption", sentence(seed, "caption", kind, n))
        with b.tag("div", "field-body"):
            b.el("p", paragraph(seed, kind, n, 0))
            _article_links(site, b, kind, n)
            b.el("p", paragraph(seed, kind, n, 1, sentences=2))
        if kind == "events":
            with b.tag("div", "event-details"):
                if seeded.chance(p.event_video_share, seed, "video", n):
                    b.a(site.video_url(n), "Watch the recording", cls="video-link")
                b.a(site.calendar_url(y, m), "See the calendar", cls="calendar-link")
                b.a(f"http://www.other.example/register?event={n}", "Register", cls="external")
        if kind == "news":
            with b.tag("div", "node-links"):
                b.a(site.print_url(n), "Printer-friendly version", cls="print-link")
        t = seeded.randint(0, p.themes - 1, seed, "item-theme", kind, n)
        with b.tag("div", "field-tags"):
            b.a(site.theme_url(t), site.theme_names[t], cls="tag")
    crumbs = [*_crumbs_www(), (site.listing_url(kind), kind.title())]
    latest = _latest(site, kind, p.sidebar_items)
    return title, crumbs, [("Latest", latest)] if latest else []


def publication(site: SiteLayout, b: Html, kind: str, pid: int) -> tuple[str, list, list]:
    p, seed = site.profile, site.seed
    title = site.news_title("publications", pid)
    docs = site.live(site.publication_files(pid))
    art_id = f"node-{node_id(site, 'pub', pid)}" if p.unique_ids else None
    with b.tag("article", "node node--type-publication", id=art_id):
        b.el("h1", title, cls="page-title")
        with b.tag("div", "field-summary"):
            b.el("p", paragraph(seed, "pub", pid))
            b.open("p")
            b.text(sentence(seed, "pub-cite", pid) + " ")
            if docs:
                b.a(docs[0].url, "Read the full report")
            b.text(".")
            b.close("p")
        with b.tag("div", "downloads"):
            b.el("h2", "Downloads")
            with b.tag("ul", "file-list"):
                for res in docs:
                    with b.tag("li", "file"):
                        b.a(res.url, f"{res.filename} ({res.fmt.upper()})")
                        when = epochs.last_modified(site.seed, res.table_key, site.file_state(res)).date().isoformat()
                        b.el("span", f"updated {when}", cls="file-date")
        if site.total_datasets and seeded.chance(p.publication_dataset_share, seed, "pub-has-ds", pid):
            did = seeded.randint(0, site.total_datasets - 1, seed, "pub-ds", pid)
            with b.tag("div", "related-data"):
                b.el("h2", "Data behind this publication")
                b.a(site.dataset_url(did), site.dataset_title(did))
    series = [(site.item_url("publications", i), site.news_title("publications", i))
              for i in (pid - 1, pid + 1) if 0 <= i < site.listing_size("publications")]
    crumbs = [*_crumbs_www(), (site.listing_url("publications"), "Publications")]
    return title, crumbs, [("In this series", series)] if series else []


def static(site: SiteLayout, b: Html, slug: str) -> tuple[str, list, list]:
    title = dict(STATIC_PAGES)[slug]
    b.el("h1", title)
    for i in range(3):
        b.el("p", paragraph(site.seed, "static", slug, i))
    if slug == "contact":
        b.a("mailto:info@stats.example", "info@stats.example", cls="mail")
    return title, _crumbs_www(), []


def simple(site: SiteLayout, b: Html, title: str, key: object) -> tuple[str, list, list]:
    b.el("h1", title)
    b.el("p", paragraph(site.seed, "simple", key))
    return title, _crumbs_www(), []


def data_home(site: SiteLayout, b: Html) -> tuple[str, list, list]:
    b.el("h1", "Data catalogue")
    b.el("p", paragraph(site.seed, "data-home"), cls="lead")
    with b.tag("ul", "group-list"):
        for sec in site.data_sections:
            t, sub, _ = site.sections[sec]
            with b.tag("li", "group-item"):
                b.a(site.catalogue_url(sec), f"{site.theme_names[t]}: {sub}")
                b.el("span", f"{site.section_size(sec)} datasets", cls="count")
    return "Data catalogue", _crumbs_www(), []


def _format_facets(site: SiteLayout) -> list[tuple[str, str]]:
    return [(site.filter_url(format=f), f.upper()) for f in _FACETS_FILTER["format"]]


def catalogue(site: SiteLayout, b: Html, sec: int, page: int) -> tuple[str, list, list]:
    p, seed = site.profile, site.seed
    t, sub, _ = site.sections[sec]
    title = f"{site.theme_names[t]}: {sub} — datasets"
    b.el("h1", title)
    listed, size = site.section_datasets(sec), p.catalogue_page_size
    b.el("div", f"{len(listed)} datasets found", cls="search-count")
    with b.tag("ul", "dataset-list"):
        for did in listed[(page - 1) * size: page * size]:
            nid = f"node-{node_id(site, 'ds', did)}" if p.unique_ids else None
            with b.tag("li", "dataset-item", id=nid):
                with b.tag("div", "dataset-content"):
                    with b.tag("h3", "dataset-heading"):
                        b.a(site.dataset_url(did), site.dataset_title(did))
                    b.el("div", sentence(seed, "ds-notes", did), cls="notes")
                    b.el("div", _dataset_freshness(site, did), cls="dataset-meta")
                if seeded.chance(p.catalogue_badge_share, seed, "badges", did):
                    with b.tag("ul", "dataset-resources"):
                        for res in site.live(site.resources(did)):
                            with b.tag("li"):
                                b.a(res.url, res.fmt.upper(), cls="label", data_format=res.fmt)
    _pager(b, site, lambda q: site.catalogue_url(sec, q), page, site.catalogue_pages(sec))
    crumbs = [*_crumbs_www(), ("http://data.stats.example/", "Data")]
    side = [("Formats", _format_facets(site))] if p.facet_trap else []
    return title, crumbs, side


def _dataset_freshness(site: SiteLayout, did: int) -> str:
    """What catalogues show of a dataset: how many files, last modified when (changes with its files)."""
    live = site.live(site.resources(did))
    if not live:
        return "No files"
    when = max(epochs.last_modified(site.seed, r.table_key, site.file_state(r)) for r in live)
    return f"{len(live)} file{'s' if len(live) > 1 else ''} · last modified {when.date().isoformat()}"


def dataset(site: SiteLayout, b: Html, did: int) -> tuple[str, list, list]:
    p, seed = site.profile, site.seed
    sec = site.section_of(did)
    t, sub, _ = site.sections[sec]
    title = site.dataset_title(did)
    resources = site.live(site.resources(did))
    art_id = f"node-{node_id(site, 'ds', did)}" if p.unique_ids else None
    with b.tag("article", "module dataset", id=art_id):
        b.el("h1", title, cls="heading")
        with b.tag("div", "notes embedded-content"):
            b.el("p", paragraph(seed, "ds", did))
            if resources and seeded.chance(0.3, seed, "ds-inline", did):
                b.open("p")
                b.text("The latest figures are also available ")
                b.a(resources[0].url, f"as a {resources[0].fmt.upper()} file")
                b.text(".")
                b.close("p")
        with b.tag("section", "resources", id="dataset-resources"), b.tag("div", "downloads"):
            b.el("h2", "Data and resources")
            with b.tag("ul", "resource-list"):
                for res in resources:
                    with b.tag("li", "resource-item"):
                        b.a(res.url, f"{res.code} ({res.fmt.upper()})", cls="heading")
                        b.el("span", res.fmt, cls="format-label")
                        # CKAN-like: the page changes when one of its files does
                        when = epochs.last_modified(site.seed, res.table_key, site.file_state(res)).date().isoformat()
                        b.el("span", f"Last modified {when}", cls="resource-date")
                if seeded.chance(p.broken_link_share, seed, "ds-broken", did):
                    with b.tag("li", "resource-item"):
                        gone = f"http://data.stats.example/files/{did}/{site.code(did).lower()}_old.csv"
                        b.a(gone, "Previous version (CSV)", cls="heading")
        with b.tag("table", "additional-info"):
            b.raw(f"<tr><th>Theme</th><td>{site.theme_names[t]}</td></tr><tr><th>Code</th>"
                  f"<td>{site.code(did)}</td></tr>")
        if has_broken_preview(site, did):
            b.a(f"{site.dataset_url(did)}/preview", "Preview", cls="btn preview")
    first, n = site.ds_offset[sec], site.n_datasets[sec]
    related = [(site.dataset_url(d), site.dataset_title(d))
               for d in range(did - p.related_span, did + p.related_span + 1) if d != did and first <= d < first + n]
    crumbs = [("http://data.stats.example/", "Data"), (site.catalogue_url(sec), f"{site.theme_names[t]}: {sub}")]
    side = [("Related datasets", related[: max(1, p.sidebar_items)])] if related else []
    side.append(("Theme", [(site.section_url(sec), sub)]))
    return title, crumbs, side


def calendar(site: SiteLayout, b: Html, year: int, month: int) -> tuple[str, list, list]:
    """An events calendar with "next month" links forever: a crawler trap."""
    title = f"Events calendar — {year:04d}-{month:02d}"
    b.el("h1", title)
    prev_y, prev_m = (year, month - 1) if month > 1 else (year - 1, 12)
    next_y, next_m = (year, month + 1) if month < 12 else (year + 1, 1)
    with b.tag("table", "calendar"):
        b.raw("<tr>" + "".join(f"<td>{d}</td>" for d in range(1, 29)) + "</tr>")
    if 2023 <= year <= 2025 and site.profile.events:
        m = (year - 2023) * 12 + month - 1
        events = [(site.item_url("events", e), site.news_title("events", e))
                  for e in range(m, site.profile.events, 36)][:10]
        b.link_list(events, ul_cls="calendar-events")
    with b.tag("nav", "calendar-nav"):
        b.a(site.calendar_url(prev_y, prev_m), "‹ Previous month")
        b.a(site.calendar_url(next_y, next_m), "Next month ›")
    return title, _crumbs_www(), []


def _facet_page(site: SiteLayout, b: Html, title: str, query: str, facets: dict[str, tuple[str, ...]],
                url_of: Callable[..., str]) -> None:
    """Search results with facet links: every combination of filters is a new URL (a crawler trap)."""
    params = dict(parse_qsl(query))
    b.el("h1", title)
    with b.tag("div", "facets"):
        for name, values in facets.items():
            with b.tag("div", f"facet facet-{name}"):
                b.el("h3", name.title())
                with b.tag("ul"):
                    for v in values:
                        with b.tag("li"):
                            b.a(url_of(**{**params, name: v}), v)
    if site.total_datasets:
        hits = seeded.sample(site.total_datasets, 5, site.seed, "search", query)
        with b.tag("ol", "search-results"):
            for did in hits:
                with b.tag("li"):
                    b.a(site.dataset_url(did), site.dataset_title(did))
    page = int(params["page"]) if params.get("page", "").isdigit() else 1
    with b.tag("nav", "pager"):
        b.a(url_of(**{**params, "page": str(page + 1)}), "Next ›", rel="next")


def search(site: SiteLayout, b: Html, query: str) -> tuple[str, list, list]:
    facets = {"topic": tuple(site.theme_slugs), **_FACETS_SEARCH}
    _facet_page(site, b, "Search", query, facets, site.search_url)
    return "Search", _crumbs_www(), []


def filter_page(site: SiteLayout, b: Html, query: str) -> tuple[str, list, list]:
    _facet_page(site, b, "Filter datasets", query, _FACETS_FILTER, site.filter_url)
    return "Filter datasets", [("http://data.stats.example/", "Data")], []


_BODY_CLASS = {"item": "page-node", "publication": "page-node", "listing": "page-view"}


def render(site: SiteLayout, url: str, route: Route) -> Html | None:
    """The page for ``route`` wrapped in its host's chrome, or None if the handler renders no page."""
    h, args = route.handler, route.args
    if h == "print":
        fn: Callable[..., tuple[str, list, list]] = item
        args = ("news", args[0])
    else:
        fn = _HANDLERS.get(h)  # type: ignore[assignment]
    if fn is None:
        return None
    host = url.split("/", 3)[2].lower() if "://" in url else WWW
    host = host if host in (WWW, DATA, PUB) else WWW
    base = f"http://{host}"
    main = Html(base)
    title, crumbs, side = fn(site, main, *args)
    b = Html(base)
    site.chrome[host].page(b, site, title, crumbs, _BODY_CLASS.get(h, f"page-{h}"),
                           node_id(site, url), main, side)
    return b


_HANDLERS: dict[str, Callable[..., tuple[str, list, list]]] = {
    "home": home,
    "theme": theme,
    "section": section,
    "listing": listing,
    "item": item,
    "publication": publication,
    "static": static,
    "login": lambda site, b: simple(site, b, "Staff login", "login"),
    "data_home": data_home,
    "catalogue": catalogue,
    "dataset": dataset,
    "calendar": calendar,
    "search": search,
    "filter": filter_page,
}
