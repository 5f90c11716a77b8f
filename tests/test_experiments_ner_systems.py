"""The systems' training and loading refuse missing inputs with the fix named."""

from __future__ import annotations

from pathlib import Path

import pytest
import spacy

from bertram_experiments.ner.folds import write_folds
from bertram_experiments.ner.systems import NerTraining, load_systems, model_dir, train_folds


def test_model_dir_layout():
    assert model_dir("training/ner", 2, "bertram") == Path("training/ner/fold-2/bertram/model-best")


def test_training_needs_the_bertram_model_and_the_store(tmp_path):
    with pytest.raises(ValueError, match=r"\[E413\] No trained BERTRAM model at .*run train-bertram"):
        train_folds(tmp_path, tmp_path / "out", tmp_path / "missing", None, NerTraining())
    with pytest.raises(ValueError, match='\\[E414\\] No context store at .*contexts = "doc"'):
        train_folds(tmp_path, tmp_path / "out", tmp_path, tmp_path / "none.sqlite", NerTraining())


def test_loading_needs_the_trained_folds(tmp_path):
    nlp = spacy.blank("en")
    write_folds([nlp(f"text {i}") for i in range(4)], tmp_path / "folds", k=2)
    with pytest.raises(ValueError, match=r"\[E415\] No trained stock NER .*ner-train"):
        load_systems(tmp_path / "train", 0)


def test_a_bertram_run_depends_on_the_model_and_the_default_rule(tmp_path, bertram_assets):
    from bertram_experiments.ner.systems import run_settings

    nlp = spacy.blank("en")
    write_folds([nlp(f"text {i}") for i in range(4)], tmp_path / "folds", k=2)
    config = str(Path(__file__).parent.parent / "configs" / "ner_minilm_bertram.cfg")
    wanted = run_settings(NerTraining(), config, {"bertram": str(bertram_assets["model"])}, tmp_path / "folds", 0)
    assert len(wanted["bertram"]["model"]) == 32 and "RareWordRule(" in wanted["bertram"]["default_rare_word_rule"]
    assert "bertram" not in run_settings(NerTraining(), config, {}, tmp_path / "folds", 0)
