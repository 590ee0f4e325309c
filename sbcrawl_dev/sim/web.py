"""What the simulated site's modules share: its host names, the kinds of URL, what a URL routes to, and
the responses the server sends."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

DOMAIN = "stats.example"
WWW = f"www.{DOMAIN}"
DATA = f"data.{DOMAIN}"
PUB = f"pub.{DOMAIN}"
OFFSITE_HOSTS = ("www.other.example", "twitter.example")

# Kinds of URL, as the ground truth reports them (see Site.kind).
KINDS = ("html", "target", "error", "redirect", "media", "trap", "out-of-scope", "robots")
# Kinds that count in url_count: what a crawler can usefully fetch (the paper's "#Available" excludes 4xx/5xx).
COUNTED_KINDS = frozenset({"html", "target", "redirect", "media"})

# Pages at the root of the main host, linked from every footer: (slug, title).
STATIC_PAGES = (
    ("about", "About us"), ("contact", "Contact"), ("legal-notice", "Legal notice"),
    ("accessibility", "Accessibility"), ("privacy", "Privacy policy"), ("careers", "Careers"),
    ("press-office", "Press office"), ("open-data-policy", "Open data policy"),
)
# Other organisations linked from the footer through /go/<name> (a redirect out of scope).
PARTNERS = ("eurostat", "oecd", "un-statistics")


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
    """Which handler serves a URL, what kind of URL it is, and the handler's arguments."""

    kind: str
    handler: str
    args: tuple


def html_response(text: str, status: int = 200) -> Response:
    """An HTML page, whole in one chunk."""
    body = text.encode()
    return Response(status, {"Content-Type": "text/html; charset=utf-8", "Content-Length": str(len(body))},
                    [body])


def error_response(status: int) -> Response:
    """The site's error page for ``status`` (404, 500...)."""
    reason = {404: "Page not found", 500: "Internal server error"}.get(status, "Error")
    return html_response(f"<!DOCTYPE html><html><head><title>{reason}</title></head><body><h1>{reason}</h1>"
                         "<p>The requested page could not be served.</p></body></html>\n", status)


def redirect(status: int, location: str) -> Response:
    """A redirect with an empty body."""
    return Response(status, {"Location": location, "Content-Type": "text/html; charset=utf-8",
                             "Content-Length": "0"}, [])
