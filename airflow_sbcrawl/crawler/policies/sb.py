"""SB-CLASSIFIER as the paper specifies it (§3): tag-path actions, an AUER sleeping bandit over them, a
uniformly random link of the chosen action crawled next."""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Sequence
from itertools import groupby
from typing import ClassVar

import numpy as np

from airflow_sbcrawl.crawler.actions import ActionIndex
from airflow_sbcrawl.crawler.bandit import SleepingBandit
from airflow_sbcrawl.crawler.config import CrawlConfig
from airflow_sbcrawl.crawler.frontier import LeveledQueue, RandomBag
from airflow_sbcrawl.crawler.linktext import LinkTextModel, link_features
from airflow_sbcrawl.crawler.policies.base import NewLink, Policy
from airflow_sbcrawl.crawler.tagpath import TagPathVectorizer
from airflow_sbcrawl.crawler.urls import url_template


class SleepingBanditPolicy(Policy):
    """SB-CLASSIFIER / SB-ORACLE (§3): links grouped into actions by tag path, actions chosen by AUER,
    a uniformly random link of the chosen action crawled next."""

    classifies_links = True
    sequential = False  # what a page handed out is waiting for is kept by link id
    extension_prior = False  # the paper's URL classifier learns from the crawl's labels alone
    frontier_arrays: ClassVar[dict[str, str]] = {"bucket_ids": "ids", "bucket_lengths": "counts"}

    def __init__(self, config: CrawlConfig, rng: np.random.Generator, name: str = "sb-classifier") -> None:
        self.name = name
        self._rng = rng
        self.vectorizer = TagPathVectorizer(config.ngram, config.dim_log2, config.hash_width, config.hash_prime,
                                            ignore_digits=config.tagpath_ignore_digits)
        self.actions = ActionIndex(self.vectorizer.dim, config.theta, seed=config.seed)
        self.bandit = SleepingBandit(config.alpha, config.bandit_epsilon)
        self._buckets: list[RandomBag] = []
        self._sizes = np.zeros(0, dtype=np.int64)
        self._total = 0
        self._pending: dict[int, int] = {}  # link id handed out by next() -> its action
        self.examples: dict[int, str] = {}  # one tag path per action, for reports

    def add(self, links: Sequence[NewLink]) -> None:
        # Links sharing a tag path map to the same action: vectorise and query the index once per path.
        for tag_path, group in groupby(sorted(links, key=lambda link: link.tag_path), key=lambda link: link.tag_path):
            members = list(group)
            action = self.actions.assign(self.vectorizer.transform_one(tag_path), len(members), key=tag_path)
            self._ensure(action)
            self.examples.setdefault(action, tag_path)
            self._enqueue(action, members)

    def _enqueue(self, action: int, links: list[NewLink]) -> None:
        bucket = self._buckets[action]
        for link in links:
            bucket.add(link.id)
        self._sizes[action] += len(links)
        self._total += len(links)

    def _ensure(self, action: int) -> None:
        self._grow_frontier(action)
        if len(self._sizes) <= action:
            self._sizes = np.concatenate([self._sizes, np.zeros(max(64, len(self._sizes)), dtype=np.int64)])
        self.bandit.grow(action + 1)

    def _grow_frontier(self, action: int) -> None:
        while len(self._buckets) <= action:
            self._buckets.append(RandomBag())

    def next(self) -> int | None:
        if self._total == 0:
            return None
        n = len(self.actions)
        action = self.bandit.select(self._sizes[:n] > 0, self._rng)
        link_id = self._take(action)
        self._sizes[action] -= 1
        self._total -= 1
        self._pending[link_id] = action
        return link_id

    def _take(self, action: int) -> int:
        return self._buckets[action].pop_random(self._rng)

    def feedback(self, link_id: int, reward: float) -> None:
        action = self._pending.pop(link_id, None)
        if action is not None:
            self.bandit.reward(action, reward)

    def __len__(self) -> int:
        return self._total

    def waiting(self) -> list[int]:
        return [link for bucket in self._buckets for link in bucket.items]

    def state(self) -> dict:
        return {"steps": self.bandit.steps, "examples": {str(k): v for k, v in self.examples.items()}}

    def arrays(self) -> dict[str, np.ndarray]:
        lengths = np.array([len(b) for b in self._buckets], dtype=np.int64)
        ids = (np.concatenate([np.frombuffer(b.items, dtype=np.int64) for b in self._buckets])
               if self._buckets else np.zeros(0, dtype=np.int64))
        return {**self.actions.arrays(), **self.bandit.arrays(), "bucket_lengths": lengths, "bucket_ids": ids}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self.actions.restore(arrays["centroids"], arrays["sizes"])
        self.bandit.restore(arrays["bandit_counts"], arrays["bandit_means"], int(state["steps"]),
                            arrays.get("bandit_rewarded"))
        lengths = arrays["bucket_lengths"]
        ids = arrays["bucket_ids"].astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        self._buckets = [RandomBag(array("q", ids[offsets[i]:offsets[i + 1]].tobytes()))
                         for i in range(len(lengths))]
        self._sizes = np.zeros(max(64, len(lengths)), dtype=np.int64)
        self._sizes[: len(lengths)] = lengths
        self._total = int(lengths.sum())
        self._pending = {}
        self.examples = {int(k): v for k, v in state.get("examples", {}).items()}

    def describe(self) -> dict:
        n = len(self.actions)
        order = np.argsort(-self.bandit.means[:n])[:10]
        return {
            "actions": len(self.actions),
            "top_actions": [
                {"action": int(a), "mean_reward": float(self.bandit.means[a]), "pulls": int(self.bandit.counts[a]),
                 "tag_path": self.examples.get(int(a), "")}
                for a in order
            ],
        }


class CreditedBanditPolicy(SleepingBanditPolicy):
    """The default: SB-CLASSIFIER whose credit reaches the links that lead to datasets.

    Credit. The paper credits an action only with the targets retrieved from the page it fetched, so a "next
    page" link, a category or a listing — which lead to datasets but hold none — earns nothing and is
    starved. Here a page's credit is bootstrapped, as in temporal-difference learning, in its differential
    (average-reward) form: credit = new targets on the page + gamma x the surplus of the new links it
    revealed. A link's surplus is how much the mean credit of its group exceeds the crawl's average credit
    per page (rho), discounted by the backlog of its action: one more link of an action that already waits
    with thousands of links will not be crawled soon, so it adds little. The backlog term keeps the values
    finite: an action whose pages reveal several links of itself (related articles, tag pages) is a
    branching process whose summed surplus would grow without bound; its backlog grows with it instead.
    Links of below-average groups add nothing.

    Order within an action. One tag path often serves several parts of a site (the same pager under the
    publications and the news, the same teaser list for datasets and articles). Each action's links are
    therefore split by URL template (the URL's directory with digits masked, or its path and query keys):
    the action is chosen by the paper's bandit, valued at the best of its templates that still have links
    (so an action whose paying part is exhausted no longer lends its mean to the rest), then a template
    within it by the same AUER rule over the templates' own credit, so the publications' pager is told from
    the news' pager after a few pulls. While nothing in the action has paid there is no evidence to tell
    its templates apart, and its link is drawn uniformly over the action, as the paper draws. Within a
    template, each link waits at a level given by the credit of the page it was found on, and a random
    link of the highest level goes first. The exploration bonus is scaled by rho, so alpha means the same
    whatever the scale of the credit.

    Link text. Siblings of one template often differ only in what the page says beside them: an
    indicator's "Reported online" or "Exploring data sources", a row's "CSV, 2024". The words of each
    link's anchor, title, row and URL (``link_context``) feed an online model of "the page paid" (it held
    a new target; ``linktext``), learned from this site's pages only (labelling pages whose credit beat the
    average as paid too did no better on the development sites). Once it
    has seen pages of both kinds, a template's next link is the best of a random sample of each level of its
    links, by level plus ``_TEXT_WEIGHT`` times the model's log-odds (the log-odds in levels: a link's
    expected credit is its parent's times the chance its page pays); before, the draw is the uniform one
    above. With ``link_text_scope`` "action" (off by default) the same ranking also picks between the
    templates the bandits cannot tell apart (``_take_across``).

    Files the classifier missed. A link is labelled once, when its page is read; links read while the
    classifier was young (a catalogue page of 400 files met in the first hundred pages) wait in the
    frontier as pages. A template whose links handed out were nearly all files (``_FILE_SHARE`` of at
    least ``_FILE_PULLS``) is drained before the bandit chooses: each of its links is a dataset for one
    request, which no page can beat, and a predicted one would have been fetched at once. The page that
    listed such a file is credited with it when it is found (``credit_late``).

    Rich pages. A page that held many targets (``_RICH_TARGETS``, and several times the average credit) is
    a catalogue page: its new links in templates never tried yet (the catalogue's own "page 2", a sibling
    catalogue) are followed next, up to ``_FOLLOW_LINKS`` of them, before the bandit chooses. Their action
    (a pager shared with the news, a menu) has no evidence for them, and a pager action that paid nothing
    in the news would leave the rest of a 400-file catalogue behind tag pages.

    Hubs reached around. An action whose pages held no target is worth only the links they reveal, and
    AUER keeps exploring it (its few pulls against the hundreds of the paying actions) whatever it
    showed. Where other pages link the same pages too (the previous/next buttons of every indicator page
    of an SDG platform link what its goal page links), a hub's links are reached anyway: exploring more of
    it reveals nothing the crawl would not meet otherwise. So the engine tells the policy which known
    links each page links again (``relinked``), and each action keeps how many links its pages were the
    first to reveal and how many of those another page linked too. The exploration bonus of a hub (an
    action with pages fed back, none holding a target, that revealed a link or fed back two pages) is
    scaled by u / (u + 1), at least ``_HUB_EXPLORE_FLOOR``, u its links per page that no other page
    linked: the floor for goal pages whose every indicator is also the next of another, near 1 for the
    goal pages of a platform whose indicators link nothing, whose twenty new links a page only they give.
    Its mean credit (the value of what it revealed) is left as it is: a hub still pays by value. On the
    Ingolstadt replay (dev) this took the default from 0.38-0.48 to 0.58-0.63 of the gap one request at a
    time; with eight pages out it stayed near 0.3, as the pages in flight empty the indicator links waiting
    and AUER fills the slots with goal pages (``benchmarks/results/replay-i19-round13``). A hub's links are
    reached around only while the crawl moves on: as a drought of new targets deepens (``drought``, from the
    early-stopping rule) a hub gets its whole bonus back, or the drought ends the crawl with pages unread
    that only the hub led to (the tiny site's news listing, the one page linking its RSS feed, behind a main
    menu whose two pages revealed nothing new; ``benchmarks/results/replay-i19-round15``).

    Pages at once. A page's links reach the frontier only with its feedback, so every page handed out while
    others are out is chosen without the links they will reveal: with eight out, the next buttons of the
    indicator pages in flight were not there yet, and the free slots went to the goal pages. So at most
    ``pages_at_once`` (2) pages await their feedback; their files still go out with the pool's whole
    concurrency. Ingolstadt, eight requests in flight: 0.33 -> about 0.58 of the gap (one page at a time:
    0.60, three: 0.41). With a delay between requests to a host (1 s by default) a one-host crawl sends one
    request at a time anyway; with none, a site 30 ms away took about twice the wall time
    (``benchmarks/results/replay-i19-round14``)."""

    extension_prior = True
    counts_relinks = True
    pages_at_once = 2
    frontier_arrays: ClassVar[dict[str, str]] = {
        "action_sizes": "counts", "sub_lengths": "counts", "sub_ids": "ids", "sub_levels": "ids",
        "pulled_ids": "ids", "pulled_arms": "ids", "urgent": "ids",
        "words_ids": "ids", "words_lengths": "ids", "words_features": "ids", "sub_text_discount": "counts",
        "revealer_ids": "ids", "revealer_actions": "ids"}

    def __init__(self, config: CrawlConfig, rng: np.random.Generator, name: str = "sb-classifier") -> None:
        super().__init__(config, rng, name)
        self.gamma = config.credit_gamma
        self.rho = 0.0  # average credit per page crawled (exponential average)
        self._credited = 0
        # Sub-arms: (action, URL template) pairs, each with its frontier and its own credit statistics.
        self._sub_ids: dict[tuple[int, str], int] = {}
        self._sub_templates: list[str] = []
        self._sub_action = array("q")
        self._action_subs: list[list[int]] = []
        self._queues: list[LeveledQueue] = []
        self._sub_sizes = np.zeros(0, dtype=np.int64)
        self.sub_bandit = SleepingBandit(config.alpha, config.bandit_epsilon)
        # Links added since the last page was handed out: revealed by that page, queued once it is credited.
        self._revealed: list[tuple[int, int, list[int]]] = []  # (action, sub-arm, link ids)
        self._last_surplus = 0.0
        # Link handed out and fed back -> its (action, sub-arm), for credit that arrives later (credit_late).
        # A dense array by link id (-1: not handed out), not a dict: 8 bytes a link at 10^6 links.
        self._pulled = np.full(0, -1, dtype=np.int64)
        # Per sub-arm: links handed out whose GET was answered, and how many of those were files.
        self._sub_answers = np.zeros(0, dtype=np.int64)
        self._sub_files = np.zeros(0, dtype=np.int64)
        self._sub_targets = np.zeros(0, dtype=np.float64)  # targets the pages handed out held (no surplus)
        self._draining: list[int] = []  # sub-arms of files, in the order they were recognised
        self._urgent: list[int] = []  # sub-arms holding links of a rich page to follow, one entry per link
        self.link_groups = tuple(config.link_context)
        self.reads_rows = "row" in self.link_groups
        self.text = LinkTextModel()
        self.text_across = config.link_text_scope == "action"
        self._words: dict[int, np.ndarray] = {}  # link id (waiting or handed out) -> its hashed words
        # Per sub-arm: how much less its best waiting link looks likely to pay than the links it handed out
        # (1 - the ratio of their chances, by the link text model; 0 while unknown), and the words of its
        # last links fed back with whether their page paid (not saved: after a restore a discount waits
        # for new pages).
        self._sub_discount = np.zeros(0, dtype=np.float64)
        self._sub_pulled_words: dict[int, deque[tuple[np.ndarray, bool]]] = {}
        self._scored: tuple[list[int], np.ndarray] = ([], _NO_SCORES)
        # Per action: the targets its pages held, the links its pages were the first to reveal, and how many
        # of those another page linked too; per link id, the action of the page that revealed it (-1: none,
        # or already counted as linked again).
        self._action_targets = np.zeros(0)
        self._hub_revealed = np.zeros(0)
        self._hub_relinked = np.zeros(0)
        self._revealer = np.full(0, -1, dtype=np.int64)
        # How deep the crawl is in a drought of new targets (``drought``), 0 to 1: not saved, the scheduler
        # tells it again with the next page.
        self._dryness = 0.0

    def _grow_frontier(self, action: int) -> None:
        while len(self._action_subs) <= action:
            self._action_subs.append([])
        if len(self._hub_revealed) <= action:
            extra = np.zeros(max(64, action + 1 - len(self._hub_revealed)))
            self._action_targets = np.concatenate([self._action_targets, extra])
            self._hub_revealed = np.concatenate([self._hub_revealed, extra])
            self._hub_relinked = np.concatenate([self._hub_relinked, extra])

    def _sub(self, action: int, template: str) -> int:
        key = (action, template)
        sub = self._sub_ids.get(key)
        if sub is None:
            sub = self._sub_ids[key] = len(self._sub_templates)
            self._sub_templates.append(template)
            self._sub_action.append(action)
            self._action_subs[action].append(sub)
            self._queues.append(LeveledQueue())
            self.sub_bandit.grow(sub + 1)
            if len(self._sub_sizes) <= sub:
                self._sub_sizes = np.concatenate([self._sub_sizes, np.zeros(max(64, sub), dtype=np.int64)])
            if len(self._sub_answers) <= sub:
                extra = np.zeros(max(64, sub), dtype=np.int64)
                self._sub_answers = np.concatenate([self._sub_answers, extra])
                self._sub_files = np.concatenate([self._sub_files, extra])
                self._sub_targets = np.concatenate([self._sub_targets, extra.astype(np.float64)])
                self._sub_discount = np.concatenate([self._sub_discount, extra.astype(np.float64)])
        return sub

    def _enqueue(self, action: int, links: list[NewLink]) -> None:
        by_template: dict[str, list[int]] = {}
        groups = self.link_groups
        for link in links:
            by_template.setdefault(url_template(link.url), []).append(link.id)
            if groups:
                self._words[link.id] = link_features(groups, link.url, link.anchor, link.title, link.row)
        for template, ids in by_template.items():
            self._revealed.append((action, self._sub(action, template), ids))

    def _release(self, credit: float, follow: bool = False) -> None:
        level = _level(credit)
        for action, sub, ids in self._revealed:
            if follow and not self.sub_bandit.counts[sub] and len(self._urgent) < _FOLLOW_LINKS:
                # First in their template (top level), and handed out before the bandit chooses.
                self._urgent.extend([sub] * min(len(ids), _FOLLOW_LINKS - len(self._urgent)))
                self._queues[sub].extend(ids, _MAX_LEVEL)
            else:
                self._queues[sub].extend(ids, level)
            if self.text.trained and self._sub_discount[sub]:
                self._rediscount(sub, float(self.text.scores([self._words.get(i, _NO_WORDS) for i in ids]).max()),
                                 newcomers=True)
            self._sub_sizes[sub] += len(ids)
            self._sizes[action] += len(ids)
            self._total += len(ids)
        self._revealed = []

    def next(self) -> int | None:
        if self._revealed:  # links of a page that got no feedback (the start page, an interrupted page)
            self._release(0.0)
        if self._total == 0:
            return None
        files = self._files_waiting()
        if files is not None:
            return self._hand_out(int(self._sub_action[files]), files)
        while self._urgent:
            sub = self._urgent.pop(0)
            if self._sub_sizes[sub]:
                return self._hand_out(int(self._sub_action[sub]), sub)
        scale = max(self.rho, _MIN_SCALE)
        self.bandit.scale = self.sub_bandit.scale = scale
        n_actions = len(self.actions)
        awake, values = self._sizes[:n_actions] > 0, self._awake_values(n_actions)
        explore = self._exploration(n_actions)
        action = self.bandit.select(awake, self._rng, values, explore)
        subs = np.array([s for s in self._action_subs[action] if len(self._queues[s])], dtype=np.int64)
        across = self.text_across and self.text.trained
        if self.sub_bandit.means[subs].any() or self.bandit.means[action]:
            untried = subs[self.sub_bandit.counts[subs] == 0]
            if across and len(untried) > 1 and self.bandit.counts[action] > 1:
                # AUER takes a never-tried template first, whichever: the link text tells which.
                return self._take_across(action, untried)
            values = self.sub_bandit.means[subs] * (1.0 - self._sub_discount[subs])
            sub = int(subs[self.sub_bandit.select_among(subs, self.bandit.counts[action], self._rng, values)])
        elif across and len(subs) > 1:
            return self._take_across(action, subs)
        else:
            # Nothing in this action has paid yet: no evidence to tell its templates apart, so a uniformly
            # random link of the action, as the paper draws (round-robin over templates would give a rare
            # template as many pulls as the one holding most of the action's links).
            sizes = self._sub_sizes[subs].astype(np.float64)
            sub = int(self._rng.choice(subs, p=sizes / sizes.sum()))
            self.sub_bandit.counts[sub] += 1
        return self._take_from(action, sub)

    def _take_across(self, action: int, subs: np.ndarray) -> int:
        """The best link, by level and link text, of a sample of the links of up to ``_TEXT_SAMPLE`` of
        ``subs`` (drawn by their sizes, as the uniform draw would), with ``link_text_scope`` "action". Used
        where the bandits have no evidence to choose a template by: an action none of whose templates has
        paid, or the templates of an action never tried yet (AUER takes one of those first, at random). The
        words the crawl learned elsewhere on the site may tell their links apart where the text within one
        template cannot: a site whose items each have a directory of their own gives every link a template
        of its own."""
        if len(subs) > _TEXT_SAMPLE:
            sizes = self._sub_sizes[subs].astype(np.float64)
            subs = self._rng.choice(subs, _TEXT_SAMPLE, replace=False, p=sizes / sizes.sum())
        per_sub = max(1, _TEXT_SAMPLE // len(subs))
        places: list[tuple[int, int, int]] = []  # (sub-arm, level, index)
        ids: list[int] = []
        for sub in subs.tolist():
            queue = self._queues[sub]
            found = queue.candidates(self._rng, per_sub, _TEXT_REACH)
            places.extend((sub, level, index) for level, index in found)
            ids.extend(queue.ids_at(found))
        scores = self.text.scores([self._words.get(i, _NO_WORDS) for i in ids])
        values = np.array([level for _, level, _ in places], dtype=np.float64) + _TEXT_WEIGHT * scores
        sub, level, index = places[int(np.argmax(values))]
        self.sub_bandit.counts[sub] += 1
        link_id = self._queues[sub].take(level, index)
        mine = np.fromiter((s == sub for s, _, _ in places), dtype=bool, count=len(places))
        rest = scores[mine & (np.asarray(ids, dtype=np.int64) != link_id)]
        self._rediscount(sub, float(rest.max()) if len(rest) else None)
        return self._taken(action, sub, link_id)

    def _take_from(self, action: int, sub: int) -> int:
        queue = self._queues[sub]
        if self.text.trained and len(queue) > 1:
            link_id = queue.pop_best(self._rng, self._text_scores, _TEXT_SAMPLE, _TEXT_REACH)
            ids, scores = self._scored
            rest = scores[np.asarray(ids, dtype=np.int64) != link_id]
            self._rediscount(sub, float(rest.max()) if len(rest) else None)
        else:
            link_id = queue.pop(self._rng)
        return self._taken(action, sub, link_id)

    def _taken(self, action: int, sub: int, link_id: int) -> int:
        self._sub_sizes[sub] -= 1
        self._sizes[action] -= 1
        self._total -= 1
        self._pending[link_id] = action * _SUB_STRIDE + sub
        return link_id

    def _text_scores(self, link_ids: list[int]) -> np.ndarray:
        """What the link text model makes of each link, in levels (the log-odds kept in ``_scored``)."""
        words = self._words
        scores = self.text.scores([words.get(i, _NO_WORDS) for i in link_ids])
        self._scored = (link_ids, scores)
        return _TEXT_WEIGHT * scores


    def _rediscount(self, sub: int, best: float | None, newcomers: bool = False) -> None:
        """A template's credit so far was earned by the links it handed out; what it is worth now depends
        on the links it still holds. Where the link text tells its pages apart (of its last pages fed back,
        those that paid looked at least ``_TEXT_TELLS`` times likelier to, by the model, than those that did
        not), its discount is 1 - P(its best waiting link pays) / the mean P of those pages (0 when it holds
        better-looking links than those). Without it, a template whose "Reported online" links were all
        taken keeps the mean they earned and hands out its "Exploring data sources" ones until their zeros
        wear the mean down, while the goal pages that would reveal more "Reported online" links wait. Where
        the text does not tell (a catalogue's pager, whose pages all paid; words the model cannot read), no
        discount: the best of a sample of links ranked by the model always looks worse than the links taken
        before it, whatever they hold. ``best``: the log-odds of its best waiting link (None: unknown);
        ``newcomers``: links just added, which can only raise it."""
        pulled = self._sub_pulled_words.get(sub)
        if best is None or not pulled:
            self._sub_discount[sub] = 0.0
            return
        p = _sigmoid(self.text.scores([words for words, _ in pulled]))
        paid = np.fromiter((flag for _, flag in pulled), dtype=bool, count=len(pulled))
        if paid.all() or not paid.any() or p[paid].mean() < _TEXT_TELLS * p[~paid].mean():
            self._sub_discount[sub] = 0.0
            return
        pulled_p = float(p.mean())
        best_p = float(_sigmoid(np.array([best]))[0])
        if newcomers:  # the best waiting link so far was (1 - discount) x the pulled mean
            best_p = max(best_p, (1.0 - self._sub_discount[sub]) * pulled_p)
        self._sub_discount[sub] = max(0.0, 1.0 - best_p / pulled_p)

    def _hand_out(self, action: int, sub: int) -> int:
        """A pull chosen outside the bandits, counted in both as a pull of its action and sub-arm."""
        self.bandit.steps += 1
        self.bandit.counts[action] += 1
        self.sub_bandit.counts[sub] += 1
        return self._take_from(action, sub)

    def _files_waiting(self) -> int | None:
        """The first sub-arm of files that still holds links."""
        while self._draining and not self._sub_sizes[self._draining[0]]:
            self._draining.pop(0)
        return self._draining[0] if self._draining else None

    def outcome(self, link_id: int, kind: str) -> None:
        pending = self._pending.get(link_id)
        if pending is None:
            return
        sub = pending % _SUB_STRIDE
        answers = self._sub_answers[sub] = self._sub_answers[sub] + 1
        files = self._sub_files[sub] = self._sub_files[sub] + (kind == "target")
        if _is_files(answers, files) and not _is_files(answers - 1, files - (kind == "target")):
            self._draining.append(sub)

    def _exploration(self, n_actions: int) -> np.ndarray:
        """Each action's share of the exploration bonus: u / (u + 1), at least ``_HUB_EXPLORE_FLOOR``, for
        a hub (pages fed back, none with a target), u the links per page its pages were alone to reveal; 1
        for every other action."""
        pages, revealed = self.bandit.rewarded[:n_actions], self._hub_revealed[:n_actions]
        hub = ((revealed > 0) | (pages >= _EMPTY_PAGES)) & (pages > 0) & (self._action_targets[:n_actions] == 0)
        alone = (revealed - self._hub_relinked[:n_actions]) / np.maximum(pages, 1.0)
        share = np.maximum(_HUB_EXPLORE_FLOOR, alone / (alone + _ALONE_HALF))
        # A hub's links are reached around only while the crawl is moving; in a drought the other pages
        # that would reach them are not being read, so the hub gets its bonus back as the drought deepens.
        share = share + (1.0 - share) * self._dryness
        return np.where(hub, share, 1.0)

    def drought(self, dryness: float) -> None:
        self._dryness = dryness

    def relinked(self, link_ids: list[int]) -> None:
        """Known links a page linked again: each one another page revealed first is counted, once, against
        the action of that page."""
        ids = np.unique(np.asarray(link_ids, dtype=np.int64))
        ids = ids[ids < len(self._revealer)]
        ids = ids[self._revealer[ids] >= 0]
        np.add.at(self._hub_relinked, self._revealer[ids], 1.0)
        self._revealer[ids] = -1

    def _note_revealer(self, action: int) -> None:
        """The links waiting to be released were revealed by a page of ``action``."""
        for _, _, ids in self._revealed:
            top = max(ids) + 1
            if top > len(self._revealer):
                grown = np.full(max(2 * len(self._revealer), top, 1024), -1, dtype=np.int64)
                grown[: len(self._revealer)] = self._revealer
                self._revealer = grown
            self._revealer[ids] = action
            self._hub_revealed[action] += len(ids)

    def _awake_values(self, n_actions: int) -> np.ndarray:
        """What each action is worth now: the best of its templates that still have links, each template's
        mean credit shrunk towards its action's (worth ``_PRIOR_PULLS`` pulls). An action whose paying
        template is exhausted (dataset teasers done, news teasers left) no longer lends it its mean."""
        n = len(self._sub_templates)
        actions = np.frombuffer(self._sub_action, dtype=np.int64)
        counts, means = self.sub_bandit.rewarded[:n], self.sub_bandit.means[:n]
        shrunk = (counts * means + _PRIOR_PULLS * self.bandit.means[actions]) / (counts + _PRIOR_PULLS)
        shrunk = shrunk * (1.0 - self._sub_discount[:n])
        awake = self._sub_sizes[:n] > 0
        values = np.full(n_actions, -np.inf)
        np.maximum.at(values, actions[awake], shrunk[awake])
        return values

    def surplus(self) -> float:
        """What the links revealed since the last page are worth above the crawl's average: each at the mean
        credit of its template within its action, or of its action while that template is untried."""
        backlog = self._sizes
        total = 0.0
        for action, sub, ids in self._revealed:
            if self.sub_bandit.rewarded[sub] > 0:
                value = self.sub_bandit.means[sub]
            elif self.bandit.rewarded[action] > 0:
                value = self.bandit.means[action]
            else:
                continue
            if value > self.rho:
                total += len(ids) * (value - self.rho) / (1.0 + backlog[action] / _BACKLOG_SCALE)
        return total

    def feedback(self, link_id: int, reward: float) -> None:
        pending = self._pending.pop(link_id, None)
        surplus = self.surplus()
        credit = reward + self.gamma * surplus
        words = self._words.pop(link_id, None)
        if words is not None and pending is not None:
            self.text.learn(words, reward > 0)
            sub = pending % _SUB_STRIDE
            self._sub_pulled_words.setdefault(sub, deque(maxlen=_TEXT_PULLED)).append((words, reward > 0))
        rich_from = self._rich_threshold()
        rich = pending is not None and reward >= rich_from
        if pending is not None:
            self._note_revealer(pending // _SUB_STRIDE)
        self._release(credit, follow=rich)
        self._last_surplus = surplus
        if pending is None:
            return
        action, sub = divmod(pending, _SUB_STRIDE)
        self.bandit.reward(action, credit)
        self.sub_bandit.reward(sub, credit)
        self._sub_targets[sub] += reward
        self._action_targets[action] += reward
        if link_id >= len(self._pulled):
            grown = np.full(max(2 * len(self._pulled), link_id + 1, 1024), -1, dtype=np.int64)
            grown[: len(self._pulled)] = self._pulled
            self._pulled = grown
        self._pulled[link_id] = pending
        self._credited += 1
        # rho is what a typical page is worth: a rich page counts at the threshold that makes it rich, or
        # one 450-file catalogue page lifts the average (and the exploration bonus scaled by it) above
        # every template that pays a file a page for the next few hundred pages.
        typical = min(credit, rich_from)
        self.rho += (typical - self.rho) / min(self._credited, _RHO_HORIZON)

    def _rich_threshold(self) -> float:
        """The targets a page must hold to be a rich page (a catalogue) at the crawl's current average."""
        return max(_RICH_TARGETS, _RICH_FACTOR * self.rho)

    def credit_late(self, page_id: int, reward: float) -> None:
        """A target the classifier took for a page when ``page_id`` was read is still that page's: added to
        the mean credit of its action and template as if it had been counted then. Without it, a table page
        read while the classifier was young keeps a credit of zero for the hundreds of files it listed, and
        its siblings wait behind news pages."""
        pending = int(self._pulled[page_id]) if 0 <= page_id < len(self._pulled) else -1
        if pending < 0:  # the start page, or a page handed out by another run
            return
        action, sub = divmod(pending, _SUB_STRIDE)
        self.bandit.add_to_mean(action, reward)
        self.sub_bandit.add_to_mean(sub, reward)
        self._sub_targets[sub] += reward
        self._action_targets[action] += reward
        self.rho += reward / min(self._credited, _RHO_HORIZON)

    def expected_targets(self) -> float:
        """Each template's waiting links times the targets its pages held per page handed out so far, that
        rate shrunk towards the crawl's own as if the crawl had given the template ``_YIELD_PRIOR_PULLS``
        pages: a template of 8,000 news articles of which 150 were read without a file (one article in fifty
        lists some) is not yet evidence that the other 7,850 hold none, nor is one never tried."""
        n = len(self._sub_templates)
        pulls, targets = self.sub_bandit.rewarded[:n], self._sub_targets[:n]
        rate = targets.sum() / max(pulls.sum(), 1.0)
        per_page = (targets + _YIELD_PRIOR_PULLS * rate) / (pulls + _YIELD_PRIOR_PULLS)
        return float(self._sub_sizes[:n] @ per_page)

    def promising(self) -> bool:
        return self._last_surplus > 0

    def last_look(self, limit: int) -> list[int]:
        """Links of the templates that paid (credit above zero) and still hold some, one of each in turn,
        the best template first: what a drought spent on unpaid parts of the site may have passed over.
        A template counts at least at the best credit its URL template earned in any action: a dataset page
        first met in a facet search waits among the facet's links, whose action never paid (nor did the
        facet's one dataset page read, its files found already), though dataset pages met elsewhere paid
        every time (the tiny site's last datasets, listed only on archive pages whose links the facets gave
        first)."""
        n = len(self._sub_templates)
        means, rewarded = self.sub_bandit.means[:n], self.sub_bandit.rewarded[:n]
        worth = np.where(rewarded > 0, means, 0.0)
        paid_elsewhere: dict[str, float] = {}
        for sub in np.flatnonzero(worth > 0).tolist():
            template = self._sub_templates[sub]
            paid_elsewhere[template] = max(paid_elsewhere.get(template, 0.0), float(worth[sub]))
        for sub in np.flatnonzero(self._sub_sizes[:n] > 0).tolist():
            worth[sub] = max(worth[sub], paid_elsewhere.get(self._sub_templates[sub], 0.0))
        paid = np.flatnonzero((worth > 0) & (self._sub_sizes[:n] > 0))
        order = [int(sub) for sub in paid[np.argsort(-worth[paid], kind="stable")]]
        links: list[int] = []
        while order and len(links) < limit:
            for sub in order[: limit - len(links)]:
                links.append(self._queues[sub].pop(self._rng))
                self._words.pop(links[-1], None)
                self._sub_sizes[sub] -= 1
                self._sizes[self._sub_action[sub]] -= 1
                self._total -= 1
            order = [sub for sub in order if self._sub_sizes[sub] > 0]
        return links

    def __len__(self) -> int:
        return self._total + sum(len(ids) for _, _, ids in self._revealed)

    def waiting(self) -> list[int]:
        queued = [q.to_arrays()[0] for q in self._queues]
        return [*(int(i) for ids in queued for i in ids), *(i for _, _, ids in self._revealed for i in ids)]

    def state(self) -> dict:
        return {**super().state(), "rho": self.rho, "credited": self._credited,
                "sub_templates": self._sub_templates, "linktext": self.text.state()}

    def arrays(self) -> dict[str, np.ndarray]:
        if self._revealed:
            self._release(0.0)
        parts = [q.to_arrays() for q in self._queues]
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int16))
        return {
            **self.actions.arrays(), **self.bandit.arrays(),
            "action_sizes": self._sizes[: len(self.actions)].copy(),
            "sub_action": np.frombuffer(self._sub_action, dtype=np.int64).copy(),
            "sub_counts": self.sub_bandit.counts.copy(), "sub_means": self.sub_bandit.means.copy(),
            "sub_rewarded": self.sub_bandit.rewarded.copy(),
            "sub_lengths": np.array([len(q) for q in self._queues], dtype=np.int64),
            "sub_ids": np.concatenate([p[0] for p in parts] or [empty[0]]),
            "sub_levels": np.concatenate([p[1] for p in parts] or [empty[1]]),
            "sub_answers": self._sub_answers.copy(), "sub_files": self._sub_files.copy(),
            "sub_targets": self._sub_targets.copy(),
            "pulled_ids": np.flatnonzero(self._pulled >= 0).astype(np.int64),
            "pulled_arms": self._pulled[self._pulled >= 0],
            "urgent": np.array(self._urgent, dtype=np.int64),
            "sub_text_discount": self._sub_discount.copy(),
            "action_targets": self._action_targets.copy(), "hub_revealed": self._hub_revealed.copy(),
            "hub_relinked": self._hub_relinked.copy(),
            "revealer_ids": np.flatnonzero(self._revealer >= 0).astype(np.int64),
            "revealer_actions": self._revealer[self._revealer >= 0],
            **self.text.arrays(), **self._words_arrays(),
        }

    def _words_arrays(self) -> dict[str, np.ndarray]:
        """The hashed words of the links waiting, as (ids, lengths, concatenated features)."""
        ids = np.fromiter(self._words, dtype=np.int64, count=len(self._words))
        parts = list(self._words.values())
        return {"words_ids": ids, "words_lengths": np.array([len(p) for p in parts], dtype=np.int64),
                "words_features": np.concatenate(parts) if parts else _NO_WORDS.copy()}

    def restore(self, state: dict, arrays: dict[str, np.ndarray]) -> None:
        self.actions.restore(arrays["centroids"], arrays["sizes"])
        self.bandit.restore(arrays["bandit_counts"], arrays["bandit_means"], int(state["steps"]),
                            arrays.get("bandit_rewarded"))
        sizes = arrays["action_sizes"].astype(np.int64)
        n_actions = len(sizes)
        self._sizes = np.zeros(max(64, n_actions), dtype=np.int64)
        self._sizes[:n_actions] = sizes
        self._total = int(sizes.sum())
        self._pending = {}
        self.examples = {int(k): v for k, v in state.get("examples", {}).items()}
        self._sub_templates = list(state["sub_templates"])
        self._sub_action = array("q", arrays["sub_action"].astype(np.int64).tobytes())
        self._sub_ids = {(int(a), t): i for i, (a, t) in enumerate(zip(self._sub_action, self._sub_templates,
                                                                         strict=True))}
        self._action_subs = [[] for _ in range(n_actions)]
        for sub, action in enumerate(self._sub_action):
            self._action_subs[action].append(sub)
        self.sub_bandit.restore(arrays["sub_counts"], arrays["sub_means"], 0, arrays.get("sub_rewarded"))
        lengths = arrays["sub_lengths"]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        ids, levels = arrays["sub_ids"].astype(np.int64), arrays["sub_levels"]
        self._queues = [LeveledQueue.from_arrays(ids[offsets[i]:offsets[i + 1]], levels[offsets[i]:offsets[i + 1]])
                        for i in range(len(lengths))]
        self._sub_sizes = np.zeros(max(64, len(lengths)), dtype=np.int64)
        self._sub_sizes[: len(lengths)] = lengths
        self.rho = float(state["rho"])
        self._credited = int(state["credited"])
        self._revealed = []
        empty = np.zeros(0, dtype=np.int64)  # absent from checkpoints written before late credit
        n_subs = len(self._sub_sizes)
        self._sub_answers, self._sub_files = np.zeros(n_subs, dtype=np.int64), np.zeros(n_subs, dtype=np.int64)
        self._sub_targets = np.zeros(n_subs)
        self._sub_discount = np.zeros(n_subs)
        self._sub_pulled_words = {}
        for name, target in (("sub_answers", self._sub_answers), ("sub_files", self._sub_files),
                             ("sub_targets", self._sub_targets), ("sub_text_discount", self._sub_discount)):
            saved = arrays.get(name, empty)[: len(self._sub_templates)]  # saved arrays are padded
            target[: len(saved)] = saved
        n_grown = max(64, n_actions)
        self._action_targets, self._hub_revealed, self._hub_relinked = (np.zeros(n_grown) for _ in range(3))
        for name, target in (("action_targets", self._action_targets), ("hub_revealed", self._hub_revealed),
                             ("hub_relinked", self._hub_relinked)):  # absent before hubs were told apart
            saved = arrays.get(name, empty)[:n_grown]
            target[: len(saved)] = saved
        ids = arrays.get("revealer_ids", empty).astype(np.int64)
        self._revealer = np.full(int(ids.max()) + 1 if len(ids) else 0, -1, dtype=np.int64)
        self._revealer[ids] = arrays.get("revealer_actions", empty)
        self._draining = [int(sub) for sub in np.flatnonzero(_is_files(self._sub_answers, self._sub_files))]
        self._urgent = arrays.get("urgent", empty).tolist()
        ids = arrays.get("pulled_ids", empty).astype(np.int64)
        self._pulled = np.full(int(ids.max()) + 1 if len(ids) else 0, -1, dtype=np.int64)
        self._pulled[ids] = arrays.get("pulled_arms", empty)
        self.text = LinkTextModel()
        self.text.restore(state.get("linktext", {}), arrays)
        lengths = arrays.get("words_lengths", empty).astype(np.int64)
        features = arrays.get("words_features", _NO_WORDS).astype(np.int32)
        bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
        self._words = {int(link): features[bounds[i]:bounds[i + 1]]
                       for i, link in enumerate(arrays.get("words_ids", empty).tolist())}


# A template's mean credit is shrunk towards its action's as if the action had given it this many pulls.
_PRIOR_PULLS = 2.0
# Pending links remember (action, sub-arm) packed in one int.
_SUB_STRIDE = 1 << 32


# A link's surplus halves when its action already holds this many links waiting.
_BACKLOG_SCALE = 10.0
# Credit levels: a factor 2^(1/4) between neighbours, so ties are common among pages of similar worth.
_LEVELS_PER_DOUBLING = 4
_MAX_LEVEL = 120
# rho averages the credit of about the last this-many pages (an exact mean before that).
_RHO_HORIZON = 500
# The bonus scale before any credit was seen, and its floor on sites where nearly nothing pays.
_MIN_SCALE = 0.05


# Link text: a template's next link is the best of this many random ones of each of its levels, by level +
# _TEXT_WEIGHT x the link text model's log-odds. A level is a factor 2^(1/4) of the credit of the page the
# link was found on, so a link's expected credit, parent credit x P(its page pays), is in levels
# level + _LEVELS_PER_DOUBLING x log2 P, and log P is the log-odds while P is small: the weight converts
# natural log-odds into levels. Every level is sampled (no reach): with a window of the top four levels,
# the text could only reorder the links of the best-credited parent page (on an SDG platform, all 20
# indicators of one goal page, few of them "Reported online") and never reach a better-worded link of
# another goal page a few levels below.
_TEXT_SAMPLE = 32
_TEXT_REACH = _MAX_LEVEL
_TEXT_WEIGHT = _LEVELS_PER_DOUBLING / math.log(2.0)
_NO_WORDS = np.zeros(0, dtype=np.int32)
_NO_SCORES = np.zeros(0)
# A template's discount compares its best waiting link with its last this-many pages fed back, when those
# that paid looked _TEXT_TELLS times likelier to pay than those that did not.
_TEXT_PULLED = 16
_TEXT_TELLS = 2.0


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -30.0, 30.0)))


# What a template's pages held is shrunk towards the crawl's rate as if the crawl had given it this many.
_YIELD_PRIOR_PULLS = 2.0
# A page is rich when it held this many targets and this many times the average credit of a page.
_RICH_TARGETS = 10
_RICH_FACTOR = 3.0
# At most this many new links of rich pages wait to be followed before the bandit chooses.
_FOLLOW_LINKS = 20
# A hub's exploration bonus is halved when its pages gave this many links per page that no other page linked.
_ALONE_HALF = 1.0
# A hub reached around keeps this share of its exploration bonus: with none, one whose last links lead
# somewhere new (the hostile test site's 50 MB page) waited behind every calendar page for good.
_HUB_EXPLORE_FLOOR = 0.3
# A hub whose pages revealed no new link at all is told apart after this many of them (one may be a fluke).
_EMPTY_PAGES = 2
# A template is drained as files once at least this many of its links were answered, this share of them files.
_FILE_PULLS = 3
_FILE_SHARE = 0.9


def _is_files(answers, files):
    return (answers >= _FILE_PULLS) & (files >= _FILE_SHARE * answers)


def _level(credit: float) -> int:
    return min(_MAX_LEVEL, int(_LEVELS_PER_DOUBLING * np.log2(1.0 + max(credit, 0.0))))


class OracleBanditPolicy(SleepingBanditPolicy):
    """SB-ORACLE (the paper's upper bound): SB-CLASSIFIER with the site's truth labelling links in place of
    the URL classifier."""

    labels_by_truth = True


def make_paper(config: CrawlConfig, rng: np.random.Generator, is_target=None) -> SleepingBanditPolicy:
    return SleepingBanditPolicy(config, rng, name=config.policy)


def make_oracle(config: CrawlConfig, rng: np.random.Generator, is_target=None) -> OracleBanditPolicy:
    return OracleBanditPolicy(config, rng, name=config.policy)


def make_credited(config: CrawlConfig, rng: np.random.Generator, is_target=None) -> CreditedBanditPolicy:
    return CreditedBanditPolicy(config, rng, name=config.policy)
