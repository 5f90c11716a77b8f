"""Each point of a curve: both systems' score pooled over runs, the difference with paired CIs, the cost.

The runs of a point are its folds x draws x seeds. A system's score pools every run:
NER F1 from TP / FP / FN summed over texts and runs (as `ner-full-evaluate` does),
accuracy from correct / texts summed likewise, so every run counts alike. The
difference to stock gets `bootstrap.runs_bootstrap`'s two intervals: over test texts
(drawn within their fold, every run kept) and over test texts and runs (each fold's
runs drawn with replacement too, covering training noise). Subsets: `all`, and
`rare`: the entities (NER) or texts (textcat) holding a token the pipeline's
`bertram` component calls rare. Cost: the with-bertram runs' seconds over stock's,
summed over the point's runs, to train and to predict the test texts (with the vector
cache the runs share warm, and, apart, from a cold cache: the first run over a fold).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..bootstrap import DEFAULT_RESAMPLES, runs_bootstrap
from ..ner.scores import SUBSETS as ENTITY_SUBSETS
from ..ner.scores import count_matrix, f1
from .runs import BERTRAM, STOCK

Rows = Sequence[Mapping]
CURVE_SUBSETS = ("all", "rare")


def accuracy_counts(rows: Rows, system: str, subset: str) -> np.ndarray:
    """(n_texts, 2): correct and counted, for the texts of `subset` (a text outside it counts 0, 0)."""
    out = np.zeros((len(rows), 2))
    for i, row in enumerate(rows):
        if subset == "all" or row["rare"]:
            out[i] = (float(row["pred"][system] == row["gold"]), 1.0)
    return out


def accuracy(sums: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sums[..., 1] > 0, sums[..., 0] / np.where(sums[..., 1] > 0, sums[..., 1], 1), np.nan)


def f1_of_sums(sums: np.ndarray) -> np.ndarray:
    return f1(sums[..., 0], sums[..., 1], sums[..., 2])


#: per task: the counts of a text, their width, the score of summed counts, and its name
MEASURES: Dict[str, Tuple[Callable[[Rows, str, str], np.ndarray], int, Callable[[np.ndarray], np.ndarray], str]] = {
    "ner": (
        lambda rows, system, subset: count_matrix(rows, system, ENTITY_SUBSETS[subset]).astype(float),
        3,
        f1_of_sums,
        "entity F1",
    ),
    "textcat": (accuracy_counts, 2, accuracy, "accuracy"),
}


def counted(task: str, counts: np.ndarray) -> int:
    """How many entities (gold, NER) or texts (textcat) a subset scores, in one run."""
    return int(counts[:, 0].sum() + counts[:, 2].sum()) if task == "ner" else int(counts[:, 1].sum())


def aligned_runs(records: Sequence[Mapping], rows_of: Mapping[Tuple, Rows]) -> Tuple[List[Mapping], int]:
    """The point's rows as (n_texts, n_runs): texts of every fold in fold order, each fold's runs in
    (draw, seed) order; every fold must have the same number of runs."""
    per_fold: Dict[int, List[Tuple]] = defaultdict(list)
    for record in sorted(records, key=lambda r: (r["fold"], r["draw"], r["seed"])):
        per_fold[record["fold"]].append((record["fold"], record["draw"], record["size"], record["seed"]))
    n_runs = {len(keys) for keys in per_fold.values()}
    assert len(n_runs) == 1, f"every fold needs the same number of runs, got {sorted(n_runs)}"
    texts: List[Mapping] = []
    for fold in sorted(per_fold):
        keys = per_fold[fold]
        for i in range(len(rows_of[keys[0]])):
            texts.append({"fold": fold, "rows": [rows_of[key][i] for key in keys]})
    return texts, n_runs.pop()


def run_counts(task: str, texts: Sequence[Mapping], n_runs: int, system: str, subset: str) -> np.ndarray:
    """(n_texts, n_runs, width): each run's counts of each text (`aligned_runs`' texts) for one system."""
    count_rows = MEASURES[task][0]
    return np.stack([count_rows([text["rows"][r] for text in texts], system, subset) for r in range(n_runs)], axis=1)


def paired_counts_difference(
    task: str, before: np.ndarray, after: np.ndarray, folds: Sequence, n_resamples: int, seed: int
) -> Tuple[float, float, int, Dict[str, object]]:
    """Two systems' `run_counts` of the same texts and runs: each one's pooled score, the n counted (from
    `before`), and after - before with `runs_bootstrap`'s two intervals."""
    _, width, score, _ = MEASURES[task]
    result = runs_bootstrap(
        np.concatenate([after, before], axis=2),
        folds,
        lambda sums: (score(sums[:, :width]) - score(sums[:, width:]))[:, None],
        n_resamples,
        seed,
    )
    pooled = [float(score(counts.sum(axis=(0, 1)))) for counts in (before, after)]
    return pooled[0], pooled[1], counted(task, before[:, 0]), result.column(0)


def seconds_ratio(records: Sequence[Mapping], stage: str) -> Optional[float]:
    """The with-bertram runs' seconds over stock's, summed over `records` (None for no records)."""
    stock = sum(r[f"{stage}_seconds"][STOCK] for r in records)
    return sum(r[f"{stage}_seconds"][BERTRAM] for r in records) / stock if stock else None


def point_cost(records: Sequence[Mapping]) -> Dict[str, object]:
    return {
        "train_ratio": seconds_ratio(records, "train"),
        "predict_ratio": seconds_ratio([r for r in records if not r.get("cold_cache")], "predict"),
        "cold_predict_ratio": seconds_ratio([r for r in records if r.get("cold_cache")], "predict"),
        "train_seconds": {s: round(sum(r["train_seconds"][s] for r in records), 1) for s in (STOCK, BERTRAM)},
    }


def summarise_point(
    task: str,
    records: Sequence[Mapping],
    rows_of: Mapping[Tuple, Rows],
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Dict[str, object]:
    """One point: per subset, stock and bertram pooled scores, n, Δ with both intervals; the cost ratios."""
    texts, n_runs = aligned_runs(records, rows_of)
    fold_labels = [text["fold"] for text in texts]
    out: Dict[str, object] = {"size": records[0]["size"], "runs": len(records), "texts": len(texts)}
    for subset in CURVE_SUBSETS:
        stock, bertram = (run_counts(task, texts, n_runs, system, subset) for system in (STOCK, BERTRAM))
        stock_score, bertram_score, n, delta = paired_counts_difference(
            task, stock, bertram, fold_labels, n_resamples, seed
        )
        out[subset] = {STOCK: stock_score, BERTRAM: bertram_score, "n": n, "delta": delta}
    out["cost"] = point_cost(records)
    return out


def summarise_curve(
    task: str,
    records: Sequence[Mapping],
    rows_of: Mapping[Tuple, Rows],
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> List[Dict[str, object]]:
    """Every point of the curve, smallest first."""
    by_size: Dict[int, List[Mapping]] = defaultdict(list)
    for record in records:
        by_size[record["size"]].append(record)
    return [summarise_point(task, by_size[size], rows_of, n_resamples, seed) for size in sorted(by_size)]


__all__ = ["CURVE_SUBSETS", "MEASURES", "accuracy_counts", "summarise_curve", "summarise_point"]
