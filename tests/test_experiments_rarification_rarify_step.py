"""bertram_experiments/rarification/rarify_step.py: the count table, masking in chunks, one set per seed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bertram_experiments.rarification.rarify_step import load_count_table
from bertram_experiments.rarification.records import Record
from spacy_bertram.rarity.frequencies import CountTable


def test_count_table_rarification_rule_counts_and_wordfreq_fallback(tmp_path: Path):
    from wordfreq import zipf_frequency

    freq = CountTable({"kumquat": 3, "the": 500}, total=1_000_000, unseen="en")
    assert freq.estimated_count("kumquat") == 3.0 and freq.estimated_count("Kumquat") == 3.0
    z = zipf_frequency("house", "en")
    assert freq.estimated_count("house") == pytest.approx(10 ** (z - 9) * 1_000_000)
    assert freq.estimated_count("xqzvbtt") == 0.0 and freq.is_rare_count("xqzvbtt", 100)
    assert not freq.is_rare_count("the", 500) and freq.is_rare_count("the", 501)
    assert freq.is_known("The") and freq.is_known("house") and not freq.is_known("xqzvbtt")
    assert CountTable({"a": 10, "b": 30}, unseen="en").total == 40
    assert CountTable.wordfreq_estimates().total == 10**9 and len(CountTable.wordfreq_estimates()) == 0
    assert CountTable({"a": 1}).estimated_count("house") == 0.0  # no `unseen`: no estimate
    # the two rules' casing: rarification takes the form as written when listed, the pipeline the higher count
    cased = CountTable({"Apple": 5, "apple": 500}, unseen="en")
    assert cased.estimated_count("Apple") == 5.0 and cased.count("Apple") == 500
    assert cased.estimated_count("APPLE") == 500.0 and cased.is_rare_count("Apple", 100)
    with pytest.raises(ValueError, match=r"\[E008\].*at least one word"):
        CountTable({})
    (tmp_path / "counts.tsv").write_text("the\t7\nKumquat\t2\n", encoding="utf8")
    table = load_count_table(tmp_path)  # prepare's directory, with wordfreq for unlisted words
    assert table.estimated_count("Kumquat") == 2.0 and table.total == 9 and table.estimated_count("house") > 0
    with pytest.raises(ValueError, match=r"\[E366\] No word counts at .*nowhere.*run the prepare step"):
        load_count_table(tmp_path / "nowhere")


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
    from bertram_experiments.rarification.masking import substitute_masked
    from bertram_experiments.rarification.rarify_step import mask_in_chunks
    from bertram_experiments.rarification.rarify import spacy_tagger
    from spacy_bertram.rarity.frequencies import CountTable
    from bertram_experiments.rarification.substitution import SubstitutionDictionary
    from spacy_bertram.dictionary.wordnet import wordnet_available

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
    subs = SubstitutionDictionary(CountTable.wordfreq_estimates(1_000_000), max_zipf=5.0)
    tagger = spacy_tagger()
    masking = mask_in_chunks(
        candidates, classify, labels, subs, tagger, tmp_path / "partial", chunk_size=2, progress=False
    )
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

    again = substitute_masked(
        mask_in_chunks(candidates, broken, labels, subs, tagger, tmp_path / "partial", chunk_size=2, progress=False),
        subs,
    )
    assert [it.to_dict() for it in again.items] == [it.to_dict() for it in result.items]
    assert again.summary() == result.summary()


@pytest.fixture(scope="module")
def minilm_tokenizer(minilm_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_path)


def test_rarify_seeds_share_the_masking_chunks_and_write_one_set_each(tmp_path, monkeypatch, minilm_tokenizer):
    from bertram_experiments.rarification import rarify_step
    from bertram_experiments.rarification.rarify_step import run_rarification
    from spacy_bertram.dictionary.wordnet import wordnet_available

    if not wordnet_available():
        pytest.skip("WordNet 3.0 is not installed")
    labels = ["vehicle", "other"]
    calls = []

    def classifier(nlp, batch_size=64):
        def classify(texts):
            calls.append(len(texts))
            return _toy_classifier(labels)(texts)

        return classify

    monkeypatch.setattr(rarify_step, "load_textcat", lambda model_dir, injection="none": None)
    monkeypatch.setattr(rarify_step, "textcat_labels", lambda nlp: labels)
    monkeypatch.setattr(rarify_step, "pipeline_tokenizer", lambda nlp: minilm_tokenizer)
    monkeypatch.setattr(rarify_step, "make_classifier", classifier)
    splits, model = tmp_path / "splits", tmp_path / "model"
    model.mkdir()
    (model / "weights").write_text("w")
    rows = [
        Record("The car was parked near the old house.", "vehicle", "a"),
        Record("She bought a new car yesterday.", "vehicle", "b"),
        Record("People walked along the road.", "other", "c"),
    ]
    splits.mkdir()
    for name in ("train", "dev", "test_candidates"):
        (splits / f"{name}.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in rows))
    counts = tmp_path / "counts.tsv"
    counts.write_text("the\t1000\n", encoding="utf8")
    out = tmp_path / "rarified"
    summary = run_rarification(model, splits, out, counts, seed="0,1,2", max_zipf=3.0, progress=False)
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
    summary = run_rarification(model, splits, out, counts, seed="0,3", max_zipf=3.0, progress=False)
    assert len(calls) == n_calls and summary["seed_sets"] == ["seed-3"]
    assert sorted(p.name for p in out.glob("seed-*")) == ["seed-3"]
    assert [json.loads(line) for line in open(out / "test.jsonl")] == first
    with pytest.raises(ValueError, match=r"\[E374\] Repeated seeds"):
        run_rarification(model, splits, out, counts, seed="1,1", max_zipf=3.0, progress=False)
