"""One-token approximation on the tiny encoder."""
from __future__ import annotations

import torch

from spacy_bertram.encoder import load_encoder
from spacy_bertram.training.ota import OTASettings, neighbour_ids, one_token_approximation


def test_ota_reduces_its_loss(tiny_bert_path):
    encoder, tokenizer = load_encoder(tiny_bert_path)
    words = ["kumquats", "unable", "grower", "sweetest", "lemony"]
    pieces = [tokenizer(w, add_special_tokens=False)["input_ids"] for w in words]
    assert all(len(p) > 1 for p in pieces)
    settings = OTASettings(steps=40, batch_words=3, neighbours=2, lr=1e-2, seed=1)

    result = one_token_approximation(encoder, tokenizer, pieces, settings, progress=False)
    assert result.vectors.shape == (len(words), encoder.config.hidden_size)
    # Right neighbours sit m-1 positions earlier next to one vector than next to m
    # pieces, a floor no vector removes (large in a random tiny BERT), so the gain is small.
    assert result.loss_after < result.loss_before - 1e-3
    table = encoder.get_input_embeddings().weight.detach()
    init = torch.stack([table[p].mean(0) for p in pieces])
    assert not torch.allclose(result.vectors, init)
    again = one_token_approximation(encoder, tokenizer, pieces, settings, progress=False)
    assert torch.equal(again.vectors, result.vectors)  # seeded


def test_ota_neighbours_are_whole_words(tiny_bert_path):
    _, tokenizer = load_encoder(tiny_bert_path)
    tokens = tokenizer.convert_ids_to_tokens(neighbour_ids(tokenizer).tolist())
    assert "cat" in tokens
    assert not any(t.startswith("##") or t.startswith("[") or not t.isalpha() for t in tokens)


def test_ota_of_nothing_is_empty(tiny_bert_path):
    encoder, tokenizer = load_encoder(tiny_bert_path)
    result = one_token_approximation(encoder, tokenizer, [], progress=False)
    assert result.vectors.shape == (0, encoder.config.hidden_size)


def test_ota_of_a_one_piece_word_starts_at_its_optimum(tiny_bert_path):
    encoder, tokenizer = load_encoder(tiny_bert_path)
    pieces = [tokenizer("cat", add_special_tokens=False)["input_ids"]]
    result = one_token_approximation(encoder, tokenizer, pieces, OTASettings(steps=2), progress=False)
    assert result.loss_before < 1e-10
