"""Labels of new links, page or target (Algorithm 2): HEAD requests while the URL classifier is in its
first batch, its predictions afterwards; every GET's outcome is a free label it learns from."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from airflow_sbcrawl.crawler.classify import HTML, TARGET, OracleClassifier, UrlClassifier
from airflow_sbcrawl.crawler.fetch import Fetcher, Response
from airflow_sbcrawl.crawler.frontier import LinkTable
from airflow_sbcrawl.crawler.linktext import link_features
from airflow_sbcrawl.crawler.policies.base import NewLink
from airflow_sbcrawl.crawler.runstate import RunState


class LinkLabeller:
    """Labels links for a policy that classifies them (``enabled``); HEAD requests are counted in ``run``,
    predictions kept in the link table (to measure the classifier).

    ``follow(url, response, hops)``: where a HEAD's redirect leads, None when it is not followed
    (``redirects.Redirects.head_hop``); without it a redirect is labelled a page and not learned from."""

    def __init__(self, classifier: UrlClassifier | OracleClassifier, fetcher: Fetcher, links: LinkTable,
                 run: RunState, enabled: bool,
                 follow: Callable[[str, Response, int], str | None] | None = None) -> None:
        self.classifier = classifier
        self.fetcher = fetcher
        self.links = links
        self.run = run
        self.enabled = enabled
        self.follow = follow
        # Link id -> the context words it was predicted with, until its GET says what it was (for a
        # classifier that reads them). Bounded: the oldest are forgotten (that link is then learned from by
        # its URL alone), and not saved in checkpoints, for the same reason.
        self._contexts: dict[int, np.ndarray] = {}

    def labels(self, links: list[NewLink]) -> list[int | None]:
        """HTML or TARGET per link; None drops it (a HEAD that found neither a page nor a target: an error
        or a media file). Raises CrawlInterrupted when a HEAD hits the budget or a stop."""
        labels: list[int | None] = []
        groups = self.classifier.context_groups
        contexts = [link_features(groups, link.url, link.anchor, link.title, link.row) for link in links] \
            if groups else None
        i = 0
        while i < len(links) and self.classifier.needs_head:
            label, known = self._head_label(links[i].url)
            if known:
                self.classifier.observe(links[i].url, label, contexts[i] if contexts else None)
            labels.append(label)
            i += 1
        if i < len(links):
            predicted = self.classifier.predict([link.url for link in links[i:]], contexts[i:] if contexts else None)
            for link, label in zip(links[i:], predicted, strict=True):
                self.links.predicted[link.id] = label
                labels.append(int(label))
            if contexts:
                self._remember(links[i:], contexts[i:])
        return labels

    def _head_label(self, url: str) -> tuple[int | None, bool]:
        """HEAD ``url``, and the hops of its redirects: the label of what answered last, and whether it is
        known (learned from). The URL linked is labelled by where it leads, as a GET's outcome teaches
        (``learn``): a ``/download?id=N`` that redirects to a CSV is a target, fetched with the page that
        links it, and its siblings are predicted so from the first batch on. A redirect not followed (out
        of scope, a loop, too many hops) is a page, not learned from."""
        resp = self.fetcher.fetch(url, method="HEAD")
        self.run.head_requests += 1
        seen, hops = {url}, 0
        while resp.kind == "redirect":
            hop = self.follow(url, resp, hops) if self.follow is not None else None
            if hop is None or hop in seen:
                return HTML, False
            url, hops = hop, hops + 1
            seen.add(url)
            resp = self.fetcher.fetch(url, method="HEAD")
            self.run.head_requests += 1
        label = {"html": HTML, "target": TARGET}.get(resp.kind)
        return label, label is not None

    def _remember(self, links: list[NewLink], contexts: list[np.ndarray]) -> None:
        for link, context in zip(links, contexts, strict=True):
            self._contexts[link.id] = context
        excess = len(self._contexts) - _MAX_CONTEXTS
        if excess > 0:
            for link_id in list(itertools.islice(self._contexts, excess)):
                del self._contexts[link_id]

    def learn(self, link_id: int, label: int) -> None:
        """What a GET found for link ``link_id`` (after its redirects), for the classifier (when links are
        labelled at all). It learns the URL that was linked, not where a redirect led: that URL and its
        context are what it sees of the link's siblings (a ``/file?id=N`` link answering a redirect to a
        file teaches that ``/file?id=`` links are files)."""
        if self.enabled:
            self.classifier.observe(self.links.urls[link_id], label, self._contexts.pop(link_id, None))


# Context words kept for links waiting for their GET: some 30 words a link, so about 20 MB at the bound.
_MAX_CONTEXTS = 100_000
