"""Definition contexts from the real WordNet 3.0 (through NLTK)."""

from __future__ import annotations

import pytest
from tests.util import needs_wordnet

from spacy_bertram.dictionary.wordnet_glosses import irregular_forms, lemma_contexts, load_reader, occurrence

pytestmark = needs_wordnet


@pytest.fixture(scope="module")
def reader():
    return load_reader()


def test_glosses_start_with_the_lemma(reader):
    contexts = lemma_contexts(reader, "kumquat")
    assert ("wordnet", "kumquat: small oval citrus fruit with thin sweet rind and very acid pulp", 0, 7) in contexts
    assert all(text[start:end].lower() == "kumquat" for _, text, start, end in contexts)


def test_examples_are_kept_only_where_they_contain_the_lemma(reader):
    examples = [c for c in lemma_contexts(reader, "run") if not c[1].startswith("run:")]
    assert examples and all(text[start:end].lower() == "run" for _, text, start, end in examples)


def test_senses_reached_only_through_morphy_are_not_the_lemmas(reader):
    """NLTK's synsets("lay") include lie.v.01 (morphy: "lay" is a form of "lie"); it is not a sense of "lay"."""
    assert "lie.v.01" in [s.name() for s in reader.synsets("lay")]
    lie = reader.synset("lie.v.01").definition()
    texts = [text for _, text, _, _ in lemma_contexts(reader, "lay")]
    assert texts and not any(lie in text for text in texts)


def test_irregular_forms_come_from_the_exception_lists(reader):
    assert ("geese", "goose") in set(irregular_forms(reader))


def test_occurrence_is_a_whole_word():
    assert occurrence("cat", "concatenate a Cat") == (14, 17)
    assert occurrence("cat", "concatenate") is None
