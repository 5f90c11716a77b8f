"""storage.py: creating, saving and loading a model directory; its files are checked field by field, errors
naming file and key."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy
import pytest
import torch
from safetensors.torch import load_file, save_file

from spacy_bertram import create_bertram, load_bertram, save_bertram
from spacy_bertram.model.inputs import NgramVocab
from spacy_bertram.model.storage import check_finite, model_fingerprint
from spacy_bertram.training.checkpoint import load_weights

ITEMS = [("kumquat", ["the farmer sold a kumquat at the market", "a sweet kumquat"]), ("lemons", [])]


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
    network = create_bertram(
        tiny_bert_path, NgramVocab.from_words(["kumquat", "garden"], min_count=1), max_seq_length=32
    )
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
        (
            "max_word_pieces",
            0,
            "[E052] max_word_pieces (the subword mean's wordpiece cap) must be a whole number from 1",
        ),
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


@pytest.mark.parametrize(
    "metadata, message",
    [
        (
            {"format": "spacy-bertram"},
            r"\[E069\] The BERTRAM weights file .*weights.safetensors' does not record.*\(save_bertram\)",
        ),
        ({"spacy-bertram": json.dumps({"mode": "add"})}, r"\[E046\] Corrupt BERTRAM weights file .*expected an"),
    ],
    ids=["no record", "a record without most fields"],
)
def test_weights_without_the_recorded_config_fields_are_refused_by_name(model_dir, tmp_path, metadata, message):
    """A weights file that does not record the config fields its weights depend on (`save_bertram` records them
    all) is refused, naming the file, even without digests.json: config.json could not be checked against it."""
    bad = tmp_path / "copy"
    shutil.copytree(model_dir, bad)
    path = bad / "weights.safetensors"
    save_file(load_file(str(path)), str(path), metadata=metadata)
    (bad / "digests.json").unlink()
    with pytest.warns(UserWarning, match="has no digests.json"):
        with pytest.raises(ValueError, match=message):
            load_bertram(bad)


def test_read_layer_outside_the_encoder_is_refused_by_name(tiny_bert_path, model_dir, tmp_path):
    """The tiny BERT has 2 layers, so 3 hidden states after the embeddings' output: -3..2."""
    with pytest.raises(
        ValueError,
        match=r"\[E068\] read_layer 99 \(the BERTRAM config\) is out of range: the base "
        r"model .* has 2 layers, so read_layer must be in -3\.\.2",
    ):
        create_bertram(tiny_bert_path, read_layer=99)
    with pytest.raises(ValueError, match=r"\[E068\] read_layer -4 "):
        create_bertram(tiny_bert_path, read_layer=-4)
    vectors = {}
    for layer in (-3, 2, -1):  # the ends of the range work; 2 is the last layer, as -1 is
        torch.manual_seed(0)
        vectors[layer] = create_bertram(tiny_bert_path, read_layer=layer, max_seq_length=32).infer(ITEMS)
    assert numpy.allclose(vectors[2], vectors[-1], atol=1e-6) and not numpy.allclose(vectors[-3], vectors[-1])
    bad = edited(model_dir, tmp_path, "config.json", lambda d: {**d, "read_layer": 99})
    (bad / "digests.json").unlink()  # else the digest refuses the edit first
    with pytest.warns(UserWarning, match="has no digests.json"):
        with pytest.raises(
            ValueError,
            match=r"\[E068\] read_layer 99 \(.*config.json'\) is out of range: .* has 2 "
            r"layers, so read_layer must be in -3\.\.2",
        ):
            load_bertram(bad)


def test_the_fingerprint_hashes_the_model_files_only(model_dir, tmp_path):
    """Cache identity: the same network saved again, with or without counts, keeps its fingerprint,
    which is the three model files' hash."""
    again = save_bertram(load_bertram(model_dir), tmp_path / "again", counts={"kumquat": 3})
    assert model_fingerprint(again) == model_fingerprint(model_dir)
    digest = hashlib.blake2b(digest_size=16)
    for name in ("config.json", "ngrams.json", "weights.safetensors"):
        digest.update((model_dir / name).read_bytes())
    assert model_fingerprint(model_dir) == digest.hexdigest()
    digests = json.loads((again / "digests.json").read_text(encoding="utf8"))["files"]
    assert digests == {
        name: hashlib.sha256((again / name).read_bytes()).hexdigest()
        for name in ("config.json", "ngrams.json", "weights.safetensors", "counts.tsv")
    }


def test_a_finished_stage_or_checkpoint_with_a_flipped_byte_is_not_resumed_from(model_dir, tmp_path):
    network = load_bertram(model_dir)
    stage = tmp_path / "stage"
    shutil.copytree(model_dir, stage)
    data = bytearray((stage / "weights.safetensors").read_bytes())
    data[-5] ^= 0x40  # one bit of one weight: still a valid file of finite numbers
    (stage / "weights.safetensors").write_bytes(bytes(data))
    with pytest.raises(
        ValueError,
        match=r"\[E201\] Corrupt weights .*stage'.*\[E061\] .*weights.safetensors' does "
        r"not match its digest",
    ):
        load_weights(network, stage)


def test_non_finite_weights_are_counted_and_a_sum_that_overflows_is_not_one():
    huge = torch.full((4,), 3e38)  # finite, but its float32 sum is not
    check_finite({"projection.weight": huge}, "here")
    bad = torch.tensor([1.0, float("nan"), float("inf"), float("-inf")])
    with pytest.raises(
        ValueError,
        match=r"\[E065\] BERTRAM weight 'w' in here holds 1 NaN and 2 infinite values "
        r"\(of 4\)",
    ):
        check_finite({"projection.weight": huge, "w": bad}, "here")


def test_a_saved_models_subword_share_changes_without_training_again(tiny_bert_path, tmp_path):
    """The output mix is inference-only: the recipe in docs/training.md gives the same weights and counts, and
    the vectors move by the mix formula, (1 - s) unit(v) + s unit(subword mean) at the subword mean's norm."""
    from dataclasses import replace

    from spacy_bertram.rarity.frequencies import CountTable

    torch.manual_seed(0)
    vocab = NgramVocab.from_words(["kumquat", "garden"], min_count=1)
    trained = create_bertram(tiny_bert_path, ngram_vocab=vocab, mode="inplace", max_seq_length=32, subword_share=0.5)
    save_bertram(trained, tmp_path / "model", counts={"kumquat": 3, "garden": 2})

    network = load_bertram(tmp_path / "model")
    network.config = replace(network.config, subword_share=0.0)
    save_bertram(network, tmp_path / "model-own", counts=CountTable.from_model_dir(tmp_path / "model").counts)

    own = load_bertram(tmp_path / "model-own")
    assert own.config.subword_share == 0.0
    for name in ("weights.safetensors", "ngrams.json", "counts.tsv"):
        assert (tmp_path / "model" / name).read_bytes() == (tmp_path / "model-own" / name).read_bytes()
    item = [ITEMS[0]]
    mixed, alone = load_bertram(tmp_path / "model").infer(item)[0], own.infer(item)[0]
    table = own.encoder.get_input_embeddings().weight.detach().numpy().astype(float)
    sub = table[own.inputs.tokenizer("kumquat", add_special_tokens=False)["input_ids"]].mean(axis=0)
    expected = numpy.linalg.norm(sub) * (0.5 * alone / numpy.linalg.norm(alone) + 0.5 * sub / numpy.linalg.norm(sub))
    assert numpy.allclose(mixed, expected, atol=1e-5) and not numpy.allclose(mixed, alone, atol=1e-3)


def test_save_bertram_never_deletes_or_replaces_a_file_it_did_not_write(network, tmp_path):
    """A directory holding a user's notes.txt and config.json is refused, naming config.json; force=True replaces
    the model's files only; a save over a model the package saved keeps the user's notes beside it."""
    userdir = tmp_path / "userdir"
    userdir.mkdir()
    (userdir / "notes.txt").write_text("mine")
    (userdir / "config.json").write_text('{"my": "settings"}')
    with pytest.raises(
        ValueError,
        match=r"\[E007\] save_bertram: .*userdir' holds config.json \(not written by "
        r"save_bertram, or changed since\), which save_bertram would .*force=True",
    ):
        save_bertram(network, userdir)
    assert sorted(p.name for p in userdir.iterdir()) == ["config.json", "notes.txt"]
    assert (userdir / "config.json").read_text() == '{"my": "settings"}' and not list(tmp_path.glob(".userdir*"))
    only_notes = tmp_path / "only-notes"
    only_notes.mkdir()
    (only_notes / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"\[E007\] save_bertram: .* holds nothing save_bertram wrote \(notes.txt\)"):
        save_bertram(network, only_notes)
    save_bertram(network, userdir, force=True)
    assert (userdir / "notes.txt").read_text() == "mine"  # forced: the model's files replaced, the rest kept
    assert load_bertram(userdir).config.to_dict() == network.config.to_dict()
    model = save_bertram(network, tmp_path / "model")
    (model / "README_mine.txt").write_text("how I trained it")
    save_bertram(network, model)  # its own save: replaced without force, the notes kept
    assert (model / "README_mine.txt").read_text() == "how I trained it"
    load_bertram(model)
    (model / "config.json").write_text(json.dumps({**network.config.to_dict(), "max_contexts": 3}))
    with pytest.raises(ValueError, match=r"holds config.json \(not written by save_bertram, or changed since\)"):
        save_bertram(network, model)  # edited after the save: the digests no longer vouch for it
