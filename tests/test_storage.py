"""storage.py: creating, saving and loading a model directory; its files are checked field by field, errors naming file and key."""
from __future__ import annotations

import json
import shutil

import pytest

from spacy_bertram import NgramVocab, create_bertram, load_bertram, save_bertram


def test_missing_or_corrupt_model_directory(tmp_path, network):
    with pytest.raises(ValueError, match=r"\[E043\].*not a directory"):
        load_bertram(tmp_path / "nope")
    path = save_bertram(network, tmp_path / "m")
    (path / "weights.safetensors").write_bytes(b"garbage")
    with pytest.raises(ValueError, match=r"\[E046\] Corrupt BERTRAM weights"):
        load_bertram(path)
    (path / "ngrams.json").unlink()
    with pytest.raises(ValueError, match=r"\[E044\].*missing ngrams.json"):
        load_bertram(path)


def test_model_for_another_encoder_is_refused(tmp_path, network, tiny_roberta_path):
    path = save_bertram(network, tmp_path / "m")
    with pytest.raises(ValueError, match=r"\[E060\] This BERTRAM model was trained for an encoder with"):
        load_bertram(path, base_model=tiny_roberta_path)


def test_unknown_base_model_and_mode(tmp_path):
    with pytest.raises(ValueError, match=r"\[E003\] Could not load the base model"):
        create_bertram(str(tmp_path / "no-such-model"))
    with pytest.raises(ValueError, match=r"\[E050\] Unknown BERTRAM mode"):
        create_bertram("default", mode="concat")


@pytest.fixture(scope="module")
def model_dir(tiny_bert_path, tmp_path_factory):
    network = create_bertram(tiny_bert_path, NgramVocab.from_words(["kumquat", "garden"], min_count=1),
                             max_seq_length=32)
    return save_bertram(network, tmp_path_factory.mktemp("files") / "model")


def edited(model_dir, tmp_path, name, change):
    copy = tmp_path / "copy"
    shutil.copytree(model_dir, copy)
    path = copy / name
    data = json.loads(path.read_text(encoding="utf8"))
    path.write_text(json.dumps(change(data)), encoding="utf8")
    return copy


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("max_seq_length", "96", "[E058] 'max_seq_length' must be an integer, got str '96'"),
        ("use_subword_mean", "no", "[E058] 'use_subword_mean' must be true or false, got str 'no'"),
        ("max_word_pieces", 0, "[E053] max_word_pieces must be at least 1"),
        ("max_contexts", 2.5, "[E058] 'max_contexts' must be an integer"),
        ("ngram_dropout", "0.1", "[E058] 'ngram_dropout' must be a number"),
        ("base_model", 7, "[E058] 'base_model' must be a string"),
        ("format_version", "1", "[E028] 'format_version' must be an integer"),
    ],
)
def test_config_json_values_of_the_wrong_type_name_file_and_key(model_dir, tmp_path, key, value, message):
    bad = edited(model_dir, tmp_path, "config.json", lambda d: {**d, key: value})
    with pytest.raises(ValueError, match=r"\[E045\]") as err:
        load_bertram(bad)
    assert message in str(err.value) and str(bad / "config.json") in str(err.value)


@pytest.mark.parametrize(
    "content, message",
    [
        ("[]", "an n-gram vocabulary is a JSON object, got list"),
        ('{"max_n": 5}', "no 'min_n'"),
        ('{"min_n": "3", "max_n": 5}', "'min_n' must be an integer"),
        ('{"min_n": 3, "max_n": 5, "lowercase": "yes"}', "'lowercase' must be true or false"),
        ('{"min_n": 3, "max_n": 5, "ngrams": "abc"}', "'ngrams' must be a list of strings"),
        ('{"min_n": 3, "max_n": 5, "ngrams": [', "Expecting value"),
    ],
)
def test_bad_ngrams_json_names_the_file(model_dir, tmp_path, content, message):
    bad = tmp_path / "copy"
    shutil.copytree(model_dir, bad)
    (bad / "ngrams.json").write_text(content, encoding="utf8")
    with pytest.raises(ValueError, match=r"\[E045\]") as err:
        load_bertram(bad)
    assert message in str(err.value) and str(bad / "ngrams.json") in str(err.value)


def test_truncated_ngrams_json_inside_a_character_names_the_file(model_dir, tmp_path):
    bad = tmp_path / "copy"
    shutil.copytree(model_dir, bad)
    data = (bad / "ngrams.json").read_bytes()
    cut = data.index("\u2581".encode("utf8")) + 1  # half of a 3-byte character
    (bad / "ngrams.json").write_bytes(data[:cut])
    with pytest.raises(ValueError, match=r"\[E045\].*ngrams.json.*(utf-8|utf8|decode)"):
        load_bertram(bad)


def test_bad_weights_name_the_file(model_dir, tmp_path):
    bad = tmp_path / "copy"
    shutil.copytree(model_dir, bad)
    (bad / "weights.safetensors").write_bytes(b"\x00" * 10)
    with pytest.raises(ValueError, match=r"\[E046\] Corrupt BERTRAM weights file .*weights.safetensors"):
        load_bertram(bad)
