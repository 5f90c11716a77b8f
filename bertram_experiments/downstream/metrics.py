"""Downstream metrics on rarified test sets (paper section 4 / tables 4-5).

Items are the records of the rarification JSONL (dicts with "label" and
"substitutions", each substitution with "substitute", "kind" and "count"),
or `RarifiedItem`s. Predictions are label strings aligned with the items.

- accuracy on All, WN (items with at least one synonym substitution) and
  Msp (items with at least one misspelling);
- exact McNemar test between two systems on the same items: under H0 the
  discordant pairs split 50/50, so p = two-sided binomial test of
  (A right, B wrong) among all discordant pairs;
- accuracy by the frequency of the rarest substituted word, and a PNG plot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from ..plots import pyplot, save_png

SUBSETS = ("All", "WN", "Msp")
#: Bucket edges for the rarest substitute's corpus count: [lo, hi).
DEFAULT_EDGES = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, math.inf)

Item = Union[Mapping, object]


def _as_dict(item: Item) -> Mapping:
    return item if isinstance(item, Mapping) else item.to_dict()  # type: ignore[attr-defined]


def _kinds(item: Mapping) -> set:
    return {s["kind"] for s in item["substitutions"]}


def subset_masks(items: Sequence[Item]) -> Dict[str, np.ndarray]:
    """Boolean membership of each item in All / WN / Msp."""
    kinds = [_kinds(_as_dict(it)) for it in items]
    return {
        "All": np.ones(len(items), dtype=bool),
        "WN": np.array(["synonym" in k for k in kinds], dtype=bool),
        "Msp": np.array(["misspelling" in k for k in kinds], dtype=bool),
    }


def correctness(items: Sequence[Item], predictions: Sequence[str]) -> np.ndarray:
    """Per-item correctness; lengths must match."""
    assert len(items) == len(predictions), f"{len(items)} items but {len(predictions)} predictions"
    return np.array([_as_dict(it)["label"] == p for it, p in zip(items, predictions)], dtype=bool)


def accuracy_by_subset(items: Sequence[Item], predictions: Sequence[str]) -> Dict[str, Dict[str, float]]:
    """{"All": {"accuracy": .., "n": ..}, "WN": .., "Msp": ..}; accuracy NaN when n = 0."""
    right = correctness(items, predictions)
    out = {}
    for name, mask in subset_masks(items).items():
        n = int(mask.sum())
        out[name] = {"accuracy": float(right[mask].mean()) if n else math.nan, "n": n}
    return out


@dataclass(frozen=True)
class McNemarResult:
    only_a: int  # items A gets right and B wrong
    only_b: int  # items B gets right and A wrong
    p_value: float


def mcnemar_exact(correct_a: Sequence[bool], correct_b: Sequence[bool]) -> McNemarResult:
    """Exact two-sided McNemar test on paired correctness (1.0 without discordant pairs)."""
    from scipy.stats import binomtest

    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    assert a.shape == b.shape, (a.shape, b.shape)
    only_a = int((a & ~b).sum())
    only_b = int((~a & b).sum())
    n = only_a + only_b
    p = 1.0 if n == 0 else float(binomtest(only_a, n, 0.5, alternative="two-sided").pvalue)
    return McNemarResult(only_a, only_b, p)


def compare_systems(
    items: Sequence[Item], predictions_a: Sequence[str], predictions_b: Sequence[str]
) -> Dict[str, McNemarResult]:
    """McNemar per subset (All / WN / Msp) between systems A and B."""
    right_a = correctness(items, predictions_a)
    right_b = correctness(items, predictions_b)
    return {name: mcnemar_exact(right_a[m], right_b[m]) for name, m in subset_masks(items).items()}


def rarest_count(item: Item, frequency: Optional[Callable[[str], float]] = None) -> float:
    """Corpus count of the rarest substituted word (the recorded "count" unless
    a `frequency` function is given)."""
    subs = _as_dict(item)["substitutions"]
    if not subs:
        return math.inf
    if frequency is not None:
        return min(float(frequency(s["substitute"])) for s in subs)
    return min(float(s["count"]) for s in subs)


@dataclass(frozen=True)
class FrequencyBucket:
    low: float
    high: float
    n: int
    accuracy: float

    @property
    def label(self) -> str:
        if math.isinf(self.high):
            return f">={self.low:g}"
        return f"[{self.low:g},{self.high:g})"


def accuracy_by_frequency(
    items: Sequence[Item],
    predictions: Sequence[str],
    edges: Sequence[float] = DEFAULT_EDGES,
    frequency: Optional[Callable[[str], float]] = None,
    cumulative: bool = False,
) -> List[FrequencyBucket]:
    """Accuracy per bucket [edges[i], edges[i+1]) of the rarest substitute's count.

    With `cumulative=True` bucket i holds every item below edges[i+1] (the
    paper's "at most c occurrences" view). Empty buckets have accuracy NaN.
    """
    right = correctness(items, predictions)
    counts = np.array([rarest_count(it, frequency) for it in items], dtype=float)
    out = []
    for low, high in zip(edges[:-1], edges[1:]):
        lo = -math.inf if cumulative else low
        mask = (counts >= lo) & (counts < high)
        n = int(mask.sum())
        out.append(FrequencyBucket(float(low), float(high), n, float(right[mask].mean()) if n else math.nan))
    return out


def plot_accuracy_by_frequency(
    results: Mapping[str, Sequence[FrequencyBucket]],
    path: Union[str, Path],
    title: str = "Accuracy by frequency of the rarest substituted word",
) -> Path:
    """One line per system over the non-empty buckets; written as PNG (Agg)."""
    plt = pyplot()

    shown_all = {(b.low, b.high): b for bs in results.values() for b in bs if b.n > 0}
    labels = [shown_all[key].label for key in sorted(shown_all)]
    ticks = [f"{shown_all[key].label}\nn={shown_all[key].n}" for key in sorted(shown_all)]
    order = {label: i for i, label in enumerate(labels)}
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, buckets in results.items():
        shown = [b for b in buckets if b.n > 0]
        ax.plot([order[b.label] for b in shown], [b.accuracy for b in shown], marker="o", label=name)
    ax.set_xticks(range(len(labels)), ticks)
    ax.set_xlabel("corpus count of the rarest substituted word")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return save_png(fig, path)
