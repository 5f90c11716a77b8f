"""Synonym recovery: how close a system's vector for a rare word comes to the embedding of the word it replaced.

The rarified sets replace words of the test texts by rare synonyms and misspellings, and
putting the original word's input embedding back (the oracle rows of `evaluate`) recovers
much of the lost accuracy. A vector helps as far as it comes close to that embedding. This
measures it directly, word by word: for a pair of a rare word S and the word O it stands for,
where O is one wordpiece of the encoder (`synonym_pairs`), a system's vector v(S) is scored
against O's input embedding e(O):

  cosine       cos(v(S), e(O))
  rank         O's place among the encoder's whole-word vocabulary (one-wordpiece, alphabetic
               entries) by cosine to v(S): 1 + the entries at least as close as O. S's own
               wordpieces (other than O) are left out: the subword mean is made of them and
               would put them first whatever S means
  hits@10      the share of pairs with rank <= 10; also the median rank and the MRR

Every system's gain over the subword mean (what the stock encoder sees) in mean cosine and
in hits@10 gets a paired bootstrap 95% CI. The bootstrap draws original words, each with all
its pairs: the pairs of one original share their target e(O), so an odd embedding moves
them together and counting them as independent would make the interval too narrow.

This module owns the measure and its table (numpy only, so the report can read it); the
pairs come from `synonym_pairs`, the systems' vectors and the command's run from
`synonym_systems`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from ..bootstrap import paired_bootstrap, ratio_of_sums
from ..downstream.paired import _units
from ..tables import format_ci, markdown_table
from ..intrinsic.similarity import cosine_rows

BASELINE = "subword_mean"
HITS_AT = 10
CONFIDENCE = 0.95
#: Pairs per block of the vocabulary product, so (block x vocabulary) similarities stay small.
RANK_BLOCK = 512
#: Row titles of the subsets (pair sources, `synonym_pairs.SOURCES`).
SUBSET_TITLES = {
    "synonym": "rarified: synonyms",
    "misspelling": "rarified: misspellings",
    "wordnet": "WordNet synonyms",
}

Scores = Tuple[np.ndarray, np.ndarray]  # (cosine, rank) per pair


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (float32); a zero row stays zero."""
    rows = np.asarray(matrix, dtype=np.float32)
    norm = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norm, out=np.zeros_like(rows), where=norm > 0)


def ranks(
    vectors: np.ndarray, vocabulary: np.ndarray, targets: Sequence[int], excluded: Sequence[Sequence[int]]
) -> np.ndarray:
    """Rank of each pair's target row of `vocabulary` (unit rows) by cosine to its vector.

    1 + the rows other than the target that are at least as close (ties count against
    the system: a zero vector ranks last); the rows in `excluded[i]` are not counted.
    """
    unit = unit_rows(vectors)
    targets = np.asarray(targets, dtype=int)
    out = np.empty(len(unit), dtype=int)
    for start in range(0, len(unit), RANK_BLOCK):
        stop = min(start + RANK_BLOCK, len(unit))
        sims = unit[start:stop] @ vocabulary.T
        rows = np.arange(stop - start)
        own = sims[rows, targets[start:stop]]
        closer = (sims >= own[:, None]).sum(axis=1) - 1
        for row in rows:
            left_out = [c for c in set(excluded[start + row]) if c != targets[start + row]]
            closer[row] -= int((sims[row, left_out] >= own[row]).sum()) if left_out else 0
        out[start:stop] = 1 + closer
    return out


def score(
    vectors: np.ndarray, vocabulary: np.ndarray, targets: Sequence[int], excluded: Sequence[Sequence[int]]
) -> Scores:
    """(cosine to the target row, rank of the target row) of each pair."""
    cosine = cosine_rows(np.asarray(vectors, dtype=float), np.asarray(vocabulary, dtype=float)[np.asarray(targets)])
    return cosine, ranks(vectors, vocabulary, targets, excluded)


def summary(cosine: np.ndarray, rank: np.ndarray) -> Dict[str, Any]:
    """n, mean cosine, hits@10 (a share), median rank, mean reciprocal rank."""
    return {
        "n": int(len(cosine)),
        "mean_cosine": float(np.mean(cosine)),
        "hits_at_10": float(np.mean(rank <= HITS_AT)),
        "median_rank": float(np.median(rank)),
        "mrr": float(np.mean(1.0 / rank)),
    }


def compare(
    scores: Mapping[str, Scores], clusters: Sequence[str], n_resamples: int, seed: int, baseline: str = BASELINE
) -> Dict[str, Any]:
    """Per system its summary and, vs `baseline` (the subword mean), CIs of the mean-cosine gain
    and the hits@10 difference, from one paired bootstrap over `clusters` (the original words)."""
    out: Dict[str, Any] = {name: summary(*figures) for name, figures in scores.items()}
    others = [name for name in scores if name != baseline]
    if not others:
        return out
    base_cosine, base_rank = scores[baseline]
    hits = lambda rank: (rank <= HITS_AT).astype(float)  # noqa: E731
    diffs = np.stack(
        [scores[s][0] - base_cosine for s in others] + [hits(scores[s][1]) - hits(base_rank) for s in others], axis=1
    )
    inverse, sizes, _ = _units(np.asarray(clusters, dtype=object), None)
    sums = np.zeros((len(sizes), diffs.shape[1]))
    np.add.at(sums, inverse, diffs)
    cis = paired_bootstrap(ratio_of_sums(sums, sizes), len(sizes), n_resamples, seed, confidence=CONFIDENCE)
    for j, name in enumerate(others):
        out[name].update(gain=cis[j].to_dict(), hits_gain=cis[len(others) + j].to_dict())
    return out


# -- the table --------------------------------------------------------------------------------------

HEADER = (
    "pairs",
    "system",
    "n",
    "mean cosine",
    "gain [95% CI]",
    "hits@10 %",
    "Δ hits@10, points [95% CI]",
    "median rank",
)


def table_rows(subset: str, cell: Mapping[str, Any]) -> List[List[Any]]:
    """One row per system of a subset (a subset without pairs: one row that says so)."""
    title = SUBSET_TITLES.get(subset, subset)
    if not cell.get("systems"):
        return [[title, "-", cell.get("n", 0), "no pairs", "", "", "", ""]]
    return [
        [
            title,
            name,
            figures["n"],
            f"{figures['mean_cosine']:.3f}",
            format_ci(figures.get("gain"), 1, 3, star=True),
            f"{100 * figures['hits_at_10']:.1f}",
            format_ci(figures.get("hits_gain"), 100, 1, star=True),
            f"{figures['median_rank']:g}",
        ]
        for name, figures in cell["systems"].items()
    ]


def format_markdown(metrics: Mapping[str, Any]) -> List[str]:
    """The table of every subset and system, and a note on how it was measured."""
    lines = markdown_table(
        HEADER, (row for subset, cell in metrics["subsets"].items() for row in table_rows(subset, cell)), text_columns=2
    )
    clusters = ", ".join(f"{SUBSET_TITLES.get(s, s)} {c.get('clusters', 0)}" for s, c in metrics["subsets"].items())
    fold = f" Fold {metrics['fold']} of the rare words." if metrics.get("fold") else ""
    lines += [
        "",
        f"Cosine of each system's vector for the rare word to the original word's input embedding; "
        f"rank of the original among {metrics.get('vocabulary')} one-wordpiece alphabetic vocabulary entries "
        f"(the rare word's own wordpieces left out); gain and Δ: system - {BASELINE}. 95% CIs: paired "
        f"bootstrap, {metrics.get('bootstrap')} resamples of original words with all their pairs "
        f"({clusters} original words), seed {metrics.get('seed')}; * = the CI excludes 0.{fold}",
    ]
    return lines


__all__ = ["BASELINE", "HITS_AT", "compare", "format_markdown", "ranks", "score", "summary", "unit_rows"]
