"""bertram_experiments/rarification/datasets.py: truncation, loading, fixed splits and augmented training splits."""

from __future__ import annotations

import json

import pytest
import spacy
from spacy.tokens import DocBin

from bertram_experiments.rarification.baseline import make_splits
from bertram_experiments.rarification.datasets import (
    DatasetError,
    load_dataset,
    split_records,
    stratified_sample,
    truncate_words,
)
from bertram_experiments.rarification.records import Record, UnknownLabelError

from tests.util import tiny_dataset


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
    with pytest.raises(DatasetError, match=r"\[E314\].*label"):
        load_dataset(str(path))
    with pytest.raises(DatasetError, match=r"\[E390\].*build_corpus"):
        load_dataset("bbc", assets=tmp_path)
    with pytest.raises(DatasetError, match=r"\[E312\] Unknown dataset"):
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


def test_make_splits_can_take_candidates_from_the_unused_training_texts(tmp_path):
    data = tiny_dataset(tmp_path / "d.jsonl", n=200)
    test_split = make_splits(str(data), tmp_path / "test", max_words=20, max_train=60, max_dev=10, seed=0)
    unused = make_splits(
        str(data), tmp_path / "unused", max_words=20, max_train=60, max_dev=10, seed=0, candidates_from="unused-train"
    )
    # the same train and dev, so the classifier trained on them is the same one
    for name in ("train.jsonl", "dev.jsonl", "train.spacy", "dev.spacy"):
        assert (tmp_path / "test" / name).read_bytes() == (tmp_path / "unused" / name).read_bytes()

    def ids(directory, name):
        return {json.loads(line)["id"] for line in open(tmp_path / directory / name)}

    candidates = ids("unused", "test_candidates.jsonl")
    # 160 training texts (every fifth of 200 is in the test split), 70 drawn: the other 90 are candidates
    assert test_split["test_candidates"] == 40 and unused["test_candidates"] == 90 == len(candidates)
    assert unused["candidates_from"] == "unused-train" and test_split["candidates_from"] == "test"
    assert not candidates & (ids("unused", "train.jsonl") | ids("unused", "dev.jsonl"))
    assert not candidates & ids("test", "test_candidates.jsonl")
    with pytest.raises(ValueError, match=r"\[E381\].*'test' or 'unused-train', not 'dev'"):
        make_splits(str(data), tmp_path / "bad", candidates_from="dev")
    assert not (tmp_path / "bad").exists()


def test_make_splits_rejects_a_test_label_never_seen_in_training(tmp_path):
    extra = [{"text": "the moon was big", "label": "space", "id": "odd", "split": "test"}]
    data = tiny_dataset(tmp_path / "d.jsonl", extra=extra)
    with pytest.raises(UnknownLabelError, match=r"\[E370\].*'space'.*never seen in training"):
        make_splits(str(data), tmp_path / "out")
