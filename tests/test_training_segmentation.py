"""training/segmentation.py: rare-like segmentation equals the tokenizer without the word's entry."""

from __future__ import annotations

import random

import pytest
from transformers import AutoTokenizer, BertTokenizerFast

from spacy_bertram.training.segmentation import RareLikeSegmenter


@pytest.fixture(scope="module")
def minilm_tokenizer(minilm_path):
    return AutoTokenizer.from_pretrained(minilm_path)


def test_wordpiece_matches_minilm_tokenizer(minilm_tokenizer):
    segmenter = RareLikeSegmenter(minilm_tokenizer)
    vocab = [t for t in minilm_tokenizer.get_vocab() if t.isalpha()]
    sample = random.Random(0).sample(vocab, 1500) + ["Überwald", "naïve", "kumquats", "x" * 120, "東京"]
    for word in sample:
        for form in (word, word + "ness", word[::-1].capitalize()):
            expected = minilm_tokenizer(form, add_special_tokens=False)["input_ids"]
            assert segmenter.wordpieces(form, withhold=False) == expected, form


def test_rare_like_equals_tokenizer_without_the_entry(minilm_tokenizer, tmp_path):
    segmenter = RareLikeSegmenter(minilm_tokenizer)
    ordered = sorted(minilm_tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    for word in ["cat", "running", "the", "because", "Paris"]:
        entry = word.lower()
        vocab_dir = tmp_path / entry
        vocab_dir.mkdir()
        vocab = "\n".join("[withheld]" if t == entry else t for t, _ in ordered) + "\n"
        (vocab_dir / "vocab.txt").write_text(vocab, encoding="utf8")
        withheld = BertTokenizerFast.from_pretrained(str(vocab_dir), do_lower_case=True)  # transformers 4 and 5
        rare_like = segmenter.rare_like(word)
        assert len(segmenter.pieces(word)) == 1 and len(rare_like) > 1
        assert rare_like == withheld(word, add_special_tokens=False)["input_ids"]
    # a word that is several pieces already keeps its segmentation
    assert segmenter.rare_like("kumquats") == segmenter.pieces("kumquats")
