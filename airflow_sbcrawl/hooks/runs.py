"""Which crawl run a task instance makes, and where its state lives: run ids and rerun detection.

A crawl run id is derived from the task instance, never drawn at random, so that every try of one task
instance continues the same run from the same state folder (``S3CrawlLayout.state_prefix``):

* ``<dag_id>__<run_id>`` for a task, ``<dag_id>__<run_id>__<map_index>`` for a mapped one;
* ``<dag_id>__<run_id>__<crawl_key>`` for a crawl that several task instances continue (the rounds of a
  shared budget), whose state is then shared under the crawl key;
* ``<one of the above>__rerun-<UTC time>`` for a new incremental crawl by a task instance whose own crawl
  had already finished (the task was cleared after a success, or a step after the crawl failed): it can
  neither resume that finished crawl nor reuse its run id, whose manifest is already announced.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from airflow_sbcrawl.hooks.layout import S3CrawlLayout

#: Infix of the run id of a crawl made by a task instance whose crawl had already finished (a cleared task).
RERUN = "__rerun-"


@dataclass(frozen=True)
class CrawlTask:
    """The task instance a crawl runs in, as far as run ids and state keys are concerned.

    :param crawl_key: set when several task instances continue one crawl (see ``SBCrawlOperator``).
    """

    dag_id: str
    run_id: str
    task_id: str
    map_index: int = -1
    crawl_key: str | None = None

    @classmethod
    def of(cls, ti: Any, crawl_key: str | None = None) -> CrawlTask:
        """The crawl task of an Airflow task instance (``context["ti"]``)."""
        map_index = getattr(ti, "map_index", -1)
        return cls(ti.dag_id, ti.run_id, ti.task_id, -1 if map_index is None else map_index, crawl_key or None)

    @property
    def crawl_run(self) -> str:
        """The run id of this task instance's crawl (the same for every try)."""
        if self.crawl_key:
            return f"{self.dag_id}__{self.run_id}__{self.crawl_key}"
        return f"{self.dag_id}__{self.run_id}" + (f"__{self.map_index}" if self.map_index >= 0 else "")

    def state_prefix(self, layout: S3CrawlLayout) -> str:
        """The folder of the crawl's checkpoints and budget journal, stable across tries."""
        if self.crawl_key:
            return layout.state_prefix(self.dag_id, self.run_id, self.crawl_key)
        return layout.state_prefix(self.dag_id, self.run_id, self.task_id, self.map_index)

    def finished(self, memory_run_id: str | None) -> bool:
        """Whether the site memory, left by the crawl ``memory_run_id``, says this task instance's own crawl
        (or a rerun of it) already finished, so that a try must start a rerun instead of resuming.

        Never for a crawl continued under a crawl key: a cleared round resumes the shared crawl (what it
        spent stays spent) rather than starting a new one."""
        if memory_run_id is None or self.crawl_key:
            return False
        own = self.crawl_run
        return memory_run_id == own or memory_run_id.startswith(own + RERUN)


def rerun_id(crawl_run: str, now: datetime | None = None) -> str:
    """The run id of a new incremental crawl by a task instance whose crawl ``crawl_run`` finished."""
    return crawl_run + RERUN + (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
