"""Paired bootstrap confidence interval of the difference between two systems.

Two systems scored on the same items (word pairs, test texts, ...) are not
independent samples: an item that is hard for one is usually hard for the
other. The paired bootstrap resamples *items* with replacement and computes
both systems' statistic on the same resample, so the interval is that of the
difference itself, which is usually much narrower than two separate CIs.

The function is generic: `statistic` maps the rows of one system's per-item
data (any numpy array whose first axis is the items: cosines with human
scores for Spearman, 0/1 correctness for accuracy, per-item scores for a mean)
to a number; rows of both systems are picked with the same indices.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

Statistic = Callable[[np.ndarray], float]


class BootstrapCI(NamedTuple):
    """statistic(a) - statistic(b) on all items, and the percentile interval."""

    estimate: float
    low: float
    high: float

    @property
    def contains_zero(self) -> bool:
        """True where the interval does not separate the systems (or is undefined)."""
        return not (self.low > 0 or self.high < 0)

    def to_dict(self) -> dict:
        return {"estimate": self.estimate, "low": self.low, "high": self.high,
                "no_difference": self.contains_zero}


def paired_bootstrap(
    statistic: Statistic,
    a: ArrayLike,
    b: ArrayLike,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> BootstrapCI:
    """Percentile CI of statistic(a) - statistic(b) over paired item resamples.

    Each resample draws len(a) item indices with replacement from a
    `numpy.random.Generator` seeded with `seed` (so one seed gives the same
    resamples, and the same CI, for every system compared on the same items).
    Resamples where the statistic is undefined (NaN, e.g. Spearman's rho of
    a constant) are left out; with none left the interval is NaN.
    """
    a_rows, b_rows = np.asarray(a), np.asarray(b)
    if a_rows.ndim == 0 or b_rows.ndim == 0 or len(a_rows) != len(b_rows):
        raise ValueError(f"Paired data needs the same items: got {np.shape(a)} and {np.shape(b)}.")
    if len(a_rows) == 0:
        raise ValueError("Paired bootstrap of no items.")
    if n_resamples < 1:
        raise ValueError(f"The bootstrap needs at least one resample, got {n_resamples}.")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}.")
    n = len(a_rows)
    estimate = float(statistic(a_rows)) - float(statistic(b_rows))
    rng = np.random.default_rng(seed)
    diffs = np.empty(n_resamples, dtype=float)
    for r in range(n_resamples):
        idx = rng.integers(0, n, size=n)
        diffs[r] = float(statistic(a_rows[idx])) - float(statistic(b_rows[idx]))
    diffs = diffs[~np.isnan(diffs)]
    if diffs.size == 0:
        return BootstrapCI(estimate, float("nan"), float("nan"))
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(diffs, [tail, 100 - tail])
    return BootstrapCI(estimate, float(low), float(high))


__all__ = ["BootstrapCI", "Statistic", "paired_bootstrap"]
