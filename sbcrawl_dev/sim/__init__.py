"""Synthetic statistics websites and a local HTTP server for them: tests, demos and the crawl benchmark.

A site is a deterministic function of ``(profile, seed)``: the same pair always yields the same pages,
links, files and numbers.  Pages are rendered on request from their URL, so even the ``large`` profile
(≥ 100 k URLs) builds in milliseconds.

Sites look like real statistics portals (see the paper's Sec. 2.2 and Table 1): three in-scope hosts
(``www.stats.example``, ``data.stats.example`` for the data catalogue, ``pub.stats.example`` for
publications) linking to out-of-scope ones (``www.other.example``, ``twitter.example``); header menus,
breadcrumbs, sidebars and footers on every page; themes and sections; paginated catalogues and listings;
dataset and publication pages whose files sit in ``div.downloads ul li a`` and sometimes in running text;
news, blog and event pages (most of the site) with no target; CSV/XLSX/XLS/ODS/PDF/ZIP/JSON/SDMX targets,
some behind extensionless ``/media/<id>/download`` URLs or served as ``application/octet-stream`` with a
``Content-Disposition``; 404s, 500s, redirects and redirect chains, a redirect leaving the scope; images and
videos with and without extensions; robots.txt with Disallow rules and ``Crawl-delay``; calendar and
faceted-search traps (``/search`` disallowed, ``/events/calendar`` and ``data…/catalogue/filter`` not).

API::

    from sbcrawl_dev.sim import build_site, SimServer, PROFILES, serve_forever

    site = build_site("small", seed=0)       # profile name, "random-<seed>", or a Profile
    site.start_url                           # "http://www.stats.example/"
    site.kind(url)                           # "html" | "target" | "error" | "redirect" | "media" | "trap"
                                             #   | "out-of-scope" | "robots"   (targets by served MIME type)
    site.response(method, url)               # Response(status, headers: dict, body: iterable of bytes)
    site.body(url) / site.table(url)         # a target's bytes / the files.Table it holds (for end-to-end checks)
    site.links(url)                          # absolute URLs of the page's a/area/iframe links
    site.disallowed(url), site.in_scope(url), site.location(url)
    # Ground truth (lazy breadth-first walk over the rendered links; ~1 s for small, longer for large):
    site.targets                             # Mapping target URL -> (mime, size)
    site.url_count                           # reachable in-scope URLs that are html/target/redirect/media,
                                             #   robots-allowed, not traps (the "% of the site" denominator)
    site.depth(url)                          # clicks from the start page (redirect hops are free)
    site.stats()                             # counts by kind, target depth mean/max, HTML pages linking targets

    with SimServer(site) as srv:             # 127.0.0.1, port 0 = any free port
        srv.proxy_url                        # set HTTP_PROXY to this, or connect with a Host header
        srv.log                              # [LogEntry(method, url, status, bytes_sent, time)]
        srv.summary(); srv.reset_log()

    serve_forever("small", seed=0, port=8765)   # for ``python -m sbcrawl_dev serve-sim PROFILE``

    # Time: the site N periods later (new datasets and news, files updated / removed / moved; validators
    # on files and pages, 304 to conditional requests) and the truth between two epochs:
    later = build_site("small", seed=0, epoch=1)
    later.changes(0)                         # target URL -> new | changed | moved | unchanged | gone

Profiles (``PROFILES``; ``random-<seed>`` draws all knobs from the seed): ``tiny``, ``small``, ``deep``,
``portal``, ``large``, ``hostile`` — see ``profiles.py`` and, for the hostile endpoints, ``hostile.py``.

Modules, each importing only those before it: ``seeded`` (keyed hashing), ``profiles`` (knobs), ``files``
(target bodies), ``render`` (HTML builder and page chromes), ``web`` (host names, kinds of URL, routes and
responses), ``epochs`` (time: what each period adds, updates, removes, moves), ``layout`` (structure, URLs
and files of a site), ``hostile`` (hostile endpoints), ``pages`` (page types, menus, robots.txt), ``site``
(routing, responses, ground truth), ``server`` (HTTP server and request log), ``multisite`` (several sites
behind one proxy).
"""

from sbcrawl_dev.sim.files import TARGET_MIMES, Table
from sbcrawl_dev.sim.profiles import PROFILES, Profile, get_profile
from sbcrawl_dev.sim.server import LogEntry, SimServer, serve_forever
from sbcrawl_dev.sim.site import Site, build_site
from sbcrawl_dev.sim.web import KINDS, Response

__all__ = [
    "KINDS",
    "PROFILES",
    "TARGET_MIMES",
    "LogEntry",
    "Profile",
    "Response",
    "SimServer",
    "Site",
    "Table",
    "build_site",
    "get_profile",
    "serve_forever",
]
