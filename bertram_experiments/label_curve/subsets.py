"""Which training texts each point of the curve trains on.

Each draw orders the training pool once, and a point of n texts takes the first n
of that order, so every smaller subset lies inside the next (the curve shows what
more labels add, not a different sample at each point), and the stock and
with-bertram pipelines of every seed train on the very same texts. With labels,
the order is stratified: each label's texts are shuffled, then interleaved so that
every prefix holds each label in (about) its share of the pool, and a 50-text
subset never misses a class by chance.
"""

from __future__ import annotations

from typing import Dict, Hashable, List, Optional, Sequence

import numpy as np

from spacy_bertram.project_support import check_count

from ..errors import Errors


def nested_order(n_texts: int, seed: int, labels: Optional[Sequence[Hashable]] = None) -> List[int]:
    """A permutation of range(n_texts) whose prefixes are the nested subsets (stratified by `labels`)."""
    rng = np.random.default_rng(seed)
    if labels is None:
        return [int(i) for i in rng.permutation(n_texts)]
    if len(labels) != n_texts:
        raise ValueError(Errors.E424.format(n_labels=len(labels), n_texts=n_texts))
    keys = np.empty(n_texts)
    for label in sorted(set(labels), key=str):
        members = np.flatnonzero(np.asarray([lab == label for lab in labels]))
        shuffled = rng.permutation(members)
        # the j-th of a label's m texts sits at (j + u) / m: prefixes hold each label in its share
        keys[shuffled] = (np.arange(len(members)) + rng.random()) / len(members)
    return [int(i) for i in np.lexsort((rng.random(n_texts), keys))]


def parse_sizes(text: str) -> List[int]:
    """--sizes "50,100,200" -> [50, 100, 200] (checked against the pool by `check_sizes`)."""
    try:
        sizes = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise ValueError(Errors.E425.format(sizes=text, n_texts="the pool's")) from None
    return [check_count(size, "--sizes", "items") for size in sizes]


def check_sizes(sizes: Sequence[int], n_texts: int) -> List[int]:
    """The curve's points, ascending; each must fit in the training pool."""
    points = sorted(set(int(n) for n in sizes))
    if not points or points[0] < 1 or points[-1] > n_texts:
        raise ValueError(Errors.E425.format(sizes=list(sizes), n_texts=n_texts))
    return points


def nested_subsets(order: Sequence[int], sizes: Sequence[int]) -> Dict[int, List[int]]:
    """{n: the first n texts of `order`} for every size."""
    return {n: list(order[:n]) for n in check_sizes(sizes, len(order))}


__all__ = ["check_sizes", "nested_order", "nested_subsets", "parse_sizes"]
