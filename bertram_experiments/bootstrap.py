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

`runs_bootstrap` draws training runs as well as items: several trained models
(seeds, subset draws) predict the same test texts, and a statistic of counts summed
over texts and runs gets one interval over texts alone and one over texts and runs.

`paired_difference` is the same bootstrap for a statistic of per-item rows that
does not vectorise (Spearman's rho of cosines against human scores): it is
computed for both systems on the same resampled rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Sequence

import numpy as np

from .errors import Errors

#: Resamples of every bootstrap the experiments run (their commands' --bootstrap-resamples).
DEFAULT_RESAMPLES = 10000

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
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "n_resamples": self.n_resamples,
            "confidence": self.confidence,
            "no_difference": self.contains_zero,
        }


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
    n_resamples: int = DEFAULT_RESAMPLES,
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
    n_resamples: int = DEFAULT_RESAMPLES,
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
    return [
        BootstrapCI(float(e), float(lo), float(hi), n_resamples, confidence)
        for e, lo, hi in zip(observed[0], low, high)
    ]


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


def multiplicities(idx: np.ndarray, n_units: int) -> np.ndarray:
    """(n_resamples, n_units): how often each unit is drawn in each resample."""
    out = np.zeros((idx.shape[0], n_units))
    np.add.at(out, (np.arange(idx.shape[0])[:, None], idx), 1.0)
    return out


#: The two intervals of `runs_bootstrap`: texts drawn, every run kept; texts and runs drawn.
RUN_INTERVALS = ("texts", "texts_and_seeds")


def weighted_sums(counts: np.ndarray, folds: np.ndarray, texts: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """Σ_t texts[r, t] · Σ_s seeds[r, fold(t), s] · counts[t, s, :] for every resample r.

    counts: (n_texts, n_runs, m); folds: (n_texts,) fold index; texts: (R, n_texts)
    multiplicities; seeds: (R, n_folds, n_runs) multiplicities. Returns (R, m).
    """
    out = np.zeros((texts.shape[0], counts.shape[2]))
    for fold in range(seeds.shape[1]):
        members = np.flatnonzero(folds == fold)
        per_seed = np.einsum("rt,tsm->rsm", texts[:, members], counts[members])
        out += np.einsum("rs,rsm->rm", seeds[:, fold], per_seed)
    return out


def seed_multiplicities(n_resamples: int, n_folds: int, n_seeds: int, rng: np.random.Generator) -> np.ndarray:
    """(R, n_folds, n_runs): how often each fold's run is drawn (n_runs draws with replacement per fold)."""
    drawn = rng.integers(0, n_seeds, size=(n_resamples * n_folds, n_seeds))
    return multiplicities(drawn, n_seeds).reshape(n_resamples, n_folds, n_seeds)


@dataclass(frozen=True)
class RunsBootstrap:
    """`runs_bootstrap`'s result: k statistics observed, per run, and their two intervals."""

    observed: np.ndarray  # (k,)
    per_run: np.ndarray  # (n_runs, k)
    intervals: Dict[str, List[BootstrapCI]]

    def column(self, j: int) -> dict:
        """Statistic j as JSON: estimate, per_seed (one value per run) and one CI per interval."""
        return {
            "estimate": float(self.observed[j]),
            "per_seed": [float(v) for v in self.per_run[:, j]],
            **{name: cis[j].to_dict() for name, cis in self.intervals.items()},
        }


def runs_bootstrap(
    counts: np.ndarray,
    fold_labels: Sequence,
    statistic: Callable[[np.ndarray], np.ndarray],
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> RunsBootstrap:
    """Statistics of counts summed over texts and runs, with intervals over texts and over texts and runs.

    counts: (n_texts, n_runs, m), each run's counts of each text (the same texts in every run);
    `statistic` maps summed counts (R, m) to (R, k). `texts` draws texts within their fold and
    keeps every run; `texts_and_seeds` draws, in the same resamples, each fold's runs with
    replacement too (every fold's runs are their own training draws), so it covers training
    noise. A resample draws the same runs for every system, so paired systems stay paired.
    """
    order = {f: i for i, f in enumerate(dict.fromkeys(fold_labels))}
    folds = np.asarray([order[f] for f in fold_labels])
    n_texts, n_runs, n_folds = counts.shape[0], counts.shape[1], len(order)

    def summed(texts: np.ndarray, runs: np.ndarray) -> np.ndarray:
        return statistic(weighted_sums(counts, folds, texts, runs))

    every_run = np.ones((1, n_folds, n_runs))
    observed = summed(np.ones((1, n_texts)), every_run)
    per_run = np.concatenate(
        [summed(np.ones((1, n_texts)), np.eye(n_runs)[None, None, r].repeat(n_folds, axis=1)) for r in range(n_runs)]
    )
    rng = np.random.default_rng(seed)
    run_rng = np.random.default_rng([seed, 1])
    values: Dict[str, List[np.ndarray]] = {name: [] for name in RUN_INTERVALS}
    done = 0
    while done < n_resamples:
        size = min(BLOCK, n_resamples - done)
        texts = multiplicities(resample_indices(n_texts, size, rng, fold_labels), n_texts)
        values["texts"].append(summed(texts, every_run.repeat(size, axis=0)))
        values["texts_and_seeds"].append(summed(texts, seed_multiplicities(size, n_folds, n_runs, run_rng)))
        done += size
    intervals = {name: percentile_cis(observed, np.concatenate(parts)) for name, parts in values.items()}
    return RunsBootstrap(observed[0], per_run, intervals)


__all__ = [
    "BootstrapCI",
    "RUN_INTERVALS",
    "RunsBootstrap",
    "bootstrap_distribution",
    "mean_difference",
    "multiplicities",
    "paired_bootstrap",
    "paired_difference",
    "percentile_cis",
    "ratio_of_sums",
    "resample_indices",
    "runs_bootstrap",
    "seed_multiplicities",
    "weighted_sums",
]
