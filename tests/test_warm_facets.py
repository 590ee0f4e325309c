"""A warm crawl's plan puts last the listing pages whose rows led to no datasets (a catalogue's facet pages,
whose rows are other facet pages and repeats of the catalogue's rows): they are revisited last of all,
after the checks of the known files and the other pages (with nothing read meanwhile: every file then is
checked), not by their gain among the catalogue pages (issue 23). Told by what the rows led to in the
site memory, not by the URLs. The memory is a real crawl's, of the simulator over HTTP; the plan's order
is then read without the network."""

from __future__ import annotations

from pathlib import Path

from airflow_sbcrawl.crawler import CrawlConfig, Crawler, LocalSink, LocalStateStore
from airflow_sbcrawl.crawler.memory import load
from airflow_sbcrawl.crawler.warm import RECRAWL_SHARE, Changes, Observations, RevisitPlan
from sbcrawl_dev.sim import build_site, get_profile

# Catalogues of two rows a page with a facet filter block (data.../catalogue/filter?...: every combination of
# facets a page, each showing a few of the catalogue's datasets again), half the pages in a sitemap.
FACETED = get_profile("tiny").with_(name="tiny-facets", datasets_per_section=(16, 22), catalogue_page_size=2,
                                    pager_window=0, new_dataset_share=0.15, update_share=0.2, sitemap_share=0.5)


def _memory_of_a_crawl(sim_server, sim_proxy_env, seed: int, out: Path):
    site = build_site(FACETED, seed, epoch=0)
    sim_proxy_env(sim_server(site))
    config = CrawlConfig(site.start_url, delay=0.0, concurrency=1, seed=3, early_stopping=False,
                         checkpoint_every_pages=10**6, max_requests=800)
    Crawler(config, LocalSink(out), LocalStateStore(out / "state"), memory=LocalStateStore(out / "memory"),
            tmp_dir=str(out)).run()
    return site, config, load(LocalStateStore(out / "memory"), site.start_url)


def test_listing_pages_whose_rows_led_to_no_datasets_are_revisited_after_the_checks(sim_server, sim_proxy_env,
                                                                                    tmp_path):
    facets_early = facets_known = catalogue_pages = 0
    for seed in (0, 1):
        site, config, memory = _memory_of_a_crawl(sim_server, sim_proxy_env, seed, tmp_path / str(seed))
        crawler = Crawler(config, LocalSink(tmp_path / f"warm{seed}"))
        plan = RevisitPlan.seeded(memory, crawler.links, Changes(crawler.links, memory), Observations(),
                                  int(RECRAWL_SHARE * config.max_requests), crawler.policy.add, site.start_url)
        order = []  # the plan's order when nothing is read meanwhile (every page as it was)
        while (link := plan.next(policy_has_links=False)) is not None:
            order.append(plan.links.urls[link])
        # the known files' checks and the other leaves (pages whose links were all settled) go before them
        last_check = max(i for i, url in enumerate(order) if url in memory.datasets or site.kind(url) == "html")
        listings = {plan.links.urls[i] for i in plan.index.lists}
        # the facet pages with rows of their own (other facet pages): those the rows tell about
        facets = [i for i, url in enumerate(order) if url in listings and site.kind(url) == "trap"
                  and any(len(plan.index.described_by[row]) == 1 for row in plan.index.listing[plan.links.ids[url]]
                          if (plan.links.ids[url], row) in plan.index.described)]
        facets_known += len(facets)
        facets_early += sum(i < last_check for i in facets)
        # the catalogue pages, whose rows led to the datasets, keep their place before the checks
        last_file = max(i for i, url in enumerate(order) if url in memory.datasets)
        catalogue = [i for i, url in enumerate(order) if url in listings and "/catalogue/" in url
                     and site.kind(url) == "html"]
        catalogue_pages += len(catalogue)
        assert all(i < last_file for i in catalogue)
    assert facets_known and catalogue_pages  # not vacuous: the memory holds facet pages as listings
    assert facets_early == 0
