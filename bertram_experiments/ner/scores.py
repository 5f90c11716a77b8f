"""Entity-level precision, recall and F1: overall, per type, and by rare tokens.

An entity is (start, end, type); a predicted entity is correct when the gold has
exactly that entity (the CoNLL rule). F1 = 2 TP / (2 TP + FP + FN), the harmonic
mean of P and R (undefined, NaN, when there is nothing to count).

Subsets of entities are properties of spans, so gold and predicted entities are
put in a subset by the same test and a correct prediction always falls in the
same subset as its gold entity: an entity "contains a rare token" when one of its
tokens is among the row's `rare` indices (the ones the `bertram` component calls
rare). Buckets split the entities by how many rare tokens they contain.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

Span = Tuple[int, int, str]
Keep = Callable[[Span, frozenset], bool]
#: counts per text: true positives, false positives, false negatives
COUNTS = ("tp", "fp", "fn")
BUCKETS = ("no rare token", "1 rare token", "2+ rare tokens")


def rare_in(span: Span, rare: frozenset) -> int:
    """How many of the span's tokens are rare."""
    return sum(1 for i in range(span[0], span[1]) if i in rare)


SUBSETS: Dict[str, Keep] = {
    "all": lambda span, rare: True,
    "rare": lambda span, rare: rare_in(span, rare) > 0,
    "other": lambda span, rare: rare_in(span, rare) == 0,
}
BUCKET_TESTS: Dict[str, Keep] = {
    BUCKETS[0]: lambda span, rare: rare_in(span, rare) == 0,
    BUCKETS[1]: lambda span, rare: rare_in(span, rare) == 1,
    BUCKETS[2]: lambda span, rare: rare_in(span, rare) >= 2,
}


def as_spans(spans: Sequence[Sequence[object]]) -> List[Span]:
    return [(int(s[0]), int(s[1]), str(s[2])) for s in spans]


def count(
    gold: Sequence[Span], pred: Sequence[Span], rare: frozenset = frozenset(), keep: Keep = SUBSETS["all"]
) -> Tuple[int, int, int]:
    """(TP, FP, FN) of one text on the entities `keep` selects."""
    g = {s for s in gold if keep(s, rare)}
    p = {s for s in pred if keep(s, rare)}
    tp = len(g & p)
    return tp, len(p) - tp, len(g) - tp


def f1(tp, fp, fn):
    """F1 from counts (arrays or numbers); NaN where 2 TP + FP + FN is 0."""
    tp, fp, fn = (np.asarray(x, dtype=float) for x in (tp, fp, fn))
    den = 2 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, 2 * tp / np.where(den > 0, den, 1), np.nan)


def prf(tp: int, fp: int, fn: int) -> Dict[str, float]:
    """P, R, F1 (NaN where undefined) and the counts."""
    p = tp / (tp + fp) if tp + fp else float("nan")
    r = tp / (tp + fn) if tp + fn else float("nan")
    return {"p": p, "r": r, "f": float(f1(tp, fp, fn)), "tp": tp, "fp": fp, "fn": fn, "n_gold": tp + fn}


def count_matrix(rows: Sequence[Mapping], system: str, keep: Keep) -> np.ndarray:
    """(n_texts, 3) TP / FP / FN per text: what the bootstrap resamples."""
    out = np.zeros((len(rows), 3), dtype=np.int64)
    for i, row in enumerate(rows):
        out[i] = count(as_spans(row["gold"]), as_spans(row["pred"][system]), frozenset(row["rare"]), keep)
    return out


def type_test(label: str) -> Keep:
    return lambda span, rare: span[2] == label


def score_system(rows: Sequence[Mapping], system: str, types: Optional[Sequence[str]] = None) -> Dict[str, object]:
    """P/R/F1 of one system: overall, rare / other, buckets and per type."""

    def total(keep: Keep) -> Dict[str, float]:
        tp, fp, fn = (int(x) for x in count_matrix(rows, system, keep).sum(axis=0))
        return prf(tp, fp, fn)

    types = sorted({s[2] for row in rows for s in row["gold"]}) if types is None else types
    return {
        "subsets": {name: total(keep) for name, keep in SUBSETS.items()},
        "buckets": {name: total(keep) for name, keep in BUCKET_TESTS.items()},
        "types": {label: total(type_test(label)) for label in types},
    }


__all__ = [
    "BUCKETS",
    "BUCKET_TESTS",
    "COUNTS",
    "SUBSETS",
    "as_spans",
    "count",
    "count_matrix",
    "f1",
    "prf",
    "rare_in",
    "score_system",
]
