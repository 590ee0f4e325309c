"""Ablation: the URL classifier without link context (copied as sitecustomize.py into a folder put on
PYTHONPATH after the worktree, so every crawl the bench starts imports it)."""

from airflow_sbcrawl.crawler import classify

_init = classify.UrlClassifier.__init__


def _without_context(self, *args, **kwargs):
    kwargs["context_groups"] = ()
    _init(self, *args, **kwargs)


classify.UrlClassifier.__init__ = _without_context
