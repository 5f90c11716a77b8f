"""bertram_experiments/bootstrap.py: paired, stratified and cluster bootstrap intervals."""

from __future__ import annotations

import numpy as np
import pytest

from bertram_experiments.bootstrap import paired_bootstrap
from bertram_experiments.bootstrap import (
    bootstrap_distribution,
    mean_difference,
    ratio_of_sums,
    resample_indices,
)


def test_identical_systems_give_a_zero_interval():
    right = np.random.default_rng(1).random(60) < 0.6
    ci = paired_bootstrap(mean_difference(right, right), 60, n_resamples=2000, seed=3)
    assert (ci.estimate, ci.low, ci.high) == (0.0, 0.0, 0.0)
    assert not ci.excludes_zero()


def test_same_seed_same_interval_other_seed_other_resamples():
    rng = np.random.default_rng(0)
    a, b = rng.random(80) < 0.7, rng.random(80) < 0.5
    first = paired_bootstrap(mean_difference(a, b), 80, n_resamples=3000, seed=7)
    again = paired_bootstrap(mean_difference(a, b), 80, n_resamples=3000, seed=7)
    other = paired_bootstrap(mean_difference(a, b), 80, n_resamples=3000, seed=8)
    assert first == again
    assert first.estimate == other.estimate == pytest.approx(a.mean() - b.mean())
    # percentiles of 80 0/1 differences are coarse, so compare the resampled values themselves
    stat = mean_difference(a, b)
    assert np.array_equal(bootstrap_distribution(stat, 80, 100, seed=7), bootstrap_distribution(stat, 80, 100, seed=7))
    assert not np.array_equal(
        bootstrap_distribution(stat, 80, 100, seed=7), bootstrap_distribution(stat, 80, 100, seed=8)
    )


def test_clearly_better_system_has_an_interval_above_zero():
    base = np.array([True] * 30 + [False] * 30)
    better = np.array([True] * 30 + [True] * 20 + [False] * 10)  # 20 wins, no loss
    ci = paired_bootstrap(mean_difference(better, base), 60, n_resamples=4000, seed=0)
    assert ci.estimate == pytest.approx(20 / 60)
    # normal approximation: 1/3 +- 1.96 * sqrt((1/3)(2/3)/60) = [0.21, 0.45]
    assert 0.2 < ci.low < ci.estimate < ci.high < 0.48
    assert ci.excludes_zero()


def test_interval_width_matches_the_normal_approximation():
    # difference 1 on half the items, 0 on the rest: mean 0.5, SE = 0.5 / sqrt(400) = 0.025
    diff = np.array([1.0, 0.0] * 200)
    ci = paired_bootstrap(mean_difference(diff, np.zeros(400)), 400, n_resamples=20000, seed=0)
    assert ci.low == pytest.approx(0.5 - 1.96 * 0.025, abs=0.006)
    assert ci.high == pytest.approx(0.5 + 1.96 * 0.025, abs=0.006)


def test_stratified_resampling_keeps_every_stratum_size():
    strata = np.array(["bbc"] * 5 + ["rt"] * 12 + ["bbc"] * 2 + ["ag"] * 1)
    idx = resample_indices(len(strata), 500, np.random.default_rng(0), strata)
    assert idx.shape == (500, 20)
    drawn = strata[idx]
    for name, size in (("bbc", 7), ("rt", 12), ("ag", 1)):
        assert np.all((drawn == name).sum(axis=1) == size)
    # columns are grouped by stratum in order of first appearance
    assert np.all(drawn[:, :7] == "bbc") and np.all(drawn[:, 7:19] == "rt") and np.all(drawn[:, 19] == "ag")
    assert np.all(idx[:, 19] == 19)  # a one-unit stratum always draws itself
    with pytest.raises(AssertionError, match=r"one label per unit"):
        resample_indices(3, 2, np.random.default_rng(0), ["a", "b"])


def test_several_statistics_share_the_resamples():
    a, b = np.arange(10.0), np.arange(10.0)[::-1]
    both = paired_bootstrap(lambda idx: np.stack([a[idx].mean(1), b[idx].mean(1)], axis=1), 10, 500, seed=2)
    alone = paired_bootstrap(lambda idx: a[idx].mean(1), 10, 500, seed=2)
    assert both[0] == alone and both[1].estimate == pytest.approx(4.5)


def test_cluster_bootstrap_of_duplicated_items_equals_the_item_bootstrap():
    rng = np.random.default_rng(4)
    diff = (rng.random(30) < 0.4).astype(float) - (rng.random(30) < 0.3)
    items = paired_bootstrap(mean_difference(diff, np.zeros(30)), 30, 2000, seed=5)
    # every cluster holds two copies of its item: sums 2*d, sizes 2
    clusters = paired_bootstrap(ratio_of_sums(2 * diff, np.full(30, 2.0)), 30, 2000, seed=5)
    assert clusters.estimate == pytest.approx(items.estimate)
    assert (clusters.low, clusters.high) == pytest.approx((items.low, items.high))
