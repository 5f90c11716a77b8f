"""pipeline/checks.py: where `bertram` sits and which encoder the transformer runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import spacy


from tests.util import TEXT, bertram_config, make_nlp, transformer_config, write_tiny_bert


# -- 1. placement: a transformer must read the vectors ------------------------------------


def test_bertram_after_the_transformer_is_an_error(bertram_dir, tiny_bert_path):  # noqa: F811
    nlp = spacy.blank("en")
    nlp.add_pipe("transformer", config=transformer_config(tiny_bert_path))
    nlp.initialize()
    nlp.add_pipe("bertram", config=bertram_config(bertram_dir, tiny_bert_path))  # spaCy puts it last
    message = 'comes after \'transformer\'.*never used.*nlp.add_pipe\\("bertram", before="transformer"\\)'
    with pytest.raises(ValueError, match=message):
        nlp("The kumquat grows.")  # first use, without initialize
    with pytest.raises(ValueError, match=message):
        nlp.initialize()


def test_bertram_before_the_stock_transformer_is_an_error(bertram_dir, tiny_bert_path):  # noqa: F811
    stock = transformer_config(tiny_bert_path)
    stock["model"]["@architectures"] = "spacy-transformers.TransformerModel.v3"
    del stock["model"]["injection"]
    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config=bertram_config(bertram_dir, tiny_bert_path))
    nlp.add_pipe("transformer", config=stock)
    with pytest.raises(
        ValueError,
        match=r"\[E138\] 'transformer' runs spacy-transformers' stock TransformerModel"
        r'.*@architectures = "spacy-bertram.TransformerModel.v1"',
    ):
        nlp.initialize()


def test_placements_that_use_the_vectors_or_opt_out_are_fine(bertram_dir, tiny_bert_path):  # noqa: F811
    assert make_nlp(bertram_dir, tiny_bert_path)(TEXT)._.bertram  # no transformer: the vectors are the product
    assert make_nlp(bertram_dir, tiny_bert_path, transformer=tiny_bert_path)(TEXT)._.bertram
    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config=bertram_config(bertram_dir, tiny_bert_path))
    nlp.add_pipe("transformer", config=transformer_config(tiny_bert_path, injection="none"))  # on purpose
    nlp.initialize()
    assert nlp(TEXT)._.bertram


def test_bertram_for_another_width_than_its_base_encoder(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    other = tmp_path / "other"
    shutil.copytree(bertram_dir, other)
    config = json.loads((other / "config.json").read_text(encoding="utf8"))
    config["encoder_embedding_width"] = 768
    (other / "config.json").write_text(json.dumps(config), encoding="utf8")
    with pytest.raises(ValueError, match=r"\[E034\].*config.json' does not match its digest"):
        make_nlp(str(other), tiny_bert_path)
    (other / "digests.json").unlink()  # without digests, the widths recorded with the weights refuse it
    with pytest.warns(UserWarning, match="no digests.json"):
        with pytest.raises(
            ValueError,
            match=r"\[E034\].*sets encoder_embedding_width = 768.*saved with "
            r"encoder_embedding_width = 32",
        ):
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
