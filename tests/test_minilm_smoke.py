"""Smoke test with the real embedded MiniLM (all-MiniLM-L6-v2)."""

import numpy

from spacy_bertram import create_bertram
from spacy_bertram.model.inputs import NgramVocab
from spacy_bertram.model.encoder import load_encoder


def test_minilm_vectors_for_real_words():
    vocab = NgramVocab.from_words(["kumquat", "kumquats", "clementine", "quince"], min_count=1)
    network = create_bertram("default", ngram_vocab=vocab, mode="add")
    items = [
        ("kumquat", ["The kumquat is a small citrus fruit.", "She peeled a kumquat and ate it whole."]),
        ("quince", ["Quince jelly is served with cheese."]),
        ("apple", []),
    ]
    out = network.infer(items)
    assert out.shape == (3, 384)
    assert numpy.isfinite(out).all()
    assert not numpy.allclose(out[0], out[1])
    encoder, tokenizer = load_encoder("default")
    assert encoder.config.hidden_size == 384 and len(tokenizer) == 30522
    # With no contexts the untrained form part is half the subword mean: the
    # vector for "apple" must be close in direction to apple's own embedding row.
    row = encoder.get_input_embeddings().weight[tokenizer.convert_tokens_to_ids("apple")].numpy()
    cos = out[2] @ row / (numpy.linalg.norm(out[2]) * numpy.linalg.norm(row))
    assert cos > 0.9
