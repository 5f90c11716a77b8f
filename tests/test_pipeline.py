"""pipeline/ as a whole: a saved `bertram` names the model its weights are, so a loaded pipeline never reads
model_path again unless asked (`initialize(reload_model=True)`), whatever now lies there; a save loads nothing."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
import spacy
import torch
from spacy.lang.en import English

import spacy_bertram.pipeline.component  # noqa: F401  (registers the factory until the entry point is installed)
from spacy_bertram import create_bertram, save_bertram
from spacy_bertram.model.inputs import NgramVocab
from spacy_bertram.model.storage import model_fingerprint

from tests.util import EXTRA_WORDS, TEXT, TINY_WORDS, make_bertram_dir, make_nlp, same_vectors


def another_model(path: Path, base_model: str) -> str:
    """A model whose vectors differ from make_bertram_dir's (untrained `inplace` networks of any seed agree)."""
    torch.manual_seed(8)
    ngrams = NgramVocab.from_words(TINY_WORDS + EXTRA_WORDS, min_count=1)
    return str(save_bertram(create_bertram(base_model, ngrams, mode="add", max_seq_length=32, max_contexts=8), path))


def uninitialized(model_path: str) -> spacy.Language:
    """The repro: `bertram` added with a model_path and saved as it is, never initialized."""
    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config={"model": {"model_path": model_path}})
    return nlp


def test_a_save_before_initialize_loads_nothing_and_says_so(tiny_bert_path, tmp_path):
    """A save writes what the component holds and loads nothing: before initialize that is no weights. It says
    so (W014); the loaded pipeline is pending as the saved one was, reading model_path when used (the same
    vectors), and a model_path gone by then is the named E034, never other weights."""
    model = make_bertram_dir(tmp_path / "m", tiny_bert_path, seed=7)
    saved = uninitialized(model)
    with pytest.warns(UserWarning, match=r"\[W014\] the 'bertram' component is saved before initialize"):
        saved.to_disk(tmp_path / "p")
    with pytest.warns(UserWarning, match=r"\[W014\]"):
        data = saved.to_bytes()
    assert saved.get_pipe("bertram").cfg["model_id"] is None  # the save loaded nothing
    cfg = json.loads((tmp_path / "p" / "bertram" / "cfg").read_text(encoding="utf8"))
    assert cfg["model_id"] is None and "model" not in cfg["parts"] and "untrained" not in cfg
    assert not (tmp_path / "p" / "bertram" / "model").exists()
    expected = make_nlp(model, tiny_bert_path)(TEXT)
    loaded = spacy.load(tmp_path / "p")
    from_bytes = English.from_config(saved.config).from_bytes(data)
    for nlp in (loaded, from_bytes):
        assert nlp.get_pipe("bertram").cfg["model_id"] is None
        assert same_vectors(nlp(TEXT), expected) and nlp.get_pipe("bertram").cfg["model_id"] == model_fingerprint(model)
    shutil.rmtree(model)
    with pytest.raises(ValueError, match=r"\[E034\] Cannot load the BERTRAM model"):
        spacy.load(tmp_path / "p")(TEXT)


@pytest.mark.parametrize("then", ["removed", "replaced"])
def test_an_initialized_pipeline_carries_its_model(tiny_bert_path, tmp_path, then):
    model = make_bertram_dir(tmp_path / "m2", tiny_bert_path, seed=7)
    fingerprint = model_fingerprint(model)
    saved = uninitialized(model)
    saved.initialize()
    saved.to_disk(tmp_path / "p")
    data = saved.to_bytes()
    cfg = json.loads((tmp_path / "p" / "bertram" / "cfg").read_text(encoding="utf8"))
    assert (cfg["model_id"], cfg["model_source"]) == (fingerprint, model)
    expected = saved(TEXT)
    assert expected._.bertram
    shutil.rmtree(model)
    if then == "replaced":  # another model where model_path points: its vectors differ
        other = another_model(tmp_path / "m2", tiny_bert_path)
        assert not same_vectors(make_nlp(other, tiny_bert_path)(TEXT), expected)
    loaded = spacy.load(tmp_path / "p")
    from_bytes = English.from_config(saved.config).from_bytes(data)
    for nlp in (loaded, from_bytes):
        assert nlp.get_pipe("bertram").cfg["model_id"] == fingerprint
        assert same_vectors(nlp(TEXT), expected)  # the saved model: no E034, no other model's vectors


def test_reload_model_is_the_way_a_loaded_pipeline_reads_model_path(tiny_bert_path, tmp_path):
    model = make_bertram_dir(tmp_path / "m", tiny_bert_path, seed=7)
    first = uninitialized(model)
    first.initialize()
    first.to_disk(tmp_path / "p")
    shutil.rmtree(model)
    retrained = another_model(tmp_path / "m", tiny_bert_path)
    expected = make_nlp(retrained, tiny_bert_path)(TEXT)
    loaded = spacy.load(tmp_path / "p")
    pipe = loaded.get_pipe("bertram")
    loaded.initialize()  # a plain initialize keeps the saved weights
    assert not same_vectors(loaded(TEXT), expected)
    loaded.config["initialize"]["components"]["bertram"] = {"reload_model": True}  # as in a config file
    loaded.initialize()
    assert pipe.cfg["model_id"] == model_fingerprint(retrained) and same_vectors(loaded(TEXT), expected)
    loaded.to_disk(tmp_path / "again")  # and the reloaded model is what the next save carries
    shutil.rmtree(retrained)
    assert same_vectors(spacy.load(tmp_path / "again")(TEXT), expected)
    without = spacy.blank("en")
    without.add_pipe("bertram", config={"model": {"base_model": tiny_bert_path}})
    with pytest.raises(ValueError, match=r"\[E164\] initialize\(reload_model=True\) .* 'bertram' has none"):
        without.get_pipe("bertram").initialize(lambda: [], reload_model=True)


def test_a_cfg_that_names_no_model_says_model_path_will_be_read(bertram_dir, tiny_bert_path, tmp_path):
    """Saved by a version whose save before initialize left the model out of cfg: it reads model_path as it
    did then, and says so; a pipeline saved untrained, given a model_path at load, does so quietly."""
    old_save = uninitialized(bertram_dir)
    old_save.initialize()
    old_save.to_disk(tmp_path / "old")
    cfg_path = tmp_path / "old" / "bertram" / "cfg"
    cfg = json.loads(cfg_path.read_text(encoding="utf8"))
    cfg_path.write_text(json.dumps({**cfg, "model_id": None, "model_source": None}), encoding="utf8")
    untrained = spacy.blank("en")
    untrained.add_pipe("bertram", config={"model": {"base_model": tiny_bert_path}})
    untrained.to_disk(tmp_path / "untrained")
    assert json.loads((tmp_path / "untrained" / "bertram" / "cfg").read_text(encoding="utf8"))["untrained"] is True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spacy.load(tmp_path / "untrained", config={"components.bertram.model.model_path": bertram_dir})
        assert not [w for w in caught if "W004" in str(w.message)]
        old = spacy.load(tmp_path / "old")
    said = [str(w.message) for w in caught if "W004" in str(w.message)]
    assert said and "the saved 'bertram' component names no model for its weights" in said[0]
    assert repr(bertram_dir) in said[0]
    old(TEXT)
    assert old.get_pipe("bertram").cfg["model_id"] == model_fingerprint(bertram_dir)  # read from model_path
