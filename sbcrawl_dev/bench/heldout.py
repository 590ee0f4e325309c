"""Held-out site profiles for the shared harness: structures the development profiles do not have.

The harness's six development profiles are the ones the crawl policy was developed on; the crawler is
also judged on other sites built by the same generator. These profiles are our own guesses at such sites,
written once from the paper's per-site statistics (size, share of targets, share of pages linking to
targets, target depth) and from what real statistics sites do, and never tuned against: a policy change
that helps the development profiles but not these is suspect. They use what the development profiles
leave out: the ``rulings``, ``docs``, ``series`` and ``reports`` collections, a ``stats.`` subdomain,
footer entries, Japanese and Spanish, the ckan and joomla themes on the main host, very long
archives, targets only inline in article text, and direct file links in listing rows.

``register(sitegen)`` adds them to the harness's profile table; ``python -m sbcrawl_dev bench harness --profiles
held-out`` runs them (the harness's ``evaluate.py`` is started through :mod:`.evaluate_launcher`, which
registers them first)."""

from __future__ import annotations

from types import ModuleType

HELD_OUT = ("ho-rulings", "ho-inline", "ho-footer-hub", "ho-portal", "ho-series", "ho-small")


def register(sitegen: ModuleType) -> None:
    """Add the held-out profiles to ``sitegen.PROFILES`` (idempotent)."""
    Coll, Profile = sitegen.Coll, sitegen.Profile

    def add(name: str, **kw) -> None:
        sitegen.PROFILES.setdefault(name, Profile(name=name, **kw))

    # Like the paper's "ju": one target per decision, at the end of a prev/next archive ~80 pages deep.
    add("ho-rulings", total=12000, target_share=0.25, link_frac=0.05, theme="joomla", langs=("fr",),
        description="court whose decisions (one PDF each) sit in a long next-only archive; news beside it",
        calendar="disallowed", topics=3,
        colls=(Coll("rulings", "publication", t=0.9, fpp=1, pager="next", pp=10, related="none",
                    topics=False, translated=False),
               Coll("reports", "publication", t=0.1, fpp=2, pager="window", pp=10, latest=2),
               Coll("news", "article", fill=1.0, pager="next", pp=10, latest=5, tags=20,
                    related="random")),
        formats=(("pdf", 70), ("csv", 15), ("xlsx", 15)))
    # Like "in": a huge news site whose articles carry the files inline in their text, few do.
    add("ho-inline", total=20000, target_share=0.12, link_frac=0.02, theme="wordpress", langs=("en", "es"),
        translate=0.2, description="ministry news site; the data files are linked inline from some "
        "articles deep in a windowed archive, tag pages and a calendar around them",
        calendar="open", topics=6,
        colls=(Coll("news", "article", t=0.8, fpp=2, fill=0.95, pager="window", pp=12, latest=6,
                    tags=40, related="random"),
               Coll("docs", "publication", t=0.2, fpp=2, pager="next", pp=10, fill=0.05)))
    # Like "ok": very few pages link targets; one A-Z hub reachable only from the footer.
    add("ho-footer-hub", total=9000, target_share=0.2, link_frac=0.008, theme="dsfr", langs=("ja", "en"),
        translate=0.2, description="agency whose downloads sit on a few A-Z catalogue pages linked "
        "from the footer only; a large news site",
        calendar="open", topics=5,
        colls=(Coll("hub", "hub", t=0.85, fpp=3, pp=150, pager="full", entry="footer"),
               Coll("reports", "publication", t=0.15, fpp=1, pager="next", pp=12, fill=0.05),
               Coll("news", "article", fill=0.95, pager="next", pp=10, latest=5, tags=25,
                    related="random")))
    # Like "is": a data portal, most pages link targets; a ckan-themed main host and a stats. subdomain.
    add("ho-portal", total=15000, target_share=0.5, link_frac=0.4, theme="ckan", langs=("en",),
        subdomains=(("stats", "aspnet"),),
        description="open-data portal on the main host, a statistics tables subdomain with a category tree",
        calendar=None, topics=8,
        colls=(Coll("data", "dataset", t=0.6, fpp=3, pager="window", pp=20, tags=20, sort=True),
               Coll("tables", "table", host="stats", t=0.4, fpp=3, pager="full", pp=25, tree=(5, 4),
                    direct=True),
               Coll("news", "article", fill=1.0, pager="window", pp=10, latest=4)),
        topic_files=3)
    # Like "ed": time series under a 3-level tree with next-only listings, reports with a sort chain.
    add("ho-series", total=14000, target_share=0.15, link_frac=0.04, theme="aspnet", langs=("es",),
        description="statistics office whose series sit under a 3-level category tree with next-only "
        "listings; reports, a news site with a tag cloud and an events calendar",
        calendar="open", topics=5,
        colls=(Coll("series", "table", t=0.75, fpp=2, pager="next", pp=10, tree=(3, 3, 3), related="none",
                    topics=False),
               Coll("reports", "publication", t=0.25, fpp=2, pager="window", pp=10, sort=True, fill=0.1),
               Coll("news", "article", fill=0.9, pager="next", pp=10, latest=5, tags=30, cloud=True,
                    related="random")),
        extless=0.4, octet=0.15)
    # Like "qa"/"cl": a small site where most targets are two clicks away, in Arabic and English.
    add("ho-small", total=3500, target_share=0.5, link_frac=0.06, theme="drupal", langs=("ar", "en"),
        translate=0.5, description="small statistics authority: a table tree with full pagers and "
        "a publications list; translations double every page",
        calendar="open", topics=3,
        colls=(Coll("tables", "table", t=0.7, fpp=4, pager="full", pp=30, tree=(4,)),
               Coll("pubs", "publication", t=0.3, fpp=2, pager="window", pp=10, latest=3, fill=0.2),
               Coll("news", "article", fill=0.8, pager="window", pp=10, latest=4, tags=10)))
