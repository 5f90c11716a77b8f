"""The `bertram` component: rare-word rule, contexts, cache, batching, round trips, configs."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import numpy
import pytest
import spacy
from spacy.lang.en import English
from spacy.tokens import Doc, DocBin

import spacy_bertram.pipeline.component  # noqa: F401  (registers the factory until the entry point is installed)
from conftest import TEXT, make_bertram_dir, make_nlp, same_vectors, transformer_config  # noqa: F401
from spacy_bertram import NgramVocab, create_bertram, save_bertram
from spacy_bertram.pipeline.component import BertramComponent
from spacy_bertram.pipeline.word_sources import spread
from spacy_bertram.rare_words import CountTable, RareWordRule, WordfreqFrequencies, write_counts, zipf_from_count
from spacy_bertram.pipeline.vector_cache import VectorCache, cache_key

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def nlp_full(bertram_dir, tiny_bert_path):
    return make_nlp(bertram_dir, tiny_bert_path, transformer=tiny_bert_path, textcat=True, save_cache=True)


# -- rare-word rule ----------------------------------------------------------------------


def test_count_table_zipf_and_casing(tmp_path):
    table = CountTable({"the": 60_000, "kumquat": 1, "Paris": 50}, total=1_000_000)
    assert table.zipf("the") == pytest.approx(zipf_from_count(60_000, 1_000_000)) == pytest.approx(7.778, abs=1e-3)
    assert table.zipf("The") == table.zipf("the")  # sentence-initial capital
    assert table.zipf("unseen") == 0.0 and table.zipf("kumquat") == pytest.approx(3.0)
    assert CountTable.from_bytes(table.to_bytes()).counts == table.counts
    (tmp_path / "counts.tsv").write_text("the\t5\nkumquat\t1\n", encoding="utf8")
    assert CountTable.from_model_dir(tmp_path).total == 6
    (tmp_path / "counts.tsv").write_text("the\t5\nkumquat one\n", encoding="utf8")
    with pytest.raises(ValueError, match="Corrupt word-count file .*counts.tsv.*line 2"):
        CountTable.from_model_dir(tmp_path)
    (tmp_path / "counts.tsv").unlink()  # one documented name: another is refused, not ignored
    (tmp_path / "counts.json").write_text('{"total": 100, "counts": {"the": 50}}', encoding="utf8")
    with pytest.raises(ValueError, match="has counts.json, but word counts are read from counts.tsv"):
        CountTable.from_model_dir(tmp_path)
    assert CountTable.from_model_dir(tmp_path / "nowhere") is None
    assert WordfreqFrequencies().zipf("the") > 6 > 3 > WordfreqFrequencies().zipf("kumquat")


def test_rule_settings_are_validated():
    with pytest.raises(ValueError, match="frequencies"):
        RareWordRule(frequencies="web")
    with pytest.raises(ValueError, match="min_wordpieces"):
        RareWordRule(min_wordpieces=0)


def test_rare_tokens_by_wordfreq_alpha_only_and_wordpieces(bertram_dir, tiny_bert_path):
    text = "The kumquat and 42 quokkas ate a tarantula ! cat"
    nlp = make_nlp(bertram_dir, tiny_bert_path)
    doc = nlp(text)
    assert sorted(doc[i].text for i in doc._.bertram) == ["kumquat", "quokkas", "tarantula"]
    assert all(v.dtype == numpy.float32 and v.shape == (32,) for v in doc._.bertram.values())
    # Only words the encoder splits into 2+ pieces; "cat" is one piece (and rare by this table).
    nlp = make_nlp(bertram_dir, tiny_bert_path, rare_words={"max_zipf": 8.0, "min_wordpieces": 2})
    rare = {doc[i].text for i in nlp(text)._.bertram}
    assert "kumquat" in rare and "cat" not in rare and "The" not in rare
    nlp = make_nlp(bertram_dir, tiny_bert_path, rare_words={"max_zipf": 8.0, "alpha_only": False, "min_length": 1})
    assert "42" not in {doc[i].text for i in nlp(text)._.bertram}  # still needs a letter


def test_model_counts_replace_wordfreq(bertram_dir, tiny_bert_path, tmp_path):
    counts = {"the": 10**6, "kumquat": 10**5, "ate": 10**5}
    model = make_bertram_dir(tmp_path / "m", tiny_bert_path, counts=counts)
    nlp = make_nlp(model, tiny_bert_path)
    pipe = nlp.get_pipe("bertram")
    assert pipe.table is not None and pipe._finder.frequencies is pipe.table
    doc = nlp("the kumquat ate tarantulas")  # kumquat is frequent in the model's own corpus
    assert [doc[i].text for i in doc._.bertram] == ["tarantulas"]
    nlp.to_disk(tmp_path / "pipeline")
    shutil.rmtree(model)  # the table now travels with the pipeline
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("bertram").table.counts == pipe.table.counts
    assert same_vectors(loaded("the kumquat ate tarantulas"), doc)
    doc = make_nlp(bertram_dir, tiny_bert_path, rare_words={"frequencies": "wordfreq"})("the kumquat ate tarantulas")
    assert [doc[i].text for i in doc._.bertram] == ["kumquat", "tarantulas"]


# -- the trained model: one model_path, the layer's -------------------------------------


def test_the_layers_model_path_loads_at_initialize_or_first_use(bertram_dir, tiny_bert_path):
    from spacy_bertram.layers import needs_init
    from spacy_bertram.storage import model_fingerprint

    config = {"model": {"model_path": bertram_dir, "base_model": tiny_bert_path}}
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("bertram", config=config)
    assert "model_path" not in nlp.config["components"]["bertram"]
    assert nlp.config["components"]["bertram"]["model"]["model_path"] == bertram_dir
    assert needs_init(pipe.model) and not pipe.is_loaded  # constructing reads nothing
    nlp.initialize()  # the component's initialize runs the layer's init
    assert not needs_init(pipe.model)
    assert pipe.cfg["model_id"] == model_fingerprint(bertram_dir) and pipe.cfg["model_source"] == bertram_dir
    lazy = spacy.blank("en")  # model_path alone: every network setting, base_model too, from the directory
    lazy_pipe = lazy.add_pipe("bertram", config={"model": {"model_path": bertram_dir}})
    assert same_vectors(lazy(TEXT), nlp(TEXT)) and lazy_pipe.is_loaded  # loaded on first use


@pytest.mark.parametrize("setting", ["model_path", "max_contexts"])
def test_the_old_component_settings_are_config_errors(bertram_dir, setting):
    from confection import ConfigValidationError

    with pytest.raises(ConfigValidationError, match=f"bertram -> {setting}.*unexpected argument"):
        spacy.blank("en").add_pipe("bertram", config={setting: bertram_dir if setting == "model_path" else 8})


def test_model_path_at_initialize_is_a_config_error(bertram_dir, tiny_bert_path):
    from confection import ConfigValidationError

    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config={"model": {"model_path": bertram_dir, "base_model": tiny_bert_path}})
    nlp.config["initialize"]["components"]["bertram"] = {"model_path": bertram_dir}
    with pytest.raises(ConfigValidationError, match="model_path"):
        nlp.initialize()


def test_a_saved_pipeline_never_reads_its_model_path_again(tiny_bert_path, tmp_path):
    model = make_bertram_dir(tmp_path / "m", tiny_bert_path, seed=7)
    nlp = make_nlp(model, tiny_bert_path)
    doc = nlp(TEXT)
    nlp.to_disk(tmp_path / "p")
    data = nlp.to_bytes()
    (tmp_path / "m").rename(tmp_path / "moved")
    loaded = spacy.load(tmp_path / "p")
    assert loaded.config["components"]["bertram"]["model"]["model_path"] == model  # still named, never read
    assert same_vectors(loaded(TEXT), doc)
    loaded.initialize()  # the weights came from the pipeline: init does not reload them
    from_bytes = English.from_config(nlp.config).from_bytes(data)
    for other in (loaded, from_bytes):
        pipe = other.get_pipe("bertram")
        assert pipe.cfg["model_id"] == nlp.get_pipe("bertram").cfg["model_id"]
        pipe.cache.clear()
        assert same_vectors(other(TEXT), doc)


# -- contexts --------------------------------------------------------------------------


def test_doc_contexts_are_sentences_or_windows(bertram_dir, tiny_bert_path):
    nlp = make_nlp(bertram_dir, tiny_bert_path, sentencizer=True)
    pipe = nlp.get_pipe("bertram")
    doc = nlp(TEXT + " Nothing else here.")
    indices = [t.i for t in doc if t.text == "kumquat"]
    assert pipe.doc_contexts(doc, indices) == [s.text for s in list(doc.sents)[:2]]
    plain = spacy.blank("en")(TEXT)  # no sentence boundaries: a token window
    pipe.context_window = 2
    assert pipe.doc_contexts(plain, [1]) == ["The kumquat grows in"]
    assert spread(list("abcdefghij"), 4) == ["a", "d", "g", "j"] and spread(["a"], 3) == ["a"]


def test_contexts_from_a_store(bertram_dir, tiny_bert_path, tmp_path):
    from spacy_bertram.training.store_builder import build_context_store, count_words, select_words
    from spacy_bertram.training.corpus import Corpus

    (tmp_path / "corpus").mkdir()
    lines = [f"the farmer {i} sold a kumquat at the market" for i in range(6)] + ["a quokka ate fruit"]
    (tmp_path / "corpus" / "c.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    corpus = Corpus.from_paths(tmp_path / "corpus", lowercase=True)
    counts, _ = count_words(corpus, progress=False)
    store = build_context_store(corpus, tmp_path / "c.sqlite", counts, select_words(counts, 2), progress=False)
    both = make_nlp(bertram_dir, tiny_bert_path, contexts="both", context_store=str(store), contexts_per_word=3)
    doc = spacy.blank("en")("A kumquat is sweet.")
    texts = both.get_pipe("bertram").contexts_for(doc, "kumquat", [1])
    assert len(texts) == 3 and texts[0] == "A kumquat is sweet." and "kumquat" in texts[1]
    only = make_nlp(bertram_dir, tiny_bert_path, contexts="store", context_store=str(store), contexts_per_word=3)
    assert all("market" in t for t in only.get_pipe("bertram").contexts_for(doc, "kumquat", [1]))
    a, b = only("A kumquat is sweet."), only("Sour kumquat!")
    assert numpy.array_equal(a._.bertram[1], b._.bertram[1])  # store contexts: same vector everywhere
    assert only.get_pipe("bertram").cache.hits == 1
    only.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")  # the store is referenced by path, from the config
    loaded.get_pipe("bertram").cache.clear()
    assert same_vectors(loaded("Sour kumquat!"), b) and loaded.get_pipe("bertram").cache.misses == 1
    by_store = make_nlp(bertram_dir, tiny_bert_path, context_store=str(store),
                        rare_words={"frequencies": "store", "max_zipf": 7.5})
    doc = by_store("the quokka sold tarantulas")  # store counts: quokka rare, "sold" and "the" not
    assert [doc[i].text for i in doc._.bertram] == ["quokka", "tarantulas"]


# -- cache -------------------------------------------------------------------------------


def test_vector_cache_lru_bound_and_serialization():
    cache = VectorCache(max_size=2, fingerprint="m1")
    keys = [cache_key(w, "doc", [f"{w} here"]) for w in ("a", "b", "c")]
    for n, key in enumerate(keys[:2]):
        cache.put(key, numpy.full(3, n))
    assert cache.get(keys[0]) is not None  # now most recent
    cache.put(keys[2], numpy.full(3, 2))
    assert keys[1] not in cache and keys[0] in cache and len(cache) == 2
    assert cache.get(keys[1]) is None and cache.stats()["hits"] == 1 and cache.stats()["misses"] == 1
    with pytest.raises(ValueError):
        cache.get(keys[0])[0] = 5.0  # shared, read-only vectors
    copy = VectorCache(max_size=5).from_bytes(cache.to_bytes())
    assert list(copy._entries) == list(cache._entries) and copy.fingerprint == "m1"
    assert not copy.bind("m1") and copy.bind("m2") and len(copy) == 0
    assert cache_key("w", "doc", ["a b", "c"]) != cache_key("w", "doc", ["a", "b c"])
    with pytest.raises(ValueError, match="Corrupt"):
        VectorCache().from_bytes(b"\x93garbage")
    disabled = VectorCache(max_size=0)
    disabled.put(keys[0], numpy.zeros(3))
    assert len(disabled) == 0


def test_component_cache_hits_and_bound(bertram_dir, tiny_bert_path):
    nlp = make_nlp(bertram_dir, tiny_bert_path, cache_size=3)
    pipe: BertramComponent = nlp.get_pipe("bertram")
    first = nlp(TEXT)
    assert pipe.cache.stats()["misses"] == 1 and len(pipe.cache) == 1
    second = nlp(TEXT)
    assert pipe.cache.hits == 1 and all(first._.bertram[k] is second._.bertram[k] for k in first._.bertram)
    other = nlp("The kumquat is sour.")  # same word, other contexts: its own vector
    assert not numpy.array_equal(other._.bertram[1], first._.bertram[1])
    list(nlp.pipe([f"A quokka number {i}." for i in range(5)]))
    assert len(pipe.cache) == 3


def test_pipe_infers_each_batch_in_one_call(bertram_dir, tiny_bert_path, monkeypatch):
    nlp = make_nlp(bertram_dir, tiny_bert_path)
    pipe = nlp.get_pipe("bertram")
    calls: List[int] = []
    infer = pipe.infer
    monkeypatch.setattr(pipe, "infer", lambda items: calls.append(len(items)) or infer(items))
    texts = [f"The kumquat {i} met a quokka." for i in range(6)] + ["The kumquat 0 met a quokka."]
    docs = list(nlp.pipe(texts, batch_size=4))
    assert calls == [8, 4]  # 2 words x 4 docs, then 2 x 2 docs with one duplicate doc
    assert same_vectors(docs[0], docs[-1]) and docs[0]._.bertram[1] is docs[-1]._.bertram[1]


# -- pipeline: training, round trips, multiprocessing ------------------------------------


def test_nlp_update_annotates_without_changing_bertram(nlp_full, monkeypatch):
    from spacy.training import Example

    pipe, transformer = nlp_full.get_pipe("bertram"), nlp_full.get_pipe("transformer")
    before = pipe.model.to_bytes()
    seen: list = []
    update = transformer.update
    monkeypatch.setattr(transformer, "update", lambda egs, **kw: seen.extend(eg.predicted._.bertram for eg in egs)
                        or update(egs, **kw))
    examples = [Example.from_dict(nlp_full.make_doc(t), {"cats": {"POS": 1.0, "NEG": 0.0}}) for t in (TEXT, "a cat")]
    losses = nlp_full.update(examples)
    assert list(seen[0]) == [1, 11] and seen[1] == {}  # the transformer trains on injected inputs
    assert "textcat" in losses and "bertram" not in losses
    assert pipe.model.to_bytes() == before


def test_round_trips_give_identical_vectors_and_predictions(nlp_full, tmp_path):
    texts = [TEXT, "A zorbing quokka.", "", "   ", "the cat"]
    nlp_full.get_pipe("bertram").cache.clear()
    docs = list(nlp_full.pipe(texts))
    nlp_full.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("bertram").cache.stats()["size"] == len(nlp_full.get_pipe("bertram").cache)
    from_bytes = English.from_config(nlp_full.config).from_bytes(nlp_full.to_bytes())
    for other in (loaded, from_bytes):
        for a, b in zip(docs, other.pipe(texts)):
            assert same_vectors(a, b) and a.cats == b.cats
    # Without the cache and the original model directory, vectors are recomputed identically.
    loaded = spacy.load(tmp_path / "pipeline", config={"components.bertram.model.model_path": "/nowhere"})
    loaded.get_pipe("bertram").cache.clear()
    assert all(same_vectors(a, b) for a, b in zip(docs, loaded.pipe(texts)))


@pytest.mark.slow
def test_multiprocessing_pipe(nlp_full):
    texts = [TEXT, "A zorbing quokka.", "", "the cat"] * 2
    docs = list(nlp_full.pipe(texts))  # torch has run in this process before the fork
    forked = list(nlp_full.pipe(texts, n_process=2, batch_size=2))
    for a, b in zip(docs, forked):
        assert same_vectors(a, b) and a.cats == pytest.approx(b.cats, abs=1e-5)


def test_multiprocessing_pipe_after_gpu_use_is_a_named_error(nlp_full, monkeypatch):
    """Forked workers cannot use CUDA: each says so (spaCy passes the message on) instead
    of CUDA's "Cannot re-initialize CUDA in forked subprocess". The GPU is faked: the
    workers inherit the patched check."""
    from spacy_bertram.pipeline import device

    monkeypatch.setattr(device, "forked_after_gpu_use", lambda: True)
    list(nlp_full.pipe(["the cat"]))  # in this process nothing changes
    with pytest.raises(ValueError, match=r"(?s)n_process > 1\) forked this worker after the GPU was in use.*n_process=1"):
        list(nlp_full.pipe([TEXT, "the cat"] * 2, n_process=2, batch_size=2))


# -- configs -----------------------------------------------------------------------------


@pytest.mark.slow
def test_configs_train_with_spacy_train(bertram_dir, tiny_bert_path, tmp_path):
    nlp = spacy.blank("en")
    bin_ = DocBin()
    for text, label in [("the kumquat is sweet", "POS"), ("a bad sour lemon", "NEG"),
                        ("good fruit from the farm", "POS"), ("the dog ate a bad tarantula", "NEG")]:
        doc = nlp(text)
        doc.cats = {"POS": float(label == "POS"), "NEG": float(label == "NEG")}
        bin_.add(doc)
    bin_.to_disk(tmp_path / "data.spacy")
    code = tmp_path / "code.py"
    code.write_text("import spacy_bertram.pipeline.component\nimport spacy_bertram.injection\n", encoding="utf8")
    common = [
        "--code", str(code), "--paths.train", str(tmp_path / "data.spacy"), "--paths.dev", str(tmp_path / "data.spacy"),
        "--components.transformer.model.name.name", tiny_bert_path, "--training.max_steps", "2",
        "--training.eval_frequency", "2",
    ]
    extra = {"textcat_minilm.cfg": [], "textcat_minilm_bertram.cfg": [
        "--paths.bertram", bertram_dir, "--components.bertram.model.base_model", tiny_bert_path]}
    for name, more in extra.items():
        out = tmp_path / name
        result = subprocess.run(
            [sys.executable, "-m", "spacy", "train", str(ROOT / "configs" / name), "--output", str(out), *common, *more],
            capture_output=True, text=True, cwd=tmp_path,
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        assert (out / "model-last" / "meta.json").is_file()
    trained = spacy.load(tmp_path / "textcat_minilm_bertram.cfg" / "model-last")
    assert trained.pipe_names == ["bertram", "transformer", "textcat"]
    assert trained("a kumquat")._.bertram and trained.config["components"]["transformer"]["model"]["injection"] == "slash"


def test_encoder_path_resolves_default():
    from spacy.util import registry

    from spacy_bertram.encoder import default_base_model_path

    assert registry.misc.get("spacy-bertram.encoder_path.v1")("default") == default_base_model_path()


def test_minilm_smoke(minilm_path, tmp_path):
    """The real encoder end to end: vectors of its width reach the injecting transformer."""
    model = make_bertram_dir(tmp_path / "m", "default")
    nlp = make_nlp(model, "default", transformer=minilm_path)
    doc = nlp("The kumquat grows in a garden of tarantulas.")
    assert {doc[i].text for i in doc._.bertram} == {"kumquat", "tarantulas"}
    assert all(v.shape == (384,) for v in doc._.bertram.values())
    stock = spacy.blank("en")
    stock.add_pipe("transformer", config=transformer_config(minilm_path))
    stock.initialize()
    a = numpy.asarray(doc._.trf_data.model_output.last_hidden_state)
    b = numpy.asarray(stock(doc.text)._.trf_data.model_output.last_hidden_state)
    assert a.shape == b.shape and not numpy.allclose(a, b)
