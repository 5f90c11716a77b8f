"""The registered Thinc layer: predict, update, and exact serialisation round trips."""

import numpy
import pytest
import torch
from spacy.util import registry
from thinc.api import Adam

import spacy_bertram  # noqa: F401  (registers the architecture)
from spacy_bertram import get_bertram_network, save_bertram, set_bertram_network
from spacy_bertram.model.inputs import NgramVocab
from spacy_bertram.model.layers import Weights, bertram_shim
from spacy_bertram.model.storage import create_bertram, model_fingerprint

X = [("kumquat", ["the farmer sold a kumquat", "a kumquat is small"]), ("tasty", ["tasty fruit"]), ("sea", [])]


def build(path, **settings):
    return registry.architectures.get("spacy-bertram.Bertram.v1")(base_model=path, **settings)


def randomize(model, seed):
    torch.manual_seed(seed)
    network = get_bertram_network(model)
    with torch.no_grad():
        for param in network.bertram_state_dict().values():
            param.add_(0.1 * torch.randn_like(param))


def test_layer_is_registered_and_predicts_one_row_per_word(tiny_bert_path):
    model = build(tiny_bert_path)
    Y = model.predict(X)
    assert Y.shape == (3, 32) and Y.dtype == numpy.float32
    assert model.get_dim("nO") == 32
    assert model.predict([]).shape == (0, 32)


@pytest.mark.parametrize("via", ["bytes", "disk"])
def test_layer_round_trips_exactly(tiny_bert_path, tmp_path, via):
    model = build(tiny_bert_path, mode="shallow")
    randomize(model, 3)
    expected = model.predict(X)
    other = build(tiny_bert_path, mode="shallow")
    if via == "bytes":
        other.from_bytes(model.to_bytes())
    else:
        model.to_disk(tmp_path / "layer")
        other.from_disk(tmp_path / "layer")
    assert numpy.array_equal(other.predict(X), expected)


def test_from_bytes_rebuilds_a_network_with_another_ngram_vocab(tiny_bert_path):
    trained = create_bertram(tiny_bert_path, ngram_vocab=NgramVocab.from_words(["kumquat"], min_count=1))
    source = build(tiny_bert_path)
    set_bertram_network(source, trained)
    randomize(source, 4)
    target = build(tiny_bert_path)  # empty n-gram vocab: different table size
    target.from_bytes(source.to_bytes())
    assert len(get_bertram_network(target).ngram_vocab) == len(trained.ngram_vocab)
    assert numpy.array_equal(target.predict(X), source.predict(X))


def test_model_path_loads_a_trained_directory_at_init(tiny_bert_path, tmp_path):
    model = build(tiny_bert_path, mode="replace")
    randomize(model, 5)
    save_bertram(get_bertram_network(model), tmp_path / "m")
    architecture = registry.architectures.get("spacy-bertram.Bertram.v1")
    loaded = architecture(model_path=str(tmp_path / "m"))  # every network setting from the directory
    assert bertram_shim(loaded).pending and bertram_shim(loaded).weights is None and not loaded.has_dim("nO")
    with pytest.raises(ValueError, match=r"\[E037\].*has not loaded its model_path .*m'.*initialize"):
        loaded.predict(X)
    loaded.initialize()
    weights = bertram_shim(loaded).weights
    assert not bertram_shim(loaded).pending and weights.source == str(tmp_path / "m")
    assert weights.model_id == model_fingerprint(tmp_path / "m") and weights.trained
    assert numpy.array_equal(loaded.predict(X), model.predict(X)) and loaded.get_dim("nO") == 32
    network = get_bertram_network(loaded)
    loaded.initialize()  # once loaded, init keeps the network
    assert get_bertram_network(loaded) is network
    assert build(tiny_bert_path, mode="replace", model_path=str(tmp_path / "m")).initialize().predict(X).shape == (
        3,
        32,
    )
    # A setting that contradicts the trained model is an error at init, not silently replaced.
    with pytest.raises(ValueError, match=r"\[E036\].*sets base_model = 'another-encoder'.*has base_model"):
        build("another-encoder", model_path=str(tmp_path / "m")).initialize()
    with pytest.raises(ValueError, match=r"\[E036\].*sets mode = 'add'.*has mode = 'replace'"):
        build(tiny_bert_path, mode="add", model_path=str(tmp_path / "m")).initialize()


def test_a_missing_model_path_fails_at_init_not_construction(tiny_bert_path, tmp_path, monkeypatch):
    from spacy_bertram.model import storage

    monkeypatch.setattr(storage, "load_encoder", lambda name: pytest.fail("no encoder before init"))
    layer = build(tiny_bert_path, model_path=str(tmp_path / "nowhere"))  # the deferral: nothing is read
    monkeypatch.undo()
    with pytest.raises(
        ValueError,
        match=r"\[E034\] Cannot load the BERTRAM model at "
        r".*nowhere.*model_path.*not a directory",
    ):
        layer.initialize()
    with pytest.raises(ValueError, match=r"\[E033\].*has not loaded its model_path.*nowhere.*before saving"):
        layer.to_bytes()


def test_saved_weights_are_not_replaced_by_model_path_at_init(tiny_bert_path, tmp_path):
    source = build(tiny_bert_path, mode="shallow")
    randomize(source, 6)
    target = build(tiny_bert_path, model_path=str(tmp_path / "nowhere"))  # deferred: no network yet
    target.from_bytes(source.to_bytes())
    target.initialize()  # the weights came from bytes: init does not read model_path
    assert not bertram_shim(target).pending and bertram_shim(target).weights.source is None
    assert numpy.array_equal(target.predict(X), source.predict(X))


def test_settings_that_contradict_serialized_weights_are_refused(tiny_bert_path):
    source = build(tiny_bert_path, mode="shallow", max_contexts=4)
    with pytest.raises(ValueError, match=r"\[E036\].*sets max_contexts = 5.*has max_contexts = 4"):
        build(tiny_bert_path, mode="shallow", max_contexts=5).from_bytes(source.to_bytes())
    build(tiny_bert_path).from_bytes(source.to_bytes())  # unset: taken from the weights


@pytest.mark.parametrize("budget", [0, -5])
def test_a_token_budget_below_one_is_refused(tiny_bert_path, budget):
    with pytest.raises(
        ValueError,
        match=rf"\[E024\] \[components.bertram.model\] token_budget must be a number of encoder tokens per "
        rf"call.*got {budget}",
    ):
        build(tiny_bert_path, token_budget=budget)


def test_the_configured_token_budget_survives_loading_saved_bytes(tiny_bert_path):
    small = build(tiny_bert_path, token_budget=64)
    large = build(tiny_bert_path, token_budget=8192)
    large.from_bytes(small.to_bytes())
    assert bertram_shim(large).token_budget == 8192


def test_update_changes_bertram_weights_but_not_the_encoder(tiny_bert_path):
    model = build(tiny_bert_path, mode="add")
    network = get_bertram_network(model)
    encoder_before = {k: v.clone() for k, v in network.encoder.state_dict().items()}
    bertram_before = {k: v.clone() for k, v in network.bertram_state_dict().items()}
    Y, backprop = model.begin_update(X)
    backprop(numpy.ones_like(Y))
    model.finish_update(Adam(0.01))
    after = network.bertram_state_dict()
    assert any(not torch.equal(bertram_before[k], after[k]) for k in after)
    assert all(torch.equal(v, network.encoder.state_dict()[k]) for k, v in encoder_before.items())


def test_int8_encoder_is_the_layers_own_setting_and_survives_a_save(tiny_bert_path, tmp_path):
    import spacy

    from .util import make_bertram_dir, make_nlp

    model_dir = make_bertram_dir(tmp_path / "model", tiny_bert_path)
    nlp = make_nlp(
        model_dir, tiny_bert_path, model={"base_model": tiny_bert_path, "model_path": model_dir, "int8_encoder": True}
    )
    assert get_bertram_network(nlp.get_pipe("bertram").model).int8_encoder is True
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert get_bertram_network(loaded.get_pipe("bertram").model).int8_encoder is True
    plain = make_nlp(model_dir, tiny_bert_path)
    assert get_bertram_network(plain.get_pipe("bertram").model).int8_encoder is False


# -- the layer's state: the weights record and the counts that come with it -------------------------------


def test_the_counts_load_with_the_weights_and_a_new_network_is_a_new_record(tiny_bert_path, tmp_path):
    save_bertram(get_bertram_network(build(tiny_bert_path)), tmp_path / "m", counts={"kumquat": 7})
    layer = registry.architectures.get("spacy-bertram.Bertram.v1")(model_path=str(tmp_path / "m"))
    shim = bertram_shim(layer)
    assert shim.counts is None  # nothing is read before init
    layer.initialize()
    assert shim.counts.count("kumquat") == 7 and shim.weights.trained
    assert get_bertram_network(layer).context_word_counts is shim.counts  # they weigh its context mean too
    before = shim.weights
    set_bertram_network(layer, get_bertram_network(layer))  # the same network, given again
    assert shim.weights is not before and shim.weights == Weights()  # a new record: the component prepares again
