"""Definition contexts for training words: the pool begins with them, and a run records them."""

from __future__ import annotations

import json

import pytest
from tests.util import _train, corpus_lines

from spacy_bertram.dictionary.store import write_definition_store
from spacy_bertram.training.definition_contexts import WithDefinitions
from spacy_bertram.training.run import pooled_contexts
from spacy_bertram.training.sources import MemoryTrainingSource


@pytest.fixture()
def store(tmp_path):
    entries = {
        "farmer": [
            ("wordnet", "farmer: a person who operates a farm", 0, 6),
            ("gcide", "Farmer: one who farms.", 0, 6),
            ("wordnet", "farmer: a third sense", 0, 6),
        ]
    }
    return write_definition_store(tmp_path / "definitions.sqlite", entries)


def test_the_pool_begins_with_definitions_and_keeps_its_size(store):
    source = MemoryTrainingSource(
        {"farmer": 5, "sweet": 3}, {"farmer": ["the farmer sold fruit", "a farmer ran"], "sweet": ["a sweet fruit"]}
    )
    pool = WithDefinitions(source, store, per_word=2)
    assert pool.contexts("farmer", 3) == [
        "farmer: a person who operates a farm",
        "farmer: one who farms.",
        "the farmer sold fruit",
    ]
    assert pool.contexts("sweet", 3) == ["a sweet fruit"]  # no entry: the corpus contexts alone
    assert len(pool.contexts("farmer")) == 4 and list(pool.counts(4)) == [("farmer", 5)]
    assert pooled_contexts(source, ["farmer"], 2, None, 2) == [["the farmer sold fruit", "a farmer ran"]]
    assert pooled_contexts(source, ["farmer"], 2, store, 1) == [
        ["farmer: a person who operates a farm", "the farmer sold fruit"]
    ]
    with pytest.raises(ValueError, match=r"\[E052\] --definitions-per-word must be a whole number from 1 to 10,000"):
        WithDefinitions(source, store, per_word=0)


def test_a_run_with_definitions_records_them(tiny_bert_path, store, tmp_path):
    source = MemoryTrainingSource.from_lines(corpus_lines())
    metrics = _train(
        source,
        tmp_path / "run",
        tiny_bert_path,
        ablation=False,
        settings={"epochs": (1, 1, 1)},
        data={"definitions": store, "definitions_per_word": 1},
    )
    progress = json.loads((tmp_path / "run" / "progress.json").read_text())
    assert progress["run"]["definitions"] == {"store": str(store), "per_word": 1}
    assert metrics["final"]
    with pytest.raises(
        ValueError, match=r"\[E277\].*other settings"
    ):  # the same directory without them does not resume
        _train(source, tmp_path / "run", tiny_bert_path, ablation=False, settings={"epochs": (1, 1, 1)})
