"""The synthetic site as it answers: routing of a URL to a response, and the ground truth.

Any page is rendered on request from a seeded function of its URL (``pages``), over the layout of
``layout.SiteLayout``.  The ground truth (reachable URLs, targets, depths) comes from a breadth-first walk
over the very links the pages render, done lazily the first time it is asked for.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from sbcrawl_dev.sim import epochs, files, hostile, pages, seeded, sitemap_docs
from sbcrawl_dev.sim.profiles import Profile, get_profile
from sbcrawl_dev.sim.render import Html
from sbcrawl_dev.sim.structure import MEDIA_BLOG_IMAGE, MEDIA_IMAGE, MEDIA_RESOURCE, MEDIA_VIDEO, SiteLayout
from sbcrawl_dev.sim.web import (
    COUNTED_KINDS,
    DATA,
    DOMAIN,
    OFFSITE_HOSTS,
    PARTNERS,
    PUB,
    STATIC_PAGES,
    WWW,
    Resource,
    Response,
    Route,
    error_response,
    html_response,
    redirect,
)

_NUM_TAIL = re.compile(r"-(\d+)$")


class Site(SiteLayout):
    """A deterministic statistics portal built from ``(profile, seed)``; see the package docstring."""

    def __init__(self, profile: Profile, seed: int = 0, crawl_delay: float | None = None, epoch: int = 0) -> None:
        super().__init__(profile, seed, crawl_delay, epoch)
        self._truth: _Truth | None = None
        self._truth_lock = threading.Lock()

    # ------------------------------------------------------------------ navigation (used by the chromes)
    def menu(self) -> list[tuple[str, str, list[tuple[str, str]]]]:
        return pages.main_menu(self)

    def footer_links(self) -> list[tuple[str, str]]:
        return pages.footer_links(self)

    def social_links(self) -> list[tuple[str, str]]:
        return [("http://twitter.example/nso_stats", "Twitter"), (f"http://{OFFSITE_HOSTS[0]}/", "Partner portal")]

    def language_links(self) -> list[tuple[str, str]]:
        return [(f"http://{WWW}/fr/", "Français"), (f"http://{WWW}/de/", "Deutsch")]

    # ------------------------------------------------------------------ routing
    def route(self, url: str) -> Route:
        """Which handler serves ``url`` and what kind of URL it is, without building any body."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        path = parts.path or "/"
        query = parts.query
        if host == WWW:
            r = self._route_www(path, query)
            if r is None and self.profile.sitemap_share and not query:
                r = sitemap_docs.route(self, path)
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
            r = hostile.route(self, path, query)
            if r is not None:
                return r
        if head == "themes" and len(segs) in (2, 3):
            t = self.theme_by_slug.get(segs[1])
            if t is None:
                return None
            if len(segs) == 2:
                return Route("html", "theme", (t,))
            sec = self.section_by_slug.get((t, segs[2]))
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
        if head == "go" and len(segs) == 2 and segs[1] in PARTNERS:
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
        if len(segs) == 1 and not query and any(segs[0] == s for s, _ in STATIC_PAGES):
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
        if mid >= self.media_modulus:
            return None
        code = self.media_code(mid)
        tag, n = code % 8, code // 8
        if tag == MEDIA_RESOURCE:
            did, r = divmod(n, 8)
            if self.dataset_exists(did) and r < len(self.resources(did)):
                res = self.resources(did)[r]
                if res.url == self.media_url(code):
                    return Route("target", "resource", (res,))
            return None
        kind = {MEDIA_IMAGE: "news", MEDIA_BLOG_IMAGE: "blog"}.get(tag)
        if kind and n < self.listing_size(kind) and self.image_url(kind, n) == self.media_url(code):
            return Route("media", "image", ())
        if tag == MEDIA_VIDEO and n < self.profile.events and self.video_url(n) == self.media_url(code):
            return Route("media", "video", (n,))
        return None

    def _route_data(self, path: str, query: str) -> Route | None:
        segs = [s for s in path.split("/") if s]
        if not segs:
            return Route("html", "data_home", ()) if not query else None
        if segs == ["catalogue", "filter"]:
            return Route("trap", "filter", (query,))
        if segs[0] == "catalogue" and len(segs) == 3:
            t = self.theme_by_slug.get(segs[1])
            sec = self.section_by_slug.get((t, segs[2])) if t is not None else None
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

    def _respond(self, route: Route, url: str, count: bool) -> Response:
        h = route.handler
        if h == "error":
            return error_response(route.args[0])
        if h == "robots":
            text = pages.robots_txt(self, route.args[0]).encode()
            return Response(200, {"Content-Type": "text/plain; charset=utf-8",
                                  "Content-Length": str(len(text))}, [text])
        if h == "resource":
            res: Resource = route.args[0]
            body = self.resource_body(res)
            headers = {"Content-Type": res.mime, "Content-Length": str(len(body)),
                       **epochs.validator_headers(self.profile, self.seed, res.table_key, self.file_state(res))}
            if res.mime == "application/octet-stream" or "/media/" in res.url:
                headers["Content-Disposition"] = f'attachment; filename="{res.filename}"'
            return Response(200, headers, [body])
        if h == "sitemap":
            return sitemap_docs.respond(self, route.args[0])
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
            return redirect(301, self.dataset_url(route.args[0]))
        if h == "moved":
            return redirect(301, route.args[0])
        if h == "short":
            return redirect(302, self.legacy_dataset_url(route.args[0]))
        if h == "language":
            return redirect(302, f"http://{WWW}/")
        if h == "partner":
            return redirect(302, f"http://{OFFSITE_HOSTS[0]}/partners/{route.args[0]}")
        if h == "offsite":
            return html_response(f"<!DOCTYPE html><html><body><h1>{route.args[0]}</h1>"
                                  "<p>Another organisation's website.</p></body></html>\n")
        if h.startswith("hostile"):
            return hostile.respond(self, route, url, count)
        built = pages.render(self, url, route)
        if built is None:
            return error_response(404)
        resp = html_response(built.html())
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
        """Reachable target URL → one of ``epochs.STATUSES`` (new / changed / moved / unchanged / gone)
        between epoch ``since`` and the site's epoch.

        New, changed, moved and unchanged files are named by their URL now, gone ones by their URL then.
        Generated files are compared by identity and version; other targets (the RSS feed) by their bytes."""
        before = Site(self.profile, self.seed, self.crawl_delay, epoch=since)
        then = _identities(before)
        now = _identities(self)
        out: dict[str, str] = {}
        for ident, (url, version) in now.items():
            old = then.get(ident)
            if old is None:
                out[url] = "new"
            elif old[1] != version:
                out[url] = "changed"
            else:
                out[url] = "moved" if old[0] != url else "unchanged"
        for ident, (url, _) in then.items():
            if ident not in now:
                out[url] = "gone"
        return out

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


def _identities(site: Site) -> dict[object, tuple[str, object]]:
    """Reachable targets by identity (a generated file's key, or else the URL) → (URL, version)."""
    out: dict[object, tuple[str, object]] = {}
    for url in site.targets:
        route = site.route(url)
        if route.handler == "resource":
            res = route.args[0]
            out[res.table_key] = (url, site.file_state(res).version)
        else:
            out[url] = (url, hashlib.sha256(site.body(url)).hexdigest())
    return out


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
