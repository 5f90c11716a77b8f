"""ΔF1 pooled over folds and training seeds, with two confidence intervals.

Each training seed gives one prediction per test text and system (the folds
pooled, every text tested once per seed). Pooled over seeds, a system's F1 is
computed from its TP / FP / FN summed over texts and seeds, so every seed
counts alike. Two percentile intervals of ΔF1 against stock say what they cover:

- `texts`: texts drawn with replacement within their fold, every seed kept:
  the uncertainty of which tweets were sampled, with the training noise averaged
  over the seeds at hand;
- `texts_and_seeds`: in the same resamples the seeds are drawn too, with
  replacement and independently per fold (every fold's runs are their own
  training draws), so the interval also covers training noise. With one seed
  the two are the same.

A resample draws the same seeds for every system: the stock and bertram runs of
one seed are independent draws, so pairing them costs nothing, and the
test-time-only system really shares its seed's stock model.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Sequence

import numpy as np

from ..errors import Errors
from ..bootstrap import RUN_INTERVALS as INTERVALS, runs_bootstrap
from .compare import DEFAULT_RESAMPLES, comparison_pairs, delta_from_sums
from .scores import SUBSETS, count_matrix

Rows = Sequence[Mapping]


def check_aligned(runs: Sequence[Rows]) -> None:
    """Every seed's rows must hold the same texts in the same order."""
    keys = [[(row["fold"], row["id"]) for row in rows] for rows in runs]
    for seed, other in enumerate(keys[1:], start=1):
        if other != keys[0]:
            raise ValueError(Errors.E421.format(seed=seed, n=len(other), n_first=len(keys[0])))


def count_tensor(runs: Sequence[Rows], system: str, subset: str) -> np.ndarray:
    """(n_texts, n_seeds, 3) TP / FP / FN of `system` on `subset`'s entities."""
    return np.stack([count_matrix(rows, system, SUBSETS[subset]) for rows in runs], axis=1)


def seeded_delta_f1(
    runs: Sequence[Rows],
    systems: Sequence[str],
    baseline: str = "stock",
    subsets: Sequence[str] = ("all", "rare"),
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Dict[str, Dict[str, dict]]:
    """{system: {subset: {"estimate", "per_seed": [...], "texts": CI, "texts_and_seeds": CI}}}."""
    assert runs and runs[0], "no runs to compare"
    check_aligned(runs)
    pairs = comparison_pairs(systems, baseline, subsets)
    k = len(pairs)
    counts = np.concatenate(
        [count_tensor(runs, s, sub) for s, sub in pairs] + [count_tensor(runs, baseline, sub) for _, sub in pairs],
        axis=2,
    ).astype(float)
    result = runs_bootstrap(
        counts, [row["fold"] for row in runs[0]], lambda sums: delta_from_sums(sums, k), n_resamples, seed
    )
    out: Dict[str, Dict[str, dict]] = {}
    for j, (system, subset) in enumerate(pairs):
        out.setdefault(system, {})[subset] = result.column(j)
    return out


def pooled_rows(runs: Sequence[Rows]) -> List[Mapping]:
    """Every seed's rows in one list: scoring it sums the counts over texts and seeds."""
    return [row for rows in runs for row in rows]


__all__ = ["INTERVALS", "check_aligned", "count_tensor", "pooled_rows", "seeded_delta_f1"]
