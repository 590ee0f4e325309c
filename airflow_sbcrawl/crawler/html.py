"""Links of an HTML page with the tag path that leads to each (§2.2): "html body div#main ul.datasets li a"."""

from __future__ import annotations

import codecs
import logging
import threading
from dataclasses import dataclass

import lxml.etree
import lxml.html

from airflow_sbcrawl.crawler.urls import resolve

log = logging.getLogger(__name__)

_LINK_ATTRS = {"a": "href", "area": "href", "iframe": "src", "frame": "src"}
_MAX_ANCHOR = 120
# Class and id values longer than this are page-unique noise (hashes, generated ids), not structure.
_MAX_TOKEN = 64


@dataclass(frozen=True, slots=True)
class PageLink:
    url: str
    tag_path: str
    anchor: str


def _label(el: lxml.etree._Element) -> str:
    tag = el.tag if isinstance(el.tag, str) else "?"
    label = tag.lower()
    ident = el.get("id")
    if ident:
        label += "#" + ident.strip()[:_MAX_TOKEN].replace(" ", "")
    classes = el.get("class")
    if classes:
        label += "".join("." + c[:_MAX_TOKEN] for c in classes.split())
    return label


_local = threading.local()  # lxml parsers must not be shared between threads


def _parser(encoding: str | None) -> lxml.html.HTMLParser:
    """A parser for the declared charset; an unknown one (servers send anything) falls back to sniffing."""
    parsers = _local.__dict__.setdefault("parsers", {})
    parser = parsers.get(encoding)
    if parser is None:
        known = encoding
        if encoding:
            try:
                codecs.lookup(encoding)
            except LookupError:
                known = None
        if len(parsers) > 32:
            parsers.clear()
        parser = parsers[encoding] = lxml.html.HTMLParser(encoding=known, recover=True, no_network=True)
    return parser


def extract_links(body: bytes, page_url: str, encoding: str | None = None,
                  max_links: int | None = None) -> list[PageLink]:
    """The a/area/iframe/frame links of a page, resolved against <base href> and normalised; only the first
    ``max_links`` link elements are read (the others are counted and logged).

    Malformed HTML is parsed as browsers would (lxml's recovering parser); a body that is not HTML at all
    yields no links rather than an error."""
    if not body.strip():
        return []
    try:
        root = lxml.html.document_fromstring(body, parser=_parser(encoding))
    except (lxml.etree.ParserError, ValueError, LookupError, lxml.etree.XMLSyntaxError):
        return []
    base = page_url
    for base_el in root.iter("base"):
        href = base_el.get("href")
        if href:
            base = resolve(page_url, href) or page_url
        break
    labels: dict[lxml.etree._Element, str] = {}
    links: list[PageLink] = []
    elements = root.iter(*_LINK_ATTRS)
    for seen, el in enumerate(elements):
        if max_links is not None and seen >= max_links:
            dropped = 1 + sum(1 for _ in elements)
            log.warning("%s has %d more links than the %d read per page: dropped", page_url, dropped, max_links)
            break
        target = el.get(_LINK_ATTRS[el.tag])
        if not target:
            continue
        url = resolve(base, target)
        if url is None:
            continue
        parts = [_label(el)]
        for anc in el.iterancestors():
            cached = labels.get(anc)
            if cached is None:
                cached = labels[anc] = _label(anc)
            parts.append(cached)
        parts.reverse()
        anchor = " ".join(el.text_content().split())[:_MAX_ANCHOR] if el.tag == "a" else ""
        links.append(PageLink(url, " ".join(parts), anchor))
    return links
