"""What a person chooses when triggering a crawl from the Airflow UI: the Params of the crawl DAGs.

Targets are chosen by family (CSV, spreadsheets, …), each mapped to the MIME types servers label such
files with: every one of the engine's target types belongs to exactly one family, so selecting every
family is the engine's default. Only production policies are offered; the baselines (dfs, random, …) stay
available to benchmarks and to ``crawl_options``.

The start URL must be a public web address: ``check_public_start_url`` refuses loopback, private,
link-local and other non-public literal addresses (and ``localhost``) before any request, because a crawl
is started by a UI user and runs inside the deployment's network. A host name is not resolved here (the
crawl may go through a proxy that resolves it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow_sbcrawl.crawler.addresses import start_url_problem
from airflow_sbcrawl.crawler.policies.registry import PRODUCTION, REGISTRY
from airflow_sbcrawl.crawler.shared_budget import ALLOCATIONS

# IPv4 literals of loopback, private, link-local, "this network" and shared (CGNAT) ranges.
_NON_PUBLIC_IPV4 = (r"(127\.\d+|10\.\d+|0\.\d+|169\.254|192\.168|172\.(1[6-9]|2\d|3[01])"
                    r"|100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7]))(\.\d+)+")
# A number the resolver reads as an IPv4 address: decimal, octal (leading 0) or hex (0x).
_NUM = r"(0[xX][0-9a-fA-F]*|\d+)"
# Numeric hosts that are not plain dotted quads ("2852039166", "0x7f000001", "127.1", "0", "0177.0.0.1"):
# the resolver reads them as addresses, whichever they are.
_ODD_NUMERIC = (rf"{_NUM}(\.{_NUM}){{0,2}}\.?([:/?#]|$)"
                rf"|({_NUM}\.)*(0[xX][0-9a-fA-F]*|0\d+)(\.{_NUM})*\.?([:/?#]|$)")
#: Start URLs a web form accepts: http(s) on a host name or a public IPv4 address. localhost, non-public
#: IPv4 literals, IPv4 addresses written in other numeric forms and IPv6 literals are refused (a crawl
#: must not become a way into the network it runs in); names resolving to such addresses are refused at
#: connection time by the crawler itself.
PUBLIC_URL_PATTERN = (
    rf"^https?://(?!{_NON_PUBLIC_IPV4}([:/?#]|$))(?!{_ODD_NUMERIC})"
    r"(?!(localhost|[^\s/:?#]*\.localhost)\.?([:/?#]|$))"
    r"[^\s/:?#\[\]]+(:[0-9]{1,5})?([/?#][^\s]*)?$"
)
#: What the trigger form answers for a refused start URL. Airflow's 400 carries jsonschema's message and
#: the subschema that failed: a ``pattern`` failure quotes the whole regex, a ``const`` failure in ``then``
#: quotes only this sentence.
PUBLIC_URL_REFUSAL = ("a public website's http:// or https:// address; localhost, private, loopback and "
                      "link-local addresses (also written as one number or in hex) are refused, because a crawl "
                      "started from this form runs inside the deployment's network")
#: The JSON schema (beside ``"type": "string"``) of a start URL a web form accepts: ``PUBLIC_URL_PATTERN``,
#: refused in words (``PUBLIC_URL_REFUSAL``).
PUBLIC_URL_SCHEMA: Mapping[str, Any] = {
    "if": {"not": {"pattern": PUBLIC_URL_PATTERN}},
    "then": {"const": PUBLIC_URL_REFUSAL},
}
# A host name (or an IP address), with an optional port: what a target host is given as.
HOST_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$"

#: family key -> (label shown in the form, MIME types). Ordered as the form lists them.
TARGET_FAMILIES: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "csv": ("CSV and other delimited text", (
        "text/csv", "application/csv", "application/x-csv", "text/x-csv", "text/comma-separated-values",
        "text/x-comma-separated-values", "text/tab-separated-values", "text/plain")),
    "spreadsheets": ("Spreadsheets (Excel, OpenDocument)", (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "application/vnd.ms-excel",
        "application/vnd.ms-excel.sheet.macroenabled.12", "application/vnd.oasis.opendocument.spreadsheet")),
    "pdf": ("PDF", ("application/pdf", "application/x-pdf")),
    "json": ("JSON", ("application/json", "text/json")),
    "xml": ("XML and SDMX", (
        "application/xml", "text/xml", "application/vnd.sdmx.genericdata+xml",
        "application/vnd.sdmx.structurespecificdata+xml", "application/rdf+xml")),
    "archives": ("Archives (ZIP, gzip, tar, 7z, RAR)", (
        "application/zip", "application/x-zip-compressed", "application/zip-compressed", "application/gzip",
        "application/x-gzip", "application/x-tar", "application/x-gtar", "application/x-7z-compressed",
        "application/vnd.rar", "application/x-rar-compressed")),
    "unlabelled": ("Unlabelled downloads (application/octet-stream)", ("application/octet-stream",)),
    "documents": ("Text documents and slides (Word, OpenDocument, PowerPoint)", (
        "application/msword", "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.template",
        "application/vnd.oasis.opendocument.text", "application/vnd.oasis.opendocument.presentation",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation")),
    "other": ("YAML and RSS", ("application/x-yaml", "application/yaml", "text/x-yaml", "text/yaml",
                               "application/rss+xml")),
}
#: Families selected by default: the data files (many servers label spreadsheets and archives
#: application/octet-stream, so "unlabelled" is one of them).
DEFAULT_FAMILIES: tuple[str, ...] = ("csv", "spreadsheets", "pdf", "json", "xml", "archives", "unlabelled")

#: Policies a user can choose: the registry's production ones, labelled by their descriptions.
PRODUCTION_POLICIES: Mapping[str, str] = {name: REGISTRY[name].description for name in PRODUCTION}

MAX_REQUESTS = 1_000_000
#: The many-site form's default budget per site of its default list (the one-site form's default budget).
PER_SITE_REQUESTS = 2000
MAX_MEGABYTES = 1_000_000


def mime_types_for(families: Iterable[str]) -> list[str]:
    """The MIME types of the chosen families, in family order; an unknown family is a ValueError."""
    chosen = list(dict.fromkeys(families))
    unknown = [f for f in chosen if f not in TARGET_FAMILIES]
    if unknown:
        raise ValueError(f"unknown target families {unknown}; choose from {', '.join(TARGET_FAMILIES)}")
    if not chosen:
        raise ValueError("no target family chosen: the crawl would have nothing to retrieve")
    return [mime for family in TARGET_FAMILIES if family in chosen for mime in TARGET_FAMILIES[family][1]]


def check_public_start_url(url: str) -> None:
    """ValueError naming the reason when ``url``'s host is ``localhost`` or a non-public IP literal (the
    crawler's own rule, :func:`airflow_sbcrawl.crawler.addresses.start_url_problem`)."""
    if problem := start_url_problem(url.strip()):
        raise ValueError(f"start_url {url!r}: {problem}")


def crawl_params(example_urls: Iterable[str] = ()) -> dict[str, Any]:
    """The trigger form of a one-site crawl (``dags/sbcrawl_adhoc.py``): start URL (required, empty),
    budgets, target families and policy, each with a title, a description and its bounds."""
    from airflow.sdk import Param

    examples = list(dict.fromkeys(example_urls))
    return {
        "start_url": Param(
            type="string",
            **PUBLIC_URL_SCHEMA,
            title="Start URL",
            description=("The page the crawl starts from, e.g. a statistics office's home or data page "
                         "(http:// or https://). Its host and subdomains are the crawl's scope; links elsewhere "
                         "are not followed. Must be a public website: localhost and private, loopback or "
                         "link-local addresses are refused."),
            **({"examples": examples} if examples else {}),
        ),
        "max_requests": Param(
            2000, type="integer", minimum=1, maximum=MAX_REQUESTS, title="Request budget",
            description=(f"Most HTTP requests the crawl may send, from 1 to {MAX_REQUESTS:,}: pages, files, "
                         "HEAD probes, robots.txt and retries all count. The crawl stops when it is spent "
                         "(or earlier, when new pages stop yielding data files)."),
        ),
        "max_megabytes": Param(
            1024, type="integer", minimum=1, maximum=MAX_MEGABYTES, title="Download budget (MB)",
            description=(f"Most response bytes the crawl may download, in megabytes (1 MB = 1,048,576 bytes), "
                         f"from 1 to {MAX_MEGABYTES:,}. One file larger than 2 GB is skipped whatever the budget."),
        ),
        "target_families": Param(
            list(DEFAULT_FAMILIES),
            type="array",
            items={"type": "string", "enum": list(TARGET_FAMILIES)},
            examples=list(TARGET_FAMILIES),  # 'examples' on an array makes the form a multi-select
            values_display={key: label for key, (label, _) in TARGET_FAMILIES.items()},
            minItems=1,
            uniqueItems=True,
            title="File types to collect",
            description=("The kinds of files the crawl downloads and stores; at least one. Each kind stands for "
                         "the MIME types servers label it with (CSV: text/csv and 7 aliases; spreadsheets: xlsx, "
                         "xls, xlsm, ods; XML: SDMX and RDF too). Pages are always read to find links."),
        ),
        "target_hosts": Param(
            [],
            type="array",
            items={"type": "string", "pattern": HOST_PATTERN},
            uniqueItems=True,
            title="Other hosts to collect files from",
            description=("Host names (e.g. data.example.org, or host:port) whose files the site's pages link, such "
                         "as a data portal or a CDN: files linked there are downloaded, but pages there are never "
                         "crawled. Their robots.txt and the crawl delay apply as on the site; only public "
                         "addresses. Empty: files off the site are not collected."),
        ),
        "policy": Param(
            "sb-classifier",
            type="string",
            enum=list(PRODUCTION_POLICIES),
            values_display=dict(PRODUCTION_POLICIES),
            title="Crawl strategy",
            description=("How the next link is chosen. SB-CLASSIFIER learns from the crawl so far which links "
                         "lead to data files and usually needs far fewer requests; breadth-first follows every "
                         "link in order and suits small sites crawled completely."),
        ),
    }


def site_list_params(default_urls: Iterable[str], max_rounds: int) -> dict[str, Any]:
    """The trigger form of a many-site crawl (``dags/sbcrawl_many_sites.py``): the sites, one request budget
    for all of them, how it is shared, and in how many rounds (at most ``max_rounds``, the rounds the DAG
    unrolls)."""
    from airflow.sdk import Param

    defaults = list(dict.fromkeys(default_urls))
    return {
        "start_urls": Param(
            defaults,
            type="array",
            items={"type": "string", **PUBLIC_URL_SCHEMA},
            minItems=1,
            title="Start URLs",
            description=("One public website per line (http:// or https://); each is crawled as its own task, "
                         "in parallel on the workers. Default: every provider of the providers' list."),
        ),
        "total_budget": Param(
            min(PER_SITE_REQUESTS * max(1, len(defaults)), MAX_REQUESTS), type="integer", minimum=1,
            maximum=MAX_REQUESTS, title="Request budget for all the sites",
            description=(f"Most HTTP requests the crawls of all the sites may send together, from 1 to "
                         f"{MAX_REQUESTS:,} (pages, files, HEAD probes, robots.txt and retries all count); by "
                         f"default {PER_SITE_REQUESTS:,} per listed provider. How it is shared is the next "
                         "setting."),
        ),
        "allocation": Param(
            "bandit",
            type="string",
            enum=list(ALLOCATIONS),
            values_display={"bandit": "By yield: more requests to the sites that yield more datasets",
                             "equal": "Equal shares: every site the same number of requests"},
            title="Sharing of the budget",
            description=("By yield: the budget goes out in rounds; the first gives every site the same share, "
                         "each next one gives more to the sites whose last round found more new datasets per "
                         "request (a bandit that still tries the others), and what a site that has nothing "
                         "more to crawl leaves goes to the others. Equal shares: one round, the budget "
                         "divided evenly."),
        ),
        "rounds": Param(
            4, type="integer", minimum=1, maximum=max_rounds, title="Rounds",
            description=(f"By yield only: the budget is spread over this many rounds, from 1 to {max_rounds} "
                         "(more rounds adapt better; each round resumes every site's crawl from its checkpoint). "
                         f"Up to {max_rounds} rounds in all hand out what sites that stopped early left."),
        ),
    }
