"""One-token approximation on the tiny encoder."""

from __future__ import annotations

import pytest
import torch

from spacy_bertram.model.encoder import load_encoder
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


def test_ota_chunks_on_workers_give_the_one_process_vectors(tiny_bert_path, dask_client):
    encoder, tokenizer = load_encoder(tiny_bert_path)
    words = ["kumquats", "unable", "grower", "marketplace", "orchards", "sweetness", "citrus", "harvested", "lemonade"]
    pieces = [tokenizer(w, add_special_tokens=False)["input_ids"] for w in words]
    settings = OTASettings(steps=3, batch_words=2, seed=5)  # five chunks, each with its own draws
    alone = one_token_approximation(encoder, tokenizer, pieces, settings, progress=False)
    spread = one_token_approximation(
        encoder, tokenizer, pieces, settings, progress=False, client=dask_client, base_model=tiny_bert_path
    )
    assert torch.allclose(alone.vectors, spread.vectors, atol=1e-5)
    assert spread.loss_after == pytest.approx(alone.loss_after, rel=1e-5) and alone.loss_after < alone.loss_before
    initial = torch.stack([encoder.get_input_embeddings().weight[p].mean(0) for p in pieces])
    assert (alone.vectors - initial).abs().max() > 1e-4  # OTA moved them: the comparison is not of starting points
