"""Labels of new links, page or target (Algorithm 2): HEAD requests while the URL classifier is in its
first batch, its predictions afterwards; every GET's outcome is a free label it learns from."""

from __future__ import annotations

from airflow_sbcrawl.crawler.classify import HTML, TARGET, OracleClassifier, UrlClassifier
from airflow_sbcrawl.crawler.fetch import Fetcher
from airflow_sbcrawl.crawler.frontier import LinkTable
from airflow_sbcrawl.crawler.policies.base import NewLink
from airflow_sbcrawl.crawler.runstate import RunState


class LinkLabeller:
    """Labels links for a policy that classifies them (``enabled``); HEAD requests are counted in ``run``,
    predictions kept in the link table (to measure the classifier)."""

    def __init__(self, classifier: UrlClassifier | OracleClassifier, fetcher: Fetcher, links: LinkTable,
                 run: RunState, enabled: bool) -> None:
        self.classifier = classifier
        self.fetcher = fetcher
        self.links = links
        self.run = run
        self.enabled = enabled

    def labels(self, links: list[NewLink]) -> list[int | None]:
        """HTML or TARGET per link; None drops it (a HEAD that found neither a page nor a target: an error
        or a media file). Raises CrawlInterrupted when a HEAD hits the budget or a stop."""
        labels: list[int | None] = []
        i = 0
        while i < len(links) and self.classifier.needs_head:
            resp = self.fetcher.fetch(links[i].url, method="HEAD")
            self.run.head_requests += 1
            label = {"html": HTML, "target": TARGET, "redirect": HTML}.get(resp.kind)
            if label is not None and resp.kind != "redirect":
                self.classifier.observe(links[i].url, label)
            labels.append(label)
            i += 1
        if i < len(links):
            predicted = self.classifier.predict([link.url for link in links[i:]])
            for link, label in zip(links[i:], predicted, strict=True):
                self.links.predicted[link.id] = label
                labels.append(int(label))
        return labels

    def learn(self, url: str, label: int) -> None:
        """What a GET found at a URL, for the classifier (when links are labelled at all)."""
        if self.enabled:
            self.classifier.observe(url, label)
