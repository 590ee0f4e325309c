"""A simulated site's layout at one epoch: themes, sections, datasets and publications, their URLs and files.

Nothing per page is stored.  Building a layout computes only the information architecture (themes, sections,
how many datasets each section holds: O(sections)); titles, URLs and files are seeded functions of their ids,
which is what lets the ``large`` profile build instantly.  ``site.Site`` adds how the site answers: routing,
responses and the ground truth.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import re
import threading
from collections.abc import Iterable

from sbcrawl_dev.sim import epochs, files, seeded
from sbcrawl_dev.sim.profiles import Profile
from sbcrawl_dev.sim.render import Chrome, words
from sbcrawl_dev.sim.web import DATA, PUB, WWW, Resource

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
_HEADLINE_WORDS_TEXT = (
    "new figures on regional labour market growth prices census survey release households energy trade "
    "quarterly annual results show record rise fall in the for of and tourism health education housing "
    "report update revised estimates municipalities exports wages population inflation"
)
HEADLINE_WORDS = tuple(_HEADLINE_WORDS_TEXT.split())

# Media codes (/media/<id>/download): the low 3 bits say what the id stands for.
MEDIA_RESOURCE, MEDIA_IMAGE, MEDIA_VIDEO, MEDIA_BLOG_IMAGE = 0, 1, 2, 3

# Defaults of the hostile endpoints' knobs (hostile.py), which each site carries.
BOMB_BYTES = 2 * 1024**3
BUSY_COUNT = 3
DRIP_INTERVAL = 0.5
DRIP_BYTES = 300  # 150 s at the default interval


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _next_prime(n: int) -> int:
    def prime(k: int) -> bool:
        return k > 1 and all(k % d for d in range(2, int(k**0.5) + 1))

    while not prime(n):
        n += 1
    return n



class SiteLayout:
    """What a site built from ``(profile, seed)`` holds at ``epoch``, and where; and the per-URL request
    counts its stateful endpoints keep."""

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
        self.theme_by_slug = {s: t for t, s in enumerate(self.theme_slugs)}
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
        self.section_by_slug = {(t, slug): i for i, (t, _, slug) in enumerate(self.sections)}
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
        self.media_modulus = _next_prime(max(100_003, biggest))
        self._mid_a = 7919
        self._mid_a_inv = pow(self._mid_a, -1, self.media_modulus)
        self._mid_b = seeded.randint(1000, self.media_modulus - 1, seed, "mid-offset")
        self.chrome = {
            WWW: Chrome("cms", "National Statistics Office", f"http://{WWW}/", p.unique_ids, f"http://{WWW}"),
            PUB: Chrome("cms", "National Statistics Office", f"http://{WWW}/", p.unique_ids, f"http://{PUB}"),
            DATA: Chrome("catalogue", "National Statistics Office", f"http://{DATA}/", p.unique_ids,
                         f"http://{DATA}"),
        }
        # Knobs of the hostile endpoints, on the instance so that tests can make them small.
        self.bomb_bytes = BOMB_BYTES
        self.drip_interval = DRIP_INTERVAL
        self.drip_bytes = DRIP_BYTES
        self.busy_count = BUSY_COUNT
        self._state_lock = threading.Lock()
        self._hits: dict[str, int] = {}

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
        return epochs.file_state(self.profile, self.seed, self.epoch, res.table_key, self.born(res.table_key))

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
        return " ".join(words(self.seed, HEADLINE_WORDS, 5, "title", kind, n)).capitalize()

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
        return (code * self._mid_a + self._mid_b) % self.media_modulus

    def media_code(self, mid: int) -> int:
        return ((mid - self._mid_b) * self._mid_a_inv) % self.media_modulus

    def media_url(self, code: int) -> str:
        return f"http://{WWW}/media/{self.media_id(code)}/download"

    def image_url(self, kind: str, n: int) -> str:
        tag = MEDIA_IMAGE if kind == "news" else MEDIA_BLOG_IMAGE
        if (seeded.chance(self.profile.extensionless_share, self.seed, "img-style", kind, n)
                and n * 8 + tag < self.media_modulus):  # items added after epoch 0 may not fit the media ids
            return self.media_url(n * 8 + tag)
        return f"http://{WWW}/sites/default/files/images/{kind}-{n}.png"

    def video_url(self, e: int) -> str:
        if seeded.chance(self.profile.extensionless_share, self.seed, "video-style", e):
            return self.media_url(e * 8 + MEDIA_VIDEO)
        return f"http://{WWW}/sites/default/files/video/event-{e}.mp4"

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
            elif style_draw < octet + p.extensionless_share and (did * 8 + r) * 8 < self.media_modulus:
                url = self.media_url((did * 8 + r) * 8 + MEDIA_RESOURCE)
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
