"""Site profiles: the structure knobs of a synthetic statistics portal, registered by name.

A profile says *how many* of each kind of page a site has and *how they are linked*; the seed then decides
the details (which sections hold data, titles, numbers, which links are broken...).  The named profiles
mirror the spread of the paper's Table 1: shallow sites dense in targets, sites whose files hide at the end
of long "next" chains, big portals where few sections hold data, and a hostile one.
``random-<seed>`` draws every knob from the seed, for measuring on sites nobody tuned a crawler for.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sbcrawl_dev.sim import seeded

# Target formats and their relative frequency on the dataset pages of a typical statistics office.
DEFAULT_FORMATS: tuple[tuple[str, float], ...] = (
    ("csv", 0.30),
    ("xlsx", 0.22),
    ("xls", 0.08),
    ("ods", 0.06),
    ("pdf", 0.14),
    ("zip", 0.08),
    ("json", 0.06),
    ("sdmx", 0.06),
)


@dataclass(frozen=True)
class Profile:
    name: str
    # Information architecture: themes (top menu) × sections (sub-menu).
    themes: int = 4
    sections_per_theme: int = 3
    # Share of sections that hold a data catalogue at all (portals: few do).
    data_section_share: float = 1.0
    datasets_per_section: tuple[int, int] = (4, 10)
    resources_per_dataset: tuple[int, int] = (1, 3)
    catalogue_page_size: int = 10
    # Page numbers shown around the current one in pagers; 0 = only "previous"/"next" (deep chains).
    pager_window: int = 2
    # Share of catalogue items that also carry direct format links (e.g. "CSV" badges).
    catalogue_badge_share: float = 0.3
    publications: int = 20
    publication_page_size: int = 10
    news: int = 40
    blog: int = 10
    events: int = 10
    listing_page_size: int = 10
    # Share of news/blog articles whose body text links to a dataset page / straight to a file.
    article_dataset_link_share: float = 0.25
    article_target_link_share: float = 0.08
    article_image_share: float = 0.5
    event_video_share: float = 0.4
    # Featured datasets on the home and section pages: shortcuts that flatten the depth of a few targets.
    featured: int = 3
    # Dataset pages link their catalogue neighbours (± this many) and publications link one dataset:
    # cross links that shorten paths, as on real sites; deep sites have few.
    related_span: int = 2
    publication_dataset_share: float = 1.0
    # Resource URL styles: share with no extension (/media/9961/download), share served as octet-stream.
    extensionless_share: float = 0.25
    octet_stream_share: float = 0.1
    formats: tuple[tuple[str, float], ...] = DEFAULT_FORMATS
    table_rows: tuple[int, int] = (20, 60)
    # Errors and redirects sprinkled in article bodies and dataset pages.
    broken_link_share: float = 0.08
    server_error_share: float = 0.05
    redirect_share: float = 0.15
    # Header navigation: a mega-menu repeats every section on every page.
    mega_menu: bool = True
    sidebar_items: int = 5
    # Drupal-like themes put unique ids on blocks and nodes (div#node-48213).
    unique_ids: bool = False
    calendar_trap: bool = True
    facet_trap: bool = True
    crawl_delay: float = 0.0
    hostile: bool = False
    # Time (see epochs.py): per epoch, new datasets as a share of those of epoch 0, new news and
    # publications as a share of theirs; the chance that a file is updated, removed or moved; the share of
    # files served with a validator (ETag and/or Last-Modified).
    new_dataset_share: float = 0.06
    new_item_share: float = 0.05
    update_share: float = 0.08
    remove_share: float = 0.02
    move_share: float = 0.02
    validator_share: float = 0.85
    # XML sitemaps (sitemap_docs.py): the share of the www host's HTML pages listed (0: no sitemap), whether
    # robots.txt declares it (else only the well-known /sitemap.xml), URLs per child sitemap of the index,
    # the share of children served gzipped, and the share of entries whose lastmod missed the last change.
    sitemap_share: float = 0.0
    sitemap_declared: bool = True
    sitemap_file_urls: int = 300
    sitemap_gzip_share: float = 0.5
    sitemap_stale_share: float = 0.0
    # Guidance for tests and reports, not a constraint: the expected order of magnitude of url_count.
    expected_urls: int = 0

    def with_(self, **changes: object) -> Profile:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


PROFILES: dict[str, Profile] = {}


def register(profile: Profile) -> Profile:
    PROFILES[profile.name] = profile
    return profile


register(
    Profile(
        name="tiny",
        themes=2,
        sections_per_theme=2,
        datasets_per_section=(3, 6),
        resources_per_dataset=(1, 2),
        catalogue_page_size=3,
        publications=6,
        publication_page_size=4,
        news=18,
        blog=4,
        events=4,
        listing_page_size=6,
        featured=2,
        sidebar_items=3,
        expected_urls=150,
    )
)

register(
    Profile(
        name="small",
        themes=5,
        sections_per_theme=4,
        datasets_per_section=(12, 30),
        resources_per_dataset=(1, 4),
        catalogue_page_size=12,
        publications=120,
        publication_page_size=12,
        news=180,
        blog=40,
        events=40,
        listing_page_size=12,
        catalogue_badge_share=0.4,
        expected_urls=2000,
    )
)

register(
    Profile(
        name="deep",
        themes=3,
        sections_per_theme=3,
        datasets_per_section=(70, 150),
        resources_per_dataset=(1, 3),
        catalogue_page_size=2,
        pager_window=0,
        catalogue_badge_share=0.0,
        publications=150,
        publication_page_size=3,
        news=450,
        blog=60,
        events=40,
        listing_page_size=5,
        article_dataset_link_share=0.01,
        article_target_link_share=0.0,
        featured=0,
        related_span=1,
        publication_dataset_share=0.03,
        mega_menu=False,
        expected_urls=5000,
    )
)

# The same sites with a sitemap: "small" declares an index in robots.txt listing 60 % of its pages with exact
# lastmod; "deep" has an undeclared /sitemap.xml index of gzipped children listing 50 %, a fifth stale.
register(PROFILES["small"].with_(name="small-sitemap", sitemap_share=0.6, sitemap_gzip_share=0.3))
register(PROFILES["deep"].with_(name="deep-sitemap", sitemap_share=0.5, sitemap_declared=False,
                                sitemap_gzip_share=1.0, sitemap_file_urls=400, sitemap_stale_share=0.2))

register(
    Profile(
        name="portal",
        themes=14,
        sections_per_theme=6,
        data_section_share=0.2,
        datasets_per_section=(20, 60),
        resources_per_dataset=(1, 3),
        catalogue_page_size=10,
        publications=800,
        publication_page_size=15,
        news=9000,
        blog=2500,
        events=1500,
        listing_page_size=15,
        article_dataset_link_share=0.05,
        article_target_link_share=0.02,
        article_image_share=0.2,
        unique_ids=True,
        expected_urls=20000,
    )
)

register(
    Profile(
        name="large",
        themes=16,
        sections_per_theme=8,
        data_section_share=0.5,
        datasets_per_section=(150, 450),
        resources_per_dataset=(1, 3),
        catalogue_page_size=20,
        publications=6000,
        publication_page_size=20,
        news=30000,
        blog=6000,
        events=4000,
        listing_page_size=20,
        article_dataset_link_share=0.1,
        expected_urls=150000,
    )
)

register(
    Profile(
        name="hostile",
        themes=3,
        sections_per_theme=2,
        datasets_per_section=(4, 8),
        resources_per_dataset=(1, 3),
        catalogue_page_size=5,
        publications=10,
        publication_page_size=5,
        news=30,
        blog=6,
        events=6,
        listing_page_size=8,
        hostile=True,
        expected_urls=250,
    )
)


def random_profile(seed: int) -> Profile:
    """A profile whose knobs are all drawn from ``seed`` (the site's own seed still varies the details)."""

    def r(lo: int, hi: int, key: str) -> int:
        return seeded.randint(lo, hi, seed, "profile", key)

    def u(lo: float, hi: float, key: str) -> float:
        return lo + (hi - lo) * seeded.unit(seed, "profile", key)

    ds_lo = r(2, 40, "ds")
    fmts = tuple((f, u(0.0, 1.0, "fmt-" + f) ** 2 + 0.01) for f, _ in DEFAULT_FORMATS)
    return Profile(
        name=f"random-{seed}",
        themes=r(2, 10, "themes"),
        sections_per_theme=r(1, 7, "sections"),
        data_section_share=u(0.15, 1.0, "data-share"),
        datasets_per_section=(ds_lo, ds_lo + r(0, 60, "ds-spread")),
        resources_per_dataset=(1, r(1, 6, "res")),
        catalogue_page_size=r(2, 25, "cat-page"),
        pager_window=r(0, 4, "pager"),
        catalogue_badge_share=u(0.0, 0.8, "badges"),
        publications=r(0, 400, "pubs"),
        publication_page_size=r(3, 20, "pub-page"),
        news=r(10, 1500, "news"),
        blog=r(0, 300, "blog"),
        events=r(0, 200, "events"),
        listing_page_size=r(4, 25, "list-page"),
        article_dataset_link_share=u(0.0, 0.4, "art-ds"),
        article_target_link_share=u(0.0, 0.15, "art-t"),
        article_image_share=u(0.0, 0.9, "img"),
        event_video_share=u(0.0, 0.8, "video"),
        featured=r(0, 6, "featured"),
        related_span=r(0, 3, "related"),
        publication_dataset_share=u(0.0, 1.0, "pub-ds"),
        extensionless_share=u(0.0, 0.9, "extless"),
        octet_stream_share=u(0.0, 0.4, "octet"),
        formats=fmts,
        broken_link_share=u(0.0, 0.2, "broken"),
        server_error_share=u(0.0, 0.1, "5xx"),
        redirect_share=u(0.0, 0.3, "redirect"),
        mega_menu=seeded.chance(0.5, seed, "profile", "mega"),
        sidebar_items=r(0, 10, "sidebar"),
        unique_ids=seeded.chance(0.4, seed, "profile", "ids"),
    )


def get_profile(name: str | Profile) -> Profile:
    """The profile registered as ``name``, or the parametric ``random-<seed>`` one."""
    if isinstance(name, Profile):
        return name
    if name in PROFILES:
        return PROFILES[name]
    if name.startswith("random-"):
        try:
            return random_profile(int(name.removeprefix("random-")))
        except ValueError:
            pass
    known = ", ".join([*PROFILES, "random-<seed>"])
    raise KeyError(f"unknown site profile {name!r}; known: {known}")
