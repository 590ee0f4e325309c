"""The connections under the fetcher: every address checked before it is connected to, and the connections
in use reachable from another thread (or a signal handler), so a request can be aborted at any stage —
while it connects, while the headers trickle in, while the body arrives."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any
from urllib.parse import unquote, urlsplit

import certifi
from urllib3 import PoolManager, ProxyManager, make_headers
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util.connection import create_connection

from airflow_sbcrawl.crawler.addresses import AddressGuard, AddressRefused


class InFlight:
    """The connection each fetching thread is using right now."""

    def __init__(self) -> None:
        # Sockets themselves, by thread: http.client drops a connection's socket reference once a
        # "Connection: close" response starts, while the body is still read from it.
        self._socks: dict[int, socket.socket] = {}

    def attach(self, sock: socket.socket | None) -> None:
        if sock is not None:
            self._socks[threading.get_ident()] = sock

    def detach(self) -> None:
        self._socks.pop(threading.get_ident(), None)

    def abort(self, thread: int | None = None) -> None:
        """Make the blocked reads (or writes) of one thread's request, or of all, return at once. No lock
        is taken: this runs from signal handlers and the watchdog thread."""
        socks = self._socks.copy()  # one C-level copy: other threads may attach meanwhile
        for ident, sock in socks.items():
            if thread is None or ident == thread:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


def checked_addresses(guard: AddressGuard, host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to that the guard allows, in the resolver's order; AddressRefused
    (naming the first refused one) when there is none. Connecting only to these, never to the name, is
    what keeps a refused address from even a TCP handshake (and a second lookup from answering otherwise)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    allowed: list[str] = []
    refused: AddressRefused | None = None
    for *_, sockaddr in infos:
        address = str(sockaddr[0])
        try:
            guard.check(host, address)
        except AddressRefused as exc:
            refused = refused or exc
            continue
        if address not in allowed:
            allowed.append(address)
    if not allowed:
        raise refused or AddressRefused(f"{host} resolves to no address")
    return allowed


def _connection_class(base: type[HTTPConnection], in_flight: InFlight, guard: AddressGuard | None) -> type:
    class Connection(base):  # type: ignore[misc, valid-type]
        def _new_conn(self) -> socket.socket:
            if guard is None:  # through a proxy: the proxy resolves the names
                return super()._new_conn()
            try:
                addresses = checked_addresses(guard, self._dns_host, self.port)
            except socket.gaierror as exc:
                raise NameResolutionError(self.host, self, exc) from exc
            error: OSError | None = None
            for address in addresses:
                try:
                    return create_connection((address, self.port), self.timeout,
                                             source_address=self.source_address,
                                             socket_options=self.socket_options)
                except TimeoutError as exc:
                    raise ConnectTimeoutError(self, f"Connection to {self.host} timed out. "
                                                    f"(connect timeout={self.timeout})") from exc
                except OSError as exc:
                    error = exc
            raise NewConnectionError(self, f"Failed to establish a new connection: {error}") from error

        def connect(self) -> None:
            super().connect()
            in_flight.attach(self.sock)

        def getresponse(self) -> Any:
            in_flight.attach(self.sock)
            return super().getresponse()

    return Connection


def _pool_classes(in_flight: InFlight, guard: AddressGuard | None) -> dict[str, type]:
    http = _connection_class(HTTPConnection, in_flight, guard)
    https = _connection_class(HTTPSConnection, in_flight, guard)
    return {
        "http": type("HTTPPool", (HTTPConnectionPool,), {"ConnectionCls": http}),
        "https": type("HTTPSPool", (HTTPSConnectionPool,), {"ConnectionCls": https}),
    }


class Connections:
    """urllib3 pool managers for the fetcher (requests' layer on top cost as much CPU as the receive).
    Direct connections go only to resolved addresses the guard allows (checked before connecting);
    connections to a proxy the operator configured are not (the proxy resolves the names: URL hosts that
    are IP literals or loopback names are checked by the fetcher before the request)."""

    def __init__(self, in_flight: InFlight, guard: AddressGuard, connections: int = 1) -> None:
        # One kept-alive connection per concurrent request, per host (a proxy counts as one host).
        self._options: dict[str, Any] = {"num_pools": 10, "maxsize": max(connections, 1), "block": False,
                                         "ca_certs": certifi.where()}
        self._direct = PoolManager(**self._options)
        self._direct.pool_classes_by_scheme = _pool_classes(in_flight, guard)
        self._proxied_classes = _pool_classes(in_flight, None)
        self._proxies: dict[str, ProxyManager] = {}

    def manager(self, proxy: str | None) -> PoolManager:
        """The pool manager for requests through ``proxy`` (None: direct)."""
        if not proxy:
            return self._direct
        manager = self._proxies.get(proxy)
        if manager is None:
            parts = urlsplit(proxy)
            headers = None
            if parts.username:  # credentials in the proxy URL, as HTTP_PROXY allows
                auth = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
                headers = make_headers(proxy_basic_auth=auth)
            manager = ProxyManager(proxy, proxy_headers=headers, **self._options)
            manager.pool_classes_by_scheme = self._proxied_classes
            self._proxies[proxy] = manager
        return manager

    def clear(self) -> None:
        for manager in (self._direct, *self._proxies.values()):
            manager.clear()


def refusal(exc: BaseException) -> AddressRefused | None:
    """The AddressRefused somewhere inside the exceptions urllib3 wraps around it."""
    seen: set[int] = set()
    todo: list[object] = [exc]
    while todo:
        item = todo.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        if isinstance(item, AddressRefused):
            return item
        seen.add(id(item))
        todo.extend((item.__cause__, item.__context__, getattr(item, "reason", None), *item.args))
    return None
