"""robots.txt per host, through Protego, fetched once per host by the crawler's own (budgeted) fetcher.

``RobotsRules`` keeps the rules of each host; ``robots_txt_reader`` is how it reads a robots.txt (through
the crawl's fetcher); ``start_allowed`` asks the start host's again, backing off, while it is unavailable."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from urllib.parse import urlsplit

import numpy as np
from protego import Protego

from airflow_sbcrawl.crawler.budget import StopRequested
from airflow_sbcrawl.crawler.fetch import Fetcher
from airflow_sbcrawl.crawler.urls import Scope, resolve

log = logging.getLogger(__name__)

_ALLOW_ALL = ""
_DISALLOW_ALL = "User-agent: *\nDisallow: /\n"
_DISALLOW_ALL_RULES = Protego.parse(_DISALLOW_ALL)


class RobotsRules:
    """Rules of each host seen so far. ``fetch_text(url)`` returns (status, text, error); status is None when
    the host could not be reached. Following RFC 9309: a 4xx robots.txt allows everything; a 5xx or an
    unreachable one disallows the host (it may be overloaded, and then crawling it is impolite).

    Only rules actually read (2xx, 4xx) are kept in ``texts`` (and so in checkpoints): an unavailable
    robots.txt is a passing state of the host, disallowing it only until ``retry_after`` seconds later,
    when it is asked again."""

    def __init__(self, user_agent: str, fetch_text: Callable[[str], tuple[int | None, str, str]],
                 enabled: bool = True, max_crawl_delay: float = 60.0, retry_after: float = 60.0) -> None:
        self.user_agent = user_agent.split("/")[0]
        self.enabled = enabled
        self.max_crawl_delay = max_crawl_delay
        self.retry_after = retry_after
        self._fetch_text = fetch_text
        self.texts: dict[str, str] = {}  # "scheme://host" -> robots.txt as used (kept in checkpoints)
        self._parsed: dict[str, Protego] = {}
        self.delays: dict[str, float] = {}  # netloc -> Crawl-delay seconds, for the fetcher
        self.problems: dict[str, str] = {}  # origin -> why its robots.txt could not be read
        self.quiet = False  # failures logged at INFO (the caller reports them itself)
        self.failures: dict[str, tuple[int | None, str]] = {}  # origin -> (status, error) of that failure
        self._unavailable_until: dict[str, float] = {}  # origin -> when to ask for its robots.txt again
        # Rules read, by the "scheme://authority" text that starts a URL (normalised URLs: the origin itself),
        # so that the URLs of a page find their host's rules without being parsed.
        self._by_prefix: dict[str, Protego] = {}

    def _rules(self, url: str) -> Protego:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        rules = self._parsed.get(origin)
        if rules is not None:
            return rules
        text = self.texts.get(origin)
        if text is None:
            if time.monotonic() < self._unavailable_until.get(origin, 0.0):
                return _DISALLOW_ALL_RULES
            status, body, error = self._fetch_text(origin + "/robots.txt")
            if status is not None and 200 <= status < 300:
                text = body
            elif status is not None and 400 <= status < 500:
                text = _ALLOW_ALL
            else:
                problem = f"robots.txt of {origin} unavailable ({error or f'HTTP {status}'}): not crawling that host"
                # The start host's failure is reported once, by whoever runs the crawl (it ends the crawl).
                (log.info if self.quiet else log.warning)("%s for now; asking again in %gs", problem,
                                                          self.retry_after)
                self.problems[origin] = problem
                self.failures[origin] = (status, error)
                self._unavailable_until[origin] = time.monotonic() + self.retry_after
                return _DISALLOW_ALL_RULES
            self.problems.pop(origin, None)
            self.failures.pop(origin, None)
            self._unavailable_until.pop(origin, None)
            self.texts[origin] = text
        rules = self._parsed[origin] = Protego.parse(text)
        delay = rules.crawl_delay(self.user_agent)
        if delay:
            delay = float(delay)
            if delay > self.max_crawl_delay:
                log.warning("robots.txt of %s asks for a Crawl-delay of %gs: capped to %gs", origin, delay,
                            self.max_crawl_delay)
                delay = self.max_crawl_delay
            self.delays[parts.netloc] = delay
        return rules

    def problem(self, url: str) -> str:
        """Why the robots.txt of ``url``'s host could not be read ("" when it was)."""
        parts = urlsplit(url)
        return self.problems.get(f"{parts.scheme}://{parts.netloc}", "")

    def failure(self, url: str) -> tuple[int | None, str]:
        """(status, error) of the last failed fetch of ``url``'s robots.txt."""
        parts = urlsplit(url)
        return self.failures.get(f"{parts.scheme}://{parts.netloc}", (None, ""))

    def sitemaps(self, url: str) -> list[str]:
        """The sitemap URLs that the robots.txt of ``url``'s host declares (its ``Sitemap:`` lines), resolved
        against it; none when that robots.txt was not read (or robots.txt is not respected)."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if not self.enabled or origin not in self.texts:
            return []
        found = (resolve(origin + "/robots.txt", line.strip()) for line in self._rules(url).sitemaps)
        return list(dict.fromkeys(u for u in found if u))

    def unavailable(self, url: str) -> bool:
        """True while the robots.txt of ``url``'s host is failing (a transient state, never saved)."""
        return bool(self.problem(url))

    def retry_now(self, url: str) -> None:
        """Ask for ``url``'s robots.txt again at its next use."""
        parts = urlsplit(url)
        self._unavailable_until.pop(f"{parts.scheme}://{parts.netloc}", None)

    def allowed(self, url: str) -> bool:
        """Whether robots.txt lets the crawl fetch ``url`` (its host's robots.txt is read at its first URL,
        which may raise ``CrawlInterrupted``)."""
        if not self.enabled:
            return True
        end = url.find("/", url.find("//") + 2) if "//" in url else -1
        prefix = url[:end] if end > 0 else ""
        rules = self._by_prefix.get(prefix) if prefix else None
        if rules is None:
            rules = self._rules(url)
            parts = urlsplit(url)
            origin = f"{parts.scheme}://{parts.netloc}"
            if prefix == origin and self._parsed.get(origin) is rules:  # rules read, not a passing refusal
                self._by_prefix[prefix] = rules
        return rules.can_fetch(url, self.user_agent)

    # -- checkpoints: only the rules read are saved ------------------------------------------------------
    def state(self) -> dict:
        """The robots.txt texts read (the parsed rules and passing failures are not kept)."""
        return {"texts": self.texts}

    def arrays(self) -> dict[str, np.ndarray]:
        return {}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self.texts = dict(state["texts"])


def robots_txt_reader(fetcher: Fetcher, scope: Scope, outcomes: Counter[str]) -> Callable[
        [str], tuple[int | None, str, str]]:
    """``RobotsRules``' way to read a robots.txt: a GET through the crawl's fetcher (budgeted, polite), one
    redirect followed if it stays within the crawl's scope; counted in ``outcomes``."""

    def read(url: str) -> tuple[int | None, str, str]:
        resp = fetcher.fetch(url)
        if resp.kind == "redirect":  # followed once, and only within the site
            target = resolve(url, resp.location or "")
            if target and target in scope:
                resp = fetcher.fetch(target)
        outcomes["robots.txt"] += 1
        text = ""
        if resp.kind == "html":
            text = resp.body.decode("utf-8", "replace")
        elif resp.kind == "target" and resp.path is not None:  # text/plain is one of the target types
            text = resp.path.read_bytes().decode("utf-8", "replace")
            resp.discard()
        return resp.status, text, resp.error

    return read


def start_allowed(robots: RobotsRules, url: str, retries: int, backoff: float, stop: threading.Event) -> bool:
    """Whether the start page may be crawled: its host's robots.txt, asked again up to ``retries`` times
    with back-off while it is unavailable (raises StopRequested when ``stop`` is set meanwhile)."""
    robots.quiet = True  # a failure ends the crawl, and the crawl's result says why: said once, there
    try:
        for attempt in range(retries + 1):
            if robots.allowed(url) or not robots.unavailable(url):
                return robots.allowed(url)
            status, error = robots.failure(url)
            if error.startswith("refused") or Fetcher.retries_itself(status, error):
                return False  # an address the crawl may not reach, or already retried with back-off
            if attempt < retries:
                wait = backoff * 2**attempt
                log.warning("retrying robots.txt of the start host in %gs", wait)
                if stop.wait(wait):
                    raise StopRequested("stop requested")
                robots.retry_now(url)
        return False
    finally:
        robots.quiet = False
