"""Harvest curves as PNG (matplotlib, Agg): targets vs requests and target vs non-target volume."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on servers and CI; must precede pyplot
import matplotlib.pyplot as plt
import numpy as np

from sbcrawl_dev.bench.metrics import Harvest

_MAX_POINTS = 2000  # curves are thinned to this many points: enough for the eye, cheap to draw
_MB = 1024**2


def _thin(n: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, _MAX_POINTS)).astype(np.int64)) if n else np.zeros(0, np.int64)


def _padded(curves: Sequence[np.ndarray]) -> np.ndarray:
    """Curves of different lengths as rows of one array, each held at its last value after it ends."""
    length = max(len(c) for c in curves)
    out = np.zeros((len(curves), length))
    for i, c in enumerate(curves):
        if len(c):
            out[i, : len(c)] = c
            out[i, len(c):] = c[-1]
    return out


def harvest_figure(title: str, runs: Mapping[str, Sequence[Harvest]], url_count: int, total_targets: int,
                   path: Path) -> Path:
    """One figure per site: left, targets vs requests (mean ± std over repeats); right, target volume vs
    non-target volume (one line per repeat)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (policy, harvests) in enumerate(runs.items()):
        color = colors[i % len(colors)]
        style = "--" if policy == "omniscient" else "-"
        curves = _padded([h.targets for h in harvests])
        mean, std = curves.mean(axis=0), curves.std(axis=0)
        x = np.arange(1, curves.shape[1] + 1)
        idx = _thin(len(x))
        left.plot(x[idx], mean[idx], style, color=color, label=policy, lw=1.4)
        if len(harvests) > 1:
            left.fill_between(x[idx], (mean - std)[idx], (mean + std)[idx], color=color, alpha=0.15, lw=0)
        for j, h in enumerate(harvests):
            k = _thin(h.requests)
            right.plot(h.non_target_bytes[k] / _MB, h.target_bytes[k] / _MB, style, color=color, lw=1.0,
                       alpha=0.9 if j == 0 else 0.45, label=policy if j == 0 else None)
    left.axhline(0.9 * total_targets, color="grey", lw=0.8, ls=":")
    left.axvline(url_count, color="grey", lw=0.8, ls=":")
    left.set_xlabel(f"requests, GET + HEAD (site: {url_count:,} URLs)")
    left.set_ylabel(f"targets retrieved (of {total_targets:,})")
    left.set_title("targets vs requests")
    right.set_xlabel("non-target volume (MB)")
    right.set_ylabel("target volume (MB)")
    right.set_title("target vs non-target volume")
    left.legend(fontsize=8, loc="lower right")
    right.legend(fontsize=8, loc="lower right")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
