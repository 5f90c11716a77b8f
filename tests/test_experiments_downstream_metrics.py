"""bertram_experiments/downstream/metrics.py: accuracy by subset and frequency, McNemar against hand-computed values."""

from __future__ import annotations

from pathlib import Path

import pytest

from bertram_experiments.downstream import metrics


# ---------------------------------------------------------------- downstream metrics


def _item(label, *kinds_counts):
    return {
        "label": label,
        "substitutions": [{"substitute": f"w{i}", "kind": k, "count": c} for i, (k, c) in enumerate(kinds_counts)],
    }


ITEMS = [
    _item("a", ("synonym", 3)),  # WN
    _item("b", ("misspelling", 0)),  # Msp
    _item("a", ("synonym", 50), ("misspelling", 0)),  # WN + Msp
    _item("b", ("synonym", 20)),  # WN
]


def test_accuracy_by_subset():
    acc = metrics.accuracy_by_subset(ITEMS, ["a", "a", "a", "a"])
    assert acc["All"] == {"accuracy": 0.5, "n": 4}
    assert acc["WN"] == {"accuracy": pytest.approx(2 / 3), "n": 3}
    assert acc["Msp"] == {"accuracy": 0.5, "n": 2}
    with pytest.raises(AssertionError, match=r"items but .* predictions"):
        metrics.accuracy_by_subset(ITEMS, ["a"])


def test_mcnemar_exact_hand_case():
    # 8 items only A gets right, 2 only B, 5 both, 5 neither
    a = [True] * 8 + [False] * 2 + [True] * 5 + [False] * 5
    b = [False] * 8 + [True] * 2 + [True] * 5 + [False] * 5
    res = metrics.mcnemar_exact(a, b)
    # two-sided exact: 2 * P(X <= 2 | n=10, p=1/2) = 2 * (1 + 10 + 45) / 1024
    assert (res.only_a, res.only_b) == (8, 2)
    assert res.p_value == pytest.approx(112 / 1024)
    assert metrics.mcnemar_exact([True, False], [True, False]).p_value == 1.0
    cmp = metrics.compare_systems(ITEMS, ["a", "b", "a", "b"], ["b", "b", "b", "b"])
    assert (cmp["All"].only_a, cmp["All"].only_b) == (2, 0)
    assert cmp["Msp"].only_a == 1


def test_accuracy_by_frequency_and_plot(tmp_path: Path):
    preds = ["a", "b", "b", "b"]  # right, right, wrong, right
    buckets = metrics.accuracy_by_frequency(ITEMS, preds, edges=(0, 1, 10, 100))
    # rarest counts: 3, 0, 0, 20
    assert [(b.n, b.accuracy) for b in buckets] == [(2, 0.5), (1, 1.0), (1, 1.0)]
    cumulative = metrics.accuracy_by_frequency(ITEMS, preds, edges=(0, 1, 10, 100), cumulative=True)
    assert [b.n for b in cumulative] == [2, 3, 4]
    by_function = metrics.accuracy_by_frequency(ITEMS, preds, edges=(0, 1000), frequency=lambda w: 5)
    assert by_function[0].n == 4
    png = metrics.plot_accuracy_by_frequency({"baseline": buckets, "bertram": cumulative}, tmp_path / "p.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["p.png"]


def test_mcnemar_exact_on_a_second_hand_table():
    # 5 only A, 1 only B: p = 2 * P(X <= 1 | n=6, 1/2) = 2 * 7 / 64
    a = [True] * 5 + [False] + [True] * 3 + [False] * 4
    b = [False] * 5 + [True] + [True] * 3 + [False] * 4
    res = metrics.mcnemar_exact(a, b)
    assert (res.only_a, res.only_b, res.p_value) == (5, 1, pytest.approx(14 / 64))
