"""A plain concurrent Scrapy spider for sbcrawl_dev/bench/throughput.py: every link of the site's domain, every
non-HTML response saved. Scrapy's own scheduling (breadth first), robots.txt obeyed, no autothrottle."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, start_url: str, out: str, **kwargs) -> None:
        super().__init__(**kwargs)
        host = urlsplit(start_url).hostname or ""
        self.allowed_domains = [host.removeprefix("www.")]
        self.start_urls = [start_url]
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.links = LinkExtractor(tags=("a", "area", "iframe"), attrs=("href", "src"), deny_extensions=[])

    def parse(self, response):
        if isinstance(response, scrapy.http.HtmlResponse):
            for link in self.links.extract_links(response):
                yield scrapy.Request(link.url, callback=self.parse)
        else:
            (self.out / hashlib.sha256(response.body).hexdigest()).write_bytes(response.body)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("start_url")
    p.add_argument("--out", required=True)
    p.add_argument("--budget", type=int, required=True, help="responses before the spider closes")
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--concurrency", type=int, default=16)
    args = p.parse_args()
    process = CrawlerProcess(settings={
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
        "DOWNLOAD_DELAY": args.delay,
        "ROBOTSTXT_OBEY": True,
        "AUTOTHROTTLE_ENABLED": False,
        "CLOSESPIDER_PAGECOUNT": args.budget,
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
    })
    process.crawl(SiteSpider, start_url=args.start_url, out=args.out)
    process.start()


if __name__ == "__main__":
    main()
