"""Paired bootstrap CIs of ΔF1 against the stock system, resampling texts.

F1 is not a mean over texts, so the statistic sums each resample's per-text
TP / FP / FN and computes F1 from the sums, for every system on the same
resampled texts (the generic `bootstrap.paired_bootstrap`: one set of resamples
for all comparisons). Texts are the units because the entities of one text are
not independent; pooled over folds, texts are drawn within their fold (strata),
so every resample keeps the folds' sizes.
"""

from __future__ import annotations

from typing import Dict, Mapping, Optional, Sequence

import numpy as np

from ..errors import Errors
from ..bootstrap import DEFAULT_RESAMPLES, multiplicities, paired_bootstrap
from .scores import SUBSETS, count_matrix, f1


def delta_from_sums(sums: np.ndarray, k: int) -> np.ndarray:
    """(n_resamples, 3 * 2k) summed TP/FP/FN, k systems then k baselines -> (n_resamples, k) ΔF1."""
    scores = f1(sums[:, 0::3], sums[:, 1::3], sums[:, 2::3])
    return scores[:, :k] - scores[:, k:]


def delta_f1_statistic(system_counts: Sequence[np.ndarray], baseline_counts: Sequence[np.ndarray]):
    """Statistic of an index array: F1(system) - F1(baseline) per pair of (n_texts, 3) count matrices."""
    stacked = np.concatenate([*system_counts, *baseline_counts], axis=1).astype(float)
    k = len(system_counts)

    def statistic(idx: np.ndarray) -> np.ndarray:
        return delta_from_sums(multiplicities(idx, stacked.shape[0]) @ stacked, k)  # sums: (n_resamples, 3 * 2k)

    return statistic


def comparison_pairs(systems: Sequence[str], baseline: str, subsets: Sequence[str]):
    """(system, subset) of every system but the baseline, for every subset."""
    others = [s for s in systems if s != baseline]
    if baseline not in systems or not others:
        raise ValueError(Errors.E402.format(baseline=baseline, systems=list(systems)))
    return [(s, sub) for s in others for sub in subsets]


def compare_to_stock(
    rows: Sequence[Mapping],
    systems: Sequence[str],
    baseline: str = "stock",
    subsets: Sequence[str] = ("all", "rare"),
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    strata: Optional[Sequence] = None,
) -> Dict[str, Dict[str, dict]]:
    """{system: {subset: ΔF1 CI (estimate, low, high, ...)}} for every system but the baseline."""
    assert rows, "no texts to compare"
    pairs = comparison_pairs(systems, baseline, subsets)
    others = [s for s in systems if s != baseline]
    statistic = delta_f1_statistic(
        [count_matrix(rows, s, SUBSETS[sub]) for s, sub in pairs],
        [count_matrix(rows, baseline, SUBSETS[sub]) for _, sub in pairs],
    )
    cis = paired_bootstrap(statistic, len(rows), n_resamples, seed, strata)
    out: Dict[str, Dict[str, dict]] = {s: {} for s in others}
    for (s, sub), ci in zip(pairs, cis):
        out[s][sub] = ci.to_dict()
    return out


__all__ = ["DEFAULT_RESAMPLES", "compare_to_stock", "comparison_pairs", "delta_f1_statistic", "delta_from_sums"]
