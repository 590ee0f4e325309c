"""Links of an HTML page with the tag path that leads to each (§2.2): "html body div#main ul.datasets li a"."""

from __future__ import annotations

import codecs
import logging
import re
import threading
from collections import Counter
from collections.abc import Container
from dataclasses import dataclass
from email.message import Message
from functools import lru_cache
from typing import NamedTuple

import lxml.etree

from airflow_sbcrawl.crawler.urls import TOO_LONG, resolve, resolver, too_long

log = logging.getLogger(__name__)

_LINK_ATTRS = {"a": "href", "area": "href", "iframe": "src", "frame": "src"}
_MAX_ANCHOR = 120
# A link's context: the row (list item, table row, definition) around it, or the nearest of its first few
# ancestors that says more than the link; its text is cut at _MAX_CONTEXT characters.
_ITEMS = frozenset({"li", "tr", "dd"})
_CONTEXT_LEVELS = 3
_MAX_CONTEXT = 300
# A link's own text and its ancestors' are read this far, so that the link's whole text can be taken out of
# its row's before the row is cut at _MAX_CONTEXT.
_MAX_READ = 2000
# Class and id values longer than this are page-unique noise (hashes, generated ids), not structure.
_MAX_TOKEN = 64


@dataclass(frozen=True, slots=True)
class PageLink:
    """A link of a page: its absolute URL, the tag path of its ``<a>``, its anchor text, its ``title`` and
    the text of the row or item around it without the anchor (``row``)."""

    url: str
    tag_path: str
    anchor: str
    title: str = ""
    row: str = ""


def _label(el: lxml.etree._Element) -> str:
    tag, ident, classes = el.tag, el.get("id"), el.get("class")
    key = (tag, ident, classes)
    label = _LABELS.get(key)
    if label is None:
        label = (tag if isinstance(tag, str) else "?").lower()
        if ident and not _generated(ident):
            label += "#" + ident.strip()[:_MAX_TOKEN].replace(" ", "")
        if classes:
            label += "".join("." + c[:_MAX_TOKEN] for c in classes.split())
        if len(_LABELS) >= _LABELS_MAX:
            _LABELS.clear()
        _LABELS[key] = label
    return label


def _generated(ident: str) -> bool:
    """Whether an id was made from the element's content (a heading's slug, "ghanas-sdg-budget-report-2019",
    a tab named after its title): unique to its page, so it would give every page tag paths of its own.
    Ids a template writes name a part of the page in a word or two ("main-content", "navbarSupported")."""
    return ident.count("-") + ident.count("_") >= _SLUG_PARTS or len(ident) > _MAX_ID


# An id of this many hyphen- or underscore-separated words, or longer than _MAX_ID characters, is a slug.
_SLUG_PARTS = 3
_MAX_ID = 24


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
                  max_links: int | None = None, known: Container[str] | None = None,
                  dropped: Counter[str] | None = None, rows: bool = True) -> list[PageLink]:
    """The a/area/iframe/frame links of a page, resolved against <base href> and normalised; only the first
    ``max_links`` link elements are read (the others are counted and logged). Links to ``known`` URLs are
    left out: the crawler has them already, and after a site's first pages they are most of a page's links
    (its menus), whose tag paths and anchors would be worked out for nothing. Links longer than
    ``urls.MAX_URL_LENGTH`` are dropped, and counted in ``dropped`` when given. ``rows`` False leaves
    each link's row text empty (a policy that does not read it).

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
    texts: dict[lxml.etree._Element, str] = {}  # element -> its text, for link contexts
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
            if url is None and dropped is not None and too_long(base, target):
                dropped[TOO_LONG] += 1
            continue
        parent = el.getparent()
        label = _label(el)
        if parent is None:
            tag_path = label
        else:
            prefix = paths.get(parent)
            tag_path = f"{prefix if prefix is not None else _path_to(parent, paths)} {label}"
        if tag != "a":
            own = ""
        elif len(el):
            own = " ".join(_TEXT(el).split())[:_MAX_READ]
        else:  # no child nodes: its text is all of it
            text = el.text
            own = " ".join(text.split())[:_MAX_READ] if text else ""
        anchor = own[:_MAX_ANCHOR]
        title = (el.get("title") or "")[:_MAX_ANCHOR]
        row = _row_text(el, own, texts) if rows else ""
        links.append(PageLink(url, tag_path, anchor, title, row))
    return links


def _row_text(el: lxml.etree._Element, own: str, texts: dict[lxml.etree._Element, str]) -> str:
    """The text of the row around a link without the link's own (``own``, its whole text, not the
    anchor cut at ``_MAX_ANCHOR``): the nearest list item, table row or definition above it, else the
    nearest ancestor (``_CONTEXT_LEVELS`` up at most) that says more than the link ("Reported online"
    beside an indicator's name). Compared with the cut anchor, the element holding only a long indicator
    name "said more" (the name's tail) and the status beside it was never reached. Each element's text is
    worked out once per page (``texts``), so many links under one parent cost linear time."""
    node = el.getparent()
    text = ""
    for _ in range(_CONTEXT_LEVELS):
        if node is None:
            break
        text = texts.get(node)
        if text is None:
            text = texts[node] = " ".join(_TEXT(node).split())[:_MAX_READ]
        if node.tag in _ITEMS or len(text) > len(own):
            break
        node = node.getparent()
    else:
        text = ""
    return (text.replace(own, " ", 1).strip() if own else text)[:_MAX_CONTEXT]


class HeadLinks(NamedTuple):
    """What a page's ``<head>`` says of its other URLs: its canonical URL and its language alternates."""

    canonical: str | None
    alternates: dict[str, str]  # hreflang value -> URL


_HEAD_BYTES = 64 * 1024  # a <head> past this is not looked into
_HEAD_END = re.compile(rb"</head\s*>|<body[\s>]", re.IGNORECASE)
_LINK_TAG = re.compile(rb"<link\b[^>]*>", re.IGNORECASE)
_ATTR = re.compile(rb"""([a-zA-Z:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")


def head_links(body: bytes, page_url: str) -> HeadLinks:
    """The ``<link rel=canonical>`` and ``<link rel=alternate hreflang=…>`` of a page's head, resolved
    against the page's URL. Read from the raw bytes of the head only (a few kB), not from a second parse of
    the whole page; an encoding other than ASCII-compatible ones is not looked into."""
    head = body[:_HEAD_BYTES]
    end = _HEAD_END.search(head)
    if end is not None:
        head = head[:end.start()]
    canonical = None
    alternates: dict[str, str] = {}
    for tag in _LINK_TAG.finditer(head):
        attrs = {m[1].decode("ascii").lower(): (m[2] or m[3] or m[4] or b"").decode("utf-8", "replace").strip()
                 for m in _ATTR.finditer(tag[0])}
        rel = attrs.get("rel", "").lower().split()
        href = attrs.get("href")
        if not href:
            continue
        if "canonical" in rel and canonical is None:
            canonical = resolve(page_url, href)
        elif "alternate" in rel and (lang := attrs.get("hreflang", "").lower()):
            url = resolve(page_url, href)
            if url is not None:
                alternates.setdefault(lang, url)
    return HeadLinks(canonical, alternates)
