"""encoder.py: how a word splits into the encoder's wordpieces (the one rule), and the BPE test."""
from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from spacy_bertram.encoder import is_bpe_tokenizer, text_ids, word_piece_ids

WORDS = ["kumquat", "Kumquats", "the", "quokka-like", "naïve", "Ærøskøbing", "don't", "x", "",
         "\U0001F34A", "supercalifragilisticexpialidocious" * 3, "  spaced ", "\u6c34\u679c", "42nd"]


@pytest.mark.parametrize("kind", ["minilm", "tiny_roberta"])
def test_the_fast_path_gives_the_wrappers_ids(request, kind):
    tokenizer = AutoTokenizer.from_pretrained(request.getfixturevalue(f"{kind}_path"))
    prefix = " " if is_bpe_tokenizer(tokenizer) else ""
    for word in WORDS:
        wrapped = list(tokenizer(prefix + word, add_special_tokens=False)["input_ids"])[:32]
        assert word_piece_ids(tokenizer, word) == wrapped, word
        context = f"The farmer's {word}, sold at the market... [MASK] twice!"
        assert text_ids(tokenizer, context) == list(tokenizer(context, add_special_tokens=False)["input_ids"])
    assert is_bpe_tokenizer(tokenizer) == (kind == "tiny_roberta")


def test_a_tokenizer_set_to_pad_or_truncate_goes_through_the_wrapper(minilm_path):
    """The Rust tokenizer keeps padding/truncation a caller set on it; the wrapper resets them per call."""
    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    expected = word_piece_ids(tokenizer, "kumquat")
    tokenizer.backend_tokenizer.enable_padding(length=16)
    tokenizer.backend_tokenizer.enable_truncation(max_length=2)
    assert word_piece_ids(tokenizer, "kumquat") == expected and len(expected) > 2
