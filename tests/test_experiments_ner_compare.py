"""ΔF1 bootstrap on a toy example: the point estimate by hand, the statistic per resample, the CIs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bertram_experiments.bootstrap import multiplicities
from bertram_experiments.ner.compare import compare_to_stock, delta_f1_statistic


def rows(n_texts: int = 20):
    """Stock finds the first of each text's two entities; 'better' finds both on even texts."""
    out = []
    for i in range(n_texts):
        gold = [[0, 1, "per"], [3, 4, "loc"]]
        better = gold if i % 2 == 0 else gold[:1]
        out.append(
            {"fold": i % 2, "gold": gold, "rare": [3], "pred": {"stock": gold[:1], "better": better, "same": gold[:1]}}
        )
    return out


def test_the_point_estimate_is_the_pooled_f1_difference():
    result = compare_to_stock(rows(), ["stock", "better", "same"], n_resamples=200)
    # stock: TP 20, FP 0, FN 20 -> F1 2/3; better: TP 30, FN 10 -> F1 60/70
    assert math.isclose(result["better"]["all"]["estimate"], 60 / 70 - 40 / 60)
    # rare-token entities (the second one): stock finds none (F1 0), better 10 of 20 (F1 2/3)
    assert math.isclose(result["better"]["rare"]["estimate"], 20 / 30)
    assert result["better"]["all"]["low"] > 0 and not result["better"]["all"]["no_difference"]
    assert result["same"]["all"] == {**result["same"]["all"], "estimate": 0.0, "low": 0.0, "high": 0.0}
    assert result["same"]["rare"]["no_difference"]  # F1 0 vs 0 is a difference of 0


def test_the_statistic_sums_counts_of_the_drawn_texts():
    a = np.array([[1, 0, 1], [2, 0, 0], [0, 1, 1]])
    b = np.array([[0, 0, 2], [1, 1, 1], [0, 0, 1]])
    idx = np.array([[0, 0, 2], [1, 1, 1]])
    assert multiplicities(idx, 3).tolist() == [[2, 0, 1], [0, 3, 0]]
    values = delta_f1_statistic([a], [b])(idx)
    # resample 1: a sums (2,1,3) -> 4/8; b sums (0,0,5) -> 0.  resample 2: a (6,0,0) -> 1; b (3,3,3) -> 6/12
    assert np.allclose(values[:, 0], [0.5, 0.5])


def test_same_seed_same_interval_and_strata_are_used():
    data = rows(30)
    first = compare_to_stock(data, ["stock", "better"], n_resamples=300, seed=3, strata=[r["fold"] for r in data])
    again = compare_to_stock(data, ["stock", "better"], n_resamples=300, seed=3, strata=[r["fold"] for r in data])
    assert first == again
    with pytest.raises(AssertionError, match=r"strata must have one label per unit"):
        compare_to_stock(data, ["stock", "better"], n_resamples=10, strata=[0, 1])
    with pytest.raises(ValueError, match=r"\[E402\].*at least one other system"):
        compare_to_stock(data, ["stock"])
