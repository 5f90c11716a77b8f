"""pipeline/component.py: the `bertram` component's settings, model loading, cache use, batching, bad docs, configs."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

import numpy
import pytest
import spacy
import torch
from spacy import util
from spacy.tokens import DocBin
from thinc.api import Config

import spacy_bertram.pipeline.component as component_module  # registers the factory until the entry point is installed
from spacy_bertram.model.encoder import is_bpe_tokenizer
from spacy_bertram.model.layers import bertram_shim, get_bertram_network, infer_vectors
from spacy_bertram.pipeline.component import BertramComponent

from tests.util import (
    GLOSSARY,
    TEXT,
    TINY_WORDS,
    bertram_config,
    config_of_own_source,
    make_bertram_dir,
    make_nlp,
    recipe_of_own_source,
    same_vectors,
    transformer_config,
)


ROOT = Path(__file__).resolve().parents[1]


# -- the trained model: one model_path, the layer's -------------------------------------


def test_the_layers_model_path_loads_at_initialize_or_first_use(encoder_bertram_dir, tiny_encoder_path):
    from spacy_bertram.model.storage import model_fingerprint

    config = {"model": {"model_path": encoder_bertram_dir, "base_model": tiny_encoder_path}}
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe("bertram", config=config)
    assert "model_path" not in nlp.config["components"]["bertram"]
    assert nlp.config["components"]["bertram"]["model"]["model_path"] == encoder_bertram_dir
    assert bertram_shim(pipe.model).pending and pipe.cfg["model_id"] is None  # constructing reads nothing
    nlp.initialize()  # the component's initialize runs the layer's init
    assert not bertram_shim(pipe.model).pending
    assert (
        pipe.cfg["model_id"] == model_fingerprint(encoder_bertram_dir)
        and pipe.cfg["model_source"] == encoder_bertram_dir
    )
    lazy = spacy.blank("en")  # model_path alone: every network setting, base_model too, from the directory
    lazy_pipe = lazy.add_pipe("bertram", config={"model": {"model_path": encoder_bertram_dir}})
    assert same_vectors(lazy(TEXT), nlp(TEXT)) and lazy_pipe.cfg["model_id"]  # loaded on first use, by initialize


@pytest.mark.parametrize("setting", ["model_path", "max_contexts"])
def test_the_old_component_settings_are_config_errors(encoder_bertram_dir, setting):
    from confection import ConfigValidationError

    with pytest.raises(ConfigValidationError, match=f"bertram -> {setting}.*unexpected argument"):
        spacy.blank("en").add_pipe("bertram", config={setting: encoder_bertram_dir if setting == "model_path" else 8})


def test_model_path_at_initialize_is_a_config_error(encoder_bertram_dir, tiny_encoder_path):
    from confection import ConfigValidationError

    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config={"model": {"model_path": encoder_bertram_dir, "base_model": tiny_encoder_path}})
    nlp.config["initialize"]["components"]["bertram"] = {"model_path": encoder_bertram_dir}
    with pytest.raises(ConfigValidationError, match="model_path"):
        nlp.initialize()


def test_component_cache_hits_and_bound(encoder_bertram_dir, tiny_encoder_path):
    nlp = make_nlp(
        encoder_bertram_dir, tiny_encoder_path, cache_size=3, contexts="doc"
    )  # a word's vector depends on its doc
    pipe: BertramComponent = nlp.get_pipe("bertram")
    first = nlp(TEXT)
    assert pipe.cache.stats()["misses"] == 1 and len(pipe.cache) == 1
    second = nlp(TEXT)
    assert pipe.cache.hits == 1 and all(first._.bertram[k] is second._.bertram[k] for k in first._.bertram)
    other = nlp("The kumquat is sour.")  # same word, other contexts: its own vector
    assert not numpy.array_equal(other._.bertram[1], first._.bertram[1])
    list(nlp.pipe([f"A quokka number {i}." for i in range(5)]))
    assert len(pipe.cache) == 3


def test_pipe_infers_each_batch_in_one_call(encoder_bertram_dir, tiny_encoder_path, monkeypatch):
    nlp = make_nlp(encoder_bertram_dir, tiny_encoder_path, contexts="doc")  # each doc's own contexts: one item per doc
    calls: List[int] = []
    monkeypatch.setattr(
        component_module, "infer_vectors", lambda model, items: calls.append(len(items)) or infer_vectors(model, items)
    )
    texts = [f"The kumquat {i} met a quokka." for i in range(6)] + ["The kumquat 0 met a quokka."]
    docs = list(nlp.pipe(texts, batch_size=4))
    assert calls == [8, 4]  # 2 words x 4 docs, then 2 x 2 docs with one duplicate doc
    assert same_vectors(docs[0], docs[-1]) and docs[0]._.bertram[1] is docs[-1]._.bertram[1]


def test_the_checks_run_once_at_initialize_and_at_a_load_not_per_batch(
    encoder_bertram_dir, tiny_encoder_path, monkeypatch
):
    from spacy_bertram.rarity.rare_words import RareWordRule

    nlp = spacy.blank("en")
    pipe: BertramComponent = nlp.add_pipe("bertram", config={"model": {"model_path": encoder_bertram_dir}})
    with pytest.raises(ValueError, match=r"\[E170\] The 'bertram' component has not prepared"):
        pipe.finder  # a property reads, never starts up
    prepared: List[int] = []
    prepare = BertramComponent._prepare
    monkeypatch.setattr(BertramComponent, "_prepare", lambda self: prepared.append(1) or prepare(self))
    doc = nlp(TEXT)  # a first doc without initialize: initialize's own path, once
    finder = pipe.finder
    list(nlp.pipe([TEXT, "A quokka."] * 3, batch_size=2))
    assert len(prepared) == 1 and pipe.finder is finder
    pipe.from_bytes(pipe.to_bytes())  # a load prepares for the weights it read
    pipe.cache.clear()
    assert len(prepared) == 2 and pipe.finder is not finder and same_vectors(nlp(TEXT), doc) and len(prepared) == 2
    pipe.subword_share = 0.5  # the cache key and the vector table depend on it, not the finder
    assert len(prepared) == 2 and pipe.finder is not finder and pipe.cache.fingerprint.endswith("subword_share=0.5")
    pipe.word_sources.rule = RareWordRule(max_zipf=1.0)  # the finder is built from it: the next doc prepares
    assert not nlp(TEXT)._.bertram and pipe.finder.rule is pipe.word_sources.rule and len(prepared) == 3


#: The component's whole surface: spaCy's Pipe API, the subword share and the rare-word rule. What it holds beyond
#: vocab, model and name is its settings, its tables and cache, and what it prepared (`Prepared`); the weights and
#: the counts are the layer's (`layers.BertramShim`), a word's frequency and contexts `word_sources`'.
SURFACE = {
    "__call__",
    "pipe",
    "predict",
    "set_annotations",
    "update",
    "initialize",
    "to_bytes",
    "from_bytes",
    "to_disk",
    "from_disk",
    "cfg",
    "subword_share",
    "finder",
    "rare_tokens",
    "explain",
}
ATTRIBUTES = {
    "vocab",
    "model",
    "word_sources",
    "cache",
    "save_cache",
    "infer_missing",
    "vector_table",
    "vectors",
    "_prepared",
    "_configured_share",
    "_nlp",
    "_pid",
}  # and `name`, a slot of spaCy's Pipe


def test_the_components_surface_is_the_named_list(encoder_bertram_dir, tiny_encoder_path):
    own = vars(BertramComponent)
    assert {name for name in own if not name.startswith("_")} | {"__call__"} == SURFACE
    assert {name for name, value in own.items() if name.startswith("_") and callable(value)} == {
        "__init__",
        "__call__",
        "__setattr__",
        "_vectors_key",
        "_check_share",
        "_in_pipeline",
        "_check_encoders",
        "_made_from",
        "_is_prepared",
        "_ready",
        "_prepare",
        "_parts",
        "_saved_cfg",
        "_restore",
    }
    assert set(vars(make_nlp(encoder_bertram_dir, tiny_encoder_path).get_pipe("bertram"))) == ATTRIBUTES


def test_the_context_settings_live_in_word_sources(encoder_bertram_dir, tiny_encoder_path):
    pipe: BertramComponent = make_nlp(encoder_bertram_dir, tiny_encoder_path, contexts_per_word=3).get_pipe("bertram")
    assert pipe.word_sources.contexts_per_word == 3 and "word_sources" in vars(pipe)
    settings = {"rule", "contexts_per_word", "context_window", "context_store", "dictionary_store"}
    assert not settings & (set(vars(pipe)) | set(vars(BertramComponent)))  # one copy, where the sources read it
    with pytest.raises(AttributeError, match=r"\[E194\] 'context_store' is not an attribute of the 'bertram' comp"):
        pipe.context_store = "elsewhere.sqlite"  # would shadow nothing the component reads
    with pytest.raises(AttributeError, match=r"\[E194\].*set `nlp.get_pipe\('bertram'\).word_sources.rule`"):
        pipe.rare_words = None
    assert "context_store" not in vars(pipe) and pipe.word_sources.context_store is None


# -- the subword share: an inference setting of the component ----------------------------


def model_saved_with_share(encoder_bertram_dir: str, share: float, path: Path) -> str:
    """The recipe of docs/training.md: the same weights, another subword_share in config.json."""
    from dataclasses import replace

    from spacy_bertram import load_bertram, save_bertram

    network = load_bertram(encoder_bertram_dir)
    network.config = replace(network.config, subword_share=share)
    save_bertram(network, path)
    return str(path)


def test_subword_share_on_the_component_is_the_model_saved_with_that_share(
    encoder_bertram_dir, tiny_encoder_path, tmp_path
):
    nlp = make_nlp(encoder_bertram_dir, tiny_encoder_path)
    pipe: BertramComponent = nlp.get_pipe("bertram")
    own = nlp(TEXT)  # cached: the share must not serve it again
    assert pipe.subword_share is None and own._.bertram and len(pipe.cache) == 1
    pipe.subword_share = 0.8
    mixed = nlp(TEXT)
    resaved = make_nlp(model_saved_with_share(encoder_bertram_dir, 0.8, tmp_path / "m"), tiny_encoder_path)(TEXT)
    assert same_vectors(mixed, resaved) and not same_vectors(mixed, own)
    configured = make_nlp(encoder_bertram_dir, tiny_encoder_path, subword_share=0.8)  # the config's setting: the same
    assert configured.get_pipe("bertram").subword_share == 0.8 and same_vectors(configured(TEXT), resaved)
    pipe.subword_share = None  # the model's own again
    assert same_vectors(nlp(TEXT), own)


@pytest.mark.parametrize("share", [1.5, -0.1, float("nan"), True, "0.5"])
def test_a_subword_share_outside_0_1_is_refused(encoder_bertram_dir, tiny_encoder_path, share):
    pipe = make_nlp(encoder_bertram_dir, tiny_encoder_path).get_pipe("bertram")
    with pytest.raises(ValueError, match=r"\[E169\] subword_share of 'bertram' must be a number in \[0, 1\]"):
        pipe.subword_share = share
    assert pipe.subword_share is None
    if share in (1.5, -0.1):  # the config's own checks take the others
        with pytest.raises(ValueError, match=r"\[E169\]"):
            spacy.blank("en").add_pipe(
                "bertram", config={"model": {"model_path": encoder_bertram_dir}, "subword_share": share}
            )


# -- pipeline: training, round trips, multiprocessing ------------------------------------


def test_nlp_update_annotates_without_changing_bertram(nlp_full, monkeypatch):
    from spacy.training import Example

    pipe, transformer = nlp_full.get_pipe("bertram"), nlp_full.get_pipe("transformer")
    before = pipe.model.to_bytes()
    seen: list = []
    update = transformer.update
    monkeypatch.setattr(
        transformer, "update", lambda egs, **kw: seen.extend(eg.predicted._.bertram for eg in egs) or update(egs, **kw)
    )
    examples = [Example.from_dict(nlp_full.make_doc(t), {"cats": {"POS": 1.0, "NEG": 0.0}}) for t in (TEXT, "a cat")]
    losses = nlp_full.update(examples)
    assert list(seen[0]) == [1, 11] and seen[1] == {}  # the transformer trains on injected inputs
    assert "textcat" in losses and "bertram" not in losses
    assert pipe.model.to_bytes() == before


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
    from spacy_bertram import device

    monkeypatch.setattr(device, "forked_after_gpu_use", lambda: True)
    list(nlp_full.pipe(["the cat"]))  # in this process nothing changes
    with pytest.raises(
        ValueError,
        match=r"(?s)\[E121\] .*n_process > 1\) forked this worker "
        r"after the GPU was in use.*n_process=1",
    ):
        list(nlp_full.pipe([TEXT, "the cat"] * 2, n_process=2, batch_size=2))


# -- configs -----------------------------------------------------------------------------


@pytest.mark.slow
def test_configs_train_with_spacy_train(encoder_bertram_dir, tiny_encoder_path, tiny_bert_path, tmp_path, monkeypatch):
    """Each config trains with `spacy train`; on the second encoder only the one with `bertram` in it (the stock
    config and the --code source do not depend on the encoder)."""
    first_encoder = tiny_encoder_path == tiny_bert_path
    nlp = spacy.blank("en")
    bin_ = DocBin()
    for text, label in [
        ("the kumquat is sweet", "POS"),
        ("a bad sour lemon", "NEG"),
        ("good fruit from the farm", "POS"),
        ("the dog ate a bad tarantula", "NEG"),
    ]:
        doc = nlp(text)
        doc.cats = {"POS": float(label == "POS"), "NEG": float(label == "NEG")}
        bin_.add(doc)
    bin_.to_disk(tmp_path / "data.spacy")
    # The --code file is docs/configuration.md's recipe for one's own context source, as written: nothing private.
    code = tmp_path / "my_sources.py"
    code.write_text(recipe_of_own_source(), encoding="utf8")
    (tmp_path / "glossary.tsv").write_text(GLOSSARY, encoding="utf8")
    common = [
        "--code",
        str(code),
        "--paths.train",
        str(tmp_path / "data.spacy"),
        "--paths.dev",
        str(tmp_path / "data.spacy"),
        "--components.transformer.model.name.name",
        tiny_encoder_path,
        "--training.max_steps",
        "2",
        "--training.eval_frequency",
        "2",
    ]
    extra = {
        "textcat_minilm.cfg": [],
        "textcat_minilm_bertram.cfg": [
            "--paths.bertram",
            encoder_bertram_dir,
            "--components.bertram.model.base_model",
            tiny_encoder_path,
        ],
    }
    for name, more in extra.items():
        if not (first_encoder or "bertram" in name):
            continue
        out = tmp_path / name
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "spacy",
                "train",
                str(ROOT / "configs" / name),
                "--output",
                str(out),
                *common,
                *more,
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        assert (out / "model-last" / "meta.json").is_file()
    trained = spacy.load(tmp_path / "textcat_minilm_bertram.cfg" / "model-last")
    assert trained.pipe_names == ["bertram", "transformer", "textcat"]
    assert (
        trained("a kumquat")._.bertram
        and trained.config["components"]["transformer"]["model"]["injection"] == "recentre"
    )
    if not first_encoder:
        return
    # A config that names the context source its --code file registers trains, saves and loads.
    own = Config().from_disk(ROOT / "configs" / "textcat_minilm_bertram.cfg", interpolate=False)
    own["components"]["bertram"]["contexts"] = config_of_own_source()
    own.to_disk(tmp_path / "own.cfg")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "spacy",
            "train",
            str(tmp_path / "own.cfg"),
            "--output",
            str(tmp_path / "own"),
            *common,
            *extra["textcat_minilm_bertram.cfg"],
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    util.import_file("my_sources", code)
    monkeypatch.chdir(tmp_path)  # the config's glossary path is relative, as a user's would be
    own_trained = spacy.load(tmp_path / "own" / "model-last")
    sources = own_trained.get_pipe("bertram").word_sources
    assert sources.contexts_for(own_trained.make_doc("a kumquat"), "kumquat", [1]) == [
        "A kumquat is a small orange citrus fruit.",
        "Kumquats are eaten whole.",
    ]
    assert own_trained("a kumquat")._.bertram


#: What configs/textcat_minilm_bertram.cfg sets apart from the factory's defaults, each on purpose and said so in
#: a comment above it there: the encoder the model was trained for (the default reads it from the model).
EXAMPLE_CONFIG_SETS = {"model.base_model": "default"}


def flat_settings(section: dict, prefix: str = "") -> dict:
    """{"model.token_budget": 4096, ...}: a config section's settings by dotted name."""
    flat = {}
    for key, value in section.items():
        flat.update(flat_settings(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value})
    return flat


def bertram_factory_defaults() -> dict:
    """The factory's default config, then the defaults of the functions it names (unset there: theirs)."""
    import inspect

    from spacy_bertram.architectures import Bertram_v1
    from spacy_bertram.pipeline.component import DEFAULT_CONFIG
    from spacy_bertram.architectures import make_rare_word_rule

    defaults = {
        f"{section}.{name}": parameter.default
        for section, function in (("model", Bertram_v1), ("rare_words", make_rare_word_rule))
        for name, parameter in inspect.signature(function).parameters.items()
    }
    return {**defaults, **flat_settings(DEFAULT_CONFIG["bertram"])}


def test_the_example_configs_bertram_settings_are_the_factory_defaults():
    """The example a user copies gets the rule the docs describe (2+ wordpieces), not another one."""
    from thinc.api import Config

    path = ROOT / "configs" / "textcat_minilm_bertram.cfg"
    settings = flat_settings(Config().from_disk(path)["components"]["bertram"])  # [paths] interpolated: null
    settings.pop("factory")
    defaults = bertram_factory_defaults()
    assert defaults["rare_words.min_wordpieces"] == 2 and defaults["model.token_budget"] == 4096
    differing = {key: value for key, value in settings.items() if value != defaults[key]}
    assert differing == EXAMPLE_CONFIG_SETS
    lines = path.read_text(encoding="utf8").splitlines()
    for key in EXAMPLE_CONFIG_SETS:  # each explained where it is set
        at = next(i for i, line in enumerate(lines) if line.startswith(f"{key.split('.')[-1]} = "))
        assert lines[at - 1].startswith("#"), key
    ner = Config().from_disk(ROOT / "configs" / "ner_minilm_bertram.cfg")["components"]["bertram"]
    assert "rare_words" not in ner  # the NER config keeps the factory's rule


def test_the_component_and_its_parts_default_to_the_factory_config():
    """One default per setting: a component or WordSources built in Python behaves as the factory's."""
    import inspect

    from spacy_bertram.pipeline.component import DEFAULT_CONFIG, make_bertram
    from spacy_bertram.pipeline.vector_cache import VectorCache
    from spacy_bertram.pipeline.word_sources import WordSources

    factory = DEFAULT_CONFIG["bertram"]
    for function in (BertramComponent.__init__, WordSources.__init__, make_bertram):
        defaults = {
            name: parameter.default
            for name, parameter in inspect.signature(function).parameters.items()
            if parameter.default is not inspect.Parameter.empty
        }
        shared = [name for name in defaults if name in factory]
        assert "contexts" in shared or function is make_bertram, function.__qualname__
        assert {name: defaults[name] for name in shared} == {name: factory[name] for name in shared}, shared
    assert inspect.signature(VectorCache).parameters["max_size"].default == factory["cache_size"]


def test_encoder_path_resolves_default():
    from spacy.util import registry

    from spacy_bertram.model.encoder import default_base_model_path

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


# -- 2. network settings: read from the trained model, never silently replaced -------------


@pytest.mark.parametrize(
    "key, value", [("mode", "form"), ("use_subword_mean", False), ("max_seq_length", 64), ("max_contexts", 3)]
)
def test_model_settings_that_contradict_the_trained_model_are_refused(
    encoder_bertram_dir, tiny_encoder_path, key, value
):  # noqa: F811
    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config=bertram_config(encoder_bertram_dir, tiny_encoder_path, **{key: value}))
    with pytest.raises(ValueError, match=f"sets {key} = {value!r}, but the trained BERTRAM model .* has {key} = "):
        nlp.initialize()


def test_another_base_model_is_refused(encoder_bertram_dir, tiny_encoder_path, tiny_bert_path, tiny_roberta_path):  # noqa: F811
    other = tiny_roberta_path if tiny_encoder_path == tiny_bert_path else tiny_bert_path
    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config=bertram_config(encoder_bertram_dir, other))
    named = rf"\[E036\].*sets base_model = .*{Path(other).name}.*has base_model = .*{Path(tiny_encoder_path).name}"
    with pytest.raises(ValueError, match=named):
        nlp.initialize()


def test_the_saved_config_says_where_settings_come_from(encoder_bertram_dir, tiny_encoder_path, tmp_path):  # noqa: F811
    nlp = make_nlp(encoder_bertram_dir, tiny_encoder_path)
    nlp.to_disk(tmp_path / "p")
    saved = spacy.util.load_config(tmp_path / "p" / "config.cfg")["components"]["bertram"]["model"]
    # null: read from the trained model (config.json), which is what runs
    assert [saved[k] for k in ("mode", "use_subword_mean", "max_seq_length", "max_contexts")] == [None] * 4
    with pytest.raises(ValueError, match="sets mode = 'form'.*serialized weights.*has mode = 'inplace'"):
        spacy.load(tmp_path / "p", config={"components": {"bertram": {"model": {"mode": "form"}}}})


def test_infer_refuses_a_string_for_the_contexts(encoder_bertram_dir, tiny_encoder_path):  # noqa: F811
    pipe = make_nlp(encoder_bertram_dir, tiny_encoder_path).get_pipe("bertram")
    with pytest.raises(TypeError, match=r"\[E016\].*item 0 \('kumquat'\): the contexts must be a list of strings"):
        infer_vectors(pipe.model, [("kumquat", "a sentence")])


@pytest.fixture(scope="module")
def nlp_trf(encoder_bertram_dir, tiny_encoder_path):  # noqa: F811
    return make_nlp(encoder_bertram_dir, tiny_encoder_path, transformer=tiny_encoder_path, contexts="doc")


def test_empty_and_whitespace_docs(nlp_trf):
    docs = list(nlp_trf.pipe(["", "   ", "\n\t ", "a kumquat", ""]))
    assert [d._.bertram for d in docs[:3]] == [{}, {}, {}] and list(docs[3]._.bertram) == [1]
    assert nlp_trf("")._.bertram == {} and nlp_trf(" ")._.bertram == {}


def test_a_5000_word_doc(nlp_trf):
    rng = random.Random(0)
    words = [rng.choice(TINY_WORDS[:40]) for _ in range(5000)]
    for position in range(0, 5000, 500):
        words[position] = "kumquat"
    words[4999] = "tarantula"
    doc = nlp_trf(" ".join(words))
    assert len(doc) == 5000 and doc._.trf_data is not None
    vectors = doc._.bertram
    assert sorted(vectors) == list(range(0, 5000, 500)) + [4999]
    assert all(vectors[i] is vectors[0] for i in range(0, 5000, 500))


def test_the_same_rare_word_50_times(nlp_trf, monkeypatch):
    pipe = nlp_trf.get_pipe("bertram")
    items: list = []
    monkeypatch.setattr(
        component_module, "infer_vectors", lambda model, batch: items.extend(batch) or infer_vectors(model, batch)
    )
    doc = nlp_trf(" ".join(f"the quokka ate fruit {i} ." for i in range(50)))  # distinct windows around each
    assert len(doc._.bertram) == 50 and len({id(v) for v in doc._.bertram.values()}) == 1
    assert len(items) == 1 and items[0][0] == "quokka" and len(items[0][1]) == pipe.word_sources.contexts_per_word


def test_emoji_and_non_latin_words(nlp_trf, encoder_bertram_dir, minilm_path, tmp_path):  # noqa: F811
    text = "A kumquat 😀 in 東京 and привет , ok 🍊🍊"
    doc = nlp_trf(text)
    if is_bpe_tokenizer(nlp_trf.get_pipe("transformer").model.tokenizer):
        # Byte-level BPE spells any script in byte pieces: alphabetic non-Latin words get vectors, emoji never.
        assert [doc[i].text for i in doc._.bertram] == ["kumquat", "東京", "привет"]
    else:  # The tiny WordPiece encoder knows nothing of these scripts: no vector, stock [UNK] kept (documented).
        assert [doc[i].text for i in doc._.bertram] == ["kumquat"]
    model = make_bertram_dir(tmp_path / "m", "default")
    minilm = make_nlp(model, "default", transformer=minilm_path)
    doc = minilm(text)
    # The MiniLM has wordpieces for them: alphabetic non-Latin words get vectors, emoji never.
    assert {doc[i].text for i in doc._.bertram} == {"kumquat", "東京", "привет"}
    assert all(numpy.isfinite(v).all() for v in doc._.bertram.values())


def test_missing_or_corrupt_model_paths(encoder_bertram_dir, tiny_encoder_path, tmp_path):  # noqa: F811
    with pytest.raises(ValueError, match=r"\[E034\].*nowhere.*not a directory"):
        make_nlp(str(tmp_path / "nowhere"), tiny_encoder_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"\[E034\].*missing config.json"):
        make_nlp(str(tmp_path / "empty"), tiny_encoder_path)
    broken = tmp_path / "broken"
    shutil.copytree(encoder_bertram_dir, broken)
    (broken / "weights.safetensors").write_bytes(b"\x00garbage")
    with pytest.raises(ValueError, match=r"\[E034\].*Corrupt BERTRAM weights"):
        make_nlp(str(broken), tiny_encoder_path)
    (broken / "config.json").write_text("{", encoding="utf8")
    with pytest.raises(ValueError, match=r"\[E034\].*Corrupt BERTRAM config"):
        make_nlp(str(broken), tiny_encoder_path)
    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config={"model": {"base_model": tiny_encoder_path}})
    with pytest.raises(ValueError, match=r"\[E154\].*no trained BERTRAM model"):
        nlp("a kumquat")


def test_non_finite_vectors_are_refused(encoder_bertram_dir, tiny_encoder_path):  # noqa: F811
    nlp = make_nlp(encoder_bertram_dir, tiny_encoder_path)
    network = get_bertram_network(nlp.get_pipe("bertram").model)
    with torch.no_grad():
        network.projection.weight.fill_(float("nan"))
        network.form_gate.bias.fill_(float("nan"))
    with pytest.raises(ValueError, match=r"\[E155\] The BERTRAM model produced non-finite vectors for \['kumquat'\]"):
        nlp("a kumquat")
