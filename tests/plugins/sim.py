"""Fixtures for the site simulator: start a SimServer for a profile, route ``requests`` through it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from sbcrawl_dev.sim import SimServer, Site, build_site


@pytest.fixture
def sim_server() -> Iterator[Callable[..., SimServer]]:
    """Factory: ``sim_server("tiny", seed=0)`` (or a built Site) → a started server, stopped after the test."""
    started: list[SimServer] = []

    def start(profile: str | Site = "tiny", seed: int = 0, crawl_delay: float | None = None,
              latency: float = 0.0) -> SimServer:
        site = profile if isinstance(profile, Site) else build_site(profile, seed, crawl_delay)
        srv = SimServer(site, latency=latency).start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


@pytest.fixture
def tiny_server(sim_server: Callable[..., SimServer]) -> SimServer:
    return sim_server("tiny")


@pytest.fixture
def sim_proxy_env(monkeypatch: pytest.MonkeyPatch) -> Callable[[SimServer], str]:
    """``sim_proxy_env(server)`` points HTTP_PROXY/http_proxy at the server for this test; returns its URL."""

    def use(server: SimServer) -> str:
        for name in ("HTTP_PROXY", "http_proxy"):
            monkeypatch.setenv(name, server.proxy_url)
        for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        return server.proxy_url

    return use
