"""Bad input to a pipeline with `bertram`: clear errors or documented fallbacks, never a wrong vector."""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy
import pytest
import spacy
import torch

from conftest import TINY_WORDS, write_tiny_bert
from conftest import make_bertram_dir, make_nlp


@pytest.fixture(scope="module")
def nlp_trf(bertram_dir, tiny_bert_path):  # noqa: F811
    return make_nlp(bertram_dir, tiny_bert_path, transformer=tiny_bert_path)


def test_empty_and_whitespace_docs(nlp_trf):
    docs = list(nlp_trf.pipe(["", "   ", "\n\t ", "a kumquat", ""]))
    assert [d._.bertram for d in docs[:3]] == [{}, {}, {}] and list(docs[3]._.bertram) == [1]
    assert nlp_trf("")._.bertram == {} and nlp_trf(" ")._.bertram == {}


def test_a_5000_word_doc(nlp_trf):
    rng = random.Random(0)
    words = [rng.choice(TINY_WORDS[:40]) for _ in range(5000)]
    for position in range(0, 5000, 500):
        words[position] = "kumquat"
    words[4999] = "tarantula"
    doc = nlp_trf(" ".join(words))
    assert len(doc) == 5000 and doc._.trf_data is not None
    vectors = doc._.bertram
    assert sorted(vectors) == list(range(0, 5000, 500)) + [4999]
    assert all(vectors[i] is vectors[0] for i in range(0, 5000, 500))


def test_the_same_rare_word_50_times(nlp_trf, monkeypatch):
    pipe = nlp_trf.get_pipe("bertram")
    items: list = []
    infer = pipe.infer
    monkeypatch.setattr(pipe, "infer", lambda batch: items.extend(batch) or infer(batch))
    doc = nlp_trf(" ".join(["the quokka ate fruit ."] * 50))
    assert len(doc._.bertram) == 50 and len({id(v) for v in doc._.bertram.values()}) == 1
    assert len(items) == 1 and items[0][0] == "quokka" and len(items[0][1]) == pipe.contexts_per_word


def test_emoji_and_non_latin_words(nlp_trf, bertram_dir, minilm_path, tmp_path):  # noqa: F811
    text = "A kumquat 😀 in 東京 and привет , ok 🍊🍊"
    doc = nlp_trf(text)
    # The tiny encoder knows nothing of these scripts: no vector, stock [UNK] kept (documented).
    assert [doc[i].text for i in doc._.bertram] == ["kumquat"]
    model = make_bertram_dir(tmp_path / "m", "default")
    minilm = make_nlp(model, "default", transformer=minilm_path)
    doc = minilm(text)
    # The MiniLM has wordpieces for them: alphabetic non-Latin words get vectors, emoji never.
    assert {doc[i].text for i in doc._.bertram} == {"kumquat", "東京", "привет"}
    assert all(numpy.isfinite(v).all() for v in doc._.bertram.values())


def test_missing_or_corrupt_model_paths(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    with pytest.raises(ValueError, match="nowhere.*not a directory"):
        make_nlp(str(tmp_path / "nowhere"), tiny_bert_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="missing config.json"):
        make_nlp(str(tmp_path / "empty"), tiny_bert_path)
    broken = tmp_path / "broken"
    shutil.copytree(bertram_dir, broken)
    (broken / "weights.safetensors").write_bytes(b"\x00garbage")
    with pytest.raises(ValueError, match="Corrupt BERTRAM weights"):
        make_nlp(str(broken), tiny_bert_path)
    (broken / "config.json").write_text("{", encoding="utf8")
    with pytest.raises(ValueError, match="Corrupt BERTRAM config"):
        make_nlp(str(broken), tiny_bert_path)
    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config={"model": {"base_model": tiny_bert_path}})
    with pytest.raises(ValueError, match="no trained BERTRAM model"):
        nlp("a kumquat")


def test_corrupt_saved_pipeline(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    nlp = make_nlp(bertram_dir, tiny_bert_path, save_cache=True)
    nlp("a kumquat")
    for part in ("cache", "model"):
        nlp.to_disk(tmp_path / "p")
        (tmp_path / "p" / "bertram" / part).write_bytes(b"\x81\xa3bad\xa1x")
        with pytest.raises(ValueError, match=f"bertram/{part}' does not match .*bertram/cfg"):
            spacy.load(tmp_path / "p")
    # A cfg from before the digests: the part's own reader names what is wrong.
    nlp.to_disk(tmp_path / "p")
    cfg = json.loads((tmp_path / "p" / "bertram" / "cfg").read_text(encoding="utf8"))
    del cfg["parts"]
    (tmp_path / "p" / "bertram" / "cfg").write_text(json.dumps(cfg), encoding="utf8")
    (tmp_path / "p" / "bertram" / "cache").write_bytes(b"not msgpack at all")
    with pytest.raises(ValueError, match="bertram/cache'.*Corrupt BERTRAM vector cache"):
        spacy.load(tmp_path / "p")


def test_bertram_for_another_width_than_its_base_encoder(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    other = tmp_path / "other"
    shutil.copytree(bertram_dir, other)
    config = json.loads((other / "config.json").read_text(encoding="utf8"))
    config["encoder_embedding_width"] = 768
    (other / "config.json").write_text(json.dumps(config), encoding="utf8")
    with pytest.raises(ValueError, match="embedding width 768"):
        make_nlp(str(other), tiny_bert_path)


def _bert_with_more_words(source: str, target: Path) -> str:
    from transformers import AutoTokenizer, BertModel

    tokenizer = AutoTokenizer.from_pretrained(source)
    model = BertModel.from_pretrained(source)
    tokenizer.add_tokens(["kumquat", "quokka"])
    model.resize_token_embeddings(len(tokenizer))
    tokenizer.save_pretrained(str(target))
    model.save_pretrained(str(target))
    return str(target)


def test_transformer_with_another_encoder_is_refused(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    cases = {
        "width": (str(write_tiny_bert(tmp_path / "wide", hidden=48)), "vector width 32"),
        "vocab": (_bert_with_more_words(tiny_bert_path, tmp_path / "vocab"), "wordpiece vocabulary"),
        "weights": (str(write_tiny_bert(tmp_path / "seed", seed=7)), "not those of BERTRAM's encoder"),
    }
    for name, (encoder, message) in cases.items():
        nlp = make_nlp(bertram_dir, tiny_bert_path, transformer=encoder)
        with pytest.raises(ValueError, match=message):
            nlp("a kumquat")
    fine = make_nlp(bertram_dir, tiny_bert_path, transformer=tiny_bert_path)
    assert fine("a kumquat")._.bertram


def test_context_store_problems(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    with pytest.raises(ValueError, match="needs a context_store"):
        make_nlp(bertram_dir, tiny_bert_path, contexts="store")
    with pytest.raises(ValueError, match="contexts must be one of"):
        make_nlp(bertram_dir, tiny_bert_path, contexts="web")
    # A missing store fails at initialize, not at the first doc with a rare word.
    with pytest.raises(ValueError, match="cannot open the context store .*gone.sqlite.*not found"):
        make_nlp(bertram_dir, tiny_bert_path, contexts="both", context_store=str(tmp_path / "gone.sqlite"))


def test_non_finite_vectors_are_refused(bertram_dir, tiny_bert_path):  # noqa: F811
    nlp = make_nlp(bertram_dir, tiny_bert_path)
    network = nlp.get_pipe("bertram").network
    with torch.no_grad():
        network.projection.weight.fill_(float("nan"))
        network.form_gate.bias.fill_(float("nan"))
    with pytest.raises(ValueError, match="non-finite"):
        nlp("a kumquat")
