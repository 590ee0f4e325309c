"""Which network addresses a crawl may connect to.

A crawler that follows links and redirects chosen by the site must not become a way into the network it
runs in (cloud metadata at 169.254.169.254, a Redis on localhost, intranet hosts). Public addresses are
always allowed; loopback, private and reserved ones only when the start URL itself is on such an address (a
local simulator, an intranet portal), and then only that kind; link-local and cloud-metadata addresses never.
The check runs on each address a name resolves to, before connecting to it (the connection goes to the
checked address, not to the name), so a public name that resolves to 127.0.0.1 gets no TCP handshake."""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

PUBLIC = "public"
METADATA = "cloud-metadata"
# Kinds never reached, whatever the start URL: instance metadata serves a cloud machine's credentials.
NEVER = frozenset({"link-local", METADATA})
# Instance-metadata services outside link-local space: AWS's IPv6 one, Alibaba's, Azure's wire server.
_METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200", "168.63.129.16"))
# What the C resolver (inet_aton) reads as an IPv4 address: 1 to 4 numbers, decimal, octal or hex, so
# "2852039166", "0x7f000001", "127.1" and "0" are addresses, not names.
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}$")


class AddressRefused(ConnectionError):
    """A connection to an address the crawl may not reach; the message says which and why."""


def address_kind(host: str) -> str | None:
    """"public", "loopback", "link-local", "cloud-metadata", "private" or "reserved" for an IP literal (in
    any form the resolver reads as one) or a loopback name; None for a name that has to be resolved first."""
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return "loopback"
    try:
        ip = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        if not _NUMERIC_HOST.match(name):
            return None
        try:
            ip = ipaddress.IPv4Address(socket.inet_aton(name))
        except OSError:
            return "reserved"  # numeric but not an address the resolver reads (out of range): never a name
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip in _METADATA_ADDRESSES:
        return METADATA
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
        if kind != PUBLIC and kind not in NEVER and self.allow_private_start:
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


def start_url_problem(url: str, allow_private: bool = False) -> str:
    """Why a start URL may not be crawled ("" when it may). Link-local and cloud-metadata addresses never
    may; loopback and private ones only with ``allow_private`` (the command line, not a web form)."""
    host = urlsplit(url).hostname or ""
    kind = address_kind(host)
    if kind is None or kind == PUBLIC:
        return ""
    if kind in NEVER:
        return (f"{host} is a {kind} address (where a cloud machine's credentials are served); no crawl may "
                "reach it")
    if allow_private:
        return ""
    return f"{host} is a {kind} address; only public websites can be crawled from here"
