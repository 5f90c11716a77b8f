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
from ..bootstrap import BLOCK, percentile_cis, resample_indices
from .compare import DEFAULT_RESAMPLES, comparison_pairs, delta_from_sums, multiplicities
from .scores import SUBSETS, count_matrix

Rows = Sequence[Mapping]
INTERVALS = ("texts", "texts_and_seeds")


def check_aligned(runs: Sequence[Rows]) -> None:
    """Every seed's rows must hold the same texts in the same order."""
    keys = [[(row["fold"], row["id"]) for row in rows] for rows in runs]
    for seed, other in enumerate(keys[1:], start=1):
        if other != keys[0]:
            raise ValueError(Errors.E421.format(seed=seed, n=len(other), n_first=len(keys[0])))


def count_tensor(runs: Sequence[Rows], system: str, subset: str) -> np.ndarray:
    """(n_texts, n_seeds, 3) TP / FP / FN of `system` on `subset`'s entities."""
    return np.stack([count_matrix(rows, system, SUBSETS[subset]) for rows in runs], axis=1)


def weighted_sums(counts: np.ndarray, folds: np.ndarray, texts: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """Σ_t texts[r, t] · Σ_s seeds[r, fold(t), s] · counts[t, s, :] for every resample r.

    counts: (n_texts, n_seeds, m); folds: (n_texts,) fold index; texts: (R, n_texts)
    multiplicities; seeds: (R, n_folds, n_seeds) multiplicities. Returns (R, m).
    """
    out = np.zeros((texts.shape[0], counts.shape[2]))
    for fold in range(seeds.shape[1]):
        members = np.flatnonzero(folds == fold)
        per_seed = np.einsum("rt,tsm->rsm", texts[:, members], counts[members])
        out += np.einsum("rs,rsm->rm", seeds[:, fold], per_seed)
    return out


def seed_multiplicities(n_resamples: int, n_folds: int, n_seeds: int, rng: np.random.Generator) -> np.ndarray:
    """(R, n_folds, n_seeds): how often each fold's seed is drawn (n_seeds draws with replacement per fold)."""
    drawn = rng.integers(0, n_seeds, size=(n_resamples * n_folds, n_seeds))
    return multiplicities(drawn, n_seeds).reshape(n_resamples, n_folds, n_seeds)


def seeded_delta_f1(runs: Sequence[Rows], systems: Sequence[str], baseline: str = "stock",
                    subsets: Sequence[str] = ("all", "rare"), n_resamples: int = DEFAULT_RESAMPLES,
                    seed: int = 0) -> Dict[str, Dict[str, dict]]:
    """{system: {subset: {"estimate", "per_seed": [...], "texts": CI, "texts_and_seeds": CI}}}."""
    assert runs and runs[0], "no runs to compare"
    check_aligned(runs)
    pairs = comparison_pairs(systems, baseline, subsets)
    k = len(pairs)
    counts = np.concatenate([count_tensor(runs, s, sub) for s, sub in pairs]
                            + [count_tensor(runs, baseline, sub) for _, sub in pairs], axis=2).astype(float)
    fold_labels = [row["fold"] for row in runs[0]]
    order = {f: i for i, f in enumerate(dict.fromkeys(fold_labels))}
    folds = np.asarray([order[f] for f in fold_labels])
    n_texts, n_seeds, n_folds = counts.shape[0], counts.shape[1], len(order)

    def delta(texts: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        return delta_from_sums(weighted_sums(counts, folds, texts, seeds), k)

    every_seed = np.ones((1, n_folds, n_seeds))
    observed = delta(np.ones((1, n_texts)), every_seed)
    per_seed = np.concatenate([delta(np.ones((1, n_texts)), np.eye(n_seeds)[None, None, s].repeat(n_folds, axis=1))
                               for s in range(n_seeds)])  # (n_seeds, k)
    rng = np.random.default_rng(seed)
    seed_rng = np.random.default_rng([seed, 1])
    values: Dict[str, List[np.ndarray]] = {name: [] for name in INTERVALS}
    done = 0
    while done < n_resamples:
        size = min(BLOCK, n_resamples - done)
        texts = multiplicities(resample_indices(n_texts, size, rng, fold_labels), n_texts)
        # resample_indices groups columns by fold; multiplicities count each text where it is
        values["texts"].append(delta(texts, every_seed.repeat(size, axis=0)))
        values["texts_and_seeds"].append(delta(texts, seed_multiplicities(size, n_folds, n_seeds, seed_rng)))
        done += size
    cis = {name: percentile_cis(observed, np.concatenate(parts)) for name, parts in values.items()}
    out: Dict[str, Dict[str, dict]] = {}
    for j, (system, subset) in enumerate(pairs):
        out.setdefault(system, {})[subset] = {
            "estimate": float(observed[0, j]), "per_seed": [float(v) for v in per_seed[:, j]],
            **{name: cis[name][j].to_dict() for name in INTERVALS}}
    return out


def pooled_rows(runs: Sequence[Rows]) -> List[Mapping]:
    """Every seed's rows in one list: scoring it sums the counts over texts and seeds."""
    return [row for rows in runs for row in rows]


__all__ = ["INTERVALS", "check_aligned", "count_tensor", "pooled_rows", "seed_multiplicities", "seeded_delta_f1",
           "weighted_sums"]
