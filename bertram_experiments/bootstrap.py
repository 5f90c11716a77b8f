"""A generic, numpy-vectorised paired bootstrap (percentile confidence intervals).

Why paired: every system is scored on the same items, so the difference to the
baseline is resampled item by item (one index array per resample, used for every
system), which cancels the item-to-item variation the systems share.

The statistic is any function of an index array: given `idx` of shape
(n_resamples, n_units) it returns (n_resamples,) values, or (n_resamples, k) for
k statistics from the same resamples. A "unit" is whatever is drawn: an item, or a
cluster of items that are not independent (the rarification seeds and thresholds
of one test text); the caller aggregates units inside the statistic.

With `strata`, units are drawn with replacement within each stratum, so every
resample keeps each stratum's size (pooled data sets keep their proportions).

`paired_difference` is the same bootstrap for a statistic of per-item rows that
does not vectorise (Spearman's rho of cosines against human scores): it is
computed for both systems on the same resampled rows.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence

import numpy as np

from .errors import Errors

Statistic = Callable[[np.ndarray], np.ndarray]
#: resamples drawn per block, so (block x n_units) index arrays stay small.
BLOCK = 1000


@dataclass(frozen=True)
class BootstrapCI:
    """Point estimate on the data as observed and a percentile interval."""

    estimate: float
    low: float
    high: float
    n_resamples: int
    confidence: float = 0.95

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    @property
    def contains_zero(self) -> bool:
        """True where the interval does not separate the systems (or is undefined)."""
        return not self.excludes_zero()

    def to_dict(self) -> dict:
        return {"estimate": self.estimate, "low": self.low, "high": self.high,
                "n_resamples": self.n_resamples, "confidence": self.confidence,
                "no_difference": self.contains_zero}


def resample_indices(
    n_units: int,
    n_resamples: int,
    rng: np.random.Generator,
    strata: Optional[Sequence] = None,
) -> np.ndarray:
    """(n_resamples, n_units) unit indices drawn with replacement (within strata).

    Columns are grouped by stratum (in order of first appearance); each stratum
    contributes exactly as many columns as it has units.
    """
    if strata is None:
        return rng.integers(0, n_units, size=(n_resamples, n_units))
    labels = np.asarray(strata)
    assert labels.shape == (n_units,), f"strata must have one label per unit ({n_units}), got shape {labels.shape}"
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    blocks = []
    for group in np.argsort(first):  # strata in order of first appearance
        members = np.flatnonzero(inverse == group)
        blocks.append(members[rng.integers(0, len(members), size=(n_resamples, len(members)))])
    return np.concatenate(blocks, axis=1)


def _blocks(n_units: int, n_resamples: int, seed: int, strata, block: int) -> Iterator[np.ndarray]:
    rng = np.random.default_rng(seed)
    done = 0
    while done < n_resamples:
        size = min(block, n_resamples - done)
        yield resample_indices(n_units, size, rng, strata)
        done += size


def bootstrap_distribution(
    statistic: Statistic,
    n_units: int,
    n_resamples: int = 10000,
    seed: int = 0,
    strata: Optional[Sequence] = None,
    block: int = BLOCK,
) -> np.ndarray:
    """The statistic on every resample: (n_resamples,) or (n_resamples, k)."""
    assert n_units >= 1 and n_resamples >= 1, "the bootstrap needs at least one unit and one resample"
    parts = [np.asarray(statistic(idx), dtype=float) for idx in _blocks(n_units, n_resamples, seed, strata, block)]
    return np.concatenate(parts, axis=0)


def paired_bootstrap(
    statistic: Statistic,
    n_items: int,
    n_resamples: int = 10000,
    seed: int = 0,
    strata: Optional[Sequence] = None,
    confidence: float = 0.95,
    block: int = BLOCK,
):
    """Percentile CI of `statistic` (a function of an index array, see the module doc).

    Returns a `BootstrapCI`, or a list of them when the statistic gives k columns.
    The same `seed` gives the same resamples, hence the same interval.
    """
    if not 0 < confidence < 1:
        raise ValueError(Errors.E309.format(confidence=confidence))
    observed = np.asarray(statistic(np.arange(n_items)[None, :]), dtype=float)
    values = bootstrap_distribution(statistic, n_items, n_resamples, seed, strata, block)
    return percentile_cis(observed, values, confidence)


def percentile_cis(observed: np.ndarray, values: np.ndarray, confidence: float = 0.95):
    """`BootstrapCI`s of the observed statistic (shape (1,) or (1, k)) from its resampled `values`."""
    n_resamples = len(values)
    alpha = (1 - confidence) / 2
    if np.isnan(values).all(axis=0).any():  # undefined on every resample (e.g. rho of a constant)
        nan = np.full(values.shape[1:], np.nan)
        low, high = nan, nan
    else:  # resamples where the statistic is undefined are left out
        low, high = np.nanquantile(values, [alpha, 1 - alpha], axis=0)
    if observed.ndim == 1:
        return BootstrapCI(float(observed[0]), float(low), float(high), n_resamples, confidence)
    return [BootstrapCI(float(e), float(lo), float(hi), n_resamples, confidence)
            for e, lo, hi in zip(observed[0], low, high)]


def paired_difference(
    statistic: Callable[[np.ndarray], float],
    a: Sequence,
    b: Sequence,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> BootstrapCI:
    """CI of statistic(a) - statistic(b), both on the same resampled rows (items on axis 0)."""
    a_rows, b_rows = np.asarray(a), np.asarray(b)
    assert a_rows.ndim and b_rows.ndim and len(a_rows) == len(b_rows), (np.shape(a), np.shape(b))
    assert len(a_rows), "a paired bootstrap of no items"

    def difference(idx: np.ndarray) -> np.ndarray:
        return np.asarray([float(statistic(a_rows[i])) - float(statistic(b_rows[i])) for i in idx])

    return paired_bootstrap(difference, len(a_rows), n_resamples, seed, confidence=confidence)


def mean_difference(a: Sequence[float], b: Sequence[float]) -> Statistic:
    """Statistic: mean of a - b over the resampled items (paired)."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return lambda idx: diff[idx].mean(axis=1)


def ratio_of_sums(numerators: np.ndarray, denominators: Sequence[float]) -> Statistic:
    """Statistic for clusters: sum of the units' numerators / sum of their sizes.

    With per-cluster sums of an item quantity and per-cluster item counts this is
    the item-level mean over the resampled clusters. `numerators` may be
    (n_units,) or (n_units, k) for k statistics at once.
    """
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominators, dtype=float)
    if num.ndim == 1:
        return lambda idx: num[idx].sum(axis=1) / den[idx].sum(axis=1)
    return lambda idx: num[idx].sum(axis=1) / den[idx].sum(axis=1)[:, None]


__all__ = ["BootstrapCI", "bootstrap_distribution", "mean_difference", "paired_bootstrap", "paired_difference",
           "percentile_cis", "ratio_of_sums", "resample_indices"]
