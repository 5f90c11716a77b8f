"""Lemma candidates of an inflected form, in the order a lookup tries them."""

from __future__ import annotations

from spacy_bertram.dictionary.lemmas import candidate_lemmas, rule_lemmas


def test_regular_rules_and_doubled_consonants():
    assert rule_lemmas("kumquats") == ["kumquat"]
    assert "church" in rule_lemmas("churches")
    assert "run" in rule_lemmas("running") and "big" in rule_lemmas("bigger")
    assert rule_lemmas("is") == []  # too short to lose a suffix


def test_candidates_try_the_form_then_the_tagger_then_irregular_then_regular():
    irregular = {"geese": ["goose"]}.get
    assert candidate_lemmas("Geese", lambda form: irregular(form, []))[:2] == ["geese", "goose"]
    assert candidate_lemmas("Kumquats", lambda form: [], lemma="Kumquat") == ["kumquats", "kumquat"]
