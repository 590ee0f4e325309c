"""URL equivalences learned from the site: which of its URLs are one page (issue 19, item 2).

A site shows them as the crawl goes: a redirect (``/x`` → ``/x/``), a page whose body is one already read
(``/a//b`` and ``/a/b``, ``/x/index.html`` and ``/x/``), a ``<link rel=canonical>``. Each pair of equal
URLs is explained, when it can be, by a few *rewrites* of a URL's path (add or drop the trailing slash, drop
``index.html``, collapse duplicate slashes). A rewrite that has explained pairs on a host (and seldom
failed there) is applied to that host's new links before they are queued: a link whose rewritten form is
known already is a copy, and is not queued (its request would be a redirect to a known URL, or the same
page again); one whose form is new is asked for in that form at once, which saves the redirect's request.

A rewrite that is wrong for one URL costs one request, never a page: a rewritten URL that answers an error
gets the link's own URL asked as the next hop (``fallback``). Canonical links are trusted only where a
rewrite explains them: many sites' templates name one canonical URL (the home page) on every page.

Language copies are not the same page: on some sites they link the same files as the page read, on others
their own translated files. A page names its copies by ``hreflang`` alternates; or the site shows its
language segments by language switchers, links to a page's own URL under another language's segment
(``/1-2-1/`` links ``/en/1-2-1/``, ``/fr/x`` links ``/es/x``; ``language_pair``), and then any URL whose
path without its segment is a page read in another language is a copy of it. Copies are never skipped;
once the copies of a language read so far whose page had revealed files (``_LANGUAGE_SAMPLE`` of them) all
revealed nothing, further copies in that language are *deferred* (``defer``): crawled when nothing else is
left. Only the copies of pages that revealed files tell whether a language's copies hold files of their
own: the copy of an "about" page reveals nothing on either kind of site."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Container

import numpy as np

from airflow_sbcrawl.crawler.fetch import Response
from airflow_sbcrawl.crawler.urls import host_of

# Pairs a rewrite must explain on a host before it is applied there; and it stops being applied there once
# it has failed for more than one in ``_FAILURE_SHARE`` of the pairs it explained.
_CONFIRMATIONS = 2
_FAILURE_SHARE = 4
# An answer that says the rewritten URL is not the page (the link's own URL might be).
_FAILED = frozenset({"error", "refused"})
_INDEX_PAGES = ("index.html", "index.htm", "index.php", "index.shtml", "default.htm", "default.html",
                "default.aspx")
_SLASHES = re.compile(r"//+")
# Copies of a language read, all revealing no new file, before further ones in that language are deferred.
_LANGUAGE_SAMPLE = 4
# A path segment that names a language: ISO 639-1 code, with a region or script (``pt-br``, ``zh-hans``).
_LANGUAGE = re.compile(r"[a-z]{2}(?:[-_][a-z0-9]{2,8})?", re.IGNORECASE)


def _split(url: str) -> tuple[str, str, str]:
    """(scheme://authority, path, ?query) of a normalised URL."""
    start = url.find("/", url.find("//") + 2)
    if start < 0:
        return url, "/", ""
    mark = url.find("?", start)
    if mark < 0:
        return url[:start], url[start:], ""
    return url[:start], url[start:mark], url[mark:]


def _add_slash(path: str) -> str | None:
    if path.endswith("/") or "." in path[path.rfind("/") + 1:]:
        return None
    return path + "/"


def _drop_slash(path: str) -> str | None:
    return path[:-1] if len(path) > 1 and path.endswith("/") and not path.endswith("//") else None


def _drop_index(path: str) -> str | None:
    name = path[path.rfind("/") + 1:]
    return path[:-len(name)] if name.lower() in _INDEX_PAGES else None


def _collapse_slashes(path: str) -> str | None:
    return _SLASHES.sub("/", path) if "//" in path else None


# In the order they are applied; the name is what the outcomes and the checkpoints call a rewrite.
REWRITES: dict[str, Callable[[str], str | None]] = {
    "collapse duplicate slashes": _collapse_slashes,
    "drop index page": _drop_index,
    "add trailing slash": _add_slash,
    "drop trailing slash": _drop_slash,
}
COPY = "link to a copy of a known URL (not queued)"
REWRITTEN = "link rewritten to the form the site serves"
FALLBACK = "rewritten link failed: its own URL asked"
SAME_BODY = "page with the body of a page read before"
DEFERRED = "language copy deferred (its language's copies revealed nothing)"


def language_pair(page: str, link: str) -> tuple[str, str] | None:
    """The languages of ``page`` and ``link`` when the link is the page in another language by its URL: the
    two differ only in their first path segment, a language code in each (``/fr/x``, ``/es/x``), or by a
    language code put before the page's path (``/x/`` and ``/en/x/``: "" names the unprefixed language).
    None otherwise. A home page and its top sections (``/``, ``/gdp/``) are not taken for a pair."""
    return _language_pair(_split(page), link)


def _language_pair(page: tuple[str, str, str], link: str) -> tuple[str, str] | None:
    """``language_pair`` with the page already split (``_split``): a page's links are met against one page."""
    origin, path, query = page
    origin_link, path_link, query_link = _split(link)
    if origin != origin_link or query != query_link or path == path_link:
        return None
    a, b = path.split("/"), path_link.split("/")
    if len(a) == len(b):
        if a[2:] == b[2:] and _LANGUAGE.fullmatch(a[1]) and _LANGUAGE.fullmatch(b[1]):
            return a[1].lower(), b[1].lower()
        return None
    longer, shorter = (b, a) if len(b) > len(a) else (a, b)
    if len(longer) != len(shorter) + 1 or longer[2:] != shorter[1:] or not any(shorter[1:]):
        return None
    if not _LANGUAGE.fullmatch(longer[1]):
        return None
    return ("", longer[1].lower()) if longer is b else (longer[1].lower(), "")


class Equivalences:
    """What the site taught of its equal URLs: ``learn`` a pair (a redirect, the same body, a canonical
    link), ``preferred`` the form to queue a new link in, ``copy_of`` the known URL a link is a copy of (for
    a policy that wants to rank copies lower), ``fallback`` when a rewritten URL failed. ``outcomes`` counts
    what it did for the crawl's summary; ``alternates`` and ``page_done`` learn whether a language's copies
    are worth their requests, ``variant_of`` and ``defer`` say so of a link. Saves its own state in
    checkpoints."""

    def __init__(self, outcomes: Counter[str]) -> None:
        self.outcomes = outcomes
        self._confirmed: Counter[tuple[str, str]] = Counter()  # (host, rewrite) -> pairs explained
        self._hosts: set[str] = set()  # hosts with some rewrite confirmed
        self._failed: Counter[tuple[str, str]] = Counter()  # (host, rewrite) -> rewritten URLs that failed
        self._bodies: dict[str, str] = {}  # body hash of a page read -> its URL
        self._aliases: dict[str, str] = {}  # URL -> the known URL it is a copy of (canonical links)
        self._rewritten: dict[str, tuple[str, tuple[str, ...]]] = {}  # queued form -> (link's own URL, rewrites)
        self._variants: dict[str, tuple[str, str]] = {}  # URL -> (hreflang, the page read that named it)
        self._languages: dict[str, list[int]] = {}  # language -> [copies read, copies that revealed files]
        self._originals: dict[str, bool] = {}  # page read that named alternates -> whether it revealed files
        self._segments: set[str] = set()  # the site's language segments ("" for its unprefixed language)
        self._read: dict[str, tuple[str, bool]] = {}  # URL without language -> (first language read, files?)

    # -- learning --------------------------------------------------------------------------------------
    def learn(self, a: str, b: str) -> bool:
        """``a`` and ``b`` are one page, ``b`` the form the site prefers (where ``a`` redirects to): the
        rewrites (one, or two in a row) that turn ``a`` into ``b`` count as confirmed on their host.
        Returns whether some did."""
        if a == b:
            return False
        origin, path_a, query = _split(a)
        origin_b, path_b, query_b = _split(b)
        if origin != origin_b or query != query_b:
            return False
        explained: set[str] = set()
        for first, one in REWRITES.items():
            once = one(path_a)
            if once is None:
                continue
            if once == path_b:
                explained.add(first)
                continue
            for second, two in REWRITES.items():
                if second != first and two(once) == path_b:
                    explained.update((first, second))
        host = host_of(a)
        for name in explained:
            self._confirmed[host, name] += 1
            self._hosts.add(host)
        return bool(explained)

    def page_read(self, url: str, body: bytes) -> str | None:
        """A page was read: the URL of a page read before with the same body (and the pair is learned), or
        None for a body not seen before."""
        digest = hashlib.blake2b(body, digest_size=12).hexdigest()
        before = self._bodies.setdefault(digest, url)
        if before == url:
            return None
        self.outcomes[SAME_BODY] += 1
        if not self.learn(url, before):  # which of the two the site prefers is not known: either way
            self.learn(before, url)
        return before

    def canonical(self, url: str, canonical: str, known: Container[str]) -> None:
        """A page at ``url`` names ``canonical`` its canonical URL: believed when a rewrite explains it, and
        then a link to ``canonical`` not met yet is a copy of this page."""
        if canonical != url and self.learn(url, canonical) and canonical not in known:
            self._aliases[canonical] = url

    def alternates(self, url: str, alternates: dict[str, str]) -> None:
        """A page read at ``url`` names its language alternates (hreflang -> URL): each is a copy of it in
        that language (unless it is a page read already)."""
        for lang, alternate in alternates.items():
            if alternate != url and alternate not in self._variants and url not in self._variants:
                self._variants[alternate] = (lang.lower(), url)
                self._originals.setdefault(url, False)

    def page_links(self, page: str, links: list[str]) -> None:
        """The links of a page read at ``page``: those to the page in another language by their URL (a
        language switcher, ``language_pair``) teach the site's language segments. From then on a URL under
        one (or, for "", under none) whose path without it is a page read in another language is a copy of
        that page."""
        parts = _split(page)
        for link in links:
            pair = _language_pair(parts, link)
            if pair is not None:
                self._segments.update(pair)
        key = self._language_key(page)
        if key is not None:  # read in this language first (whether it revealed files: ``page_done``)
            self._read.setdefault(key[1], (key[0], False))

    def _language_key(self, url: str) -> tuple[str, str] | None:
        """(language, the URL without its language segment) by the segments learned, or None."""
        if not self._segments:
            return None
        origin, path, query = _split(url)
        end = path.find("/", 1)
        first = (path[1:] if end < 0 else path[1:end]).lower()
        if first and first in self._segments:
            return first, origin + (path[end:] if end >= 0 else "/") + query
        if "" in self._segments:
            return "", url
        return None

    def _copy_of(self, url: str, key: tuple[str, str] | None) -> tuple[str, bool | None] | None:
        """(language, whether its page revealed files: None when not known yet) when ``url`` is a copy of a
        page in another language (an hreflang alternate of a page read, or a page read under another
        language segment), else None. ``key``: the URL's ``_language_key``."""
        variant = self._variants.get(url)
        if variant is not None:
            return variant[0], self._originals.get(variant[1])
        if key is not None:
            first = self._read.get(key[1])
            if first is not None and first[0] != key[0]:
                return key[0], first[1]
        return None

    def page_done(self, url: str, reward: int) -> None:
        """A page's work is done (``reward``: the new files it led to): a language copy's, when its page
        revealed files, tells whether its language's copies are worth asking for."""
        key = self._language_key(url)
        copy = self._copy_of(url, key)
        if url in self._originals:
            self._originals[url] = reward > 0
        if key is not None and self._read.get(key[1], (key[0],))[0] == key[0]:
            self._read[key[1]] = (key[0], reward > 0)
        if copy is not None and copy[1]:
            seen = self._languages.setdefault(copy[0], [0, 0])
            seen[0] += 1
            seen[1] += reward > 0

    def variant_of(self, url: str) -> str | None:
        """The page read that names ``url`` as its copy in another language (hreflang), or None."""
        variant = self._variants.get(url)
        return variant[1] if variant is not None else None

    def defer(self, url: str) -> bool:
        """Whether ``url`` is a language copy to crawl only when nothing else is left: its language's copies
        read so far (enough of them) revealed no file."""
        copy = self._copy_of(url, self._language_key(url))
        if copy is None:
            return False
        read, fruitful = self._languages.get(copy[0], (0, 0))
        if read >= _LANGUAGE_SAMPLE and not fruitful:
            self.outcomes[DEFERRED] += 1
            return True
        return False

    # -- using what was learned ------------------------------------------------------------------------
    def _active(self, host: str, name: str) -> bool:
        confirmed = self._confirmed.get((host, name), 0)
        return confirmed >= _CONFIRMATIONS and self._failed.get((host, name), 0) * _FAILURE_SHARE <= confirmed

    def _rewrite(self, url: str) -> tuple[str, tuple[str, ...]]:
        host = host_of(url)
        if host not in self._hosts:
            return url, ()
        origin, path, query = _split(url)
        applied = []
        for name, rewrite in REWRITES.items():
            if self._active(host, name) and (new := rewrite(path)) is not None:
                path = new
                applied.append(name)
        form = origin + path + query
        return (form, tuple(applied)) if applied and form != url else (url, ())

    def copy_of(self, url: str, known: Container[str]) -> str | None:
        """The known URL that ``url`` is a copy of by what the site taught, or None."""
        alias = self._aliases.get(url)
        if alias is not None:
            return alias
        form, applied = self._rewrite(url)
        return form if applied and form in known else None

    def preferred(self, url: str, known: Container[str]) -> str:
        """The URL to queue a new link ``url`` as: a known URL it is a copy of (the link is then not
        queued), else its form by the rewrites learned on its host (asked for in that form)."""
        alias = self._aliases.get(url)
        if alias is not None:
            self.outcomes[COPY] += 1
            return alias
        form, applied = self._rewrite(url)
        if not applied:
            return url
        if form in known:
            self.outcomes[COPY] += 1
        else:
            self._rewritten[form] = (url, applied)
            self.outcomes[REWRITTEN] += 1
        return form

    def site_form(self, url: str, known: Container[str], allowed: Callable[[str], bool]) -> str | None:
        """The URL a page link queued before the site taught how its URLs are written is asked as: the form
        the site serves (``url`` itself when there is none, or robots.txt refuses it), or None when that form
        is a known URL (the link is a copy, not to be asked)."""
        form = self.preferred(url, known)
        if form == url:
            return url
        if form in known:
            return None
        return form if allowed(form) else url

    def fallback(self, url: str, resp: Response) -> str | None:
        """A request to ``url`` was answered: when ``url`` is a rewritten link that failed, the link's own
        URL, to ask next (and the rewrite counts a failure on the host); else None."""
        entry = self._rewritten.pop(url, None)
        if entry is None or resp.kind not in _FAILED:
            return None
        original, applied = entry
        host = host_of(url)
        for name in applied:
            self._failed[host, name] += 1
        self.outcomes[FALLBACK] += 1
        return original

    # -- checkpoints -----------------------------------------------------------------------------------
    def state(self) -> dict:
        """What was learned (rewritten links in flight are asked again in their form on resume)."""
        return {"confirmed": [[h, n, c] for (h, n), c in self._confirmed.items()],
                "failed": [[h, n, c] for (h, n), c in self._failed.items()],
                "bodies": self._bodies, "aliases": self._aliases,
                "rewritten": {k: [v[0], list(v[1])] for k, v in self._rewritten.items()},
                "variants": {k: list(v) for k, v in self._variants.items()}, "languages": self._languages,
                "originals": self._originals, "segments": sorted(self._segments),
                "read": {k: list(v) for k, v in self._read.items()}}

    def arrays(self) -> dict[str, np.ndarray]:
        return {}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self._confirmed = Counter({(str(h), str(n)): int(c) for h, n, c in state["confirmed"]})
        self._hosts = {host for host, _ in self._confirmed}
        self._failed = Counter({(str(h), str(n)): int(c) for h, n, c in state["failed"]})
        self._bodies = {str(k): str(v) for k, v in state["bodies"].items()}
        self._aliases = {str(k): str(v) for k, v in state["aliases"].items()}
        self._rewritten = {str(k): (str(v[0]), tuple(str(x) for x in v[1])) for k, v in state["rewritten"].items()}
        self._variants = {str(k): (str(v[0]), str(v[1])) for k, v in state["variants"].items()}
        self._languages = {str(k): [int(v[0]), int(v[1])] for k, v in state["languages"].items()}
        self._originals = {str(k): bool(v) for k, v in (state.get("originals") or {}).items()}
        self._segments = {str(x) for x in state.get("segments") or ()}
        self._read = {str(k): (str(v[0]), bool(v[1])) for k, v in (state.get("read") or {}).items()}
