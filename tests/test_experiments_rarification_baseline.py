"""bertram_experiments/rarification/baseline.py: augmentation, the frozen-embedding callback and the trained
baseline."""

from __future__ import annotations

import json

import pytest
import spacy

from bertram_experiments.rarification.baseline import augment_examples, augment_tokens
from bertram_experiments.rarification.baseline import baseline_config
from spacy_bertram.injection.frozen_embeddings import embedding_drift, embeddings_frozen, transformer_models

from tests.util import ANIMALS, CONFIG, FOOD


def test_augmentation_rates_with_seed():
    tokens = [f"w{i % 50}" for i in range(20000)] + [",", "."] * 100
    out = augment_tokens(tokens, 1)
    assert out == augment_tokens(tokens, 1) and out != augment_tokens(tokens, 2)
    assert tokens[-1] == "."  # input untouched
    # walk the output back onto the input words
    masked = duplicated = copies_masked = 0
    i = 0
    for tok in tokens:
        if tok in (",", "."):
            assert out[i] == tok
            i += 1
        elif i + 2 < len(out) and out[i + 1] == "/":
            duplicated += 1
            copies_masked += (out[i] == "[MASK]") + (out[i + 2] == "[MASK]")
            i += 3
        else:
            masked += out[i] == "[MASK]"
            i += 1
    assert i == len(out)
    n_words = 20000
    assert abs(masked / n_words - 0.05) < 0.01
    assert abs(duplicated / n_words - 0.10) < 0.015
    assert abs(copies_masked / (2 * duplicated) - 0.25) < 0.04
    examples = augment_examples([("a b c", "pos")], seed=0, copies=2, keep_original=True)
    assert [ex.label for ex in examples] == ["pos"] * 3 and examples[0].text == "a b c"


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
        examples.append(
            Example.from_dict(doc, {"cats": {"food": float(label == "food"), "animal": float(label != "food")}})
        )
    # what spacy train does: initialize runs [initialize.after_init]
    nlp.config["initialize"]["after_init"] = config["initialize"]["after_init"]
    optimizer = nlp.initialize(lambda: examples)
    return nlp, examples, optimizer


@pytest.mark.parametrize("freeze", [True, False])
def test_freeze_callback_keeps_embeddings_fixed_while_the_encoder_trains(tiny_bert_path, freeze):
    nlp, examples, optimizer = _tiny_pipeline(tiny_bert_path, freeze)
    assert embeddings_frozen(nlp) is freeze
    ((_, hf),) = transformer_models(nlp)
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


def test_baseline_config_sets_the_bertram_models_encoder_and_paths_must_exist(tiny_bert_path, tmp_path):
    from pathlib import Path

    from bertram_experiments.rarification.baseline import train_baseline

    ner = Path(CONFIG).parent / "ner_minilm_bertram.cfg"
    config = baseline_config(ner, base_model=tiny_bert_path, max_steps=10)
    assert config["components"]["bertram"]["model"]["base_model"] == tiny_bert_path
    assert config["components"]["transformer"]["model"]["name"]["name"] == tiny_bert_path
    (tmp_path / "x.spacy").write_bytes(b"")
    with pytest.raises(ValueError, match=r"\[E304\].*has no \[paths\] bertrm; known: .*'bertram'"):
        train_baseline(
            tmp_path / "x.spacy",
            tmp_path / "x.spacy",
            tmp_path / "out",
            base_config=ner,
            base_model=tiny_bert_path,
            paths={"bertrm": "x"},
        )
