"""Building a definition store from the dictd fixture and the real WordNet."""

from __future__ import annotations

import pytest
from tests.util import needs_wordnet

from spacy_bertram.dictionary import build as B
from spacy_bertram.dictionary.store import DefinitionStore


def test_sources_parse_and_name_an_unknown_one():
    assert B.parse_sources("gcide, wordnet") == ["gcide", "wordnet"]
    assert B.parse_sources("wordnet+gcide") == ["wordnet", "gcide"]
    with pytest.raises(ValueError, match=r"\[E501\].*'gcide,webster'.*choose"):
        B.parse_sources("gcide,webster")


def test_interleave_takes_one_from_each_source_in_turn():
    a = [("gcide", "a1", 0, 1), ("gcide", "a2", 0, 1), ("gcide", "same", 0, 1)]
    b = [("wordnet", "b1", 0, 1), ("wordnet", "same", 0, 1)]
    assert [c[1] for c in B.interleave([a, b])] == ["a1", "b1", "a2", "same"]


def test_gcide_keeps_entries_whose_headword_is_the_word(tiny_gcide):
    entries = dict(B.gcide_entries(tiny_gcide))
    assert sorted(entries) == ["goose", "kumquat"]  # "run" only points at "All fours"
    assert entries["goose"][0] == (
        "gcide",
        "Goose: (Zool.) Any large web-footed bird of the subfamily Anserinae.",
        0,
        5,
    )
    without = dict(B.gcide_entries(tiny_gcide, wordnet_derived=False))
    assert len(without["goose"]) == len(entries["goose"]) - 1


def test_a_missing_gcide_says_how_to_install_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"\[E512\].*apt-get install dict-gcide"):
        list(B.gcide_entries(tmp_path / "gcide.index"))


@needs_wordnet
def test_gcide_and_wordnet_in_one_store(tmp_path, tiny_gcide, monkeypatch):
    reader = B._wordnet_for(["wordnet"], None)
    monkeypatch.setattr(reader, "all_lemma_names", lambda: iter(["kumquat", "goose", "ice_cream"]))
    stats = B.build_dictionary_store(tmp_path, ["gcide", "wordnet"], gcide_index=tiny_gcide, max_per_source=2)
    assert stats["headwords_per_source"] == {"gcide": 2, "wordnet": 2} and stats["irregular_forms"] > 1000
    with DefinitionStore.open(tmp_path / "definitions.sqlite") as store:
        assert store.sources == ["gcide", "wordnet"]
        first, second = store.contexts("Kumquats", limit=2)
        assert first.startswith("Kumquats: A small oval citrus") and second.startswith("Kumquats: any of several")
        assert store.contexts("geese", limit=1) == [
            "geese: (Zool.) Any large web-footed bird of the subfamily Anserinae."
        ]
        assert len(store.contexts("goose", limit=10)) == 4  # 2 per source
    with pytest.raises(ValueError, match=r"\[E052\] --max-per-source must be a whole number from 1 to 10,000"):
        B.build_dictionary_store(tmp_path, ["gcide"], gcide_index=tiny_gcide, max_per_source=0)
