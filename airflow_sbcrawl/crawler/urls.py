"""URL normalisation and the site scope of §2.2 (the start host and its subdomains, "www." ignored, on
the start URL's scheme and port)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

_SKIPPED_SCHEMES = ("mailto:", "tel:", "javascript:", "data:", "ftp:", "file:", "sms:", "#")
_DEFAULT_PORTS = {"http": 80, "https": 443}
# Characters left as they are when re-quoting a path or query; everything else is percent-encoded once.
_SAFE_PATH = "/:@!$&'()*+,;=-._~%"
_SAFE_QUERY = _SAFE_PATH + "?"
# Longest URL the crawl keeps. Browsers and servers stop between 8 and 32 kB (a server answers 414 past
# its limit); a page linking 60 kB URLs would otherwise fill memory, the frontier and every checkpoint.
MAX_URL_LENGTH = 8192
TOO_LONG = f"link longer than {MAX_URL_LENGTH} characters (dropped)"


class InvalidURL(ValueError):
    """Not an absolute http(s) URL with a host."""


def normalize(url: str) -> str:
    """Canonical form used as the identity of a page: scheme and host lower-cased, default port, dot
    segments and fragment removed, percent-encoding made uniform. Raises InvalidURL."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(f"{url!r} is not a valid URL ({exc})") from exc
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise InvalidURL(f"{url!r} is not an http(s) URL")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise InvalidURL(f"{url!r} has no host")
    try:
        host = host.encode("idna").decode("ascii").lower()
    except UnicodeError as exc:
        raise InvalidURL(f"{url!r} has an invalid host name") from exc
    if ":" in host:  # an IPv6 literal keeps its brackets, or the port could not be told from it
        host = f"[{host}]"
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = parts.path or "/"
    if "." in path:
        trailing = path.endswith("/")
        path = posixpath.normpath(path)
        if path.startswith("//"):
            path = "/" + path.lstrip("/")
        if trailing and not path.endswith("/"):
            path += "/"
    # Existing %XX escapes are kept as they are: decoding them could turn %2F into a real separator.
    path = quote(path, safe=_SAFE_PATH)
    query = quote(parts.query, safe=_SAFE_QUERY) if parts.query else ""
    return urlunsplit((scheme, netloc, path, query, ""))


_RESOLVED: dict[tuple[str, str], str | None] = {}
_RESOLVED_MAX = 200_000
_MISSING = object()


def _origin(base: str) -> str:
    """What a root-relative href is resolved against: the base up to its path ("http://host:port")."""
    return base[: base.find("/", base.find("//") + 2)] if base.count("/") >= 3 else base


def _resolve_uncached(base: str, href: str) -> str | None:
    if not href or len(href) > MAX_URL_LENGTH or href.lower().startswith(_SKIPPED_SCHEMES):
        return None
    try:
        url = normalize(urljoin(base, href))
    except (InvalidURL, ValueError):
        return None
    return url if len(url) <= MAX_URL_LENGTH else None  # (percent-encoding can triple a length)


def too_long(base: str, href: str) -> bool:
    """Whether a link is dropped for its length (``MAX_URL_LENGTH``), as written or once normalised."""
    href = href.strip()
    if len(href) > MAX_URL_LENGTH:
        return True
    if len(href) <= MAX_URL_LENGTH // 3:  # percent-encoding at most triples a length
        return False
    try:
        return len(normalize(urljoin(base, href))) > MAX_URL_LENGTH
    except (InvalidURL, ValueError):
        return False


def host_of(url: str) -> str:
    """The host (with its port) of a normalized URL: ``urlsplit(url).netloc`` without parsing all of it,
    which the engine would do for every link it queues."""
    return url.split("/", 3)[2]


def resolve(base: str, href: str) -> str | None:
    """Absolute normalised URL of a link, or None for links that are not web pages (mailto:, tel:, …) and
    for URLs longer than ``MAX_URL_LENGTH``.

    Menus repeat the same hrefs on every page of a site, so results are cached; an absolute href does not
    depend on the base at all, a root-relative one only on its origin."""
    return resolver(base)(href)


def resolver(base: str) -> Callable[[str], str | None]:
    """``resolve`` against one base, for all the links of a page: the base's origin is found once, and an
    href repeated on the page (a menu in the header and the footer) is looked up once."""
    origin = _origin(base)
    page: dict[str, str | None] = {}

    def resolve_href(href: str) -> str | None:
        url = page.get(href, _MISSING)
        if url is not _MISSING:
            return url  # type: ignore[return-value]
        stripped = href.strip()
        if len(stripped) > MAX_URL_LENGTH:
            page[href] = None  # not cached across pages: a long href would hold its memory there
            return None
        if stripped.startswith(("http://", "https://")):
            key = ("", stripped)
        elif stripped.startswith("/") and not stripped.startswith("//"):
            key = (origin, stripped)
        else:
            key = (base, stripped)
        url = _RESOLVED.get(key, _MISSING)
        if url is _MISSING:
            url = _resolve_uncached(base, stripped)
            if len(_RESOLVED) >= _RESOLVED_MAX:
                _RESOLVED.clear()
            _RESOLVED[key] = url
        page[href] = url  # type: ignore[assignment]
        return url  # type: ignore[return-value]

    return resolve_href


def site_host(host: str) -> str:
    host = host.lower()
    return host[4:] if host.startswith("www.") else host


def origin_port(parts) -> tuple[str, int]:
    """(scheme, port) of a split URL, the scheme's default port filled in."""
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, port if port is not None else _DEFAULT_PORTS.get(scheme, 0)


def target_host(entry: str) -> str:
    """A host allowed for files off the site, as given ("data.example.org", "cdn.example.org:8443", or a
    URL on it), in the form ``Scope.allows_file`` compares: lower-case, IDNA, the port only when it is not
    80 or 443. Raises InvalidURL."""
    entry = entry.strip()
    if not entry:
        raise InvalidURL("an empty host name")
    url = normalize(entry if "//" in entry else f"http://{entry}")
    if urlsplit(url).path not in ("", "/") and "//" not in entry:
        raise InvalidURL(f"{entry!r} is not a host name (a host name has no path)")
    netloc = host_of(url)
    if netloc.endswith((":80", ":443")):
        netloc = netloc.rsplit(":", 1)[0]
    return netloc


class Scope:
    """URLs whose host is the start host or one of its subdomains, a leading "www." ignored on both, on the
    start URL's scheme and port. Another port of the same host is another service (an admin console, a
    database), so it is out of scope; the one exception is http on port 80 upgraded to https on 443, which
    is how sites move to TLS.

    ``target_hosts`` (as ``target_host`` gives them) are other hosts, and their subdomains, whose files the
    site's pages may link (a data portal, a CDN): such a URL is not in the scope (never crawled as a page)
    but ``allows_file``."""

    def __init__(self, start_url: str, target_hosts: tuple[str, ...] = ()) -> None:
        self.target_hosts = tuple(target_hosts)
        self._file_suffixes = tuple("." + h for h in self.target_hosts if ":" not in h)
        parts = urlsplit(start_url)
        self.root = site_host(parts.hostname or "")
        self._suffix = "." + self.root
        self.origins = {origin_port(parts)}
        if self.origins == {("http", 80)}:
            self.origins.add(("https", 443))
        # The answer depends on the URL's scheme and authority only: kept per "scheme://authority" prefix,
        # as a page's links share a handful of them.
        self._known: dict[str, bool] = {}

    def __contains__(self, url: str) -> bool:
        start = url.find("//")
        end = url.find("/", start + 2) if start > 0 else -1
        if end < 0:
            return self._contains(url)
        prefix = url[:end]
        known = self._known.get(prefix)
        if known is None:
            if len(self._known) >= _KNOWN_MAX:
                self._known.clear()
            known = self._known[prefix] = self._contains(url)
        return known

    def allows_file(self, url: str) -> bool:
        """Whether ``url`` may be fetched as a file: in the scope, or on one of the target hosts."""
        if url in self:
            return True
        if not self.target_hosts:
            return False
        netloc = host_of(url)
        if netloc.endswith((":80", ":443")):
            netloc = netloc.rsplit(":", 1)[0]
        return netloc in self.target_hosts or netloc.endswith(self._file_suffixes)

    def _contains(self, url: str) -> bool:
        parts = urlsplit(url)
        host = site_host(parts.hostname or "")
        return (host == self.root or host.endswith(self._suffix)) and origin_port(parts) in self.origins


_KNOWN_MAX = 10_000
# Characters urlsplit removes from anywhere in a URL (WHATWG): a URL holding one takes the slow path.
_UNSAFE = frozenset("\t\r\n")


def extension(url: str) -> str:
    """Lower-case extension of the URL's last path segment, without the dot ("" when none)."""
    if url.startswith(("http://", "https://")) and _UNSAFE.isdisjoint(url):
        # The path of an http(s) URL: after the authority (which ends at the first / ? #), up to ? or #;
        # found by position, without slicing the URL apart.
        start = url.find("//") + 2
        end = url.find("?", start)
        if end < 0:
            end = len(url)
        mark = url.find("#", start, end)
        if mark >= 0:
            end = mark
        slash = url.rfind("/", start, end)
        if slash < 0:  # no path: the authority runs up to the query or the end
            return ""
        segment = url[slash + 1:end]
    else:
        segment = urlsplit(url).path.rsplit("/", 1)[-1]
    if "." not in segment:
        return ""
    return segment.rsplit(".", 1)[-1].lower()


_DIGITS = re.compile(r"\d+")


def url_template(url: str) -> str:
    """What a URL has in common with its siblings: host and path with digit runs masked and, for a query
    URL, the query's keys; without a query the last path segment (the item's own slug) is dropped.
    ``/en/news/births-2009`` and ``/en/news/prices-2012`` share ``/en/news/*``; ``/en/publications?page=3``
    is ``/en/publications?page``. String operations on the normalised URL: this runs for every new link."""
    path, _, query = url.partition("://")[2].partition("?")
    path = _DIGITS.sub("N", path)
    if query:
        keys = sorted({pair.partition("=")[0] for pair in query.split("&")})
        return f"{path}?{'&'.join(keys)}"
    path = path.rstrip("/")
    head = path.rpartition("/")[0]
    return f"{head}/*" if "/" in head else path
