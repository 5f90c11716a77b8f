"""bertram_experiments/downstream/downstream.py: evaluating the systems, metrics, plot, predictions and label checks."""

from __future__ import annotations

import json

import numpy as np
import pytest
import spacy

from bertram_experiments.rarification.records import UnknownLabelError

from tests.util import _write_rarified


def test_evaluate_systems_writes_metrics_plot_and_predictions(trained, bertram_assets, tmp_path):
    from bertram_experiments.downstream.downstream import DEFAULT_SYSTEMS as SYSTEMS, evaluate_systems
    from bertram_experiments.pipelines import load_textcat

    _write_rarified(tmp_path / "rarified")
    # a further rarification seed's set, listed in rarify.json (a stale, unlisted one is ignored)
    _write_rarified(tmp_path / "rarified" / "seed-1")
    _write_rarified(tmp_path / "rarified" / "seed-9")
    (tmp_path / "rarified" / "rarify.json").write_text(json.dumps({"seeds": [0, 1], "seed_sets": ["seed-1"]}))
    (tmp_path / "metrics" / "seed-9").mkdir(parents=True)
    metrics = evaluate_systems(
        trained["model"],
        tmp_path / "rarified",
        tmp_path / "metrics",
        bertram_path=bertram_assets["model"],
        context_store=bertram_assets["store"],
        max_zipf=3.0,
        contexts_per_word=4,
        progress=False,
        n_resamples=200,
    )
    assert metrics["seed_sets"] == ["seed-1"]
    assert not (tmp_path / "metrics" / "seed-9").exists()
    seed_metrics = json.loads((tmp_path / "metrics" / "seed-1" / "metrics.json").read_text())
    assert seed_metrics["accuracy"] == metrics["accuracy"]  # the same texts here, so the same predictions
    paired = metrics["vs_baseline"]
    assert paired["baseline"]["n"] == 4 and "accuracy_diff" not in paired["baseline"]
    slash = "bertram_slash_store"
    assert paired[slash]["accuracy_diff"]["low"] <= paired[slash]["accuracy_diff"]["high"]
    assert paired[slash]["accuracy"] == metrics["accuracy"][slash]["All"]["accuracy"]
    assert metrics["systems"] == list(SYSTEMS)
    assert {"original", "masked", "oracle_slash", "bertram_recentre_form", "bertram_replace_doc"} <= set(SYSTEMS)
    assert metrics["accuracy"]["baseline"]["All"]["n"] == 4
    assert metrics["accuracy"]["baseline"]["WN"]["n"] == 3 and metrics["accuracy"]["baseline"]["Msp"]["n"] == 1
    assert set(metrics["mcnemar_vs_baseline"]) == set(SYSTEMS) - {"baseline"}
    injected = metrics["mean_injected_per_doc"]
    assert injected["baseline"] == injected["original"] == injected["masked"] == 0
    # by the component's own rule "kumquat" (Zipf 1.9) and "dgo" (1.2) are rare to the tiny encoder (3
    # wordpieces each); "lemon" and "fox" (Zipf 4.1, 4.7) are frequent
    assert injected[slash] == injected["bertram_slash_form"] == 0.5
    assert injected["oracle_slash"] == 1.0  # the oracle fills every substitute
    assert metrics["substitute_coverage"][slash] == 0.5 and "oracle_slash" not in metrics["substitute_coverage"]
    assert (tmp_path / "metrics" / "accuracy_by_frequency.png").stat().st_size > 1000
    rows = [json.loads(line) for line in open(tmp_path / "metrics" / "predictions.jsonl")]
    assert len(rows) == 4 and set(rows[0]) >= set(SYSTEMS)
    for row in rows:
        assert set(row["p_gold"]) == set(SYSTEMS) and all(0 < p < 1 for p in row["p_gold"].values())
        assert row["correct"] == {s: row[s] == row["label"] for s in SYSTEMS}
    assert metrics["vs_baseline"]["baseline"]["mean_log_prob"] == pytest.approx(
        np.mean([np.log(row["p_gold"]["baseline"]) for row in rows])
    )
    # "masked" classifies the masked texts with the stock model
    items = [json.loads(line) for line in open(tmp_path / "rarified" / "test.jsonl")]
    stock_masked = spacy.load(trained["model"]).pipe([it["masked_text"] for it in items])
    labels = [max(doc.cats, key=doc.cats.get) for doc in stock_masked]
    assert [row["masked"] for row in rows] == labels
    # the injection architecture with "none" predicts exactly as the stock pipeline
    stock = spacy.load(trained["model"])
    texts = [json.loads(line)["text"] for line in open(tmp_path / "rarified" / "test.jsonl")]
    ours = load_textcat(trained["model"], injection="none")
    for a, b in zip(stock.pipe(texts), ours.pipe(texts)):
        assert a.cats == b.cats


def test_evaluate_rejects_labels_the_model_never_saw(trained, tmp_path):
    from bertram_experiments.downstream.downstream import evaluate_systems

    _write_rarified(tmp_path / "rarified", label_override="space")
    with pytest.raises(UnknownLabelError, match=r"\[E325\].*never saw"):
        evaluate_systems(trained["model"], tmp_path / "rarified", tmp_path / "m", systems=["baseline"])
    with pytest.raises(ValueError, match=r"\[E323\].*need a trained BERTRAM"):
        evaluate_systems(trained["model"], tmp_path / "rarified", tmp_path / "m", systems=["bertram_slash_doc"])
    with pytest.raises(ValueError, match=r"\[E320\].*rarify step"):
        evaluate_systems(trained["model"], tmp_path / "nothing", tmp_path / "m", systems=["baseline"])


def test_store_systems_are_not_run_without_a_store(trained, bertram_assets, tmp_path):
    from bertram_experiments.downstream.downstream import evaluate_systems

    _write_rarified(tmp_path / "rarified")
    metrics = evaluate_systems(
        trained["model"],
        tmp_path / "rarified",
        tmp_path / "m",
        bertram_path=bertram_assets["model"],
        systems=["bertram_slash_store", "bertram_slash_doc"],
        progress=False,
        n_resamples=50,
    )
    assert metrics["systems"] == ["baseline", "bertram_slash_doc"]  # never a store system fed doc contexts


def test_do_no_harm_evaluates_every_original_test_text(trained, bertram_assets, tmp_path):
    from bertram_experiments.rarification.datasets import read_records
    from bertram_experiments.downstream.downstream import ORIGINAL_TEXT_SYSTEMS, evaluate_originals

    splits = trained["root"] / "splits"
    candidates = read_records(splits / "test_candidates.jsonl")
    metrics = evaluate_originals(
        trained["model"], splits, tmp_path / "originals", bertram_assets["model"], progress=False, n_resamples=100
    )
    assert metrics["systems"] == list(ORIGINAL_TEXT_SYSTEMS)
    assert metrics["n_items"] == len(candidates) > 0
    assert metrics["accuracy"]["baseline"]["All"]["n"] == len(candidates)
    assert (
        metrics["vs_baseline"]["bertram_slash_doc"]["log_prob_diff"]["low"]
        <= metrics["vs_baseline"]["bertram_slash_doc"]["log_prob_diff"]["high"]
    )
    assert (tmp_path / "originals" / "predictions.jsonl").is_file()


def test_a_system_with_definitions_from_a_dictionary(trained, bertram_assets, tmp_path):
    from spacy_bertram.dictionary.store import write_definition_store
    from bertram_experiments.downstream.downstream import evaluate_systems

    _write_rarified(tmp_path / "rarified")
    systems = ["baseline", "bertram_slash_gcide"]
    with pytest.raises(ValueError, match=r"\[E324\].*bertram_slash_gcide.*need a definition store"):
        evaluate_systems(
            trained["model"],
            tmp_path / "rarified",
            tmp_path / "m",
            bertram_path=bertram_assets["model"],
            systems=systems,
        )
    store = write_definition_store(tmp_path / "gcide.sqlite", {"kumquat": [("gcide", "Kumquat: a fruit.", 0, 7)]})
    metrics = evaluate_systems(
        trained["model"],
        tmp_path / "rarified",
        tmp_path / "m",
        systems=systems,
        bertram_path=bertram_assets["model"],
        dictionary_store=store,
        progress=False,
        n_resamples=50,
        seed_sets=False,
    )
    assert metrics["dictionary_store"] == str(store)
    assert metrics["mean_injected_per_doc"]["bertram_slash_gcide"] > 0


def test_definitions_after_the_two_stores_fill_only_what_the_stores_leave(trained, bertram_assets, tmp_path):
    """`storesgcide`: the set's own texts, the general store, then at most `definitions_per_word` definitions; a
    word without an entry is read exactly as `stores` reads it, and a missing definition store is named."""
    from typer.testing import CliRunner
    from spacy_bertram.dictionary.store import write_definition_store
    from bertram_experiments.app import app
    from bertram_experiments.downstream.downstream import DEFAULT_DEFINITIONS_PER_WORD, build_set_stores, set_contexts
    from bertram_experiments.pipelines import add_bertram, load_textcat

    chain = set_contexts("storesgcide", tmp_path / "own.sqlite", "general.sqlite", "gcide.sqlite", 1)["*"]
    assert list(chain) == ["indomain", "general", "definitions"]
    assert chain["definitions"] == {
        "@context_sources": "spacy-bertram.dictionary_contexts.v1",
        "path": "gcide.sqlite",
        "limit": 1,
    }
    with pytest.raises(ValueError, match=r"\[E324\].*storesgcide"):
        set_contexts("storesgcide", tmp_path / "own.sqlite", "general.sqlite")

    items = _write_rarified(tmp_path / "rarified")
    systems = ["bertram_recentre_stores", "bertram_recentre_storesgcide"]
    unrelated = write_definition_store(tmp_path / "zebra.sqlite", {"zebra": [("gcide", "Zebra: a horse.", 0, 5)]})
    metrics = evaluate_with_stores(
        trained, bertram_assets, tmp_path, systems, dictionary_store=unrelated, seed_sets=False
    )
    assert metrics["definitions_per_word"] == 2 and metrics["systems"] == ["baseline", *systems]
    p_gold = {s: metrics["vs_baseline"][s]["mean_log_prob"] for s in systems}
    assert p_gold["bertram_recentre_storesgcide"] == pytest.approx(p_gold["bertram_recentre_stores"], abs=1e-9)
    argv = ["evaluate", str(trained["model"]), str(tmp_path / "rarified"), str(tmp_path / "cli")]
    argv += ["--bertram", str(bertram_assets["model"]), "--context-store", str(bertram_assets["store"])]
    argv += ["--systems", "bertram_slash_storesgcide", "--dictionary-store", str(unrelated)]
    result = CliRunner().invoke(app, [*argv, "--definitions-per-word", "1", "--no-seed-sets", "--max-zipf", "3"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "cli" / "metrics.json").read_text())["definitions_per_word"] == 1
    help_text = " ".join(CliRunner().invoke(app, ["evaluate", "--help"], env={"COLUMNS": "200"}).output.split())
    assert f"(default: {DEFAULT_DEFINITIONS_PER_WORD})" in help_text  # the help's default is the evaluation's

    # the kumquat's definitions change its vector, and a second one changes it again
    definitions = {"kumquat": [("gcide", f"Kumquat: a small citrus fruit of kind {i}.", 0, 7) for i in range(3)]}
    gcide = write_definition_store(tmp_path / "gcide.sqlite", definitions)
    own = build_set_stores({"": [{"text": it.text} for it in items]}, tmp_path, max_contexts=4)[""]

    def kumquat_vector(contexts):
        nlp = load_textcat(trained["model"], injection="none")
        add_bertram(nlp, bertram_assets["model"], contexts, bertram_assets["store"], 3.0, 8)
        doc = nlp("the kumquat was good")
        return next(v for i, v in doc._.bertram.items() if doc[i].text == "kumquat")

    stores = kumquat_vector(set_contexts("stores", own, bertram_assets["store"]))
    one = kumquat_vector(set_contexts("storesgcide", own, bertram_assets["store"], gcide, 1))
    two = kumquat_vector(set_contexts("storesgcide", own, bertram_assets["store"], gcide, 2))
    assert np.abs(one - stores).max() > 1e-4 and np.abs(two - one).max() > 1e-4


def test_a_substitute_recurs_where_other_texts_of_its_set_hold_it_in_a_stores_words():
    """How many other texts of the set hold an item's most recurring substitute: case and punctuation as a store
    reads them, the item's own text not counted, a substitute of two words only where a text holds both."""
    from bertram_experiments.downstream.downstream import substitute_recurrence

    def item(text, *substitutes):
        return {"text": text, "substitutions": [{"substitute": s} for s in substitutes]}

    items = [
        item("A cypher, redeeming it.", "cypher"),
        item("cypher and cypher again", "cypher"),  # twice in one text: one text
        item("Nothing humdrum but CYPHER!", "humdrum", "cypher"),  # the most recurring of its two substitutes
        item("a humdrum day", "humdrum"),
        item("take it off now", "take off"),
        item("take a seat", "take off"),  # "off" missing: not a text holding "take off"
        item("no substitute here"),
    ]
    assert substitute_recurrence(items) == [2, 2, 2, 1, 0, 1, 0]


def evaluate_with_stores(trained, bertram_assets, tmp_path, systems, **settings):
    """`evaluate_systems` on tmp_path/rarified into tmp_path/m, with the fixture's model and general store."""
    from bertram_experiments.downstream.downstream import evaluate_systems

    return evaluate_systems(
        trained["model"],
        tmp_path / "rarified",
        tmp_path / "m",
        bertram_path=bertram_assets["model"],
        context_store=bertram_assets["store"],
        systems=systems,
        max_zipf=3.0,
        contexts_per_word=4,
        progress=False,
        n_resamples=50,
        **settings,
    )


def test_each_set_gets_its_own_texts_as_a_store_and_a_fresh_memory(trained, bertram_assets, tmp_path):
    """INDOMAIN as the paper describes it, per evaluated set: the set's texts (no labels) as a store, alone or before
    the general store; the streaming memory starts empty for every set and system."""
    from spacy_bertram import open_context_store
    from bertram_experiments.downstream.downstream import build_set_stores, set_contexts

    items = _write_rarified(tmp_path / "rarified")
    sets = {"": [{"text": it.text} for it in items], "seed-1": [{"text": "the kumquat and the kumquat tree"}]}
    stores = build_set_stores(sets, tmp_path, max_contexts=4)
    with open_context_store(stores[""]) as store:
        assert store.count("kumquat") == 1 and store.count("the") == 4  # every word of the set's own texts
        assert store.contexts("kumquat") == ["the kumquat was good"]
    with open_context_store(stores["seed-1"]) as store:
        assert store.count("kumquat") == 2 and store.count("dgo") == 0  # the other set's texts are not in it
    assert set_contexts("indomain", stores[""], "general.sqlite")["path"] == str(stores[""])
    both = set_contexts("stores", stores[""], "general.sqlite")["*"]
    assert list(both) == ["indomain", "general"] and both["general"]["path"] == "general.sqlite"
    assert set_contexts("memory", None, None) == "doc+memory"
    with pytest.raises(ValueError, match=r"\[E377\]"):
        set_contexts("indomain", None, "general.sqlite")

    _write_rarified(tmp_path / "rarified" / "seed-1")  # a second set: the component switches to its store
    (tmp_path / "rarified" / "rarify.json").write_text(json.dumps({"seeds": [0, 1], "seed_sets": ["seed-1"]}))
    systems = ["bertram_slash_indomain", "bertram_recentre_stores", "bertram_slash_memory", "bertram_slash_doc"]
    metrics = evaluate_with_stores(trained, bertram_assets, tmp_path, systems)
    assert metrics["systems"] == ["baseline", *systems]
    for system in systems:  # the rare substitutes get vectors whatever the contexts
        assert metrics["substitute_coverage"][system] == 0.5
    # one text per rare word here: the set's store and the memory give each word its own sentence, as doc does
    p_gold = {s: metrics["vs_baseline"][s]["mean_log_prob"] for s in systems}
    assert p_gold["bertram_slash_indomain"] == pytest.approx(p_gold["bertram_slash_doc"], abs=1e-6)
    assert p_gold["bertram_slash_memory"] == pytest.approx(p_gold["bertram_slash_doc"], abs=1e-6)
    seed_1 = json.loads((tmp_path / "m" / "seed-1" / "metrics.json").read_text())
    assert seed_1["accuracy"] == metrics["accuracy"]  # the same texts: the same store, a memory empty again
    rows = [json.loads(line) for line in (tmp_path / "m" / "predictions.jsonl").read_text().splitlines()]
    assert [r["substitute_other_texts"] for r in rows] == [0, 0, 0, 0]  # each substitute in its own text only
    assert seed_1["vs_baseline"]["bertram_slash_memory"]["mean_log_prob"] == pytest.approx(
        p_gold["bertram_slash_memory"], abs=1e-6
    )
