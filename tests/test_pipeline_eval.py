"""Splits, the frozen-embedding baseline, rarification with a classifier, evaluation, report."""
from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import numpy as np
import pytest
import spacy
from spacy.tokens import DocBin

from spacy_bertram.evaluation.baseline import (
    baseline_config,
    embedding_drift,
    embeddings_frozen,
    make_splits,
    train_baseline,
    transformer_models,
)
from spacy_bertram.evaluation.datasets import (
    DatasetError,
    load_dataset,
    split_records,
    stratified_sample,
    truncate_words,
)
from spacy_bertram.evaluation.records import Record, UnknownLabelError

CONFIG = Path(__file__).parent.parent / "configs" / "textcat_minilm.cfg"
FOOD = "apple orange lemon fruit food".split()
ANIMALS = "cat dog fox bird fish".split()


def tiny_dataset(path: Path, n: int = 60, seed: int = 0, extra=()) -> Path:
    """Sentences from the tiny BERT's vocabulary: food vs animal; fixed train/test split."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        label = "food" if i % 2 else "animal"
        word = rng.choice(FOOD if label == "food" else ANIMALS)
        text = f"the {word} was {rng.choice(['small', 'big', 'red', 'green'])} and the {word} was good"
        rows.append({"text": text, "label": label, "id": f"t{i}", "split": "test" if i % 5 == 0 else "train"})
    rows.extend(extra)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf8")
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_bert_path):
    """A tiny BERT textcat trained by `train_baseline` (frozen embeddings) on tiny splits."""
    root = tmp_path_factory.mktemp("baseline")
    data = tiny_dataset(root / "tiny.jsonl")
    info = make_splits(str(data), root / "splits", max_words=20, seed=0)
    train_info = train_baseline(root / "splits" / "train.spacy", root / "splits" / "dev.spacy", root / "model",
                                base_config=CONFIG, base_model=tiny_bert_path, max_steps=6, eval_frequency=3,
                                batch_size=200, learn_rate=1e-3)
    return {"root": root, "splits": info, "train": train_info, "model": root / "model" / "model-best"}


# ---------------------------------------------------------------------------
# Datasets and splits


def test_truncate_keeps_title_and_cuts_at_sentence_end():
    text = "Title here\nOne two three. Four five six seven eight nine ten"
    assert truncate_words(text, 5) == "Title here\nOne two three."
    assert truncate_words(text, 100) == text
    assert truncate_words("a b c d e f", 3) == "a b c"


def test_load_dataset_skips_empty_texts_and_requires_labels(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a cat", "label": "x"}\n{"text": "  ", "label": "x"}\n', encoding="utf8")
    with pytest.warns(UserWarning, match="empty text"):
        records, n_empty = load_dataset(str(path))
    assert [r.text for r in records] == ["a cat"] and n_empty == 1
    path.write_text('{"text": "a cat"}\n', encoding="utf8")
    with pytest.raises(DatasetError, match="label"):
        load_dataset(str(path))
    with pytest.raises(DatasetError, match="build_corpus"):
        load_dataset("bbc", assets=tmp_path)
    with pytest.raises(DatasetError, match="Unknown dataset"):
        load_dataset("no-such-dataset")


def test_split_uses_fixed_split_and_is_deterministic():
    records = [Record(f"t {i}", "ab"[i % 2], str(i), "test" if i < 10 else "train") for i in range(50)]
    train, dev, test = split_records(records, dev_fraction=0.1, seed=3)
    assert {r.id for r in test} == {str(i) for i in range(10)}
    assert len(dev) == 4 and len(train) == 36
    assert split_records(records, seed=3) == (train, dev, test)
    sample = stratified_sample(train, 10, seed=1)
    assert len(sample) == 10 and {r.label for r in sample} == {"a", "b"}


def test_make_splits_augments_training_docs_only(tmp_path):
    data = tiny_dataset(tmp_path / "d.jsonl", n=200)
    info = make_splits(str(data), tmp_path / "out", max_words=20, seed=0)
    nlp = spacy.blank("en")
    train = list(DocBin().from_disk(tmp_path / "out" / "train.spacy").get_docs(nlp.vocab))
    dev = list(DocBin().from_disk(tmp_path / "out" / "dev.spacy").get_docs(nlp.vocab))
    words = [t.text for d in train for t in d]
    n_words = sum(len(r["text"].split()) for r in map(json.loads, open(tmp_path / "out" / "train.jsonl")))
    # 5% masked words plus 10% duplicated, a quarter of those copies masked too
    assert 0.04 < words.count("MASK") / n_words < 0.15
    assert 0.05 < words.count("/") / n_words < 0.16
    assert not any("MASK" in d.text or "/" in d.text for d in dev)
    assert info["train"] + info["dev"] + info["test_candidates"] == 200
    assert set(train[0].cats) == {"animal", "food"}


def test_make_splits_rejects_a_test_label_never_seen_in_training(tmp_path):
    extra = [{"text": "the moon was big", "label": "space", "id": "odd", "split": "test"}]
    data = tiny_dataset(tmp_path / "d.jsonl", extra=extra)
    with pytest.raises(UnknownLabelError, match="'space'.*never seen in training"):
        make_splits(str(data), tmp_path / "out")


# ---------------------------------------------------------------------------
# Frozen embeddings


def _tiny_pipeline(tiny_bert_path, freeze):
    config = baseline_config(CONFIG, tiny_bert_path, max_steps=5, learn_rate=1e-2, freeze=freeze)
    config = config.interpolate()
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    from spacy.training import Example

    examples = []
    for i in range(8):
        label = "food" if i % 2 else "animal"
        doc = nlp.make_doc(f"the {(FOOD if i % 2 else ANIMALS)[i % 5]} was good")
        examples.append(Example.from_dict(doc, {"cats": {"food": float(label == "food"), "animal": float(label != "food")}}))
    # what spacy train does: initialize runs [initialize.after_init]
    nlp.config["initialize"]["after_init"] = config["initialize"]["after_init"]
    optimizer = nlp.initialize(lambda: examples)
    return nlp, examples, optimizer


@pytest.mark.parametrize("freeze", [True, False])
def test_freeze_callback_keeps_embeddings_fixed_while_the_encoder_trains(tiny_bert_path, freeze):
    nlp, examples, optimizer = _tiny_pipeline(tiny_bert_path, freeze)
    assert embeddings_frozen(nlp) is freeze
    (_, hf), = transformer_models(nlp)
    layer = hf.encoder.layer[0].attention.self.query.weight.detach().clone()
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
        optimizer.step_schedules()  # as spacy train does (warm-up starts at 0)
    drift = embedding_drift(nlp, tiny_bert_path)
    assert (drift == 0.0) is freeze
    assert not hf.encoder.layer[0].attention.self.query.weight.detach().equal(layer)


def test_train_baseline_output_is_frozen_and_complete(trained, tiny_bert_path):
    info = trained["train"]
    assert info["embedding_drift"] == 0.0 and info["frozen_embeddings"]
    model = trained["model"]
    assert (model / "config.cfg").is_file()
    config = spacy.util.load_config(model / "config.cfg")
    assert config["initialize"]["after_init"]["@callbacks"] == "spacy-bertram.freeze_embeddings.v1"
    assert config["training"]["max_steps"] == 6
    assert not list(model.parent.parent.glob(".model.tmp"))
    assert json.loads((model.parent / "baseline.json").read_text())["embedding_drift"] == 0.0


# ---------------------------------------------------------------------------
# Rarification with a classifier


def _toy_classifier(labels):
    """p(vehicle) high iff a vehicle word is in the text."""
    vehicles = {"car", "cars", "truck", "bus"}

    def classify(texts):
        out = []
        for text in texts:
            hit = any(w.strip(".,").lower() in vehicles for w in text.split())
            out.append([0.9, 0.1] if hit else [0.1, 0.9])
        return np.array(out if labels[0] == "vehicle" else [r[::-1] for r in out])

    return classify


def test_rarified_items_flip_when_masked_and_resume(tmp_path):
    from spacy_bertram.evaluation.masking import substitute_masked
    from spacy_bertram.evaluation.rarify_step import mask_in_chunks
    from spacy_bertram.evaluation.rarify import spacy_tagger
    from spacy_bertram.rare_words import CountTable
    from spacy_bertram.evaluation.substitution import SubstitutionDictionary
    from spacy_bertram.evaluation.wordnet import wordnet_available

    if not wordnet_available():
        pytest.skip("WordNet 3.0 is not installed")
    labels = ["vehicle", "other"]
    classify = _toy_classifier(labels)
    candidates = [
        Record("The car was parked near the old house.", "vehicle", "a"),
        Record("She bought a new car yesterday.", "vehicle", "b"),
        Record("The weather was nice.", "vehicle", "wrong"),  # the classifier gets it wrong
        Record("Hello!", "other", "none"),  # no word with a rare synonym
        Record("People walked along the road.", "other", "c"),
    ]
    subs = SubstitutionDictionary(CountTable.wordfreq_estimates(1_000_000), threshold=100)
    tagger = spacy_tagger()
    masking = mask_in_chunks(candidates, classify, labels, subs, tagger, tmp_path / "partial", chunk_size=2,
                             progress=False)
    result = substitute_masked(masking, subs)
    assert result.n_candidates == 5 and result.n_correct == 4
    assert result.skipped_no_candidates >= 1
    assert {it.id for it in result.items} == {"a", "b"}
    for item in result.items:
        original = classify([item.original_text])[0]
        masked = classify([item.masked_text])[0]
        assert labels[int(np.argmax(original))] == item.label
        assert labels[int(np.argmax(masked))] != item.label
        for sub in item.substitutions:
            assert sub.original.lower() == "car" and sub.substitute != sub.original
            assert sub.kind == "misspelling" or subs.frequencies.estimated_count(sub.substitute) < 100

    def broken(texts):
        raise AssertionError("finished chunks must not be recomputed")

    again = substitute_masked(mask_in_chunks(candidates, broken, labels, subs, tagger, tmp_path / "partial",
                                             chunk_size=2, progress=False), subs)
    assert [it.to_dict() for it in again.items] == [it.to_dict() for it in result.items]
    assert again.summary() == result.summary()


def test_rarify_seeds_share_the_masking_chunks_and_write_one_set_each(tmp_path, monkeypatch):
    from spacy_bertram.evaluation import pipelines
    from spacy_bertram.evaluation.rarify_step import run_rarification
    from spacy_bertram.evaluation.wordnet import wordnet_available

    if not wordnet_available():
        pytest.skip("WordNet 3.0 is not installed")
    labels = ["vehicle", "other"]
    calls = []

    def classifier(nlp, batch_size=64):
        def classify(texts):
            calls.append(len(texts))
            return _toy_classifier(labels)(texts)
        return classify

    monkeypatch.setattr(pipelines, "load_textcat", lambda model_dir, injection="none": None)
    monkeypatch.setattr(pipelines, "textcat_labels", lambda nlp: labels)
    monkeypatch.setattr(pipelines, "make_classifier", classifier)
    splits, model = tmp_path / "splits", tmp_path / "model"
    model.mkdir()
    (model / "weights").write_text("w")
    rows = [Record("The car was parked near the old house.", "vehicle", "a"),
            Record("She bought a new car yesterday.", "vehicle", "b"),
            Record("People walked along the road.", "other", "c")]
    splits.mkdir()
    for name in ("train", "dev", "test_candidates"):
        (splits / f"{name}.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in rows))
    counts = tmp_path / "counts.tsv"
    counts.write_text("the\t1000\n", encoding="utf8")
    out = tmp_path / "rarified"
    summary = run_rarification(model, splits, out, counts, seed="0,1,2", progress=False)
    assert summary["seeds"] == [0, 1, 2] and summary["seed_sets"] == ["seed-1", "seed-2"]
    first = [json.loads(line) for line in open(out / "test.jsonl")]
    assert {it["id"] for it in first} == {"a", "b"} and (out / "train.spacy").is_file()
    for name in ("seed-1", "seed-2"):
        items = [json.loads(line) for line in open(out / name / "test.jsonl")]
        assert [(it["id"], it["masked_text"]) for it in items] == [(it["id"], it["masked_text"]) for it in first]
        assert (out / name / "test.spacy").is_file() and not (out / name / "train.spacy").exists()
        assert json.loads((out / name / "rarify.json").read_text())["seed"] == int(name[-1])
    n_calls = len(calls)
    # other seeds: the masking chunks are reused (no classifier call), stale seed sets removed
    summary = run_rarification(model, splits, out, counts, seed="0,3", progress=False)
    assert len(calls) == n_calls and summary["seed_sets"] == ["seed-3"]
    assert sorted(p.name for p in out.glob("seed-*")) == ["seed-3"]
    assert [json.loads(line) for line in open(out / "test.jsonl")] == first
    with pytest.raises(ValueError, match="Repeated seeds"):
        run_rarification(model, splits, out, counts, seed="1,1", progress=False)


# ---------------------------------------------------------------------------
# Evaluation, assembly, report


@pytest.fixture(scope="module")
def bertram_assets(tmp_path_factory, tiny_bert_path):
    from spacy_bertram import NgramVocab, create_bertram, save_bertram
    from spacy_bertram.training.prepare import prepare

    root = tmp_path_factory.mktemp("bertram")
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(
        ["the farmer sold a kumquat at the market", "she ate a sweet orange and a sour lemon",
         "the old dog ran down the road to the river", "a kumquat is a small fruit"] * 5) + "\n", encoding="utf8")
    prepare([corpus], root / "store", min_count=2, progress=False)
    vocab = NgramVocab.from_words(["kumquat", "farmer", "market", "orange", "lemon", "dog"], min_count=1)
    save_bertram(create_bertram(tiny_bert_path, ngram_vocab=vocab, mode="add", max_seq_length=32), root / "model")
    return {"store": root / "store" / "contexts.sqlite", "model": root / "model"}


def _write_rarified(directory: Path, label_override=None):
    from spacy_bertram.evaluation.rarify import RarifiedItem, Substitution, write_substitutions_jsonl

    items = []
    texts = [("the kumquat was good", "food", "kumquat", "synonym"), ("the dgo was big", "animal", "dgo", "misspelling"),
             ("the farmer ate a lemon", "food", "lemon", "synonym"), ("the fox was red", "animal", "fox", "synonym")]
    for i, (text, label, word, kind) in enumerate(texts):
        subs = [Substitution(1 if i < 2 else text.split().index(word), "x", word, kind, "NN", float(i))]
        items.append(RarifiedItem(str(i), label_override or label, text, text.replace(word, "[MASK]"), text, subs, 0.9, 0.1))
    write_substitutions_jsonl(directory / "test.jsonl", items)
    return items


def test_evaluate_systems_writes_metrics_plot_and_predictions(trained, bertram_assets, tmp_path):
    from spacy_bertram.evaluation.downstream import SYSTEMS, evaluate_systems
    from spacy_bertram.evaluation.pipelines import load_textcat

    _write_rarified(tmp_path / "rarified")
    # a further rarification seed's set, listed in rarify.json (a stale, unlisted one is ignored)
    _write_rarified(tmp_path / "rarified" / "seed-1")
    _write_rarified(tmp_path / "rarified" / "seed-9")
    (tmp_path / "rarified" / "rarify.json").write_text(json.dumps({"seeds": [0, 1], "seed_sets": ["seed-1"]}))
    (tmp_path / "metrics" / "seed-9").mkdir(parents=True)
    metrics = evaluate_systems(trained["model"], tmp_path / "rarified", tmp_path / "metrics",
                               bertram_path=bertram_assets["model"], context_store=bertram_assets["store"],
                               threshold=100, contexts_per_word=4, progress=False, n_resamples=200)
    assert metrics["seed_sets"] == ["seed-1"]
    assert not (tmp_path / "metrics" / "seed-9").exists()
    seed_metrics = json.loads((tmp_path / "metrics" / "seed-1" / "metrics.json").read_text())
    assert seed_metrics["accuracy"] == metrics["accuracy"]  # the same texts here, so the same predictions
    paired = metrics["vs_baseline"]
    assert paired["baseline"]["n"] == 4 and "accuracy_diff" not in paired["baseline"]
    assert paired["bertram_slash"]["accuracy_diff"]["low"] <= paired["bertram_slash"]["accuracy_diff"]["high"]
    assert paired["bertram_slash"]["accuracy"] == metrics["accuracy"]["bertram_slash"]["All"]["accuracy"]
    assert metrics["systems"] == list(SYSTEMS)
    assert metrics["accuracy"]["baseline"]["All"]["n"] == 4
    assert metrics["accuracy"]["baseline"]["WN"]["n"] == 3 and metrics["accuracy"]["baseline"]["Msp"]["n"] == 1
    assert set(metrics["mcnemar_vs_baseline"]) == set(SYSTEMS) - {"baseline"}
    assert metrics["mean_injected_per_doc"]["baseline"] == 0
    assert metrics["mean_injected_per_doc"]["bertram_slash"] > 0
    assert metrics["substitute_coverage"]["bertram_slash"] > 0
    assert (tmp_path / "metrics" / "accuracy_by_frequency.png").stat().st_size > 1000
    rows = [json.loads(line) for line in open(tmp_path / "metrics" / "predictions.jsonl")]
    assert len(rows) == 4 and set(rows[0]) >= set(SYSTEMS)
    for row in rows:
        assert set(row["p_gold"]) == set(SYSTEMS) and all(0 < p < 1 for p in row["p_gold"].values())
        assert row["correct"] == {s: row[s] == row["label"] for s in SYSTEMS}
    assert metrics["vs_baseline"]["baseline"]["mean_log_prob"] == pytest.approx(
        np.mean([np.log(row["p_gold"]["baseline"]) for row in rows]))
    # the injection architecture with "none" predicts exactly as the stock pipeline
    stock = spacy.load(trained["model"])
    texts = [json.loads(line)["text"] for line in open(tmp_path / "rarified" / "test.jsonl")]
    ours = load_textcat(trained["model"], injection="none")
    for a, b in zip(stock.pipe(texts), ours.pipe(texts)):
        assert a.cats == b.cats


def test_evaluate_rejects_labels_the_model_never_saw(trained, tmp_path):
    from spacy_bertram.evaluation.downstream import evaluate_systems

    _write_rarified(tmp_path / "rarified", label_override="space")
    with pytest.raises(UnknownLabelError, match="never saw"):
        evaluate_systems(trained["model"], tmp_path / "rarified", tmp_path / "m", systems=["baseline"])
    with pytest.raises(ValueError, match="need a trained BERTRAM"):
        evaluate_systems(trained["model"], tmp_path / "rarified", tmp_path / "m", systems=["bertram_slash"])
    with pytest.raises(ValueError, match="rarify step"):
        evaluate_systems(trained["model"], tmp_path / "nothing", tmp_path / "m", systems=["baseline"])


def test_assembled_pipeline_loads_and_injects(trained, bertram_assets, tmp_path):
    from spacy_bertram.evaluation.pipelines import assemble_pipeline

    out = assemble_pipeline(trained["model"], bertram_assets["model"], tmp_path / "asm")
    nlp = spacy.load(out / "pipeline")
    assert nlp.pipe_names == ["bertram", "transformer", "textcat"]
    assert nlp.config["components"]["transformer"]["model"]["injection"] == "slash"
    assert "spacy-bertram>=0.1.0" in nlp.meta["requirements"]
    doc = nlp("the farmer sold a kumquat")
    assert set(doc.cats) == {"animal", "food"}
    assert "import spacy_bertram.pipeline.component" in (out / "code.py").read_text()


def test_report_shows_the_table_and_missing_datasets(trained, bertram_assets, tmp_path):
    from spacy_bertram.evaluation.downstream import evaluate_systems
    from spacy_bertram.evaluation.report import write_report

    root = tmp_path / "run"
    _write_rarified(root / "corpus" / "tiny" / "rarified")
    evaluate_systems(trained["model"], root / "corpus" / "tiny" / "rarified", root / "metrics" / "tiny",
                     bertram_path=bertram_assets["model"], context_store=bertram_assets["store"],
                     systems=["baseline", "bertram_slash"], progress=False)
    path = write_report(root / "metrics" / "report.md", ["tiny", "other"], corpus_dir=root / "corpus",
                        training_dir=root / "training", metrics_dir=root / "metrics")
    text = path.read_text()
    assert "| +BERTRAM (slash) |" in text and "All (n=4)" in text
    assert "Not run: other" in text
    assert "![accuracy by frequency](tiny/accuracy_by_frequency.png)" in text
    with pytest.raises(ValueError, match="has been evaluated"):
        write_report(tmp_path / "r.md", ["other"], metrics_dir=root / "metrics")
    warnings.simplefilter("default")


def test_report_layout_of_a_threshold_variant_shares_splits_and_baseline():
    from spacy_bertram.evaluation.report import DatasetDirs

    plain, high = DatasetDirs.layout("bbc"), DatasetDirs.layout("bbc-1000")
    assert high.splits == plain.splits and high.baseline == plain.baseline
    assert high.rarified == Path("corpus") / "bbc" / "rarified-1000"
    assert high.metrics == Path("metrics") / "bbc-1000"
    assert DatasetDirs.layout("rotten_tomatoes").rarified == Path("corpus") / "rotten_tomatoes" / "rarified"


def test_report_similarity_section_lists_both_systems(tmp_path):
    from spacy_bertram.evaluation.report import similarity_metrics, similarity_section

    assert similarity_section(similarity_metrics(tmp_path / "none")) == []
    (tmp_path / "wordsim").mkdir()
    result = {"bertram": {"spearman": 0.25}, "subword_mean": {"spearman": 0.125}, "n": 40}
    (tmp_path / "wordsim" / "simlex999.json").write_text(json.dumps({"results": {"all": result, "multi_piece": {"n": 1}}}))
    lines = similarity_section(similarity_metrics(tmp_path / "wordsim"))
    assert "| simlex999 | all pairs | 40 | 0.125 | 0.250 |" in lines
    assert not any("2+ wordpieces" in line for line in lines)
