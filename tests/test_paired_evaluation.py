"""Paired bootstrap, gold-label log-probability, per-set outputs, pooling and the
pooled report, on constructed data with known answers (no models)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from spacy_bertram.evaluation import metrics
from spacy_bertram.evaluation.bootstrap import (
    bootstrap_distribution,
    mean_difference,
    paired_bootstrap,
    ratio_of_sums,
    resample_indices,
)
from spacy_bertram.evaluation.paired import (
    EPS,
    ItemTable,
    candidate_key,
    compare_to_baseline,
    gold_log_prob,
    prediction_rows,
    read_predictions,
)
from spacy_bertram.evaluation.pooling import discover_sets, pool_files, pool_tables, strata_of
from spacy_bertram.evaluation.set_outputs import gold_probabilities, write_set_outputs

SYSTEMS = ("baseline", "bertram_slash")


def table(name, clusters, base_correct, sys_correct, base_p, sys_p):
    n = len(clusters)
    return ItemTable(list(SYSTEMS), np.array([name] * n, dtype=object), np.array(clusters, dtype=object),
                     {"baseline": np.array(base_correct, bool), "bertram_slash": np.array(sys_correct, bool)},
                     {"baseline": np.array(base_p, float), "bertram_slash": np.array(sys_p, float)})


# ---------------------------------------------------------------- bootstrap


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
    assert not np.array_equal(bootstrap_distribution(stat, 80, 100, seed=7), bootstrap_distribution(stat, 80, 100, seed=8))


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
    with pytest.raises(ValueError, match="one label per unit"):
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
        res["bertram_slash"]["mean_log_prob"] - res["baseline"]["mean_log_prob"])
    assert res["bertram_slash"]["mcnemar"] == {"only_a": 1, "only_b": 0, "p_value": 1.0}
    assert "accuracy_diff" not in res["baseline"]


def test_mcnemar_exact_on_a_second_hand_table():
    # 5 only A, 1 only B: p = 2 * P(X <= 1 | n=6, 1/2) = 2 * 7 / 64
    a = [True] * 5 + [False] + [True] * 3 + [False] * 4
    b = [False] * 5 + [True] + [True] * 3 + [False] * 4
    res = metrics.mcnemar_exact(a, b)
    assert (res.only_a, res.only_b, res.p_value) == (5, 1, pytest.approx(14 / 64))


def test_gold_probabilities_pick_the_gold_column():
    items = [{"label": "b"}, {"label": "a"}]
    probs = np.array([[0.2, 0.8], [0.6, 0.4]])
    assert gold_probabilities(items, probs, ["a", "b"]).tolist() == [0.8, 0.6]


# ---------------------------------------------------------------- files and pooling


def _items(texts_labels):
    return [{"id": f"i{k}", "label": label, "original_text": text, "text": text + "!",
             "substitutions": [{"substitute": "x", "kind": "synonym", "count": 3.0}]}
            for k, (text, label) in enumerate(texts_labels)]


def _write_set(directory: Path, items, base, slash, seed_sets=()):
    """One evaluated set from hand-made predictions (label, p(gold)) per system."""
    predictions = {"baseline": [lab for lab, _ in base], "bertram_slash": [lab for lab, _ in slash]}
    p_gold = {"baseline": np.array([p for _, p in base]), "bertram_slash": np.array([p for _, p in slash])}
    return write_set_outputs(directory, items, predictions, p_gold, {"seed_sets": list(seed_sets)}, n_resamples=500)


SET_A = _items([("t1", "pos"), ("t2", "neg"), ("t3", "pos")])
SET_B = _items([("t1", "pos"), ("u2", "neg")])  # t1 again: another seed of the same text


def _two_sets(root: Path):
    _write_set(root / "a", SET_A, [("pos", 0.9), ("pos", 0.4), ("neg", 0.3)],
               [("pos", 0.8), ("neg", 0.6), ("pos", 0.7)], seed_sets=["seed-1"])
    _write_set(root / "a" / "seed-1", SET_B, [("neg", 0.2), ("neg", 0.9)], [("pos", 0.6), ("neg", 0.8)])
    _write_set(root / "b", _items([("v1", "neg")]), [("neg", 0.7)], [("neg", 0.5)])


def test_set_outputs_keep_per_item_scores(tmp_path: Path):
    _two_sets(tmp_path)
    rows = [json.loads(line) for line in open(tmp_path / "a" / "predictions.jsonl")]
    assert rows[1]["p_gold"] == {"baseline": 0.4, "bertram_slash": 0.6}
    assert rows[1]["correct"] == {"baseline": False, "bertram_slash": True}
    assert rows[1]["bertram_slash"] == "neg" and rows[0]["candidate"] == candidate_key("t1")
    m = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert m["accuracy"]["bertram_slash"]["All"]["accuracy"] == 1.0
    assert m["vs_baseline"]["bertram_slash"]["accuracy_diff"]["estimate"] == pytest.approx(2 / 3)
    assert m["mcnemar_vs_baseline"]["bertram_slash"]["All"]["only_a"] == 2
    assert read_predictions(tmp_path / "a" / "predictions.jsonl").correct["baseline"].tolist() == [True, False, False]


def test_pooling_two_files_gives_the_concatenated_figures(tmp_path: Path):
    _two_sets(tmp_path)
    sets = discover_sets([tmp_path / "a", tmp_path / "b", tmp_path / "b" / ".." / "a"])
    assert list(sets) == ["a", "a/seed-1", "b"]  # a directory given twice counts once
    result = pool_files([tmp_path / "a", tmp_path / "b"], tmp_path / "pooled", n_resamples=1000)
    pooled = result["pooled"]
    # 6 items: baseline right on t1(a), u2, v1 = 3/6; slash right on all but v1? v1 slash "neg" -> right: 6/6
    assert result["n_items"] == 6 and result["sets"] == {"a": 3, "a/seed-1": 2, "b": 1}
    assert pooled["baseline"]["accuracy"] == pytest.approx(3 / 6)
    assert pooled["bertram_slash"]["accuracy"] == pytest.approx(6 / 6)
    assert pooled["bertram_slash"]["mcnemar"]["only_a"] == 3 and pooled["bertram_slash"]["mcnemar"]["only_b"] == 0
    logs = {s: np.log([0.9, 0.4, 0.3, 0.2, 0.9, 0.7]) if s == "baseline" else np.log([0.8, 0.6, 0.7, 0.6, 0.8, 0.5])
            for s in SYSTEMS}
    assert pooled["baseline"]["mean_log_prob"] == pytest.approx(logs["baseline"].mean())
    assert pooled["bertram_slash"]["log_prob_diff"]["estimate"] == pytest.approx(
        (logs["bertram_slash"] - logs["baseline"]).mean())
    # t1 is in "a" and "a/seed-1": those two sets are one stratum, 5 distinct texts in all
    assert result["strata"] == {"a": ["a", "a/seed-1"], "b": ["b"]}
    assert result["n_clusters"] == 5 and pooled["bertram_slash"]["clusters"] == 5
    assert result["per_set"]["a/seed-1"]["bertram_slash"]["accuracy"] == 1.0
    assert json.loads((tmp_path / "pooled" / "pooled.json").read_text())["n_items"] == 6
    assert (tmp_path / "pooled" / "pooled.md").read_text().startswith("Pooled over 3 rarified sets: 6 items")
    with pytest.raises(ValueError, match="evaluate step"):
        discover_sets([tmp_path / "missing"])


def test_strata_join_sets_that_share_texts_only():
    t = ItemTable.concat([
        table("x", ["c1", "c2"], [1, 1], [1, 1], [.9, .9], [.9, .9]),
        table("y", ["c3"], [1], [1], [.9], [.9]),
        table("z", ["c3", "c4"], [1, 1], [1, 1], [.9, .9], [.9, .9]),
        table("w", ["c2"], [1], [1], [.9], [.9]),
    ])
    assert strata_of(t).tolist() == ["x", "x", "y", "y", "y", "x"]
    res = pool_tables({"x": t.subset(t.sets == "x"), "w": t.subset(t.sets == "w")}, n_resamples=100)
    assert res["strata"] == {"x": ["x", "w"]} and res["n_clusters"] == 2


def test_report_puts_the_pooled_table_first(tmp_path: Path):
    from spacy_bertram.evaluation.report import write_report

    _two_sets(tmp_path / "metrics")
    (tmp_path / "metrics" / "a" / "metrics.json").write_text(json.dumps(
        {**json.loads((tmp_path / "metrics" / "a" / "metrics.json").read_text()), "seconds": 1.0}))
    pool_files([tmp_path / "metrics" / "a", tmp_path / "metrics" / "b"], tmp_path / "metrics" / "pooled",
               n_resamples=200)
    text = write_report(tmp_path / "metrics" / "report.md", ["a", "b"], corpus_dir=tmp_path / "c",
                        training_dir=tmp_path / "t", metrics_dir=tmp_path / "metrics",
                        pooled=tmp_path / "metrics" / "pooled" / "pooled.json").read_text()
    pooled_at = text.index("## Pooled")
    assert pooled_at < text.index("## a\n") < text.index("## b\n")
    assert text.index("| +BERTRAM slash | 6 | 100.0 | +50.0 [") > pooled_at
    assert "| a/seed-1 | +BERTRAM slash | 2 | 100.0 |" in text
    assert "Further rarification seeds evaluated: seed-1" in text
    assert "| pool |" in text
    with pytest.raises(ValueError, match="pool step"):
        write_report(tmp_path / "r.md", ["a"], metrics_dir=tmp_path / "metrics", pooled=tmp_path / "none.json")
