"""The synthetic site: its structure, URL scheme, routing of a URL to a response, and the ground truth.

Nothing per page is stored.  Building a site computes only the information architecture (themes, sections,
how many datasets each section holds: O(sections)); any page is rendered on request from a seeded function
of its URL, which is what lets the ``large`` profile build instantly.  The ground truth (reachable URLs,
targets, depths) comes from a breadth-first walk over the very links the pages render, done lazily the
first time it is asked for.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import re
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import parse_qsl, urlsplit

from sbcrawl_dev.sim import epochs, files, pages, seeded
from sbcrawl_dev.sim.profiles import Profile, get_profile
from sbcrawl_dev.sim.render import Chrome, Html, words

DOMAIN = "stats.example"
WWW = f"www.{DOMAIN}"
DATA = f"data.{DOMAIN}"
PUB = f"pub.{DOMAIN}"
OFFSITE_HOSTS = ("www.other.example", "twitter.example")

# Kinds of URL, as the ground truth reports them (see Site.kind).
KINDS = ("html", "target", "error", "redirect", "media", "trap", "out-of-scope", "robots")
# Kinds that count in url_count: what a crawler can usefully fetch (the paper's "#Available" excludes 4xx/5xx).
COUNTED_KINDS = frozenset({"html", "target", "redirect", "media"})

_THEMES = (
    "Population", "Economy", "Labour", "Health", "Education", "Environment", "Trade", "Agriculture",
    "Transport", "Energy", "Housing", "Justice", "Prices", "Tourism", "Public finance", "Industry",
    "Culture", "Science", "Migration", "Society",
)
_SUBTOPICS = (
    "Regional statistics", "Time series", "Key indicators", "Surveys", "Projections", "Censuses",
    "Methodology", "Business statistics", "Household statistics", "Registers", "International comparisons",
    "Archives", "Experimental statistics", "Microdata", "Accounts", "Classifications",
)
_STATIC = (
    ("about", "About us"), ("contact", "Contact"), ("legal-notice", "Legal notice"),
    ("accessibility", "Accessibility"), ("privacy", "Privacy policy"), ("careers", "Careers"),
    ("press-office", "Press office"), ("open-data-policy", "Open data policy"),
)
_PARTNERS = ("eurostat", "oecd", "un-statistics")

_NUM_TAIL = re.compile(r"-(\d+)$")


class Response(NamedTuple):
    """What the server sends: status, headers, and the body as an iterator of byte chunks."""

    status: int
    headers: dict[str, str]
    body: Iterable[bytes]


@dataclass(frozen=True)
class Resource:
    """One downloadable file of a dataset or publication."""

    url: str
    fmt: str
    mime: str
    filename: str
    table_key: tuple[object, ...]
    code: str


class Route(NamedTuple):
    kind: str
    handler: str
    args: tuple


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _next_prime(n: int) -> int:
    def prime(k: int) -> bool:
        return k > 1 and all(k % d for d in range(2, int(k**0.5) + 1))

    while not prime(n):
        n += 1
    return n


def _html_response(text: str, status: int = 200) -> Response:
    body = text.encode()
    return Response(status, {"Content-Type": "text/html; charset=utf-8", "Content-Length": str(len(body))},
                    [body])


def _error(status: int) -> Response:
    reason = {404: "Page not found", 500: "Internal server error"}.get(status, "Error")
    return _html_response(f"<!DOCTYPE html><html><head><title>{reason}</title></head><body><h1>{reason}</h1>"
                          "<p>The requested page could not be served.</p></body></html>\n", status)


def _redirect(status: int, location: str) -> Response:
    return Response(status, {"Location": location, "Content-Type": "text/html; charset=utf-8",
                             "Content-Length": "0"}, [])


class Site:
    """A deterministic statistics portal built from ``(profile, seed)``; see the package docstring."""

    def __init__(self, profile: Profile, seed: int = 0, crawl_delay: float | None = None, epoch: int = 0) -> None:
        if epoch < 0:
            raise ValueError(f"epoch must be 0 or more, not {epoch}")
        self.profile = profile
        self.seed = seed
        self.epoch = epoch
        self.crawl_delay = profile.crawl_delay if crawl_delay is None else crawl_delay
        self.start_url = f"http://{WWW}/"
        self.hosts = (WWW, DATA, PUB)
        p = profile
        self.theme_names = [_THEMES[t] if t < len(_THEMES) else f"Theme {t + 1}" for t in range(p.themes)]
        self.theme_slugs = [_slug(n) for n in self.theme_names]
        self._theme_by_slug = {s: t for t, s in enumerate(self.theme_slugs)}
        # Sections: (theme, name, slug); a section holds a data catalogue only if it drew datasets.
        self.sections: list[tuple[int, str, str]] = []
        self.n_datasets: list[int] = []
        for t in range(p.themes):
            for j in seeded.sample(len(_SUBTOPICS), p.sections_per_theme, seed, "subtopics", t):
                name = _SUBTOPICS[j]
                sec = len(self.sections)
                self.sections.append((t, name, _slug(name)))
                has_data = seeded.chance(p.data_section_share, seed, "has-data", sec)
                n = seeded.randint(*p.datasets_per_section, seed, "n-datasets", sec) if has_data else 0
                self.n_datasets.append(n)
        if not any(self.n_datasets):  # a statistics site with no data would make every benchmark vacuous
            self.n_datasets[0] = p.datasets_per_section[1]
        self._section_by_slug = {(t, slug): i for i, (t, _, slug) in enumerate(self.sections)}
        self.ds_offset = [0]
        for n in self.n_datasets:
            self.ds_offset.append(self.ds_offset[-1] + n)
        # Datasets of epoch 0; later ones get the ids that follow (see epochs.py), so nothing of epoch 0 moves.
        self.total_datasets = self.ds_offset[-1]
        self.data_sections = [i for i, n in enumerate(self.n_datasets) if n]
        self.new_per_epoch = round(self.total_datasets * p.new_dataset_share)
        self.datasets_now = self.total_datasets + epoch * self.new_per_epoch
        self._new_section = [seeded.pick(self.data_sections, seed, "new-ds-section", did)
                             for did in range(self.total_datasets, self.datasets_now)]
        self._new_in_section: dict[int, list[int]] = {}
        for did in range(self.datasets_now - 1, self.total_datasets - 1, -1):  # newest first
            self._new_in_section.setdefault(self._new_section[did - self.total_datasets], []).append(did)
        self.items_per_epoch = {kind: round(getattr(p, kind) * p.new_item_share) for kind in ("news", "publications")}
        # Media ids (/media/<mid>/download) are an affine permutation of an internal code, so that they look
        # like the arbitrary database ids of a CMS yet decode in O(1).
        biggest = 8 * max(self.total_datasets * 8, p.news, p.blog, p.events, p.publications * 8) + 8
        self._mid_p = _next_prime(max(100_003, biggest))
        self._mid_a = 7919
        self._mid_a_inv = pow(self._mid_a, -1, self._mid_p)
        self._mid_b = seeded.randint(1000, self._mid_p - 1, seed, "mid-offset")
        self.chrome = {
            WWW: Chrome("cms", "National Statistics Office", f"http://{WWW}/", p.unique_ids, f"http://{WWW}"),
            PUB: Chrome("cms", "National Statistics Office", f"http://{WWW}/", p.unique_ids, f"http://{PUB}"),
            DATA: Chrome("catalogue", "National Statistics Office", f"http://{DATA}/", p.unique_ids,
                         f"http://{DATA}"),
        }
        # Knobs of the hostile endpoints, on the instance so that tests can make them small.
        from sbcrawl_dev.sim import hostile

        self.bomb_bytes = hostile.BOMB_BYTES
        self.drip_interval = hostile.DRIP_INTERVAL
        self.drip_bytes = hostile.DRIP_BYTES
        self.busy_count = hostile.BUSY_COUNT
        self._state_lock = threading.Lock()
        self._hits: dict[str, int] = {}
        self._truth: _Truth | None = None
        self._truth_lock = threading.Lock()

    # ------------------------------------------------------------------ structure helpers
    def section_of(self, did: int) -> int:
        if did >= self.total_datasets:
            return self._new_section[did - self.total_datasets]
        return bisect.bisect_right(self.ds_offset, did) - 1

    def section_datasets(self, sec: int) -> list[int]:
        """The datasets of a section in catalogue order: the newest (added after epoch 0) first."""
        first = self.ds_offset[sec]
        return [*self._new_in_section.get(sec, ()), *range(first, first + self.n_datasets[sec])]

    def section_size(self, sec: int) -> int:
        return self.n_datasets[sec] + len(self._new_in_section.get(sec, ()))

    def dataset_exists(self, did: int) -> bool:
        return 0 <= did < self.datasets_now

    def born(self, key: tuple[object, ...]) -> int:
        """The epoch in which the file (or its dataset or publication) ``key`` first appeared."""
        kind, owner = key[0], int(key[1])  # type: ignore[call-overload]
        if kind == "ds":
            extra = owner - self.total_datasets
            return 0 if extra < 0 else extra // max(1, self.new_per_epoch) + 1
        extra = owner - self.profile.publications
        return 0 if extra < 0 else extra // max(1, self.items_per_epoch["publications"]) + 1

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - bounded; pages and routing ask for the same files
    def file_state(self, res: Resource) -> epochs.FileState:
        return epochs.file_state(self, res.table_key, self.born(res.table_key))

    def live_url(self, res: Resource) -> str | None:
        """Where ``res`` is served now (None once removed)."""
        state = self.file_state(res)
        if state.gone:
            return None
        return epochs.moved_url(res, state.moved) if state.moved else res.url

    def live(self, resources: Iterable[Resource]) -> list[Resource]:
        """The files of a dataset or publication as its page lists them now: removed ones dropped, moved
        ones under their new URL."""
        out = []
        for res in resources:
            url = self.live_url(res)
            if url is not None:
                out.append(res if url == res.url else dataclasses.replace(res, url=url))
        return out

    def code(self, did: int) -> str:
        t = self.sections[self.section_of(did)][0]
        return f"{self.theme_slugs[t][:3].upper()}{did:05d}"

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - bounded; catalogue pages and sidebars repeat titles
    def dataset_title(self, did: int) -> str:
        sec = self.section_of(did)
        t, sub, _ = self.sections[sec]
        freq = seeded.pick(("Annual", "Quarterly", "Monthly", "Biennial"), self.seed, "ds-freq", did)
        what = seeded.pick(("estimates", "indicators", "statistics", "survey results", "accounts", "counts"),
                           self.seed, "ds-what", did)
        return f"{freq} {self.theme_names[t].lower()} {what}: {sub.lower()} ({self.code(did)})"

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - listings and sidebars repeat the same titles
    def news_title(self, kind: str, n: int) -> str:
        return " ".join(words(self.seed, pages.HEADLINE_WORDS, 5, "title", kind, n)).capitalize()

    # ------------------------------------------------------------------ URLs
    def theme_url(self, t: int) -> str:
        return f"http://{WWW}/themes/{self.theme_slugs[t]}"

    def section_url(self, sec: int) -> str:
        t, _, slug = self.sections[sec]
        return f"http://{WWW}/themes/{self.theme_slugs[t]}/{slug}"

    def catalogue_url(self, sec: int, page: int = 1) -> str:
        t, _, slug = self.sections[sec]
        base = f"http://{DATA}/catalogue/{self.theme_slugs[t]}/{slug}"
        return base if page == 1 else f"{base}?page={page}"

    def catalogue_pages(self, sec: int) -> int:
        return -(-self.section_size(sec) // self.profile.catalogue_page_size)

    def dataset_url(self, did: int) -> str:
        return f"http://{DATA}/dataset/{self.code(did).lower()}"

    def legacy_dataset_url(self, did: int) -> str:
        return f"http://{WWW}/datasets/{did}"

    def short_dataset_url(self, did: int) -> str:
        return f"http://{WWW}/stats/{did}"

    def listing_url(self, kind: str, page: int = 1) -> str:
        base = f"http://{PUB}/publications" if kind == "publications" else f"http://{WWW}/{kind}"
        return base if page == 1 else f"{base}?page={page}"

    def listing_size(self, kind: str) -> int:
        base = {"news": self.profile.news, "blog": self.profile.blog, "events": self.profile.events,
                "publications": self.profile.publications}[kind]
        return base + self.epoch * self.items_per_epoch.get(kind, 0)

    def listing_page_size(self, kind: str) -> int:
        p = self.profile
        return p.publication_page_size if kind == "publications" else p.listing_page_size

    def listing_pages(self, kind: str) -> int:
        return max(1, -(-self.listing_size(kind) // self.listing_page_size(kind)))

    def item_url(self, kind: str, n: int) -> str:
        """URL of news article, blog post, event or publication ``n`` (may be past the end: a broken link)."""
        slug = _slug(self.news_title(kind, n))[:48].strip("-")
        if kind == "publications":
            return f"http://{PUB}/publications/{slug}-{n}"
        return f"http://{WWW}/{kind}/{slug}-{n}"

    def print_url(self, n: int) -> str:
        return f"http://{WWW}/print/news/{n}"

    def calendar_url(self, year: int, month: int) -> str:
        return f"http://{WWW}/events/calendar?month={year:04d}-{month:02d}"

    def event_month(self, e: int) -> tuple[int, int]:
        m = e % 36
        return 2023 + m // 12, m % 12 + 1

    def search_url(self, **params: str) -> str:
        q = "&".join(f"{k}={v}" for k, v in params.items())
        return f"http://{WWW}/search" + (f"?{q}" if q else "")

    def filter_url(self, **params: str) -> str:
        q = "&".join(f"{k}={v}" for k, v in params.items())
        return f"http://{DATA}/catalogue/filter" + (f"?{q}" if q else "")

    def static_url(self, slug: str) -> str:
        return f"http://{WWW}/{slug}"

    def media_id(self, code: int) -> int:
        return (code * self._mid_a + self._mid_b) % self._mid_p

    def media_code(self, mid: int) -> int:
        return ((mid - self._mid_b) * self._mid_a_inv) % self._mid_p

    def media_url(self, code: int) -> str:
        return f"http://{WWW}/media/{self.media_id(code)}/download"

    # Media codes: low 3 bits say what the id stands for.
    _MC_RESOURCE, _MC_IMAGE, _MC_VIDEO, _MC_BLOG_IMAGE = 0, 1, 2, 3

    def image_url(self, kind: str, n: int) -> str:
        tag = self._MC_IMAGE if kind == "news" else self._MC_BLOG_IMAGE
        if (seeded.chance(self.profile.extensionless_share, self.seed, "img-style", kind, n)
                and n * 8 + tag < self._mid_p):  # items added after epoch 0 may not fit the media ids
            return self.media_url(n * 8 + tag)
        return f"http://{WWW}/sites/default/files/images/{kind}-{n}.png"

    def video_url(self, e: int) -> str:
        if seeded.chance(self.profile.extensionless_share, self.seed, "video-style", e):
            return self.media_url(e * 8 + self._MC_VIDEO)
        return f"http://{WWW}/sites/default/files/video/event-{e}.mp4"

    # ------------------------------------------------------------------ navigation (used by the chromes)
    def menu(self) -> list[tuple[str, str, list[tuple[str, str]]]]:
        return pages.main_menu(self)

    def footer_links(self) -> list[tuple[str, str]]:
        return pages.footer_links(self)

    def social_links(self) -> list[tuple[str, str]]:
        return [("http://twitter.example/nso_stats", "Twitter"), (f"http://{OFFSITE_HOSTS[0]}/", "Partner portal")]

    def language_links(self) -> list[tuple[str, str]]:
        return [(f"http://{WWW}/fr/", "Français"), (f"http://{WWW}/de/", "Deutsch")]

    # ------------------------------------------------------------------ resources
    @functools.lru_cache(maxsize=65536)  # noqa: B019 - a site lives as long as its server; the cache is bounded
    def resources(self, did: int) -> tuple[Resource, ...]:
        p, seed = self.profile, self.seed
        code = self.code(did)
        n = seeded.randint(*p.resources_per_dataset, seed, "n-res", did)
        out = []
        for r in range(min(n, 8)):
            fmt = seeded.weighted(p.formats, seed, "fmt", did, r)
            ext = "xml" if fmt == "sdmx" else fmt
            filename = f"{code.lower()}_{r + 1}.{ext}"
            octet = p.octet_stream_share * (3 if fmt == "xls" else 1)  # legacy Excel is often mislabelled
            style_draw = seeded.unit(seed, "res-style", did, r)
            if style_draw < octet:
                url = f"http://{DATA}/dataset/{code.lower()}/resource/{r + 1}/download"
                mime = "application/octet-stream"
            elif style_draw < octet + p.extensionless_share and (did * 8 + r) * 8 < self._mid_p:
                url = self.media_url((did * 8 + r) * 8 + self._MC_RESOURCE)
                mime = files.MIME[fmt]
            else:
                url = f"http://{DATA}/files/{did}/{filename}"
                mime = files.MIME[fmt]
            out.append(Resource(url, fmt, mime, filename, ("ds", did, r), f"{code}-{r + 1}"))
        return tuple(out)

    def publication_files(self, pid: int) -> tuple[Resource, ...]:
        year = 2015 + pid % 10
        stem = f"{pid}-{_slug(self.news_title('publications', pid))[:32].strip('-')}"
        base = f"http://{PUB}/sites/default/files/{year}/{stem}"
        code = f"PUB{pid:05d}"
        out = [Resource(base + ".pdf", "pdf", files.MIME["pdf"], stem + ".pdf", ("pub", pid, 0), code)]
        if seeded.chance(0.5, self.seed, "pub-annex", pid):
            out.append(Resource(base + "-tables.xlsx", "xlsx", files.MIME["xlsx"], stem + "-tables.xlsx",
                                ("pub", pid, 1), code + "-T"))
        if seeded.chance(0.15, self.seed, "pub-zip", pid):
            out.append(Resource(base + "-data.zip", "zip", files.MIME["zip"], stem + "-data.zip",
                                ("pub", pid, 2), code + "-D"))
        return tuple(out)

    def table_of(self, res: Resource) -> files.Table:
        version = self.file_state(res).version
        key = res.table_key if not version else (*res.table_key, "v", version)
        return files.make_table(self.seed, key, self.profile.table_rows, res.code)

    def resource_body(self, res: Resource) -> bytes:
        return files.encode(res.fmt, self.table_of(res), res.filename.rsplit(".", 1)[0])

    # ------------------------------------------------------------------ routing
    def route(self, url: str) -> Route:
        """Which handler serves ``url`` and what kind of URL it is, without building any body."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        path = parts.path or "/"
        query = parts.query
        if host == WWW:
            r = self._route_www(path, query)
        elif host == DATA:
            r = self._route_data(path, query)
        elif host == PUB:
            r = self._route_pub(path, query)
        else:
            return Route("out-of-scope", "offsite", (host, path))
        if path == "/robots.txt":
            return Route("robots", "robots", (host,))
        if path.startswith("/moved/") and not query:
            r = self._moved_route(url, epochs.parse_moved(path))
        if r is not None and r.handler == "resource":
            r = self._timed_route(url, r.args[0])
        return r or Route("error", "error", (404,))

    def _timed_route(self, url: str, res: Resource) -> Route:
        """A file's route at this epoch: served, gone (404/410), or moved away (301)."""
        state = self.file_state(res)
        if state.gone:
            return Route("error", "error", (state.gone,))
        if state.moved and url == res.url:
            return Route("redirect", "moved", (epochs.moved_url(res, state.moved),))
        return Route("target", "resource", (res,))

    def _moved_route(self, url: str, parsed: tuple[int, str, int, int, str] | None) -> Route | None:
        if parsed is None:
            return None
        _, kind, owner, index, _ = parsed
        if kind == "ds":
            candidates = self.resources(owner) if self.dataset_exists(owner) else ()
        else:
            candidates = self.publication_files(owner) if owner < self.listing_size("publications") else ()
        for res in candidates:
            if res.table_key[2] == index and self.live_url(res) == url:
                return Route("target", "resource", (res,))
        return None

    def _page_arg(self, query: str, pages_total: int) -> int | None:
        if not query:
            return 1
        q = dict(parse_qsl(query))
        if set(q) != {"page"} or not q["page"].isdigit():
            return None
        p = int(q["page"])
        return p if 2 <= p <= pages_total else None

    def _route_www(self, path: str, query: str) -> Route | None:
        segs = [s for s in path.split("/") if s]
        if not segs:
            return Route("html", "home", ()) if not query else None
        head = segs[0]
        if self.profile.hostile:
            from sbcrawl_dev.sim import hostile

            r = hostile.route(self, path, query)
            if r is not None:
                return r
        if head == "themes" and len(segs) in (2, 3):
            t = self._theme_by_slug.get(segs[1])
            if t is None:
                return None
            if len(segs) == 2:
                return Route("html", "theme", (t,))
            sec = self._section_by_slug.get((t, segs[2]))
            return None if sec is None else Route("html", "section", (sec,))
        if head in ("news", "blog", "events"):
            if len(segs) == 1:
                page = self._page_arg(query, self.listing_pages(head))
                return None if page is None else Route("html", "listing", (head, page))
            if head == "news" and segs[1:] == ["rss.xml"]:
                return Route("target", "rss", ())
            if head == "events" and segs[1:] == ["calendar"]:
                m = re.fullmatch(r"month=(\d{4})-(\d{2})", query)
                if m and 1 <= int(m.group(2)) <= 12:
                    return Route("trap", "calendar", (int(m.group(1)), int(m.group(2))))
                return None
            return self._item_route(head, segs, "item")
        if head == "search":
            return Route("trap", "search", (query,))
        if head == "print" and len(segs) == 3 and segs[1] == "news" and segs[2].isdigit():
            n = int(segs[2])
            return Route("html", "print", (n,)) if n < self.listing_size("news") else None
        if segs == ["user", "login"]:
            return Route("html", "login", ())
        if head in ("datasets", "stats") and len(segs) == 2 and segs[1].isdigit():
            did = int(segs[1])
            if did >= self.total_datasets:
                return None
            return Route("redirect", "legacy" if head == "datasets" else "short", (did,))
        if head in ("fr", "de") and len(segs) == 1:
            return Route("redirect", "language", ())
        if head == "go" and len(segs) == 2 and segs[1] in _PARTNERS:
            return Route("redirect", "partner", (segs[1],))
        if head == "media" and len(segs) == 3 and segs[1].isdigit() and segs[2] == "download":
            return self._media_route(int(segs[1]))
        if segs[:3] == ["sites", "default", "files"] and len(segs) == 5:
            m = re.fullmatch(r"(news|blog)-(\d+)\.png", segs[4])
            if segs[3] == "images" and m and int(m.group(2)) < self.listing_size(m.group(1)):
                return Route("media", "image", ())
            m = re.fullmatch(r"event-(\d+)\.mp4", segs[4])
            if segs[3] == "video" and m and int(m.group(1)) < self.profile.events:
                return Route("media", "video", (int(m.group(1)),))
            return None
        if len(segs) == 1 and not query and any(segs[0] == s for s, _ in _STATIC):
            return Route("html", "static", (segs[0],))
        return None

    def _item_route(self, kind: str, segs: list[str], handler: str) -> Route | None:
        if len(segs) != 2:
            return None
        m = _NUM_TAIL.search(segs[1])
        if not m:
            return None
        n = int(m.group(1))
        if n >= self.listing_size(kind) or self.item_url(kind, n).rsplit("/", 1)[1] != segs[1]:
            return None
        return Route("html", handler, (kind, n))

    def _media_route(self, mid: int) -> Route | None:
        if mid >= self._mid_p:
            return None
        code = self.media_code(mid)
        tag, n = code % 8, code // 8
        if tag == self._MC_RESOURCE:
            did, r = divmod(n, 8)
            if self.dataset_exists(did) and r < len(self.resources(did)):
                res = self.resources(did)[r]
                if res.url == self.media_url(code):
                    return Route("target", "resource", (res,))
            return None
        kind = {self._MC_IMAGE: "news", self._MC_BLOG_IMAGE: "blog"}.get(tag)
        if kind and n < self.listing_size(kind) and self.image_url(kind, n) == self.media_url(code):
            return Route("media", "image", ())
        if tag == self._MC_VIDEO and n < self.profile.events and self.video_url(n) == self.media_url(code):
            return Route("media", "video", (n,))
        return None

    def _route_data(self, path: str, query: str) -> Route | None:
        segs = [s for s in path.split("/") if s]
        if not segs:
            return Route("html", "data_home", ()) if not query else None
        if segs == ["catalogue", "filter"]:
            return Route("trap", "filter", (query,))
        if segs[0] == "catalogue" and len(segs) == 3:
            t = self._theme_by_slug.get(segs[1])
            sec = self._section_by_slug.get((t, segs[2])) if t is not None else None
            if sec is None or not self.n_datasets[sec]:
                return None
            page = self._page_arg(query, self.catalogue_pages(sec))
            return None if page is None else Route("html", "catalogue", (sec, page))
        if segs[0] == "dataset" and len(segs) >= 2 and not query:
            did = self._did_from_code(segs[1])
            if did is None:
                return None
            if len(segs) == 2:
                return Route("html", "dataset", (did,))
            if segs[2:] == ["preview"] and pages.has_broken_preview(self, did):
                return Route("error", "error", (500,))
            if len(segs) == 5 and segs[2] == "resource" and segs[4] == "download" and segs[3].isdigit():
                res = self._resource(did, int(segs[3]) - 1)
                if res is not None and res.url == f"http://{DATA}{path}":
                    return Route("target", "resource", (res,))
            return None
        if segs[0] == "files" and len(segs) == 3 and segs[1].isdigit():
            did = int(segs[1])
            if self.dataset_exists(did):
                for res in self.resources(did):
                    if res.url == f"http://{DATA}{path}":
                        return Route("target", "resource", (res,))
        return None

    def _did_from_code(self, code: str) -> int | None:
        m = re.fullmatch(r"[a-z]{3}(\d{5})", code)
        if not m:
            return None
        did = int(m.group(1))
        return did if self.dataset_exists(did) and self.code(did).lower() == code else None

    def _resource(self, did: int, r: int) -> Resource | None:
        res = self.resources(did)
        return res[r] if 0 <= r < len(res) else None

    def _route_pub(self, path: str, query: str) -> Route | None:
        segs = [s for s in path.split("/") if s]
        if segs == ["publications"]:
            page = self._page_arg(query, self.listing_pages("publications"))
            return None if page is None else Route("html", "listing", ("publications", page))
        if segs[:1] == ["publications"]:
            return self._item_route("publications", segs, "publication")
        if segs[:3] == ["sites", "default", "files"] and len(segs) == 5:
            m = re.match(r"(\d+)-", segs[4])
            if m and int(m.group(1)) < self.listing_size("publications"):
                for res in self.publication_files(int(m.group(1))):
                    if res.url == f"http://{PUB}{path}":
                        return Route("target", "resource", (res,))
        return None

    # ------------------------------------------------------------------ public API
    def kind(self, url: str) -> str:
        """One of KINDS: what the server would answer for ``url`` (targets by served MIME type)."""
        return self.route(url).kind

    def in_scope(self, url: str) -> bool:
        host = (urlsplit(url).hostname or "").lower()
        return host == DOMAIN or host.endswith("." + DOMAIN)

    def disallowed(self, url: str) -> bool:
        """Whether robots.txt of the URL's host forbids it to every user agent."""
        parts = urlsplit(url)
        rules = pages.ROBOTS_DISALLOW.get((parts.hostname or "").lower(), ())
        if self.profile.hostile:
            from sbcrawl_dev.sim import hostile

            rules = (*rules, *hostile.DISALLOW.get((parts.hostname or "").lower(), ()))
        return any((parts.path or "/").startswith(r) for r in rules)

    def location(self, url: str) -> str | None:
        """Where a redirect URL points (None for any other kind)."""
        resp = self.response("HEAD", url)
        return resp.headers.get("Location") if 300 <= resp.status < 400 else None

    def page(self, url: str) -> Html | None:
        """The rendered HTML page behind ``url`` with the links it holds (None for non-HTML URLs)."""
        route = self.route(url)
        if route.kind not in ("html", "trap") or route.handler.startswith("hostile"):
            return None
        return pages.render(self, url, route)

    def links(self, url: str) -> list[str]:
        """Absolute URLs of the a/area/iframe links of the page at ``url`` (empty if not a page)."""
        route = self.route(url)
        if route.kind not in ("html", "trap"):
            return []
        if self.profile.hostile and route.handler.startswith("hostile"):
            from sbcrawl_dev.sim import hostile

            return hostile.links(self, route)
        built = pages.render(self, url, route)
        return [] if built is None else built.links

    def body(self, url: str) -> bytes:
        """The full body ``url`` serves on GET (avoid on the hostile profile's endless endpoints)."""
        return b"".join(self.response("GET", url, count=False).body)

    def table(self, url: str) -> files.Table | None:
        """The statistics table a target URL holds, or None if it is not a generated table file."""
        route = self.route(url)
        if route.handler == "resource":
            return self.table_of(route.args[0])
        if self.profile.hostile and route.handler.startswith("hostile"):
            from sbcrawl_dev.sim import hostile

            return hostile.table(self, route)
        return None

    def response(self, method: str, url: str, count: bool = True,
                 conditions: Mapping[str, str] | None = None) -> Response:
        """The response to ``method`` (GET or HEAD) on the absolute ``url``.

        ``count=False`` leaves the per-URL state (the 429 storm counters) untouched; ``conditions`` are the
        request's If-None-Match / If-Modified-Since headers (a match gets 304 with no body).
        """
        route = self.route(url)
        resp = self._respond(route, url, count)
        if conditions and resp.status == 200 and epochs.not_modified(resp.headers, conditions):
            kept = {k: v for k, v in resp.headers.items() if k in ("ETag", "Last-Modified")}
            return Response(304, {**kept, "Content-Length": "0"}, [])
        if method.upper() == "HEAD":
            return Response(resp.status, resp.headers, [])
        return resp

    def hits(self, url: str, count: bool) -> int:
        """How many times ``url`` was requested before (thread-safe; for stateful hostile endpoints)."""
        with self._state_lock:
            n = self._hits.get(url, 0)
            if count:
                self._hits[url] = n + 1
            return n

    def reset_state(self) -> None:
        with self._state_lock:
            self._hits.clear()

    def _respond(self, route: Route, url: str, count: bool) -> Response:
        h = route.handler
        if h == "error":
            return _error(route.args[0])
        if h == "robots":
            text = pages.robots_txt(self, route.args[0]).encode()
            return Response(200, {"Content-Type": "text/plain; charset=utf-8",
                                  "Content-Length": str(len(text))}, [text])
        if h == "resource":
            res: Resource = route.args[0]
            body = self.resource_body(res)
            headers = {"Content-Type": res.mime, "Content-Length": str(len(body)),
                       **epochs.validator_headers(self, res.table_key, self.file_state(res))}
            if res.mime == "application/octet-stream" or "/media/" in res.url:
                headers["Content-Disposition"] = f'attachment; filename="{res.filename}"'
            return Response(200, headers, [body])
        if h == "rss":
            body = pages.rss(self).encode()
            return Response(200, {"Content-Type": "application/rss+xml; charset=utf-8",
                                  "Content-Length": str(len(body))}, [body])
        if h == "image":
            return Response(200, {"Content-Type": "image/png", "Content-Length": str(len(files.PNG_1PX))},
                            [files.PNG_1PX])
        if h == "video":
            size = 20_000 + seeded.randint(0, 80_000, self.seed, "video-size", route.args[0])
            return Response(200, {"Content-Type": "video/mp4", "Content-Length": str(size)},
                            [files.mp4_bytes(size)])
        if h == "legacy":
            return _redirect(301, self.dataset_url(route.args[0]))
        if h == "moved":
            return _redirect(301, route.args[0])
        if h == "short":
            return _redirect(302, self.legacy_dataset_url(route.args[0]))
        if h == "language":
            return _redirect(302, f"http://{WWW}/")
        if h == "partner":
            return _redirect(302, f"http://{OFFSITE_HOSTS[0]}/partners/{route.args[0]}")
        if h == "offsite":
            return _html_response(f"<!DOCTYPE html><html><body><h1>{route.args[0]}</h1>"
                                  "<p>Another organisation's website.</p></body></html>\n")
        if h.startswith("hostile"):
            from sbcrawl_dev.sim import hostile

            return hostile.respond(self, route, url, count)
        built = pages.render(self, url, route)
        if built is None:
            return _error(404)
        resp = _html_response(built.html())
        resp.headers["ETag"] = epochs.html_etag(next(iter(resp.body)))
        return resp

    # ------------------------------------------------------------------ ground truth
    def _ground_truth(self) -> _Truth:
        with self._truth_lock:
            if self._truth is None:
                self._truth = _explore(self)
            return self._truth

    @property
    def has_ground_truth(self) -> bool:
        """Whether the ground-truth walk has already been done (it is lazy)."""
        return self._truth is not None

    @property
    def url_count(self) -> int:
        """Distinct in-scope URLs reachable from the start page, robots-allowed, not traps, not errors."""
        return self._ground_truth().url_count

    @property
    def targets(self) -> Mapping[str, tuple[str, int]]:
        """Reachable target URLs → (MIME type, size in bytes); sizes are computed on first access."""
        return self._ground_truth().targets

    def depth(self, url: str) -> int | None:
        """Shortest number of link clicks from the start page (redirect hops are free), if reachable."""
        return self._ground_truth().depth.get(url)

    def changes(self, since: int) -> dict[str, str]:
        """Reachable target URL → new / changed / moved / unchanged / gone since epoch ``since``."""
        return epochs.changes(self, since)

    def stats(self) -> dict[str, object]:
        """Counts by kind of the reachable URLs, and target depth statistics."""
        truth = self._ground_truth()
        depths = [truth.depth[u] for u in truth.targets]
        return {
            "profile": self.profile.name,
            "seed": self.seed,
            "url_count": truth.url_count,
            "by_kind": dict(truth.by_kind),
            "targets": len(truth.targets),
            "html_pages_linking_targets": truth.html_to_target,
            "target_depth_mean": sum(depths) / len(depths) if depths else 0.0,
            "target_depth_max": max(depths, default=0),
        }


class _Targets(Mapping[str, tuple[str, int]]):
    """Target URL → (mime, size), sizes generated lazily: iterating URLs never builds a file."""

    def __init__(self, site: Site, urls: list[str]) -> None:
        self._site = site
        self._urls = urls
        self._index = set(urls)
        self._cache: dict[str, tuple[str, int]] = {}

    def __getitem__(self, url: str) -> tuple[str, int]:
        if url not in self._index:
            raise KeyError(url)
        if url not in self._cache:
            resp = self._site.response("GET", url, count=False)
            mime = resp.headers.get("Content-Type", "").split(";")[0]
            self._cache[url] = (mime, int(resp.headers.get("Content-Length", "0")))
        return self._cache[url]

    def __iter__(self) -> Iterator[str]:
        return iter(self._urls)

    def __len__(self) -> int:
        return len(self._urls)

    def __contains__(self, url: object) -> bool:
        return url in self._index


@dataclass
class _Truth:
    url_count: int
    targets: _Targets
    depth: dict[str, int]
    by_kind: dict[str, int]
    html_to_target: int


def _explore(site: Site) -> _Truth:
    """Breadth-first walk from the start page over rendered links, as a perfect polite crawler would."""
    depth = {site.start_url: 0}
    queue = deque([site.start_url])
    # link → its kind if a polite, scope-keeping, trap-avoiding crawler would follow it, else "".
    # Navigation repeats the same links on every page, so each distinct link is judged once.
    verdict: dict[str, str] = {site.start_url: site.kind(site.start_url)}

    def judge(link: str) -> str:
        v = verdict.get(link)
        if v is None:
            ok = link.startswith("http://") and site.in_scope(link) and not site.disallowed(link)
            v = site.kind(link) if ok else ""
            verdict[link] = "" if v == "trap" else v
        return verdict[link]

    by_kind: dict[str, int] = {}
    targets: list[str] = []
    html_to_target = 0
    while queue:
        url = queue.popleft()
        d = depth[url]
        kind = verdict[url]
        by_kind[kind] = by_kind.get(kind, 0) + 1
        if kind == "target":
            targets.append(url)
        elif kind == "redirect":
            loc = site.location(url)
            if loc and judge(loc) and loc not in depth:
                depth[loc] = d  # following a redirect is not a click
                queue.appendleft(loc)
        elif kind == "html":
            links_target = False
            for link in site.links(url):
                k = judge(link)
                if not k:
                    continue
                links_target = links_target or k == "target"
                if link not in depth:
                    depth[link] = d + 1
                    queue.append(link)
            html_to_target += links_target
    count = sum(n for k, n in by_kind.items() if k in COUNTED_KINDS)
    return _Truth(count, _Targets(site, targets), depth, by_kind, html_to_target)


def build_site(profile: str | Profile = "tiny", seed: int = 0, crawl_delay: float | None = None,
               epoch: int = 0) -> Site:
    """The site of ``profile`` (a registered name, ``random-<seed>``, or a Profile) and ``seed``, as it is
    ``epoch`` periods after its first state."""
    return Site(get_profile(profile), seed, crawl_delay, epoch)
