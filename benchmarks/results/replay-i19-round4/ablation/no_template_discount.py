"""Ablation: no link-text discount of a template's value (used as no_classifier_context.py is)."""

from airflow_sbcrawl.crawler.policies import sb


def _no_discount(self, sub, best, newcomers=False):
    return None


sb.CreditedBanditPolicy._rediscount = _no_discount
