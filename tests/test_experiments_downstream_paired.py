"""bertram_experiments/downstream/paired.py: gold-label log-probability and the comparison to the baseline."""

from __future__ import annotations

import math

import pytest

from bertram_experiments.downstream.paired import EPS, compare_to_baseline, gold_log_prob

from tests.util import table


# ---------------------------------------------------------------- per-item measures


def test_mean_gold_log_prob_by_hand():
    p = [0.5, 0.25, 1.0, 0.0]
    expected = [-math.log(2), -2 * math.log(2), 0.0, math.log(EPS)]
    assert gold_log_prob(p) == pytest.approx(expected)
    t = table("s", list("abcd"), [1, 0, 1, 0], [1, 1, 1, 0], p, [0.5, 0.5, 1.0, 0.1])
    res = compare_to_baseline(t, n_resamples=500)
    assert res["baseline"]["mean_log_prob"] == pytest.approx(sum(expected) / 4)
    assert res["bertram_slash"]["mean_log_prob"] == pytest.approx((2 * -math.log(2) + math.log(0.1)) / 4)
    assert res["baseline"]["accuracy"] == 0.5 and res["bertram_slash"]["accuracy"] == 0.75
    assert res["bertram_slash"]["accuracy_diff"]["estimate"] == pytest.approx(0.25)
    assert res["bertram_slash"]["log_prob_diff"]["estimate"] == pytest.approx(
        res["bertram_slash"]["mean_log_prob"] - res["baseline"]["mean_log_prob"]
    )
    assert res["bertram_slash"]["mcnemar"] == {"only_a": 1, "only_b": 0, "p_value": 1.0}
    assert "accuracy_diff" not in res["baseline"]
