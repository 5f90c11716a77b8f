"""Misusing the `bertram` component is loud: each case once gave wrong results without a word."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import numpy
import pytest
import spacy

from spacy_bertram.rare_words import RareWordRule
from conftest import TEXT, make_bertram_dir, make_nlp, same_vectors, transformer_config


def bertram_config(model_dir: str, base_model: str, **model_settings) -> dict:
    return {"model": {"model_path": model_dir, "base_model": base_model, **model_settings}}


# -- 1. placement: a transformer must read the vectors ------------------------------------


def test_bertram_after_the_transformer_is_an_error(bertram_dir, tiny_bert_path):  # noqa: F811
    nlp = spacy.blank("en")
    nlp.add_pipe("transformer", config=transformer_config(tiny_bert_path))
    nlp.initialize()
    nlp.add_pipe("bertram", config=bertram_config(bertram_dir, tiny_bert_path))  # spaCy puts it last
    message = "comes after 'transformer'.*never used.*nlp.add_pipe\\(\"bertram\", before=\"transformer\"\\)"
    with pytest.raises(ValueError, match=message):
        nlp("The kumquat grows.")  # first use, without initialize
    with pytest.raises(ValueError, match=message):
        nlp.initialize()


def test_bertram_before_the_stock_transformer_is_an_error(bertram_dir, tiny_bert_path):  # noqa: F811
    stock = transformer_config(tiny_bert_path)
    stock["model"]["@architectures"] = "spacy-transformers.TransformerModel.v3"
    del stock["model"]["injection"]
    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config=bertram_config(bertram_dir, tiny_bert_path))
    nlp.add_pipe("transformer", config=stock)
    with pytest.raises(ValueError, match="'transformer' runs spacy-transformers' stock TransformerModel.*"
                                         "@architectures = \"spacy-bertram.TransformerModel.v1\""):
        nlp.initialize()


def test_placements_that_use_the_vectors_or_opt_out_are_fine(bertram_dir, tiny_bert_path):  # noqa: F811
    assert make_nlp(bertram_dir, tiny_bert_path)(TEXT)._.bertram  # no transformer: the vectors are the product
    assert make_nlp(bertram_dir, tiny_bert_path, transformer=tiny_bert_path)(TEXT)._.bertram
    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config=bertram_config(bertram_dir, tiny_bert_path))
    nlp.add_pipe("transformer", config=transformer_config(tiny_bert_path, injection="none"))  # on purpose
    nlp.initialize()
    assert nlp(TEXT)._.bertram


# -- 2. network settings: read from the trained model, never silently replaced -------------


@pytest.mark.parametrize(
    "key, value", [("mode", "form"), ("use_subword_mean", False), ("max_seq_length", 64), ("max_contexts", 3)]
)
def test_model_settings_that_contradict_the_trained_model_are_refused(bertram_dir, tiny_bert_path, key, value):  # noqa: F811
    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config=bertram_config(bertram_dir, tiny_bert_path, **{key: value}))
    with pytest.raises(ValueError, match=f"sets {key} = {value!r}, but the trained BERTRAM model .* has {key} = "):
        nlp.initialize()


def test_another_base_model_is_refused(bertram_dir, tiny_bert_path, tiny_roberta_path):  # noqa: F811
    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config=bertram_config(bertram_dir, tiny_roberta_path))
    with pytest.raises(ValueError, match="sets base_model = .*tiny-roberta.*has base_model = .*tiny-bert"):
        nlp.initialize()


def test_the_saved_config_says_where_settings_come_from(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    nlp = make_nlp(bertram_dir, tiny_bert_path)
    nlp.to_disk(tmp_path / "p")
    saved = spacy.util.load_config(tmp_path / "p" / "config.cfg")["components"]["bertram"]["model"]
    # null: read from the trained model (config.json), which is what runs
    assert [saved[k] for k in ("mode", "use_subword_mean", "max_seq_length", "max_contexts")] == [None] * 4
    with pytest.raises(ValueError, match="sets mode = 'form'.*serialized weights.*has mode = 'add'"):
        spacy.load(tmp_path / "p", config={"components": {"bertram": {"model": {"mode": "form"}}}})


# -- 3. a saved pipeline without its weights -----------------------------------------------


def test_a_saved_pipeline_without_its_model_file_is_refused(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    nlp = make_nlp(bertram_dir, tiny_bert_path)
    nlp.to_disk(tmp_path / "p")
    (tmp_path / "p" / "bertram" / "model").unlink()  # a crash between cfg and model, say
    with pytest.raises(ValueError, match="bertram/model' is missing, but the saved component needs it"):
        spacy.load(tmp_path / "p")


def test_excluding_the_model_never_leaves_the_untrained_network_serving(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    make_nlp(bertram_dir, tiny_bert_path).to_disk(tmp_path / "p")
    fresh = spacy.blank("en")
    pipe = fresh.add_pipe("bertram", config={"model": {"base_model": tiny_bert_path}})
    pipe.from_disk(tmp_path / "p" / "bertram", exclude=["model"])
    assert not pipe.is_loaded
    with pytest.raises(ValueError, match="has no trained BERTRAM model"):
        fresh("The kumquat grows.")
    trained = make_nlp(bertram_dir, tiny_bert_path)  # with a model: exclude keeps it
    doc = trained(TEXT)
    trained.get_pipe("bertram").from_disk(tmp_path / "p" / "bertram", exclude=["model"])
    assert same_vectors(trained(TEXT), doc)


# -- 4. a failed save keeps the previous pipeline -------------------------------------------


@pytest.mark.parametrize("fail_after", [0, 1000, 100_000])
def test_a_save_that_fails_midway_leaves_the_previous_pipeline(bertram_dir, tiny_bert_path, tmp_path,  # noqa: F811
                                                               monkeypatch, fail_after):
    from spacy_bertram import fileio

    old = make_nlp(bertram_dir, tiny_bert_path, save_cache=True)
    docs = list(old.pipe([TEXT, "A quokka."]))
    old.to_disk(tmp_path / "p")
    before = {f.name: f.read_bytes() for f in (tmp_path / "p" / "bertram").iterdir()}
    new = make_nlp(make_bertram_dir(tmp_path / "other", tiny_bert_path, seed=1), tiny_bert_path, save_cache=True)
    new(TEXT)
    written = {"n": 0}

    def disk_full(path, data):  # writes until `fail_after` bytes in all, then fails like a full disk
        room = max(0, fail_after - written["n"])
        with open(path, "wb") as file_:
            file_.write(data[:room])
        written["n"] += min(room, len(data))
        if room < len(data):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(fileio, "write_file", disk_full)
    with pytest.raises(OSError, match="No space left"):
        new.to_disk(tmp_path / "p")
    after = {f.name: f.read_bytes() for f in (tmp_path / "p" / "bertram").iterdir()}
    assert after == before  # every old part intact, no temp file left
    monkeypatch.undo()
    loaded = spacy.load(tmp_path / "p")
    assert all(same_vectors(a, b) for a, b in zip(docs, loaded.pipe([TEXT, "A quokka."])))


# -- 5. word frequencies: the model's counts, in the pipeline's language --------------------


def test_wordfreq_is_asked_in_the_pipeline_language(bertram_dir, tiny_bert_path):  # noqa: F811
    nlp = spacy.blank("ru")
    nlp.add_pipe("bertram", config={**bertram_config(bertram_dir, tiny_bert_path),
                                    "rare_words": {"frequencies": "wordfreq"}})
    nlp.initialize()
    frequencies = nlp.get_pipe("bertram")._finder.frequencies
    assert frequencies.lang == "ru" and frequencies.zipf("привет") > 4  # an everyday Russian word
    unknown = spacy.blank("xx")
    unknown.add_pipe("bertram", config=bertram_config(bertram_dir, tiny_bert_path))
    with pytest.raises(ValueError, match="wordfreq has no word frequencies for the pipeline's language 'xx'.*"
                                         "frequencies = \"model\""):
        unknown.initialize()


def test_devanagari_words_are_alphabetic(tmp_path, minilm_path):
    assert RareWordRule().is_candidate(spacy.blank("hi")("किताब")[0])  # "किताब".isalpha() is False
    nlp = spacy.blank("hi")
    nlp.add_pipe("bertram", config={**bertram_config(make_bertram_dir(tmp_path / "m", "default"), "default"),
                                    "rare_words": {"frequencies": "wordfreq", "max_zipf": 5.6}})
    nlp.initialize()
    doc = nlp("हिन्दी की किताब")
    assert {doc[i].text for i in doc._.bertram} == {"हिन्दी", "किताब"}  # "की" is frequent


# -- smaller ---------------------------------------------------------------------------------


def _store(tmp_path):
    from spacy_bertram.training.store_builder import build_context_store, count_words, select_words
    from spacy_bertram.training.corpus import Corpus

    (tmp_path / "corpus").mkdir()
    lines = [f"the farmer {i} sold a kumquat at the market" for i in range(200)]
    (tmp_path / "corpus" / "c.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    corpus = Corpus.from_paths(tmp_path / "corpus", lowercase=True)
    counts, _ = count_words(corpus, progress=False)
    return build_context_store(corpus, tmp_path / "c.sqlite", counts, select_words(counts, 2), progress=False)


def _assert_load_fails(pipeline: Path, damaged: Path, data: Optional[bytes], message: str) -> None:
    """Overwrite `damaged` with `data` (remove it for None): loading `pipeline` must raise, naming the problem."""
    if data is None:
        damaged.unlink()
    else:
        damaged.write_bytes(data)
    with pytest.raises(ValueError, match=message):
        spacy.load(pipeline)


def test_a_bad_context_store_fails_at_load_not_at_the_first_doc(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    store = _store(tmp_path)
    nlp = make_nlp(bertram_dir, tiny_bert_path, contexts="store", context_store=str(store))
    nlp.to_disk(tmp_path / "p")
    data = store.read_bytes()
    for damage, message in [(data[: len(data) // 2], "c.sqlite.*truncated"),  # a copy cut short
                            (b"not a database at all" * 10, "not an SQLite file"), (None, "not found")]:
        _assert_load_fails(tmp_path / "p", store, damage, "cannot open the context store .*" + message)


def test_infer_refuses_a_string_for_the_contexts(bertram_dir, tiny_bert_path):  # noqa: F811
    pipe = make_nlp(bertram_dir, tiny_bert_path).get_pipe("bertram")
    with pytest.raises(TypeError, match=r"item 0 \('kumquat'\): the contexts must be a list of strings"):
        pipe.infer([("kumquat", "a sentence")])


def test_the_cache_is_not_saved_unless_asked(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    private = "zorbing"  # a rare word of a doc processed before saving (training data, say)
    nlp = make_nlp(bertram_dir, tiny_bert_path, save_cache=True)
    nlp(f"The {private} quokka.")
    nlp.to_disk(tmp_path / "p")
    assert private.encode() in (tmp_path / "p" / "bertram" / "cache").read_bytes()
    default = make_nlp(bertram_dir, tiny_bert_path)
    assert default.get_pipe("bertram").save_cache is False
    default(f"The {private} quokka.")
    default.to_disk(tmp_path / "p")  # over the pipeline that had a cache: the old one goes too
    assert sorted(f.name for f in (tmp_path / "p" / "bertram").iterdir()) == ["cfg", "model"]
    assert not any(private.encode() in f.read_bytes() for f in (tmp_path / "p" / "bertram").iterdir())
    assert spacy.load(tmp_path / "p").get_pipe("bertram").cache.stats()["size"] == 0


def test_junk_cfg_names_the_file(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    make_nlp(bertram_dir, tiny_bert_path).to_disk(tmp_path / "p")
    cfg = tmp_path / "p" / "bertram" / "cfg"
    for junk, message in [(b"\x00\xffjunk", "is not the component's cfg"), (b"[1, 2]", "must hold a JSON object"),
                          (b'{"model_id": 5}', "'model_id' must be a string or null")]:
        _assert_load_fails(tmp_path / "p", cfg, junk, re.escape(repr(str(cfg))) + ".*" + re.escape(message))
    _assert_load_fails(tmp_path / "p", cfg, None, "bertram/cfg' is missing")


def test_a_cache_hit_equals_recomputing_within_the_documented_tolerance(bertram_dir, tiny_bert_path):  # noqa: F811
    from spacy_bertram.pipeline.vector_cache import RECOMPUTE_TOLERANCE

    pipe = make_nlp(bertram_dir, tiny_bert_path).get_pipe("bertram")
    item = ("kumquat", ["The farmer sold a kumquat at the market."])
    others = [(f"quokka{'s' * k}", [f"a quokka{'s' * k} " + "and the sea " * k]) for k in range(12)]
    alone = pipe.infer([item])[0]
    batched = pipe.infer([*others, item])[-1]  # what recomputing in another batch gives
    assert numpy.abs(alone - batched).max() <= RECOMPUTE_TOLERANCE
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf8")
    assert f"{RECOMPUTE_TOLERANCE:g}" in readme and "exactly what recomputing would" not in readme


def test_a_model_with_counts_is_read_with_them_under_auto(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    from spacy_bertram import load_bertram, save_bertram

    model = save_bertram(load_bertram(bertram_dir), tmp_path / "m", counts={"kumquat": 10**6, "the": 10**6})
    assert (model / "counts.tsv").read_text(encoding="utf8").splitlines() == ["kumquat\t1000000", "the\t1000000"]
    pipe = make_nlp(str(model), tiny_bert_path).get_pipe("bertram")
    assert pipe._finder.frequencies is pipe.table and pipe.table.count("kumquat") == 10**6
