"""robots.txt per host, through Protego, fetched once per host by the crawler's own (budgeted) fetcher."""

from __future__ import annotations

import logging
from collections.abc import Callable
from urllib.parse import urlsplit

from protego import Protego

log = logging.getLogger(__name__)

_ALLOW_ALL = ""
_DISALLOW_ALL = "User-agent: *\nDisallow: /\n"


class RobotsRules:
    """Rules of each host seen so far. ``fetch_text(url)`` returns (status, text, error); status is None when
    the host could not be reached. Following RFC 9309: a 4xx robots.txt allows everything; a 5xx or an
    unreachable one disallows the host (it may be overloaded, and then crawling it is impolite)."""

    def __init__(self, user_agent: str, fetch_text: Callable[[str], tuple[int | None, str, str]],
                 enabled: bool = True) -> None:
        self.user_agent = user_agent.split("/")[0]
        self.enabled = enabled
        self._fetch_text = fetch_text
        self.texts: dict[str, str] = {}  # "scheme://host" -> robots.txt as used (kept in checkpoints)
        self._parsed: dict[str, Protego] = {}
        self.delays: dict[str, float] = {}  # netloc -> Crawl-delay seconds, for the fetcher
        self.problems: dict[str, str] = {}  # origin -> why its robots.txt could not be read

    def _rules(self, url: str) -> Protego:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        rules = self._parsed.get(origin)
        if rules is None:
            text = self.texts.get(origin)
            if text is None:
                status, body, error = self._fetch_text(origin + "/robots.txt")
                if status is not None and 200 <= status < 300:
                    text = body
                elif status is not None and 400 <= status < 500:
                    text = _ALLOW_ALL
                else:
                    problem = f"robots.txt of {origin} unavailable ({error or status}): not crawling that host"
                    log.warning("%s", problem)
                    self.problems[origin] = problem
                    text = _DISALLOW_ALL
                self.texts[origin] = text
            rules = self._parsed[origin] = Protego.parse(text)
            delay = rules.crawl_delay(self.user_agent)
            if delay:
                self.delays[parts.netloc] = float(delay)
        return rules

    def problem(self, url: str) -> str:
        parts = urlsplit(url)
        return self.problems.get(f"{parts.scheme}://{parts.netloc}", "")

    def allowed(self, url: str) -> bool:
        return not self.enabled or self._rules(url).can_fetch(url, self.user_agent)

