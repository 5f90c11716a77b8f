"""Learning curves over labelled data: nested subsets, the schedule, the pooled scores and their CIs
(hand-computed toys), the table and plot, and the whole curve on a tiny BERT (textcat and NER)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import spacy

from bertram_experiments.label_curve.curve import curves_report, label_curve
from bertram_experiments.label_curve.data import CurveFold, load_folds
from bertram_experiments.label_curve.report import curve_table, plot_curve, plot_curves
from bertram_experiments.label_curve.runs import CurveSettings, Unit, subsets_of, unit_identity
from bertram_experiments.label_curve.schedule import CurveSchedule
from bertram_experiments.label_curve.subsets import check_sizes, nested_order, nested_subsets, parse_sizes
from bertram_experiments.label_curve.summary import summarise_point
from bertram_experiments.ner.data import parse_iob, tagged_doc
from bertram_experiments.ner.folds import write_folds
from bertram_experiments.rarification.baseline import make_splits, train_baseline
from tests.util import tiny_dataset, tiny_iob

ROOT = Path(__file__).parent.parent


def test_each_subset_lies_inside_the_next_and_keeps_the_label_shares():
    labels = ["a"] * 60 + ["b"] * 30 + ["c"] * 10
    order = nested_order(100, seed=3, labels=labels)
    assert sorted(order) == list(range(100))
    subsets = nested_subsets(order, [40, 10, 20])
    assert list(subsets) == [10, 20, 40]
    assert set(subsets[10]) < set(subsets[20]) < set(subsets[40])
    for n, expected in ((10, (6, 3, 1)), (20, (12, 6, 2)), (40, (24, 12, 4))):
        shares = tuple(sum(labels[i] == label for i in subsets[n]) for label in "abc")
        assert all(abs(got - want) <= 1 for got, want in zip(shares, expected)), (n, shares)
    assert nested_order(100, seed=3, labels=labels) == order  # the same order whenever it is asked
    assert nested_order(100, seed=4, labels=labels) != order
    assert sorted(nested_order(7, seed=0)) == list(range(7))


def test_a_fold_draws_the_same_subsets_for_every_system_and_seed_and_other_ones_per_draw():
    nlp = spacy.blank("en")
    pool = [nlp(f"text number {i}") for i in range(30)]
    fold = CurveFold(0, pool, Path("dev.spacy"), [], [])
    first, again = subsets_of(fold, 2, [5, 10]), subsets_of(fold, 2, [5, 10])
    assert first == again
    assert first[0][10] != first[1][10]
    assert set(first[1][5]) < set(first[1][10])


def test_sizes_and_labels_are_checked():
    assert parse_sizes("50, 100,200") == [50, 100, 200]
    with pytest.raises(ValueError, match=r"E425.*--sizes fifty"):
        parse_sizes("fifty")
    with pytest.raises(ValueError, match=r"E425.*1 to 30 training texts"):
        check_sizes([10, 40], 30)
    with pytest.raises(ValueError, match="E424"):
        nested_order(3, 0, labels=["a", "b"])


def test_the_schedule_trains_a_subset_for_its_epochs_within_the_bounds():
    nlp = spacy.blank("en")
    docs = [nlp("one two three four five six seven eight nine ten")] * 50  # 500 words
    steps = CurveSchedule(batch_size=100, epochs=5, min_steps=20, max_steps=100, min_eval_steps=5).for_subset(docs)
    assert (steps.max_steps, steps.eval_frequency, steps.patience) == (25, 5, 15)
    small = CurveSchedule(batch_size=100, epochs=5, min_steps=20, max_steps=100, min_eval_steps=5).for_subset(docs[:3])
    assert (small.max_steps, small.eval_frequency) == (20, 5)
    capped = CurveSchedule(batch_size=10, epochs=5, min_steps=20, max_steps=100, min_eval_steps=5).for_subset(docs)
    assert (capped.max_steps, capped.eval_frequency) == (100, 50)  # a whole pass between dev scores


def record(fold, draw, seed, train=(10.0, 12.0), predict=(1.0, 2.0), cold=False):
    return {
        "fold": fold,
        "draw": draw,
        "size": 4,
        "seed": seed,
        "cold_cache": cold,
        "train_seconds": {"stock": train[0], "bertram": train[1]},
        "predict_seconds": {"stock": predict[0], "bertram": predict[1]},
    }


def test_a_textcat_point_pools_runs_and_texts_as_computed_by_hand():
    gold = ["a", "b", "a", "b"]
    rare = [[1], [], [0, 2], []]
    stock = [["a", "a", "b", "b"], ["a", "b", "b", "a"]]  # run 0: 2/4 right; run 1: 2/4
    bertram = [["a", "b", "a", "b"], ["b", "b", "a", "b"]]  # run 0: 4/4; run 1: 3/4

    def rows(run):
        return [
            {
                "id": str(i),
                "fold": 0,
                "gold": gold[i],
                "rare": rare[i],
                "pred": {"stock": stock[run][i], "bertram": bertram[run][i]},
            }
            for i in range(4)
        ]

    records = [record(0, 0, 0, cold=True), record(0, 1, 0, train=(20.0, 30.0), predict=(1.0, 1.0))]
    point = summarise_point("textcat", records, {(0, 0, 4, 0): rows(0), (0, 1, 4, 0): rows(1)}, n_resamples=400)
    assert point["size"] == 4 and point["runs"] == 2 and point["texts"] == 4
    assert point["all"]["stock"] == pytest.approx(4 / 8) and point["all"]["bertram"] == pytest.approx(7 / 8)
    assert point["all"]["delta"]["estimate"] == pytest.approx(3 / 8)
    assert point["all"]["delta"]["per_seed"] == pytest.approx([2 / 4, 1 / 4])
    # the rare subset is texts 0 and 2: stock right on text 0 in both runs, wrong on 2; bertram wrong once
    assert point["rare"]["n"] == 2
    assert point["rare"]["stock"] == pytest.approx((1 + 0 + 1 + 0) / 4)
    assert point["rare"]["bertram"] == pytest.approx((1 + 1 + 0 + 1) / 4)
    ci = point["all"]["delta"]["texts_and_seeds"]
    assert ci["low"] <= 3 / 8 <= ci["high"] and ci["n_resamples"] == 400
    assert point["cost"]["train_ratio"] == pytest.approx(42 / 30)
    assert point["cost"]["predict_ratio"] == pytest.approx(1.0)
    assert point["cost"]["cold_predict_ratio"] == pytest.approx(2.0)


def test_a_ner_point_scores_f1_from_counts_summed_over_texts_runs_and_folds():
    def rows(fold, predicted):
        return [
            {
                "id": str(i),
                "fold": fold,
                "gold": [[0, 1, "x"]],
                "rare": [0] if i == 0 else [],
                "pred": {"stock": predicted[i][0], "bertram": predicted[i][1]},
            }
            for i in range(2)
        ]

    hit, miss = [[0, 1, "x"]], [[1, 2, "x"]]
    rows_of = {(0, 0, 4, 0): rows(0, [(hit, hit), (miss, hit)]), (1, 0, 4, 0): rows(1, [(miss, hit), ([], [])])}
    point = summarise_point("ner", [record(0, 0, 0), record(1, 0, 0)], rows_of, n_resamples=200)
    # stock: TP 1, FP 2, FN 3 -> F1 = 2/(2+2+3); bertram: TP 3, FP 0, FN 1 -> 6/7
    assert point["all"]["stock"] == pytest.approx(2 / 7) and point["all"]["bertram"] == pytest.approx(6 / 7)
    assert point["all"]["n"] == 4
    # rare-token entities: text 0 of each fold; stock TP 1 FP 0 FN 1 (its miss at 1..2 is no rare span)
    assert point["rare"]["n"] == 2 and point["rare"]["bertram"] == pytest.approx(1.0)
    assert point["rare"]["stock"] == pytest.approx(2 / 3)


def toy_curve():
    def ci(estimate):
        return {
            "estimate": estimate,
            "low": estimate - 0.02,
            "high": estimate + 0.02,
            "n_resamples": 10,
            "confidence": 0.95,
            "no_difference": abs(estimate) < 0.02,
        }

    def subset(delta):
        return {"stock": 0.5, "bertram": 0.5 + delta, "n": 10, "delta": {"texts_and_seeds": ci(delta)}}

    cost = {"train_ratio": 1.2, "predict_ratio": 1.5, "cold_predict_ratio": None}
    points = [
        {"size": n, "runs": 4, "texts": 10, "all": subset(d), "rare": subset(2 * d), "cost": cost}
        for n, d in ((50, 0.05), (100, 0.01))
    ]
    return {
        "name": "toy",
        "task": "textcat",
        "measure": "accuracy",
        "unit": "test texts",
        "folds": 1,
        "draws": 2,
        "seeds": [0, 1],
        "points": points,
    }


def test_the_table_stars_a_gain_whose_interval_excludes_zero_and_the_plot_is_drawn(tmp_path):
    table = curve_table(toy_curve())
    assert table[2].startswith("| 50 | 4 | 50.0 / 55.0 | 10 | +5.0 [+3.0, +7.0] * | 50.0 / 60.0")
    assert "+1.0 [-1.0, +3.0] |" in table[3] and table[3].endswith("| 1.20x | 1.50x |  |")
    assert plot_curve(toy_curve(), tmp_path / "curve.png").stat().st_size > 5000
    assert plot_curves([toy_curve(), toy_curve()], tmp_path / "curves.png").stat().st_size > 5000


def tiny_settings(task, tiny_bert_path, bertram_assets, **kwargs):
    configs = {
        "ner": ("ner_minilm.cfg", "ner_minilm_bertram.cfg"),
        "textcat": ("textcat_minilm.cfg", "textcat_minilm_bertram.cfg"),
    }[task]
    return CurveSettings(
        task,
        str(ROOT / "configs" / configs[0]),
        str(ROOT / "configs" / configs[1]),
        str(bertram_assets["model"]),
        str(bertram_assets["store"]),
        tiny_bert_path,
        schedule=CurveSchedule(batch_size=200, epochs=1, min_steps=2, max_steps=2, learn_rate=1e-3),
        **kwargs,
    )


@pytest.mark.slow
def test_a_textcat_curve_trains_nested_runs_resumes_and_reports(tmp_path, tiny_bert_path, bertram_assets):
    make_splits(str(tiny_dataset(tmp_path / "tiny.jsonl")), tmp_path / "splits", max_words=20, seed=0)
    settings = tiny_settings("textcat", tiny_bert_path, bertram_assets, sizes=(4, 8), seeds=(0, 1), draws=1)
    curve = label_curve("tiny", tmp_path / "splits", tmp_path / "runs", tmp_path / "out", settings, n_resamples=50)
    assert [p["size"] for p in curve["points"]] == [4, 8] and all(p["runs"] == 2 for p in curve["points"])
    run = tmp_path / "runs" / "fold-0" / "draw-0"
    texts = {(n, s): (run / f"n-{n}" / f"seed-{s}" / "train.spacy").read_bytes() for n in (4, 8) for s in (0, 1)}
    assert texts[4, 0] == texts[4, 1] and texts[8, 0] == texts[8, 1]  # both seeds, same subset
    small, large = ({d.text for d in load_docs(run / f"n-{n}" / "seed-0" / "train.spacy")} for n in (4, 8))
    assert small < large
    rows = [json.loads(line) for line in (run / "n-4" / "seed-0" / "predictions.jsonl").open()]
    assert len(rows) == len(load_folds("textcat", tmp_path / "splits")[0].test)
    assert all(set(r["pred"]) == {"stock", "bertram"} for r in rows)
    assert not (run / "n-4" / "seed-0" / "stock").exists()  # the pipelines go once predicted
    first = json.loads((run / "n-4" / "seed-0" / "run.json").read_text())["train_seconds"]
    again = label_curve("tiny", tmp_path / "splits", tmp_path / "runs", tmp_path / "out", settings, n_resamples=50)
    assert json.loads((run / "n-4" / "seed-0" / "run.json").read_text())["train_seconds"] == first  # skipped
    assert again["points"][0]["all"] == curve["points"][0]["all"]
    report = curves_report([tmp_path / "out"], tmp_path / "report")
    assert "### tiny (textcat)" in report.read_text(encoding="utf8") and (tmp_path / "report" / "tiny.png").is_file()
    assert (tmp_path / "report" / "curves.png").stat().st_size > 5000


@pytest.mark.slow
def test_contexts_sets_the_with_bertram_arms_contexts_and_names_the_runs(tmp_path, tiny_bert_path, bertram_assets):
    """--contexts: the bertram pipeline reads "both" (the text, then the store) instead of its config's "none"; the
    stock one is untouched; a run's identity names the setting (a curve without it keeps the identity it had)."""
    make_splits(str(tiny_dataset(tmp_path / "tiny.jsonl")), tmp_path / "splits", max_words=20, seed=0)
    settings = tiny_settings("textcat", tiny_bert_path, bertram_assets, sizes=(4,), seeds=(0,), contexts="both")
    label_curve("tiny", tmp_path / "splits", tmp_path / "runs", tmp_path / "out", settings, keep_models=True)
    run = tmp_path / "runs" / "fold-0" / "draw-0" / "n-4" / "seed-0"
    assert json.loads((run / "run.json").read_text())["identity"]["contexts"] == "both"
    with_bertram = spacy.load(run / "bertram" / "model-best")
    assert with_bertram.config["components"]["bertram"]["contexts"] == "both"
    assert "bertram" not in spacy.load(run / "stock" / "model-best").pipe_names
    plain = tiny_settings("textcat", tiny_bert_path, bertram_assets, sizes=(4,), seeds=(0,))
    fold = load_folds("textcat", tmp_path / "splits")[0]
    unit = Unit(0, 0, 4, 0)
    bertram = {"model": "m"}
    assert "contexts" not in unit_identity(plain, unit, fold.pool[:4], fold, bertram)
    with pytest.raises(ValueError, match=r"\[E300\].*has no \[components.bertram\]"):
        train_baseline(
            run / "train.spacy",
            fold.dev,
            tmp_path / "stock-as-bertram",
            base_config=ROOT / "configs" / "textcat_minilm.cfg",
            base_model=tiny_bert_path,
            bertram_contexts="both",
        )
    assert not (tmp_path / "stock-as-bertram").exists()  # nothing left half-written


@pytest.mark.slow
def test_a_ner_curve_scores_every_fold_with_the_components_rare_tokens(tmp_path, tiny_bert_path, bertram_assets):
    nlp = spacy.blank("en")
    docs = [tagged_doc(nlp.vocab, t) for t in parse_iob(tiny_iob().splitlines(), "tiny")]
    write_folds(docs, tmp_path / "folds", k=2, seed=0, dev_share=0.2, source="tiny")
    settings = tiny_settings("ner", tiny_bert_path, bertram_assets, sizes=(6,), seeds=(0,), draws=1)
    curve = label_curve("tiny-ner", tmp_path / "folds", tmp_path / "runs", tmp_path / "out", settings, n_resamples=50)
    [point] = curve["points"]
    assert point["texts"] == 24 and point["runs"] == 2  # each fold's test texts, one run per fold
    assert point["all"]["n"] == sum(len(d.ents) for d in docs)
    assert 0 < point["rare"]["n"] < point["all"]["n"]
    assert np.isfinite(point["all"]["stock"])


def load_docs(path: Path):
    from spacy.tokens import DocBin

    return list(DocBin().from_disk(path).get_docs(spacy.blank("en").vocab))
