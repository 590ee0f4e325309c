"""HTML building: a small builder that records every link it writes, and the two site themes ("chromes").

Recording links while writing HTML lets the ground-truth BFS and the server share one code path: the links
the oracle counts are exactly the ``<a>``/``<area>``/``<iframe>`` the crawler will parse.

Two chromes, as on real portals where the data catalogue runs on other software than the main CMS:
``cms`` (www and pub hosts, Drupal-like) and ``catalogue`` (the data host, CKAN-like).  Both carry a header
menu, breadcrumbs, a sidebar and a footer on every page, so most links of any page are navigation.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from html import escape

from sbcrawl_dev.sim import seeded

_WORDS_TEXT = (
    "statistics data survey annual quarterly monthly regional national population households labour market "
    "prices growth estimate indicator release revision methodology series trend index rate share average "
    "median total change compared previous year period coverage sample response official figures report "
    "publication analysis sector enterprises income expenditure employment education health housing "
    "transport energy environment trade tourism agriculture finance public local municipalities"
)
_WORDS = tuple(_WORDS_TEXT.split())


def _sentence(draws: Iterator[int]) -> str:
    n = 7 + next(draws) % 10
    nw = len(_WORDS)
    return " ".join([_WORDS[next(draws) % nw] for _ in range(n)]).capitalize() + "."


def sentence(seed: int, *key: object) -> str:
    return _sentence(seeded.stream(seed, *key))


def paragraph(seed: int, *key: object, sentences: int = 3) -> str:
    draws = seeded.stream(seed, *key, "para")
    return " ".join([_sentence(draws) for _ in range(sentences)])


def words(seed: int, vocabulary: Sequence[str], n: int, *key: object) -> list[str]:
    draws = seeded.stream(seed, *key)
    return [vocabulary[next(draws) % len(vocabulary)] for _ in range(n)]


class _Closer:
    # A plain class, not @contextmanager: pages open thousands of tags and a generator per tag costs 3×.
    __slots__ = ("close_tag", "parts")

    def __init__(self, parts: list[str], close_tag: str) -> None:
        self.parts = parts
        self.close_tag = close_tag

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        self.parts.append(self.close_tag)


class Html:
    """An HTML string builder that remembers the links (href of a, area, iframe) it emits."""

    __slots__ = ("base", "links", "parts")

    def __init__(self, base: str = "") -> None:
        # Links to the page's own host are written root-relative, as CMSs do; ``links`` keeps them absolute.
        self.base = base + "/" if base else ""
        self.parts: list[str] = []
        self.links: list[str] = []

    def _href(self, url: str) -> str:
        if self.base and url.startswith(self.base):
            return url[len(self.base) - 1 :]
        return url

    def tag(self, tag_name: str, cls: str | None = None, id: str | None = None, **attrs: str) -> _Closer:
        """``with b.tag("div", "cls"):`` writes the open tag now and the close tag on exit."""
        self.open(tag_name, cls, id, **attrs)
        return _Closer(self.parts, f"</{tag_name}>")

    def open(self, tag_name: str, cls: str | None = None, id: str | None = None, **attrs: str) -> None:
        a = ""
        if id:
            a += f' id="{id}"'
        if cls:
            a += f' class="{cls}"'
        for k, v in attrs.items():
            a += f' {k.rstrip("_").replace("_", "-")}="{escape(v)}"'
        self.parts.append(f"<{tag_name}{a}>")

    def close(self, name: str) -> None:
        self.parts.append(f"</{name}>")

    def text(self, s: str) -> None:
        self.parts.append(escape(s, quote=False))

    def raw(self, s: str) -> None:
        self.parts.append(s)

    def el(self, name: str, text: str, cls: str | None = None) -> None:
        c = f' class="{cls}"' if cls else ""
        self.parts.append(f"<{name}{c}>{escape(text, quote=False)}</{name}>")

    def a(self, href: str, text: str, cls: str | None = None, **attrs: str) -> None:
        self.links.append(href)
        c = f' class="{cls}"' if cls else ""
        extra = "".join(f' {k.rstrip("_")}="{escape(v)}"' for k, v in attrs.items())
        self.parts.append(f'<a href="{escape(self._href(href))}"{c}{extra}>{escape(text, quote=False)}</a>')

    def area(self, href: str, alt: str, coords: str) -> None:
        self.links.append(href)
        href = escape(self._href(href))
        self.parts.append(f'<area shape="rect" coords="{coords}" href="{href}" alt="{escape(alt)}">')

    def iframe(self, src: str, title: str) -> None:
        self.links.append(src)
        self.parts.append(f'<iframe src="{escape(src)}" title="{escape(title)}" loading="lazy"></iframe>')

    def link_list(self, items: Sequence[tuple[str, str]], ul_cls: str | None = None,
                  li_cls: str | None = None) -> None:
        with self.tag("ul", ul_cls):
            for href, label in items:
                with self.tag("li", li_cls):
                    self.a(href, label)

    def html(self) -> str:
        return "".join(self.parts)


def _copy(src: Html, dst: Html) -> None:
    dst.parts.extend(src.parts)
    dst.links.extend(src.links)


class Chrome:
    """What every page of a host shares: head, header navigation, breadcrumbs, sidebar, footer.

    ``site`` provides the menus (``menu()``, ``footer_links()``, ``social_links()``), so the chrome knows
    nothing of the site's structure.
    """

    def __init__(self, style: str, site_name: str, home: str, unique_ids: bool, base: str) -> None:
        self.base = base
        self.style = style
        self.site_name = site_name
        self.home = home
        self.unique_ids = unique_ids
        # Header and footer are identical on every page of a host: built once, copied into each page.
        self._header: Html | None = None
        self._footer_html: Html | None = None

    def page(
        self,
        b: Html,
        site: object,
        title: str,
        crumbs: Sequence[tuple[str, str]],
        body_class: str,
        node_id: int,
        main: Html,
        sidebar: Sequence[tuple[str, Sequence[tuple[str, str]]]] = (),
    ) -> None:
        """Write a whole page into ``b``: chrome around the already-built ``main`` content."""
        b.raw(f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)} | '
              f'{escape(self.site_name)}</title><link rel="stylesheet" href="/static/site.css"></head>')
        b.open("body", body_class)
        if self._header is None:
            self._header = Html(self.base)
            if self.style == "cms":
                self._cms_header(self._header, site)
            else:
                self._catalogue_header(self._header, site)
        _copy(self._header, b)
        self._breadcrumbs(b, crumbs, title)
        outer = f"node-{node_id}" if self.unique_ids else None
        with b.tag("div", "layout-container"):
            with b.tag("main", "main-content", id="main"), b.tag("div", "node", id=outer):
                _copy(main, b)
            if sidebar:
                self._sidebar(b, sidebar)
        if self._footer_html is None:
            self._footer_html = Html(self.base)
            self._footer(self._footer_html, site)
        _copy(self._footer_html, b)
        b.raw("</body></html>\n")

    def _cms_header(self, b: Html, site: object) -> None:
        with b.tag("header", "site-header", id="header"):
            b.raw('<a href="#main" class="visually-hidden">Skip to main content</a>')
            with b.tag("div", "branding"):
                b.a(self.home, self.site_name, cls="site-logo", rel="home")
            with b.tag("nav", "main-menu", aria_label="Main navigation"), b.tag("ul", "menu menu--main"):
                for href, label, children in site.menu():  # type: ignore[attr-defined]
                    with b.tag("li", "menu-item" + (" menu-item--expanded" if children else "")):
                        b.a(href, label)
                        if children:
                            b.link_list(children, ul_cls="menu submenu", li_cls="menu-item")
            with b.tag("div", "header-tools"):
                b.a(site.search_url(), "Advanced search", cls="search-link")  # type: ignore[attr-defined]
                with b.tag("ul", "language-switcher"):
                    for href, label in site.language_links():  # type: ignore[attr-defined]
                        with b.tag("li"):
                            b.a(href, label, hreflang=label[:2].lower())

    def _catalogue_header(self, b: Html, site: object) -> None:
        with b.tag("div", "masthead"), b.tag("div", "container"):
            b.a(self.home, self.site_name + " — Data catalogue", cls="logo")
            with b.tag("nav", "navbar"), b.tag("ul", "nav nav-pills"):
                for href, label, _ in site.menu():  # type: ignore[attr-defined]
                    with b.tag("li"):
                        b.a(href, label)

    def _breadcrumbs(self, b: Html, crumbs: Sequence[tuple[str, str]], title: str) -> None:
        with b.tag("nav", "breadcrumb", aria_label="Breadcrumb"), b.tag("ol"):
            for href, label in crumbs:
                with b.tag("li", "breadcrumb-item"):
                    b.a(href, label)
            b.el("li", title, cls="breadcrumb-item active")

    def _sidebar(self, b: Html, blocks: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> None:
        with b.tag("aside", "sidebar", role="complementary"):
            for i, (heading, links) in enumerate(blocks):
                block_id = f"block-{heading.lower().replace(' ', '-')}" if self.unique_ids else None
                with b.tag("section", f"block block-{i}", id=block_id):
                    b.el("h2", heading, cls="block-title")
                    b.link_list(links, ul_cls="block-links")

    def _footer(self, b: Html, site: object) -> None:
        with b.tag("footer", "site-footer"):
            with b.tag("div", "footer-menu"):
                b.link_list(site.footer_links(), ul_cls="menu menu--footer")  # type: ignore[attr-defined]
            with b.tag("div", "social"):
                for href, label in site.social_links():  # type: ignore[attr-defined]
                    b.a(href, label, cls="social-link", rel="external")
            b.el("p", "© National Statistics Office. Reuse permitted with attribution.", cls="copyright")
