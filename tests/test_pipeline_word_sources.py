"""pipeline/word_sources.py: contexts from the doc, from a store, or both."""
from __future__ import annotations

import numpy
import pytest
import spacy

import spacy_bertram.pipeline.component  # noqa: F401  (registers the factory until the entry point is installed)
from spacy_bertram.pipeline.word_sources import spread

from conftest import TEXT, make_nlp, same_vectors


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


def test_context_store_problems(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    with pytest.raises(ValueError, match="needs a context_store"):
        make_nlp(bertram_dir, tiny_bert_path, contexts="store")
    with pytest.raises(ValueError, match="contexts must be one of"):
        make_nlp(bertram_dir, tiny_bert_path, contexts="web")
    # A missing store fails at initialize, not at the first doc with a rare word.
    with pytest.raises(ValueError, match="cannot open the context store .*gone.sqlite.*not found"):
        make_nlp(bertram_dir, tiny_bert_path, contexts="both", context_store=str(tmp_path / "gone.sqlite"))


def test_a_model_without_counts_says_that_rarity_falls_back_to_wordfreq(bertram_dir, tiny_bert_path, caplog):
    """A model whose counts.tsv was deleted would silently switch rules under the default 'auto'."""
    nlp = make_nlp(bertram_dir, tiny_bert_path)  # bertram_dir ships no counts.tsv
    with caplog.at_level("WARNING", logger="spacy_bertram"):
        nlp(TEXT)
    assert "ships no word counts (counts.tsv), so rarity comes from wordfreq's frequencies for 'en'" in caplog.text
    caplog.clear()
    quiet = make_nlp(bertram_dir, tiny_bert_path, rare_words={"@misc": "spacy-bertram.RareWords.v1",
                                                              "frequencies": "wordfreq"})
    with caplog.at_level("WARNING", logger="spacy_bertram"):
        quiet(TEXT)
    assert "counts.tsv" not in caplog.text
