"""Every knob of a crawl in one dataclass, with the paper's defaults (§4.5, §4.8, appendix A.2/B.3)."""

from __future__ import annotations

import dataclasses
import functools
import math
import mimetypes
from dataclasses import dataclass, field
from typing import Any

from airflow_sbcrawl import __version__
from airflow_sbcrawl.crawler.addresses import start_url_problem
from airflow_sbcrawl.crawler.linktext import GROUPS as LINK_GROUPS
from airflow_sbcrawl.crawler.linktext import SCOPES as LINK_TEXT_SCOPES
from airflow_sbcrawl.crawler.mimes import BLOCKED_EXTENSIONS, BLOCKED_MIME_PREFIXES, TARGET_MIME_TYPES
from airflow_sbcrawl.crawler.policies.registry import DEFAULT_POLICY, POLICIES, REGISTRY
from airflow_sbcrawl.crawler.urls import MAX_URL_LENGTH, InvalidURL, normalize, target_host

DEFAULT_USER_AGENT = f"airflow-sbcrawl/{__version__} (+https://pypi.org/project/airflow-sbcrawl/)"



def _known_mime(mime: str) -> bool:
    """Whether ``mime`` is a type servers send: one of the paper's targets, one Python knows (its own table,
    not the machine's files, so that a setting means the same everywhere), or a vendor, personal, x- or
    structured-suffix (+xml, +json) type, which no table lists in full."""
    subtype = mime.partition("/")[2]
    if mime in TARGET_MIME_TYPES or subtype.startswith(("vnd.", "x-", "prs.")) or "+" in subtype:
        return True
    return mime in _builtin_mime_types()


@functools.cache
def _builtin_mime_types() -> frozenset[str]:
    table = mimetypes.MimeTypes(filenames=())  # extension -> type maps, strict and common ones
    return frozenset(mime for by_extension in table.types_map for mime in by_extension.values())


class ConfigError(ValueError):
    """A crawl setting that cannot work; the message names the setting and the accepted values."""


@dataclass
class CrawlConfig:
    """Every setting of a crawl, validated when made (``ConfigError`` names the setting at fault). Saved
    with each checkpoint: a resume must share the settings that shape the saved state (the start URL, the
    policy, the tag-path hashing, the seed)."""

    start_url: str
    # Budget: requests counts GET and HEAD alike (robots.txt and retries included); bytes are body bytes
    # as received on the wire. Neither is ever overshot.
    max_requests: int = 10_000
    max_bytes: int = 50 * 1024**3
    policy: str = DEFAULT_POLICY
    seed: int = 0

    # Tag paths and actions (§3.2): n-grams, projection to 2**m dims with hash parameters w and prime.
    ngram: int = 2
    dim_log2: int = 12
    hash_width: int = 15
    hash_prime: int = 766_245_317
    theta: float = 0.75
    tagpath_ignore_digits: bool = True  # not in the paper: numbered CMS ids would split actions
    # Sleeping bandit (§3.2).
    alpha: float = 2 * math.sqrt(2)
    bandit_epsilon: float = 1e-6
    # Not in the paper: the default policy's credit for the links a page reveals (see policies.sb).
    credit_gamma: float = 0.9
    # Not in the paper: the parts of a link (anchor, title, row, url) whose words the default policy learns
    # from to order the links of one action (see linktext); empty = none.
    link_context: tuple[str, ...] = ("anchor", "title", "row", "url")
    # Where the link text model orders links: "template" = within the URL template the bandits chose;
    # "action" = also across an action's templates where the bandits cannot tell them apart (none has paid,
    # or several were never tried); see policies.sb. Off: it did not help on the development sites.
    link_text_scope: str = "template"
    # Online URL classifier (§3.3): batch size b, first batch labelled by HEAD requests.
    batch_size: int = 10

    # Early stopping. "drought" (the default): stop after max(es_min_pages, es_expected / rate, es_share x
    # pages so far) pages without a new target, rate being the crawl's own targets per page. "paper" (§4.8,
    # the paper's variant's default): every v pages, EMA (decay gamma) of the target slope below epsilon
    # kappa times.
    early_stopping: bool = True
    stop_rule: str = ""  # "" = the policy's own: "drought" for the default policy, "paper" for the others
    # 50, not 300: on a site of a few hundred pages a 300-page floor outlasted the site, so the crawl never
    # stopped after its last dataset (the rate and share terms size the window on larger sites).
    es_min_pages: int = 50
    es_expected: float = 30.0
    es_share: float = 0.5
    es_window: int = 1000
    es_epsilon: float = 0.2
    es_decay: float = 0.05
    es_patience: int = 15

    target_mime_types: tuple[str, ...] = TARGET_MIME_TYPES
    blocked_mime_prefixes: tuple[str, ...] = BLOCKED_MIME_PREFIXES
    blocked_extensions: frozenset[str] = field(default=BLOCKED_EXTENSIONS)
    max_page_bytes: int = 10 * 1024**2
    max_target_bytes: int = 2 * 1024**3
    max_redirects: int = 10
    # Links read per page: a 10 MB page of 300k links would cost most of a minute of CPU; the rest are
    # dropped (and logged).
    max_links_per_page: int = 10_000
    # A compressed body expanding more than this is a decompression bomb (past its first MiB).
    max_compression_ratio: float = 200.0

    # Politeness and HTTP.
    respect_robots: bool = True
    # Read the site's XML sitemaps (robots.txt's Sitemap: lines, else /sitemap.xml) at the start of a run:
    # their pages join the frontier as candidates, and a warm run trusts an unchanged <lastmod>.
    sitemaps: bool = True
    delay: float = 1.0
    # Requests in flight at once across the site's hosts. A host with a delay (this one or its Crawl-delay)
    # still gets one request at a time, spaced by the delay; without a delay it may get them all.
    concurrency: int = 8
    max_crawl_delay: float = 60.0  # a robots.txt Crawl-delay above this is capped to it
    # The delay is kept per IP address: two host names of one site on one machine share it (False: per
    # host name). Requests through a proxy are spaced per host name (the proxy resolves the names).
    polite_per_address: bool = True
    # A start host's robots.txt failing in a way the fetcher does not retry itself (HTTP 500, a response
    # past its deadline) is asked again this many times, backing off.
    robots_retries: int = 2
    # A start URL on a loopback, private or link-local address allows that kind of address (and no other
    # non-public one) for the crawl; False refuses such start URLs (crawls started from a web form).
    allow_private_start: bool = True
    user_agent: str = DEFAULT_USER_AGENT
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    # Connect + headers + body, so a server trickling bytes cannot hold the crawl; extended while a body
    # arrives faster than min_transfer_rate bytes/s (large files on slow links are not drips).
    response_timeout: float = 60.0
    min_transfer_rate: float = 32 * 1024
    max_host_timeouts: int = 3  # responses in a row missing their deadline before a host is given up
    retries: int = 3
    backoff: float = 1.0
    max_retry_after: float = 120.0
    # Other hosts (and their subdomains) whose files the site's pages may link, e.g. a data portal or a CDN:
    # their links predicted to be files are fetched (robots.txt, delays and address checks as for the
    # site), never crawled as pages. "host" or "host:port".
    target_hosts: tuple[str, ...] = ()

    # Checkpoints: every so many pages and every so many seconds, whichever comes first.
    checkpoint_every_pages: int = 200
    checkpoint_every_seconds: float = 60.0

    def __post_init__(self) -> None:
        self.target_mime_types = tuple(m.lower() for m in self.target_mime_types)
        if isinstance(self.target_hosts, str):
            self.target_hosts = (self.target_hosts,)
        self.target_hosts = tuple(self.target_hosts)
        self.blocked_mime_prefixes = tuple(m.lower() for m in self.blocked_mime_prefixes)
        self.blocked_extensions = frozenset(e.lower().lstrip(".") for e in self.blocked_extensions)
        self.validate()

    def validate(self) -> None:
        """Check every setting (and normalise the start URL); raises ``ConfigError``."""
        try:
            self.start_url = normalize(self.start_url)
        except InvalidURL as exc:
            raise ConfigError(f"start_url: {exc}") from exc
        if len(self.start_url) > MAX_URL_LENGTH:
            raise ConfigError(f"start_url: longer than {MAX_URL_LENGTH} characters")
        try:
            self.target_hosts = tuple(dict.fromkeys(target_host(str(h)) for h in self.target_hosts))
        except InvalidURL as exc:
            raise ConfigError(f"target_hosts: {exc}") from exc
        if problem := start_url_problem(self.start_url, allow_private=self.allow_private_start):
            raise ConfigError(f"start_url: {problem}")
        positive_ints = ("max_requests", "max_bytes", "max_page_bytes", "max_target_bytes", "batch_size",
                         "es_window", "es_patience", "es_min_pages", "checkpoint_every_pages", "ngram")
        for name in positive_ints:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a whole number >= 1, got {value!r}")
        for name in ("delay", "backoff", "retries", "max_redirects", "alpha", "bandit_epsilon", "credit_gamma"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        for name in ("connect_timeout", "read_timeout", "response_timeout", "checkpoint_every_seconds"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be > 0, got {getattr(self, name)!r}")
        self._validate_hostile_limits()
        if not 0.0 <= self.theta <= 1.0:
            raise ConfigError(f"theta must be within [0, 1], got {self.theta!r}")
        if not 0 < self.dim_log2 < self.hash_width <= 62:
            raise ConfigError(f"need 0 < dim_log2 < hash_width <= 62, got {self.dim_log2}, {self.hash_width}")
        if self.stop_rule not in ("", "drought", "paper"):
            raise ConfigError(f"stop_rule must be drought or paper, got {self.stop_rule!r}")
        unknown = set(self.link_context) - set(LINK_GROUPS)
        if unknown:
            raise ConfigError(f"link_context: {', '.join(sorted(unknown))} not among {', '.join(LINK_GROUPS)}")
        if self.link_text_scope not in LINK_TEXT_SCOPES:
            raise ConfigError(f"link_text_scope must be one of {', '.join(LINK_TEXT_SCOPES)}, "
                              f"got {self.link_text_scope!r}")
        if self.es_expected <= 0:
            raise ConfigError(f"es_expected must be > 0, got {self.es_expected!r}")
        if not 0 <= self.es_share <= 10:
            raise ConfigError(f"es_share must be between 0 and 10, got {self.es_share!r}")
        if self.policy not in POLICIES:
            raise ConfigError(f"policy must be one of {', '.join(POLICIES)}; got {self.policy!r}")
        if not self.target_mime_types:
            raise ConfigError("target_mime_types is empty: the crawl would have nothing to retrieve")
        for mime in self.target_mime_types:
            if "/" not in mime:
                raise ConfigError(f"target_mime_types: {mime!r} is not a MIME type like 'text/csv'")
            if not _known_mime(mime):
                raise ConfigError(f"target_mime_types: {mime!r} is not a known MIME type (a typo would make the "
                                  "crawl look for files no server sends); give registered types like text/csv or "
                                  "application/pdf; vendor and x- types (application/vnd.…, application/x-…) "
                                  "are accepted too")

    @property
    def effective_stop_rule(self) -> str:
        """The early-stopping rule: the one set, else the policy's own (see ``PolicySpec.stop_rule``)."""
        return self.stop_rule or REGISTRY[self.policy].stop_rule

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings (``from_dict`` reads them back)."""
        out = dataclasses.asdict(self)
        out["target_mime_types"] = list(self.target_mime_types)
        out["blocked_mime_prefixes"] = list(self.blocked_mime_prefixes)
        out["blocked_extensions"] = sorted(self.blocked_extensions)
        out["target_hosts"] = list(self.target_hosts)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CrawlConfig:
        """Settings from a dict (a checkpoint's, a DAG's params); unknown names raise ``ConfigError``."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown crawl settings: {', '.join(unknown)}")
        data = dict(data)
        for key in ("target_mime_types", "blocked_mime_prefixes", "target_hosts", "link_context"):
            if key in data:
                data[key] = tuple(data[key])
        if "blocked_extensions" in data:
            data["blocked_extensions"] = frozenset(data["blocked_extensions"])
        return cls(**data)

    def replace(self, **changes: Any) -> CrawlConfig:
        """A copy with some settings changed (validated)."""
        return dataclasses.replace(self, **changes)

    def _validate_hostile_limits(self) -> None:
        """The limits that keep a hostile or broken site from holding or flooding the crawl."""
        for name in ("max_links_per_page", "max_host_timeouts", "concurrency"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a whole number >= 1, got {value!r}")
        if not isinstance(self.robots_retries, int) or self.robots_retries < 0:
            raise ConfigError(f"robots_retries must be a whole number >= 0, got {self.robots_retries!r}")
        if not self.max_crawl_delay >= 0:
            raise ConfigError(f"max_crawl_delay must be >= 0 seconds, got {self.max_crawl_delay!r}")
        if not self.min_transfer_rate > 0:
            raise ConfigError(f"min_transfer_rate must be > 0 bytes per second, got {self.min_transfer_rate!r}")
        if not self.max_compression_ratio >= 1:
            raise ConfigError(f"max_compression_ratio must be >= 1, got {self.max_compression_ratio!r}")
