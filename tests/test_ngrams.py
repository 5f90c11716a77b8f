"""The character n-gram vocabulary: n-grams, min count, UNK/PAD, and its JSON round trip."""
from __future__ import annotations

import json

import pytest

from spacy_bertram.ngrams import BOUNDARY, PAD_ID, UNK_ID, NgramVocab, word_ngrams

B = BOUNDARY


def test_word_ngrams_are_3_to_5_grams_of_the_boundary_padded_word():
    assert word_ngrams("cat") == [f"{B}ca", "cat", f"at{B}", f"{B}cat", f"cat{B}", f"{B}cat{B}"]
    assert word_ngrams("a") == [f"{B}a{B}"]  # shorter than min_n: the whole padded word


def test_min_count_unk_and_pad():
    vocab = NgramVocab.from_words(["cat", "cats", "dog"], min_count=2)
    # only the n-grams that "cat" and "cats" share are kept, ordered by count then text
    # (the boundary symbol U+2581 sorts after ASCII letters)
    assert vocab.itos == ["<pad>", "<unk>", "cat", f"{B}ca", f"{B}cat"]
    assert vocab.encode("cat") == [3, 2, UNK_ID, 4, UNK_ID, UNK_ID]
    assert vocab.encode("dog") == [UNK_ID] * 6
    assert PAD_ID == 0 and vocab.stoi["<pad>"] == PAD_ID


def test_round_trip_through_json_on_disk(tmp_path):
    words = ["kumquat", "kumquats", "quatrain", "Quality", "squat"]
    vocab = NgramVocab.from_words(words, min_n=2, max_n=4, min_count=2, lowercase=True)
    vocab.to_disk(tmp_path / "ngrams.json")
    data = json.loads((tmp_path / "ngrams.json").read_text(encoding="utf8"))
    assert (data["min_n"], data["max_n"], data["min_count"], data["lowercase"]) == (2, 4, 2, True)
    loaded = NgramVocab.from_disk(tmp_path / "ngrams.json")
    assert loaded.itos == vocab.itos and loaded.stoi == vocab.stoi
    for word in words + ["QUAT", "unseen"]:
        assert loaded.encode(word) == vocab.encode(word)
    assert loaded.encode("QUAT") == vocab.encode("quat")  # lowercase survives the round trip


def test_another_boundary_symbol_is_refused():
    data = NgramVocab.from_words(["cat"], min_count=1).to_dict()
    data["boundary"] = "#"
    with pytest.raises(ValueError, match="boundary"):
        NgramVocab.from_dict(data)
