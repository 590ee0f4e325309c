"""The warm crawl: what a crawl does differently when it starts from a site memory (an incremental recrawl).

A warm crawl knows the datasets of the last run (with their validators), the pages that led to them or
*described* them (a link in a context that says more than the link: a catalogue row with its date, a file
row; not a menu, pager or sidebar of bare titles), hashes of those contexts, and the keys of every URL the
last runs met. It spends up to a share of its budget on revisits and checks, in the order of
``plan.Tier``: new rows of listings, then what changed as the pages show it, then revisits by what they
would settle, then the rest to be sure; the policy, restored with its learned model, explores the new
links meanwhile. Each known dataset ends the run ``new``, ``changed``, ``unchanged`` or ``gone``.

The parts, each with one job:

* ``contexts``: a link's context on a page (the row around it) and the dates it shows;
* ``known``: the site memory in terms of this run's link ids (``MemoryIndex``);
* ``changes``: what the known datasets turned out to be, and the validators to send (``Changes``);
* ``plan``: the revisits and checks in one priority order (``RevisitPlan``);
* ``observations``: what the run saw for the next memory, and that memory built (``build_memory``).
"""

from airflow_sbcrawl.crawler.warm.changes import STATUSES, Changes
from airflow_sbcrawl.crawler.warm.contexts import PageLinks, link_contexts, newest_date
from airflow_sbcrawl.crawler.warm.known import MemoryIndex, add_frontier, add_pages
from airflow_sbcrawl.crawler.warm.observations import MODEL_KEYS, Observations, build_memory, restore_model
from airflow_sbcrawl.crawler.warm.plan import POLICY_EVERY, RECRAWL_SHARE, RevisitPlan, Tier

__all__ = ["MODEL_KEYS", "POLICY_EVERY", "RECRAWL_SHARE", "STATUSES", "Changes", "MemoryIndex", "Observations",
           "PageLinks", "RevisitPlan", "Tier", "add_frontier", "add_pages", "build_memory", "link_contexts",
           "newest_date", "restore_model"]
