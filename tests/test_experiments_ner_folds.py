"""Folds by text: seeded, balanced, every text tested once, dev held out of train, written once."""

from __future__ import annotations

import json

import pytest
import spacy
from spacy.tokens import DocBin

from bertram_experiments.ner.folds import assign_folds, fold_parts, read_folds, write_folds


def test_folds_are_seeded_and_balanced():
    folds = assign_folds(11, 3, seed=5)
    assert folds == assign_folds(11, 3, seed=5) and folds != assign_folds(11, 3, seed=6)
    assert sorted(folds.count(f) for f in range(3)) == [3, 4, 4]


def test_each_text_is_tested_once_and_dev_is_held_out():
    fold_of = assign_folds(40, 4, seed=0)
    tested = []
    for fold in range(4):
        parts = fold_parts(fold_of, fold, dev_share=0.25, seed=0)
        assert not set(parts["train"]) & set(parts["dev"]) and not set(parts["train"] + parts["dev"]) & set(
            parts["test"]
        )
        assert len(parts["train"]) + len(parts["dev"]) + len(parts["test"]) == 40 and len(parts["dev"]) == 8
        tested += parts["test"]
    assert sorted(tested) == list(range(40))


@pytest.mark.parametrize("n,k", [(10, 1), (2, 3)])
def test_impossible_fold_counts_are_refused(n, k):
    with pytest.raises(ValueError, match="fold"):
        assign_folds(n, k, 0)


def test_write_folds_writes_docbins_and_the_test_ids(tmp_path):
    nlp = spacy.blank("en")
    docs = [nlp(f"text number {i}") for i in range(9)]
    summary = write_folds(docs, tmp_path / "folds", k=3, seed=1, dev_share=0.2, source="toy")
    info = read_folds(tmp_path / "folds")
    assert info == json.loads(json.dumps(summary)) and info["texts"] == 9
    for fold, part in enumerate(info["parts"]):
        test = list(DocBin().from_disk(tmp_path / "folds" / f"fold-{fold}" / "test.spacy").get_docs(nlp.vocab))
        assert [d.text for d in test] == [f"text number {i}" for i in part["test_ids"]]
        train = DocBin().from_disk(tmp_path / "folds" / f"fold-{fold}" / "train.spacy")
        assert len(train) == part["train"] == 5
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp directory left
    with pytest.raises(ValueError, match=r"\[E411\].*run `python -m bertram_experiments ner-folds` first"):
        read_folds(tmp_path)
