"""Entity P/R/F1 against hand-computed values: overall, rare-token entities, buckets, types."""

from __future__ import annotations

import math

import numpy as np

from bertram_experiments.ner.scores import SUBSETS, count, count_matrix, f1, prf, score_system

# gold: A (0,1 per), B (2,4 loc), C (5,6 org); predicted: A exact, B with the wrong end, D (7,8 per).
GOLD = [(0, 1, "per"), (2, 4, "loc"), (5, 6, "org")]
PRED = [(0, 1, "per"), (2, 3, "loc"), (7, 8, "per")]
RARE = frozenset({3, 7})  # B's second token and D are rare
ROW = {"gold": [list(s) for s in GOLD], "rare": sorted(RARE), "pred": {"sys": [list(s) for s in PRED]}}


def test_overall_counts_and_f1_by_hand():
    assert count(GOLD, PRED) == (1, 2, 2)
    scores = prf(1, 2, 2)
    assert math.isclose(scores["p"], 1 / 3) and math.isclose(scores["r"], 1 / 3) and math.isclose(scores["f"], 1 / 3)


def test_subsets_put_gold_and_predicted_spans_alike():
    # rare: gold B; predicted D ((2,3) has no rare token: other) -> TP 0, FP 1, FN 1
    assert count(GOLD, PRED, RARE, SUBSETS["rare"]) == (0, 1, 1)
    # other: gold A, C; predicted A, (2,3) -> TP 1, FP 1, FN 1
    assert count(GOLD, PRED, RARE, SUBSETS["other"]) == (1, 1, 1)
    scores = score_system([ROW], "sys")
    assert scores["subsets"]["rare"]["f"] == 0.0 and math.isclose(scores["subsets"]["other"]["f"], 0.5)
    assert scores["buckets"]["1 rare token"]["n_gold"] == 1 and scores["buckets"]["no rare token"]["n_gold"] == 2
    assert math.isnan(scores["buckets"]["2+ rare tokens"]["f"])
    assert scores["types"]["per"] == prf(1, 1, 0) and scores["types"]["loc"]["f"] == 0.0


def test_f1_is_nan_with_nothing_to_count_and_sums_over_texts():
    assert math.isnan(float(f1(0, 0, 0))) and float(f1(2, 0, 0)) == 1.0
    other = {"gold": [[0, 2, "per"]], "rare": [], "pred": {"sys": [[0, 2, "per"]]}}
    matrix = count_matrix([ROW, other], "sys", SUBSETS["all"])
    assert matrix.tolist() == [[1, 2, 2], [1, 0, 0]]
    assert math.isclose(score_system([ROW, other], "sys")["subsets"]["all"]["f"], 2 * 2 / (2 * 2 + 2 + 2))
    assert np.allclose(f1(np.array([1, 2]), np.array([1, 0]), np.array([0, 2])), [2 / 3, 4 / 6])
