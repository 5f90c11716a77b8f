"""The `contexts` setting: registered sources (built-in and a user's own), the string shorthand, order, limits,
and named errors."""

from __future__ import annotations

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from spacy.util import registry
from spacy.vocab import Vocab

from spacy_bertram.pipeline.context_sources import LazyStore, StoreContexts, chain_contexts, contexts_from_spec
from spacy_bertram.pipeline.word_sources import WordSources
from spacy_bertram.rarity.rare_words import RareWordRule
from spacy_bertram.training.text_store import add_texts

from tests.util import context_store_of, corpus_lines, damage_middle, make_nlp


def kinds(chain) -> list:
    """What a parsed shorthand built: each source's class and limit, in order."""
    return [(type(source).__name__, source.limit) for source in chain.sources]


def test_none_means_the_form_alone():
    chain = contexts_from_spec("none")
    assert chain.sources == () and chain.key == "none"


def test_the_shorthand_builds_the_registered_sources_in_order_with_their_settings():
    chain = contexts_from_spec("dictionary:2+doc", dictionary_store="d.sqlite", window=3)
    assert kinds(chain) == [("DictionaryContexts", 2), ("DocContexts", None)]
    assert chain.sources[0].store.path == "d.sqlite" and chain.sources[1].window == 3
    assert contexts_from_spec(" store:4 + dictionary ").key == "store:4+dictionary"
    assert contexts_from_spec("both").key == "doc+store"
    assert type(contexts_from_spec("doc").sources[0]) is type(
        registry.resolve({"x": {"@context_sources": "spacy-bertram.doc_contexts.v1"}})["x"]
    )  # the registered class itself


def settings(value):
    """A source as comparable values: its class and public attributes, the sources it holds alike, a store by its
    kind and path (its `setting`, which names where the path was configured in the store's errors, left out)."""
    if isinstance(value, LazyStore):
        return "LazyStore", value.kind, value.path
    if isinstance(value, (list, tuple)):
        return [settings(item) for item in value]
    if not hasattr(value, "__dict__"):
        return value
    return type(value).__name__, {name: settings(item) for name, item in vars(value).items() if name[0] != "_"}


def test_the_shorthand_is_the_registered_config_it_stands_for():
    config = {
        "@context_sources": "spacy-bertram.chained_contexts.v1",
        "*": {
            "doc": {"@context_sources": "spacy-bertram.doc_contexts.v1", "window": 3},
            "store": {"@context_sources": "spacy-bertram.store_contexts.v1", "path": "c.sqlite", "limit": 2},
            "dictionary": {"@context_sources": "spacy-bertram.dictionary_contexts.v1", "path": "d.sqlite", "limit": 1},
            "memory": {"@context_sources": "spacy-bertram.memory_contexts.v1", "window": 3, "limit": 4},
        },
    }
    registered = registry.resolve({"x": config})["x"]
    shorthand = contexts_from_spec(
        "doc+store:2+dictionary:1+memory:4", context_store="c.sqlite", dictionary_store="d.sqlite", window=3
    )
    assert settings(shorthand) == settings(registered)
    assert shorthand.key == registered.key == "doc+store:2+dictionary:1+memory:4"
    assert [s.store.setting for s in shorthand.sources[1:3]] == ["context_store", "dictionary_store"]
    assert [s.store.setting for s in registered.sources[1:3]] == ["contexts.path", "contexts.path"]


@pytest.mark.parametrize(
    "spec,message",
    [
        ("web", "unknown source 'web'"),
        ("", "must name sources"),
        ("doc+doc", "names 'doc' twice"),
        ("dictionary:0", "from 1 to 10,000, got '0'"),
        ("store:x", "got 'x'"),
    ],
)
def test_bad_settings_are_named(spec, message):
    with pytest.raises(ValueError, match=message):
        contexts_from_spec(spec)


def test_each_source_needs_its_path():
    WordSources(RareWordRule(), "en", contexts="doc").check_paths()
    with pytest.raises(ValueError, match=r"\[E109\].*reads a store whose path \(context_store\) is not given"):
        WordSources(RareWordRule(), "en", contexts="store+dictionary", dictionary_store="d.sqlite").check_paths()
    pathless = StoreContexts(LazyStore(None, "context", "contexts.path"))  # a source built in code, path not given
    with pytest.raises(ValueError, match=r"\[E109\] contexts='store' .*\(contexts.path\)"):
        WordSources(RareWordRule(), "en", contexts=pathless).check_paths()
    with pytest.raises(ValueError, match=r"\[E108\].*frequencies='store' needs a context_store path"):
        WordSources(RareWordRule(frequencies="store"), "en", contexts="doc").check_paths()


def test_setting_the_window_changes_what_every_doc_source_reads():
    """One way for the window: the component's context_window is the window its doc sources hold, registered
    or built from the shorthand; setting it changes what they read."""
    doc = spacy.blank("en")("one two three four kumquat six seven eight nine")
    registered = registry.resolve({"x": {"@context_sources": "spacy-bertram.doc_contexts.v1", "window": 1}})["x"]
    for contexts in (registered, "doc"):
        words = WordSources(RareWordRule(), "en", contexts=contexts, context_window=1)
        assert words.context_window == 1 and words.contexts_for(doc, "kumquat", [4]) == ["four kumquat six"]
        words.context_window = 2
        assert words.contexts_for(doc, "kumquat", [4]) == ["three four kumquat six seven"]
    assert registered.window == 2  # the source itself holds it
    assert WordSources(RareWordRule(), "en", contexts="store", context_store="c.sqlite").context_window is None


def test_chained_contexts_take_each_group_up_to_its_limit_distinct_and_up_to_the_total():
    groups = [(["a", "b", "c"], 2), (["b", "d", "e", "f"], None), (["g"], 1)]
    assert chain_contexts(groups) == ["a", "b", "d", "e", "f", "g"]
    assert chain_contexts(groups, total=4) == ["a", "b", "d", "e"]
    assert chain_contexts([(["a", "a", "b"], 2)]) == ["a", "b"]  # a repeat takes no place of the limit

    def never():
        raise AssertionError("a source after the cap was asked")
        yield

    assert chain_contexts(iter([(["a", "b"], None), (never(), None)]), total=2) == ["a", "b"]


# -- registered sources --------------------------------------------------------------------


@spacy.registry.context_sources("test.toy_contexts.v1")
def toy_contexts(template: str = "{word} grows in the garden."):
    """A user's own source: one made-up sentence per word."""

    def contexts(doc, word, indices, limit):
        return [template.format(word=word)][:limit]

    contexts.key = "toy"
    return contexts


def test_a_config_can_register_its_own_context_source(bertram_dir, tiny_bert_path):
    nlp = make_nlp(
        bertram_dir,
        tiny_bert_path,
        contexts={"@context_sources": "test.toy_contexts.v1", "template": "A {word} is a fruit."},
    )
    pipe = nlp.get_pipe("bertram")
    doc = nlp("We ate a kumquat.")
    assert pipe.word_sources.contexts_for(doc, "kumquat", [3]) == ["A kumquat is a fruit."]
    assert 3 in doc._.bertram and {key[1] for key in pipe.cache._entries} == {"toy"}  # named in the cache key
    assert nlp.config["components"]["bertram"]["contexts"]["@context_sources"] == "test.toy_contexts.v1"
    plain = make_nlp(bertram_dir, tiny_bert_path, contexts="none")
    assert not numpy.array_equal(plain("We ate a kumquat.")._.bertram[3], doc._.bertram[3])  # the source was read


def test_a_plain_function_is_a_source_named_by_its_function(bertram_dir, tiny_bert_path):
    def fruit(doc, word, indices, limit):
        return [f"{word} is sweet."]

    words = WordSources(RareWordRule(), "en", contexts=fruit)
    assert words.source.endswith("fruit") and words.contexts_for(Doc(Vocab(), ["a"]), "kumquat", [0]) == [
        "kumquat is sweet."
    ]
    with pytest.raises(ValueError, match=r"\[E165\] A context source must be callable"):
        WordSources(RareWordRule(), "en", contexts=42)


def test_registered_sources_give_what_the_shorthand_gives(bertram_dir, tiny_bert_path, store_and_definitions):
    store, definitions = store_and_definitions
    chain = {
        "@context_sources": "spacy-bertram.chained_contexts.v1",
        "*": {
            "doc": {"@context_sources": "spacy-bertram.doc_contexts.v1", "window": 3},
            "store": {"@context_sources": "spacy-bertram.store_contexts.v1", "path": store, "limit": 2},
            "dictionary": {"@context_sources": "spacy-bertram.dictionary_contexts.v1", "path": definitions, "limit": 1},
        },
    }
    registered = make_nlp(bertram_dir, tiny_bert_path, contexts=chain, contexts_per_word=5)
    shorthand = make_nlp(
        bertram_dir,
        tiny_bert_path,
        contexts="doc+store:2+dictionary:1",
        context_store=store,
        dictionary_store=definitions,
        context_window=3,
        contexts_per_word=5,
    )
    doc = spacy.blank("en")("We ate a kumquat at the farm.")
    texts = registered.get_pipe("bertram").word_sources.contexts_for(doc, "kumquat", [3])
    assert texts == shorthand.get_pipe("bertram").word_sources.contexts_for(doc, "kumquat", [3])
    assert texts[0] == "We ate a kumquat at the farm" and len(texts) == 4 and texts[-1].startswith("kumquat: ")
    assert registered.get_pipe("bertram").word_sources.source == "doc+store:2+dictionary:1"
    assert registered.get_pipe("bertram").word_sources.context_store == store


def test_a_registered_store_that_will_not_open_is_named(bertram_dir, tiny_bert_path, tmp_path):
    source = {"@context_sources": "spacy-bertram.store_contexts.v1", "path": str(tmp_path / "gone.sqlite")}
    with pytest.raises(ValueError, match=r"\[E153\] Cannot open the context store .*gone.sqlite.*contexts.path"):
        make_nlp(bertram_dir, tiny_bert_path, contexts=source)
    with pytest.raises(ValueError, match=r"\[E106\]"):
        make_nlp(
            bertram_dir, tiny_bert_path, contexts={"@context_sources": "spacy-bertram.doc_contexts.v1", "limit": 0}
        )


@pytest.fixture()
def store_and_definitions(tmp_path):
    from spacy_bertram.dictionary.store import write_definition_store

    store = context_store_of(tmp_path, [f"the farmer {i} sold a kumquat at the market" for i in range(4)])
    definitions = write_definition_store(tmp_path / "d.sqlite", {"kumquat": [("gcide", "kumquat: a fruit.", 0, 7)]})
    return str(store), str(definitions)


@spacy.registry.context_sources("test.counting_contexts.v1")
def counting_contexts():
    """A broken source: a count where the texts belong."""
    return lambda doc, word, indices, limit: 3


def test_bad_source_arguments_and_results_are_named(bertram_dir, tiny_bert_path):
    """A window of 0 names the source's own setting; a source that returns no list of texts is E167, alone or
    in a chain; a chain of no sources is refused by spaCy's config system, and the form alone is "none"."""
    with pytest.raises(
        ValueError,
        match=r"\[E052\] the window of spacy-bertram.doc_contexts.v1 must be a whole "
        r"number from 1 to 1,000, got 0",
    ):
        make_nlp(
            bertram_dir, tiny_bert_path, contexts={"@context_sources": "spacy-bertram.doc_contexts.v1", "window": 0}
        )
    nlp = make_nlp(bertram_dir, tiny_bert_path, contexts={"@context_sources": "test.counting_contexts.v1"})
    with pytest.raises(
        ValueError,
        match=r"\[E167\] The context source .*counting_contexts.* returned 3 for the "
        r"word 'kumquat': a context source returns a list of context strings",
    ):
        nlp("We ate a kumquat.")
    chained = make_nlp(
        bertram_dir,
        tiny_bert_path,
        contexts={
            "@context_sources": "spacy-bertram.chained_contexts.v1",
            "*": {"bad": {"@context_sources": "test.counting_contexts.v1"}},
        },
    )
    with pytest.raises(ValueError, match=r"\[E167\].* returned 3 for the word 'kumquat'"):
        chained("We ate a kumquat.")
    words = WordSources(RareWordRule(), "en", contexts=lambda doc, word, indices, limit: ["fine", 7])
    with pytest.raises(ValueError, match=r"\[E167\].* returned \['fine', 7\]"):
        words.contexts_for(Doc(Vocab(), ["a"]), "kumquat", [0])
    with pytest.raises(Exception, match=r"missing required argument: 'sources'"):
        make_nlp(bertram_dir, tiny_bert_path, contexts={"@context_sources": "spacy-bertram.chained_contexts.v1"})
    assert (
        make_nlp(bertram_dir, tiny_bert_path, contexts="none")
        .get_pipe("bertram")
        .word_sources.contexts_for(Doc(Vocab(), ["a"]), "kumquat", [0])
        == []
    )


def test_an_in_domain_store_of_texts_comes_before_a_general_store(bertram_dir, tiny_bert_path, tmp_path):
    """Two stores of texts (`texts-store`) chained: the user's own contexts first, each store within its own
    limit, the general store filling up to contexts_per_word, a context both hold taken once."""
    shared = "We bought a kumquat and a durian at the market."
    indomain = [f"Our lab note {i}: the kumquat sample {i} was sour." for i in range(5)] + [shared]
    general = [f"A general text {i} on the kumquat and the durian." for i in range(6)] + [shared]
    general += [f"The quince {i} is a hard fruit." for i in range(4)]
    add_texts(tmp_path / "indomain.sqlite", indomain, progress=False)
    add_texts(tmp_path / "general.sqlite", general, progress=False)

    def store(name: str, limit):
        source = {"@context_sources": "spacy-bertram.store_contexts.v1", "path": str(tmp_path / f"{name}.sqlite")}
        return {**source, "limit": limit} if limit else source

    def contexts_of(limits, per_word):
        chain = {
            "@context_sources": "spacy-bertram.chained_contexts.v1",
            "*": {"indomain": store("indomain", limits[0]), "general": store("general", limits[1])},
        }
        nlp = make_nlp(bertram_dir, tiny_bert_path, contexts=chain, contexts_per_word=per_word)
        sources = nlp.get_pipe("bertram").word_sources
        assert sources.context_store == str(tmp_path / "indomain.sqlite")  # the first store read
        doc = spacy.blank("en")("A kumquat, a durian and a quince.")
        return {
            word: sources.contexts_for(doc, word, [i]) for i, word in [(1, "kumquat"), (4, "durian"), (7, "quince")]
        }

    def own(text: str) -> bool:  # a context is cut from word to word: no final full stop
        return any(text in line for line in indomain)

    def other(text: str) -> bool:
        return any(text in line for line in general)

    got = contexts_of((3, 3), 8)
    assert [own(text) for text in got["kumquat"]] == [True] * 3 + [False] * 3  # 3 of 6 own, then 3 of 7 general
    assert all(other(text) for text in got["kumquat"][3:])
    assert got["durian"][0] == shared[:-1] and len(got["durian"]) == 4  # its one own context, then 3 general ones
    assert got["durian"].count(shared[:-1]) == 1 and all(other(text) for text in got["durian"])
    assert len(got["quince"]) == 3 and all(text.startswith("The quince") for text in got["quince"])
    got = contexts_of((3, None), 5)  # the general store without a limit of its own fills up to contexts_per_word
    assert [own(text) for text in got["kumquat"]] == [True] * 3 + [False] * 2
    assert len(got["durian"]) == 5 and got["durian"][0] == shared[:-1]
    assert len(got["quince"]) == 4  # all it has


def test_a_store_damaged_in_the_middle_is_refused_at_initialize_naming_the_file(bertram_dir, tiny_bert_path, tmp_path):
    """The component with contexts = "store" on a store with 4 KB overwritten in the middle served vectors, with
    no warning: now it is refused when the store is opened, the file named, before any doc."""
    store = context_store_of(tmp_path, corpus_lines(600))
    damage_middle(store)
    with pytest.raises(ValueError, match=r"\[E187\] The context store .*c\.sqlite cannot be read whole") as err:
        make_nlp(bertram_dir, tiny_bert_path, contexts="store", context_store=str(store))
    assert "E153" not in str(err.value)  # no hint of a moved store: the file is there, and damaged
