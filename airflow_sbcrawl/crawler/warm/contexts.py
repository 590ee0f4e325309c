"""A link's context on a page: the list item, table row or article around it, hashed, and the dates it shows.

A warm crawl compares the contexts a page shows its links in with those the last runs saw: a catalogue row
whose "last modified" moved on tells of a changed dataset before its page or file is asked for."""

from __future__ import annotations

import hashlib
import re
from typing import NamedTuple

import lxml.etree
import lxml.html

from airflow_sbcrawl.crawler.urls import resolve

# The element whose text and links are a link's context: the outermost item of a list around it (a
# catalogue row, not the file badge inside it), else the smallest element that says more than the link.
# List items, table rows and definitions are items by their markup; an article only among articles (a
# page's one main article holds every file of a dataset: a context that wide makes one updated file look
# like all of them changed).
_ITEMS = frozenset({"li", "tr", "dd"})


class PageLinks(NamedTuple):
    """What a page shows of its links."""

    contexts: dict[str, set[str]]  # link URL -> hashes of its contexts
    described: set[str]  # links in a context that says more than the link itself
    dates: dict[str, str]  # link URL -> the newest date (ISO) its contexts show, if any


_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                       "dec"), 1)}
_ISO_DATE = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
_DAY_MONTH = re.compile(r"\b(\d{1,2}) ([A-Za-z]{3})[a-z]*\.? ((?:19|20)\d\d)\b")
_MONTH_DAY = re.compile(r"\b([A-Za-z]{3})[a-z]*\.? (\d{1,2}),? ((?:19|20)\d\d)\b")


def newest_date(text: str) -> str:
    """The newest date written in a text (2025-05-12, 12 May 2025, May 12, 2025) as ISO, or ""."""
    found = [f"{y}-{m}-{d}" for y, m, d in _ISO_DATE.findall(text)]
    for day, month, year in _DAY_MONTH.findall(text):
        if (m := _MONTHS.get(month.lower())) and 1 <= int(day) <= 31:
            found.append(f"{year}-{m:02d}-{int(day):02d}")
    for month, day, year in _MONTH_DAY.findall(text):
        if (m := _MONTHS.get(month.lower())) and 1 <= int(day) <= 31:
            found.append(f"{year}-{m:02d}-{int(day):02d}")
    return max(found, default="")


def link_contexts(body: bytes, page_url: str, encoding: str | None = None, max_links: int = 10_000) -> PageLinks:
    """Link URL → hashes of its contexts on the page: the text and link targets of the list item, table
    row or article around it (a catalogue row with its date and file links), else of its parent element;
    and the links the page *describes*: in a context that says more than the link's own text (a row with a
    date, a teaser), unlike a menu or a sidebar of bare titles, which shows nothing of a change.
    Also the newest date each link's contexts show (a row's "last modified"). Only the first ``max_links``
    links are read, as for link extraction; each element's text length is measured once, so a page of many
    links under one parent costs linear, not quadratic, time."""
    if not body.strip():
        return PageLinks({}, set(), {})
    try:
        root = lxml.html.document_fromstring(body, parser=lxml.html.HTMLParser(encoding=encoding, recover=True,
                                                                              no_network=True))
    except (lxml.etree.ParserError, ValueError, LookupError, lxml.etree.XMLSyntaxError):
        return PageLinks({}, set(), {})
    hashes: dict[lxml.etree._Element, str] = {}
    lengths: dict[lxml.etree._Element, int] = {}

    def text_length(element: lxml.etree._Element) -> int:
        n = lengths.get(element)
        if n is None:
            n = lengths[element] = len(element.text_content().strip())
        return n

    items: dict[lxml.etree._Element, bool] = {}

    def is_item(element: lxml.etree._Element) -> bool:  # one of several of its tag under its parent
        known = items.get(element)
        if known is None:
            parent = element.getparent()
            known = items[element] = parent is not None and len(parent.findall(element.tag)) > 1
        return known

    out: dict[str, set[str]] = {}
    described: set[str] = set()
    dates: dict[str, str] = {}
    box_dates: dict[lxml.etree._Element, str] = {}
    for i, el in enumerate(root.iter("a")):
        if i >= max_links:
            break
        href = el.get("href")
        url = resolve(page_url, href) if href else None
        if url is None:
            continue
        own = text_length(el)
        box = None
        for anc in el.iterancestors():
            if anc.tag in _ITEMS or (anc.tag == "article" and is_item(anc)):
                box = anc
        if box is None:  # the smallest element around the link that says more than the link itself
            box = el
            while box.getparent() is not None and text_length(box) <= own:
                box = box.getparent()
        h = hashes.get(box)
        if h is None:
            text = " ".join(box.text_content().split())
            targets = " ".join(sorted(a.get("href", "") for a in box.iter("a")))
            h = hashes[box] = hashlib.blake2b(f"{text}\n{targets}".encode(), digest_size=6).hexdigest()
            box_dates[box] = newest_date(text)
        out.setdefault(url, set()).add(h)
        if text_length(box) > own:
            described.add(url)
            if box_dates[box] > dates.get(url, ""):
                dates[url] = box_dates[box]
    return PageLinks(out, described, dates)
