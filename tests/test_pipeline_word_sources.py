"""pipeline/word_sources.py: contexts from the doc, a store, dictionary definitions, in order and with limits;
the component's `word_sources` object and the settings it reads through the component."""

from __future__ import annotations

import os
import warnings

import numpy
import pytest
import spacy

import spacy_bertram.pipeline.component  # noqa: F401  (registers the factory until the entry point is installed)
from spacy_bertram.rarity.frequencies import CountTable
from spacy_bertram.pipeline.context_sources import spread
from spacy_bertram.pipeline.word_sources import STORE_KEY, WordSources
from spacy_bertram.rarity.rare_words import RareWordRule

from tests.util import TEXT, context_store_of, make_bertram_dir, make_nlp, same_vectors


# -- rarity --------------------------------------------------------------------------


def test_rare_tokens_are_the_tokens_that_get_vectors(bertram_dir, tiny_bert_path):
    nlp = make_nlp(bertram_dir, tiny_bert_path)
    pipe = nlp.get_pipe("bertram")
    doc = nlp.make_doc(TEXT)
    rare = pipe.rare_tokens(doc)
    assert [doc[i].text for i in rare] == ["kumquat", "kumquat"]
    assert rare == sorted(nlp(TEXT)._.bertram)
    assert pipe.rare_tokens(nlp.make_doc("the farmer ran to the market")) == []


# -- contexts --------------------------------------------------------------------------


def test_doc_contexts_are_sentences_or_windows(bertram_dir, tiny_bert_path):
    nlp = make_nlp(bertram_dir, tiny_bert_path, sentencizer=True, contexts="doc")
    pipe = nlp.get_pipe("bertram")
    doc = nlp(TEXT + " Nothing else here.")
    indices = [t.i for t in doc if t.text == "kumquat"]
    assert pipe.word_sources.contexts_for(doc, "kumquat", indices) == [s.text for s in list(doc.sents)[:2]]
    plain = spacy.blank("en")(TEXT)  # no sentence boundaries: a token window
    pipe.word_sources.context_window = 2  # a setting of the component's word_sources, set there
    assert pipe.word_sources.context_window == 2
    assert pipe.word_sources.contexts_for(plain, "kumquat", [1]) == ["The kumquat grows in"]
    assert spread(list("abcdefghij"), 4) == ["a", "d", "g", "j"] and spread(["a"], 3) == ["a"]


def test_word_sources_stand_alone_with_their_declared_settings(tmp_path):
    """Built from its settings alone (no component, no model): contexts of the doc, the named errors."""
    words = WordSources(RareWordRule(), "en", contexts="doc:2", contexts_per_word=3, context_window=1)
    doc = spacy.blank("en")("A kumquat here. Then another kumquat there and a kumquat again.")
    assert words.source == "doc:2" and words.context_store is None
    assert words.contexts_for(doc, "kumquat", [1, 6, 10]) == ["A kumquat here", "a kumquat again"]
    assert WordSources(RareWordRule(), "en", contexts="none").contexts_for(doc, "kumquat", [1]) == []
    with pytest.raises(ValueError, match=r"\[E052\] context_window must be a whole number from 1 to 1,000, got 0"):
        WordSources(RareWordRule(), "en", context_window=0)
    with pytest.raises(ValueError, match=r"\[E052\] contexts_per_word must be a whole number from 1 to 10,000, got -2"):
        WordSources(RareWordRule(), "en", contexts_per_word=-2)
    with pytest.raises(ValueError, match=r"\[E052\] context_window must be .* got 0"):
        words.context_window = 0
    # A store setting still empty is refused when the stores are needed (initialize, a load, the first doc),
    # not when the settings are read: a config whose ${paths.context_store} is null must fill and validate.
    by_store = WordSources(RareWordRule(frequencies="store"), "en")
    with pytest.raises(ValueError, match=r"\[E108\].*frequencies='store' needs a context_store"):
        by_store.check_paths()
    stored = WordSources(RareWordRule(), "en", contexts="doc+store")
    with pytest.raises(ValueError, match=r"\[E109\] contexts='doc\+store' reads a store whose path \(context_store\)"):
        stored.open_stores()
    stored.context_store = str(tmp_path / "given-later.sqlite")
    stored.check_paths()  # given after construction: accepted


def test_a_missing_store_path_quotes_contexts_as_written():
    with pytest.raises(ValueError, match=r"\[E109\] contexts='both' reads a store whose path \(context_store\)"):
        WordSources(RareWordRule(), "en", contexts="both").open_stores()


def test_context_window_without_doc_contexts_is_refused(bertram_dir, tiny_bert_path):
    """No doc source reads a window, and contexts are not switched on later: setting one names the way to."""
    pipe = make_nlp(bertram_dir, tiny_bert_path).get_pipe("bertram")  # contexts = "none", the default
    with pytest.raises(
        ValueError,
        match=r"\[E168\] 'bertram' reads contexts='none', which takes nothing from the "
        r"doc.*contexts = \"doc\".*context_window = 5 in the config",
    ):
        pipe.word_sources.context_window = 5
    assert pipe.word_sources.context_window is None
    store_only = WordSources(RareWordRule(), "en", name="mine", contexts="store:3", context_store="c.sqlite")
    with pytest.raises(ValueError, match=r"\[E168\] 'mine' reads contexts='store:3'"):
        store_only.context_window = 5
    mixed = WordSources(RareWordRule(), "en", contexts="store+doc", context_store="c.sqlite")
    mixed.context_window = 5  # a mix with the doc: its doc source takes it
    assert mixed.context_window == 5


def test_the_store_path_saved_relative_to_the_pipeline_is_found_again(tmp_path):
    (tmp_path / "a").mkdir()
    store = tmp_path / "a" / "c.sqlite"
    store.write_bytes(b"")
    words = WordSources(RareWordRule(), "en", contexts="store", context_store=str(store))
    saved = words.saved_store((tmp_path / "a").resolve())
    assert saved == {STORE_KEY: "c.sqlite"}
    assert WordSources(RareWordRule(), "en").saved_store(tmp_path) == {}  # no store, no entry
    words.relocate_store(tmp_path / "a", saved)  # the configured path is there: kept
    assert words.context_store == str(store) and words.store_hint is None
    (tmp_path / "a").rename(tmp_path / "b")
    words.relocate_store(tmp_path / "b", saved)
    assert words.context_store == str((tmp_path / "b" / "c.sqlite").resolve())
    assert "saved at 'c.sqlite' relative to the pipeline" in words.store_hint
    gone = WordSources(RareWordRule(), "en", contexts="store", context_store=str(tmp_path / "gone.sqlite"))
    gone.relocate_store(tmp_path / "a", saved)  # neither place has it: the setting stays, the hint says where
    assert gone.context_store == str(tmp_path / "gone.sqlite") and "'c.sqlite'" in gone.store_hint


def test_contexts_from_a_store(bertram_dir, tiny_bert_path, tmp_path):
    lines = [f"the farmer {i} sold a kumquat at the market" for i in range(6)] + ["a quokka ate fruit"]
    store = context_store_of(tmp_path, lines)
    both = make_nlp(bertram_dir, tiny_bert_path, contexts="both", context_store=str(store), contexts_per_word=3)
    doc = spacy.blank("en")("A kumquat is sweet.")
    texts = both.get_pipe("bertram").word_sources.contexts_for(doc, "kumquat", [1])
    assert len(texts) == 3 and texts[0] == "A kumquat is sweet." and "kumquat" in texts[1]
    only = make_nlp(bertram_dir, tiny_bert_path, contexts="store", context_store=str(store), contexts_per_word=3)
    assert all("market" in t for t in only.get_pipe("bertram").word_sources.contexts_for(doc, "kumquat", [1]))
    a, b = only("A kumquat is sweet."), only("Sour kumquat!")
    assert numpy.array_equal(a._.bertram[1], b._.bertram[1])  # store contexts: same vector everywhere
    assert only.get_pipe("bertram").cache.hits == 1
    only.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")  # the store is referenced by path, from the config
    loaded.get_pipe("bertram").cache.clear()
    assert same_vectors(loaded("Sour kumquat!"), b) and loaded.get_pipe("bertram").cache.misses == 1
    by_store = make_nlp(
        bertram_dir, tiny_bert_path, context_store=str(store), rare_words={"frequencies": "store", "max_zipf": 7.5}
    )
    doc = by_store("the quokka sold tarantulas")  # store counts: quokka rare, "sold" and "the" not
    assert [doc[i].text for i in doc._.bertram] == ["quokka", "tarantulas"]


@pytest.mark.filterwarnings(r"ignore:.*\[W002\]")  # the models ship no counts.tsv
def test_a_cased_store_is_refused_for_a_model_that_ignores_case_and_a_lowercased_one_serves_a_cased_model(
    tiny_bert_path, tiny_roberta_path, tmp_path
):
    """A --cased texts-store read by a model that ignores case (lowercased n-grams, an uncased encoder) silently
    gave no contexts: the component asks for "quokka", the store holds "Quokka". Refused at initialize and by
    `vectors`, before any work (E193, naming the store and what to do). The reverse is served: a lowercased store
    lowercases the lookups of a cased model's "Quokka"."""
    from spacy_bertram import build_vector_table, load_bertram
    from spacy_bertram.pipeline.word_sources import word_key_function
    from spacy_bertram.training.text_store import add_texts

    texts = ["Quokka smiled at the camera.", "Quokka lives on Rottnest Island.", "Quokka stole a sandwich."]
    cased, lowered = tmp_path / "cased.sqlite", tmp_path / "lowered.sqlite"
    add_texts(cased, texts, lowercase=False, progress=False)
    add_texts(lowered, texts, progress=False)
    uncased_model = make_bertram_dir(tmp_path / "uncased", tiny_bert_path, lowercase=True)
    cased_model = make_bertram_dir(tmp_path / "cased", tiny_roberta_path)
    assert word_key_function(load_bertram(uncased_model)) is str.lower
    assert word_key_function(load_bertram(cased_model)) is str
    for contexts in ("store", "doc+store"):
        with pytest.raises(ValueError, match=r"\[E193\] context_store '.*cased\.sqlite' is a cased context store"):
            make_nlp(uncased_model, tiny_bert_path, contexts=contexts, context_store=str(cased))
    with pytest.raises(ValueError, match=r"\[E193\] STORE .* Build the store again without --cased"):
        build_vector_table(uncased_model, cased, tmp_path / "table", workers=0, progress=False)
    with pytest.raises(ValueError, match=r"\[E193\] --then-store '.*cased\.sqlite'"):
        build_vector_table(uncased_model, lowered, tmp_path / "table", then_stores=[cased], workers=0, progress=False)
    assert not (tmp_path / "table").exists()
    contexts = [text.rstrip(".") for text in texts]  # cut from word to word, as written
    nlp = make_nlp(uncased_model, tiny_bert_path, contexts="store", context_store=str(lowered))
    doc = nlp.make_doc("Quokka!")
    assert nlp.get_pipe("bertram").word_sources.contexts_for(doc, "quokka", [0]) == contexts
    nlp = make_nlp(cased_model, tiny_roberta_path, contexts="store", context_store=str(lowered))
    assert nlp.get_pipe("bertram").word_sources.contexts_for(doc, "Quokka", [0]) == contexts
    nlp = make_nlp(cased_model, tiny_roberta_path, contexts="store", context_store=str(cased))  # cased for cased
    assert nlp.get_pipe("bertram").word_sources.contexts_for(doc, "Quokka", [0]) == contexts


def test_context_store_problems(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    with pytest.raises(ValueError, match=r"\[E109\].*path \(context_store\) is not given"):
        make_nlp(bertram_dir, tiny_bert_path, contexts="store")
    with pytest.raises(ValueError, match=r"\[E105\].*unknown source 'web'"):
        make_nlp(bertram_dir, tiny_bert_path, contexts="web")
    # A missing store fails at initialize, not at the first doc with a rare word.
    with pytest.raises(ValueError, match=r"\[E153\] Cannot open the context store .*gone.sqlite.*not found"):
        make_nlp(bertram_dir, tiny_bert_path, contexts="both", context_store=str(tmp_path / "gone.sqlite"))


def test_a_model_without_counts_says_that_rarity_falls_back_to_wordfreq(bertram_dir, tiny_bert_path):
    """A model whose counts.tsv was deleted would silently switch rules under the default 'auto'."""
    with pytest.warns(
        UserWarning,
        match=r"\[W002\].*ships no word counts \(counts.tsv\), so rarity comes from "
        r"wordfreq's frequencies for 'en'",
    ):
        make_nlp(bertram_dir, tiny_bert_path)(TEXT)  # bertram_dir ships no counts.tsv
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet = make_nlp(
            bertram_dir, tiny_bert_path, rare_words={"@misc": "spacy-bertram.RareWords.v1", "frequencies": "wordfreq"}
        )
        quiet(TEXT)
    assert not [w for w in caught if "counts.tsv" in str(w.message)]


def counts_warning(sources: WordSources, table) -> str:
    """The one warning `sources` gives when it reads `table`'s or its store's counts."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sources.frequencies(table)
    (message,) = [str(w.message) for w in caught]
    return message


def test_counts_too_coarse_for_max_zipf_say_what_would_help_with_this_setting(tmp_path):
    """One occurrence in 10 words is Zipf 8.0: with max_zipf 3.0 every seen word is frequent. The message reads
    as a sentence for every source it names, and "auto" is advised only where it would read wordfreq: where
    wordfreq has no list for the language, "auto" is the counts already."""
    table = CountTable({"kumquat": 1, "the": 9})
    store = str(context_store_of(tmp_path, ["the farmer sold a kumquat"] * 2))
    explicit = counts_warning(WordSources(RareWordRule(frequencies="model"), "en"), table)
    assert (
        "[W003] the bertram component's rare_words.frequencies = 'model' reads the BERTRAM model's counts.tsv, "
        "whose smallest Zipf value (one occurrence) is 8.00, not below max_zipf 3.0: every word seen there "
        'counts as frequent and only unseen words as rare. Set rare_words.frequencies = "auto" (wordfreq\'s '
        "'en' frequencies"
    ) in explicit
    auto = counts_warning(WordSources(RareWordRule(), "xx"), table)
    assert (
        "[W016] the bertram component's rare_words.frequencies = 'auto' reads the BERTRAM model's counts.tsv "
        "alone (wordfreq has no frequencies for 'xx'), whose smallest Zipf value (one occurrence) is 8.00, not "
        "below max_zipf 3.0"
    ) in auto
    assert "Raise max_zipf above 8.00" in auto and "count a larger corpus" in auto and '= "auto"' not in auto
    by_store = counts_warning(WordSources(RareWordRule(frequencies="store"), "xx", context_store=store), None)
    assert (
        f"[W016] the bertram component's rare_words.frequencies = 'store' reads the context store {store!r} "
        "alone" in by_store
    )
    assert all("component's the" not in message for message in (explicit, auto, by_store))
    # The advice holds: above the resolution, a word seen once is rare, and nothing is warned about.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        finer = WordSources(RareWordRule(max_zipf=8.5), "xx").frequencies(table)
    assert finer.zipf("kumquat") == pytest.approx(8.0) and finer.zipf("the") > 8.5


# -- dictionary definitions ------------------------------------------------------------


@pytest.fixture()
def definitions(tmp_path):
    from spacy_bertram.dictionary.store import write_definition_store

    entries = {
        "kumquat": [
            ("gcide", "Kumquat: a small sweet orange fruit.", 0, 7),
            ("wordnet", "kumquat: a citrus tree.", 0, 7),
            ("wordnet", "they grow a kumquat tree", 12, 19),
        ]
    }
    return str(write_definition_store(tmp_path / "definitions.sqlite", entries, [("kumquats", "kumquat")]))


def test_definitions_for_an_inflected_form_written_as_in_the_text(bertram_dir, tiny_bert_path, definitions):
    nlp = make_nlp(
        bertram_dir, tiny_bert_path, contexts="doc+dictionary:2", dictionary_store=definitions, sentencizer=True
    )
    pipe = nlp.get_pipe("bertram")
    doc = nlp("Kumquats grow in gardens.")
    assert pipe.word_sources.contexts_for(doc, "kumquats", [0]) == [
        "Kumquats grow in gardens.",
        "Kumquats: a small sweet orange fruit.",
        "Kumquats: a citrus tree.",
    ]
    only = make_nlp(bertram_dir, tiny_bert_path, contexts="dictionary", dictionary_store=definitions)
    assert only.get_pipe("bertram").word_sources.contexts_for(doc, "kumquats", [0])[2] == "they grow a Kumquats tree"


def test_sources_are_read_in_the_order_written_each_up_to_its_limit(bertram_dir, tiny_bert_path, definitions):
    nlp = make_nlp(
        bertram_dir, tiny_bert_path, contexts="dictionary:1+doc", dictionary_store=definitions, contexts_per_word=2
    )
    doc = nlp("A kumquat is sweet.")
    assert nlp.get_pipe("bertram").word_sources.contexts_for(doc, "kumquat", [1]) == [
        "kumquat: a small sweet orange fruit.",
        "A kumquat is sweet.",
    ]


def test_a_word_without_an_entry_falls_back_to_its_other_contexts(bertram_dir, tiny_bert_path, definitions):
    nlp = make_nlp(bertram_dir, tiny_bert_path, contexts="doc+dictionary", dictionary_store=definitions)
    doc = nlp("A quokka is sweet.")
    assert nlp.get_pipe("bertram").word_sources.contexts_for(doc, "quokka", [1]) == ["A quokka is sweet."]
    alone = make_nlp(bertram_dir, tiny_bert_path, contexts="dictionary", dictionary_store=definitions)
    assert alone.get_pipe("bertram").word_sources.contexts_for(doc, "quokka", [1]) == []
    assert 1 in alone("A quokka is sweet.")._.bertram  # its form-only vector, no error


def test_the_cache_key_names_the_sources(bertram_dir, tiny_bert_path, definitions):
    keys = {}
    for contexts in ("doc", "doc+dictionary", "doc+dictionary:1"):
        nlp = make_nlp(bertram_dir, tiny_bert_path, contexts=contexts, dictionary_store=definitions)
        nlp("A quokka and a kumquat.")
        keys[contexts] = {key[:2]: key[2] for key in nlp.get_pipe("bertram").cache._entries}
    assert set(keys["doc+dictionary"]) == {("quokka", "doc+dictionary"), ("kumquat", "doc+dictionary")}
    # no entry: the same contexts as "doc", another key; an entry: other contexts too
    assert keys["doc"][("quokka", "doc")] == keys["doc+dictionary"][("quokka", "doc+dictionary")]
    assert keys["doc"][("kumquat", "doc")] != keys["doc+dictionary"][("kumquat", "doc+dictionary")]
    assert (
        keys["doc+dictionary:1"][("kumquat", "doc+dictionary:1")]
        != keys["doc+dictionary"][("kumquat", "doc+dictionary")]
    )


def test_a_saved_pipeline_refers_to_the_dictionary_by_path(bertram_dir, tiny_bert_path, definitions, tmp_path):
    nlp = make_nlp(bertram_dir, tiny_bert_path, contexts="dictionary", dictionary_store=definitions)
    nlp.to_disk(tmp_path / "pipeline")
    assert not list((tmp_path / "pipeline").rglob("*.sqlite"))  # not shipped
    moved = tmp_path / "elsewhere.sqlite"
    os.replace(definitions, moved)
    with pytest.raises(ValueError, match=r"\[E511\].*cannot open the dictionary_store"):
        spacy.load(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline", config={"components": {"bertram": {"dictionary_store": str(moved)}}})
    sources = loaded.get_pipe("bertram").word_sources
    assert sources.contexts_for(loaded("A kumquat."), "kumquat", [1])[0].startswith("kumquat: ")


def test_dictionary_store_problems(bertram_dir, tiny_bert_path, tmp_path):
    with pytest.raises(ValueError, match=r"\[E109\] contexts='doc\+dictionary' .*\(dictionary_store\) is not given"):
        make_nlp(bertram_dir, tiny_bert_path, contexts="doc+dictionary")
    with pytest.raises(ValueError, match=r"\[E511\].*cannot open the dictionary_store .*gone.sqlite.*not found"):
        make_nlp(bertram_dir, tiny_bert_path, contexts="dictionary", dictionary_store=str(tmp_path / "gone.sqlite"))


def test_the_finder_reads_wordfreqs_frequent_forms_and_no_table_for_counts(network):
    """wordfreq's rule gets the frequent-form table (at the rule's max_zipf); model counts have none."""
    for frequencies in ("wordfreq", "auto"):
        finder = WordSources(RareWordRule(frequencies=frequencies, max_zipf=3.5), "en").finder(network, None)
        assert finder.frequent is not None and finder.frequent.min_zipf == 3.5
    counts = CountTable({"kumquat": 1, "the": 100}, total=1_000)
    assert WordSources(RareWordRule(frequencies="model"), "en").finder(network, counts).frequent is None
