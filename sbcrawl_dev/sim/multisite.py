"""Several simulated sites behind one HTTP proxy, each under a domain of its own.

Every simulated site lives at ``*.stats.example``; a crawl of many sites (``sbcrawl_many_sites``) needs them
apart, through the one ``HTTP_PROXY`` a process has. Here site ``i`` answers as ``*.site<i>.example``: the
request's host is mapped back to ``stats.example`` for the site, and its answer's headers and bodies get
the site's domain in place of ``stats.example`` (a name of the same length, so ``Content-Length`` and
validators stay right). The server's log holds the renamed URLs, so requests are counted per site by the
server, not by the crawler (:meth:`MultiSiteServer.requests`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from sbcrawl_dev.sim.server import SimServer
from sbcrawl_dev.sim.site import Site
from sbcrawl_dev.sim.web import DOMAIN, Response

_MAX_SITES = 10  # one digit keeps each domain as long as DOMAIN


def site_domain(index: int) -> str:
    """The domain site ``index`` answers as (as long as ``stats.example``)."""
    if not 0 <= index < _MAX_SITES:
        raise ValueError(f"a multi-site server holds 1 to {_MAX_SITES} sites, not a site {index}")
    domain = f"site{index}.example"
    assert len(domain) == len(DOMAIN)
    return domain


@dataclass(frozen=True)
class _Profile:
    name: str


class _Sites:
    """What the server asks a site for (``response``), dispatched on the request's host."""

    def __init__(self, sites: Sequence[Site]) -> None:
        self.sites = {site_domain(i): site for i, site in enumerate(sites)}
        self.profile = _Profile("+".join(site.profile.name for site in sites))

    def response(self, method: str, url: str, count: bool = True,
                 conditions: Mapping[str, str] | None = None) -> Response:
        host = url.split("/", 3)[2].split(":")[0].lower() if "://" in url else ""
        domain = next((d for d in self.sites if host == d or host.endswith("." + d)), None)
        if domain is None:  # off every site: the first site answers (its out-of-scope hosts and all)
            return next(iter(self.sites.values())).response(method, url, count, conditions)
        site = self.sites[domain]
        status, headers, body = site.response(method, url.replace(domain, DOMAIN, 1), count, conditions)
        old, new = DOMAIN.encode(), domain.encode()
        return Response(status, {k: v.replace(DOMAIN, domain) for k, v in headers.items()},
                        _renamed(body, old, new))


    def reset_state(self) -> None:
        for site in self.sites.values():
            site.reset_state()


def _renamed(chunks: Iterable[bytes], old: bytes, new: bytes) -> Iterator[bytes]:
    # HTML pages are one chunk; files are streamed in chunks and name no host.
    for chunk in chunks:
        yield chunk.replace(old, new)


class MultiSiteServer(SimServer):
    """Serve ``sites`` on 127.0.0.1 as one proxy, site ``i`` as ``*.site<i>.example``."""

    def __init__(self, sites: Sequence[Site], port: int = 0, host: str = "127.0.0.1", verbose: bool = False) -> None:
        if not sites:
            raise ValueError("a multi-site server needs at least one site")
        super().__init__(_Sites(sites), port, host, verbose)  # type: ignore[arg-type]  # duck-typed Site
        self.sites = list(sites)

    @property
    def start_urls(self) -> list[str]:
        """Each site's start URL under its own domain, in the order of ``sites``."""
        return [site.start_url.replace(DOMAIN, site_domain(i)) for i, site in enumerate(self.sites)]

    def requests(self, index: int) -> int:
        """Requests site ``index`` received (GET and HEAD), as the server logged them."""
        domain = site_domain(index)
        hosts = [entry.url.split("/", 3)[2].split(":")[0] for entry in self.log]
        return sum(1 for h in hosts if h == domain or h.endswith("." + domain))

    def targets(self, index: int) -> set[str]:
        """The site's targets (its ground truth) under its own domain."""
        return {url.replace(DOMAIN, site_domain(index)) for url in self.sites[index].targets}
