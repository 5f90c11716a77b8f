"""Definition contexts of the intrinsic evaluation: lookups, coverage, the subset."""

from __future__ import annotations

from spacy_bertram.dictionary.store import write_definition_store
from bertram_experiments.intrinsic.definition_contexts import (
    coverage,
    load_definitions,
    set_definitions,
    with_definitions,
)
from bertram_experiments.intrinsic.rare_sets import CardSet, CrwSet


def test_definitions_coverage_and_subset(tmp_path):
    store = write_definition_store(
        tmp_path / "d.sqlite", {"goose": [("gcide", "Goose: a bird.", 0, 5)]}, [("geese", "goose")]
    )
    defs = load_definitions(store, ["Geese", "quokka"])
    assert defs == {"Geese": ["Geese: a bird."], "quokka": []}
    assert coverage(defs, ["Geese", "quokka"]) == {"rare_words": 2, "with_definitions": 1, "share": 0.5}
    assert coverage({}, []) == {"rare_words": 0, "with_definitions": 0, "share": None}
    assert with_definitions([("bird", "quokka", 1.0), ("bird", "Geese", 2.0)], defs) == [1]
    pairs = [("bird", "geese", 3.0)]
    crw, card = set_definitions(store, CrwSet("p", pairs, {}), CardSet("p", pairs))
    assert crw == card == {"geese": ["geese: a bird."]}
    assert set_definitions(None, CrwSet("p", pairs, {}), None) == (None, None)
    assert set_definitions(store, None, None) == (None, None)
