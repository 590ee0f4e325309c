"""Links of an HTML page with the tag path that leads to each (§2.2): "html body div#main ul.datasets li a"."""

from __future__ import annotations

import codecs
import logging
import threading
from collections.abc import Container
from dataclasses import dataclass
from email.message import Message
from functools import lru_cache

import lxml.etree

from airflow_sbcrawl.crawler.urls import resolve, resolver

log = logging.getLogger(__name__)

_LINK_ATTRS = {"a": "href", "area": "href", "iframe": "src", "frame": "src"}
_MAX_ANCHOR = 120
# Class and id values longer than this are page-unique noise (hashes, generated ids), not structure.
_MAX_TOKEN = 64


@dataclass(frozen=True, slots=True)
class PageLink:
    """A link of a page: its absolute URL, the tag path of its ``<a>`` and its anchor text."""

    url: str
    tag_path: str
    anchor: str


def _label(el: lxml.etree._Element) -> str:
    tag, ident, classes = el.tag, el.get("id"), el.get("class")
    key = (tag, ident, classes)
    label = _LABELS.get(key)
    if label is None:
        label = (tag if isinstance(tag, str) else "?").lower()
        if ident:
            label += "#" + ident.strip()[:_MAX_TOKEN].replace(" ", "")
        if classes:
            label += "".join("." + c[:_MAX_TOKEN] for c in classes.split())
        if len(_LABELS) >= _LABELS_MAX:
            _LABELS.clear()
        _LABELS[key] = label
    return label


# Labels by (tag, id, class): a site's templates repeat the same few hundred on every page.
_LABELS: dict[tuple[object, str | None, str | None], str] = {}
_LABELS_MAX = 50_000


_local = threading.local()  # lxml parsers must not be shared between threads
# A link's text: XPath string(), what lxml.html's text_content() evaluates, on plain etree elements.
_TEXT = lxml.etree.XPath("string()")


@lru_cache(maxsize=256)
def charset_of(content_type: str | None) -> str | None:
    """The charset parameter of a Content-Type header, as the email package reads it (quotes, case, RFC 2231).

    Cached: a site sends the same few Content-Type values, and parsing one with email.message cost a
    tenth of a page's link extraction."""
    if not content_type:
        return None
    msg = Message()
    msg["content-type"] = content_type
    charset = msg.get_param("charset")
    return charset if isinstance(charset, str) else None


def _parser(encoding: str | None) -> lxml.etree.HTMLParser:
    """A parser for the declared charset; an unknown one (servers send anything) falls back to sniffing.

    lxml.etree's HTML parser, not lxml.html's: the tree is the same (one libxml2 parse), but lxml.html
    calls back into Python to pick a class for every element object it creates, a fifth of the time spent
    on a page's links."""
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
        parser = parsers[encoding] = lxml.etree.HTMLParser(encoding=known, recover=True, no_network=True)
    return parser


def _path_to(el: lxml.etree._Element, paths: dict[lxml.etree._Element, str]) -> str:
    """The tag path of ``el`` itself, from its nearest ancestor whose path is known; every element on the
    way is remembered in ``paths``, so each element of a page is labelled once however many links it holds."""
    chain = []
    prefix = ""
    node: lxml.etree._Element | None = el
    while node is not None:
        known = paths.get(node)
        if known is not None:
            prefix = known
            break
        chain.append(node)
        node = node.getparent()
    for node in reversed(chain):
        prefix = paths[node] = f"{prefix} {_label(node)}" if prefix else _label(node)
    return prefix


def extract_links(body: bytes, page_url: str, encoding: str | None = None,
                  max_links: int | None = None, known: Container[str] | None = None) -> list[PageLink]:
    """The a/area/iframe/frame links of a page, resolved against <base href> and normalised; only the first
    ``max_links`` link elements are read (the others are counted and logged). Links to ``known`` URLs are
    left out: the crawler has them already, and after a site's first pages they are most of a page's links
    (its menus), whose tag paths and anchors would be worked out for nothing.

    Malformed HTML is parsed as browsers would (lxml's recovering parser); a body that is not HTML at all
    yields no links rather than an error."""
    if not body.strip():
        return []
    try:
        root = lxml.etree.fromstring(body, parser=_parser(encoding))
    except (lxml.etree.ParserError, ValueError, LookupError, lxml.etree.XMLSyntaxError):
        return []
    if root is None:  # a document of comments only
        return []
    base = page_url
    for base_el in root.iter("base"):
        href = base_el.get("href")
        if href:
            base = resolve(page_url, href) or page_url
        break
    resolve_href = resolver(base)
    paths: dict[lxml.etree._Element, str] = {}  # element -> its tag path
    links: list[PageLink] = []
    elements = root.iter(*_LINK_ATTRS)
    for seen, el in enumerate(elements):
        if max_links is not None and seen >= max_links:
            dropped = 1 + sum(1 for _ in elements)
            log.warning("%s has %d more links than the %d read per page: dropped", page_url, dropped, max_links)
            break
        tag = el.tag
        target = el.get(_LINK_ATTRS[tag])
        if not target:
            continue
        url = resolve_href(target)
        if url is None or (known is not None and url in known):
            continue
        parent = el.getparent()
        label = _label(el)
        if parent is None:
            tag_path = label
        else:
            prefix = paths.get(parent)
            tag_path = f"{prefix if prefix is not None else _path_to(parent, paths)} {label}"
        if tag != "a":
            anchor = ""
        elif len(el):
            anchor = " ".join(_TEXT(el).split())[:_MAX_ANCHOR]
        else:  # no child nodes: its text is all of it
            text = el.text
            anchor = " ".join(text.split())[:_MAX_ANCHOR] if text else ""
        links.append(PageLink(url, tag_path, anchor))
    return links
