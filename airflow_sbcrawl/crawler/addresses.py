"""Which network addresses a crawl may connect to.

A crawler that follows links and redirects chosen by the site must not become a way into the network it
runs in (cloud metadata at 169.254.169.254, a Redis on localhost, intranet hosts). Public addresses are
always allowed; loopback, private, link-local and reserved ones only when the start URL itself is on such
an address (a local simulator, an intranet portal), and then only that kind. The check runs on the address
actually connected to, after DNS resolution, so a public name that resolves to 127.0.0.1 is refused too."""

from __future__ import annotations

import ipaddress
import logging
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

PUBLIC = "public"


class AddressRefused(ConnectionError):
    """A connection to an address the crawl may not reach; the message says which and why."""


def address_kind(host: str) -> str | None:
    """"public", "loopback", "link-local", "private" or "reserved" for an IP literal or a loopback name;
    None for a name that has to be resolved first."""
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return "loopback"
    try:
        ip = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_private:
        return "private"
    if not ip.is_global or ip.is_multicast:
        return "reserved"
    return PUBLIC


class AddressGuard:
    """Decides, per connection, whether an address may be reached. The start host's own kind is learnt
    from the start URL when it is an IP literal or a loopback name, else from the first connection made
    to it (its resolved address); ``allow_private_start=False`` refuses every non-public address."""

    def __init__(self, start_url: str, allow_private_start: bool = True) -> None:
        self.start_host = (urlsplit(start_url).hostname or "").lower()
        self.allow_private_start = allow_private_start
        self.allowed_kind: str | None = None
        self._decided = False
        kind = address_kind(self.start_host)
        if kind is not None:
            self._decide(kind, self.start_host)

    def _decide(self, kind: str, address: str) -> None:
        self._decided = True
        if kind != PUBLIC and self.allow_private_start:
            self.allowed_kind = kind
            log.warning("the start URL's host %s is on a %s address (%s): %s addresses are allowed for this "
                        "crawl, other non-public addresses are refused", self.start_host, kind, address, kind)

    def check(self, host: str, address: str | None = None) -> None:
        """Raise AddressRefused unless ``host`` (connected at ``address``, when known) may be reached."""
        kind = address_kind(address) if address else address_kind(host)
        if kind is None:
            return
        if not self._decided and host.lower() == self.start_host:
            self._decide(kind, address or host)
        if kind in (PUBLIC, self.allowed_kind):
            return
        where = host if not address or address == host else f"{host} ({address})"
        raise AddressRefused(f"refused to connect to {where}: a {kind} address, not reachable from a crawl "
                             f"that started at {self.start_host}")


def start_url_problem(url: str) -> str:
    """Why a start URL may not be crawled when private starts are not allowed ("" when it may)."""
    kind = address_kind(urlsplit(url).hostname or "")
    if kind is None or kind == PUBLIC:
        return ""
    return f"{urlsplit(url).hostname} is a {kind} address; only public websites can be crawled from here"
