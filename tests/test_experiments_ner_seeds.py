"""ΔF1 pooled over folds and seeds: the estimate, the per-seed values and both intervals, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from bertram_experiments.ner.compare import compare_to_stock
from bertram_experiments.bootstrap import seed_multiplicities, weighted_sums
from bertram_experiments.ner.seeds import seeded_delta_f1

E = [[0, 1, "person"]]


def row(fold, i, stock, bertram, gold=E):
    return {"fold": fold, "id": i, "gold": gold, "rare": [0], "pred": {"stock": stock, "bertram": bertram}}


def test_two_folds_two_seeds_by_hand():
    # stock misses text 0 and finds text 1 in both seeds: TP 2, FN 2 -> F1 4/6.
    # bertram finds both in seed 0 and only text 1 in seed 1: TP 3, FN 1 -> F1 6/7.
    seed0 = [row(0, 0, [], E), row(1, 1, E, E)]
    seed1 = [row(0, 0, [], []), row(1, 1, E, E)]
    gain = seeded_delta_f1([seed0, seed1], ["stock", "bertram"], n_resamples=2000)["bertram"]["all"]
    assert gain["estimate"] == pytest.approx(6 / 7 - 4 / 6)
    assert gain["per_seed"] == pytest.approx([1 - 2 / 3, 0.0])  # seed 0: F1 1 vs 2/3; seed 1: equal
    # One text per fold: drawing texts within folds changes nothing, so the texts interval has no width...
    assert gain["texts"]["low"] == gain["texts"]["high"] == pytest.approx(gain["estimate"])
    # ...while drawing seeds ranges from both folds on seed 1 (no gain) to both on seed 0 (+1/3).
    assert gain["texts_and_seeds"]["low"] == pytest.approx(0.0)
    assert gain["texts_and_seeds"]["high"] == pytest.approx(1 / 3)
    assert gain["texts_and_seeds"]["no_difference"] and not gain["texts"]["no_difference"]


def test_one_seed_gives_the_per_fold_bootstrap_of_the_quick_workflow():
    rng = np.random.default_rng(3)
    rows = [row(i % 2, i, E if rng.random() < 0.5 else [], E if rng.random() < 0.7 else []) for i in range(40)]
    seeded = seeded_delta_f1([rows], ["stock", "bertram"], n_resamples=500, seed=4)["bertram"]["rare"]
    plain = compare_to_stock(rows, ["stock", "bertram"], n_resamples=500, seed=4, strata=[r["fold"] for r in rows])[
        "bertram"
    ]["rare"]
    for name in ("texts", "texts_and_seeds"):  # the same draws: one seed leaves nothing else to draw
        assert (seeded[name]["low"], seeded[name]["high"]) == pytest.approx((plain["low"], plain["high"]))
    assert seeded["estimate"] == pytest.approx(plain["estimate"])


def test_weighted_sums_count_each_drawn_text_and_seed():
    counts = np.arange(2 * 2 * 3, dtype=float).reshape(2, 2, 3)  # 2 texts, 2 seeds, TP/FP/FN
    folds = np.array([0, 1])
    texts = np.array([[2.0, 1.0]])  # text 0 twice
    seeds = np.array([[[0.0, 2.0], [1.0, 1.0]]])  # fold 0: seed 1 twice; fold 1: both seeds
    expected = 2 * 2 * counts[0, 1] + 1 * (counts[1, 0] + counts[1, 1])
    assert weighted_sums(counts, folds, texts, seeds)[0] == pytest.approx(expected)
    drawn = seed_multiplicities(100, 3, 4, np.random.default_rng(0))
    assert drawn.shape == (100, 3, 4) and (drawn.sum(axis=2) == 4).all()


def test_seeds_must_hold_the_same_texts():
    with pytest.raises(ValueError, match="seed 1's predictions hold 1 texts"):
        seeded_delta_f1([[row(0, 0, E, E), row(1, 1, E, E)], [row(0, 0, E, E)]], ["stock", "bertram"])
