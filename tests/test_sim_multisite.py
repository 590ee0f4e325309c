"""Several simulated sites behind one proxy, each under its own domain, requests counted per site."""

from __future__ import annotations

import dataclasses

import pytest
import requests

from sbcrawl_dev.sim.multisite import MultiSiteServer, site_domain
from sbcrawl_dev.sim.profiles import get_profile
from sbcrawl_dev.sim.site import Site


def test_each_site_answers_under_its_own_domain_and_is_counted_apart():
    tiny = get_profile("tiny")
    sites = [Site(tiny, seed=0), Site(dataclasses.replace(tiny, name="tiny-rich", datasets_per_section=(8, 12)), 0)]
    with MultiSiteServer(sites) as srv:
        proxies = {"http": srv.proxy_url}
        assert srv.start_urls == ["http://www.site0.example/", "http://www.site1.example/"]
        page = requests.get(srv.start_urls[1], proxies=proxies, timeout=10)
        assert page.status_code == 200 and "site1.example" in page.text and "stats.example" not in page.text
        assert int(page.headers["Content-Length"]) == len(page.content)
        target = sorted(srv.targets(1))[0]
        assert target.split("/")[2].endswith(".site1.example")
        assert requests.get(target, proxies=proxies, timeout=10).content == sites[1].body(
            target.replace("site1.example", "stats.example"))
        requests.head(srv.start_urls[0], proxies=proxies, timeout=10)
        assert (srv.requests(0), srv.requests(1)) == (1, 2)
        assert len(srv.targets(1)) > len(srv.targets(0))
    with pytest.raises(ValueError, match="1 to 10 sites"):
        site_domain(10)
