"""Bad input gives a vector or a clear ValueError naming the word, never a crash."""
import numpy
import pytest

from spacy_bertram import NgramVocab, create_bertram, load_bertram, save_bertram


@pytest.fixture(scope="module")
def network(tiny_bert_path):
    vocab = NgramVocab.from_words(["kumquat", "garden"], min_count=1)
    return create_bertram(tiny_bert_path, ngram_vocab=vocab, mode="add", max_seq_length=32)


@pytest.mark.parametrize("word", ["", "   ", "two words"])
def test_empty_blank_or_multiword_words_are_rejected_by_name(network, word):
    with pytest.raises(ValueError) as err:
        network.infer([(word, ["a context"])])
    assert repr(word) in str(err.value)


def test_non_string_word_is_rejected(network):
    with pytest.raises(ValueError, match="strings"):
        network.infer([(None, [])])


@pytest.mark.parametrize("word", ["!!!", "...", "\U0001F600", "\U0001F34A\U0001F34A", "\u6c34\u679c"])
def test_punctuation_emoji_and_unknown_script_words_get_vectors(network, word):
    out = network.infer([(word, [f"she ate a {word} today", "no match"])])
    assert out.shape == (1, network.width) and numpy.isfinite(out).all()


def test_zero_contexts_and_contexts_without_the_word(network):
    out = network.infer([("garden", []), ("garden", ["the sea", "the sky"])])
    assert numpy.allclose(out[0], out[1])


def test_ten_thousand_word_context(network):
    long_context = " ".join(["tree"] * 5000 + ["kumquat"] + ["sea"] * 4999)
    batch = network.prepare(["kumquat"], [[long_context]])
    assert len(batch.rows) == 1 and len(batch.rows[0]) <= 32
    out = network.infer([("kumquat", [long_context])])
    assert numpy.isfinite(out).all()


def test_word_whose_ngrams_are_all_unknown(network):
    assert set(network.ngram_vocab.encode("zzqqxxj")) == {1}
    out = network.infer([("zzqqxxj", ["a zzqqxxj here"])])
    assert numpy.isfinite(out).all() and numpy.abs(out).sum() > 0


def test_context_that_is_not_a_string(network):
    with pytest.raises(ValueError, match="kumquat"):
        network.infer([("kumquat", [123])])


def test_missing_or_corrupt_model_directory(tmp_path, network):
    with pytest.raises(ValueError, match="not a directory"):
        load_bertram(tmp_path / "nope")
    path = save_bertram(network, tmp_path / "m")
    (path / "weights.safetensors").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="Corrupt BERTRAM weights"):
        load_bertram(path)
    (path / "ngrams.json").unlink()
    with pytest.raises(ValueError, match="missing ngrams.json"):
        load_bertram(path)


def test_model_for_another_encoder_is_refused(tmp_path, network, tiny_roberta_path):
    path = save_bertram(network, tmp_path / "m")
    with pytest.raises(ValueError, match="trained for an encoder with"):
        load_bertram(path, base_model=tiny_roberta_path)


def test_unknown_base_model_and_mode(tmp_path):
    with pytest.raises(ValueError, match="Could not load the base model"):
        create_bertram(str(tmp_path / "no-such-model"))
    with pytest.raises(ValueError, match="Unknown BERTRAM mode"):
        create_bertram("default", mode="concat")


def test_a_string_where_the_list_of_contexts_belongs_is_refused(network):
    # Read as a list, the string would be one-character contexts and the form vector comes back.
    with pytest.raises(TypeError, match=r"item 0 \('kumquat'\).*list of strings.*string 'a sentence'"):
        network.infer([("kumquat", "a sentence")])
    with pytest.raises(TypeError, match=r"item 1 must be a \(word, \[contexts\]\) pair, got \('kumquat',\)"):
        network.infer([("kumquat", []), ("kumquat",)])
    with pytest.raises(TypeError, match="item 0 must be a"):
        network.infer(["kumquat"])


@pytest.mark.parametrize("budget", [-1, -100])
def test_a_token_budget_below_one_is_refused(network, budget):
    """(0 is not refused: `infer(token_budget=0)` takes the device's default budget.)"""
    with pytest.raises(ValueError, match=f"token_budget must be a positive number of tokens, got {budget}"):
        network.infer([("kumquat", ["a kumquat here"])], token_budget=budget)
